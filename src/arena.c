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
 *                       were taken into use: regular chunks (the budget's
 *                       capacity, or a kept chunk of up to twice it),
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
 * spares in the order the last one met them.  (An order by last use would
 * do for the latter, but there a shape that comes after another meets the
 * other's chunks first, and may take one for a role its own chunk played
 * when it came first, which then goes unused until the policy gives it
 * back: in workloads of alternating shapes, most did once.)
 *
 * Growth and retention.  A value that does not fit the current chunk takes
 * the first spare that suits (holds it, and is at most twice what a new
 * chunk for it would be), else a new chunk: the budget for a value that fits
 * one, its own size for a larger one.  A batch of the same shape as the last
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
 * Guarded batches (arena/guard.h; the pages and the quarantine: guard.c).  A
 * batch is decided guarded or not as it begins (guard_begin()), so that all
 * the chunks in use of a guarded batch are the page layer's (their slots say
 * `paged`) and no spare ever is: a guarded batch takes no spare, and its end
 * retires its chunks (retire_chunks(), retire_tail()) instead of keeping
 * them.  Placement is the same, so values land at the offsets an unguarded
 * batch gives them.
 *
 * Instrumentation (sanitizers, Valgrind, the checked build's headers and
 * guards) lives in instrument.c: this file calls its hooks (internal.h) at
 * each event, and sizes values and chunks with its layout helpers, which are
 * identities in a plain build.
 */
#include <stdlib.h>
#include <string.h>

#include "arena/guard.h"
#include "arena/report.h"
#include "reuse.h"

/* Size-0 results at alignments up to ZERO_ALIGN point here (see
 * arena__zero_size_value()): an object of the library, no value's. */
#define ZERO_ALIGN 4096
static _Alignas(ZERO_ALIGN) char zero_block[1];

/* The empty arena.  Copying it, rather than memset(a, 0, sizeof *a), keeps
 * gcc from emitting `rep stos` for the known-size clear. */
static const arena empty_arena;

/* ---- Backing allocator --------------------------------------------------------- */

/* Tells the arena's callback of a refused request of `n` bytes; without
 * one, the trace (ARENA_LIMIT_TRACE) of a limit's refusal. */
static ARENA__NOINLINE void refused(arena *a, arena_limit_cause cause, size_t n)
{
    const struct arena__settings *s = &arena__cold(a)->set;
    arena_limit_event e;
    if (arena__cold(a)->flags & ARENA__QUIET)
        return;
    arena__cold(a)->counts.limit_hits++;
    if (s->node) /* the report counts it now, not at the arena's next call */
        arena__publish_arena(a);
    if (!s->on_limit && cause == ARENA_LIMIT_BACKING)
        return; /* out of memory: never printed */
    e.arena = a;
    e.name = s->name;
    e.cause = cause;
    e.limit_name = s->name;
    e.limit = SIZE_MAX;
    e.held = arena__cold(a)->counts.held;
    e.asked = n;
    if (cause == ARENA_LIMIT_ARENA) {
        e.limit = s->limit;
    } else if (cause == ARENA_LIMIT_BUDGET) {
        e.limit_name = arena_budget_name(s->budget);
        e.limit = arena_budget_limit(s->budget);
        e.held = arena_budget_used(s->budget);
    }
    if (s->on_limit)
        s->on_limit(&e, s->on_limit_ctx);
    else
        arena__limit_trace(&e);
}

size_t arena__backing_room(const arena *a)
{
    const struct arena__cold *c = arena__cold(a);
    size_t room = SIZE_MAX;
    if (c->flags & ARENA__LIMITED)
        room = c->counts.held < c->set.limit ? c->set.limit - c->counts.held : 0;
    if (c->set.budget) {
        size_t b = arena__budget_room(c->set.budget);
        room = b < room ? b : room;
    }
    return room;
}

/* Charges `n` bytes to the arena's limit and budget; false, refused (and
 * told), when either says no. */
static bool charge(arena *a, size_t n)
{
    struct arena__cold *c = arena__cold(a);
    if ((c->flags & ARENA__LIMITED) &&
        (c->counts.held > c->set.limit || n > c->set.limit - c->counts.held)) {
        refused(a, ARENA_LIMIT_ARENA, n);
        return false;
    }
    if (c->set.budget && !arena__budget_charge(c->set.budget, n)) {
        refused(a, ARENA_LIMIT_BUDGET, n);
        return false;
    }
    return true;
}

/* Gives back a charge of `n` bytes whose memory did not come. */
static void uncharge(arena *a, size_t n)
{
    if (arena__cold(a)->set.budget)
        arena__budget_refund(arena__cold(a)->set.budget, n);
}

/* The arena holds `n` bytes more, charged and obtained. */
static void hold(arena *a, size_t n)
{
    struct arena__cold *c = arena__cold(a);
    c->counts.held += n;
    if (c->counts.held > c->counts.peak_held)
        c->counts.peak_held = c->counts.held;
}

/* The arena no longer holds `n` bytes. */
static void discharge(arena *a, size_t n)
{
    struct arena__cold *c = arena__cold(a);
    c->counts.held -= n;
    if (c->set.budget)
        arena__budget_refund(c->set.budget, n);
}

/* `n` bytes from the backing: a counted call, neither charged nor held. */
static void *back_call(arena *a, size_t n)
{
    arena__cold(a)->counts.calls++;
    return arena__back_alloc(&arena__cold(a)->backing, n);
}

void *arena__take_backing(arena *a, size_t n)
{
    void *p;
    if (!charge(a, n))
        return NULL;
    p = back_call(a, n);
    if (!p) {
        uncharge(a, n);
        refused(a, ARENA_LIMIT_BACKING, n);
        return NULL;
    }
    hold(a, n);
    return p;
}

void arena__give_backing(arena *a, void *p, size_t n)
{
    struct arena__cold *c = arena__cold(a);
    c->counts.calls++;
    arena__back_free(&c->backing, p, n);
    discharge(a, n);
}

/* A slot's `paged`: a chunk of the page layer's (PAGED), whose pages past a
 * rewind's mark retired with its guard page (PAGED_CUT). */
#define PAGED     1u
#define PAGED_CUT 2u

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

static void back_free(arena *a, void *p, size_t n) { arena__give_backing(a, p, n); }

static size_t budget(const arena *a)
{
    return arena__cold(a)->budget ? arena__cold(a)->budget : ARENA_DEFAULT_CHUNK;
}

/* A chunk's capacity as arena_retained() counts it: without the overhead
 * of an allocated chunk (arena__chunk_extra()). */
static size_t usable(const arena *a, const struct arena__chunk *c)
{
    return c->base == a->buf ? c->cap : arena__chunk_usable(c->cap, budget(a));
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
 * that small values are bumped through): twice the budget, so that a kept
 * chunk a little larger than the budget is not wasted, and at most
 * ARENA_REF_MAX, so that an inline ref's offset fits its field. */
static size_t regular_max(const arena *a)
{
    return budget(a) > ARENA_REF_MAX / 2 ? ARENA_REF_MAX : 2 * budget(a);
}

/* ---- The position ------------------------------------------------------------------ */

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

/* The bookkeeping of an arena whose one chunk, in use, is the caller's
 * buffer of capacity `cap`: attach_buffer() and write_cold() share it. */
static void buffer_cold(arena *a, size_t cap)
{
    struct arena__slot *s = &arena__cold(a)->first_slot;
    arena__cold(a)->ncap = 1;
    arena__cold(a)->retained = cap;
    arena__cold(a)->counts.inuse = cap;
    note_retained(a);
    arena__cold(a)->nkeys = 1;
    s->key = 0;
    s->last = arena__cold(a)->batch;
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
    arena__cold(a)->budget = ARENA_DEFAULT_CHUNK;
}

static void note_batches(arena *a, size_t demand, uint32_t k);
static void check_over(arena *a);
static size_t limited_retention(const arena *a, size_t retain_limit);

/* `k` batches ended (resets): the batch peaks start again. */
static void new_batch_counts(arena *a, uint32_t k)
{
    struct arena__counts *c = &arena__cold(a)->counts;
    c->resets += k;
    c->peak_retained_batch = arena__cold(a)->retained;
}
static void forget_history(arena *a, size_t keep);
static struct arena__slot *slots(const arena *a);

/* What `spare` starts from: ARENA__INLINE_RESETS + 1, less the resets that
 * a sampled arena's countdown to its next guarded batch withholds. */
static uint32_t spare_full(const arena *a)
{
    return ARENA__INLINE_RESETS + 1 - arena__cold(a)->guard.cut;
}

/* Notes what the inline paths did since the library's last call, as the
 * library would have: the batches that arena__reset_first() counted down in
 * `spare` (each used the one chunk the arena holds, and only it, so each
 * demanded its capacity, and that chunk is the only one to stamp), or a
 * release of the caller's buffer (`spare` 0), which forgets the history.
 * An arena that holds no chunk (`arena a = {0}`, whose `spare` is 0 too)
 * has nothing to note: forgetting an empty history changes nothing. */
static ARENA__NOINLINE void note_inline_resets(arena *a)
{
    size_t cap = a->nchunks ? usable(a, &a->chunks[0]) : 0;
    uint32_t full = spare_full(a);
    uint32_t k = a->spare < full ? full - a->spare : 0;
    struct arena__guard_state *g = &arena__cold(a)->guard;

    if (a->spare == 0) {
        forget_history(a, cap);
    } else if (k && a->nchunks) {
        uint32_t flags = arena__cold(a)->flags & ~(uint32_t)(ARENA__OUTGREW | ARENA__OUTGREW_LAST);
        note_batches(a, cap, k);
        arena__cold(a)->batch += k;
        new_batch_counts(a, k);
        /* The batch under way at the last call may have freed an outgrown
         * chunk (free_outgrown()); the k - 1 after it did not. */
        if (k == 1 && (arena__cold(a)->flags & ARENA__OUTGREW))
            flags |= ARENA__OUTGREW_LAST;
        arena__cold(a)->flags = flags;
        g->gap = g->gap > k ? g->gap - k : 0;
        g->ended += k;
    }
    a->spare = full;
    if (a->nchunks == 1) {
        slots(a)[0].key = 0;
        slots(a)[0].last = arena__cold(a)->batch;
        arena__cold(a)->nkeys = arena__cold(a)->born = 1;
    }
}

