/* SPDX-License-Identifier: MIT */
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
 *                       were taken into use: regular chunks (of the chunk
 *                       size, or a kept chunk of up to twice it),
 *                       oversized chunks (one value each) and the caller's
 *                       buffer (always index 0 when there is one);
 *     [nused, nchunks)  spares, kept by a reset or rewind, in the spares'
 *                       order (below).
 *
 * A chunk taken into use is always placed at index `nused` (the spares before
 * it move up one place), so everything stored after a mark lives at indices
 * >= the mark's nused.  Rewinding turns the chunks in [mark.nused, nused) into
 * spares; reset is a rewind to nothing that reopens a regular chunk as chunk
 * 0.  Entries below a mark's nused never move while the mark is valid, so
 * live refs stay valid.  Beside each entry the library keeps a slot (cold.h:
 * the index's block holds them after its entries; `first`'s is in the
 * bookkeeping): the chunk's place in the spares' order, and the last batch
 * that used it.
 *
 * The spares' order is the order in which the chunks were allocated, the
 * oldest first: a chunk taken into use leaves it, and a rewind (or the next
 * reset) puts it back in its place.  So a rewind leaves the spares as they
 * were at its mark, and a batch of the same shape as the last one meets the
 * spares in the order the last one met them.  An order by last use would
 * not do: a batch would meet the chunks of the batch before it first, of
 * whatever shape, and might take one for a role its own chunk played.  Its
 * own chunk would then go unused until the policy gave it back.
 *
 * Growth and retention.  A value that does not fit the current chunk takes
 * the first spare that suits (holds it, and is at most twice what a new
 * chunk for it would be), else a new chunk: of the chunk size for a value
 * that fits one, of its own size for a larger one.  A batch of the same shape as the last
 * one thus takes, at each step, the chunk the last one took there (the
 * chunks before it in the order did not suit the last one either, or were in
 * use, as they are now, and those it allocated come after them): no backing
 * call and no page fault once warm, whatever the sizes.  A new oversized
 * chunk frees the largest spare of the batch that a rewind of it left too
 * small for it (free_outgrown()), so that scopes of a growing value do not
 * hoard chunks.  A reset keeps the chunks that recent batches used, within
 * a bound that follows their demand (retention_target()), and frees the
 * rest.
 *
 * The index lives in the arena struct (`first`) while it has one slot, so a
 * one-chunk arena, and a caller-buffer arena, costs no bookkeeping allocation.
 * It grows by doubling through the backing allocator, before the chunk that
 * needs it is allocated: a failure at either step leaves the arena as it was.
 *
 * Costs: the inline path is O(1) with no call; a new chunk costs one backing
 * allocation (two when the index doubles); taking a spare is O(1) when it is
 * the first (as the one the last batch took at that step mostly is), and
 * otherwise O(the spares before it), as is its way back; reset and rewind
 * are O(chunks).
 *
 * The parts.  This file includes five others where what they call is
 * defined: the retention policy (arena_retain.inc.c), limits
 * (arena_limits.inc.c), the arena's half of guarded batches
 * (arena_guard.inc.c), free, realloc and the blocks given back
 * (arena_free.inc.c), and marks (arena_marks.inc.c).  A file
 * src/arena_*.inc.c is a part of arena.c, never compiled alone: the
 * compiler sees one unit, so that the parts share this file's static
 * helpers, none of them exposed, and inline them.  The #include of each
 * part tells clang-tidy so (its NOLINT), which otherwise flags a .c file
 * included.
 *
 * Instrumentation (sanitizers, Valgrind, the checked build's headers and
 * guards) lives in instrument.c: this file calls its hooks (instrument.h) at
 * each event, and sizes values and chunks with its layout helpers, which are
 * identities in a plain build.
 */
#include <stdlib.h>
#include <string.h>

#include "arena/guard.h"
#include "arena/report.h"
#include "reuse.h"

/* The parts check that they are compiled here. */
#define ARENA__IN_ARENA_C

/* Size-0 results at alignments up to ZERO_ALIGN point here (see
 * arena__zero_size_value()): an object of the library, no value's. */
#define ZERO_ALIGN 4096
static _Alignas(ZERO_ALIGN) char zero_block[1];

/* The empty arena.  Copying it, rather than memset(a, 0, sizeof *a), keeps
 * gcc from emitting `rep stos` for the known-size clear. */
static const arena empty_arena;

/* ---- Chunks ---------------------------------------------------------------------------------
 *
 * What a chunk holds (its capacity and what values may fill of it), whether
 * the batch's chunks come from the page layer (a guarded batch's), and the
 * peaks of what the arena retains.
 */

/* A chunk's capacity as arena_retained() counts it: without the overhead
 * of an allocated chunk (arena__chunk_extra()). */
static size_t usable(const arena *a, const struct arena__chunk *c)
{
    return c->base == a->buf ? c->cap : arena__chunk_usable(c->cap, arena__chunk_size(a));
}

/* What values may fill of a chunk in use, as `inuse` counts it for
 * arena_get_stats()'s waste: all of the caller's buffer; all of an
 * allocated chunk but the room its first value's header takes (the checked
 * build), so that the room an oversized chunk keeps for its value's guard
 * (arena__chunk_extra()), which values fill where it serves as a current
 * chunk, counts too. */
static size_t fill_cap(const arena *a, const struct arena__chunk *c)
{
    return c->base == a->buf ? c->cap : c->cap - arena__hdr();
}

/* The largest capacity a chunk may have to serve as a current chunk (one
 * that small values are bumped through): twice the chunk size, so that a
 * kept chunk a little larger than the chunk size is not wasted, and at most
 * ARENA_REF_MAX, so that an inline ref's offset fits its field. */
static size_t regular_max(const arena *a)
{
    return arena__chunk_size(a) > ARENA_REF_MAX / 2 ? ARENA_REF_MAX : 2 * arena__chunk_size(a);
}

/* The capacity of a regular chunk of ARENA__HUGE bytes, held, for an arena
 * on the C heap where huge pages are offered (backing.c) and its chunk
 * size is smaller; 0 otherwise.  A batch whose chunks in use hold
 * ARENA__HUGE takes its next regular chunks so (regular_cap()): a batch of
 * hundreds of MiB faults in a huge page at a time, what it holds at most
 * doubles as the growth begins, and a smaller batch is as it was. */
static size_t grown_cap(const arena *a)
{
    size_t cap;

    if (arena__cold(a)->backing.alloc || !arena__huge_pages())
        return 0;
    cap = arena__chunk_usable(ARENA__HUGE, arena__chunk_size(a));
    return cap > arena__chunk_size(a) ? cap : 0;
}

/* The capacity of the next new regular chunk: the chunk size, or
 * grown_cap() once the chunks in use hold ARENA__HUGE (each holds the
 * chunk size or more). */
