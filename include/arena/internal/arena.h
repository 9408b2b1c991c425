/* SPDX-License-Identifier: MIT */
/*
 * libarena: the inline code behind arena.h.
 *
 * Included by arena.h, never by itself.  The bodies of the public inline
 * functions and the internals they need (arena__ names): nothing here is
 * API, and any of it may change in any release.
 */
#ifndef ARENA_INTERNAL_ARENA_H
#define ARENA_INTERNAL_ARENA_H

#ifndef ARENA_ARENA_H
#  error "include <arena/arena.h>, not arena/internal/arena.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Slow paths (internal; called by the inline functions below) ------------- */

ARENA_API void *arena__alloc_slow(arena *a, size_t size, size_t align);
ARENA_API void *arena__copy_slow(arena *a, const void *src, size_t size, size_t align);
ARENA_API char *arena__strndup_slow(arena *a, const char *s, size_t len);
ARENA_API void *arena__calloc_slow(arena *a, size_t size, size_t align);
ARENA_API void *arena__ref_ptr_checked(const arena *a, arena_ref r);

ARENA_API arena_ref arena__ref_copy_slow(arena *a, const void *src, size_t size, size_t align);
ARENA_API arena_ref arena__ref_strndup_slow(arena *a, const char *s, size_t len);
ARENA_API void arena__init_buffer_slow(arena *a, void *buf, size_t len,
                                       const arena_allocator *backing);
ARENA_API void arena__release_slow(arena *a);
ARENA_API void arena__reset_slow(arena *a);
ARENA_API void arena__rewind_slow(arena *a, arena_mark m);
ARENA_API void arena__scope_end_slow(arena_scope *s);
/* Whether `p`, of `n` bytes, lies where `a` has stored in this batch (in a
 * chunk in use, below the position in the current one): where a value
 * given back may be used again, as arena_free() would not report it late
 * (arena.hpp's resource, for a block outside the current chunk). */
ARENA_API bool arena__stored_now(const arena *a, const void *p, size_t n);

/* Level 2 of the inline protocol (arena/internal/compiler.h): nonzero when
 * the library opens inline windows in this process. */
ARENA_API extern int arena__inline_ok;

/* ---- The public inline functions ------------------------------------------- */

/* A scope's init and release (arena_init_buffer(), arena_release()) are
 * inlined even where the compiler would judge a call cheaper: a scope on
 * the stack then costs no call, and its dead stores go. */
#if defined(__GNUC__) || defined(__clang__)
#  define ARENA__SCOPE_INLINE __attribute__((always_inline))
#else
#  define ARENA__SCOPE_INLINE
#endif

/* How many resets the inline path may make between two of the library's
 * calls (`countdown` counts them down: see arena__reset_first()). */
#define ARENA__INLINE_RESETS ((uint32_t)256)

/* The inline arena_init_buffer() of a fixed-size arena: the fields the
 * inline paths use, the window open on the whole buffer, and `lazy` set, so
 * that the library's first call writes the rest as arena__init_buffer_slow()
 * would have.  Anything else (a backing, no room, a buffer above
 * ARENA_REF_MAX, instrumentation) takes the call. */
static inline ARENA__SCOPE_INLINE void arena_init_buffer(arena *a, void *buf, size_t len,
                                                         const arena_allocator *backing)
{
    if (ARENA__INLINE_WINDOW) {
        size_t pad = arena__pad((uintptr_t)buf, ARENA_ALIGN);
        if (ARENA__LIKELY(!backing && buf && len > pad && len - pad <= ARENA_REF_MAX &&
                          arena__inline_ok)) {
            char *base = (char *)buf + pad;
            size_t cap = len - pad;
            a->ptr = base;
            a->end = base + (cap & ~(ARENA_ALIGN - 1));
            a->size = 0;
            a->counted = base;
            a->pos = base;
            a->chunks = &a->first;
            a->cur = 0;
            a->nused = 1;
            a->nchunks = 1;
            a->lazy = 1;
            a->pending = 0;
            a->countdown = ARENA__INLINE_RESETS + 1;
            a->buf = base;
            a->first.base = base;
            a->first.cap = cap;
            a->saves = 0;
            a->expired = 0;
            a->high = 0;
            a->peak = 0;
            return;
        }
    }
    arena__init_buffer_slow(a, buf, len, backing);
}

static inline size_t arena_size(const arena *a)
{
    return a->size + (size_t)((uintptr_t)a->ptr - (uintptr_t)a->counted);
}