/* Every entry point that reads `cold` calls it first (most through sync()),
 * so it asks whether memcheck watches too. */
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

/* Folds the bytes the inline paths stored since the window opened into
 * `size`.  Every out-of-line entry point calls it first, so that the
 * library's code reads an exact `size` and only ever moves the position
 * through set_cursor(). */
static void sync(arena *a)
{
    wake(a);
    if (ARENA__UNLIKELY(a->spare != spare_full(a)))
        note_inline_resets(a);
    a->size = arena_size(a);
    a->counted = a->ptr;
}

/* Decides whether the batch beginning now is guarded: every batch of an
 * arena that asked (ARENA__GUARD_ON), else, while the process samples,
 * one drawn for an arena on the C heap.  An unguarded batch of a sampled
 * arena lets the inline resets count down only the batches before the next
 * decision (`cut`: src/guard.c), so that the library sees it begin; a
 * guarded one, or every batch of an arena that asked, has its ends come to
 * the library (ARENA__PENDING_GUARD).  Requires no chunk in use and sync()
 * in this call (`spare` is full). */
static void guard_begin(arena *a)
{
    struct arena__guard_state *g = &arena__cold(a)->guard;
    bool on = (g->flags & ARENA__GUARD_ON) != 0;

    g->flags = (g->flags & ARENA__GUARD_ON) | ARENA__GUARD_DECIDED;
    g->cut = 0;
    g->keep = NULL;
    if (!on && !a->buf && !arena__cold(a)->backing.alloc && arena__guard_every())
        on = arena__guard_draw(g);
    if (on && arena__guard_page()) {
        g->flags |= ARENA__GUARD_NOW;
        arena__guard_began();
    }
    if (g->flags & (ARENA__GUARD_ON | ARENA__GUARD_NOW))
        a->pending |= ARENA__PENDING_GUARD;
    else
        a->pending &= ~(uint32_t)ARENA__PENDING_GUARD;
    a->spare = spare_full(a);
}

/* A batch ended (a reset, a release, a rewind to nothing): the reporter's
 * clock of the arena moves on.  With `next`, the next batch is decided. */
static void guard_end(arena *a, bool next)
{
    struct arena__guard_state *g = &arena__cold(a)->guard;
    g->ended++;
    if (g->id)
        arena__guard_tick(g->id, g->clock, g->ended);
    if (next) {
        guard_begin(a);
    } else {
        g->flags &= ~(uint32_t)(ARENA__GUARD_NOW | ARENA__GUARD_DECIDED);
        if (!(g->flags & ARENA__GUARD_ON))
            a->pending &= ~(uint32_t)ARENA__PENDING_GUARD;
    }
}

/* A scratch scope begins on `a` while the process samples.  A scope begun
 * on a scratch arena that stores nothing is a batch of its own, and the
 * library sees its end only where it rewinds to nothing (a scope begun with
 * no chunk current, or guarded), which decides the next batch; the end of
 * one begun with the chunk kept current is the inline rewind.  So the batch
 * beginning now, where no batch ended in the library since the last scope
 * began (`scope`), is counted here, and where the countdown ends, decided as
 * a rewind to nothing decides one (which keeps the chunk current unless the
 * batch is guarded). */
