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

#include "cold.h"

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

/* ---- Instrumentation hooks -------------------------------------------------------
 *
 * src/arena.c places values and manages chunks; src/instrument.c makes what
 * it does visible to the tools (ASan poisoning, Valgrind's mempools, the
 * checked build's headers, guards, tags and clobbering: the layout is
 * described there).  The arena calls the hooks below at each event; each
 * tests a constant (ARENA__VALGRIND aside, decided once at load) before it
 * calls out of line, so that a plain build compiles them to nothing while
 * still type-checking every line.  The layout helpers are identities there. */

/* Bits of the arena's flags; the checked build's tag serial is in bits 8-31. */
enum {
    ARENA__FIXED = 1u,   /* caller's buffer without backing: never allocate */
    ARENA__BUF_OPEN = 2u, /* instrumented: the caller's buffer is open (after a
                             release) until the arena next stores into it */
    ARENA__OUTGREW = 4u,  /* this batch gave an outgrown chunk back (free_outgrown()) */
    ARENA__OUTGREW_LAST = 8u /* the last batch did */
};

/* ASan's shadow granularity: an instrumented value starts on one, and its
 * guard reaches the next one plus a whole one. */
#define ARENA__GRANULE ((size_t)8)

/* Bytes of header before each value (checked build); a multiple of ARENA_ALIGN. */
static inline size_t arena__hdr(void)
{
    return ARENA_CHECKED ? (ARENA_ALIGN > 32 ? ARENA_ALIGN : 32) : 0;
}

/* How far the value of `n` bytes at `p` reaches with its guard, in a chunk
 * that ends at `lim` (p + n <= lim): n, or when instrumented, n rounded up
 * to a granule plus one, cut short at the chunk's end, so that a value may
 * fill a chunk exactly, as it would without guards (past an allocated chunk
 * lies the allocator's own redzone; past a caller's buffer, the caller's
 * memory).  n is at most a chunk's capacity, far from SIZE_MAX. */
static inline size_t arena__guarded_len(const char *p, size_t n, const char *lim)
{
    size_t room, foot;
    if (!arena__instrumented())
        return n;
    room = (size_t)(lim - p);
    foot = ((n + ARENA__GRANULE - 1) & ~(ARENA__GRANULE - 1)) + ARENA__GRANULE;
    return foot < room ? foot : room;
}

/* Overhead a chunk allocated by an arena of chunk budget `budget` carries
 * beyond its capacity `cap`: a header's worth (checked build), and for an
 * oversized chunk two granules of guard after its value too (the last value
 * of a chunk of the budget's size may end at the chunk's end: values fill it
 * exactly, as without guards).  The kind of a chunk shows in its capacity,
 * so a kept chunk of either kind may serve a value of the other. */
static inline size_t arena__chunk_extra(size_t cap, size_t budget)
{
    if (!arena__instrumented())
        return 0;
    return cap > budget ? arena__hdr() + 2 * ARENA__GRANULE : arena__hdr();
}

/* The capacity of an allocated chunk of `held` bytes (capacity and overhead:
 * the inverse of arena__chunk_extra()). */
static inline size_t arena__chunk_usable(size_t held, size_t budget)
{
    size_t cap;
    if (!arena__instrumented())
        return held;
    cap = held - arena__hdr();
    return cap > budget ? cap - 2 * ARENA__GRANULE : cap;
}

ARENA__HIDDEN void arena__instr_chunk_made(char *base, size_t cap);
ARENA__HIDDEN void arena__instr_chunk_freed(char *base, size_t cap);
ARENA__HIDDEN size_t arena__instr_placing(arena *a, size_t align);
ARENA__HIDDEN void arena__instr_placed(arena *a, const struct arena__chunk *c, char *p,
                                       size_t size);
ARENA__HIDDEN void arena__instr_resized(const struct arena__chunk *c, char *p, size_t old_size,
                                        size_t new_size);
ARENA__HIDDEN void arena__instr_expired(arena *a, uint32_t i, char *from);
ARENA__HIDDEN char *arena__instr_cut(arena *a, uint32_t i, char *pos, uint64_t serial);
ARENA__HIDDEN void arena__instr_buffer_released(arena *a, size_t cap);
ARENA__HIDDEN bool arena__instr_verify(const arena *a, uint32_t i, const char *from,
                                       const char *to);
ARENA__HIDDEN arena_ref arena__instr_tag_ref(const arena *a, arena_ref r);
ARENA__HIDDEN uint32_t arena__instr_untag_ref(arena_ref r, uint32_t *tag, uint32_t *mask);
ARENA__HIDDEN bool arena__instr_header_matches(const char *base, uint32_t off, uint32_t len,
                                               uint32_t tag, uint32_t mask);
ARENA__HIDDEN bool arena__instr_value_size(const struct arena__chunk *c, const char *end,
                                           const char *p, uint64_t *size);

/* A chunk was allocated (or the caller's buffer is taken back into use):
 * closed to the program, clobbered in the checked build, a Valgrind pool. */
