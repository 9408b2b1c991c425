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
    FIXED = 1u,   /* caller's buffer without backing: never allocate */
    BUF_OPEN = 2u /* instrumented: the caller's buffer is open (after a release)
                     until the arena next stores into it */
};

/* ---- Instrumented layout ----------------------------------------------------------
 *
 * When the library must see every allocation (ASan, Valgrind, the checked
 * build: see arena__instrumented()), each value is laid out as
 *
 *     [pad][header: checked build only][value][guard]
 *
 * The value starts GRANULE-aligned (ASan's shadow granularity: a poisoned byte
 * just past a value needs the value to own the start of its granule), and the
 * guard runs from its end to the next granule boundary plus one whole granule,
 * so the position stays GRANULE-aligned.  Guards, pads, headers and the unused
 * part of a chunk are closed (poisoned / no-access); the checked build also
 * fills them with ARENA__CLOBBER and verifies them at reset and rewind.
 *
 * The header (checked build) holds the value's size and a tag drawn from a
 * per-arena serial; a ref carries the same tag in bits its fields cannot use,
 * so resolving a ref whose value has expired (and maybe been overwritten) is
 * detected in O(1).
 *
 * A guard is cut short at the end of a uniform chunk, so values still fill a
 * chunk exactly.  In the checked build every chunk the arena allocates has
 * EXTRA bytes (a header) on top of its capacity, so that a value that fits
 * the budget still fits a fresh chunk, and an oversized chunk has room for
 * its value's guard too (extra_for()); arena_retained() reports capacities
 * exactly as documented.
 * None of this exists in a plain build: instrumented() is a constant 0 there
 * (Valgrind aside, which is decided once at load).
 */
#define GRANULE ((size_t)8)
#define HDR_MAGIC 0x5A6C0000u /* top bits of a header's first word */
#define TAG_BITS 13u          /* 1 spare bit of len + CHUNK_TAG_BITS of chunk */
#define CHUNK_TAG_BITS 12u
#define CHUNK_LIMIT ((uint32_t)1 << (32u - CHUNK_TAG_BITS)) /* chunks a checked ref can name */

struct header {
    uint32_t word;  /* HDR_MAGIC | tag */
    uint32_t check; /* ~word ^ folded size */
    uint64_t size;
};

/* Bytes of header before each value (checked build); a multiple of ARENA_ALIGN. */
static size_t header_bytes(void)
{
    return ARENA_CHECKED ? (ARENA_ALIGN > 16 ? ARENA_ALIGN : 16) : 0;
}
#define HDR header_bytes()
#define EXTRA HDR

static bool instrumented(void) { return arena__instrumented(); }

/* Bytes a value of `n` bytes occupies from its start to the end of its guard.
 * n is at most a chunk's capacity, far from SIZE_MAX. */
static size_t footprint(size_t n)
{
    return instrumented() ? ((n + GRANULE - 1) & ~(GRANULE - 1)) + GRANULE : n;
}

/* How far the value of `n` bytes at `p` reaches with its guard, in a chunk that
 * ends at `lim` (p + n <= lim).  The guard is cut short at the chunk's end:
 * a value may fill a chunk exactly, as it would without guards (past an
 * allocated chunk lies the allocator's own redzone; past a caller's buffer,
 * the caller's memory). */
static size_t guarded_len(const char *p, size_t n, const char *lim)
{
    size_t room = (size_t)(lim - p);
    size_t foot = footprint(n);
    return foot < room ? foot : room;
}


#if defined(ARENA_HAVE_VALGRIND) && ARENA_HAVE_VALGRIND
int arena__valgrind;

/* Decided once, before main: the library never asks again. */
__attribute__((constructor)) static void detect_valgrind(void)
{
    arena__valgrind = RUNNING_ON_VALGRIND != 0;
}
#endif

/* ---- Backing allocator --------------------------------------------------------- */

static void *back_alloc(arena *a, size_t n) { return arena__back_alloc(&a->backing, n); }

/* Memory goes back open (unpoisoned, accessible): the backing may reuse it. */
static void back_free(arena *a, void *p, size_t n)
{
    arena__open(p, n);
    arena__back_free(&a->backing, p, n);
}