void arena__scratch_batch(arena *a)
{
    struct arena__guard_state *g = &arena__cold(a)->guard;
    arena_mark m = {NULL, 0, 0, 0, 0};
    const char *pos = a->ptr ? a->ptr : a->pos;

    if (a->lazy || a->nused != 1 || a->cur != 0 || pos != a->chunks[0].base || arena_size(a) != 0 ||
        (a->pending & ARENA__PENDING_GUARD))
        return;
    if (g->scope != (uint32_t)g->ended) {
        g->scope = (uint32_t)g->ended; /* decided as the last batch ended */
        return;
    }
    if (arena__guard_pass(g)) {
        g->ended++;
        if (g->id)
            arena__guard_tick(g->id, g->clock, g->ended);
    } else {
        m.serial = ++a->saves;
        (void)arena__rewind(a, m);
    }
    g->scope = (uint32_t)g->ended;
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

/* ---- The chunk index ------------------------------------------------------------------ */

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
        back_free(a, a->chunks, index_bytes(arena__cold(a)->ncap));
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

static uint32_t take_spare(arena *a, uint32_t i);
static void free_spares(arena *a, size_t limit, bool reset);

/* A new chunk's `n` bytes, from the page layer for a guarded batch (whole
 * pages; no backing call), else from the backing (a counted call): neither
 * charged nor held yet.  unobtain() gives them back as they came. */
static char *obtain(arena *a, size_t n)
{
    return guarded_now(a) ? (char *)arena__guard_map(n) : (char *)back_call(a, n);
}

static void unobtain(arena *a, char *p, size_t n)
{
    if (guarded_now(a)) {
        arena__guard_unmap(p, n);
    } else {
        arena__cold(a)->counts.calls++;
        arena__back_free(&arena__cold(a)->backing, p, n);
    }
}

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
    size_t extra = arena__chunk_extra(cap, budget(a)), room, held, grow, failed;
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
            extra = arena__chunk_extra(cap, budget(a));
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

/* Hands a chunk the arena allocated back to the backing allocator. */
static void free_chunk(arena *a, struct arena__chunk c)
{
    arena__chunk_freed(c.base, c.cap);
    back_free(a, c.base, c.cap);
}

/* What the quarantine keeps of `a` for a range retired now by `ending`
 * (unless the caller stands for another: arena__guard_caused()). */
static struct arena__guard_why guard_why(arena *a, int ending)
{
    struct arena__guard_state *g = &arena__cold(a)->guard;
    struct arena__guard_why why;
    if (!g->id) {
        g->id = arena__guard_identity(&g->clock);
        arena__guard_tick(g->id, g->clock, g->ended);
    }
    why.name = arena__cold(a)->set.name;
    why.ending = arena__guard_caused() ? arena__guard_caused() : ending;
    why.id = g->id;
    why.clock = g->clock;
    why.ended = g->ended;
    return why;
}

/* Gives a chunk back to where it came from: the page layer's, which held
 * values of a guarded batch, goes to the quarantine (`why`); one that held
 * none (`why` NULL) is unmapped. */
static void drop_chunk(arena *a, struct arena__chunk c, uint32_t paged,
                       const struct arena__guard_why *why)
{
    if (!paged) {
        free_chunk(a, c);
        return;
    }
    arena__chunk_freed(c.base, c.cap);
    discharge(a, c.cap);
    if (why) {
        /* Closed to the tools too: ASan names the stale access before the
         * fault would (guard.c opens the range when it leaves the
         * quarantine). */
        arena__close(c.base, c.cap);
        arena__guard_retire(c.base, c.cap, paged != PAGED_CUT, why);
    } else {
        arena__guard_unmap(c.base, c.cap);
    }
}

/* Retires the chunks at [from, upto) that a guarded batch's end dropped
 * from use (drop_chunks_from()): out of the index, into the quarantine.
 * The entries past them move down (spares of unguarded batches, which a
 * guarded batch does not use); with none to move, the index keeps the
 * retired entries beyond its count, so that a stale ref still resolves to
 * its quarantined address and faults.  Returns their capacity (the batch's
 * demand). */
static size_t retire_chunks(arena *a, uint32_t from, uint32_t upto, int ending)
{
    struct arena__guard_why why = guard_why(a, ending);
    size_t demand = 0;
    uint32_t i;

    for (i = from; i < upto; i++) {
        size_t u = usable(a, &a->chunks[i]);
        demand += u;
        arena__cold(a)->retained -= u;
        drop_chunk(a, a->chunks[i], slots(a)[i].paged, &why);
    }
    if (upto < a->nchunks)
        move_entries(a, from, upto, a->nchunks - upto);
    a->nchunks -= upto - from;
    return demand;
}

/* A guarded batch's rewind to `pos` in chunk i: the whole pages past it
 * retire with the guard page (the page that holds `pos` stays: values
 * before the mark share it), and the chunk ends where they begin, its slot
 * PAGED_CUT. */
static void retire_tail(arena *a, uint32_t i, char *pos)
{
    struct arena__chunk *c = &a->chunks[i];
    size_t before = usable(a, c), filled = fill_cap(a, c), cut;
    char *end = c->base + c->cap, *keep = arena__cold(a)->guard.keep, *at;
    struct arena__guard_why why;
    bool guard;

    /* An enclosing mark may lie as high as `keep` (resize_last()). */
    if (keep && keep > pos && keep <= end && keep > c->base)
        pos = keep;
    at = (char *)arena__align_up((uintptr_t)(pos > c->base ? pos : c->base + 1),
                                 arena__guard_page());

    if (!slots(a)[i].paged || at >= end)
        return;
    why = guard_why(a, ARENA__END_REWIND);
    /* An earlier rewind's range holds the guard page already. */
    guard = slots(a)[i].paged != PAGED_CUT;
    cut = (size_t)(end - at);
    c->cap -= cut;
    slots(a)[i].paged = PAGED_CUT;
    discharge(a, cut);
    arena__cold(a)->retained -= before - usable(a, c);
    arena__cold(a)->counts.inuse -= filled - fill_cap(a, c);
    arena__guard_retire(at, cut, guard, &why);
}

/* Forgets the chunks at [from, nused): they become spares.  Sets nused =
 * from; the caller puts them in their place among the spares. */
static void drop_chunks_from(arena *a, uint32_t from)
{
    uint32_t i;

    for (i = from; i < a->nused; i++) {
        arena__expired(a, i, a->chunks[i].base);
        arena__cold(a)->counts.inuse -= fill_cap(a, &a->chunks[i]);
    }
    a->nused = from;
}

/* ---- Spares ------------------------------------------------------------------------- */

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
 * budget's size, else the first regular one; `to` when none is regular. */
static uint32_t pick_current(const arena *a, uint32_t from, uint32_t to)
{
    uint32_t i, pick = to;

    for (i = from; i < to; i++) {
        size_t cap = usable(a, &a->chunks[i]);
        if (cap == budget(a))
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

/* After a new chunk of `cap` bytes for an oversized value: the largest spare
 * allocated in this batch (a rewind of it left it), smaller than the new one
 * and too large to serve as a regular chunk, goes back to the backing, so
 * that scopes of a value growing from one to the next leave one chunk
 * behind, not one per size (a batch that never ends has no reset to bound
 * it).  Spares of earlier batches are left to the retention policy: the
 * workload may still need them.  And nothing goes back in a batch that
 * follows one that gave chunks back so: if it is of the same shape, it
 * allocates again, at their steps, the chunks the last one gave back, and
 * would otherwise give back in turn some it used before, for the next batch
 * to allocate again; once it keeps them, the next one needs no new chunk.
 * Spares keep their order. */
static void free_outgrown(arena *a, size_t cap)
{
    size_t most = 0;
    uint32_t i, worst = UINT32_MAX;
    struct arena__chunk c;

    if (arena__cold(a)->flags & ARENA__OUTGREW_LAST)
        return;
    for (i = a->nused; i < a->nchunks; i++) {
        size_t u = usable(a, &a->chunks[i]);
        if (slots(a)[i].key >= arena__cold(a)->born && u < cap && u > regular_max(a) && u > most) {
            most = u;
            worst = i;
        }
    }
    if (worst == UINT32_MAX)
        return;
    c = a->chunks[worst];
    forget_spare(a, worst);
    arena__cold(a)->retained -= most;
    free_chunk(a, c);
    arena__cold(a)->flags |= ARENA__OUTGREW;
}

/* ---- Placing values -------------------------------------------------------------------- */

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

/* Places `size` (> 0) bytes at `align` (a power of two), counted in
 * arena_size() when `stored` (the family's pages are not: their blocks
 * count as they are handed out).  Stores the chunk index in *chunk.  NULL
 * (arena unchanged) on failure. */
static char *place_as(arena *a, size_t size, size_t align, uint32_t *chunk, bool stored)
{
    char *pos;
    size_t worst, need;
    uint32_t i, last = 0;
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

    /* No chunk current (a fresh arena, or a scope begun on an empty one),
     * and a value no larger than the budget: the chunk that a reset would
     * make current becomes current first (reopen()), so that the value goes
     * where it goes in a later batch of the same shape, which begins with
     * that chunk current.  One that only its alignment may keep from
     * fitting it takes a chunk of its own if it does not, below. */
    if (!arena__cold(a)->lim && size <= budget(a)) {
        i = guarded_now(a) ? a->nchunks : pick_current(a, a->nused, a->nchunks);
        spare = i < a->nchunks;
        if (spare) {
            last = slots(a)[i].last;
            i = take_spare(a, i);
        } else {
            i = add_chunk(a, budget(a), need + arena__hdr());
            if (i == UINT32_MAX)
                return NULL;
        }
        enter_chunk(a, i, a->chunks[i].base);
        opened = true;
    }
    pos = cursor(a);
    if (arena__cold(a)->lim) {
        size_t pad = arena__pad((uintptr_t)pos + arena__hdr(), align) + arena__hdr();
        size_t room = (size_t)(arena__cold(a)->lim - pos);
        if (pad <= room && size <= room - pad) {
            p = pos + pad;
            set_cursor(a, p + arena__guarded_len(p, size, arena__cold(a)->lim));
            *chunk = a->cur;
            goto placed;
        }
    }

    if (need > budget(a)) {
        i = use_spare(a, need, need > SIZE_MAX / 2 ? SIZE_MAX : 2 * need);
        if (i == UINT32_MAX) {
            i = add_chunk(a, need, need);
            if (i == UINT32_MAX) {
                if (opened)
                    unopen(a, spare, last);
                return NULL;
            }
            free_outgrown(a, need);
        }
        p = align_ptr(a->chunks[i].base + arena__hdr(), align);
        *chunk = i;
        goto placed;
    }

    i = use_spare(a, need, regular_max(a));
    if (i == UINT32_MAX) {
        i = add_chunk(a, budget(a), need + arena__hdr());
        if (i == UINT32_MAX)
            return NULL;
    }
    p = align_ptr(a->chunks[i].base + arena__hdr(), align);
    enter_chunk(a, i, p);
    set_cursor(a, p + arena__guarded_len(p, size, arena__cold(a)->lim));
    *chunk = i;

placed:
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
    sync(a);
    return place(a, size, align, &chunk);
}

char *arena__alloc_pages(arena *a, size_t n)
{
    uint32_t chunk;
    char *p;
    if (lazy_full(a, n, ARENA__PAGE))
        return NULL;
    sync(a);
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
    sync(a);
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
    struct arena__guard_state *g = &arena__cold(a)->guard;
    /* A mark taken before a shrink may lie above the position it leaves. */
    if (ARENA__UNLIKELY(g->flags & ARENA__GUARD_NOW) && new_size < old_size &&
        (!g->keep || cursor(a) > g->keep))
        g->keep = cursor(a);
    arena__value_resizing(a, p, old_size);
    set_cursor(a, p + arena__guarded_len(p, new_size, arena__cold(a)->lim));
    a->size = a->size - old_size + new_size;
    arena__value_resized(&a->chunks[a->cur], p, old_size, new_size);
}

/* Checked build: the size of the live value that starts at `p`, in *size;
 * false when p is not the start of one (in no chunk in use, or see
 * arena__value_size()).  The chunk is found before anything is loaded: the
 * current one first (where grown values mostly are), then the others, newest
 * first. */
static bool live_value_size(const arena *a, const char *p, uint64_t *size)
{
    const struct arena__chunk *c = NULL;
    const char *end = NULL;

    /* (Compared as integers: p may point anywhere.) */
    if (arena__cold(a)->lim &&
        (uintptr_t)p - (uintptr_t)a->chunks[a->cur].base <
            (uintptr_t)arena__cold(a)->lim - (uintptr_t)a->chunks[a->cur].base) {
        c = &a->chunks[a->cur];
        end = cursor(a);
    }
    if (!c && (c = arena__chunk_of(a, p)) != NULL)
        end = c->base + c->cap;
    return c && arena__value_size(c, end, p, size);
}

/* Reports the misuse of arena_realloc() that can be seen: an old size that
 * reaches past the position, when `p` lies in the current chunk before it
 * (no live value does); in the checked build, a `p` that is not the start
 * of a live value, or an old size above the value's size.  Nothing is read
 * when old_size is 0, so nothing is checked then. */
static bool grow_misused(const arena *a, const char *p, size_t old_size)
{
    const char *pos, *lim;
    uint64_t n;

    if (old_size == 0)
        return false;
    if (ARENA_CHECKED) {
        if (!live_value_size(a, p, &n))
            return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_FOREIGN_POINTER,
                                  "arena_realloc: %p is not the start of a live value of arena %p",
                                  (const void *)p, (const void *)a);
        if (old_size > n)
            return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_BAD_SIZE,
                                  "arena_realloc: old size %zu exceeds the %llu-byte value at %p "
                                  "(arena %p)",
                                  old_size, (unsigned long long)n, (const void *)p,
                                  (const void *)a);
        return false;
    }
    pos = cursor(a);
    lim = current_lim(a);
    if (lim && p >= a->chunks[a->cur].base && p <= pos && old_size > (size_t)(pos - p))
        return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_BAD_SIZE,
                              "arena_realloc: old size %zu of the value at %p reaches past the end "
                              "of what arena %p holds (%zu bytes from it)",
                              old_size, (const void *)p, (const void *)a, (size_t)(pos - p));
    return false;
}

/* Whether `p`, of `n` bytes, is the most recent value of the current chunk:
 * it ends (with its guard) at the position. */
static bool is_last(const arena *a, const char *p, size_t n)
{
    const char *pos = cursor(a), *lim = current_lim(a);
    return lim && p >= a->chunks[a->cur].base && p <= pos && n <= (size_t)(lim - p) &&
           pos == p + arena__guarded_len(p, n, lim);
}

/* ---- Reuse within a batch (the lists: src/reuse.c; pages: src/pages.c) -------------------
 *
 * Every call told a size follows one rule: a value holds the bytes it was
 * asked for, and any such call (arena_free(), arena_realloc(), the hooks
 * of hooks.h) may give it back or resize it, whichever call stored it.
 * Where a value lies decides what else goes back with its bytes:
 *
 *   - a value in a page (plain build, at most ARENA__PAGE_BLOCK_MAX bytes,
 *     placed by a reusing call): its class's block, which the page's
 *     header tells from the value's address (pages.h);
 *   - a value after a head (plain build, a larger one placed by a reusing
 *     call): the block the head records, [head, head + extent), its
 *     alignment padding and any remainder too small to file included;
 *   - any other value (bare: placed by arena_alloc() and its kin, or by
 *     arena_alloc_reuse() while the batch had given nothing back): its own
 *     bytes only.  What follows a bare value's last byte may be another
 *     value: one stored at an alignment below ARENA_ALIGN (a string) starts
 *     right there.  The instrumented builds guard every value and know its
 *     extent, so that every value there is of this kind.
 *
 * So the blocks that reusing calls hand out go back whole and lie side by
 * side with the blocks around them, which merging joins again: what an
 * arena holds follows what is live under any pattern of frees.
 *
 * A head is 16 bytes before its value: the block's extent, and a key that
 * mixes it with the head's address, the arena, the lists' epoch and the
 * process's secret.  Only a head written by this arena in the lists'
 * current epoch passes: a reset, a rewind or a release ends an epoch
 * (reuse.c: revive() draws each from one count for the process), so no
 * head outlives its batch, and the bytes before a bare value, whatever they
 * hold, pass only by forgery.  A head is read where it lies in the value's
 * own OS page, or in its chunk: reading it never faults. */