static size_t regular_cap(const arena *a)
{
    size_t size = arena__chunk_size(a), grown = grown_cap(a);

    return grown && a->nused >= ARENA__HUGE / size ? grown : size;
}

/* True when the batch in progress is guarded. */
static bool guarded_now(const arena *a)
{
    return (arena__cold(a)->guard.flags & ARENA__GUARD_NOW) != 0;
}

/* The peaks of arena_retained(), after it grew. */
static void note_retained(arena *a)
{
    struct arena__counts *k = &arena__cold(a)->counts;
    size_t r = arena__cold(a)->retained;
    if (r > k->peak_retained)
        k->peak_retained = r;
    if (r > k->peak_retained_batch)
        k->peak_retained_batch = r;
}

/* ---- The chunk index ------------------------------------------------------------------------ */

/* The slots of the index's entries: in the arena's bookkeeping while the
 * index is `first`, else after the ncap entries of the index's block. */
static struct arena__slot *slots(const arena *a)
{
    if (a->chunks == &a->first)
        return &arena__cold(a)->first_slot;
    return (struct arena__slot *)(void *)(a->chunks + arena__cold(a)->ncap);
}

/* Bytes of an index block of `ncap` entries and their slots; 0 when that
 * does not fit a size_t. */
static size_t index_bytes(uint32_t ncap)
{
    size_t bytes;
    if (ARENA__MUL_OVERFLOWS((size_t)ncap, sizeof(struct arena__chunk) + sizeof(struct arena__slot),
                             &bytes))
        return 0;
    return bytes;
}

/* Gives a heap index block back. */
static void free_index(arena *a)
{
    if (a->chunks && a->chunks != &a->first)
        arena__give_backing(a, a->chunks, index_bytes(arena__cold(a)->ncap));
}

/* What one more entry needs: the index's capacity then (*ncap), and the
 * bytes of the block that takes (0: none, it has room or moves into the
 * struct); SIZE_MAX when it cannot grow.  Reads only: add_chunk() obtains
 * the block with the chunk, and index_install() moves into it. */
static size_t index_growth(const arena *a, uint32_t *ncap)
{
    uint32_t n = arena__cold(a)->ncap;
    size_t bytes;

    *ncap = n;
    if (a->nchunks < n)
        return 0;
    if (n == 0) {
        *ncap = 1;
        return 0;
    }
    if (n > UINT32_MAX / 2)
        return SIZE_MAX;
    *ncap = n < 8 ? 8 : n * 2;
    bytes = index_bytes(*ncap);
    return bytes ? bytes : SIZE_MAX;
}

/* Makes the index `ncap` entries (index_growth()): in the struct, or in
 * `grown`, where its entries and slots move, the old block going back. */
static void index_install(arena *a, struct arena__chunk *grown, uint32_t ncap)
{
    if (ncap == arena__cold(a)->ncap)
        return;
    if (!grown) {
        a->chunks = &a->first;
        arena__cold(a)->ncap = 1;
        return;
    }
    memcpy(grown, a->chunks, a->nchunks * sizeof *grown);
    memcpy(grown + ncap, slots(a), a->nchunks * sizeof(struct arena__slot));
    free_index(a);
    a->chunks = grown;
    arena__cold(a)->ncap = ncap;
}

/* Gives the heap index back, the one entry left (if any) moving into the
 * struct, when the arena holds one chunk or none. */
static void shrink_index(arena *a)
{
    /* A guarded batch's end keeps its retired entries for stale refs
     * (retire_chunks()). */
    if (a->nchunks == 0 && guarded_now(a))
        return;
    if (a->nchunks <= 1 && a->chunks && a->chunks != &a->first) {
        if (a->nchunks) {
            a->first = a->chunks[0];
            arena__cold(a)->first_slot = slots(a)[0];
        }
        free_index(a);
        a->chunks = &a->first;
        arena__cold(a)->ncap = 1;
    }
    if (a->nchunks == 0) {
        a->chunks = NULL;
        arena__cold(a)->ncap = 0;
    }
}

/* An entry of the index with its slot, as it is moved around. */
struct entry {
    struct arena__chunk chunk;
    struct arena__slot slot;
};

static struct entry get_entry(const arena *a, uint32_t i)
{
    struct entry e;
    e.chunk = a->chunks[i];
    e.slot = slots(a)[i];
    return e;
}

static void put_entry(arena *a, uint32_t i, struct entry e)
{
    a->chunks[i] = e.chunk;
    slots(a)[i] = e.slot;
}

/* Moves the `n` entries at `from` to `to`, slots along. */
static void move_entries(arena *a, uint32_t to, uint32_t from, uint32_t n)
{
    memmove(&a->chunks[to], &a->chunks[from], n * sizeof *a->chunks);
    memmove(&slots(a)[to], &slots(a)[from], n * sizeof(struct arena__slot));
}

/* Hands a chunk the arena allocated back to the backing allocator. */
static void free_chunk(arena *a, struct arena__chunk c)
{
    arena__chunk_freed(c.base, c.cap);
    arena__give_backing(a, c.base, c.cap);
}

/* ---- Spares --------------------------------------------------------------------------------- */

/* The spares stand in one order, their slots' `key`: the order in which
 * the chunks were allocated.  A chunk taken into use leaves it (the others
 * keep theirs), and goes back to its place when a rewind or reset drops it.
 * So a rewind leaves the spares as they were at its mark, and the next value
 * meets the spare it would have met then; and each value of a batch shaped
 * like the last one meets, first, the chunk the last one took for it. */

/* True when chunk i was used this batch. */
static bool used_now(const arena *a, uint32_t i)
{
    return slots(a)[i].last == arena__cold(a)->batch;
}

/* Takes spare `i` into use at index nused (the spares from nused to i move
 * up one place, keeping their order), and returns that index. */
static uint32_t take_spare(arena *a, uint32_t i)
{
    slots(a)[i].last = arena__cold(a)->batch;
    arena__cold(a)->counts.inuse += fill_cap(a, &a->chunks[i]);
    if (i != a->nused) {
        struct entry e = get_entry(a, i);
        move_entries(a, a->nused + 1, a->nused, i - a->nused);
        put_entry(a, a->nused, e);
    }
    return a->nused++;
}

/* Takes into use the first spare, in their order, that serves a value
 * needing `need` bytes of a fresh chunk: one of a capacity from `need` to
 * `most`.  In a batch shaped like the last one, that is the chunk the last
 * one used at this step, which usually stands first (two comparisons).
 * Returns its index, UINT32_MAX when none suits. */
