/* SPDX-License-Identifier: MIT */
/*
 * The arena cache: reset arenas kept for the next request.
 *
 * Two levels.  Each thread has a one-arena slot in thread-local storage,
 * tagged with the generation of the cache the arena belongs to (a number
 * from a process-wide counter, new at every create).  A request that starts
 * and ends on one thread takes and gives back its arena with no call into
 * libc, no lock and no atomic operation.  That is what makes acquire +
 * recycle cheaper than a malloc and free of the same request.  Behind the
 * slots is a shared stack under a mutex, bounded by max_arenas; it is LIFO,
 * so the warmest arena goes out first.  An arena recycled while the slot is
 * taken goes there, and beyond the bound its chunks are freed.
 *
 * An arena struct the cache made is never freed before destroy: beyond the
 * bound only the chunks go back, and the struct waits on a spare list for
 * the next acquire that finds the stack empty.  A second recycle of an arena
 * the cache let go then reads the cache's own memory, which says "released",
 * and is reported, where a freed struct would be a use after free.  The
 * structs number at most the most arenas out at once (acquired or in slots),
 * which is what the cache needed anyway at that moment.
 *
 * A thread that exits gives its slot's arena back (a process-wide pthread key
 * whose destructor runs at thread exit).  The cache may be gone by then, so
 * live caches are listed in a registry under a process-wide mutex, which
 * create, destroy and thread exit take (rarely): the exiting thread returns
 * the arena only if its cache is still listed, and destroy unlists the cache
 * before it frees anything.
 *
 * Every arena the cache made is also on a list (`all`), so that destroy frees
 * them wherever they are: on the stack, in some thread's slot, or acquired.
 * A slot that still names a destroyed cache is never used again: no later
 * cache has its generation.
 *
 * The arenas run on many threads at once and all allocate from the cache's
 * backing, so a caller's backing is wrapped in a lock of its own (back_lock,
 * apart from the stack's so that acquire never waits on a chunk allocation):
 * a backing written for one thread (a counter, a region) then works.  The
 * default backing, malloc, is thread-safe and called directly.
 *
 * A recycled arena goes back to the settings the cache gives every arena
 * (its name, limit, limit callback, budget, registration; no guard of its
 * own) after its reset, so that whatever a request set dies with it: the
 * next request's arena is the one acquire promises.  Every setter marks the
 * arena's settings changed, so a request that changed none pays a load and
 * a test for them (two where the cache is registered).
 *
 * Costs: acquire and recycle through the slot are a few loads and stores plus
 * arena_reset_to() (O(chunks)); the stack adds one lock; a fresh arena is one
 * allocation for its struct.  A caller's backing costs a lock per call.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "arena/guard.h"
#include "arena/report.h"
#include "arena/thread.h"
#include "thread_state.h"

enum { ACQUIRED = 1, STACKED, PARKED, RELEASED };

struct node {
    arena a; /* first: recycle maps the arena back to its node */
    struct arena_cache *owner;
    struct node *next;                /* the stack, or the spare list */
    struct node *prev_all, *next_all; /* every node of the cache */
    int state;
};

struct arena_cache {
    uint64_t gen;                  /* read by the slot fast path; set once at create */
    char pad[64];                  /* keeps the lock's cache line away from gen */
    struct arena_cache *next_live; /* the registry, under registry_lock */
    pthread_mutex_t lock;
    struct node *stack; /* under lock */
    size_t nstack;      /* under lock */
    struct node *spare; /* released arenas (no chunks); under lock */
    struct node all;    /* sentinel of the list of every node; under lock */
    size_t chunk_bytes, max_arenas, max_retained;
    arena_allocator backing; /* the caller's; alloc NULL: malloc */
    arena_allocator serial;  /* what the arenas and nodes use: `backing` under
                                back_lock, or malloc */
    pthread_mutex_t back_lock;
    arena_budget budget;      /* what every arena charges: the group limit, the totals */
    struct arena__node *node; /* its record in the registry (report.h), under lock */
    /* `node` once it is made, for recycle, which takes no lock */
    _Atomic(struct arena__node *) listed;
    /* What every arena it hands out has (arena_cache_set_arena_name() and the
     * like): set before threads use the cache, read by them without a lock. */
    const char *arena_name;
    size_t arena_limit;
    arena_limit_fn *on_limit;
    void *on_limit_ctx;
};

/* This thread's slot: an arena recycled into `gen`'s cache, or NULL.  A
 * thread's first park makes its slot (thread_state.h), which is emptied and
 * freed at thread exit; until then tls_slot points to no_slot, which is
 * never written. */
struct slot {
    uint64_t gen;
    struct node *node;
};

static struct slot no_slot;
static ARENA__TLS struct slot *tls_slot = &no_slot;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static arena_cache *registry; /* live caches, under registry_lock */