/* Whether the size `x` is above `y`, as arena_get_stats()'s peaks compare
 * sizes: signed, so that a size that wrapped below zero (arena_size() after
 * a rewind restored the mark's size and a value from before the mark then
 * shrank) is no peak.  The same instructions as unsigned. */
static inline bool arena__above(size_t x, size_t y) { return (ptrdiff_t)x > (ptrdiff_t)y; }

/* The higher of two sizes as arena__above() compares them. */
static inline size_t arena__higher(size_t x, size_t y) { return arena__above(x, y) ? x : y; }

/* Before values are forgotten: the size they leave behind, into the
 * batch's high point (arena_get_stats()'s peaks). */
static inline void arena__note_high(arena *a)
{
    size_t size = arena_size(a);
    if (arena__above(size, a->high)) /* mostly not: a store only at a new high */
        a->high = size;
}

/* At a batch's end: its high point (and the size it ends at) into the
 * peak of the batches ended, and a new batch's high point.  Selects and
 * unconditional stores, not arena__note_high() and a branch: clang then
 * drops all of it where the arena dies (a stack scope's release), which
 * it does not for a conditional store. */
static inline void arena__end_high(arena *a)
{
    size_t size = arena_size(a);
    size_t high = arena__higher(size, a->high);
    a->peak = arena__higher(high, a->peak);
    a->high = 0;
}

/* Empties an arena whose one chunk, in use, starts at `base`, with the
 * inline window open on it: the batch's high point noted, size 0, marks
 * expired, the position at `base`. */
static inline void arena__empty_first(arena *a, char *base)
{
    arena__end_high(a);
    a->size = 0;
    a->expired = a->saves;
    a->pos = base;
    a->ptr = base;
    a->counted = base;
}

/* Reset of an arena that holds one chunk, in use, with the inline window
 * open on it (so nothing is instrumented, and the chunk is regular or the
 * caller's buffer): size 0, marks expired, the position back at the chunk's
 * start.  There is nothing for the retention policy to give back, but it
 * counts batches: `countdown` counts this one down (the library, which
 * sets it to ARENA__INLINE_RESETS + 1, notes at its next call the batches
 * counted down, each of which used that chunk alone).  False when the arena
 * is in any other state (spares included), or when `countdown` is 1 (no
 * count left: the library notes them first) or 0 (released inline: the
 * library forgets its history first), or when the arena holds free blocks
 * to forget or cleanups to run (`pending`), which the slow path handles. */
static inline bool arena__reset_first(arena *a)
{
    if (!a->ptr || a->nchunks != 1 || (a->pending & ~ARENA__PENDING_HOLDS) || a->countdown <= 1)
        return false;
    a->countdown--;
    arena__empty_first(a, a->chunks[0].base);
    return true;
}

static inline ARENA__SCOPE_INLINE void arena_release(arena *a)
{
    if (ARENA__INLINE_WINDOW && a->lazy) {
        /* Untouched by the library since the inline arena_init_buffer(): one
         * chunk, the buffer, in use; the window is open on it; nothing
         * `pending` (a cleanup's push, a free block's filing write through
         * the library, which clears `lazy`).  Loads and stores that a
         * compiler drops when the arena's life ends here (a stack scope's
         * arena: docs/fast-path.md). */
        arena__empty_first(a, a->first.base);
        return;
    }
    if (ARENA__INLINE_WINDOW && a->buf && a->nchunks == 1 && a->chunks == &a->first && a->ptr &&
        !a->pending) {
        /* The buffer alone, the window open on it, nothing `pending` (no
         * cleanups to run, no free blocks to forget, nothing the library
         * holds beyond the buffer): a release is a reset
         * that forgets the retention policy's history, which `countdown` 0
         * tells the library (the batches counted down since its last call
         * are forgotten with the rest). */
        a->countdown = 0;
        arena__empty_first(a, a->first.base);
        return;
    }
    arena__release_slow(a);
}

static inline void arena_reset(arena *a)
{
    if (ARENA__INLINE_WINDOW && arena__reset_first(a))
        return;
    arena__reset_slow(a);
}

static inline arena_mark arena_save(arena *a)
{
    arena_mark m;
    m.pos = a->ptr ? a->ptr : a->pos;
    m.size = arena_size(a);
    m.cur = a->cur;
    m.nused = a->nused;
    m.serial = ++a->saves;
    return m;
}

static inline arena_scope arena_scope_begin(arena *a)
{
    arena_scope s;
    s.arena = a;
    s.mark = arena_save(a);
    return s;
}

