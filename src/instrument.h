/* SPDX-License-Identifier: MIT */
/*
 * The tools' view of the library: the sanitizer and Valgrind annotations,
 * and the hooks through which the arena, the pool and the shared arena tell
 * the tools (and the checked build's layout) what they do.  The hooks'
 * out-of-line halves are in instrument.c.  Never installed.
 */
#ifndef ARENA_INSTRUMENT_H
#define ARENA_INSTRUMENT_H

#include <string.h>

#include "internal.h"

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
 * set by CMake for the library only), ARENA__VALGRIND says, once for the
 * process, whether memcheck watches it.  The client requests cost a few
 * instructions natively; the library still skips them unless it does.
 * arena__valgrind is -1 until asked, and reads as "no" until then.  The
 * library's constructor asks.  A program's own constructor (or a C++
 * static initializer) may call the library before it runs, so the entry
 * points through which an arena or a pool first holds memory ask first
 * (arena__ask_valgrind()): wake(), which every call that reads an arena's
 * state makes first, arena_set_current(), arena_allocator_of(), the
 * pool's.  A plain int, read on the fast paths: it is written before main, or by the
 * first such call, before any thread can have an arena. */
#if defined(ARENA_HAVE_VALGRIND) && ARENA_HAVE_VALGRIND
#  include <valgrind/memcheck.h>
ARENA__HIDDEN extern int arena__valgrind;
ARENA__HIDDEN void arena__detect_valgrind(void);
#  define ARENA__VALGRIND (arena__valgrind > 0)
static inline void arena__ask_valgrind(void)
{
    if (ARENA__UNLIKELY(arena__valgrind < 0))
        arena__detect_valgrind();
}
#else
#  define ARENA__VALGRIND                        0
#  define arena__ask_valgrind()                  ((void)0)
#  define VALGRIND_MAKE_MEM_NOACCESS(p, n)       ((void)(p), (void)(n))
#  define VALGRIND_MAKE_MEM_UNDEFINED(p, n)      ((void)(p), (void)(n))
#  define VALGRIND_MAKE_MEM_DEFINED(p, n)        ((void)(p), (void)(n))
#  define VALGRIND_CREATE_MEMPOOL(pool, rz, z)   ((void)(pool))
#  define VALGRIND_DESTROY_MEMPOOL(pool)         ((void)(pool))
#  define VALGRIND_MEMPOOL_ALLOC(pool, p, n)     ((void)(pool), (void)(p), (void)(n))
#  define VALGRIND_MEMPOOL_FREE(pool, p)         ((void)(pool), (void)(p))
#  define VALGRIND_MEMPOOL_TRIM(pool, p, n)      ((void)(pool), (void)(p), (void)(n))
#  define VALGRIND_MEMPOOL_CHANGE(pool, a, b, n) ((void)(pool), (void)(a), (void)(b), (void)(n))
#  define VALGRIND_GET_VBITS(p, bits, n)         ((void)(p), (void)(bits), (void)(n), 0)
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

/* Reads of memory another thread may be writing, whose value the library
 * only compares (the family's page test in current.c), and writes into a
 * block of the library's own that no other thread reads (report.c): out of
 * a thread sanitizer's view. */
#if defined(__SANITIZE_THREAD__)
#  define ARENA__NO_TSAN __attribute__((no_sanitize_thread))
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define ARENA__NO_TSAN __attribute__((no_sanitize("thread")))
#  endif
#endif
#ifndef ARENA__NO_TSAN
#  define ARENA__NO_TSAN
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
 * to a granule plus one, cut short at the chunk's end.  A value may then
 * fill a chunk exactly, as it would without guards.  Past an allocated
 * chunk lies the allocator's own redzone; past a caller's buffer, the
 * caller's memory.  n is at most a chunk's capacity, far from SIZE_MAX. */
static inline size_t arena__guarded_len(const char *p, size_t n, const char *lim)
{
    size_t room, foot;
    if (!arena__instrumented())
        return n;
    room = (size_t)(lim - p);
    foot = ((n + ARENA__GRANULE - 1) & ~(ARENA__GRANULE - 1)) + ARENA__GRANULE;
    return foot < room ? foot : room;
}

/* Overhead a chunk allocated by an arena of chunk size `chunk_size` carries
 * beyond its capacity `cap`: a header's worth (checked build), and for an
 * oversized chunk two granules of guard after its value too (the last value
 * of a chunk of the chunk size may end at the chunk's end: values fill it
 * exactly, as without guards).  The kind of a chunk shows in its capacity,
 * so a kept chunk of either kind may serve a value of the other. */
static inline size_t arena__chunk_extra(size_t cap, size_t chunk_size)
{
    if (!arena__instrumented())
        return 0;
    return cap > chunk_size ? arena__hdr() + 2 * ARENA__GRANULE : arena__hdr();
}

/* The capacity of an allocated chunk of `held` bytes (capacity and overhead:
 * the inverse of arena__chunk_extra()). */