/* The caller's backing, one call at a time. */
static void *serial_alloc(void *ctx, size_t n)
{
    arena_cache *c = (arena_cache *)ctx;
    void *p;
    pthread_mutex_lock(&c->back_lock);
    p = c->backing.alloc(c->backing.ctx, n);
    pthread_mutex_unlock(&c->back_lock);
    return p;
}

static void serial_free(void *ctx, void *p, size_t n)
{
    arena_cache *c = (arena_cache *)ctx;
    pthread_mutex_lock(&c->back_lock);
    c->backing.free(c->backing.ctx, p, n);
    pthread_mutex_unlock(&c->back_lock);
}

/* Unlinks `n` from the list of every node and frees it (destroy only). */
static void free_node(arena_cache *c, struct node *n)
{
    n->prev_all->next_all = n->next_all;
    n->next_all->prev_all = n->prev_all;
    arena_release(&n->a);
    arena__back_free(&c->serial, n, sizeof *n);
}

/* Puts `n` (reset) on the stack; when the stack is full, frees its chunks
 * (outside the lock, which acquire takes) and keeps its struct as a spare. */
static void stack_push(arena_cache *c, struct node *n)
{
    pthread_mutex_lock(&c->lock);
    if (c->nstack < c->max_arenas) {
        n->state = STACKED;
        n->next = c->stack;
        c->stack = n;
        c->nstack++;
        pthread_mutex_unlock(&c->lock);
        return;
    }
    pthread_mutex_unlock(&c->lock);
    arena_release(&n->a);
    pthread_mutex_lock(&c->lock);
    n->state = RELEASED;
    n->next = c->spare;
    c->spare = n;
    pthread_mutex_unlock(&c->lock);
}

/* Empties this thread's slot: its arena goes back to its cache's stack if
 * the cache is still alive (if not, destroy has freed it already). */
static void slot_evict(struct slot *sl)
{
    arena_cache *c;

    pthread_mutex_lock(&registry_lock);
    for (c = registry; c && c->gen != sl->gen; c = c->next_live)
        ;
    if (c)
        stack_push(c, sl->node);
    pthread_mutex_unlock(&registry_lock);
    sl->node = NULL;
}

/* Key destructor: the exiting thread's slot is emptied and freed.  A later
 * destructor that parks an arena starts a new slot, freed in turn. */
static void slot_exit(void *value)
{
    struct slot *sl = (struct slot *)value;
    if (sl->node)
        slot_evict(sl);
    arena__thread_state_free(sl, sizeof *sl);
    tls_slot = &no_slot;
}

struct arena__thread_key arena__slot_key = {.exit = slot_exit};

/* This thread's own slot, empty and registered to be emptied at thread exit;
 * NULL when that cannot be arranged (then the thread parks nothing). */
static struct slot *start_slot(void)
{
    struct slot *sl = (struct slot *)arena__thread_state_new(&arena__slot_key, sizeof *sl);
    if (sl)
        tls_slot = sl;
    return sl;
}

arena_cache *arena_cache_create(const arena_cache_config *config)
{
    arena_cache_config cfg = {0};
    arena_allocator backing = {NULL, NULL, NULL};
    arena_cache *c;

    arena__fork_ready();
    if (config)
        cfg = *config;
    if (cfg.backing && cfg.backing->alloc)
        backing = *cfg.backing;
    c = (arena_cache *)arena__back_alloc(&backing, sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    c->backing = backing;
    c->chunk_bytes = cfg.chunk_bytes ? cfg.chunk_bytes : ARENA_DEFAULT_CHUNK;
    if (c->chunk_bytes > ARENA_REF_MAX)
        c->chunk_bytes = ARENA_REF_MAX;
    c->max_arenas = cfg.max_arenas ? cfg.max_arenas : 64;
    /* No fixed bound by default: each arena's reset adapts to what its
     * recent requests used (see arena_reset()). */
    c->max_retained = cfg.max_retained ? cfg.max_retained : SIZE_MAX;
    c->all.prev_all = c->all.next_all = &c->all;
    if (backing.alloc) {
        c->serial.alloc = serial_alloc;
        c->serial.free = serial_free;
        c->serial.ctx = c;
    }
    c->gen = arena__new_gen();
    arena__budget_init(&c->budget, SIZE_MAX, NULL);
    c->arena_limit = SIZE_MAX;
    atomic_init(&c->listed, NULL);
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        arena__back_free(&backing, c, sizeof *c);
        return NULL;
    }
    if (pthread_mutex_init(&c->back_lock, NULL) != 0) {
        pthread_mutex_destroy(&c->lock);
        arena__back_free(&backing, c, sizeof *c);
        return NULL;
    }
    pthread_mutex_lock(&registry_lock);
    c->next_live = registry;
    registry = c;
    pthread_mutex_unlock(&registry_lock);
    return c;
}