static uint32_t use_spare(arena *a, size_t need, size_t most)
{
    uint32_t i;

    /* A guarded batch maps its chunks: a spare is the backing's memory. */
    for (i = guarded_now(a) ? a->nchunks : a->nused; i < a->nchunks; i++) {
        size_t cap = usable(a, &a->chunks[i]);
        if (cap >= need && cap <= most)
            return take_spare(a, i);
    }
    return UINT32_MAX;
}

/* The chunk of [from, to) to make current when none is: the first of the
 * chunk size, else the first regular one; `to` when none is regular. */
static uint32_t pick_current(const arena *a, uint32_t from, uint32_t to)
{
    uint32_t i, pick = to;

    for (i = from; i < to; i++) {
        size_t cap = usable(a, &a->chunks[i]);
        if (cap == arena__chunk_size(a))
            return i;
        if (cap <= regular_max(a) && pick == to)
            pick = i;
    }
    return pick;
}

/* Puts the chunks a rewind dropped, at [from, upto), back in their places
 * among the spares after them (in their order): each moves up past the
 * spares that come before it.  O(dropped + the places they move). */
static void restore_spares(arena *a, uint32_t from, uint32_t upto)
{
    uint32_t i, j;

    for (i = upto; i-- > from;) {
        struct entry e = get_entry(a, i);
        for (j = i; j + 1 < a->nchunks && slots(a)[j + 1].key < e.slot.key; j++)
            ;
        if (j != i) {
            move_entries(a, i, i + 1, j - i);
            put_entry(a, j, e);
        }
    }
}

/* Forgets the entry at index i (>= nused) of a chunk being freed. */
static void forget_spare(arena *a, uint32_t i)
{
    move_entries(a, i, i + 1, a->nchunks - i - 1);
    a->nchunks--;
}

/* Forgets the chunks at [from, nused): they become spares.  Sets nused =
 * from; the caller puts them in their place among the spares. */
static void drop_chunks_from(arena *a, uint32_t from)
{
    uint32_t i;

    for (i = from; i < a->nused; i++) {
        arena__values_dropped(a, i, a->chunks[i].base);
        arena__cold(a)->counts.inuse -= fill_cap(a, &a->chunks[i]);
    }
    a->nused = from;
}

/* At the end of a batch, every chunk a spare in the spares' order:
 * renumbers their keys (0, 1, ...).  O(chunks). */
static void renumber(arena *a)
{
    uint32_t i;
    for (i = 0; i < a->nchunks; i++)
        slots(a)[i].key = i;
    arena__cold(a)->nkeys = arena__cold(a)->born = a->nchunks;
}

#include "arena_retain.inc.c" /* NOLINT(bugprone-suspicious-include): a part */

/* ---- The position --------------------------------------------------------------------------- */

/* The position in the current chunk (NULL: no current chunk). */
static char *cursor(const arena *a) { return a->ptr ? a->ptr : a->pos; }

/* The end of the current chunk (NULL: none), also while the arena is lazy:
 * its one chunk, the caller's buffer, is current then, and the bookkeeping
 * that says so is not written yet. */
static char *current_lim(const arena *a)
{
    return a->lazy ? a->buf + a->first.cap : arena__cold(a)->lim;
}

/* True when `size` bytes at `align` (a power of two) do not fit a lazy
 * arena: a fixed-size arena whose one chunk, the caller's buffer, is
 * current, with nothing instrumented (no header, no guard), where place()
 * would fail.  Such a call returns NULL before it wakes the arena, which
 * stays as it was, byte for byte.  False for an arena that is not lazy. */
static bool lazy_full(const arena *a, size_t size, size_t align)
{
    const char *pos = cursor(a);
    size_t room, pad;
    if (!a->lazy)
        return false;
    room = (size_t)(current_lim(a) - pos);
    pad = arena__pad((uintptr_t)pos, align);
    return pad > room || size > room - pad;
}

/* Moves the position to `pos` in the current chunk and reopens the inline
 * window when it can hold at least an aligned byte. */
static void set_cursor(arena *a, char *pos)
{
    a->pos = pos;
    a->ptr = a->end = a->counted = NULL;
    if (pos && !arena__instrumented() && !(a->pending & ARENA__PENDING_OVER)) {
        uintptr_t end = arena__align_down((uintptr_t)arena__cold(a)->lim, ARENA_ALIGN);
        if (arena__align_up((uintptr_t)pos, ARENA_ALIGN) <= end) {
            a->ptr = a->counted = pos;
            a->end = pos + (end - (uintptr_t)pos);
        }
    }
}

/* Makes chunk `i` current with its position at `pos`. */
static void enter_chunk(arena *a, uint32_t i, char *pos)
{
    a->cur = i;
    arena__cold(a)->lim = a->chunks[i].base + a->chunks[i].cap;
    set_cursor(a, pos);
}

static void leave_chunks(arena *a)
{
    a->cur = 0;
    arena__cold(a)->lim = NULL;
    set_cursor(a, NULL);
}

/* ---- Entry ----------------------------------------------------------------------------------
 *
 * What each entry point does first: it writes the bookkeeping of an arena
 * that the inline arena_init_buffer() left lazy (wake()), and folds in what
 * the inline paths did since the library's last call (catch_up()).  After a
 * change of its figures, a registered arena's record gets them
 * (published()); `pending` tells the inline paths which of their calls must
 * come here (arena__note_holds()).
 */

/* The bookkeeping of an arena whose one chunk, in use, is the caller's
 * buffer of capacity `cap`: attach_buffer() and write_cold() share it. */
static void buffer_cold(arena *a, size_t cap)
{
    struct arena__cold *c = arena__cold(a);
    struct arena__slot *s = &c->first_slot;
    c->ncap = 1;
    c->retained = cap;
    c->counts.inuse = cap;
    note_retained(a);
    c->nkeys = 1;
    s->key = 0;
    s->last = c->batch;
}

/* Writes the bookkeeping of an arena the inline arena_init_buffer() set up
 * (`lazy`): a fixed-size arena whose one chunk, in use, is the caller's
 * buffer, as arena__init_buffer_slow() leaves it; the inline paths may have
 * moved the position since.  Out of line: the entry points inline only the
 * test (wake()). */
static ARENA__NOINLINE void write_cold(arena *a)
{
    a->lazy = 0;
    a->cold = empty_arena.cold;
    buffer_cold(a, a->first.cap);
    arena__cold(a)->lim = a->buf + a->first.cap;
    arena__cold(a)->flags = ARENA__FIXED;
    arena__cold(a)->chunk_size = ARENA_DEFAULT_CHUNK;
}

/* What `countdown` starts from: ARENA__INLINE_RESETS + 1, less the resets that
 * a sampled arena's countdown to its next guarded batch withholds. */
static uint32_t countdown_start(const arena *a)
{
    return ARENA__INLINE_RESETS + 1 - arena__cold(a)->guard.cut;
}

