/*
 * Internal helpers shared by the library's sources.  Never installed.
 */
#ifndef ARENA_INTERNAL_H
#define ARENA_INTERNAL_H

#include <stdint.h>

#include "arena/arena.h"

#if defined(_WIN32) && (defined(__GNUC__) || defined(__clang__))
/* A DLL exports only what ARENA_API marks, so nothing needs hiding; the C
 * library's printf is mingw-w64's C99 one (__USE_MINGW_ANSI_STDIO, set by
 * CMakeLists.txt: msvcrt's knows no %zu), which gcc calls gnu_printf. */
#  define ARENA__HIDDEN
#  define ARENA__PRINTF(f, a) __attribute__((format(gnu_printf, f, a)))
#elif defined(__GNUC__) || defined(__clang__)
#  define ARENA__HIDDEN   __attribute__((visibility("hidden")))
#  define ARENA__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define ARENA__HIDDEN
#  define ARENA__PRINTF(f, a)
#endif

/* Thread-local storage of the library.  initial-exec makes an access one
 * %fs-relative load in the shared library too (no __tls_get_addr call); the
 * few bytes it takes come from the static TLS surplus that glibc keeps for
 * libraries loaded with dlopen. */
#if defined(__GNUC__) || defined(__clang__)
#  define ARENA__TLS _Thread_local __attribute__((tls_model("initial-exec")))
#else
#  define ARENA__TLS _Thread_local
#endif

/* ---- Sanitizer and Valgrind annotations ----------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#  define ARENA__ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define ARENA__ASAN 1
#  endif
#endif
#ifndef ARENA__ASAN
#  define ARENA__ASAN 0
#endif

#if ARENA__ASAN
#  include <sanitizer/asan_interface.h>
#  define arena__poison(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#  define arena__unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#  define arena__poison(p, n)   ((void)(p), (void)(n))
#  define arena__unpoison(p, n) ((void)(p), (void)(n))
#endif

/* Valgrind: with <valgrind/memcheck.h> at build time (ARENA_HAVE_VALGRIND,
 * set by CMake for the library only), arena__valgrind says, once for the
 * process, whether it runs under Valgrind.  The client requests cost a few
 * instructions natively; the library still skips them unless it does. */
#if defined(ARENA_HAVE_VALGRIND) && ARENA_HAVE_VALGRIND
#  include <valgrind/memcheck.h>
ARENA__HIDDEN extern int arena__valgrind;
#  define ARENA__VALGRIND arena__valgrind
#else
#  define ARENA__VALGRIND 0
#  define VALGRIND_MAKE_MEM_NOACCESS(p, n)     ((void)(p), (void)(n))
#  define VALGRIND_MAKE_MEM_UNDEFINED(p, n)    ((void)(p), (void)(n))
#  define VALGRIND_MAKE_MEM_DEFINED(p, n)      ((void)(p), (void)(n))
#  define VALGRIND_CREATE_MEMPOOL(pool, rz, z) ((void)(pool))
#  define VALGRIND_DESTROY_MEMPOOL(pool)       ((void)(pool))
#  define VALGRIND_MEMPOOL_ALLOC(pool, p, n)   ((void)(pool), (void)(p), (void)(n))
#  define VALGRIND_MEMPOOL_FREE(pool, p)       ((void)(pool), (void)(p))
#  define VALGRIND_MEMPOOL_TRIM(pool, p, n)    ((void)(pool), (void)(p), (void)(n))
#  define VALGRIND_MEMPOOL_CHANGE(pool, a, b, n) ((void)(pool), (void)(a), (void)(b), (void)(n))
#  define VALGRIND_GET_VBITS(p, bits, n)       ((void)(p), (void)(bits), (void)(n), 0)
#endif

/* Memory the program must not touch: poisoned for ASan, no-access for
 * memcheck.  arena__open() makes it addressable again (undefined contents). */
static inline void arena__close(const void *p, size_t n)
{
    arena__poison(p, n);
    if (ARENA__VALGRIND)
        VALGRIND_MAKE_MEM_NOACCESS(p, n);
}

static inline void arena__open(const void *p, size_t n)
{
    arena__unpoison(p, n);
    if (ARENA__VALGRIND)
        VALGRIND_MAKE_MEM_UNDEFINED(p, n);
}

/* True when every allocation must go through the library (so that it can
 * poison, guard and tag it): the inline window stays closed. */
static inline bool arena__instrumented(void)
{
    return ARENA__ASAN || ARENA_CHECKED || ARENA__VALGRIND;
}

/* The byte the checked build fills dead memory and guards with. */
#define ARENA__CLOBBER 0xDD

/* Reads from memory the program may not touch (guards, headers, expired
 * values) without ASan reporting the library itself. */
#if ARENA__ASAN && (defined(__GNUC__) || defined(__clang__))
#  define ARENA__NO_ASAN __attribute__((no_sanitize_address))
#else
#  define ARENA__NO_ASAN
#endif

/* ---- Arithmetic --------------------------------------------------------------- */

static inline bool arena__is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

static inline uintptr_t arena__align_up(uintptr_t p, size_t align)
{
    return (p + (align - 1)) & ~(uintptr_t)(align - 1);
}

static inline uintptr_t arena__align_down(uintptr_t p, size_t align)
{
    return p & ~(uintptr_t)(align - 1);
}

/* ---- Backing allocator ------------------------------------------------------- */

/* b->alloc, or the C library's heap (64-byte aligned blocks) when it is NULL. */
ARENA__HIDDEN void *arena__back_alloc(const arena_allocator *b, size_t n);
/* Gives `p` of `n` bytes back to where arena__back_alloc() took it. */
ARENA__HIDDEN void arena__back_free(const arena_allocator *b, void *p, size_t n);

/* The C library's heap (the backing of an arena without an allocator). */
#define ARENA__HEAP (&(const arena_allocator){NULL, NULL, NULL})

/* ---- Marks ---------------------------------------------------------------------- */

/* arena_rewind(), which says whether it rewound (false: the mark was
 * reported, and nothing happened). */
ARENA__HIDDEN bool arena__rewind(arena *a, arena_mark m);

/* ---- Errors --------------------------------------------------------------------- */

/* Formats a message and hands it to the current error handler. */
ARENA__HIDDEN void arena__report(arena_error code, const char *fmt, ...) ARENA__PRINTF(2, 3);

#endif /* ARENA_INTERNAL_H */