static inline void arena__chunk_made(char *base, size_t cap)
{
    if (arena__instrumented())
        arena__instr_chunk_made(base, cap);
}

/* A chunk goes back to the backing allocator: open, as the backing expects. */
static inline void arena__chunk_freed(char *base, size_t cap)
{
    if (arena__instrumented())
        arena__instr_chunk_freed(base, cap);
}

/* A value of alignment `align` is about to be placed: returns the alignment
 * it is placed at (a granule at least, when instrumented), after closing the
 * caller's buffer again if a release left it open. */
static inline size_t arena__placing(arena *a, size_t align)
{
    return arena__instrumented() ? arena__instr_placing(a, align) : align;
}

/* The value of `size` bytes at `p` in chunk `c` was placed: opened, with its
 * header (tagged) and guard in the checked build. */
static inline void arena__value_placed(arena *a, const struct arena__chunk *c, char *p,
                                       size_t size)
{
    if (arena__instrumented())
        arena__instr_placed(a, c, p, size);
}

/* The most recent value `p` of chunk `c` was resized in place. */
static inline void arena__value_resized(const struct arena__chunk *c, char *p, size_t old_size,
                                        size_t new_size)
{
    if (arena__instrumented())
        arena__instr_resized(c, p, old_size, new_size);
}

/* [from, end of chunk i) expired: its guards verified (checked build),
 * clobbered (checked build) and closed; Valgrind forgets its values. */
static inline void arena__expired(arena *a, uint32_t i, char *from)
{
    if (arena__instrumented())
        arena__instr_expired(a, i, from);
}

/* A rewind to the mark of serial `serial` at `pos` in chunk i, before
 * arena__expired(): where the values stored after the mark begin (pos, or in
 * the checked build below it, after a value before the mark was freed or
 * shrunk below it), having cut a value stored before the mark and grown past
 * pos to end before it (checked build, outside Valgrind, whose pools the
 * expiry trims): see arena__instr_cut(). */
static inline char *arena__cut(arena *a, uint32_t i, char *pos, uint64_t serial)
{
    return ARENA_CHECKED ? arena__instr_cut(a, i, pos, serial) : pos;
}

/* A release hands the caller's buffer (of `cap` bytes) back open: the caller
 * may reuse it.  The arena closes it again before it next uses it. */
static inline void arena__buffer_released(arena *a, size_t cap)
{
    if (arena__instrumented())
        arena__instr_buffer_released(a, cap);
}

/* Before the arena next uses its caller's buffer after a release. */
static inline void arena__buffer_reused(arena *a)
{
    if (arena__instrumented() && (arena__cold(a)->flags & ARENA__BUF_OPEN)) {
        arena__cold(a)->flags &= ~(uint32_t)ARENA__BUF_OPEN;
        arena__instr_chunk_made(a->buf, a->chunks[0].cap);
    }
}

/* Checked build, outside Valgrind (whose no-access guards catch writes as
 * they happen): walks [from, to) of chunk i and reports (ARENA_ERR_CORRUPT)
 * the first guard, pad or header the program overwrote.  True elsewhere. */
static inline bool arena__verify(const arena *a, uint32_t i, const char *from, const char *to)
{
    return !(ARENA_CHECKED && !ARENA__VALGRIND) || arena__instr_verify(a, i, from, to);
}

/* Checked build: the ref of the value placed last carries its tag. */
static inline arena_ref arena__tag_ref(const arena *a, arena_ref r)
{
    return ARENA_CHECKED ? arena__instr_tag_ref(a, r) : r;
}

/* The chunk index a ref names; its tag bits and which of them it carries go
 * to *tag and *mask (none outside the checked build).  UINT32_MAX for a
 * chunk field no ref has. */
static inline uint32_t arena__untag_ref(arena_ref r, uint32_t *tag, uint32_t *mask)
{
    *tag = *mask = 0;
    return ARENA_CHECKED ? arena__instr_untag_ref(r, tag, mask) : r.chunk;
}

/* Checked build: true when `off` in a chunk at `base` is the start of a
 * value of at least `len` bytes whose tag matches `tag` under `mask`.
 * True elsewhere (nothing there to check). */
static inline bool arena__header_matches(const char *base, uint32_t off, uint32_t len,
                                         uint32_t tag, uint32_t mask)
{
    return !ARENA_CHECKED || arena__instr_header_matches(base, off, len, tag, mask);
}

/* Checked build: the size of the live value that starts at `p` in chunk
 * `c`, whose live part ends at `end`, goes to *size; false when p is not the
 * start of one.  False elsewhere (no sizes are kept). */
static inline bool arena__value_size(const struct arena__chunk *c, const char *end,
                                     const char *p, uint64_t *size)
{
    return ARENA_CHECKED && arena__instr_value_size(c, end, p, size);
}

/* ---- Reuse (src/reuse.c) ------------------------------------------------------------ */

/* The bit of `pending` that says the arena's lists of free blocks are valid. */
#define ARENA__PENDING_REUSE 1u