const struct arena__chunk *arena__chunk_of(const arena *a, const char *p)
{
    uint32_t i;
    for (i = a->nused; i-- > 0;)
        if ((uintptr_t)p - (uintptr_t)a->chunks[i].base < a->chunks[i].cap)
            return &a->chunks[i];
    return NULL;
}

/* The block of a value given back or resized: what it holds. */
enum kind { HELD_BARE, HELD_PAGE, HELD_HEAD };
struct held {
    enum kind kind;
    char *from; /* HELD_PAGE, HELD_HEAD: the block's start */
    size_t len; /* its length */
    unsigned c; /* HELD_PAGE: the class */
};

/* Whether the head before the value `p` may be read: in p's own OS page,
 * or else in p's chunk. */
static bool head_readable(const arena *a, const char *p)
{
    const struct arena__chunk *c;
    if (((uintptr_t)p & ARENA__PAGE_MASK) >= ARENA__HEAD)
        return true;
    c = arena__chunk_of(a, p);
    return c && (uintptr_t)p - (uintptr_t)c->base >= ARENA__HEAD;
}

/* What the value `p` of `n` bytes of `a` holds (plain build), in *h; false
 * after a report of misuse that its page shows (a pointer inside a block,
 * a block given back already, another arena's block). */
static bool held_by(const arena *a, const char *p, size_t n, const char *fn, struct held *h)
{
    const arena *owner;
    size_t block;
    uintptr_t page;

    h->kind = HELD_BARE;
    if (!arena__paging() || !(a->pending & ARENA__PENDING_REUSE) || n == 0)
        return true;
    if (n <= ARENA__PAGE_BLOCK_MAX && (page = arena__page_of(p, &owner, &block)) != 0) {
        if (!arena__page_on_boundary(p, page, block) || owner != a)
            return !arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_FOREIGN_POINTER,
                                   "%s: %p is not the start of a live value of arena %p", fn,
                                   (const void *)p, (const void *)a);
        if (arena__page_is_freed(p, block))
            return !arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_DOUBLE_FREE,
                                   "%s: the value at %p of arena %p was freed already", fn,
                                   (const void *)p, (const void *)a);
        if (n > block)
            return !arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_BAD_SIZE,
                                   "%s: size %zu exceeds the %zu-byte block of the value at %p "
                                   "(arena %p)",
                                   fn, n, block, (const void *)p, (const void *)a);
        h->kind = HELD_PAGE;
        h->from = (char *)(uintptr_t)p;
        h->len = block;
        h->c = arena__page_class_of(block);
        return true;
    }
    if (head_readable(a, p)) {
        size_t extent = arena__head_extent(a, p - ARENA__HEAD);
        if (extent) {
            h->kind = HELD_HEAD;
            h->from = (char *)(uintptr_t)p - ARENA__HEAD;
            h->len = extent;
        }
    }
    return true;
}

/* The bytes of a free block that a value of `n` bytes takes from its start:
 * the value, and when instrumented its header and guard. */
static size_t block_need(size_t n)
{
    if (!arena__instrumented())
        return n;
    return arena__hdr() + ((n + ARENA__GRANULE - 1) & ~(ARENA__GRANULE - 1)) + ARENA__GRANULE;
}

/* Whether the lists may hold a block of `n` bytes: they are valid and the
 * arena is under its limit.  Tested inline, so that a batch with no free
 * block (a client that never frees, as protobuf-c's unpack) pays a load and
 * a branch, not the call and the saved registers of the search. */
static ARENA__ALWAYS_INLINE bool reuse_open(const arena *a, size_t n)
{
    return (a->pending & (ARENA__PENDING_REUSE | ARENA__PENDING_OVER)) == ARENA__PENDING_REUSE &&
           n <= SIZE_MAX / 4;
}

/* A free block of `need` bytes at least, unlinked, its length in *len: from
 * the lists, merged first where they hold none (reuse.c). */
static char *take_free(arena *a, size_t need, size_t *len)
{
    char *s = arena__reuse_take(a, need, len);
    if (!s && arena__reuse_merge(a))
        s = arena__reuse_take(a, need, len);
    return s;
}

/* A free block of `need` bytes at least whose rest is at most `spare` bytes,
 * which the value's block then keeps, or with `split` one whose rest makes a
 * block of its own (it holds `need` and a node after it, rounded up to
 * ARENA_ALIGN); NULL when there is none.  So no remainder too small to file
 * separates the blocks given back later by more than `spare`. */
static char *take_fitting(arena *a, size_t need, size_t spare, bool split, size_t *len)
{
    size_t whole = (size_t)arena__align_up(need, ARENA_ALIGN) + arena__reuse_min();
    char *s = take_free(a, need, len);
    if (!s || *len - need <= spare || (split && *len >= whole))
        return s;
    (void)arena__reuse_file(a, s, *len);
    return split ? take_free(a, whole, len) : NULL;
}

/* Files the part of the block [s, end) that a value leaves from `to` on,
 * when it can be a block of its own; returns where the value's block ends. */
static char *file_rest(arena *a, char *to, char *end)
{
    if (to >= end || (size_t)(end - to) < arena__reuse_min())
        return end;
    (void)arena__reuse_file(a, to, (size_t)(end - to));
    return to;
}

/* A bare value of `n` (> 0) bytes, ARENA_ALIGN-aligned, in a free block of
 * this batch; NULL when no block holds it (with `tight`, none that it fills
 * but for less than ARENA_ALIGN bytes).  What the value leaves of the block
 * (rounded up to ARENA_ALIGN) is filed again where it makes a block; an
 * instrumented build takes no block whose rest could not, but for what its
 * merges join across (what no value fits in: see reuse.c), since a value
 * freed gives back what its guard covers.  Only where reuse_open(). */
static ARENA__NOINLINE void *take_listed(arena *a, size_t n, bool tight)
{
    const struct arena__chunk *c = NULL;
    size_t need, len;
    char *s, *p, *to, *end;
    bool logged;

    /* A rewind to a mark taken before this placement must find it. */
    logged = arena__instrumented() && a->saves > a->expired;
    if (logged && !arena__reuse_log_room(a))
        return NULL;
    need = block_need(n);
    if (tight)
        s = take_fitting(a, need, (size_t)arena__align_up(need, ARENA_ALIGN) - need, false, &len);
    else if (arena__instrumented())
        s = take_fitting(a, need, arena__reuse_gap(), true, &len);
    else
        s = take_free(a, need, &len);
    if (!s)
        return NULL;
    sync(a);
    end = s + len;
    p = s + arena__hdr();
    to = (char *)arena__align_up((uintptr_t)s + need, ARENA_ALIGN);
    if (to >= end || (size_t)(end - to) < arena__reuse_min())
        to = end;
    if (arena__instrumented()) {
        c = arena__chunk_of(a, p);
        if (!c) {
            arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_CORRUPT,
                          "arena: arena %p: a free block at %p lies in no chunk of it (its "
                          "list was overwritten)",
                          (void *)a, (void *)s);
            return NULL;
        }
        arena__instr_reused(a, c, s, p, n, to, len);
        if (logged)
            arena__reuse_log(a, c->base, s, to, p);
    }
    (void)file_rest(a, to, end);
    a->size += n;
    arena__cold(a)->counts.reused += n;
    published(a);
    return p;
}

/* Whether `need` bytes at ARENA_ALIGN fit the room left in the current
 * chunk. */
static bool fits_current(const arena *a, size_t need)
{
    const char *lim = arena__cold(a)->lim;
    uintptr_t at;
    if (!lim)
        return false;
    at = arena__align_up((uintptr_t)cursor(a), ARENA_ALIGN);
    return at <= (uintptr_t)lim && need <= (size_t)((uintptr_t)lim - at);
}

/* A value of `n` bytes after a head (plain build) in a free block of the
 * lists, else bare in a block that holds it but not its head, else, unless
 * `listed_only`, after a head placed anew; NULL when there is none or on
 * failure (arena unchanged).  A large value's block is a whole class
 * (arena__class_round()) where that fits a chunk of the budget, a small one's (a
 * page's class had none) its value's size; one past the budget takes a
 * chunk of its own, bare. */
static void *place_headed(arena *a, size_t n, bool listed_only)
{
    size_t need, len;
    uint32_t chunk;
    char *h, *end;

    if (n > SIZE_MAX / 4)
        return NULL;
    need = (size_t)arena__align_up(ARENA__HEAD + n, ARENA_ALIGN);
    /* Without the lists (their table could not be had), the value goes
     * bare. */
    if (!arena__reuse_live(a))
        return listed_only ? NULL : place(a, n, ARENA_ALIGN, &chunk);
    if (n > ARENA__PAGE_BLOCK_MAX && arena__class_round(need) <= budget(a))
        need = arena__class_round(need);
    h = take_free(a, need, &len);
    if (h) {
        end = file_rest(a, h + need, h + len);
        arena__cold(a)->counts.reused += n;
    } else {
        void *p;
        /* A block that holds the value but not its head, with less than a
         * granule to spare (one that a bare value of the same size left),
         * takes it bare. */
        if (reuse_open(a, n) && (p = take_listed(a, n, true)) != NULL)
            return p;
        if (listed_only)
            return NULL;
        /* A value past the budget takes a chunk of its own, where nothing
         * follows it. */
        if (need > budget(a))
            return place(a, n, ARENA_ALIGN, &chunk);
        /* Placed anew: a whole class where the current chunk has room for
         * one, else just what the value takes, rather than a new chunk. */
        if (!fits_current(a, need) && fits_current(a, ARENA__HEAD + n))
            need = (size_t)arena__align_up(ARENA__HEAD + n, ARENA_ALIGN);
        h = place_as(a, need, ARENA_ALIGN, &chunk, false);
        if (!h)
            return NULL;
        end = h + need;
    }
    arena__head_write(a, h, (size_t)(end - h));
    a->size += n;
    published(a);
    return h + ARENA__HEAD;
}

