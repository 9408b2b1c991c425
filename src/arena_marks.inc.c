/* SPDX-License-Identifier: MIT */
/*
 * Marks and rewind.
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
 * spans (a scan of at most four).
 *
 * A part of src/arena.c, which includes it (see there): never compiled
 * alone.
 */
#ifndef ARENA__IN_ARENA_C
#  error "src/arena_marks.inc.c is a part of src/arena.c, never compiled alone"
#endif

/* True when the mark of serial `s` has not expired.  A serial above `saves`
 * was never handed out by this arena (a zeroed mark's 0 is never valid).
 * The spans are scanned newest first: a rewind to a recent mark (the
 * innermost scope) is above the newest span, and done in one comparison. */
static bool serial_live(const arena *a, uint64_t s)
{
    const struct arena__cold *c = arena__cold(a);
    uint32_t i;
    if (s <= a->expired || s > a->saves)
        return false;
    /* (A lazy arena has no spans: its bookkeeping is not written yet.) */
    for (i = a->lazy ? 0 : c->ndead; i-- > 0;) {
        if (s > c->dead[i].to)
            return true;
        if (s > c->dead[i].from)
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
    struct arena__cold *c = arena__cold(a);
    uint32_t n = c->ndead;
    if (s == a->saves)
        return;
    while (n > 0 && c->dead[n - 1].from >= s)
        n--;
    if (n == ARENA__DEAD_SPANS) {
        uint32_t i;
        for (i = 1; i < n; i++)
            c->dead[i - 1] = c->dead[i];
        n--;
    }
    c->dead[n].from = s;
    c->dead[n].to = a->saves;
    c->ndead = n + 1;
    /* A serial no mark carries: `saves` is then no expired mark's serial,
     * which lets the inline rewind (arena__rewind_window) know the latest
     * mark valid from `saves` and `expired` alone. */
    a->saves++;
}

/* The invariant of the spans: at most ARENA__DEAD_SPANS, each non-empty,
 * in order and apart, within the serials handed out. */
static bool spans_ordered(const arena *a)
{
    const struct arena__cold *c = arena__cold(a);
    uint64_t low = 0;
    uint32_t i;
    if (c->ndead > ARENA__DEAD_SPANS || a->expired > a->saves)
        return false;
    for (i = 0; i < c->ndead; i++) {
        if (c->dead[i].from < low || c->dead[i].from >= c->dead[i].to || c->dead[i].to > a->saves)
            return false;
        low = c->dead[i].to + 1;
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

/* The end of a rewind to a mark taken at m.pos in chunk m.cur.  The chunks
 * between m.cur and m.nused hold only oversized values stored before the
 * mark, so the mark's chunk is all that expires here: its tail, and below
 * the mark what was stored after a value before it was freed or shrunk
 * below it (the position then goes back up to the mark's: arena_size() and
 * the next address are the mark's).  A guarded batch retires the tail's
 * pages. */
static void rewind_in_chunk(arena *a, arena_mark m, bool guarded)
{
    char *from = arena__cut(a, m.cur, m.pos, m.serial);
    enter_chunk(a, m.cur, m.pos);
    arena__values_dropped(a, m.cur, from);
    if (guarded) {
        retire_tail(a, m.cur, m.pos);
        enter_chunk(a, m.cur, m.pos);
    }
}

/* The end of a rewind to a mark taken while no chunk was current (a scope
 * begun on an empty arena, as a scratch arena is between scopes).  Of the
 * chunks taken since, the one a reset would pick (of key `key`, among the
 * spares from index `from` on) stays current, empty, as a reset leaves it.
 * A batch that begins so then goes on as the next one, which begins with a
 * reset, will.  The next such scope then stores into it through the
 * inline window and ends with the inline rewind, instead of taking it back
 * from the spares at its first value and giving it back at its end. */
static void keep_current(arena *a, uint32_t from, uint64_t key)
{
    uint32_t i;
    for (i = from; slots(a)[i].key != key; i++)
        ;
    take_spare(a, i);
    enter_chunk(a, from, a->chunks[from].base);
}

bool arena__rewind(arena *a, arena_mark m)
{
    uint32_t in_use;
    uint64_t taken = 0;
    bool regular = false, guarded;

    /* Reported before wake() and catch_up(): the arena's bytes stay as they were. */
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
    catch_up(a);
    arena__note_high(a);
    arena__reuse_forget(a, m.serial);
    arena__buffer_reused(a);
    in_use = a->nused;
    guarded = guarded_now(a);
    if (!m.pos && !guarded) {
        uint32_t i = pick_current(a, m.nused, in_use);
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
    if (m.pos)
        rewind_in_chunk(a, m, guarded);
    else if (regular)
        keep_current(a, m.nused, taken);
    else
        leave_chunks(a);
    expire_marks_after(a, m.serial);
    if (ARENA_CHECKED)
        arena_check(a);
    published(a);
    return true;
}

void arena__rewind_slow(arena *a, arena_mark m) { (void)arena__rewind(a, m); }