static size_t budget(const arena *a) { return a->budget ? a->budget : ARENA_DEFAULT_CHUNK; }

/* Overhead a chunk allocated by this arena carries beyond its capacity
 * `cap`: a header's worth (checked build), and for an oversized chunk a
 * granule of guard after its one value too (a uniform chunk's last value may
 * end at the chunk's end: values fill it exactly, as without guards). */
static size_t extra_for(const arena *a, size_t cap)
{
    if (!instrumented())
        return 0;
    return cap > budget(a) ? EXTRA + 2 * GRANULE : EXTRA;
}

/* A chunk's capacity as arena_retained() counts it (see extra_for()). */
static size_t usable(const arena *a, const struct arena__chunk *c)
{
    size_t cap;
    if (c->base == a->buf || !instrumented())
        return c->cap;
    cap = c->cap - EXTRA;
    return cap > budget(a) ? cap - 2 * GRANULE : cap;
}

static bool is_oversized(const arena *a, const struct arena__chunk *c)
{
    return c->base != a->buf && usable(a, c) > budget(a);
}

/* ---- Checked build: headers, tags, clobbering, sentinels ------------------------------ */

/* The serial lives in the top bits of flags.  It is deterministic (refs stay
 * reproducible from run to run); a ref resolved against another arena is
 * caught when the two arenas' histories differ at that place. */
static uint32_t next_tag(arena *a)
{
    uint32_t serial = a->flags >> 8;
    serial = (serial + 1) & 0xFFFFFFu;
    if (serial == 0)
        serial = 1;
    a->flags = (a->flags & 0xFFu) | (serial << 8);
    return serial & ((1u << TAG_BITS) - 1);
}

static uint32_t header_check(uint32_t word, uint64_t size)
{
    return ~word ^ (uint32_t)size ^ (uint32_t)(size >> 32);
}

ARENA__NO_ASAN static void header_store(char *p, uint32_t tag, size_t size)
{
    struct header *h = (struct header *)(void *)(p - HDR);
    if (ARENA__VALGRIND)
        VALGRIND_MAKE_MEM_UNDEFINED(h, sizeof *h);
    h->word = HDR_MAGIC | tag;
    h->size = size;
    h->check = header_check(h->word, h->size);
}

/* True when `h` is a header (of any tag); stores its tag and size. */
ARENA__NO_ASAN static bool header_load(const char *h, uint32_t *tag, uint64_t *size)
{
    const struct header *hd = (const struct header *)(const void *)h;
    uint32_t word = hd->word;
    uint64_t n = hd->size;
    if ((word & ~((1u << TAG_BITS) - 1)) != HDR_MAGIC || hd->check != header_check(word, n))
        return false;
    *tag = word & ((1u << TAG_BITS) - 1);
    *size = n;
    return true;
}

ARENA__NO_ASAN static bool all_clobbered(const char *p, size_t n)
{
    const uint64_t word = (uint64_t)0x0101010101010101u * ARENA__CLOBBER;
    size_t i = 0;
    /* A word at a time where p is GRANULE-aligned (it is, but for a tail). */
    if (((uintptr_t)p & (GRANULE - 1)) == 0)
        for (; i + 8 <= n; i += 8)
            if (*(const uint64_t *)(const void *)(p + i) != word)
                return false;
    for (; i < n; i++)
        if ((unsigned char)p[i] != ARENA__CLOBBER)
            return false;
    return true;
}

/* The bytes, in whole granules from `p` towards `to`, that hold the clobber
 * pattern: the run of free bytes a walk skips in one go (a word at a time,
 * where p is GRANULE-aligned, as it is but for a tail). */
ARENA__NO_ASAN static size_t clobbered_prefix(const char *p, const char *to)
{
    const uint64_t word = (uint64_t)0x0101010101010101u * ARENA__CLOBBER;
    const char *q = p;
    if ((uintptr_t)p & (GRANULE - 1))
        return (size_t)(to - p) >= GRANULE && all_clobbered(p, GRANULE) ? GRANULE : 0;
    while ((size_t)(to - q) >= GRANULE && *(const uint64_t *)(const void *)q == word)
        q += GRANULE;
    return (size_t)(q - p);
}

