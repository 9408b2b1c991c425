/* SPDX-License-Identifier: MIT */
/*
 * The retention policy.  A batch's demand is the capacity of the chunks it
 * used, those of rewound scopes included: what the same batch needs to run
 * again without a backing call.  The arena keeps the largest demand of each
 * block of ARENA__BLOCK batches (counted from the arena's start, `batch`),
 * for the latest ARENA__BLOCKS blocks, the block under way included: O(1)
 * per batch, in a fixed few words.  Those blocks are the batches the policy
 * covers at a reset: the last 225 to 256 (ARENA_RETAIN_BATCHES), as the
 * batch is early or late in its block.  The target is the largest demand in
 * them.  A reset keeps the chunks they used, the most recently used first,
 * up to twice the target in all.  It frees the others, those last used
 * before them first.  So:
 *
 *   - a steady workload keeps exactly what it uses;
 *   - a shape that recurs within ARENA_RECUR_BATCHES batches (in fact
 *     within 225) keeps its chunks, since its demand is in the target;
 *   - a workload that alternates between shapes keeps what each needs, both
 *     within twice the larger;
 *   - a spike that does not recur goes back once its batch leaves the
 *     blocks (after 225 to 256 batches), or earlier if the chunks of the
 *     batches since outgrow twice the target;
 *   - what a reset keeps is at most twice the largest demand of the last
 *     ARENA_RETAIN_BATCHES batches.
 *
 * Within a batch, a new oversized chunk gives back the spare that a rewind
 * of a smaller one left (free_outgrown()), so that scopes of a growing
 * value do not hoard chunks.
 *
 * A part of src/arena.c, which includes it (see there): never compiled
 * alone.
 */
#ifndef ARENA__IN_ARENA_C
#  error "src/arena_retain.inc.c is a part of src/arena.c, never compiled alone"
#endif

/* `k` batches ended (resets): the batch peaks start again. */
static void new_batch_counts(arena *a, uint32_t k)
{
    struct arena__counts *c = &arena__cold(a)->counts;
    c->resets += k;
    c->peak_retained_batch = arena__cold(a)->retained;
}

/* Forgets the history, as a release does: as if the last
 * ARENA_RETAIN_BATCHES batches had used only `keep` bytes (what stays: the
 * caller's buffer), counting batches from 0 again. */
static void forget_history(arena *a, size_t keep)
{
    struct arena__cold *c = arena__cold(a);
    uint32_t i;
    for (i = 0; i < ARENA__BLOCKS; i++)
        c->demand[i] = keep;
    c->batch = 0;
    c->flags &= ~(uint32_t)(ARENA__OUTGREW | ARENA__OUTGREW_LAST);
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

/* True when chunk i has aged out of the history: in batch `batch`, it was
 * last used before the blocks the policy covers. */
static bool aged_out(const arena *a, uint32_t i)
{
    uint32_t b = arena__cold(a)->batch;
    return b - slots(a)[i].last > b % ARENA__BLOCK + (ARENA__BLOCKS - 1) * ARENA__BLOCK;
}

/* Counts the batch as ended: the next one begins. */
static void end_batch(arena *a)
{
    struct arena__cold *c = arena__cold(a);
    uint32_t flags = c->flags & ~(uint32_t)(ARENA__OUTGREW | ARENA__OUTGREW_LAST);
    if (c->flags & ARENA__OUTGREW)
        flags |= ARENA__OUTGREW_LAST;
    c->flags = flags;
    c->batch++;
    new_batch_counts(a, 1);
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

/* Frees the spares (at [nused, nchunks)) that the policy gives back whatever
 * their size (aged_out()) when `reset` is set; then, while the arena retains
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
        if (e.chunk.base != a->buf && aged_out(a, i)) {
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

/* After a new chunk of `cap` bytes for an oversized value, gives back the
 * largest spare allocated in this batch (a rewind of it left it) that is
 * smaller than the new one and too large to serve as a regular chunk.
 * Scopes of a value growing from one to the next then leave one chunk
 * behind, not one per size; a batch that never ends has no reset to bound
 * them.  Spares of earlier batches are left to the retention policy: the
 * workload may still need them.  And nothing goes back in a batch that
 * follows one that gave chunks back so: if it is of the same shape, it
 * allocates again, at their steps, the chunks the last one gave back, and
 * would otherwise give back in turn some it used before, for the next batch
 * to allocate again; once it keeps them, the next one needs no new chunk.
 * Spares keep their order. */
static void free_outgrown(arena *a, size_t cap)
{
    struct arena__cold *k = arena__cold(a);
    size_t most = 0;
    uint32_t i, worst = UINT32_MAX;
    struct arena__chunk c;

    if (k->flags & ARENA__OUTGREW_LAST)
        return;
    for (i = a->nused; i < a->nchunks; i++) {
        size_t u = usable(a, &a->chunks[i]);
        if (slots(a)[i].key >= k->born && u < cap && u > regular_max(a) && u != grown_cap(a) &&
            u > most) {
            most = u;
            worst = i;
        }
    }
    if (worst == UINT32_MAX)
        return;
    c = a->chunks[worst];
    forget_spare(a, worst);
    k->retained -= most;
    free_chunk(a, c);
    k->flags |= ARENA__OUTGREW;
}