/* The values of a class placed after a head before the class takes pages
 * (counted over the arena's batches): a page of 4 KiB for each class a
 * batch touches would cost a small arena more than its values; the heads
 * cost 16 bytes each.  An
 * arena whose chunks are smaller than PAGE_CHUNKS pages takes none (each
 * region of pages would be a chunk of its own). */
#define PAGE_AFTER  32
#define PAGE_CHUNKS 4

/* A value of `n` (> 0, at most ARENA__PAGE_BLOCK_MAX) bytes (plain build),
 * where arena__small_take() found no block of its page class at once:
 * until the class has had PAGE_AFTER values, after a head (in a free block
 * of the lists, else placed anew); then a block of a page carved for it
 * from memory given back, else after a head in a free block, else a block
 * of a page of new memory, else bare; NULL on failure. */
static void *place_small(arena *a, size_t n)
{
    unsigned c = arena__small_class(n);
    struct arena__pages *pg = arena__pages_of(a);
    void *p;
    uint32_t chunk;

    if (!pg)
        return place(a, n, ARENA_ALIGN, &chunk);
    if (arena__cold(a)->reuse->placed[c] < PAGE_AFTER || budget(a) < PAGE_CHUNKS * ARENA__PAGE) {
        p = place_headed(a, n, false);
        if (p && arena__cold(a)->reuse->placed[c] < PAGE_AFTER)
            arena__cold(a)->reuse->placed[c]++;
        return p;
    }
    /* Pages whose blocks are all free are recycled before one is carved:
     * a page from memory given back, else a free block, before a page of
     * new memory. */
    if (pg->cls[c].next == pg->cls[c].end)
        arena__pages_tidy(a);
    while (arena__page_refill(a, pg, c, false, "arena_alloc_reuse"))
        if ((p = arena__small_take(a, n)) != NULL)
            return p;
    if ((p = place_headed(a, n, true)) != NULL)
        return p;
    while (arena__page_refill(a, pg, c, true, "arena_alloc_reuse"))
        if ((p = arena__small_take(a, n)) != NULL)
            return p;
    return place(a, n, ARENA_ALIGN, &chunk);
}

void *arena__reuse_alloc(arena *a, size_t n) { return arena__reuse_alloc_as(a, n, true); }

void *arena__reuse_alloc_as(arena *a, size_t n, bool pages)
{
    void *p;
    if (n == 0)
        return arena__zero_size_value(ARENA_ALIGN);
    if (lazy_full(a, n, ARENA_ALIGN))
        return NULL;
    sync(a);
    if (ARENA__UNLIKELY(a->pending & ARENA__PENDING_OVER)) {
        uint32_t chunk;
        return place(a, n, ARENA_ALIGN, &chunk); /* refused, and told */
    }
    if (arena__paging()) {
        if (n <= ARENA__PAGE_BLOCK_MAX && pages)
            return (p = arena__small_take(a, n)) != NULL ? p : place_small(a, n);
        return place_headed(a, n, false);
    }
    if (reuse_open(a, n) && (p = take_listed(a, n, false)) != NULL) {
        return p;
    }
    return arena__alloc_slow(a, n, ARENA_ALIGN);
}

void *arena__reuse_alloc_listed(arena *a, size_t n)
{
    if (n == 0 || !arena__paging() || a->lazy || !reuse_open(a, n))
        return NULL;
    sync(a);
    return place_headed(a, n, true);
}

/* Reports a value that arena_free() or an adapter may not give back, in an
 * instrumented build (where the chunks, and in the checked build the
 * headers, tell); true when reported.  `*n` becomes the value's size as
 * recorded (the checked build's header). */
static bool free_misused(const arena *a, const char *p, size_t *n,
                         const struct arena__chunk **chunk)
{
    uint64_t size = *n;
    int state = 2;

    *chunk = arena__chunk_of(a, p);
    if (*chunk)
        state = arena__instr_free_state(a, *chunk, p, *n, &size);
    if (state == 1)
        return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_DOUBLE_FREE,
                              "arena_free: the value at %p of arena %p was freed already",
                              (const void *)p, (const void *)a);
    if (state == 2)
        return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_FOREIGN_POINTER,
                              "arena_free: %p is not the start of a live value of arena %p",
                              (const void *)p, (const void *)a);
    if (*n > size)
        return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_BAD_SIZE,
                              "arena_free: size %zu exceeds the %llu-byte value at %p (arena %p)",
                              *n, (unsigned long long)size, (const void *)p, (const void *)a);
    *n = (size_t)size;
    return false;
}

/* Reports a bare value that cannot be one of this batch's: it lies past the
 * position of the current chunk, or in no chunk in use (a spare's memory,
 * or another arena's, or a guarded batch's pages that the quarantine keeps
 * for this arena); true when reported.  A value given back after the reset
 * or rewind that ended its batch mostly lies there (the new batch has not
 * reached it yet); where the new batch has stored over it already, nothing
 * tells it from a value of the new batch. */
static ARENA__NOINLINE bool late_free_found(const arena *a, const char *p, size_t n, const char *fn)
{
    const struct arena__chunk *c = arena__chunk_of(a, p);
    const char *pos = cursor(a), *lim = current_lim(a);
    bool in_current = c && lim && c->base + c->cap == lim && pos && p + n > pos;
    uint32_t i;

    if (c && !in_current)
        return false;
    for (i = a->nused; !c && i < a->nchunks; i++)
        if ((uintptr_t)p - (uintptr_t)a->chunks[i].base < a->chunks[i].cap)
            in_current = true; /* a spare chunk's memory */
    if (!c && arena__guard_retired_by(p, arena__cold(a)->guard.id))
        in_current = true; /* a guarded batch's pages, in the quarantine */
    if (in_current)
        return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_LATE_FREE,
                              "%s: the %zu-byte value at %p lies beyond what arena %p has "
                              "stored in this batch: given back after the reset, rewind or "
                              "release that ended its batch",
                              fn, n, (const void *)p, (const void *)a);
    return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_FOREIGN_POINTER,
                          "%s: %p lies in no chunk of arena %p", fn, (const void *)p,
                          (const void *)a);
}

static inline bool late_free(const arena *a, const char *p, size_t n, const char *fn)
{
    const char *pos = cursor(a);
    /* Most values given back lie below the position of the current chunk. */
    if (current_lim(a) && pos && p >= a->chunks[a->cur].base && p < pos && n <= (size_t)(pos - p))
        return false;
    return late_free_found(a, p, n, fn);
}

/* The block [from, from + len), which the arena no longer needs, goes back:
 * to the position when it ends there, else to the lists when it can hold a
 * node. */
static void give_block(arena *a, char *from, size_t len)
{
    char *s, *to = from + len;
    if (to == cursor(a) && current_lim(a) && from >= a->chunks[a->cur].base &&
        !arena__instrumented()) {
        set_cursor(a, from);
        return;
    }
    s = (char *)arena__align_up((uintptr_t)from, ARENA_ALIGN);
    if (s < to && (size_t)(to - s) >= arena__reuse_min())
        (void)arena__reuse_file(a, s, (size_t)(to - s));
}

/* The most recent value `p` of the current chunk, `held` bytes as placed,
 * goes back to the position; in an instrumented build with its header and
 * guard (the chunk `c`), so that a value freed as it was stored leaves
 * nothing behind.  (While a mark is live the checked build keeps the
 * header, a value of no bytes: its rewind's cut finds the values stored
 * after the mark by their headers.) */
static void unplace_last(arena *a, char *p, size_t held, const struct arena__chunk *c)
{
    char *from;
    if (!arena__instrumented() || !c || (ARENA_CHECKED && a->saves > a->expired)) {
        resize_last(a, p, held, 0);
        return;
    }
    from = p - arena__hdr();
    resize_last(a, p, held, 0);
    (void)arena__instr_freed(a, c, from, p, 0, cursor(a));
    set_cursor(a, from);
}

/* arena_free() of a value whose caller counts `size` bytes (arena_realloc()
 * may be told less than the value holds).  `note`: the size before it is
 * a figure the program saw, to note as the batch's high point (not when the
 * call placed the value that replaces it first: arena_realloc()). */
static void free_value(arena *a, char *p, size_t size, bool note)
{
    const struct arena__chunk *c = NULL;
    struct held h;
    char *from = p, *to;
    size_t held = size;

    if (!p || size == 0)
        return;
    wake(a);
    /* Reported before sync(): the arena's bytes stay as they were.  An
     * instrumented build knows every value's chunk: a late free is told
     * apart there first. */
    if (arena__instrumented() &&
        (late_free(a, p, size, "arena_free") || free_misused(a, p, &held, &c)))
        return;
    if (!held_by(a, p, size, "arena_free", &h))
        return;
    if (h.kind == HELD_HEAD && size > h.len - ARENA__HEAD) {
        arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_BAD_SIZE,
                       "arena_free: size %zu exceeds the %zu-byte block of the value at %p "
                       "(arena %p)",
                       size, h.len - ARENA__HEAD, (void *)p, (void *)a);
        return;
    }
    sync(a);
    if (note)
        arena__note_high(a);
    switch (h.kind) {
    case HELD_PAGE:
        a->size -= size;
        arena__page_give(&arena__pages_live(a)->cls[h.c], p, h.len);
        return;
    case HELD_HEAD:
        a->size -= size;
        memset(h.from, 0, ARENA__HEAD); /* no longer a head */
        give_block(a, h.from, h.len);
        return;
    case HELD_BARE: break;
    }
    if (is_last(a, p, held)) {
        unplace_last(a, p, held, c);
        a->size += held - size;
        return;
    }
    if (!arena__instrumented() && late_free(a, p, size, "arena_free"))
        return;
    to = p + held;
    if (c) {
        from = p - arena__hdr();
        to = p + arena__guarded_len(p, held, c->base + c->cap);
        (void)arena__instr_freed(a, c, from, p, held, to);
    }
    a->size -= size;
    give_block(a, from, (size_t)(to - from));
}

