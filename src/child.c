/* SPDX-License-Identifier: MIT */
/*
 * Child arenas: an arena whose chunks are values of another arena.
 *
 * The child's backing allocator takes its chunks from the parent as
 * arena_allocator_of() does (hooks.c): a block rounded to its size class,
 * ARENA_ALIGN bytes into a value of the parent.  It gives them back the
 * same way, to the parent's free blocks, from which the next chunk of the
 * same size is taken at once.  So a child made, used and released in every
 * step of a long batch of its parent costs the parent no backing call and
 * no growth once warm, O(1) per chunk each way.
 *
 * The child's memory dies with the parent's batch, or with the parent's
 * scope it was taken in, so the child must die with it: while the child
 * holds memory of the parent (chunks, its index, its lists of free blocks)
 * the parent holds a cleanup, the child's `tie`, that releases the child.
 * The tie is pushed by the child's first backing call, and pushed again,
 * the old one cancelled, by a backing call after the parent took a mark.
 * A tie runs at a rewind to a mark taken before it.  So whenever the child
 * took memory after the parent's latest mark, the latest tie is newer than
 * that mark, and a rewind that forgets any of the child's memory releases
 * the child first.  It is cancelled when a release (or a
 * reset to nothing) leaves the child holding nothing of the parent's, so
 * that a child that is released and dropped (a struct on the stack) leaves
 * nothing on the parent that names it, and the tie's record goes back to
 * the parent's free blocks for the next child's.  When the tie runs, it
 * forgets itself first: the release it makes must not cancel the cleanup
 * that is running.
 */
#include "reuse.h"

static void child_die(void *ctx)
{
    arena *child = (arena *)ctx;
    arena__cold(child)->tie = NULL;
    arena_release(child);
}

/* Memory of the parent for the child, under a tie newer than the parent's
 * latest mark (see the top).  A failure leaves the parent as it was.  None
 * while the parent runs its cleanups (one of them uses the child): what it
 * gave then would die with the end under way, and no tie can be pushed. */
static void *child_alloc(void *ctx, size_t size)
{
    arena *child = (arena *)ctx;
    struct arena__cold *k = arena__cold(child);
    arena_cleanup *old = k->tie, *tie = old;
    void *p;

    if (arena__cleaning(k->parent))
        return NULL;
    if (!old || arena__cleanup_serial(old) < k->parent->saves) {
        tie = arena_cleanup_push(k->parent, child_die, child);
        if (!tie)
            return NULL;
    }
    /* The ties given back here are this call's own bookkeeping, which
     * the parent's peaks do not count (arena__cleanup_drop()). */
    p = arena__nested_alloc(k->parent, size);
    if (!p) {
        if (tie != old)
            arena__cleanup_drop(k->parent, tie);
        return NULL;
    }
    if (tie != old) {
        if (old)
            arena__cleanup_drop(k->parent, old);
        k->tie = tie;
    }
    return p;
}

static void child_free(void *ctx, void *ptr, size_t size)
{
    arena *child = (arena *)ctx;
    arena__nested_free(arena__cold(child)->parent, ptr, size);
}

void arena__child_idle(arena *a)
{
    struct arena__cold *k = arena__cold(a);
    if (k->tie && a->nchunks == 0 && k->ncap <= 1 && !k->reuse) {
        arena_cleanup_cancel(k->parent, k->tie);
        k->tie = NULL;
    }
}

void arena_init_child(arena *child, arena *parent, size_t chunk_bytes)
{
    arena_allocator al;

    if (chunk_bytes == 0) {
        size_t size = 0;
        if (!parent->lazy)
            size = arena__cold(parent)->chunk_size;
        chunk_bytes = (size ? size : ARENA_DEFAULT_CHUNK) / 4;
    }
    al.alloc = child_alloc;
    al.free = child_free;
    al.ctx = child;
    arena_init_with(child, chunk_bytes, &al);
    arena__cold(child)->parent = parent;
}
