/* SPDX-License-Identifier: MIT */
/*
 * Group limits (arena_budget: thread.h): one atomic count of the bytes the
 * arenas charging it hold, against a limit.  A charge is a compare-and-swap
 * that never takes the count past the limit, so arenas on many threads
 * racing for the last bytes together never exceed it.
 */
#include <stdlib.h>

#include "arena/thread.h"
#include "internal.h"

void arena__budget_init(arena_budget *b, size_t limit, const char *name)
{
    atomic_init(&b->used, 0);
    atomic_init(&b->limit, limit);
    b->name = name;
}

arena_budget *arena_budget_create(size_t limit, const char *name)
{
    arena_budget *b = (arena_budget *)malloc(sizeof *b);
    if (b)
        arena__budget_init(b, limit, name);
    return b;
}

void arena_budget_destroy(arena_budget *b) { free(b); }

void arena_budget_set_limit(arena_budget *b, size_t limit)
{
    atomic_store_explicit(&b->limit, limit, memory_order_relaxed);
}

size_t arena_budget_limit(const arena_budget *b)
{
    return atomic_load_explicit(&((arena_budget *)(uintptr_t)b)->limit, memory_order_relaxed);
}

size_t arena_budget_used(const arena_budget *b)
{
    return atomic_load_explicit(&((arena_budget *)(uintptr_t)b)->used, memory_order_relaxed);
}

const char *arena_budget_name(const arena_budget *b) { return b->name; }

bool arena__budget_charge(arena_budget *b, size_t n)
{
    size_t limit = atomic_load_explicit(&b->limit, memory_order_relaxed);
    size_t used = atomic_load_explicit(&b->used, memory_order_relaxed);
    do {
        if (used > limit || n > limit - used)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&b->used, &used, used + n, memory_order_relaxed,
                                                    memory_order_relaxed));
    return true;
}

void arena__budget_refund(arena_budget *b, size_t n)
{
    atomic_fetch_sub_explicit(&b->used, n, memory_order_relaxed);
}

size_t arena__budget_room(const arena_budget *b)
{
    size_t limit = arena_budget_limit(b), used = arena_budget_used(b);
    return used < limit ? limit - used : 0;
}

/* ---- A backing allocator charged to a budget --------------------------------------------- */

static void *budget_alloc(void *ctx, size_t n)
{
    arena_budget_backing *bb = (arena_budget_backing *)ctx;
    void *p;
    if (!arena__budget_charge(bb->budget, n))
        return NULL;
    p = arena__back_alloc(&bb->backing, n);
    if (!p)
        arena__budget_refund(bb->budget, n);
    return p;
}

static void budget_free(void *ctx, void *p, size_t n)
{
    arena_budget_backing *bb = (arena_budget_backing *)ctx;
    arena__back_free(&bb->backing, p, n);
    arena__budget_refund(bb->budget, n);
}

arena_allocator arena_budget_allocator(arena_budget_backing *bb)
{
    arena_allocator a;
    a.alloc = budget_alloc;
    a.free = budget_free;
    a.ctx = bb;
    return a;
}
