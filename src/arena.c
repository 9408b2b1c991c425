/*
 * The arena: chunked bump allocation.
 *
 * Algorithm.  Values are placed by bumping a position through the current
 * chunk.  The inline functions in arena.h do that for the common case (the
 * value fits the current chunk's "inline window"); everything else comes here:
 * a value that does not fit, size 0, odd alignments, and every allocation
 * while the window is closed (sanitizers, checked builds).
 *
 * The chunk index.  Chunks are recorded in one array, `chunks`, so that a ref
 * (chunk index, offset) resolves in O(1).  The array is split in two:
 *
 *     [0, nused)        chunks holding values of this batch, in the order they
 *                       were first used: uniform chunks (capacity = budget),
 *                       oversized chunks (one value each) and the caller's
 *                       buffer (always index 0 when there is one);
 *     [nused, nchunks)  spare uniform chunks, kept by a reset or rewind.
 *
 * A new chunk is always placed at index `nused` (a spare standing there moves
 * to the end), so everything stored after a mark lives at indices >= the
 * mark's nused.  Rewinding frees the oversized chunks in [mark.nused, nused)
 * and turns the uniform ones into spares; reset is a rewind to nothing that
 * reopens chunk 0.  Entries below a mark's nused never move while the mark is
 * valid, so live refs stay valid.
 *
 * The index lives in the arena struct (`first`) while it has one slot, so a
 * one-chunk arena, and a caller-buffer arena, costs no bookkeeping allocation.
 * It grows by doubling through the backing allocator, before the chunk that
 * needs it is allocated: a failure at either step leaves the arena as it was.
 *
 * Costs: the inline path is O(1) with no call; a new chunk costs one backing
 * allocation (two when the index doubles); reset and rewind are O(chunks).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The result of a size-0 allocation: non-NULL, never dereferenced. */
static char zero_size_value[1];

enum {
    FIXED = 1u /* caller's buffer without backing: never allocate */
};

/* ---- Backing allocator --------------------------------------------------------- */

/* The default backing: the C library's heap, with every block aligned to a
 * cache line (64 bytes) instead of malloc's 16.  A value at the start of a
 * chunk (the scratch block of an arena reset per scope, the first row of a
 * batch) then never straddles a line more than it must: with 16-byte chunk
 * starts, zeroing a 512-byte scope block took half again as long (AVX-512
 * memset, docs/benchmarks.md).  Freed with free(). */
static void *default_alloc(size_t n)
{
#if defined(_WIN32)
    return malloc(n);
#else
    if (n > SIZE_MAX - 63)
        return NULL;
    return aligned_alloc(64, (n + 63) & ~(size_t)63);
#endif
}

static void *back_alloc(arena *a, size_t n)
{
    if (a->backing.alloc)
        return a->backing.alloc(a->backing.ctx, n);
    return default_alloc(n);
}

static void back_free(arena *a, void *p, size_t n)
{
    arena__unpoison(p, n);
    if (a->backing.alloc)
        a->backing.free(a->backing.ctx, p, n);
    else
        free(p);
}

static size_t budget(const arena *a) { return a->budget ? a->budget : ARENA_DEFAULT_CHUNK; }

static bool is_oversized(const arena *a, const struct arena__chunk *c)
{
    return c->base != a->buf && c->cap > budget(a);
}

/* ---- The position ------------------------------------------------------------------ */

/* The position in the current chunk (NULL: no current chunk). */
static char *cursor(const arena *a) { return a->ptr ? a->ptr : a->pos; }

/* Moves the position to `pos` in the current chunk and reopens the inline
 * window when it can hold at least an aligned byte. */
static void set_cursor(arena *a, char *pos)
{
    a->pos = pos;
    a->ptr = a->end = a->run = NULL;
    if (pos && !arena__instrumented()) {
        uintptr_t end = arena__align_down((uintptr_t)a->lim, ARENA_ALIGN);
        if (arena__align_up((uintptr_t)pos, ARENA_ALIGN) <= end) {
            a->ptr = a->run = pos;
            a->end = pos + (end - (uintptr_t)pos);
        }
    }
}