/* A rewind to the arena's latest mark (the innermost scope), taken in the
 * chunk the inline window is open on, with no chunk taken into use since and
 * the position still at or past the mark's in the window's uncounted bytes: moves the
 * window back to the mark, leaving the fields as the library's rewind would.
 * Its checks have nothing to find there: the serial is the latest and not
 * expired (a rewind that expires marks moves `saves` past every serial it
 * expires, so an expired mark never matches it), no mark is taken after it,
 * no chunk is dropped, and the window is open only where nothing is
 * instrumented, so nothing is poisoned; and nothing is `pending` (no free
 * blocks to forget, no cleanups to run).  False, with nothing changed, in
 * every other case: the library's rewind handles it, and reports misuse. */
static inline bool arena__rewind_window(arena *a, arena_mark m)
{
    if (ARENA__INLINE_WINDOW &&
        ARENA__LIKELY(m.serial == a->saves && m.serial > a->expired &&
                      !(a->pending & ~ARENA__PENDING_HOLDS) && m.cur == a->cur &&
                      m.nused == a->nused && m.pos != NULL &&
                      (uintptr_t)m.pos >= (uintptr_t)a->counted &&
                      (uintptr_t)m.pos <= (uintptr_t)a->ptr)) {
        arena__note_high(a);
        a->size = m.size;
        a->pos = a->ptr = a->counted = m.pos;
        return true;
    }
    return false;
}

/* Inline; or, where ARENA__OUT_OF_LINE is set, declared only (compiler.h),
 * and defined by the one library source that also sets
 * ARENA__DEFINE_OUT_OF_LINE: the exported copies. */
#if !defined(ARENA__OUT_OF_LINE)
#  define ARENA__INLINE_OR_EXPORTED static inline
#elif defined(ARENA__DEFINE_OUT_OF_LINE)
#  define ARENA__INLINE_OR_EXPORTED
#endif

#ifdef ARENA__INLINE_OR_EXPORTED

ARENA__INLINE_OR_EXPORTED void arena_rewind(arena *a, arena_mark m)
{
    if (!arena__rewind_window(a, m))
        arena__rewind_slow(a, m);
}

/* A call only where the window rewind does not apply, or the arena holds
 * spare chunks (a scratch arena's scope trims them: the library tells). */
ARENA__INLINE_OR_EXPORTED void arena_scope_end(arena_scope *s)
{
    arena *a = s->arena;
    if (a && !(arena__rewind_window(a, s->mark) && a->nchunks == a->nused))
        arena__scope_end_slow(s);
}
#endif

/* The room in the inline window after a value of alignment `align` (a power
 * of two <= ARENA_ALIGN) placed at the first suitable address, which goes to
 * *at.  0 when the window is closed.  The invariant of the window (ptr
 * rounded up to ARENA_ALIGN is <= end) keeps the subtraction from wrapping. */
static inline size_t arena__room(const arena *a, size_t align, uintptr_t *at)
{
    *at = arena__align_up((uintptr_t)a->ptr, align);
    return (size_t)((uintptr_t)a->end - *at);
}

/* Whether a value of `size` bytes at `align` fits the inline window, at the
 * address that goes to *at: the window is open, align is a power of two <=
 * ARENA_ALIGN, and size - 1 < the room (one unsigned compare sends size 0,
 * sizes near SIZE_MAX and a full window to the slow path).  The tests of a
 * constant align cost nothing.  The hint is given twice, inside for gcc and
 * around the call (ARENA__LIKELY(arena__fits(...))) for clang, which loses a
 * hint inside a returned value: with either alone, one of the two compilers
 * laid the slow path out first. */
static inline bool arena__fits(const arena *a, size_t size, size_t align, uintptr_t *at)
{
    return ARENA__INLINE_WINDOW && align <= ARENA_ALIGN && (align & (align - 1)) == 0 &&
           ARENA__LIKELY(size - 1 < arena__room(a, align, at));
}

/* Takes the value at `at` of `size` bytes and alignment `align` from the
 * inline window.  The bytes count in arena_size() through ptr - counted; only
 * alignment padding, which must not count, touches the size field, behind a
 * branch that values whose size is a multiple of their alignment never take.
 * A constant size that is not (a 24-byte node at 16) pads every value of a
 * series of them, so for those the padding, 0 or not, is subtracted without a
 * branch (docs/fast-path.md). */
