/* SPDX-License-Identifier: MIT */
/*
 * The arena's half of guarded batches (arena/guard.h; the page layer, the
 * quarantine and the fault reporter: guard.c).  A batch is decided guarded
 * or not as it begins (guard_begin()), so that all the chunks in use of a
 * guarded batch are the page layer's (their slots say `paged`) and no spare
 * ever is: a guarded batch takes no spare, and its end retires its chunks
 * (retire_chunks(), retire_tail()) instead of keeping them.  Placement is
 * the same, so values land at the offsets an unguarded batch gives them.
 * Whether the batch in progress is guarded (guarded_now()) is asked all over
 * arena.c, which defines it before the chunk index.
 *
 * A part of src/arena.c, which includes it (see there): never compiled
 * alone.
 */
#ifndef ARENA__IN_ARENA_C
#  error "src/arena_guard.inc.c is a part of src/arena.c, never compiled alone"
#endif

/* A slot's `paged`: a chunk of the page layer's (PAGED), whose pages past a
 * rewind's mark retired with its guard page (PAGED_CUT). */
#define PAGED     1u
#define PAGED_CUT 2u

/* Decides whether the batch beginning now is guarded: every batch of an
 * arena that asked (ARENA__GUARD_ON), else, while the process samples,
 * one drawn for an arena on the C heap.  An unguarded batch of a sampled
 * arena lets the inline resets count down only the batches before the next
 * decision (`cut`: src/guard.c), so that the library sees it begin; a
 * guarded one, or every batch of an arena that asked, has its ends come to
 * the library (ARENA__PENDING_GUARD).  Requires no chunk in use and catch_up()
 * in this call (`countdown` is at its start). */
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
    a->countdown = countdown_start(a);
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

    /* An enclosing mark may lie as high as `keep` (guard_keep()). */
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

/* Before the most recent value of the current chunk of `a` (its guard state
 * `g`) is resized from `old_size` to `new_size`: a mark taken before a
 * shrink may lie above the position the shrink leaves, so no rewind of a
 * guarded batch retires below that (retire_tail()). */
static void guard_keep(arena *a, struct arena__guard_state *g, size_t old_size, size_t new_size)
{
    if (ARENA__UNLIKELY(g->flags & ARENA__GUARD_NOW) && new_size < old_size &&
        (!g->keep || cursor(a) > g->keep))
        g->keep = cursor(a);
}

bool arena_set_guard(arena *a, bool on)
{
    struct arena__guard_state *g;
    catch_up(a);
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
