/* SPDX-License-Identifier: MIT */
/*
 * Limits: what the arena takes from its backing allocator and gives back,
 * counted for arena_get_stats() and charged to the arena's limit and its
 * group budget, which may refuse it (the callback of arena_on_limit() told);
 * the arena's state while it holds more than its limit; and the calls that
 * set them.
 *
 * A part of src/arena.c, which includes it (see there): never compiled
 * alone.
 */
#ifndef ARENA__IN_ARENA_C
#  error "src/arena_limits.inc.c is a part of src/arena.c, never compiled alone"
#endif

/* Tells the arena's callback of a refused request of `n` bytes; without
 * one, the trace (ARENA_LIMIT_TRACE) of a limit's refusal. */
static ARENA__NOINLINE void refused(arena *a, arena_limit_cause cause, size_t n)
{
    struct arena__cold *c = arena__cold(a);
    const struct arena__settings *s = &c->set;
    arena_limit_event e;
    if (c->flags & ARENA__QUIET)
        return;
    c->counts.limit_hits++;
    if (s->node) /* the report counts it now, not at the arena's next call */
        arena__publish_arena(a);
    if (!s->on_limit && cause == ARENA_LIMIT_BACKING)
        return; /* out of memory: never printed */
    e.arena = a;
    e.name = s->name;
    e.cause = cause;
    e.limit_name = s->name;
    e.limit = SIZE_MAX;
    e.held = c->counts.held;
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

/* Enters or leaves the state of an arena that holds more than its limit
 * (ARENA__PENDING_OVER: the window closed, allocations refused), after the
 * limit or what the arena holds changed.  Requires catch_up() first. */
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
    struct arena__cold *c = arena__cold(a);
    catch_up(a);
    c->set.limit = limit;
    c->set.changed = 1;
    if (limit == SIZE_MAX)
        c->flags &= ~(uint32_t)ARENA__LIMITED;
    else
        c->flags |= ARENA__LIMITED;
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
    struct arena__cold *c = arena__cold(a);
    wake(a);
    c->set.on_limit = fn;
    c->set.on_limit_ctx = fn ? ctx : NULL;
    c->set.changed = 1;
}