/* Notes what the inline paths did since the library's last call, as the
 * library would have: the batches that arena__reset_first() counted down in
 * `countdown` (each used the one chunk the arena holds, and only it, so each
 * demanded its capacity, and that chunk is the only one to stamp), or a
 * release of the caller's buffer (`countdown` 0), which forgets the history.
 * An arena that holds no chunk (`arena a = {0}`, whose `countdown` is 0 too)
 * has nothing to note: forgetting an empty history changes nothing. */
static ARENA__NOINLINE void note_inline_resets(arena *a)
{
    struct arena__cold *c = arena__cold(a);
    size_t cap = a->nchunks ? usable(a, &a->chunks[0]) : 0;
    uint32_t full = countdown_start(a);
    uint32_t k = a->countdown < full ? full - a->countdown : 0;
    struct arena__guard_state *g = &c->guard;

    if (a->countdown == 0) {
        forget_history(a, cap);
    } else if (k && a->nchunks) {
        uint32_t flags = c->flags & ~(uint32_t)(ARENA__OUTGREW | ARENA__OUTGREW_LAST);
        note_batches(a, cap, k);
        c->batch += k;
        new_batch_counts(a, k);
        /* The batch under way at the last call may have freed an outgrown
         * chunk (free_outgrown()); the k - 1 after it did not. */
        if (k == 1 && (c->flags & ARENA__OUTGREW))
            flags |= ARENA__OUTGREW_LAST;
        c->flags = flags;
        g->gap = g->gap > k ? g->gap - k : 0;
        g->ended += k;
    }
    a->countdown = full;
    if (a->nchunks == 1) {
        slots(a)[0].key = 0;
        slots(a)[0].last = c->batch;
        c->nkeys = c->born = 1;
    }
}

/* Every entry point that reads `cold` calls it first (most through
 * catch_up()), so it asks whether memcheck watches too. */
static void wake(arena *a)
{
    arena__ask_valgrind();
    if (ARENA__UNLIKELY(a->lazy))
        write_cold(a);
}

void arena__wake(arena *a) { wake(a); }

void arena__note_holds(arena *a)
{
    if (arena__cold(a)->reuse || arena__cold(a)->set.node)
        a->pending |= ARENA__PENDING_HOLDS;
    else
        a->pending &= ~(uint32_t)ARENA__PENDING_HOLDS;
}

/* A registered arena's record gets its counters (arena/report.h). */
static void published(arena *a)
{
    if (ARENA__UNLIKELY(arena__cold(a)->set.node != NULL))
        arena__publish_arena(a);
}

void arena__publish_arena(const arena *a)
{
    arena_stats s;
    arena_get_stats(a, &s); /* which publishes */
}

/* wake() for the functions that take a const arena: an arena whose `lazy`
 * is set was written by arena_init_buffer(), so it is not a const object,
 * and writing its cold part changes nothing they report. */
static void wake_const(const arena *a) { wake((arena *)(uintptr_t)a); }

/* Catches up with what the inline paths did since the library's last call:
 * wakes a lazy arena, notes the resets they made, and folds the bytes they
 * stored since the window opened into `size`.  Every out-of-line entry
 * point calls it first, so that the library's code reads an exact `size`
 * and only ever moves the position through set_cursor(). */
static void catch_up(arena *a)
{
    wake(a);
    if (ARENA__UNLIKELY(a->countdown != countdown_start(a)))
        note_inline_resets(a);
    a->size = arena_size(a);
    a->counted = a->ptr;
}

#include "arena_limits.inc.c" /* NOLINT(bugprone-suspicious-include): a part */

#include "arena_guard.inc.c" /* NOLINT(bugprone-suspicious-include): a part */

/* ---- Placing values ------------------------------------------------------------------------- */

/* Allocates a chunk of `cap` bytes and takes it into use at index nused (see
 * take_spare()).  Returns its index, or UINT32_MAX (arena unchanged).
 * The index has at most 2^31 slots (index_growth()), so an index is below
 * 2^31 (which refs rely on: see make_ref()).  No object can exceed
 * PTRDIFF_MAX bytes, so such a chunk is refused before the backing sees it
 * (a sanitizer or Valgrind would flag the request).  The index block that
 * a full index needs is charged with the chunk, before either is obtained,
 * and installed once both came: a refusal makes no backing call, and a
 * failure gives back what came and leaves every figure but the calls and
 * the refusal as it was. */
static uint32_t add_chunk(arena *a, size_t cap, size_t least)
{
    size_t extra = arena__chunk_extra(cap, arena__chunk_size(a)), room, held, grow, failed;
    struct arena__chunk *index = NULL;
    struct arena__slot *s;
    uint32_t ncap;
    char *base;

    if ((arena__cold(a)->flags & ARENA__FIXED) || cap > (size_t)PTRDIFF_MAX - extra)
        return UINT32_MAX;
    /* A guarded batch takes no spare: where the limits leave no room for
     * its chunk beside the spares, they go back first. */
    if (guarded_now(a) && a->nchunks > a->nused && cap + extra > arena__backing_room(a))
        free_spares(a, 0, false);
    grow = index_growth(a, &ncap);
    if (grow == SIZE_MAX)
        return UINT32_MAX;
    /* Under a limit, a chunk cut down to the room left beside the index's
     * growth (no less than `least`): what the limit allows then still
     * serves values. */
    room = arena__backing_room(a);
    room = room > grow ? room - grow : 0;
    if (cap + extra > room && least < cap) {
        size_t fit = room > extra ? room - extra : 0;
        if (fit >= least) {
            cap = fit;
            extra = arena__chunk_extra(cap, arena__chunk_size(a));
        }
    }
    held = cap + extra;
    if (held > SIZE_MAX - grow || !charge(a, held + grow))
        return UINT32_MAX;
    base = obtain(a, held);
    failed = base ? 0 : held;
    if (base && grow && !(index = (struct arena__chunk *)back_call(a, grow))) {
        unobtain(a, base, held);
        base = NULL;
        failed = grow;
    }
    if (!base) {
        uncharge(a, held + grow);
        refused(a, ARENA_LIMIT_BACKING, failed);
        return UINT32_MAX;
    }
    hold(a, held + grow);
    index_install(a, index, ncap);
    arena__chunk_made(base, held);
    a->chunks[a->nchunks].base = base;
    a->chunks[a->nchunks].cap = held;
    s = &slots(a)[a->nchunks];
    s->key = arena__cold(a)->nkeys++;
    s->last = arena__cold(a)->batch;
    s->paged = guarded_now(a) ? PAGED : 0;
    a->nchunks++;
    arena__cold(a)->retained += cap;
    note_retained(a);
    return take_spare(a, a->nchunks - 1);
}