static inline size_t arena__chunk_usable(size_t held, size_t chunk_size)
{
    size_t cap;
    if (!arena__instrumented())
        return held;
    cap = held - arena__hdr();
    return cap > chunk_size ? cap - 2 * ARENA__GRANULE : cap;
}

ARENA__HIDDEN void arena__instr_chunk_made(char *base, size_t cap);
ARENA__HIDDEN void arena__instr_chunk_freed(char *base, size_t cap);
ARENA__HIDDEN size_t arena__instr_placing(arena *a, size_t align);
ARENA__HIDDEN void arena__instr_placed(arena *a, const struct arena__chunk *c, char *p,
                                       size_t size);
ARENA__HIDDEN void arena__instr_resized(const struct arena__chunk *c, char *p, size_t old_size,
                                        size_t new_size);
ARENA__HIDDEN void arena__instr_dropped(arena *a, uint32_t i, char *from);
ARENA__HIDDEN char *arena__instr_cut(arena *a, uint32_t i, char *pos, uint64_t serial);
ARENA__HIDDEN void arena__instr_resizing(arena *a, char *p, size_t old_size);
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
static inline void arena__value_placed(arena *a, const struct arena__chunk *c, char *p, size_t size)
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

/* The values of [from, end of chunk i) dropped (a reset, a rewind or a
 * release ended them): its guards verified (checked build), clobbered
 * (checked build) and closed; Valgrind forgets its values. */
static inline void arena__values_dropped(arena *a, uint32_t i, char *from)
{
    if (arena__instrumented())
        arena__instr_dropped(a, i, from);
}

/* The most recent value `p`, of at least `old_size` bytes, is about to be
 * resized in place: the first resize since the latest mark notes its size
 * as the tools see it, which a rewind to a mark taken since the sizes last
 * changed cuts it back to (arena__cut()). */
static inline void arena__value_resizing(arena *a, char *p, size_t old_size)
{
    if (arena__instrumented())
        arena__instr_resizing(a, p, old_size);
}

/* A rewind to the mark of serial `serial` at `pos` in chunk i, before
 * arena__values_dropped(): where the values stored after the mark begin.
 * That is pos, or in the checked build below it, after a value before the
 * mark was freed or shrunk below it.  A value stored before the mark and
 * grown in place after it is cut first: back to its size at the mark,
 * where noted, else to end a granule before pos (checked build, outside
 * Valgrind, whose pools the drop trims).  See arena__instr_cut(). */
static inline char *arena__cut(arena *a, uint32_t i, char *pos, uint64_t serial)
{
    return arena__instrumented() ? arena__instr_cut(a, i, pos, serial) : pos;
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
static inline bool arena__header_matches(const char *base, uint32_t off, uint32_t len, uint32_t tag,
                                         uint32_t mask)
{
    return !ARENA_CHECKED || arena__instr_header_matches(base, off, len, tag, mask);
}

/* Checked build: the size of the live value that starts at `p` in chunk
 * `c`, whose live part ends at `end`, goes to *size; false when p is not the
 * start of one.  False elsewhere (no sizes are kept). */
static inline bool arena__value_size(const struct arena__chunk *c, const char *end, const char *p,
                                     uint64_t *size)
{
    return ARENA_CHECKED && arena__instr_value_size(c, end, p, size);
}

/* ---- Hooks of the pool and the shared arena --------------------------------------- */

/* A pool's `n` bytes of slots at `base` were laid out, every slot free:
 * closed (a Valgrind pool of its own; clobbered in the checked build). */
static inline void arena__slots_made(char *base, size_t n)
{
    if (ARENA__VALGRIND)
        VALGRIND_CREATE_MEMPOOL(base, 0, 0);
    if (ARENA_CHECKED)
        memset(base, ARENA__CLOBBER, n);
    arena__close(base, n);
}

/* The slots go back to their owner: open, as it expects them. */
static inline void arena__slots_gone(char *base, size_t n)
{
    if (ARENA__VALGRIND)
        VALGRIND_DESTROY_MEMPOOL(base);
    arena__open(base, n);
}

/* The slot `obj` of the pool whose slots start at `base` is handed out: its
 * first `n` bytes open. */
static inline void arena__slot_taken(const char *base, void *obj, size_t n)
{
    if (ARENA__VALGRIND)
        VALGRIND_MEMPOOL_ALLOC(base, obj, n);
    arena__unpoison(obj, n);
}

/* The slot `obj` (`stride` bytes, of which the program used `n`) is free
 * again: closed (clobbered in the checked build). */
static inline void arena__slot_given(const char *base, void *obj, size_t n, size_t stride)
{
    if (ARENA_CHECKED)
        memset(obj, ARENA__CLOBBER, n); /* the rest of the slot still is */
    if (ARENA__VALGRIND)
        VALGRIND_MEMPOOL_FREE(base, obj);
    arena__close(obj, stride);
}

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

#endif /* ARENA_INSTRUMENT_H */