/* Folds the bytes the inline paths stored since the window opened into
 * `size`.  Every out-of-line entry point calls it first, so that the
 * library's code reads an exact `size` and only ever moves the position
 * through set_cursor(). */
static void sync(arena *a)
{
    a->size = arena_size(a);
    a->run = a->ptr;
}

/* Makes chunk `i` current with its position at `pos`. */
static void enter_chunk(arena *a, uint32_t i, char *pos)
{
    a->cur = i;
    a->lim = a->chunks[i].base + a->chunks[i].cap;
    set_cursor(a, pos);
}

static void leave_chunks(arena *a)
{
    a->cur = 0;
    a->lim = NULL;
    set_cursor(a, NULL);
}

/* ---- The chunk index ------------------------------------------------------------------ */

/* Makes room for one more entry.  False (arena unchanged) on failure. */
static bool index_reserve(arena *a)
{
    struct arena__chunk *grown;
    uint32_t ncap;
    size_t bytes;

    if (a->nchunks < a->ncap)
        return true;
    if (a->ncap == 0) {
        a->chunks = &a->first;
        a->ncap = 1;
        return true;
    }
    if (a->ncap > UINT32_MAX / 2)
        return false;
    ncap = a->ncap < 8 ? 8 : a->ncap * 2;
    if (ARENA__MUL_OVERFLOWS((size_t)ncap, sizeof *grown, &bytes))
        return false;
    grown = (struct arena__chunk *)back_alloc(a, bytes);
    if (!grown)
        return false;
    memcpy(grown, a->chunks, a->nchunks * sizeof *grown);
    if (a->chunks != &a->first)
        back_free(a, a->chunks, a->ncap * sizeof *grown);
    a->chunks = grown;
    a->ncap = ncap;
    return true;
}

/* Allocates a chunk of `cap` bytes and records it at index nused (a spare
 * there moves to the end).  Returns its index, or UINT32_MAX (arena unchanged).
 * No object can exceed PTRDIFF_MAX bytes, so such a chunk is refused before
 * the backing sees it (a sanitizer or Valgrind would flag the request). */
static uint32_t add_chunk(arena *a, size_t cap)
{
    uint32_t at = a->nused;
    char *base;

    if ((a->flags & FIXED) || cap > (size_t)PTRDIFF_MAX || a->nchunks == UINT32_MAX ||
        !index_reserve(a))
        return UINT32_MAX;
    base = (char *)back_alloc(a, cap);
    if (!base)
        return UINT32_MAX;
    arena__poison(base, cap);
    if (at < a->nchunks)
        a->chunks[a->nchunks] = a->chunks[at];
    a->chunks[at].base = base;
    a->chunks[at].cap = cap;
    a->nchunks++;
    a->nused++;
    a->retained += cap;
    return at;
}

/* Forgets the chunks at [from, nused): oversized ones are freed, uniform ones
 * join the spares (in their order).  Sets nused = from. */
static void drop_chunks_from(arena *a, uint32_t from)
{
    uint32_t i, keep = from;

    for (i = from; i < a->nchunks; i++) {
        struct arena__chunk c = a->chunks[i];
        if (i < a->nused && is_oversized(a, &c)) {
            a->retained -= c.cap;
            back_free(a, c.base, c.cap);
            continue;
        }
        arena__poison(c.base, c.cap);
        a->chunks[keep++] = c;
    }
    a->nchunks = keep;
    a->nused = from;
}

/* ---- Placing values -------------------------------------------------------------------- */

/* Places `size` (> 0) bytes at `align` (a power of two).  Stores the chunk
 * index in *chunk.  NULL (arena unchanged) on failure. */