/* Undoes place()'s opening of a chunk, the last one taken into use: back to
 * the backing if it was allocated for it (`spare` false), else back among
 * the spares, `last` the batch that last used it. */
static void unopen(arena *a, bool spare, uint32_t last)
{
    uint32_t i = --a->nused;
    leave_chunks(a);
    if (!spare) {
        struct arena__chunk c = a->chunks[i];
        uint32_t paged = slots(a)[i].paged;
        arena__cold(a)->retained -= usable(a, &c);
        forget_spare(a, i);
        arena__cold(a)->nkeys--;
        drop_chunk(a, c, paged, NULL);
    } else {
        slots(a)[i].last = last;
        restore_spares(a, i, i + 1);
    }
}

/* `p` rounded up to `align` (a power of two), by pointer arithmetic. */
static char *align_ptr(char *p, size_t align) { return p + arena__pad((uintptr_t)p, align); }

/* No chunk current (a fresh arena, or a scope begun on an empty one), and
 * a value no larger than the chunk size: the chunk that a reset would make
 * current becomes current first (reopen()), so that the value goes where it
 * goes in a later batch of the same shape, which begins with that chunk
 * current.  `need` is the value's size with the padding a fresh chunk may
 * take for it.  False (arena unchanged) when no chunk can be had; else
 * *spare says whether the chunk was a spare, and *last, the batch that last
 * used it (for unopen()). */
static bool open_current(arena *a, size_t need, bool *spare, uint32_t *last)
{
    uint32_t i = guarded_now(a) ? a->nchunks : pick_current(a, a->nused, a->nchunks);

    *spare = i < a->nchunks;
    if (*spare) {
        *last = slots(a)[i].last;
        i = take_spare(a, i);
    } else {
        i = add_chunk(a, arena__chunk_size(a), need + arena__hdr());
        if (i == UINT32_MAX)
            return false;
    }
    enter_chunk(a, i, a->chunks[i].base);
    return true;
}

/* `size` bytes at `align` at the position of the current chunk, where they
 * fit (the chunk's index in *chunk); NULL otherwise. */
static char *place_current(arena *a, size_t size, size_t align, uint32_t *chunk)
{
    struct arena__cold *c = arena__cold(a);
    char *pos = cursor(a), *p;
    size_t pad, room;

    if (!c->lim)
        return NULL;
    pad = arena__pad((uintptr_t)pos + arena__hdr(), align) + arena__hdr();
    room = (size_t)(c->lim - pos);
    if (pad > room || size > room - pad)
        return NULL;
    p = pos + pad;
    set_cursor(a, p + arena__guarded_len(p, size, c->lim));
    *chunk = a->cur;
    return p;
}

/* A value that needs `need` bytes of a fresh chunk (more than the chunk
 * size) at `align`, in a chunk of its own: a spare that suits, else a new one,
 * which may give an outgrown spare back (free_outgrown()).  The chunk's
 * index in *chunk; NULL (arena unchanged) on failure. */
static char *place_oversized(arena *a, size_t align, size_t need, uint32_t *chunk)
{
    uint32_t i = use_spare(a, need, need > SIZE_MAX / 2 ? SIZE_MAX : 2 * need);

    if (i == UINT32_MAX) {
        i = add_chunk(a, need, need);
        if (i == UINT32_MAX)
            return NULL;
        free_outgrown(a, need);
    }
    *chunk = i;
    return align_ptr(a->chunks[i].base + arena__hdr(), align);
}

/* `size` bytes at `align` (`need` with the padding a fresh chunk may take,
 * at most the chunk size) at the start of a regular chunk, which becomes
 * current: a spare that suits, else a new one.  The chunk's index in
 * *chunk; NULL (arena unchanged) on failure. */
static char *place_regular(arena *a, size_t size, size_t align, size_t need, uint32_t *chunk)
{
    size_t cap = regular_cap(a);
    uint32_t i = use_spare(a, need, cap > arena__chunk_size(a) ? cap : regular_max(a));
    char *p;

    if (i == UINT32_MAX) {
        i = add_chunk(a, cap, need + arena__hdr());
        if (i == UINT32_MAX)
            return NULL;
    }
    p = align_ptr(a->chunks[i].base + arena__hdr(), align);
    enter_chunk(a, i, p);
    set_cursor(a, p + arena__guarded_len(p, size, arena__cold(a)->lim));
    *chunk = i;
    return p;
}

/* Places `size` (> 0) bytes at `align` (a power of two), counted in
 * arena_size() when `stored` (the family's pages are not: their blocks
 * count as they are handed out): at the position of the current chunk,
 * else in a chunk of their own when they exceed the chunk size, else at the
 * start of a new current chunk.  Stores the chunk index in *chunk.  NULL
 * (arena unchanged) on failure. */
static char *place_as(arena *a, size_t size, size_t align, uint32_t *chunk, bool stored)
{
    size_t worst, need;
    uint32_t last = 0;
    bool opened = false, spare = false;
    char *p;

    /* Every size computation below stays clear of SIZE_MAX. */
    if (size > SIZE_MAX - arena__hdr() - 2 * ARENA__GRANULE - align)
        return NULL;
    if (ARENA__UNLIKELY(a->pending & ARENA__PENDING_OVER)) {
        refused(a, ARENA_LIMIT_ARENA, size);
        return NULL;
    }
    if (ARENA__UNLIKELY(!(arena__cold(a)->guard.flags & ARENA__GUARD_DECIDED)) && a->nused == 0)
        guard_begin(a);
    align = arena__placing(a, align);

    /* The padding a fresh ARENA_ALIGN-aligned chunk may need for `align`
     * (the header and guard come out of the chunk's arena__chunk_extra()). */
    worst = align > ARENA_ALIGN ? align - ARENA_ALIGN : 0;
    need = size + worst;

    /* A value that only its alignment may keep from fitting the chunk opened
     * here takes a chunk of its own if it does not. */
    if (!arena__cold(a)->lim && size <= arena__chunk_size(a)) {
        if (!open_current(a, need, &spare, &last))
            return NULL;
        opened = true;
    }
    p = place_current(a, size, align, chunk);
    if (!p && need > arena__chunk_size(a)) {
        p = place_oversized(a, align, need, chunk);
        if (!p && opened)
            unopen(a, spare, last);
    } else if (!p) {
        p = place_regular(a, size, align, need, chunk);
    }
    if (!p)
        return NULL;
    if (stored)
        a->size += size;
    published(a);
    arena__value_placed(a, &a->chunks[*chunk], p, size);
    return p;
}

/* A value of `size` (> 0) bytes at `align`: place_as() counting it. */
static char *place(arena *a, size_t size, size_t align, uint32_t *chunk)
{
    return place_as(a, size, align, chunk, true);
}