void arena_free(arena *a, void *ptr, size_t size)
{
    /* A page's block or a block after a head goes back to its class's list
     * inline, as the adapters give one back (hooks.c). */
    if (ptr && size &&
        (size <= ARENA__PAGE_BLOCK_MAX ? arena__small_give(a, (char *)ptr, size)
                                       : arena__headed_give(a, (char *)ptr, size)))
        return;
    free_value(a, (char *)ptr, size, true);
}

void arena__free_placed(arena *a, void *ptr, size_t size)
{
    free_value(a, (char *)ptr, size, false);
}

/* The value `p`, not the most recent, shrinks in place from `old_size` to
 * `new_size` bytes: the bytes past it (with its guard) go back as a free
 * block. */
static void shrink_block(arena *a, char *p, size_t old_size, size_t new_size)
{
    char *from = p + new_size, *to = p + old_size;
    if (arena__instrumented()) {
        const struct arena__chunk *c = arena__chunk_of(a, p);
        uint64_t held;
        if (!c || arena__instr_free_state(a, c, p, old_size, &held) != 0)
            return;
        from = p + arena__guarded_len(p, new_size, c->base + c->cap);
        to = p + arena__guarded_len(p, (size_t)held, c->base + c->cap);
        arena__value_resized(c, p, (size_t)held, new_size);
    }
    a->size -= old_size - new_size;
    give_block(a, from, (size_t)(to - from));
}

/* A headed value `p` whose block `h` holds `new_size` bytes keeps it; what
 * the value no longer needs past it goes back when it makes a block. */
static void resize_headed(arena *a, char *p, const struct held *h, size_t old_size, size_t new_size)
{
    char *end = h->from + h->len;
    char *to = (char *)arena__align_up((uintptr_t)p + new_size, ARENA_ALIGN);
    a->size += new_size - old_size;
    if (to < end && (size_t)(end - to) >= arena__reuse_min() + ARENA__HEAD) {
        arena__head_write(a, h->from, (size_t)(to - h->from));
        give_block(a, to, (size_t)(end - to));
    }
}

/* A headed value `p` (block `h`) that ends at the position grows in place
 * when its chunk has room: true when it did. */
static bool grow_headed_last(arena *a, char *p, const struct held *h, size_t old_size,
                             size_t new_size)
{
    char *end = h->from + h->len, *lim = current_lim(a);
    uintptr_t to;
    if (end != cursor(a) || !lim || h->from < a->chunks[a->cur].base ||
        (a->pending & ARENA__PENDING_OVER) || new_size > (size_t)(lim - p))
        return false;
    to = arena__align_up((uintptr_t)p + new_size, ARENA_ALIGN);
    if (to > (uintptr_t)lim)
        to = (uintptr_t)lim;
    set_cursor(a, (char *)to);
    arena__head_write(a, h->from, (size_t)(to - (uintptr_t)h->from));
    a->size += new_size - old_size;
    return true;
}

/* The resize of a value in a page or after a head (plain build).  A growth
 * stays only where the block ends at the position and its chunk has room; a
 * shrink stays, but with `shrink_moves` (the adapters') for one that a
 * smaller block serves: to a smaller page class, or a large value's, not
 * the most recent, to a page.  Size 0 gives it back (`p` is returned). */
static void *resize_held(arena *a, char *p, const struct held *h, size_t old_size, size_t new_size,
                         unsigned how)
{
    bool shrink_moves = (how & ARENA__RESIZE_SHRINK_MOVES) != 0;
    bool stays;
    /* A shrink forgets bytes: the size before it is a figure the program
     * saw, noted before a move counts the copy. */
    if (new_size < old_size)
        arena__note_high(a);
    if (new_size == 0) {
        free_value(a, p, old_size, false);
        return p;
    }
    /* A growth stays only where the value ends at the position, as
     * arena_realloc() promises. */
    if (new_size > old_size)
        stays = h->kind == HELD_HEAD && grow_headed_last(a, p, h, old_size, new_size);
    else
        stays = !shrink_moves || (h->kind == HELD_PAGE ? arena__small_class(new_size) == h->c
                                                       : new_size > ARENA__PAGE_BLOCK_MAX ||
                                                             h->from + h->len == cursor(a));
    if (stays && new_size > old_size)
        return p;
    if (!stays) {
        char *q = (char *)arena__reuse_alloc_as(a, new_size, !(how & ARENA__RESIZE_NO_PAGES));
        if (q) {
            memcpy(q, p, old_size < new_size ? old_size : new_size);
            free_value(a, p, old_size, false);
            return q;
        }
        if (new_size > old_size)
            return NULL;
        /* A shrink that finds no room stays where it is. */
    }
    if (h->kind == HELD_HEAD)
        resize_headed(a, p, h, old_size, new_size);
    else
        a->size += new_size - old_size;
    return p;
}

void *arena__shrink_moving(arena *a, void *ptr, size_t old_size, size_t new_size, unsigned how)
{
    char *p = (char *)ptr, *q;
    struct held h;

    /* Reported before wake() and sync(): the arena's bytes stay as they were. */
    if (grow_misused(a, p, old_size) || !held_by(a, p, old_size, "arena_realloc", &h))
        return NULL;
    sync(a);
    if (h.kind != HELD_BARE)
        return resize_held(a, p, &h, old_size, new_size, how | ARENA__RESIZE_SHRINK_MOVES);
    arena__note_high(a);
    /* The shrink to nothing gives the value back: no value of no bytes is
     * left in place. */
    if (new_size == 0) {
        free_value(a, p, old_size, false);
        return p;
    }
    if (is_last(a, p, old_size)) {
        resize_last(a, p, old_size, new_size);
        return p;
    }
    q = (char *)arena__reuse_alloc_as(a, new_size, !(how & ARENA__RESIZE_NO_PAGES));
    if (!q) {
        shrink_block(a, p, old_size, new_size);
        return p;
    }
    memcpy(q, p, new_size);
    free_value(a, p, old_size, false);
    return q;
}

/* arena_alloc_reuse() where the lists are open. */
static ARENA__NOINLINE void *alloc_listed(arena *a, size_t size)
{
    void *p;
    /* The head of its class's list, or its page's next block, inline. */
    if (size <= ARENA__PAGE_BLOCK_MAX ? (p = arena__small_take(a, size)) != NULL
                                      : (p = arena__headed_take(a, size)) != NULL)
        return p;
    return arena__reuse_alloc(a, size);
}

void *arena_alloc_reuse(arena *a, size_t size)
{
    /* A batch with no free block bumps with no call and no saved register. */
    if (size && reuse_open(a, size))
        return alloc_listed(a, size);
    return arena_alloc(a, size);
}

void *arena_realloc(arena *a, void *ptr, size_t old_size, size_t new_size)
{
    return arena__realloc_as(a, ptr, old_size, new_size, 0);
}

void *arena__realloc_as(arena *a, void *ptr, size_t old_size, size_t new_size, unsigned how)
{
    char *p = (char *)ptr;
    char *lim = current_lim(a);
    char *q;
    bool last;
    struct held h;

    /* Reported before wake() and sync(): the arena's bytes stay as they were. */
    if (p && (grow_misused(a, p, old_size) || !held_by(a, p, old_size, "arena_realloc", &h)))
        return NULL;
    if (!p)
        return arena__alloc_slow(a, new_size, ARENA_ALIGN);
    if (h.kind != HELD_BARE) {
        sync(a);
        return resize_held(a, p, &h, old_size, new_size, how);
    }
    last = is_last(a, p, old_size);
    /* A growth that fails leaves a lazy arena unwoken (lazy_full()). */
    if (new_size > old_size && !(last && new_size <= (size_t)(lim - p)) &&
        lazy_full(a, new_size, ARENA_ALIGN))
        return NULL;
    sync(a);
    if (new_size <= old_size) {
        arena__note_high(a);
        if (new_size == 0) /* the shrink to nothing gives the value back */
            free_value(a, p, old_size, false);
        else if (last)
            resize_last(a, p, old_size, new_size);
        else if (new_size < old_size)
            shrink_block(a, p, old_size, new_size);
        return p;
    }
    if (last && new_size <= (size_t)(lim - p) && !(a->pending & ARENA__PENDING_OVER)) {
        resize_last(a, p, old_size, new_size);
        return p;
    }
    q = (char *)(how & ARENA__RESIZE_NO_PAGES ? arena__reuse_alloc_as(a, new_size, false)
                                              : arena_alloc_reuse(a, new_size));
    if (q) {
        memcpy(q, p, old_size);
        free_value(a, p, old_size, false);
    }
    return q;
}

/* ---- Refs ------------------------------------------------------------------------------- */

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

    /* Misuse is reported before sync(): the arena's bytes stay as they were. */
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
    sync(a);
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
    sync(a);
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

/* ---- Lifetime ------------------------------------------------------------------------------ */