void arena_cache_destroy(arena_cache *c)
{
    arena_cache **link;
    arena_allocator backing;
    if (!c)
        return;
    arena__unregister_object(c->node); /* first: the report reads the cache */
    pthread_mutex_lock(&registry_lock);
    for (link = &registry; *link != c; link = &(*link)->next_live)
        ;
    *link = c->next_live;
    pthread_mutex_unlock(&registry_lock);
    if (tls_slot->gen == c->gen)
        tls_slot->node = NULL;
    /* (free_node unlinks the node before freeing it; clang's analyzer does not
     * see that the head's next changes, hence the NOLINT) */
    while (c->all.next_all != &c->all)
        free_node(c, c->all.next_all); /* NOLINT(clang-analyzer-unix.Malloc) */
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->back_lock);
    backing = c->backing;
    arena__back_free(&backing, c, sizeof *c);
}

/* Whether `a` may lack the settings the cache hands its arenas out with:
 * a setter ran since restore() (its `changed`), or the cache was registered
 * since (or the arena left the registry). */
static inline bool maybe_changed(const arena_cache *c, const arena *a)
{
    const struct arena__settings *set = &arena__cold(a)->set;
    return set->changed ||
           (atomic_load_explicit(&c->listed, memory_order_relaxed) != NULL && !set->node);
}

/* Gives `a` the settings the cache hands its arenas out with, whatever the
 * request that used it set.  Requires a reset arena (nothing stored): a
 * limit below what it kept frees its chunks, so that it can store again. */
static ARENA__NOINLINE void restore(arena_cache *c, arena *a)
{
    struct arena__settings *set = &arena__cold(a)->set;
    struct arena__node *listed = atomic_load_explicit(&c->listed, memory_order_acquire);

    if (set->name != c->arena_name)
        arena_set_name(a, c->arena_name);
    if (set->on_limit != c->on_limit || set->on_limit_ctx != c->on_limit_ctx)
        arena_on_limit(a, c->on_limit, c->on_limit_ctx);
    /* A budget joins only where what the arena holds fits it: failing that,
     * the arena gives back everything first (it then holds nothing). */
    if (set->budget != &c->budget && !arena_set_budget(a, &c->budget)) {
        arena_release(a);
        (void)arena_set_budget(a, &c->budget);
    }
    if (arena_limit(a) != c->arena_limit) {
        arena_set_limit(a, c->arena_limit);
        if (a->pending & ARENA__PENDING_OVER)
            arena_reset_to(a, 0);
    }
    if (set->node || listed)
        arena__register_as(a, listed);
    set->changed = 0;
}

void arena__cache_fork_registry(bool hold)
{
    if (hold)
        pthread_mutex_lock(&registry_lock);
    else
        pthread_mutex_unlock(&registry_lock);
}

/* Every live cache's locks (the registry held): the backing locks first,
 * newest cache first (see fork.c), then the stores' locks. */
void arena__cache_fork_caches(bool hold)
{
    arena_cache *c;
    for (c = registry; c; c = c->next_live) {
        if (hold)
            pthread_mutex_lock(&c->back_lock);
        else
            pthread_mutex_unlock(&c->back_lock);
    }
    for (c = registry; c; c = c->next_live) {
        if (hold)
            pthread_mutex_lock(&c->lock);
        else
            pthread_mutex_unlock(&c->lock);
    }
}

/* An arena from the stack, else a spare (released, so with no chunks: the
 * stack's arenas go first for theirs), else a fresh one.  Out of line, so
 * that the slot path saves no registers. */
static ARENA__NOINLINE arena *acquire_slow(arena_cache *c)
{
    struct node *n;

    pthread_mutex_lock(&c->lock);
    n = c->stack;
    if (n) {
        c->stack = n->next;
        c->nstack--;
    } else {
        n = c->spare;
        if (n)
            c->spare = n->next;
    }
    if (n) {
        n->state = ACQUIRED;
        pthread_mutex_unlock(&c->lock);
        /* A released one left the registry; the cache may have joined it. */
        if (maybe_changed(c, &n->a))
            restore(c, &n->a);
        return &n->a;
    }
    pthread_mutex_unlock(&c->lock);

    n = (struct node *)arena__back_alloc(&c->serial, sizeof *n);
    if (!n)
        return NULL;
    arena_init_with(&n->a, c->chunk_bytes, &c->serial);
    restore(c, &n->a);
    n->owner = c;
    n->next = NULL;
    n->state = ACQUIRED;
    pthread_mutex_lock(&c->lock);
    n->next_all = c->all.next_all;
    n->prev_all = &c->all;
    c->all.next_all->prev_all = n;
    c->all.next_all = n;
    pthread_mutex_unlock(&c->lock);
    return &n->a;
}