/* Checked build, outside Valgrind: writes the guard of the value of `n`
 * bytes at `p` (up to `end`), whatever the bytes held before (a rewind may
 * have left a grown value's old bytes there).  Poisoned or not. */
ARENA__NO_ASAN static void write_guard(char *p, size_t n, const char *end)
{
    char *q;
    if (!ARENA_CHECKED || ARENA__VALGRIND)
        return;
    for (q = p + n; q < end; q++)
        *q = (char)ARENA__CLOBBER;
}

/* Checked build, outside Valgrind (whose no-access guards catch writes as they
 * happen): walks [from, to) of chunk `i`, which holds headers, values and
 * clobbered bytes, and reports the first guard, pad or header that the
 * program overwrote.  `from` and `to` are GRANULE-aligned. */
ARENA__NO_ASAN static bool verify_span(const arena *a, uint32_t i, const char *from,
                                       const char *to)
{
    const char *q = from, *end;
    uint32_t tag;
    uint64_t n;

    if (!ARENA_CHECKED || ARENA__VALGRIND)
        return true;
    while (q < to) {
        size_t left = (size_t)(to - q), run;
        if (left < GRANULE) {
            if (!all_clobbered(q, left))
                break;
            q = to;
            continue;
        }
        run = clobbered_prefix(q, to);
        if (run) {
            q += run;
            continue;
        }
        /* cppcheck-suppress unsignedLessThanZero ; HDR is 0 only where this never runs */
        if (left < HDR || !header_load(q, &tag, &n) || n > left - HDR)
            break;
        q += HDR;
        end = q + guarded_len(q, (size_t)n, to);
        if (!all_clobbered(q + n, (size_t)(end - q) - (size_t)n))
            return arena__report(ARENA_ERR_CORRUPT,
                                 "arena: arena %p: the %llu-byte value at %p (chunk %u) wrote "
                                 "past its end",
                                 (const void *)a, (unsigned long long)n, (const void *)q,
                                 (unsigned)i),
                   false;
        q = end;
    }
    if (q < to)
        return arena__report(ARENA_ERR_CORRUPT,
                             "arena: arena %p: chunk %u is corrupt at %p (a write before the "
                             "start of a value, or outside any value)",
                             (const void *)a, (unsigned)i, (const void *)q),
               false;
    return true;
}

/* Checked build: a rewind may cut through a value stored before the mark
 * that grew in place after it (its bytes past the mark are forgotten).  Its
 * guard is verified, then its header is cut to end one granule before `pos`
 * and the rest of it clobbered, so that the walks still find a header, a
 * value and a guard, then clobbered bytes. */
ARENA__NO_ASAN static void cut_value_at(arena *a, uint32_t i, const char *pos)
{
    char *q = a->chunks[i].base;
    const char *end = q + a->chunks[i].cap;
    uint32_t tag;
    uint64_t n;
    size_t reach;

    while (q < pos) {
        if (all_clobbered(q, GRANULE)) {
            q += GRANULE;
            continue;
        }
        /* cppcheck-suppress unsignedLessThanZero ; HDR is 0 only where this never runs */
        if ((size_t)(end - q) < HDR || !header_load(q, &tag, &n) ||
            n > (size_t)(end - q) - HDR)
            return; /* corrupt: the walk at the rewind reports it */
        if (q + HDR >= pos) { /* stored after the mark: the whole value goes */
            reach = HDR + guarded_len(q + HDR, (size_t)n, end);
            arena__open(q, reach);
            memset(q, ARENA__CLOBBER, reach);
            arena__close(q, reach);
            return;
        }
        q += HDR;
        reach = guarded_len(q, (size_t)n, end);
        if (q + reach > pos) {
            if (!all_clobbered(q + n, reach - (size_t)n))
                arena__report(ARENA_ERR_CORRUPT,
                              "arena: arena %p: the %llu-byte value at %p (chunk %u) wrote past "
                              "its end",
                              (const void *)a, (unsigned long long)n, (const void *)q,
                              (unsigned)i);
            n = (size_t)(pos - q) - GRANULE; /* both on granules, a value's end before */
            header_store(q, tag, (size_t)n);
            arena__open(q + n, reach - (size_t)n);
            memset(q + n, ARENA__CLOBBER, reach - (size_t)n);
            arena__close(q + n, reach - (size_t)n);
            return;
        }
        q += reach;
    }
}

