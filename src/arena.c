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
 *                       were first used: regular chunks (the budget's
 *                       capacity, or a kept chunk of up to twice it),
 *                       oversized chunks (one value each) and the caller's
 *                       buffer (always index 0 when there is one);
 *     [nused, nchunks)  spares, kept by a reset or rewind: the chunks used
 *                       last come first, those unused longest come last.
 *
 * A chunk taken into use is always placed at index `nused` (the spare
 * standing there moves to where it was), so everything stored after a mark
 * lives at indices >= the mark's nused.  Rewinding turns the chunks in
 * [mark.nused, nused) into spares; reset is a rewind to nothing that reopens
 * a regular chunk as chunk 0.  Entries below a mark's nused never move while
 * the mark is valid, so live refs stay valid.
 *
 * Growth and retention.  A value that does not fit the current chunk takes
 * the spare at `nused` when it suits (holds it, and is at most twice what a
 * new chunk for it would be), else the smallest spare that suits, else a new
 * chunk: the budget for a value that fits one, its own size for a larger
 * one.  A batch of the same shape as the last one thus meets, at each step,
 * the chunk the last one used there: no backing call and no page fault once
 * warm, whatever the sizes.  A new oversized chunk frees the largest spare
 * that a rewind of the batch left too small for it (free_outgrown()), so
 * that scopes of a growing value do not hoard chunks.  A reset keeps the
 * chunks that recent batches used, within a bound that follows their demand
 * (retention_target()), and frees the rest, those unused longest first.
 *
 * The index lives in the arena struct (`first`) while it has one slot, so a
 * one-chunk arena, and a caller-buffer arena, costs no bookkeeping allocation.
 * It grows by doubling through the backing allocator, before the chunk that
 * needs it is allocated: a failure at either step leaves the arena as it was.
 *
 * Costs: the inline path is O(1) with no call; a new chunk costs one backing
 * allocation (two when the index doubles); taking a spare is O(1) when it is
 * the one the last batch used at that step, O(spares) otherwise; reset and
 * rewind are O(chunks).
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
 * per-arena serial; a ref carries the same tag in bits its fields cannot use
 * (see make_ref()), so resolving a ref whose value has expired (and maybe
 * been overwritten) is detected in O(1).
 *
 * A guard is cut short at the end of a chunk of the budget's size, so values
 * still fill such a chunk exactly.  In the checked build every chunk the
 * arena allocates has EXTRA bytes (a header) on top of its capacity, so that
 * a value that fits the budget still fits a fresh chunk, and an oversized
 * chunk has room for its value's guard too (extra_for()); arena_retained()
 * reports capacities exactly as documented.
 * None of this exists in a plain build: instrumented() is a constant 0 there
 * (Valgrind aside, which is decided once at load).
 */
#define GRANULE ((size_t)8)
#define HDR_MAGIC 0x5A6C0000u /* top bits of a header's first word */
#define TAG_BITS 12u          /* of a value's tag, in its header (see make_ref()) */

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
 * granule of guard after its value too (the last value of a chunk of the
 * budget's size may end at the chunk's end: values fill it exactly, as
 * without guards).  The kind of a chunk shows in its capacity, so a kept
 * chunk of either kind may serve a value of the other. */
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

/* The largest capacity a chunk may have to serve as a current chunk (one
 * that small values are bumped through): twice the budget, so that a kept
 * chunk a little larger than the budget is not wasted, and at most
 * ARENA_REF_MAX, so that an inline ref's offset fits its field. */