void *arena__zero_size_value(size_t align)
{
    /* No object is aligned to every power of two: above ZERO_ALIGN, the
     * address whose value is the alignment, aligned by construction. */
    return align <= ZERO_ALIGN ? (void *)zero_block : (void *)(uintptr_t)align;
}

void *arena__alloc_slow(arena *a, size_t size, size_t align)
{
    uint32_t chunk;
    if (align == 0)
        align = ARENA_ALIGN;
    if (!arena__is_pow2(align))
        return NULL;
    if (size == 0)
        return arena__zero_size_value(align);
    if (lazy_full(a, size, align))
        return NULL;
    catch_up(a);
    return place(a, size, align, &chunk);
}

char *arena__alloc_pages(arena *a, size_t n)
{
    uint32_t chunk;
    char *p;
    if (lazy_full(a, n, ARENA__PAGE))
        return NULL;
    catch_up(a);
    arena__cold(a)->flags |= ARENA__QUIET;
    p = place_as(a, n, ARENA__PAGE, &chunk, false);
    arena__cold(a)->flags &= ~(uint32_t)ARENA__QUIET;
    return p;
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
    if (len == SIZE_MAX || lazy_full(a, len + 1, 1))
        return NULL;
    catch_up(a);
    p = place(a, len + 1, 1, &chunk);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

#include "arena_free.inc.c" /* NOLINT(bugprone-suspicious-include): a part */

/* ---- Refs ----------------------------------------------------------------------------------- */

/* The ref of the value of `len` bytes just placed at `p` in chunk `chunk`
 * (tagged in the checked build).  A chunk index is below 2^31 (add_chunk()). */
static arena_ref make_ref(const arena *a, const char *p, uint32_t chunk, size_t len)
{
    arena_ref r;
    r.chunk = chunk;
    r.off = (uint32_t)(p - a->chunks[chunk].base);
    r.len = (uint32_t)len;
    return arena__tag_ref(a, r);
}

arena_ref arena__ref_copy_slow(arena *a, const void *src, size_t size, size_t align)
{
    arena_ref r = {0, 0, 0};
    uint32_t chunk;
    char *p;

    /* Misuse is reported before catch_up(): the arena's bytes stay as they were. */
    if (size > ARENA_REF_MAX) {
        arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_REF_TOO_LARGE,
                      "arena_ref_copy: a value of %zu bytes at %p exceeds ARENA_REF_MAX (%zu)",
                      size, src, (size_t)ARENA_REF_MAX);
        return r;
    }
    if (align == 0)
        align = ARENA_ALIGN;
    /* An offset must fit 32 bits: the padding of an oversized value is < align. */
    if (size == 0 || !arena__is_pow2(align) || align > ARENA_REF_MAX || lazy_full(a, size, align))
        return r;
    catch_up(a);
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
        arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_REF_TOO_LARGE,
                      "arena_ref_strndup: a string of %zu bytes at %p exceeds ARENA_REF_MAX (%zu)",
                      len, (const void *)s, (size_t)ARENA_REF_MAX);
        return r;
    }
    if (len == 0 || lazy_full(a, len + 1, 1))
        return r;
    catch_up(a);
    p = place(a, len + 1, 1, &chunk);
    if (!p)
        return r;
    memcpy(p, s, len);
    p[len] = '\0';
    return make_ref(a, p, chunk, len);
}

/* True when the ref's value (of its chunk, offset and length) is inside
 * the part of the arena that holds live values, and (checked build) its
 * header's tag matches the ref's bits of it (under `mask`) and its size
 * holds `len` (arena__header_matches()).  Everything is checked before the
 * header is loaded: a garbage ref causes no out-of-chunk read. */
static bool ref_live(const arena *a, uint32_t chunk, uint32_t off, uint32_t len, uint32_t tag,
                     uint32_t mask)
{
    const struct arena__chunk *c;

    if (chunk >= a->nused)
        return false;
    c = &a->chunks[chunk];
    if (off > c->cap || len > c->cap - off)
        return false;
    if (arena__cold(a)->lim && chunk == a->cur && off + (size_t)len > (size_t)(cursor(a) - c->base))
        return false;
    return arena__header_matches(c->base, off, len, tag, mask);
}

void *arena__ref_ptr_checked(const arena *a, arena_ref r)
{
    uint32_t len = r.len & (uint32_t)INT32_MAX;
    uint32_t tag, mask, chunk = arena__untag_ref(r, &tag, &mask);

    if (len == 0)
        return NULL;
    wake_const(a);
    if (!ref_live(a, chunk, r.off, len, tag, mask)) {
        arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_STALE_REF,
                      "arena_ref_ptr: ref {chunk %#x, off %u, len %#x} does not describe a "
                      "live value of arena %p (expired by a reset, release or rewind, from "
                      "another arena, or not a ref)",
                      (unsigned)r.chunk, (unsigned)r.off, (unsigned)r.len, (const void *)a);
        return NULL;
    }
    return a->chunks[chunk].base + r.off;
}

/* ---- Lifetime ------------------------------------------------------------------------------- */

void arena_init_with(arena *a, size_t chunk_bytes, const arena_allocator *backing)
{
    *a = empty_arena;
    a->countdown = ARENA__INLINE_RESETS + 1;
    if (chunk_bytes > ARENA_REF_MAX)
        chunk_bytes = ARENA_REF_MAX;
    arena__cold(a)->chunk_size = chunk_bytes ? chunk_bytes : ARENA_DEFAULT_CHUNK;
    if (backing && backing->alloc)
        arena__cold(a)->backing = *backing;
}

void arena_init(arena *a, size_t chunk_bytes) { arena_init_with(a, chunk_bytes, NULL); }

/* Attaches a->buf (with capacity `cap`) as chunk 0 of an arena holding nothing. */
static void attach_buffer(arena *a, size_t cap)
{
    a->chunks = &a->first;
    a->first.base = a->buf;
    a->first.cap = cap;
    a->nchunks = a->nused = 1;
    buffer_cold(a, cap);
    enter_chunk(a, 0, a->buf);
}

void arena__init_buffer_slow(arena *a, void *buf, size_t len, const arena_allocator *backing)
{
    uintptr_t start = arena__align_up((uintptr_t)buf, ARENA_ALIGN);
    size_t pad = (size_t)(start - (uintptr_t)buf);
    size_t cap = buf && len > pad ? len - pad : 0;

    arena_init_with(a, ARENA_DEFAULT_CHUNK, backing);
    if (!backing || !backing->alloc)
        arena__cold(a)->flags |= ARENA__FIXED;
    if (cap > ARENA_REF_MAX)
        cap = ARENA_REF_MAX;
    if (cap) {
        a->buf = (char *)buf + pad;
        attach_buffer(a, cap);
        arena__chunk_made(a->buf, cap);
    }
}