static inline char *arena__take(arena *a, uintptr_t at, size_t size, size_t align)
{
    uintptr_t c = (uintptr_t)a->ptr;
    bool padded_series = ARENA__CONSTANT(size) && ARENA__CONSTANT(align) && size % align != 0;
    /* A compile-time constant only where gcc or clang fold it. */
    /* cppcheck-suppress knownConditionTrueFalse */
    if (padded_series || ARENA__UNLIKELY(at != c))
        a->size -= (size_t)(at - c);
    a->ptr = (char *)at + size;
    return (char *)at;
}

/* gcc's middle-end sees a constant huge size reach the inline copies below
 * on paths the room check makes unreachable (ARENA_REF_MAX + 1 on a 32-bit
 * target, say) and warns about them; these warnings are false here. */
#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wstringop-overflow"
#  pragma GCC diagnostic ignored "-Warray-bounds"
#  pragma GCC diagnostic ignored "-Wrestrict"
#endif

/* Copies `n` bytes.  Values up to 32 bytes -- labels, keys, small fields, the
 * bulk of what a decoder interns -- are moved with two overlapping loads and
 * stores of a fixed width (plain moves), which beats a call into the C
 * library's memcpy and its size dispatch (docs/fast-path.md); longer ones
 * call memcpy. */
static inline void arena__copy_bytes(char *dst, const void *src, size_t n)
{
    const char *s = (const char *)src;
#if defined(__GNUC__) || defined(__clang__)
    /* Hides which object `s` points to (no instruction): otherwise gcc's
     * -Warray-bounds judges the fixed-width moves of a branch only a longer
     * n reaches against a shorter source, and warns in the caller's code. */
    __asm__("" : "+r"(s));
#endif
    if (n <= 32) {
        if (n >= 16) {
            char a[16], b[16];
            memcpy(a, s, 16);
            memcpy(b, s + n - 16, 16);
            memcpy(dst, a, 16);
            memcpy(dst + n - 16, b, 16);
        } else if (n >= 8) {
            uint64_t a, b;
            memcpy(&a, s, 8);
            memcpy(&b, s + n - 8, 8);
            memcpy(dst, &a, 8);
            memcpy(dst + n - 8, &b, 8);
        } else if (n >= 4) {
            uint32_t a, b;
            memcpy(&a, s, 4);
            memcpy(&b, s + n - 4, 4);
            memcpy(dst, &a, 4);
            memcpy(dst + n - 4, &b, 4);
        } else if (n > 0) {
            char a = s[0], b = s[n / 2], c = s[n - 1];
            dst[0] = a;
            dst[n / 2] = b;
            dst[n - 1] = c;
        }
        return;
    }
    memcpy(dst, s, n);
}

/* Places the string s[0, len) and a NUL at the window's position (no
 * alignment).  Requires len < the room at alignment 1. */
static inline char *arena__put_str(arena *a, const char *s, size_t len)
{
    char *p = a->ptr;
    a->ptr = p + len + 1;
    arena__copy_bytes(p, s, len);
    p[len] = '\0';
    return p;
}

static inline void *arena_alloc(arena *a, size_t size)
{
    uintptr_t at;
    if (ARENA__LIKELY(arena__fits(a, size, ARENA_ALIGN, &at)))
        return arena__take(a, at, size, ARENA_ALIGN);
    return arena__alloc_slow(a, size, ARENA_ALIGN);
}

static inline void *arena_alloc_aligned(arena *a, size_t size, size_t align)
{
    uintptr_t at;
    if (align == 0)
        align = ARENA_ALIGN;
    /* The test of arena__fits(), written out here and in arena_copy() and
     * arena_ref_copy(): through the helper gcc lays these three out worse
     * (docs/fast-path.md, "Notes on shapes that measured faster"). */
    if (ARENA__INLINE_WINDOW && align <= ARENA_ALIGN && (align & (align - 1)) == 0 &&
        ARENA__LIKELY(size - 1 < arena__room(a, align, &at)))
        return arena__take(a, at, size, align);
    return arena__alloc_slow(a, size, align);
}

static inline void *arena_calloc(arena *a, size_t count, size_t size)
{
    size_t n;
    uintptr_t at;
    if (ARENA__UNLIKELY(ARENA__MUL_OVERFLOWS(count, size, &n)))
        return NULL;
    if (ARENA__LIKELY(arena__fits(a, n, ARENA_ALIGN, &at)))
        return memset(arena__take(a, at, n, ARENA_ALIGN), 0, n);
    return arena__calloc_slow(a, n, ARENA_ALIGN);
}