static size_t regular_max(const arena *a)
{
    return budget(a) > ARENA_REF_MAX / 2 ? ARENA_REF_MAX : 2 * budget(a);
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

static uint32_t take_spare(arena *a, uint32_t i);

/* Allocates a chunk of `cap` bytes and takes it into use at index nused (see
 * take_spare()).  Returns its index, or UINT32_MAX (arena unchanged).
 * The index has at most 2^31 slots (index_reserve()), so an index is below
 * 2^31 (which refs rely on: see make_ref()).  No object can exceed
 * PTRDIFF_MAX bytes, so such a chunk is refused before the backing sees it
 * (a sanitizer or Valgrind would flag the request). */
static uint32_t add_chunk(arena *a, size_t cap)
{
    size_t extra = extra_for(a, cap);
    char *base;

    if ((a->flags & FIXED) || cap > (size_t)PTRDIFF_MAX - extra || !index_reserve(a))
        return UINT32_MAX;
    base = (char *)back_alloc(a, cap + extra);
    if (!base)
        return UINT32_MAX;
    if (instrumented())
        fresh_chunk(base, cap + extra);
    a->chunks[a->nchunks].base = base;
    a->chunks[a->nchunks].cap = cap + extra;
    a->nchunks++;
    a->retained += cap;
    return take_spare(a, a->nchunks - 1);
}

/* Hands a chunk the arena allocated back to the backing allocator. */
static void free_chunk(arena *a, struct arena__chunk c)
{
    if (ARENA__VALGRIND)
        VALGRIND_DESTROY_MEMPOOL(c.base);
    back_free(a, c.base, c.cap);
}

/* Forgets the chunks at [from, nused): they become the first spares, in
 * their order.  Sets nused = from. */
static void drop_chunks_from(arena *a, uint32_t from)
{
    uint32_t i;

    for (i = from; i < a->nused; i++)
        expire(a, i, a->chunks[i].base);
    a->nused = from;
}

/* ---- Spares ------------------------------------------------------------------------- */

/* The smallest spare that suits a value needing `need` bytes of a fresh
 * chunk (a capacity from `need` to `most`); UINT32_MAX when none does. */
static uint32_t find_spare(const arena *a, size_t need, size_t most)
{
    size_t least = need > budget(a) ? need : budget(a), best_cap = SIZE_MAX;
    uint32_t i, best = UINT32_MAX;

    for (i = a->nused; i < a->nchunks; i++) {
        size_t cap = usable(a, &a->chunks[i]);
        if (cap < need || cap > most || cap >= best_cap)
            continue;
        best = i;
        best_cap = cap;
        if (cap == least) /* no chunk can suit better */
            break;
    }
    return best;
}

static void swap_chunks(arena *a, uint32_t i, uint32_t j)
{
    struct arena__chunk c = a->chunks[i];
    a->chunks[i] = a->chunks[j];
    a->chunks[j] = c;
}

/* The index is kept in order of last use, by batch: [0, ntouched) holds
 * the chunks used since the batch began (in use or not), [0, nrun) those
 * used by the batches since the retention target was last set, [0, nwin)
 * those used by the batches the target covers (see retention_target()).
 * Moves chunk i (>= ntouched: not used yet this batch) to index ntouched,
 * the chunks between shifting up one place, so that each of the three is
 * still a prefix.  O(1) when i == ntouched, as when a batch repeats the
 * last one. */
static void touch(arena *a, uint32_t i)
{
    if (i != a->ntouched) {
        struct arena__chunk c = a->chunks[i];
        memmove(&a->chunks[a->ntouched + 1], &a->chunks[a->ntouched],
                (i - a->ntouched) * sizeof c);
        a->chunks[a->ntouched] = c;
    }
    a->ntouched++;
    if (i >= a->nrun)
        a->nrun++;
    if (i >= a->nwin)
        a->nwin++;
}

/* Takes spare `i` into use at index nused (the spare there moves to where
 * it was), and returns that index. */
static uint32_t take_spare(arena *a, uint32_t i)
{
    if (i >= a->ntouched) {
        touch(a, i);
        i = a->ntouched - 1;
    }
    if (i != a->nused)
        swap_chunks(a, i, a->nused);
    return a->nused++;
}

/* Takes into use the spare that serves a value needing `need` bytes of a
 * fresh chunk, whose capacity must not exceed `most`: the one at nused if it
 * suits (in a batch shaped like the last one, the chunk the last one used at
 * this step: two comparisons), else the smallest that suits.  Returns its
 * index, UINT32_MAX when none suits. */
static uint32_t use_spare(arena *a, size_t need, size_t most)
{
    uint32_t i = a->nused;
    size_t cap;

    if (i >= a->nchunks)
        return UINT32_MAX;
    cap = usable(a, &a->chunks[i]);
    if (cap < need || cap > most) {
        i = find_spare(a, need, most);
        if (i == UINT32_MAX)
            return i;
    }
    return take_spare(a, i);
}

/* Forgets the entry at index i (>= nused) of a chunk being freed. */
static void forget_spare(arena *a, uint32_t i)
{
    memmove(&a->chunks[i], &a->chunks[i + 1], (a->nchunks - i - 1) * sizeof *a->chunks);
    a->nchunks--;
    a->ntouched -= i < a->ntouched;
    a->nrun -= i < a->nrun;
    a->nwin -= i < a->nwin;
}

/* After a new chunk of `cap` bytes for an oversized value: the largest spare
 * that a rewind of this batch left, smaller than it and too large to serve
 * as a regular chunk, goes back to the backing, so that scopes of a value
 * growing from one to the next leave one chunk behind, not one per size (a
 * batch that never ends has no reset to bound it).  Spares of earlier
 * batches are left to the retention policy: the workload may still need
 * them.  Spares keep their order. */
static void free_outgrown(arena *a, size_t cap)
{
    size_t most = 0;
    uint32_t i, worst = UINT32_MAX;
    struct arena__chunk c;

    for (i = a->nused; i < a->ntouched; i++) {
        size_t u = usable(a, &a->chunks[i]);
        if (u < cap && u > regular_max(a) && u > most) {
            most = u;
            worst = i;
        }
    }
    if (worst == UINT32_MAX)
        return;
    c = a->chunks[worst];
    forget_spare(a, worst);
    a->retained -= most;
    free_chunk(a, c);
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
        i = use_spare(a, need, need > SIZE_MAX / 2 ? SIZE_MAX : 2 * need);
        if (i == UINT32_MAX) {
            i = add_chunk(a, need);
            if (i == UINT32_MAX)
                return NULL;
            free_outgrown(a, need);
        }
        p = align_ptr(a->chunks[i].base + HDR, align);
        *chunk = i;
        goto placed;
    }

    i = use_spare(a, need, regular_max(a));
    if (i == UINT32_MAX) {
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

/* Checked build: the size of the live value that starts at `p`, from its
 * header, in *size; false when p is not the start of one (in no chunk in
 * use, off a granule, at or past the position, or without a header).  The
 * chunk is found before anything is loaded: the current one first (where
 * grown values mostly are), then the others, newest first. */
static bool live_value_size(const arena *a, const char *p, uint64_t *size)
{
    const struct arena__chunk *c = NULL;
    const char *end = NULL;
    uint32_t i, tag;

    /* (Compared as integers: p may point anywhere.) */
    if (a->lim && (uintptr_t)p - (uintptr_t)a->chunks[a->cur].base <
                      (uintptr_t)a->lim - (uintptr_t)a->chunks[a->cur].base) {
        c = &a->chunks[a->cur];
        end = cursor(a);
    }
    for (i = a->nused; !c && i-- > 0;) {
        if ((uintptr_t)p - (uintptr_t)a->chunks[i].base < a->chunks[i].cap) {
            c = &a->chunks[i];
            end = c->base + c->cap;
        }
    }
    /* cppcheck-suppress unsignedLessThanZero ; HDR is 0 only where this never runs */
    if (!c || (size_t)(p - c->base) < HDR || ((uintptr_t)p & (GRANULE - 1)) || p >= end)
        return false;
    return header_load(p - HDR, &tag, size) && *size <= (size_t)(end - p);
}

/* Reports the misuse of arena_grow() that can be seen: an old size that
 * reaches past the position, when `p` lies in the current chunk before it
 * (no live value does); in the checked build, a `p` that is not the start
 * of a live value, or an old size above the value's size.  Nothing is read
 * when old_size is 0, so nothing is checked then. */
static bool grow_misused(const arena *a, const char *p, size_t old_size)
{
    const char *pos;
    uint64_t n;

    if (old_size == 0)
        return false;
    if (ARENA_CHECKED) {
        if (!live_value_size(a, p, &n))
            return arena__report(ARENA_ERR_FOREIGN_POINTER,
                                 "arena_grow: %p is not the start of a live value of arena %p",
                                 (const void *)p, (const void *)a),
                   true;
        if (old_size > n)
            return arena__report(ARENA_ERR_BAD_SIZE,
                                 "arena_grow: old size %zu exceeds the %llu-byte value at %p "
                                 "(arena %p)",
                                 old_size, (unsigned long long)n, (const void *)p,
                                 (const void *)a),
                   true;
        return false;
    }
    pos = cursor(a);
    if (a->lim && p >= a->chunks[a->cur].base && p <= pos && old_size > (size_t)(pos - p))
        return arena__report(ARENA_ERR_BAD_SIZE,
                             "arena_grow: old size %zu of the value at %p reaches past the end "
                             "of what arena %p holds (%zu bytes from it)",
                             old_size, (const void *)p, (const void *)a, (size_t)(pos - p)),
               true;
    return false;
}

void *arena_grow(arena *a, void *ptr, size_t old_size, size_t new_size)
{
    char *p = (char *)ptr;
    char *pos = cursor(a);
    uint32_t chunk;
    char *q;
    bool last;

    /* Reported before sync(): the arena's bytes stay as they were. */
    if (p && grow_misused(a, p, old_size))
        return NULL;
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

/* The checked build carries the value's tag in bits of the ref that its
 * fields cannot use, without limiting what the ref can name: bit 0 in the
 * top bit of len (a length is <= ARENA_REF_MAX), and, while the chunk index
 * is below SHORT_INDEX (arenas of up to a million chunks), the other 11 in
 * the chunk field, whose top bit then says so:
 *
 *     chunk = 1 | tag bits 1-11 | index (20 bits)     index < 2^20: 12 tag bits
 *     chunk = 0 | index (31 bits)                     index >= 2^20: 1 tag bit
 *
 * An index is below 2^31 (add_chunk()), so every chunk has a name, and a
 * ref into one of the first 2^20 chunks is always in the short form.  The
 * long form degrades the detection of a ref to a value overwritten at the
 * same offset (the bounds and the header are still checked), never the
 * arena's capacity. */
#define SHORT_INDEX ((uint32_t)1 << 20)
#define SHORT_FORM 0x80000000u

static arena_ref make_ref(const arena *a, const char *p, uint32_t chunk, size_t len)
{
    arena_ref r;
    r.chunk = chunk;
    r.off = (uint32_t)(p - a->chunks[chunk].base);
    r.len = (uint32_t)len;
    if (ARENA_CHECKED) {
        uint32_t tag = (a->flags >> 8) & ((1u << TAG_BITS) - 1);
        r.len |= (tag & 1u) << 31;
        if (chunk < SHORT_INDEX)
            r.chunk = SHORT_FORM | (tag >> 1) << 20 | chunk;
    }
    return r;
}

arena_ref arena__ref_copy_slow(arena *a, const void *src, size_t size, size_t align)
{
    arena_ref r = {0, 0, 0};
    uint32_t chunk;
    char *p;

    /* Misuse is reported before sync(): the arena's bytes stay as they were. */
    if (size > ARENA_REF_MAX) {
        arena__report(ARENA_ERR_REF_TOO_LARGE,
                      "arena_ref_copy: a value of %zu bytes at %p exceeds ARENA_REF_MAX (%zu)",
                      size, src, (size_t)ARENA_REF_MAX);
        return r;
    }
    sync(a);
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

    if (len >= ARENA_REF_MAX) {
        arena__report(ARENA_ERR_REF_TOO_LARGE,
                      "arena_ref_strndup: a string of %zu bytes at %p exceeds ARENA_REF_MAX (%zu)",
                      len, (const void *)s, (size_t)ARENA_REF_MAX);
        return r;
    }
    sync(a);
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
 * the part of the arena that holds live values, and (checked build) starts
 * on a granule after a header whose tag matches the ref's bits of it (under
 * `mask`) and whose size matches.  Everything is checked before the header
 * is loaded: a garbage ref causes no misaligned or out-of-chunk read. */
static bool ref_live(const arena *a, uint32_t chunk, uint32_t off, uint32_t len, uint32_t tag,
                     uint32_t mask)
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
    return off >= HDR && (off & (GRANULE - 1)) == 0 &&
           header_load(c->base + off - HDR, &htag, &n) && ((htag ^ tag) & mask) == 0 &&
           n >= len;
}

void *arena__ref_ptr_checked(const arena *a, arena_ref r)
{
    uint32_t len = r.len & (uint32_t)INT32_MAX;
    uint32_t chunk = r.chunk, tag = 0, mask = 0;

    if (len == 0)
        return NULL;
    if (ARENA_CHECKED) {
        tag = r.len >> 31;
        mask = 1;
        if (r.chunk & SHORT_FORM) {
            chunk = r.chunk & (SHORT_INDEX - 1);
            tag |= (r.chunk & ~SHORT_FORM) >> 20 << 1;
            mask = (1u << TAG_BITS) - 1;
        } else if (chunk < SHORT_INDEX) {
            chunk = UINT32_MAX; /* make_ref() writes no such ref */
        }
    }
    if (!ref_live(a, chunk, r.off, len, tag, mask)) {
        arena__report(ARENA_ERR_STALE_REF,
                      "arena_ref_ptr: ref {chunk %#x, off %u, len %#x} does not describe a "
                      "live value of arena %p (expired by a reset, release or rewind, from "
                      "another arena, or not a ref)",
                      (unsigned)r.chunk, (unsigned)r.off, (unsigned)r.len, (const void *)a);
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
    a->ntouched = a->nrun = a->nwin = 1;
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
    a->peak = a->runner = 0;
    a->ntouched = a->nrun = a->nwin = a->age = 0;
    a->size = 0;
    a->expired = a->saves;
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

/* Keeps the spares in index order while they fit `limit` beside the chunks
 * in use (and the caller's buffer), frees the others, and closes up the
 * index.  O(spares). */
static void keep_within(arena *a, size_t limit)
{
    size_t kept = a->retained;
    uint32_t i, j = a->nused;
    uint32_t t = a->ntouched < j ? a->ntouched : j;
    uint32_t r = a->nrun < j ? a->nrun : j, w = a->nwin < j ? a->nwin : j;

    for (i = a->nused; i < a->nchunks; i++)
        if (a->chunks[i].base != a->buf)
            kept -= usable(a, &a->chunks[i]);
    for (i = a->nused; i < a->nchunks; i++) {
        struct arena__chunk c = a->chunks[i];
        size_t cap = usable(a, &c);
        if (c.base != a->buf) {
            if (kept > limit || cap > limit - kept) {
                a->retained -= cap;
                free_chunk(a, c);
                continue;
            }
            kept += cap;
        }
        t += i < a->ntouched;
        r += i < a->nrun;
        w += i < a->nwin;
        a->chunks[j++] = c;
    }
    a->nchunks = j;
    a->ntouched = t;
    a->nrun = r;
    a->nwin = w;
}

/* Frees the spare chunks (at [nused, nchunks)) at index `keep` or beyond
 * (those unused longest), then, while the arena retains more than `limit`
 * bytes, keeps the spares in index order while they fit the limit beside
 * the chunks in use and frees the others.  The caller's buffer is never
 * freed (and counts).  An arena left with one chunk or none gives its heap
 * index back too.  O(1) when there is nothing to free. */
static void free_spares(arena *a, size_t limit, uint32_t keep)
{
    while (a->nchunks > a->nused && a->nchunks > keep) {
        struct arena__chunk c = a->chunks[a->nchunks - 1];
        if (c.base == a->buf)
            break;
        a->retained -= usable(a, &c);
        forget_spare(a, a->nchunks - 1);
        free_chunk(a, c);
    }
    if (a->retained > limit && a->nchunks > a->nused)
        keep_within(a, limit);
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

/* Makes the arena empty (size 0, every mark expired), every chunk a spare,
 * with the caller's buffer, or else the first chunk of the budget's size, or
 * else the first regular one, current as chunk 0 (none when every chunk is
 * oversized: the first value then picks one). */
static void reopen(arena *a)
{
    uint32_t i, pick = a->buf ? 0 : UINT32_MAX;

    a->size = 0;
    a->expired = a->saves;
    a->ntouched = 0;
    /* chunks is never NULL while nchunks > 0; testing both keeps gcc's
     * -fanalyzer, which loses that link across free_spares(), convinced. */
    for (i = 0; !a->buf && a->chunks && i < a->nchunks; i++) {
        size_t cap = usable(a, &a->chunks[i]);
        if (cap == budget(a)) {
            pick = i;
            break;
        }
        if (cap <= regular_max(a) && pick == UINT32_MAX)
            pick = i;
    }
    if (pick < a->nchunks && a->chunks) {
        take_spare(a, pick);
        enter_chunk(a, 0, a->chunks[0].base);
    } else {
        leave_chunks(a);
    }
    if (ARENA_CHECKED)
        arena_check(a);
}

/* The retention policy, at the end of a batch.  A batch's demand is the
 * capacity of the chunks it used, those of rewound scopes included: what the
 * same batch needs to run again without a backing call.  A batch that
 * demands at least the target (`peak`) raises it to its demand; the target
 * comes down only when ARENA_RETAIN_BATCHES batches in a row demanded less:
 * then to the largest of their demands.  A reset keeps the chunks used since
 * the target last came down (the window: [0, nwin)), and only those once it
 * comes down, up to twice the target; it frees the rest, the least recently
 * used first.  So a steady workload keeps exactly what it uses, a workload
 * that alternates between shapes keeps what each needs, a spike that recurs
 * within ARENA_RETAIN_BATCHES batches stays, and a one-off spike goes back
 * at the reset that ends the ARENA_RETAIN_BATCHES-th batch after it.  The
 * target is the demand of one of the last 2 * ARENA_RETAIN_BATCHES - 1
 * batches.  Returns the byte bound. */
static size_t retention_target(arena *a)
{
    size_t demand = 0;
    uint32_t i;

    for (i = 0; i < a->ntouched; i++)
        demand += usable(a, &a->chunks[i]);
    if (demand >= a->peak) {
        a->peak = demand;
        a->runner = 0;
        a->age = 0;
        a->nrun = 0;
    } else {
        if (demand > a->runner)
            a->runner = demand;
        if (++a->age >= ARENA_RETAIN_BATCHES) {
            a->peak = a->runner;
            a->runner = 0;
            a->age = 0;
            a->nwin = a->nrun;
            a->nrun = 0;
        }
    }
    return a->peak > SIZE_MAX / 2 ? SIZE_MAX : 2 * a->peak;
}

/* A reset that keeps what the policy keeps, and at most `retain_limit`. */
static ARENA__NOINLINE void reset_to_slow(arena *a, size_t retain_limit)
{
    size_t most;

    sync(a);
    close_buffer(a);
    drop_chunks_from(a, 0);
    most = retention_target(a);
    free_spares(a, most < retain_limit ? most : retain_limit, a->nwin);
    reopen(a);
}

void arena__reset_slow(arena *a) { reset_to_slow(a, SIZE_MAX); }

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
    free_spares(a, max_retained, UINT32_MAX);
}

/* ---- Marks ----------------------------------------------------------------------------------
 *
 * Marks form a stack: a rewind to a mark expires the marks taken after it,
 * and leaves it valid.  The position cannot tell an expired mark from a
 * valid one (shrinking a value stored before a valid mark moves the
 * position below it), so each save counts: a mark carries its serial, and
 * the arena knows the last serial (`saves`), the last one a reset or
 * release expired (`expired`), and the serial spans (from, to] of marks the
 * latest rewinds expired (`dead`, oldest first, disjoint).  A rewind to the
 * mark of serial s expires (s, saves]: the spans inside it merge into it.
 *
 * Deciding exactly which marks are valid would take memory in proportion to
 * the marks (each scope that ends with scopes inside it leaves a span), so
 * the arena keeps the ARENA__DEAD_SPANS latest spans and forgets older ones:
 * a mark in a forgotten span is taken for a valid one (never the reverse).
 * Saving costs an increment; a rewind, a comparison or two for the newest
 * spans (a scan of at most four). */

/* True when the mark of serial `s` has not expired.  A serial above `saves`
 * was never handed out by this arena (a zeroed mark's 0 is never valid).
 * The spans are scanned newest first: a rewind to a recent mark (the
 * innermost scope) is above the newest span, and done in one comparison. */
static bool serial_live(const arena *a, uint64_t s)
{
    uint32_t i;
    if (s <= a->expired || s > a->saves)
        return false;
    for (i = a->ndead; i-- > 0;) {
        if (s > a->dead[i].to)
            return true;
        if (s > a->dead[i].from)
            return false;
    }
    return true;
}

/* After a rewind to the valid mark of serial `s`: the marks taken after it
 * expire.  The spans above s (the newest ones: none is astride a valid
 * serial) lie inside the new span and merge into it; when every slot is
 * taken, the oldest span is forgotten.  Spans a reset or release made moot
 * (below `expired`) are the oldest, so they go first. */
static void expire_marks_after(arena *a, uint64_t s)
{
    uint32_t n = a->ndead;
    if (s == a->saves)
        return;
    while (n > 0 && a->dead[n - 1].from >= s)
        n--;
    if (n == ARENA__DEAD_SPANS) {
        uint32_t i;
        for (i = 1; i < n; i++)
            a->dead[i - 1] = a->dead[i];
        n--;
    }
    a->dead[n].from = s;
    a->dead[n].to = a->saves;
    a->ndead = n + 1;
}

/* The invariant of the spans: at most ARENA__DEAD_SPANS, each non-empty,
 * in order and apart, within the serials handed out. */
static bool spans_ordered(const arena *a)
{
    uint64_t low = 0;
    uint32_t i;
    if (a->ndead > ARENA__DEAD_SPANS || a->expired > a->saves)
        return false;
    for (i = 0; i < a->ndead; i++) {
        if (a->dead[i].from < low || a->dead[i].from >= a->dead[i].to ||
            a->dead[i].to > a->saves)
            return false;
        low = a->dead[i].to + 1;
    }
    return true;
}

/* True when `m` is a valid mark of this arena: its serial has not expired,
 * its chunks are still in use and its position lies in its chunk (which
 * also keeps a foreign mark that passes the serial test memory-safe). */
static bool mark_valid(const arena *a, arena_mark m)
{
    const struct arena__chunk *c;
    if (!serial_live(a, m.serial) || m.nused > a->nused)
        return false;
    if (!m.pos)
        return true;
    if (m.cur >= m.nused)
        return false;
    c = &a->chunks[m.cur];
    return m.pos >= c->base && (size_t)(m.pos - c->base) <= c->cap;
}

bool arena__rewind(arena *a, arena_mark m)
{
    /* Reported before sync(): the arena's bytes stay as they were. */
    if (!mark_valid(a, m)) {
        arena__report(ARENA_ERR_BAD_MARK,
                      "arena_rewind: mark %llu of arena %p has expired (by a reset, a release, "
                      "or a rewind to an earlier mark: scopes ended out of order), or is not "
                      "this arena's",
                      (unsigned long long)m.serial, (void *)a);
        return false;
    }
    sync(a);
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
    expire_marks_after(a, m.serial);
    if (ARENA_CHECKED)
        arena_check(a);
    return true;
}

void arena_rewind(arena *a, arena_mark m) { (void)arena__rewind(a, m); }

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
    if (!spans_ordered(a))
        return CORRUPT("arena_check: arena %p: the record of expired marks is malformed",
                       (const void *)a);
    if (held != a->retained)
        return CORRUPT("arena_check: arena %p: retained %zu but chunks hold %zu",
                       (const void *)a, a->retained, held);
    if (a->ntouched < a->nused || a->nrun < a->ntouched || a->nwin < a->nrun ||
        a->nwin > a->nchunks)
        return CORRUPT("arena_check: arena %p: recency counts out of order (in use %u, used "
                       "this batch %u, since the target %u, in its window %u, held %u)",
                       (const void *)a, (unsigned)a->nused, (unsigned)a->ntouched,
                       (unsigned)a->nrun, (unsigned)a->nwin, (unsigned)a->nchunks);
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