void arena__release_slow(arena *a)
{
    size_t bufcap;
    uint32_t i;
    struct arena__guard_why why = {NULL, 0, 0, 0, 0};
    struct arena__chunk stale = {NULL, 0};
    bool guarded;

    if (!arena__cleanups_end(a, 0, "arena_release"))
        return;
    bufcap = a->buf ? a->chunks[0].cap : 0;
    catch_up(a);
    arena__end_high(a);
    if (arena__cold(a)->set.node)
        arena_unregister(a);
    arena__reuse_release(a);

    if (a->buf)
        arena__buffer_reused(a);
    guarded = guarded_now(a) && a->nused > 0;
    if (guarded) {
        why = guard_why(a, ARENA__END_RELEASE);
        stale = a->chunks[0];
    }
    for (i = 0; i < a->nchunks; i++) {
        if (i < a->nused)
            arena__values_dropped(a, i, a->chunks[i].base);
        if (a->chunks[i].base != a->buf)
            drop_chunk(a, a->chunks[i], slots(a)[i].paged, &why);
    }
    free_index(a);
    a->chunks = NULL;
    if (guarded) {
        /* A stale ref to the first chunk resolves into the quarantine. */
        a->first = stale;
        a->chunks = &a->first;
    }
    arena__cold(a)->ncap = a->nchunks = a->nused = 0;
    arena__cold(a)->retained = 0;
    arena__cold(a)->counts.inuse = 0;
    arena__cold(a)->counts.peak_retained_batch = 0;
    arena__cold(a)->nkeys = arena__cold(a)->born = 0;
    forget_history(a, bufcap);
    a->size = 0;
    a->expired = a->saves;
    leave_chunks(a);
    if (a->buf) {
        arena__buffer_released(a, bufcap);
        attach_buffer(a, bufcap);
    }
    guard_end(a, false);
    check_over(a);
    arena__child_idle(a);
}

/* Makes the arena empty (size 0, every mark expired), every chunk a spare,
 * with the caller's buffer, or else the first chunk of the chunk size, or
 * else the first regular one, current as chunk 0 (none when every chunk is
 * oversized: the first value then picks one). */
static void reopen(arena *a)
{
    uint32_t pick = a->buf ? 0 : UINT32_MAX;

    a->size = 0;
    a->expired = a->saves;
    /* chunks is never NULL while nchunks > 0; testing both keeps gcc's
     * -fanalyzer, which loses that link across free_spares(), convinced. */
    if (!a->buf && a->chunks && !guarded_now(a))
        pick = pick_current(a, 0, a->nchunks);
    if (pick < a->nchunks && a->chunks) {
        take_spare(a, pick);
        enter_chunk(a, 0, a->chunks[0].base);
    } else {
        leave_chunks(a);
    }
    if (ARENA_CHECKED)
        arena_check(a);
}

/* A reset that keeps what the policy keeps, and at most `retain_limit`. */
static ARENA__NOINLINE void reset_to_slow(arena *a, size_t retain_limit)
{
    size_t most, demand = 0;
    uint32_t in_use;

    if (!arena__cleanups_end(a, 0, retain_limit == SIZE_MAX ? "arena_reset" : "arena_reset_to"))
        return;
    catch_up(a);
    arena__end_high(a);
    if (retain_limit == 0)
        arena__reuse_release(a);
    else
        arena__reuse_forget(a, 0);
    arena__buffer_reused(a);
    in_use = a->nused;
    drop_chunks_from(a, 0);
    if (guarded_now(a))
        demand = retire_chunks(a, 0, in_use,
                               retain_limit == SIZE_MAX ? ARENA__END_RESET : ARENA__END_RESET_TO);
    else
        restore_spares(a, 0, in_use);
    renumber(a);
    most = retention_target(a, demand);
    retain_limit = limited_retention(a, retain_limit);
    free_spares(a, most < retain_limit ? most : retain_limit, true);
    end_batch(a);
    guard_end(a, true);
    reopen(a);
    check_over(a);
    if (a->pending & ARENA__PENDING_OVER) { /* the reuse table alone exceeds the limit */
        arena__reuse_release(a);
        check_over(a);
    }
    arena__child_idle(a);
    published(a);
}

void arena__reset_slow(arena *a) { reset_to_slow(a, SIZE_MAX); }

void arena_reset_to(arena *a, size_t retain_limit)
{
    wake(a);
    /* The common case of a request-sized batch (the arena cache recycles one
     * per request): one chunk, kept, the inline window open on it. */
    if (ARENA__INLINE_WINDOW && a->nchunks == 1 && arena__cold(a)->retained <= retain_limit &&
        arena__reset_first(a))
        return;
    reset_to_slow(a, retain_limit);
}

void arena_trim(arena *a, size_t max_retained)
{
    catch_up(a);
    free_spares(a, max_retained, false);
    check_over(a);
    published(a);
}

#include "arena_marks.inc.c" /* NOLINT(bugprone-suspicious-include): a part */

/* ---- Names and figures ---------------------------------------------------------------------- */

void arena_set_name(arena *a, const char *name)
{
    wake(a);
    arena__cold(a)->set.name = name;
    arena__cold(a)->set.changed = 1;
    published(a);
}

const char *arena_name(const arena *a) { return a->lazy ? NULL : arena__cold(a)->set.name; }

void arena_get_stats(const arena *a, arena_stats *out)
{
    const struct arena__cold *c = arena__cold(a);
    size_t inuse, room = 0;
    const char *lim;
    bool inline_resets;

    memset(out, 0, sizeof *out);
    out->stored = arena_size(a);
    out->retained = arena_retained(a);
    out->limit = arena_limit(a);
    out->chunks = a->nchunks;
    lim = current_lim(a);
    if (lim) {
        room = (size_t)(lim - cursor(a));
        /* An allocated chunk's room for a header is not capacity (fill_cap()). */
        if (!a->lazy && a->chunks[a->cur].base != a->buf)
            room = room > arena__hdr() ? room - arena__hdr() : 0;
    }
    inuse = a->lazy ? a->first.cap : c->counts.inuse;
    out->waste = inuse - room - out->stored;
    out->peak_stored_batch = arena__higher(out->stored, a->high);
    out->peak_stored = arena__higher(a->peak, out->peak_stored_batch);
    if (a->lazy) { /* nothing but the inline paths ran since the inline init */
        out->peak_retained = out->peak_retained_batch = out->retained;
        return;
    }
    inline_resets = a->countdown != countdown_start(a);
    out->held = c->counts.held;
    out->peak_held = c->counts.peak_held;
    out->reused = c->counts.reused;
    out->backing_calls = c->counts.calls;
    out->limit_hits = c->counts.limit_hits;
    out->resets = c->counts.resets;
    if (inline_resets && a->countdown)
        out->resets += countdown_start(a) - a->countdown;
    out->peak_retained = c->counts.peak_retained;
    out->peak_retained_batch = inline_resets ? out->retained : c->counts.peak_retained_batch;
    if (c->set.node) /* the report shows what this call shows (arena/report.h) */
        arena__publish(c->set.node, c->set.name, out);
}