/* Mixed into a free block's link (reuse.c) and into a block header's key
 * (hooks.c).  They differ by ARENA__FREED_OWNER, so that the header of a
 * block of the arena_cur_* family that a node overwrote decodes to that
 * owner, which no arena has (its low bits are set): a free of it again is
 * told from a foreign pointer. */
#define ARENA__KEY_MIX ((uintptr_t)UINT64_C(0x9E3779B97F4A7C15))
#define ARENA__FREED_OWNER ((uintptr_t)2)
#define ARENA__LINK_MIX (ARENA__KEY_MIX ^ ARENA__FREED_OWNER)

/* The smallest free block the lists keep: a node, and room for a value
 * with its header and guard when instrumented. */
static inline size_t arena__reuse_min(void) { return arena__hdr() + 16; }

/* Files the block [s, s + len) (s ARENA_ALIGN-aligned, len >=
 * arena__reuse_min()); false when the arena keeps no lists (a fixed-size
 * arena, or its backing failed): the block then stays unused until the
 * batch ends. */
ARENA__HIDDEN bool arena__reuse_file(arena *a, char *s, size_t len);
/* `n` rounded up to the bound of its size class (16 at least; ARENA_ALIGN
 * steps above the largest class): the size the adapters of a plain build
 * ask for and give back, so that a freed block fits the next value of its
 * class exactly. */
ARENA__HIDDEN size_t arena__reuse_round(size_t n);
/* A filed block of at least `need` bytes, unlinked (its length in *len), or
 * NULL; one of a larger class, to be split, only if `carve`. */
ARENA__HIDDEN char *arena__reuse_take(arena *a, size_t need, bool carve, size_t *len);
/* The adapters' fast path in a plain build (never an instrumented one: it
 * tells no tool), while the lists are valid
 * (ARENA__PENDING_REUSE): the head of the class of `len` (a class bound, as
 * arena__reuse_round() gives), unlinked, when it is exactly `len` bytes
 * long (as every block the adapters give back is); NULL otherwise. */
ARENA__HIDDEN char *arena__reuse_pop(arena *a, size_t len);
/* The same way back: files the block `s` of `len` bytes (a class bound). */
ARENA__HIDDEN void arena__reuse_push(arena *a, char *s, size_t len);
/* Instrumented builds: room to log one more placement; then the placement
 * of the value `p` in the block [from, to) of the chunk at `base`, which a
 * rewind to a mark taken before it expires. */
ARENA__HIDDEN bool arena__reuse_log_room(arena *a);
ARENA__HIDDEN void arena__reuse_log(arena *a, const char *base, char *from, char *to, char *p);
/* Forgets every filed block (a reset: serial 0), or, for a rewind to the
 * mark of `serial`, also expires the placements logged since it. */
ARENA__HIDDEN void arena__reuse_forget(arena *a, uint64_t serial);
/* Frees the lists' table (a release). */
ARENA__HIDDEN void arena__reuse_release(arena *a);

/* The adapters' shrink (hooks.c): arena_realloc() to `new_size` (<
 * old_size), except that a value that is not the most recent moves to a
 * block of the new size, and its own goes back whole, so that no remainder
 * of an odd size is left to fragment the lists; in place, its tail given
 * back, only when that fails (size 0: in place).  NULL after a reported
 * misuse. */
ARENA__HIDDEN void *arena__shrink_moving(arena *a, void *ptr, size_t old_size, size_t new_size);

/* Tool hooks of free blocks (instrument.c). */
ARENA__HIDDEN void arena__instr_node_store(char *s, size_t len, uintptr_t link);
ARENA__HIDDEN bool arena__instr_node_load(const char *s, size_t *len, uintptr_t *link);
ARENA__HIDDEN bool arena__instr_freed(const arena *a, const struct arena__chunk *c, char *from,
                                      char *p, size_t n, const char *to);
ARENA__HIDDEN void arena__instr_reused(arena *a, const struct arena__chunk *c, char *from, char *p,
                                       size_t n, char *to, size_t len);
ARENA__HIDDEN void arena__instr_unreused(const char *base, char *from, const char *to, char *p);
ARENA__HIDDEN int arena__instr_free_state(const arena *a, const struct arena__chunk *c,
                                          const char *p, size_t n, uint64_t *size);

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

/* ---- Size 0 --------------------------------------------------------------------- */

/* The result of a size-0 allocation at `align` (a power of two): non-NULL,
 * aligned to `align`, not to be dereferenced, and no value (nothing is
 * stored, poisoned or tagged for it): up to 4096 the address of a static
 * object of the library, above it the address whose value is `align`. */
ARENA__HIDDEN void *arena__zero_size_value(size_t align);

/* ---- Marks ---------------------------------------------------------------------- */

/* arena_rewind(), which says whether it rewound (false: the mark was
 * reported, and nothing happened). */
ARENA__HIDDEN bool arena__rewind(arena *a, arena_mark m);

/* ---- Errors --------------------------------------------------------------------- */

/* Formats a message and hands it to the current error handler. */
ARENA__HIDDEN void arena__report(arena_error code, const char *fmt, ...) ARENA__PRINTF(2, 3);

#endif /* ARENA_INTERNAL_H */