static char *place(arena *a, size_t size, size_t align, uint32_t *chunk)
{
    char *pos = cursor(a);
    size_t worst, need;
    uint32_t i;
    char *p;

    if (a->lim) {
        size_t pad = (size_t)(-(uintptr_t)pos & (uintptr_t)(align - 1));
        size_t room = (size_t)(a->lim - pos);
        if (pad <= room && size <= room - pad) {
            p = pos + pad;
            set_cursor(a, p + size);
            goto placed_current;
        }
    }

    /* The padding a fresh ARENA_ALIGN-aligned chunk may need for `align`. */
    worst = align > ARENA_ALIGN ? align - ARENA_ALIGN : 0;
    if (size > SIZE_MAX - worst)
        return NULL;
    need = size + worst;

    if (need > budget(a)) {
        i = add_chunk(a, need);
        if (i == UINT32_MAX)
            return NULL;
        p = (char *)arena__align_up((uintptr_t)a->chunks[i].base, align);
        *chunk = i;
        goto placed;
    }

    if (a->nused < a->nchunks && a->chunks[a->nused].cap >= need) {
        i = a->nused++;
    } else {
        i = add_chunk(a, budget(a));
        if (i == UINT32_MAX)
            return NULL;
    }
    p = (char *)arena__align_up((uintptr_t)a->chunks[i].base, align);
    enter_chunk(a, i, p + size);

placed_current:
    *chunk = a->cur;
placed:
    a->size += size;
    arena__unpoison(p, size);
    return p;
}

void *arena__alloc_slow(arena *a, size_t size, size_t align)
{
    uint32_t chunk;
    sync(a);
    if (align == 0)
        align = ARENA_ALIGN;
    if (!arena__is_pow2(align))
        return NULL;
    if (size == 0)
        return zero_size_value;
    return place(a, size, align, &chunk);
}

void *arena__calloc_slow(arena *a, size_t size, size_t align)
{
    void *p = arena__alloc_slow(a, size, align);
    if (p && size)
        memset(p, 0, size);
    return p;
}

void *arena__copy_slow(arena *a, const void *src, size_t size, size_t align)
{
    void *p = arena__alloc_slow(a, size, align);
    if (p && size)
        memcpy(p, src, size);
    return p;
}