size_t arena_retained(const arena *a) { return a->lazy ? a->first.cap : arena__cold(a)->retained; }

/* ---- Consistency ---------------------------------------------------------------------------- */

/* The invariant of the slots: the chunks in use were used this batch, none
 * was last used more than ARENA_RETAIN_BATCHES batches ago (a reset gives it
 * back first), and the spares stand in their order (keys increasing, below
 * nkeys). */
static bool slots_ordered(const arena *a)
{
    uint32_t i;
    for (i = 0; i < a->nchunks; i++) {
        const struct arena__slot *s = &slots(a)[i];
        if ((i < a->nused && !used_now(a, i)) || s->key >= arena__cold(a)->nkeys ||
            arena__cold(a)->batch - s->last > ARENA_RETAIN_BATCHES ||
            (i > a->nused && s->key <= slots(a)[i - 1].key))
            return false;
    }
    return true;
}

/* The index's counts and each chunk's entry, summing the chunks'
 * capacities into *held and those of the chunks in use into *used; false,
 * reported, at the first fault. */
static bool chunks_sound(const arena *a, size_t *held, size_t *used)
{
    uint32_t i;

    if (a->nused > a->nchunks || a->nchunks > arena__cold(a)->ncap)
        return arena__corrupt(
            ARENA__ABOUT_ARENA(a),
            "arena_check: arena %p: counts out of order (used %u, held %u, slots %u)",
            (const void *)a, (unsigned)a->nused, (unsigned)a->nchunks,
            (unsigned)arena__cold(a)->ncap);
    if (arena__cold(a)->ncap && !a->chunks)
        return arena__corrupt(ARENA__ABOUT_ARENA(a), "arena_check: arena %p: index missing",
                              (const void *)a);
    for (i = 0; i < a->nchunks; i++) {
        const struct arena__chunk *c = &a->chunks[i];
        if (!c->base || ((uintptr_t)c->base & (ARENA_ALIGN - 1)) || c->cap == 0)
            return arena__corrupt(ARENA__ABOUT_ARENA(a),
                                  "arena_check: arena %p: chunk %u is malformed", (const void *)a,
                                  (unsigned)i);
        if (c->base == a->buf && i != 0)
            return arena__corrupt(ARENA__ABOUT_ARENA(a),
                                  "arena_check: arena %p: the caller's buffer is chunk %u, not 0",
                                  (const void *)a, (unsigned)i);
        if (c->base != a->buf && c->cap < arena__chunk_extra(0, arena__chunk_size(a)))
            return arena__corrupt(ARENA__ABOUT_ARENA(a),
                                  "arena_check: arena %p: chunk %u is smaller than its overhead",
                                  (const void *)a, (unsigned)i);
        *held += usable(a, c);
        if (i < a->nused)
            *used += usable(a, c);
        if (!(c->base == a->buf && (arena__cold(a)->flags & ARENA__BUF_OPEN)) &&
            !arena__verify(a, i, c->base, c->base + c->cap))
            return false;
    }
    return true;
}

/* The position and the inline window against the current chunk; false,
 * reported, at the first fault. */
static bool position_sound(const arena *a)
{
    const struct arena__cold *k = arena__cold(a);
    char *pos = cursor(a);

    if (arena__instrumented() && ((uintptr_t)pos & (ARENA__GRANULE - 1)) && pos != k->lim)
        return arena__corrupt(ARENA__ABOUT_ARENA(a),
                              "arena_check: arena %p: position %p is not on a granule",
                              (const void *)a, (void *)pos);
    if (k->lim) {
        const struct arena__chunk *c = &a->chunks[a->cur];
        if (a->cur >= a->nused || k->lim != c->base + c->cap || pos < c->base || pos > k->lim)
            return arena__corrupt(ARENA__ABOUT_ARENA(a),
                                  "arena_check: arena %p: position %p outside current chunk %u",
                                  (const void *)a, (void *)pos, (unsigned)a->cur);
    } else if (pos || a->ptr || a->end) {
        return arena__corrupt(ARENA__ABOUT_ARENA(a),
                              "arena_check: arena %p: a position without a current chunk",
                              (const void *)a);
    }
    if (a->ptr &&
        (a->ptr > a->end || ((uintptr_t)a->end & (ARENA_ALIGN - 1)) ||
         arena__align_up((uintptr_t)a->ptr, ARENA_ALIGN) > (uintptr_t)a->end || a->end > k->lim))
        return arena__corrupt(ARENA__ABOUT_ARENA(a),
                              "arena_check: arena %p: inline window [%p, %p) is malformed",
                              (const void *)a, (void *)a->ptr, (void *)a->end);
    if (a->ptr ? (a->counted < a->chunks[a->cur].base || a->counted > a->ptr) : a->counted != NULL)
        return arena__corrupt(
            ARENA__ABOUT_ARENA(a),
            "arena_check: arena %p: uncounted bytes start at %p, outside [chunk, %p]",
            (const void *)a, (void *)a->counted, (void *)a->ptr);
    return true;
}

bool arena_check(const arena *a)
{
    size_t held = 0, used = 0;

    wake_const(a);
    if (!chunks_sound(a, &held, &used))
        return false;
    if (!spans_ordered(a))
        return arena__corrupt(ARENA__ABOUT_ARENA(a),
                              "arena_check: arena %p: the record of expired marks is malformed",
                              (const void *)a);
    if (held != arena__cold(a)->retained)
        return arena__corrupt(ARENA__ABOUT_ARENA(a),
                              "arena_check: arena %p: retained %zu but chunks hold %zu",
                              (const void *)a, arena__cold(a)->retained, held);
    if (!slots_ordered(a))
        return arena__corrupt(
            ARENA__ABOUT_ARENA(a),
            "arena_check: arena %p: the order of its chunks is malformed (in use %u, "
            "held %u)",
            (const void *)a, (unsigned)a->nused, (unsigned)a->nchunks);
    /* (Instrumented, a chunk's overhead allowance can hold value bytes too.) */
    if (!arena__instrumented() && arena_size(a) > used)
        return arena__corrupt(ARENA__ABOUT_ARENA(a),
                              "arena_check: arena %p: size %zu exceeds the %zu bytes of its chunks",
                              (const void *)a, arena_size(a), used);
    return position_sound(a);
}