void arena_init_with(arena *a, size_t chunk_bytes, const arena_allocator *backing)
{
    *a = empty_arena;
    a->spare = ARENA__INLINE_RESETS + 1;
    if (chunk_bytes > ARENA_REF_MAX)
        chunk_bytes = ARENA_REF_MAX;
    arena__cold(a)->budget = chunk_bytes ? chunk_bytes : ARENA_DEFAULT_CHUNK;
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
    sync(a);
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
            arena__expired(a, i, a->chunks[i].base);
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

/* Keeps the spares that fit `limit` beside the chunks in use (and the
 * caller's buffer), taken in order of use: those this batch used first,
 * then by the batch that last used them, the latest first, each in index
 * order; frees the rest, and closes up the index, whose order stays.
 * O(spares) for each batch that spares were last used in. */
static void keep_within(arena *a, size_t limit)
{
    size_t kept = arena__cold(a)->retained;
    uint32_t i, j, age = 0, b = arena__cold(a)->batch;

    for (i = a->nused; i < a->nchunks; i++)
        if (a->chunks[i].base != a->buf)
            kept -= usable(a, &a->chunks[i]);
    do {
        uint32_t next = UINT32_MAX;
        for (i = j = a->nused; i < a->nchunks; i++) {
            struct entry e = get_entry(a, i);
            size_t cap = usable(a, &e.chunk);
            uint32_t since = b - e.slot.last;
            if (since == age && e.chunk.base != a->buf) {
                if (kept > limit || cap > limit - kept) {
                    arena__cold(a)->retained -= cap;
                    free_chunk(a, e.chunk);
                    continue;
                }
                kept += cap;
            } else if (since > age && since < next) {
                next = since;
            }
            put_entry(a, j++, e);
        }
        a->nchunks = j;
        age = next;
    } while (age != UINT32_MAX);
}

static bool expired(const arena *a, uint32_t i);

/* Frees the spares (at [nused, nchunks)) that the policy gives back whatever
 * their size (expired()) when `reset` is set; then, while the arena retains
 * more than `limit` bytes, keeps the spares that fit the limit
 * (keep_within()) and frees the others.  The caller's buffer is never freed
 * (and counts).  An arena left with one chunk or none gives its heap index
 * back too.  The spares keep their order.  O(1) when there is nothing to
 * free but for a reset's O(spares). */
static void free_spares(arena *a, size_t limit, bool reset)
{
    uint32_t i, j;

    for (i = j = a->nused; reset && i < a->nchunks; i++) {
        struct entry e = get_entry(a, i);
        if (e.chunk.base != a->buf && expired(a, i)) {
            arena__cold(a)->retained -= usable(a, &e.chunk);
            free_chunk(a, e.chunk);
            continue;
        }
        put_entry(a, j++, e);
    }
    if (reset)
        a->nchunks = j;
    if (arena__cold(a)->retained > limit && a->nchunks > a->nused)
        keep_within(a, limit);
    shrink_index(a);
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

/* Makes the arena empty (size 0, every mark expired), every chunk a spare,
 * with the caller's buffer, or else the first chunk of the budget's size, or
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

/* The retention policy.  A batch's demand is the capacity of the chunks it
 * used, those of rewound scopes included: what the same batch needs to run
 * again without a backing call.  The arena keeps the largest demand of each
 * block of ARENA__BLOCK batches (counted from the arena's start, `batch`),
 * for the latest ARENA__BLOCKS blocks, the block under way included: O(1)
 * per batch, in a fixed few words.  Those blocks are the batches the policy
 * covers at a reset: the last 225 to 256 (ARENA_RETAIN_BATCHES), as the
 * batch is early or late in its block.  The target is the largest demand in
 * them; a reset keeps the chunks they used, the most recently used first, up
 * to twice the target in all, and frees the others (those last used before
 * them first).  So a steady workload keeps exactly what it uses; a shape
 * that recurs within ARENA_RECUR_BATCHES batches (and in fact within 225)
 * keeps its chunks, its demand in the target; a workload that alternates
 * between shapes keeps what each needs, both within twice the larger; a spike
 * that does not recur goes back once its batch leaves the blocks (after 225
 * to 256 batches), or earlier if the chunks of the batches since outgrow
 * twice the target; and what a reset keeps is at most twice the largest
 * demand of the last ARENA_RETAIN_BATCHES batches. */

/* Forgets the history, as a release does: as if the last
 * ARENA_RETAIN_BATCHES batches had used only `keep` bytes (what stays: the
 * caller's buffer), counting batches from 0 again. */
static void forget_history(arena *a, size_t keep)
{
    uint32_t i;
    for (i = 0; i < ARENA__BLOCKS; i++)
        arena__cold(a)->demand[i] = keep;
    arena__cold(a)->batch = 0;
    arena__cold(a)->flags &= ~(uint32_t)(ARENA__OUTGREW | ARENA__OUTGREW_LAST);
}

/* Notes `k` batches that each demanded `demand`, from `batch` on (the
 * caller moves `batch` on).  O(blocks): a block begun anew forgets the
 * demand of the block it replaces. */
static void note_batches(arena *a, size_t demand, uint32_t k)
{
    uint32_t b = arena__cold(a)->batch;

    while (k > 0) {
        uint32_t in = b % ARENA__BLOCK, n = ARENA__BLOCK - in;
        size_t *most = &arena__cold(a)->demand[b / ARENA__BLOCK % ARENA__BLOCKS];
        if (in == 0 || demand > *most)
            *most = demand;
        if (n > k)
            n = k;
        b += n;
        k -= n;
    }
}

/* At the end of a batch: notes its demand (`demand`, the chunks a guarded
 * batch retired, and those it used), and returns the byte bound, twice the
 * target. */
static size_t retention_target(arena *a, size_t demand)
{
    size_t most = 0;
    uint32_t i;

    for (i = 0; i < a->nchunks; i++)
        if (used_now(a, i))
            demand += usable(a, &a->chunks[i]);
    note_batches(a, demand, 1);
    for (i = 0; i < ARENA__BLOCKS; i++)
        if (arena__cold(a)->demand[i] > most)
            most = arena__cold(a)->demand[i];
    return most > SIZE_MAX / 2 ? SIZE_MAX : 2 * most;
}

/* True when chunk i, in batch `batch`, was last used before the blocks the
 * policy covers. */
static bool expired(const arena *a, uint32_t i)
{
    uint32_t b = arena__cold(a)->batch;
    return b - slots(a)[i].last > b % ARENA__BLOCK + (ARENA__BLOCKS - 1) * ARENA__BLOCK;
}

/* Counts the batch as ended: the next one begins. */
static void end_batch(arena *a)
{
    uint32_t flags = arena__cold(a)->flags & ~(uint32_t)(ARENA__OUTGREW | ARENA__OUTGREW_LAST);
    if (arena__cold(a)->flags & ARENA__OUTGREW)
        flags |= ARENA__OUTGREW_LAST;
    arena__cold(a)->flags = flags;
    arena__cold(a)->batch++;
    new_batch_counts(a, 1);
}

/* A reset that keeps what the policy keeps, and at most `retain_limit`. */
static ARENA__NOINLINE void reset_to_slow(arena *a, size_t retain_limit)
{
    size_t most, demand = 0;
    uint32_t in_use;

    if (!arena__cleanups_end(a, 0, retain_limit == SIZE_MAX ? "arena_reset" : "arena_reset_to"))
        return;
    sync(a);
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
    sync(a);
    free_spares(a, max_retained, false);
    check_over(a);
    published(a);
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
    /* (A lazy arena has no spans: its bookkeeping is not written yet.) */
    for (i = a->lazy ? 0 : arena__cold(a)->ndead; i-- > 0;) {
        if (s > arena__cold(a)->dead[i].to)
            return true;
        if (s > arena__cold(a)->dead[i].from)
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
    uint32_t n = arena__cold(a)->ndead;
    if (s == a->saves)
        return;
    while (n > 0 && arena__cold(a)->dead[n - 1].from >= s)
        n--;
    if (n == ARENA__DEAD_SPANS) {
        uint32_t i;
        for (i = 1; i < n; i++)
            arena__cold(a)->dead[i - 1] = arena__cold(a)->dead[i];
        n--;
    }
    arena__cold(a)->dead[n].from = s;
    arena__cold(a)->dead[n].to = a->saves;
    arena__cold(a)->ndead = n + 1;
    /* A serial no mark carries: `saves` is then no expired mark's serial,
     * which lets the inline rewind (arena__rewind_window) know the latest
     * mark valid from `saves` and `expired` alone. */
    a->saves++;
}

/* The invariant of the spans: at most ARENA__DEAD_SPANS, each non-empty,
 * in order and apart, within the serials handed out. */
static bool spans_ordered(const arena *a)
{
    uint64_t low = 0;
    uint32_t i;
    if (arena__cold(a)->ndead > ARENA__DEAD_SPANS || a->expired > a->saves)
        return false;
    for (i = 0; i < arena__cold(a)->ndead; i++) {
        if (arena__cold(a)->dead[i].from < low ||
            arena__cold(a)->dead[i].from >= arena__cold(a)->dead[i].to ||
            arena__cold(a)->dead[i].to > a->saves)
            return false;
        low = arena__cold(a)->dead[i].to + 1;
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
    uint32_t in_use, i;
    uint64_t taken = 0;
    bool regular = false, guarded;

    /* Reported before wake() and sync(): the arena's bytes stay as they were. */
    if (!mark_valid(a, m)) {
        arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_BAD_MARK,
                      "arena_rewind: mark %llu of arena %p has expired (by a reset, a release, "
                      "or a rewind to an earlier mark: scopes ended out of order), or is not "
                      "this arena's",
                      (unsigned long long)m.serial, (void *)a);
        return false;
    }
    if (!arena__cleanups_end(a, m.serial, "arena_rewind"))
        return false;
    sync(a);
    arena__note_high(a);
    arena__reuse_forget(a, m.serial);
    arena__buffer_reused(a);
    in_use = a->nused;
    guarded = guarded_now(a);
    if (!m.pos && !guarded) {
        i = pick_current(a, m.nused, in_use);
        if (i < in_use) {
            taken = slots(a)[i].key;
            regular = true;
        }
    }
    drop_chunks_from(a, m.nused);
    if (guarded)
        (void)retire_chunks(a, m.nused, in_use, ARENA__END_REWIND);
    else
        restore_spares(a, m.nused, in_use);
    a->size = m.size;
    /* A rewind to nothing (a scratch scope's end) ends a batch that the
     * next scope begins: decided anew, before a chunk is kept current. */
    if (!m.pos && m.nused == 0 && ((a->pending & ARENA__PENDING_GUARD) || arena__guard_every())) {
        guard_end(a, true);
        regular = regular && !guarded_now(a);
    }
    if (m.pos) {
        /* Chunks between m.cur and m.nused hold only oversized values stored
         * before the mark, so the mark's chunk is all that expires here: its
         * tail, and below the mark what was stored after a value before it
         * was freed or shrunk below it (the position then goes back up to the
         * mark's: arena_size() and the next address are the mark's). */
        char *from = arena__cut(a, m.cur, m.pos, m.serial);
        enter_chunk(a, m.cur, m.pos);
        arena__expired(a, m.cur, from);
        if (guarded) {
            retire_tail(a, m.cur, m.pos);
            enter_chunk(a, m.cur, m.pos);
        }
    } else if (regular) {
        /* No chunk was current at the mark (a scope begun on an empty
         * arena, as a scratch arena is between scopes): of the chunks taken
         * since, the one a reset would pick stays current, empty, as a reset
         * leaves it (so a batch that begins so goes on as the next one, which
         * begins with a reset, will).
         * The next such scope then stores into it through the inline window
         * and ends with the inline rewind, instead of taking it back from
         * the spares at its first value and giving it back at its end. */
        for (i = m.nused; slots(a)[i].key != taken; i++)
            ;
        take_spare(a, i);
        enter_chunk(a, m.nused, a->chunks[m.nused].base);
    } else {
        leave_chunks(a);
    }
    expire_marks_after(a, m.serial);
    if (ARENA_CHECKED)
        arena_check(a);
    published(a);
    return true;
}

void arena__rewind_slow(arena *a, arena_mark m) { (void)arena__rewind(a, m); }

/* ---- Limits, counters and names --------------------------------------------------------- */

/* Enters or leaves the state of an arena that holds more than its limit
 * (ARENA__PENDING_OVER: the window closed, allocations refused), after the
 * limit or what the arena holds changed.  Requires sync() first. */
static void check_over(arena *a)
{
    const struct arena__cold *c = arena__cold(a);
    bool over = (c->flags & ARENA__LIMITED) && c->counts.held > c->set.limit;
    if (over == ((a->pending & ARENA__PENDING_OVER) != 0))
        return;
    if (over)
        a->pending |= ARENA__PENDING_OVER;
    else
        a->pending &= ~(uint32_t)ARENA__PENDING_OVER;
    if (c->lim)
        set_cursor(a, cursor(a));
}

/* The retention (arena_retained()'s capacity) a reset may keep under the
 * arena's limit, which counts what it holds: the limit less what it holds
 * beside its chunks' capacities (their overhead, the index, the reuse
 * table), which keeping fewer chunks can only lower, and with the caller's
 * buffer, which it does not hold. */
static size_t limited_retention(const arena *a, size_t retain_limit)
{
    const struct arena__cold *c = arena__cold(a);
    size_t buf = a->buf && a->nchunks ? a->chunks[0].cap : 0, beside, room;
    if (!(c->flags & ARENA__LIMITED))
        return retain_limit;
    beside = c->counts.held - (c->retained - buf);
    room = c->set.limit > beside ? c->set.limit - beside : 0;
    if (room > retain_limit - buf || retain_limit < buf)
        return retain_limit;
    return room + buf;
}

void arena_set_limit(arena *a, size_t limit)
{
    sync(a);
    arena__cold(a)->set.limit = limit;
    arena__cold(a)->set.changed = 1;
    if (limit == SIZE_MAX)
        arena__cold(a)->flags &= ~(uint32_t)ARENA__LIMITED;
    else
        arena__cold(a)->flags |= ARENA__LIMITED;
    check_over(a);
    published(a);
}

size_t arena_limit(const arena *a)
{
    if (a->lazy || !(arena__cold(a)->flags & ARENA__LIMITED))
        return SIZE_MAX;
    return arena__cold(a)->set.limit;
}

/* Charges `n` bytes to `b`: false, nothing charged, when that would cross
 * its limit (nothing is ever refused to no bytes). */
static bool join_charge(arena_budget *b, size_t n) { return n == 0 || arena__budget_charge(b, n); }

/* The bytes of the arena's spares but the caller's buffer: what
 * arena_trim(a, 0) gives back (and the heap index, if that leaves the
 * arena one chunk or none). */
static size_t spare_bytes(const arena *a)
{
    size_t n = 0;
    uint32_t i;
    for (i = a->nused; i < a->nchunks; i++)
        if (a->chunks[i].base != a->buf)
            n += a->chunks[i].cap;
    return n;
}

bool arena_set_budget(arena *a, arena_budget *b)
{
    struct arena__cold *c;

    wake(a); /* a lazy arena holds nothing: it joins */
    c = arena__cold(a);
    if (c->set.budget == b)
        return true;
    if (b && !join_charge(b, c->counts.held)) {
        /* Without its spares, charged first so that no other arena takes
         * the room meanwhile. */
        size_t need = c->counts.held - spare_bytes(a);
        if (need == c->counts.held || !join_charge(b, need))
            return false;
        arena_trim(a, 0);
        arena__budget_refund(b, need - c->counts.held);
    }
    if (c->set.budget)
        arena__budget_refund(c->set.budget, c->counts.held);
    c->set.budget = b;
    c->set.changed = 1;
    return true;
}

void arena_on_limit(arena *a, arena_limit_fn *fn, void *ctx)
{
    wake(a);
    arena__cold(a)->set.on_limit = fn;
    arena__cold(a)->set.on_limit_ctx = fn ? ctx : NULL;
    arena__cold(a)->set.changed = 1;
}

void arena_set_name(arena *a, const char *name)
{
    wake(a);
    arena__cold(a)->set.name = name;
    arena__cold(a)->set.changed = 1;
    published(a);
}

const char *arena_name(const arena *a) { return a->lazy ? NULL : arena__cold(a)->set.name; }

bool arena_set_guard(arena *a, bool on)
{
    struct arena__guard_state *g;
    sync(a);
    g = &arena__cold(a)->guard;
    if (!on) {
        g->flags &= ~(uint32_t)ARENA__GUARD_ON;
        if (!(g->flags & ARENA__GUARD_NOW))
            a->pending &= ~(uint32_t)ARENA__PENDING_GUARD;
        return true;
    }
    if (!arena_guard_available() || a->buf || (arena__cold(a)->flags & ARENA__FIXED))
        return false;
    g->flags |= ARENA__GUARD_ON;
    a->pending |= ARENA__PENDING_GUARD;
    if (a->nused == 0)
        guard_begin(a);
    return true;
}

bool arena_guarded(const arena *a) { return !a->lazy && guarded_now(a); }

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
    inline_resets = a->spare != spare_full(a);
    out->held = c->counts.held;
    out->peak_held = c->counts.peak_held;
    out->reused = c->counts.reused;
    out->backing_calls = c->counts.calls;
    out->limit_hits = c->counts.limit_hits;
    out->resets = c->counts.resets;
    if (inline_resets && a->spare)
        out->resets += spare_full(a) - a->spare;
    out->peak_retained = c->counts.peak_retained;
    out->peak_retained_batch = inline_resets ? out->retained : c->counts.peak_retained_batch;
    if (c->set.node) /* the report shows what this call shows (arena/report.h) */
        arena__publish(c->set.node, c->set.name, out);
}

size_t arena_retained(const arena *a) { return a->lazy ? a->first.cap : arena__cold(a)->retained; }

/* ---- Consistency ------------------------------------------------------------------------------ */

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

bool arena_check(const arena *a)
{
    size_t held = 0, used = 0;
    uint32_t i;
    char *pos = cursor(a);

    wake_const(a);

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
        if (c->base != a->buf && c->cap < arena__chunk_extra(0, budget(a)))
            return arena__corrupt(ARENA__ABOUT_ARENA(a),
                                  "arena_check: arena %p: chunk %u is smaller than its overhead",
                                  (const void *)a, (unsigned)i);
        held += usable(a, c);
        if (i < a->nused)
            used += usable(a, c);
        if (!(c->base == a->buf && (arena__cold(a)->flags & ARENA__BUF_OPEN)) &&
            !arena__verify(a, i, c->base, c->base + c->cap))
            return false;
    }
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
    if (arena__instrumented() && ((uintptr_t)pos & (ARENA__GRANULE - 1)) &&
        pos != arena__cold(a)->lim)
        return arena__corrupt(ARENA__ABOUT_ARENA(a),
                              "arena_check: arena %p: position %p is not on a granule",
                              (const void *)a, (void *)pos);
    if (arena__cold(a)->lim) {
        const struct arena__chunk *c = &a->chunks[a->cur];
        if (a->cur >= a->nused || arena__cold(a)->lim != c->base + c->cap || pos < c->base ||
            pos > arena__cold(a)->lim)
            return arena__corrupt(ARENA__ABOUT_ARENA(a),
                                  "arena_check: arena %p: position %p outside current chunk %u",
                                  (const void *)a, (void *)pos, (unsigned)a->cur);
    } else if (pos || a->ptr || a->end) {
        return arena__corrupt(ARENA__ABOUT_ARENA(a),
                              "arena_check: arena %p: a position without a current chunk",
                              (const void *)a);
    }
    if (a->ptr && (a->ptr > a->end || ((uintptr_t)a->end & (ARENA_ALIGN - 1)) ||
                   arena__align_up((uintptr_t)a->ptr, ARENA_ALIGN) > (uintptr_t)a->end ||
                   a->end > arena__cold(a)->lim))
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