arena *arena_cache_acquire(arena_cache *c)
{
    struct slot *sl = tls_slot;
    struct node *n = sl->node;

    if (ARENA__LIKELY(n != NULL && sl->gen == c->gen)) {
        sl->node = NULL;
        n->state = ACQUIRED;
        return &n->a;
    }
    return acquire_slow(c);
}

void arena_cache_recycle(arena_cache *c, arena *a)
{
    struct node *n = (struct node *)(void *)a;
    struct slot *sl;

    if (!a) {
        arena__report(ARENA__ABOUT_CACHE(c, NULL), ARENA_ERR_NULL_FREE,
                      "arena_cache_recycle: NULL arena (cache %p)", (void *)c);
        return;
    }
    if (n->owner != c) {
        arena__report(ARENA__ABOUT_CACHE(c, a), ARENA_ERR_FOREIGN_POINTER,
                      "arena_cache_recycle: arena %p belongs to cache %p, not %p", (void *)a,
                      (void *)n->owner, (void *)c);
        return;
    }
    if (n->state != ACQUIRED) {
        arena__report(ARENA__ABOUT_CACHE(c, a), ARENA_ERR_DOUBLE_FREE,
                      "arena_cache_recycle: arena %p is already recycled (cache %p)", (void *)a,
                      (void *)c);
        return;
    }
    if (ARENA__UNLIKELY(n->a.pending & ARENA__PENDING_GUARD)) { /* (set where the guard is on) */
        /* The cache's arenas guard no batch of their own accord: off before
         * the reset, which decides the next batch (the batch under way
         * stays guarded until it ends). */
        if (arena__cold(a)->guard.flags & ARENA__GUARD_ON)
            (void)arena_set_guard(a, false);
        arena__guard_cause(ARENA__END_RECYCLE);
        arena_reset_to(&n->a, c->max_retained);
        arena__guard_cause(0);
    } else {
        arena_reset_to(&n->a, c->max_retained);
    }
    if (ARENA__UNLIKELY(maybe_changed(c, a)))
        restore(c, a);
    sl = tls_slot;
    /* A slot taken by another cache's arena (one this thread recycled there
     * last, or that of a destroyed cache) is given up: this thread now
     * works with `c`. */
    if (sl->node && sl->gen != c->gen)
        slot_evict(sl);
    if (!sl->node && (sl != &no_slot || (sl = start_slot()) != NULL)) {
        n->state = PARKED;
        sl->gen = c->gen;
        sl->node = n;
        return;
    }
    stack_push(c, n);
}

void arena_cache_set_limit(arena_cache *c, size_t limit)
{
    arena_budget_set_limit(&c->budget, limit);
}

void arena_cache_set_name(arena_cache *c, const char *name) { c->budget.name = name; }

/* Marks every arena of the cache, so that each takes the cache's settings
 * at its next recycle (or acquire from the store).  No thread uses them
 * meanwhile (the setters' contract). */
static void mark_all(arena_cache *c)
{
    struct node *n;
    pthread_mutex_lock(&c->lock);
    for (n = c->all.next_all; n != &c->all; n = n->next_all)
        arena__cold(&n->a)->set.changed = 1;
    pthread_mutex_unlock(&c->lock);
}

void arena_cache_set_arena_name(arena_cache *c, const char *name)
{
    c->arena_name = name;
    mark_all(c);
}

void arena_cache_set_arena_limit(arena_cache *c, size_t limit)
{
    c->arena_limit = limit;
    mark_all(c);
}

void arena_cache_on_limit(arena_cache *c, arena_limit_fn *fn, void *ctx)
{
    c->on_limit = fn;
    c->on_limit_ctx = fn ? ctx : NULL;
    mark_all(c);
}

const char *arena__cache_name(arena_cache *c) { return c->budget.name; }

bool arena_cache_register(arena_cache *c)
{
    if (!arena__register_once(&c->lock, &c->node, ARENA__NODE_CACHE, c))
        return false;
    /* Set once, under the lock, before this thread read it there. */
    atomic_store_explicit(&c->listed, c->node, memory_order_release);
    return true;
}

void arena_cache_get_stats(arena_cache *c, arena_cache_stats *out)
{
    const struct node *n;
    size_t all = 0, spares = 0;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&c->lock);
    for (n = c->all.next_all; n != &c->all; n = n->next_all)
        all++;
    for (n = c->spare; n; n = n->next)
        spares++;
    out->stored = c->nstack;
    pthread_mutex_unlock(&c->lock);
    out->arenas = all - spares;
    out->out = out->arenas - out->stored;
    out->held = arena_budget_used(&c->budget);
    out->limit = arena_budget_limit(&c->budget);
}

size_t arena_cache_count(arena_cache *c)
{
    size_t n;
    pthread_mutex_lock(&c->lock);
    n = c->nstack;
    pthread_mutex_unlock(&c->lock);
    return n;
}