/* A new chunk: closed, and clobbered in the checked build. */
static void fresh_chunk(char *base, size_t cap)
{
    if (ARENA__VALGRIND)
        VALGRIND_CREATE_MEMPOOL(base, 0, 0);
    if (ARENA_CHECKED)
        memset(base, ARENA__CLOBBER, cap);
    arena__close(base, cap);
}

/* Valgrind: true when the byte at p is addressable (part of a value). */
static bool vg_addressable(const char *p)
{
    char v;
    return VALGRIND_GET_VBITS(p, &v, 1) == 1;
}

/* Valgrind, before trimming chunk `base` to [base, pos): memcheck 3.19 marks
 * bytes outside the pool no-access when it trims a block that straddles the
 * cut (its size arithmetic mixes the pool's with the block's), so the one
 * value that can cross `pos` (stored before a mark and grown in place after
 * it, or stored after a shrink below it) is cut first, by hand.  Guards keep
 * values apart, so addressable bytes on both sides of pos mean one value
 * (with its header, in the checked build). */
static void vg_unstraddle(const char *base, char *pos, const char *end)
{
    char *v = pos - 1;
    if (pos >= end || !vg_addressable(v) || !vg_addressable(pos))
        return;
    while (v > base && vg_addressable(v - 1))
        v--;
    if (ARENA_CHECKED) { /* its header is addressable too: the value follows it */
        uint32_t tag;
        uint64_t n;
        if (!header_load(v, &tag, &n))
            return;
        v += HDR;
    }
    if (pos - v > (ptrdiff_t)GRANULE) {
        VALGRIND_MEMPOOL_CHANGE(base, v, v, (size_t)(pos - v) - GRANULE);
        VALGRIND_MAKE_MEM_NOACCESS(pos - GRANULE, GRANULE);
    } else {
        VALGRIND_MEMPOOL_FREE(base, v);
    }
}

/* Expires [from, end of chunk i): sentinels verified (checked build), the
 * bytes clobbered (checked build) and closed, and the chunk's Valgrind pool
 * forgets the values there. */
static void expire(arena *a, uint32_t i, char *from)
{
    char *base = a->chunks[i].base;
    char *end = base + a->chunks[i].cap;

    if (!instrumented())
        return;
    verify_span(a, i, from, end);
    if (ARENA_CHECKED) {
        arena__open(from, (size_t)(end - from));
        memset(from, ARENA__CLOBBER, (size_t)(end - from));
    }
    if (ARENA__VALGRIND) {
        if (from == base) {
            VALGRIND_DESTROY_MEMPOOL(base);
            VALGRIND_CREATE_MEMPOOL(base, 0, 0);
        } else {
            vg_unstraddle(base, from, end);
            VALGRIND_MEMPOOL_TRIM(base, base, (size_t)(from - base));
        }
    }
    arena__close(from, (size_t)(end - from));
}

/* The caller's buffer after a release is open (the caller may reuse it);
 * it is closed again when the arena next uses it. */
static void close_buffer(arena *a)
{
    if (a->flags & BUF_OPEN) {
        a->flags &= ~(uint32_t)BUF_OPEN;
        fresh_chunk(a->buf, a->chunks[0].cap);
    }
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
    uint32_t limit = ARENA_CHECKED ? CHUNK_LIMIT - 1 : UINT32_MAX;
    size_t extra = extra_for(a, cap);
    char *base;

    if ((a->flags & FIXED) || a->nchunks >= limit || cap > (size_t)PTRDIFF_MAX - extra ||
        !index_reserve(a))
        return UINT32_MAX;
    base = (char *)back_alloc(a, cap + extra);
    if (!base)
        return UINT32_MAX;
    if (instrumented())
        fresh_chunk(base, cap + extra);
    if (at < a->nchunks)
        a->chunks[a->nchunks] = a->chunks[at];
    a->chunks[at].base = base;
    a->chunks[at].cap = cap + extra;
    a->nchunks++;
    a->nused++;
    a->retained += cap;
    return at;
}