static inline void *arena_copy(arena *a, const void *src, size_t size, size_t align)
{
    uintptr_t at;
    if (align == 0)
        align = ARENA_ALIGN;
    if (ARENA__INLINE_WINDOW && align <= ARENA_ALIGN && (align & (align - 1)) == 0 &&
        ARENA__LIKELY(size - 1 < arena__room(a, align, &at))) {
        char *p = arena__take(a, at, size, align);
        arena__copy_bytes(p, src, size);
        return p;
    }
    return arena__copy_slow(a, src, size, align);
}

static inline char *arena_strndup(arena *a, const char *s, size_t len)
{
    uintptr_t at;
    if (ARENA__INLINE_WINDOW && ARENA__LIKELY(len < arena__room(a, 1, &at)))
        return arena__put_str(a, s, len);
    return arena__strndup_slow(a, s, len);
}

static inline char *arena_strdup(arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

/* Zeroed allocation of `size` bytes at `align`. */
static inline void *arena__new(arena *a, size_t size, size_t align)
{
    uintptr_t at;
    if (ARENA__LIKELY(arena__fits(a, size, align, &at)))
        return memset(arena__take(a, at, size, align), 0, size);
    return arena__calloc_slow(a, size, align);
}

static inline void *arena__new_array(arena *a, size_t count, size_t size, size_t align)
{
    size_t n;
    if (ARENA__UNLIKELY(ARENA__MUL_OVERFLOWS(count, size, &n)))
        return NULL;
    return arena__new(a, n, align);
}

static inline void *arena__alloc_array(arena *a, size_t count, size_t size, size_t align)
{
    size_t n;
    if (ARENA__UNLIKELY(ARENA__MUL_OVERFLOWS(count, size, &n)))
        return NULL;
    return arena_alloc_aligned(a, n, align);
}

/* The ref of `size` bytes just taken at `p` in the inline window's chunk.
 * The window lies in chunk `cur`, whose capacity is <= ARENA_REF_MAX, so the
 * offset and the size fit 32 bits. */
static inline arena_ref arena__window_ref(const arena *a, const char *p, size_t size)
{
    arena_ref r;
    r.chunk = a->cur;
    r.off = (uint32_t)(p - a->chunks[a->cur].base);
    r.len = (uint32_t)size;
    return r;
}

static inline arena_ref arena_ref_copy(arena *a, const void *src, size_t size, size_t align)
{
    uintptr_t at;
    if (align == 0)
        align = ARENA_ALIGN;
    if (ARENA__INLINE_WINDOW && align <= ARENA_ALIGN && (align & (align - 1)) == 0 &&
        ARENA__LIKELY(size - 1 < arena__room(a, align, &at))) {
        char *p = arena__take(a, at, size, align);
        arena__copy_bytes(p, src, size);
        /* The ref is made after the copy: made before it, its fields had to
         * outlive the call to memcpy (values over 32 bytes) on the stack. */
        return arena__window_ref(a, p, size);
    }
    return arena__ref_copy_slow(a, src, size, align);
}

static inline arena_ref arena_ref_strndup(arena *a, const char *s, size_t len)
{
    uintptr_t at;
    if (ARENA__INLINE_WINDOW && len != 0 && ARENA__LIKELY(len < arena__room(a, 1, &at)))
        return arena__window_ref(a, arena__put_str(a, s, len), len); /* after the copy */
    return arena__ref_strndup_slow(a, s, len);
}

/* A checked build keeps a tag in the top bit of len (and in the top bits of
 * chunk): a length never reaches it, since it is <= ARENA_REF_MAX. */
#define ARENA__REF_LEN_MASK 0x7FFFFFFFu

static inline bool arena_ref_empty(arena_ref r) { return (r.len & ARENA__REF_LEN_MASK) == 0; }

static inline size_t arena_ref_len(arena_ref r) { return r.len & ARENA__REF_LEN_MASK; }

static inline void *arena_ref_ptr(const arena *a, arena_ref r)
{
#if defined(ARENA_CHECKED) && ARENA_CHECKED
    return arena__ref_ptr_checked(a, r);
#else
    if (r.len == 0)
        return NULL;
    return a->chunks[r.chunk].base + r.off;
#endif
}

static inline const char *arena_ref_str(const arena *a, arena_ref r)
{
    const char *s = (const char *)arena_ref_ptr(a, r);
    return s ? s : "";
}

#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC diagnostic pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* ARENA_INTERNAL_ARENA_H */