char *arena__strndup_slow(arena *a, const char *s, size_t len)
{
    uint32_t chunk;
    char *p;
    sync(a);
    if (len == SIZE_MAX)
        return NULL;
    p = place(a, len + 1, 1, &chunk);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

void *arena_grow(arena *a, void *ptr, size_t old_size, size_t new_size)
{
    char *p = (char *)ptr;
    char *pos = cursor(a);
    uint32_t chunk;
    char *q;
    bool last;

    sync(a);
    if (!p)
        return arena__alloc_slow(a, new_size, ARENA_ALIGN);
    /* The most recent value ends at the position of the current chunk. */
    last = a->lim && p >= a->chunks[a->cur].base && p <= pos &&
           (size_t)(pos - p) == old_size;
    if (new_size <= old_size) {
        if (last) {
            set_cursor(a, p + new_size);
            a->size -= old_size - new_size;
            arena__poison(p + new_size, old_size - new_size);
        }
        return p;
    }
    if (last && new_size - old_size <= (size_t)(a->lim - pos)) {
        set_cursor(a, p + new_size);
        a->size += new_size - old_size;
        arena__unpoison(pos, new_size - old_size);
        return p;
    }
    q = place(a, new_size, ARENA_ALIGN, &chunk);
    if (q)
        memcpy(q, p, old_size);
    return q;
}

/* ---- Refs ------------------------------------------------------------------------------- */

static arena_ref make_ref(const arena *a, const char *p, uint32_t chunk, size_t len)
{
    arena_ref r;
    r.chunk = chunk;
    r.off = (uint32_t)(p - a->chunks[chunk].base);
    r.len = (uint32_t)len;
    return r;
}

arena_ref arena__ref_copy_slow(arena *a, const void *src, size_t size, size_t align)
{
    arena_ref r = {0, 0, 0};
    uint32_t chunk;
    char *p;
    sync(a);

    if (size > ARENA_REF_MAX) {
        arena__report(ARENA_ERR_REF_TOO_LARGE,
                      "arena_ref_copy: a value of %zu bytes at %p exceeds ARENA_REF_MAX (%zu)",
                      size, src, (size_t)ARENA_REF_MAX);
        return r;
    }
    if (align == 0)
        align = ARENA_ALIGN;
    /* An offset must fit 32 bits: the padding of an oversized value is < align. */
    if (size == 0 || !arena__is_pow2(align) || align > ARENA_REF_MAX)
        return r;
    p = place(a, size, align, &chunk);
    if (!p)
        return r;
    memcpy(p, src, size);
    return make_ref(a, p, chunk, size);
}

arena_ref arena__ref_strndup_slow(arena *a, const char *s, size_t len)
{
    arena_ref r = {0, 0, 0};
    uint32_t chunk;
    char *p;
    sync(a);

    if (len >= ARENA_REF_MAX) {
        arena__report(ARENA_ERR_REF_TOO_LARGE,
                      "arena_ref_strndup: a string of %zu bytes at %p exceeds ARENA_REF_MAX (%zu)",
                      len, (const void *)s, (size_t)ARENA_REF_MAX);
        return r;
    }
    if (len == 0)
        return r;
    p = place(a, len + 1, 1, &chunk);
    if (!p)
        return r;
    memcpy(p, s, len);
    p[len] = '\0';
    return make_ref(a, p, chunk, len);
}

void *arena__ref_ptr_checked(const arena *a, arena_ref r)
{
    if (r.len == 0)
        return NULL;
    if (r.chunk >= a->nused || r.off > a->chunks[r.chunk].cap ||
        r.len > a->chunks[r.chunk].cap - r.off) {
        arena__report(ARENA_ERR_STALE_REF,
                      "arena_ref_ptr: ref {chunk %u, off %u, len %u} does not describe a live "
                      "value of arena %p",
                      (unsigned)r.chunk, (unsigned)r.off, (unsigned)r.len, (const void *)a);
        return NULL;
    }
    return a->chunks[r.chunk].base + r.off;
}

/* ---- Lifetime ------------------------------------------------------------------------------ */

/* The empty arena.  Copying it, rather than memset(a, 0, sizeof *a), keeps
 * gcc from emitting `rep stos` for the known-size clear: its start-up cost
 * (tens of cycles) was most of the price of a stack-buffer scope. */
static const arena empty_arena;

void arena_init_with(arena *a, size_t chunk_bytes, const arena_allocator *backing)
{
    *a = empty_arena;
    if (chunk_bytes > ARENA_REF_MAX)
        chunk_bytes = ARENA_REF_MAX;
    a->budget = chunk_bytes ? chunk_bytes : ARENA_DEFAULT_CHUNK;
    if (backing && backing->alloc)
        a->backing = *backing;
}

void arena_init(arena *a, size_t chunk_bytes) { arena_init_with(a, chunk_bytes, NULL); }

/* Attaches a->buf (with capacity `cap`) as chunk 0 of an arena holding nothing. */
static void attach_buffer(arena *a, size_t cap)
{
    a->chunks = &a->first;
    a->ncap = 1;
    a->first.base = a->buf;
    a->first.cap = cap;
    a->nchunks = a->nused = 1;
    a->retained = cap;
    arena__poison(a->buf, cap);
    enter_chunk(a, 0, a->buf);
}

void arena_init_buffer(arena *a, void *buf, size_t len, const arena_allocator *backing)
{
    uintptr_t start = arena__align_up((uintptr_t)buf, ARENA_ALIGN);
    size_t pad = (size_t)(start - (uintptr_t)buf);
    size_t cap = buf && len > pad ? len - pad : 0;

    arena_init_with(a, ARENA_DEFAULT_CHUNK, backing);
    if (!backing || !backing->alloc)
        a->flags |= FIXED;
    if (cap > ARENA_REF_MAX)
        cap = ARENA_REF_MAX;
    if (cap) {
        a->buf = (char *)buf + pad;
        attach_buffer(a, cap);
    }
}

void arena__release_slow(arena *a)
{
    size_t bufcap = a->buf ? a->chunks[0].cap : 0;
    uint32_t i;
    sync(a);

    for (i = 0; i < a->nchunks; i++) {
        if (a->chunks[i].base != a->buf)
            back_free(a, a->chunks[i].base, a->chunks[i].cap);
    }
    if (a->chunks && a->chunks != &a->first)
        back_free(a, a->chunks, a->ncap * sizeof *a->chunks);
    a->chunks = NULL;
    a->ncap = a->nchunks = a->nused = 0;
    a->retained = 0;
    a->size = 0;
    a->epoch++;
    leave_chunks(a);
    if (a->buf) {
        arena__unpoison(a->buf, bufcap);
        attach_buffer(a, bufcap);
    }
}

/* Frees spare chunks (at [nused, nchunks)), the last first, while the arena
 * retains more than `limit` bytes.  The caller's buffer is never freed.  An
 * arena left with one chunk or none gives its heap index back too. */
static void free_spares(arena *a, size_t limit)
{
    while (a->nchunks > a->nused && a->retained > limit) {
        struct arena__chunk c = a->chunks[a->nchunks - 1];
        if (c.base == a->buf)
            break;
        a->nchunks--;
        a->retained -= c.cap;
        back_free(a, c.base, c.cap);
    }
    if (a->nchunks <= 1 && a->chunks && a->chunks != &a->first) {
        if (a->nchunks)
            a->first = a->chunks[0];
        back_free(a, a->chunks, a->ncap * sizeof *a->chunks);
        a->chunks = &a->first;
        a->ncap = 1;
    }
    if (a->nchunks == 0) {
        a->chunks = NULL;
        a->ncap = 0;
    }
}

/* Makes the arena empty (size 0, a new epoch) with chunk 0, if any, current. */
static void reopen(arena *a)
{
    a->size = 0;
    a->epoch++;
    if (a->nchunks) {
        a->nused = 1;
        enter_chunk(a, 0, a->chunks[0].base);
    } else {
        leave_chunks(a);
    }
}

void arena__reset_slow(arena *a)
{
    sync(a);
    drop_chunks_from(a, 0);
    reopen(a);
}

static ARENA_NOINLINE void reset_to_slow(arena *a, size_t retain_limit)
{
    sync(a);
    drop_chunks_from(a, 0);
    free_spares(a, retain_limit);
    reopen(a);
}

void arena_reset_to(arena *a, size_t retain_limit)
{
    /* The common case of a request-sized batch (the arena cache recycles one
     * per request): one chunk, kept, the inline window open on it. */
    if (ARENA__INLINE_WINDOW && a->nchunks == 1 && a->retained <= retain_limit &&
        arena__reset_first(a))
        return;
    reset_to_slow(a, retain_limit);
}

void arena_trim(arena *a, size_t max_retained)
{
    sync(a);
    free_spares(a, max_retained);
}

/* True when `m` can be a mark of this arena's current epoch: its chunks are
 * still in use and its position lies in its chunk.
 *
 * A mark ahead of the current position in the same chunk is NOT evidence of
 * expiry: shrinking a value stored before the mark (arena_grow giving the
 * tail back) moves the position and the size below a mark that is still
 * valid.  Such a mark is accepted, so a rewind to a mark expired by a rewind
 * to an earlier one in the same chunk goes unreported; it stays memory-safe
 * (the position is inside a chunk the arena holds). */
static bool mark_plausible(const arena *a, arena_mark m)
{
    const struct arena__chunk *c;
    if (m.epoch != a->epoch || m.nused > a->nused)
        return false;
    if (!m.pos)
        return true;
    if (m.cur >= m.nused)
        return false;
    c = &a->chunks[m.cur];
    return m.pos >= c->base && (size_t)(m.pos - c->base) <= c->cap;
}

void arena_rewind(arena *a, arena_mark m)
{
    sync(a);
    if (!mark_plausible(a, m)) {
        arena__report(ARENA_ERR_BAD_MARK,
                      "arena_rewind: arena %p cannot have made this mark (expired by a reset, "
                      "release or earlier rewind, or from another arena)",
                      (void *)a);
        return;
    }
    drop_chunks_from(a, m.nused);
    a->size = m.size;
    if (m.pos) {
        /* Chunks between m.cur and m.nused hold only oversized values stored
         * before the mark, so the mark's chunk tail is all that expires here. */
        enter_chunk(a, m.cur, m.pos);
        arena__poison(m.pos, (size_t)(a->lim - m.pos));
    } else {
        leave_chunks(a);
    }
}

size_t arena_retained(const arena *a) { return a->retained; }

/* ---- Consistency ------------------------------------------------------------------------------ */

#define CORRUPT(...) (arena__report(ARENA_ERR_CORRUPT, __VA_ARGS__), false)

bool arena_check(const arena *a)
{
    size_t held = 0;
    uint32_t i;
    char *pos = cursor(a);

    if (a->nused > a->nchunks || a->nchunks > a->ncap)
        return CORRUPT("arena_check: arena %p: counts out of order (used %u, held %u, slots %u)",
                       (const void *)a, (unsigned)a->nused, (unsigned)a->nchunks,
                       (unsigned)a->ncap);
    if (a->ncap && !a->chunks)
        return CORRUPT("arena_check: arena %p: index missing", (const void *)a);
    for (i = 0; i < a->nchunks; i++) {
        const struct arena__chunk *c = &a->chunks[i];
        if (!c->base || ((uintptr_t)c->base & (ARENA_ALIGN - 1)) || c->cap == 0)
            return CORRUPT("arena_check: arena %p: chunk %u is malformed", (const void *)a,
                           (unsigned)i);
        if (i >= a->nused && is_oversized(a, c))
            return CORRUPT("arena_check: arena %p: spare chunk %u is oversized",
                           (const void *)a, (unsigned)i);
        if (c->base == a->buf && i != 0)
            return CORRUPT("arena_check: arena %p: the caller's buffer is chunk %u, not 0",
                           (const void *)a, (unsigned)i);
        held += c->cap;
    }
    if (held != a->retained)
        return CORRUPT("arena_check: arena %p: retained %zu but chunks hold %zu",
                       (const void *)a, a->retained, held);
    if (a->lim) {
        const struct arena__chunk *c = &a->chunks[a->cur];
        if (a->cur >= a->nused || a->lim != c->base + c->cap || pos < c->base || pos > a->lim)
            return CORRUPT("arena_check: arena %p: position %p outside current chunk %u",
                           (const void *)a, (void *)pos, (unsigned)a->cur);
    } else if (pos || a->ptr || a->end) {
        return CORRUPT("arena_check: arena %p: a position without a current chunk",
                       (const void *)a);
    }
    if (a->ptr && (a->ptr > a->end || ((uintptr_t)a->end & (ARENA_ALIGN - 1)) ||
                   arena__align_up((uintptr_t)a->ptr, ARENA_ALIGN) > (uintptr_t)a->end ||
                   a->end > a->lim))
        return CORRUPT("arena_check: arena %p: inline window [%p, %p) is malformed",
                       (const void *)a, (void *)a->ptr, (void *)a->end);
    if (a->ptr ? (a->run < a->chunks[a->cur].base || a->run > a->ptr) : a->run != NULL)
        return CORRUPT("arena_check: arena %p: inline run starts at %p, outside [chunk, %p]",
                       (const void *)a, (void *)a->run, (void *)a->ptr);
    return true;
}