/* Hands a chunk the arena allocated back to the backing allocator. */
static void free_chunk(arena *a, struct arena__chunk c)
{
    if (ARENA__VALGRIND)
        VALGRIND_DESTROY_MEMPOOL(c.base);
    back_free(a, c.base, c.cap);
}

/* Forgets the chunks at [from, nused): oversized ones are freed, uniform ones
 * join the spares (in their order).  Sets nused = from. */
static void drop_chunks_from(arena *a, uint32_t from)
{
    uint32_t i, keep = from;

    for (i = from; i < a->nchunks; i++) {
        struct arena__chunk c = a->chunks[i];
        if (i < a->nused)
            expire(a, i, c.base);
        if (i < a->nused && is_oversized(a, &c)) {
            a->retained -= usable(a, &c);
            free_chunk(a, c);
            continue;
        }
        a->chunks[keep++] = c;
    }
    a->nchunks = keep;
    a->nused = from;
}

/* ---- Placing values -------------------------------------------------------------------- */

/* `p` rounded up to `align` (a power of two), by pointer arithmetic. */
static char *align_ptr(char *p, size_t align)
{
    return p + (size_t)(-(uintptr_t)p & (uintptr_t)(align - 1));
}

/* Places `size` (> 0) bytes at `align` (a power of two).  Stores the chunk
 * index in *chunk.  NULL (arena unchanged) on failure. */
static char *place(arena *a, size_t size, size_t align, uint32_t *chunk)
{
    char *pos;
    size_t worst, need;
    uint32_t i;
    char *p;

    /* Every size computation below stays clear of SIZE_MAX. */
    if (size > SIZE_MAX - HDR - 2 * GRANULE - align)
        return NULL;
    if (instrumented()) {
        close_buffer(a);
        if (align < GRANULE)
            align = GRANULE;
    }
    pos = cursor(a);
    if (a->lim) {
        size_t pad = (size_t)(-((uintptr_t)pos + HDR) & (uintptr_t)(align - 1)) + HDR;
        size_t room = (size_t)(a->lim - pos);
        if (pad <= room && size <= room - pad) {
            p = pos + pad;
            set_cursor(a, p + guarded_len(p, size, a->lim));
            *chunk = a->cur;
            goto placed;
        }
    }

    /* The padding a fresh ARENA_ALIGN-aligned chunk may need for `align`
     * (the header and guard come out of the chunk's EXTRA). */
    worst = align > ARENA_ALIGN ? align - ARENA_ALIGN : 0;
    need = size + worst;

    if (need > budget(a)) {
        i = add_chunk(a, need);
        if (i == UINT32_MAX)
            return NULL;
        p = align_ptr(a->chunks[i].base + HDR, align);
        *chunk = i;
        goto placed;
    }

    if (a->nused < a->nchunks && usable(a, &a->chunks[a->nused]) >= need) {
        i = a->nused++;
    } else {
        i = add_chunk(a, budget(a));
        if (i == UINT32_MAX)
            return NULL;
    }
    p = align_ptr(a->chunks[i].base + HDR, align);
    enter_chunk(a, i, p);
    set_cursor(a, p + guarded_len(p, size, a->lim));
    *chunk = i;

placed:
    a->size += size;
    if (instrumented()) {
        if (ARENA_CHECKED) {
            header_store(p, next_tag(a), size);
            write_guard(p, size, p + guarded_len(p, size, a->chunks[*chunk].base +
                                                              a->chunks[*chunk].cap));
        }
        if (ARENA__VALGRIND)
            VALGRIND_MEMPOOL_ALLOC(a->chunks[*chunk].base, p, size);
        arena__unpoison(p, size);
    }
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

/* Resizes the most recent value `p` of the current chunk in place. */
static void resize_last(arena *a, char *p, size_t old_size, size_t new_size)
{
    char *old_end = p + guarded_len(p, old_size, a->lim);
    char *new_end = p + guarded_len(p, new_size, a->lim);

    set_cursor(a, new_end);
    a->size = a->size - old_size + new_size;
    if (!instrumented())
        return;
    if (ARENA_CHECKED) {
        uint32_t tag = 0;
        uint64_t n;
        header_load(p - HDR, &tag, &n);
        header_store(p, tag, new_size);
        write_guard(p, new_size, new_end);
        if (new_size < old_size) {
            arena__open(p + new_size, (size_t)(old_end - p) - new_size);
            memset(p + new_size, ARENA__CLOBBER, (size_t)(old_end - p) - new_size);
        }
    }
    if (ARENA__VALGRIND)
        VALGRIND_MEMPOOL_CHANGE(a->chunks[a->cur].base, p, p, new_size);
    if (new_size < old_size) {
        arena__close(p + new_size, (size_t)(old_end - p) - new_size);
    } else {
        (void)new_end;
        arena__unpoison(p, new_size);
        if (ARENA__VALGRIND)
            VALGRIND_MAKE_MEM_UNDEFINED(p + old_size, new_size - old_size);
    }
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
    /* The most recent value ends (with its guard) at the position of the
     * current chunk. */
    last = a->lim && p >= a->chunks[a->cur].base && p <= pos &&
           old_size <= (size_t)(a->lim - p) && pos == p + guarded_len(p, old_size, a->lim);
    if (new_size <= old_size) {
        if (last)
            resize_last(a, p, old_size, new_size);
        return p;
    }
    if (last && new_size <= (size_t)(a->lim - p)) {
        resize_last(a, p, old_size, new_size);
        return p;
    }
    q = place(a, new_size, ARENA_ALIGN, &chunk);
    if (q)
        memcpy(q, p, old_size);
    return q;
}

/* ---- Refs ------------------------------------------------------------------------------- */

/* The checked build carries the value's tag in the spare top bit of len and
 * the top CHUNK_TAG_BITS of chunk (see CHUNK_LIMIT). */
static arena_ref make_ref(const arena *a, const char *p, uint32_t chunk, size_t len)
{
    arena_ref r;
    r.chunk = chunk;
    r.off = (uint32_t)(p - a->chunks[chunk].base);
    r.len = (uint32_t)len;
    if (ARENA_CHECKED) {
        uint32_t tag = (a->flags >> 8) & ((1u << TAG_BITS) - 1);
        r.len |= (tag & 1u) << 31;
        r.chunk |= (tag >> 1) << (32u - CHUNK_TAG_BITS);
    }
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

/* True when the ref's value (of its chunk, offset and length) is inside
 * the part of the arena that holds live values, and (checked build) the
 * header before it carries the ref's tag and a size that matches. */
static bool ref_live(const arena *a, uint32_t chunk, uint32_t off, uint32_t len, uint32_t tag)
{
    const struct arena__chunk *c;
    uint32_t htag;
    uint64_t n;

    if (chunk >= a->nused)
        return false;
    c = &a->chunks[chunk];
    if (off > c->cap || len > c->cap - off)
        return false;
    if (a->lim && chunk == a->cur && off + (size_t)len > (size_t)(cursor(a) - c->base))
        return false;
    if (!ARENA_CHECKED)
        return true;
    /* A string's header counts its NUL (and a grown value's, more). */
    /* cppcheck-suppress unsignedPositive ; HDR is 0 only where this never runs */
    return off >= HDR && header_load(c->base + off - HDR, &htag, &n) && htag == tag &&
           n >= len;
}

void *arena__ref_ptr_checked(const arena *a, arena_ref r)
{
    uint32_t len = r.len & (uint32_t)INT32_MAX;
    uint32_t chunk = r.chunk, tag = 0;

    if (len == 0)
        return NULL;
    if (ARENA_CHECKED) {
        chunk &= CHUNK_LIMIT - 1;
        tag = (r.len >> 31) | ((r.chunk >> (32u - CHUNK_TAG_BITS)) << 1);
    }
    if (!ref_live(a, chunk, r.off, len, tag)) {
        arena__report(ARENA_ERR_STALE_REF,
                      "arena_ref_ptr: ref {chunk %u, off %u, len %u} does not describe a live "
                      "value of arena %p (expired by a reset, release or rewind, or from "
                      "another arena)",
                      (unsigned)chunk, (unsigned)r.off, (unsigned)len, (const void *)a);
        return NULL;
    }
    return a->chunks[chunk].base + r.off;
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
        if (instrumented())
            fresh_chunk(a->buf, cap);
    }
}

void arena__release_slow(arena *a)
{
    size_t bufcap = a->buf ? a->chunks[0].cap : 0;
    uint32_t i;
    sync(a);

    if (a->buf)
        close_buffer(a);
    for (i = 0; i < a->nchunks; i++) {
        if (i < a->nused)
            expire(a, i, a->chunks[i].base);
        if (a->chunks[i].base != a->buf)
            free_chunk(a, a->chunks[i]);
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
        /* The caller may take its buffer back now: it is left open (and
         * closed again when the arena next stores into it). */
        if (instrumented()) {
            if (ARENA__VALGRIND)
                VALGRIND_DESTROY_MEMPOOL(a->buf);
            arena__open(a->buf, bufcap);
            a->flags |= BUF_OPEN;
        }
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
        a->retained -= usable(a, &c);
        free_chunk(a, c);
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
    /* chunks is never NULL while nchunks > 0; testing both keeps gcc's
     * -fanalyzer, which loses that link across free_spares(), convinced. */
    if (a->nchunks && a->chunks) {
        a->nused = 1;
        enter_chunk(a, 0, a->chunks[0].base);
    } else {
        leave_chunks(a);
    }
    if (ARENA_CHECKED)
        arena_check(a);
}

void arena__reset_slow(arena *a)
{
    sync(a);
    close_buffer(a);
    drop_chunks_from(a, 0);
    reopen(a);
}

static ARENA_NOINLINE void reset_to_slow(arena *a, size_t retain_limit)
{
    sync(a);
    close_buffer(a);
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
    close_buffer(a);
    drop_chunks_from(a, m.nused);
    a->size = m.size;
    if (m.pos) {
        /* Chunks between m.cur and m.nused hold only oversized values stored
         * before the mark, so the mark's chunk tail is all that expires here. */
        enter_chunk(a, m.cur, m.pos);
        if (ARENA_CHECKED && !ARENA__VALGRIND)
            cut_value_at(a, m.cur, m.pos);
        expire(a, m.cur, m.pos);
    } else {
        leave_chunks(a);
    }
    if (ARENA_CHECKED)
        arena_check(a);
}

size_t arena_retained(const arena *a) { return a->retained; }

/* ---- Consistency ------------------------------------------------------------------------------ */

#define CORRUPT(...) (arena__report(ARENA_ERR_CORRUPT, __VA_ARGS__), false)

bool arena_check(const arena *a)
{
    size_t held = 0, used = 0;
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
        /* cppcheck-suppress unsignedLessThanZero ; EXTRA is 0 in some builds */
        if (c->base != a->buf && instrumented() && c->cap < EXTRA)
            return CORRUPT("arena_check: arena %p: chunk %u is smaller than its overhead",
                           (const void *)a, (unsigned)i);
        held += usable(a, c);
        if (i < a->nused)
            used += usable(a, c);
        if (!(c->base == a->buf && (a->flags & BUF_OPEN)) &&
            !verify_span(a, i, c->base, c->base + c->cap))
            return false;
    }
    if (held != a->retained)
        return CORRUPT("arena_check: arena %p: retained %zu but chunks hold %zu",
                       (const void *)a, a->retained, held);
    /* (Instrumented, a chunk's overhead allowance can hold value bytes too.) */
    if (!instrumented() && arena_size(a) > used)
        return CORRUPT("arena_check: arena %p: size %zu exceeds the %zu bytes of its chunks",
                       (const void *)a, arena_size(a), used);
    if (instrumented() && ((uintptr_t)pos & (GRANULE - 1)) && pos != a->lim)
        return CORRUPT("arena_check: arena %p: position %p is not on a granule",
                       (const void *)a, (void *)pos);
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
