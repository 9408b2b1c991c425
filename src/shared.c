/* SPDX-License-Identifier: MIT */
/*
 * The shared arena: many threads allocating from one arena at once.
 *
 * A single bump pointer that every thread advances with an atomic operation
 * does not scale: the cache line holding it moves between cores on every
 * allocation (docs/benchmarks.md has it as the reference row of the thread
 * benchmarks).  Here each thread bumps through a private *run* of memory
 * with plain loads and stores, and takes the arena's lock only to claim the
 * next run.  Runs start at run_bytes (16 KiB by default) and grow with what
 * the thread stores: each claim doubles what the thread has claimed in the
 * batch, and the first claim of a batch covers what it stored in its
 * previous one, up to a quarter of a chunk.  A thread that stores about as
 * much in each batch so claims once a batch.  Claims are what sharing
 * costs: each takes the lock and the inner arena's fields from the core
 * that claimed last (docs/fast-path.md).
 *
 * Runs are carved out of the chunks of an ordinary arena (`inner`), which
 * the lock protects.  A value that misses the thread's run and is larger
 * than a quarter of the smallest run goes to `inner` directly, under the
 * lock, so that a big value does not waste a run.
 *
 * A thread finds its run for an arena in a small direct-mapped table in
 * thread-local storage, tagged with the arena's generation: a number from a
 * process-wide counter, new at every create and reset.  A run of a destroyed
 * arena, or of an earlier batch, therefore never matches, and reset needs not
 * reach into other threads.
 *
 * Costs: the fast path is a TLS load, two compares and a bump (out of line,
 * no atomic); a run claim is one lock and an inner arena allocation.  Waste
 * is at most one run tail per value that misses, bounded by a quarter of a run.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "arena/thread.h"
#include "instrument.h"
#include "arena/report.h"
#include "thread_state.h"

#define RUN_SLOTS     4
#define MIN_RUN       ((size_t)1024)
#define DEFAULT_CHUNK ((size_t)1 << 20)
#define DEFAULT_RUN   ((size_t)16 << 10)

struct run {
    uint64_t gen; /* the arena's generation when claimed; 0: none */
    char *ptr;
    char *end;      /* ARENA_ALIGN-aligned */
    size_t claimed; /* bytes of the runs claimed in generation `gen` */
    uint64_t owner; /* the id of the arena they were claimed from */
};

struct arena_shared {
    /* Read by every allocating thread, written only by create and reset. */
    uint64_t gen;
    uint64_t id;      /* its first generation: never another arena's */
    unsigned slot;    /* this arena's entry in the thread's run table */
    size_t run_bytes; /* the smallest run */
    size_t max_run;   /* the largest run */
    size_t big;       /* values above this go to `inner` directly */
    /* cppcheck-suppress unusedStructMember ; padding on purpose */
    char pad[64]; /* keeps the lock's cache line away from the fields above */
    pthread_mutex_t lock;
    arena inner;              /* under lock */
    struct arena__node *node; /* its record in the registry (report.h), under lock */
    struct arena_shared *next_live, *prev_live; /* the live list, under live_lock */
};

static ARENA__TLS struct run tls_runs[RUN_SLOTS];
static _Atomic unsigned next_slot;

/* Every live shared arena, so that a fork can take their locks (fork.c). */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static arena_shared *live;

void arena__shared_fork(bool hold)
{
    arena_shared *s;
    if (hold) {
        pthread_mutex_lock(&live_lock);
        for (s = live; s; s = s->next_live)
            pthread_mutex_lock(&s->lock);
    } else {
        for (s = live; s; s = s->next_live)
            pthread_mutex_unlock(&s->lock);
        pthread_mutex_unlock(&live_lock);
    }
}

arena_shared *arena_shared_create(size_t chunk_bytes, size_t run_bytes,
                                  const arena_allocator *backing)
{
    arena_shared *s;
    arena tmp;

    arena__fork_ready();
    if (chunk_bytes == 0)
        chunk_bytes = DEFAULT_CHUNK;
    if (chunk_bytes > ARENA_REF_MAX)
        chunk_bytes = ARENA_REF_MAX;
    if (chunk_bytes < MIN_RUN)
        chunk_bytes = MIN_RUN;
    if (run_bytes == 0)
        run_bytes = DEFAULT_RUN;
    if (run_bytes > chunk_bytes)
        run_bytes = chunk_bytes;
    if (run_bytes < MIN_RUN)
        run_bytes = MIN_RUN;
    run_bytes &= ~(ARENA_ALIGN - 1);

    /* The struct itself comes from the backing allocator, as the arena's
     * bookkeeping does: through a throw-away arena's view of it. */
    arena_init_with(&tmp, chunk_bytes, backing);
    s = (arena_shared *)arena__back_alloc(&arena__cold(&tmp)->backing, sizeof *s);
    if (!s)
        return NULL;
    memset(s, 0, sizeof *s);
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        arena__back_free(&arena__cold(&tmp)->backing, s, sizeof *s);
        return NULL;
    }
    s->inner = tmp;
    s->gen = s->id = arena__new_gen();
    s->slot = atomic_fetch_add_explicit(&next_slot, 1, memory_order_relaxed) % RUN_SLOTS;
    s->run_bytes = run_bytes;
    s->max_run = (chunk_bytes / 4) & ~(ARENA_ALIGN - 1);
    if (s->max_run < run_bytes)
        s->max_run = run_bytes;
    s->big = run_bytes / 4;
    pthread_mutex_lock(&live_lock);
    s->next_live = live;
    if (live)
        live->prev_live = s;
    live = s;
    pthread_mutex_unlock(&live_lock);
    return s;
}

void arena_shared_destroy(arena_shared *s)
{
    arena_allocator b;
    if (!s)
        return;
    /* Outside the lock, as at a reset (below). */
    if (!arena__cleanups_end(&s->inner, 0, "arena_shared_destroy"))
        return;
    arena__unregister_object(s->node); /* first: the report reads the arena */
    pthread_mutex_lock(&live_lock);
    if (s->prev_live)
        s->prev_live->next_live = s->next_live;
    else
        live = s->next_live;
    if (s->next_live)
        s->next_live->prev_live = s->prev_live;
    pthread_mutex_unlock(&live_lock);
    b = arena__cold(&s->inner)->backing;
    arena_release(&s->inner);
    pthread_mutex_destroy(&s->lock);
    arena__back_free(&b, s, sizeof *s);
}

/* The size of the thread's next run: what it has claimed in this batch (so
 * each claim doubles the total), or at the first claim of a batch, what it
 * stored in its previous batch of this arena; between run_bytes and
 * max_run. */
static size_t next_run(const arena_shared *s, const struct run *r)
{
    size_t want = 0;
    if (r->gen == s->gen)
        want = r->claimed;
    else if (r->owner == s->id)
        want = r->claimed - (size_t)(r->end - r->ptr);
    if (want <= s->run_bytes)
        return s->run_bytes;
    if (want >= s->max_run)
        return s->max_run;
    return (size_t)arena__align_up(want, ARENA_ALIGN);
}

/* Places a value that missed the thread's run: directly in `inner` when it
 * is big or over-aligned, else in a new run.  Out of line, so that the fast
 * path saves no registers. */
static ARENA__NOINLINE void *alloc_slow(arena_shared *s, struct run *r, size_t size, size_t align)
{
    char *p;
    size_t run;

    if (!arena__is_pow2(align))
        return NULL;
    if (size == 0)
        return arena__zero_size_value(align);
    if (size > s->big || align > ARENA_ALIGN) {
        pthread_mutex_lock(&s->lock);
        p = (char *)arena_alloc_aligned(&s->inner, size, align);
        pthread_mutex_unlock(&s->lock);
        return p;
    }
    run = next_run(s, r);
    pthread_mutex_lock(&s->lock);
    p = (char *)arena_alloc(&s->inner, run);
    if (!p && run > s->run_bytes) /* memory for a smaller run may be there */
        p = (char *)arena_alloc(&s->inner, run = s->run_bytes);
    pthread_mutex_unlock(&s->lock);
    if (!p)
        return NULL;
    arena__close(p, run);
    if (r->gen != s->gen)
        r->claimed = 0;
    r->claimed += run;
    r->owner = s->id;
    r->gen = s->gen;
    r->ptr = p + size; /* a run starts ARENA_ALIGN-aligned */
    r->end = p + run;
    arena__open(p, size);
    return p;
}

/* The fast path: bump the thread's run.  Inside a run, end is
 * ARENA_ALIGN-aligned, so for a power of two align <= ARENA_ALIGN the padding
 * never exceeds the room, and `size - 1` sends 0 and huge sizes to the slow
 * path.  No call, no atomic. */
static inline void *alloc(arena_shared *s, size_t size, size_t align)
{
    struct run *r = &tls_runs[s->slot];
    if (ARENA__LIKELY(r->gen == s->gen)) {
        size_t pad = arena__pad((uintptr_t)r->ptr, align);
        if (ARENA__LIKELY(size - 1 < (size_t)(r->end - r->ptr) - pad)) {
            char *p = r->ptr + pad;
            r->ptr = p + size;
            arena__open(p, size);
            return p;
        }
    }
    return alloc_slow(s, r, size, align);
}

void *arena_shared_alloc_aligned(arena_shared *s, size_t size, size_t align)
{
    if (align == 0)
        align = ARENA_ALIGN;
    if (align > ARENA_ALIGN || !arena__is_pow2(align))
        return alloc_slow(s, &tls_runs[s->slot], size, align);
    return alloc(s, size, align);
}

void *arena_shared_alloc(arena_shared *s, size_t size) { return alloc(s, size, ARENA_ALIGN); }

void *arena_shared_calloc(arena_shared *s, size_t count, size_t size)
{
    size_t n;
    void *p;
    if (ARENA__MUL_OVERFLOWS(count, size, &n))
        return NULL;
    p = alloc(s, n, ARENA_ALIGN);
    if (p && n)
        memset(p, 0, n);
    return p;
}

void arena_shared_reset(arena_shared *s, size_t retain_limit)
{
    /* The cleanups run outside the lock, so that one may allocate from `s`
     * (or push on it, which is refused as misuse, not a deadlock): the
     * contract orders every other thread's use of `s` before the reset. */
    if (!arena__cleanups_end(&s->inner, 0, "arena_shared_reset"))
        return;
    pthread_mutex_lock(&s->lock);
    if (s->inner.pending & ARENA__PENDING_GUARD) {
        arena__guard_cause(ARENA__END_SHARED);
        arena_reset_to(&s->inner, retain_limit);
        arena__guard_cause(0);
    } else {
        arena_reset_to(&s->inner, retain_limit);
    }
    s->gen = arena__new_gen();
    pthread_mutex_unlock(&s->lock);
}

size_t arena_shared_retained(arena_shared *s)
{
    size_t n;
    pthread_mutex_lock(&s->lock);
    n = arena_retained(&s->inner);
    pthread_mutex_unlock(&s->lock);
    return n;
}

void arena_shared_set_limit(arena_shared *s, size_t limit)
{
    pthread_mutex_lock(&s->lock);
    arena_set_limit(&s->inner, limit);
    pthread_mutex_unlock(&s->lock);
}

void arena_shared_set_name(arena_shared *s, const char *name)
{
    pthread_mutex_lock(&s->lock);
    arena_set_name(&s->inner, name);
    pthread_mutex_unlock(&s->lock);
}

void arena_shared_get_stats(arena_shared *s, arena_stats *out)
{
    pthread_mutex_lock(&s->lock);
    arena_get_stats(&s->inner, out);
    pthread_mutex_unlock(&s->lock);
}

const char *arena__shared_name(arena_shared *s)
{
    const char *name;
    pthread_mutex_lock(&s->lock);
    name = arena_name(&s->inner);
    pthread_mutex_unlock(&s->lock);
    return name;
}

bool arena_shared_register(arena_shared *s)
{
    return arena__register_once(&s->lock, &s->node, ARENA__NODE_SHARED, s);
}
arena_cleanup *arena_shared_cleanup_push(arena_shared *s, arena_cleanup_fn *fn, void *ctx)
{
    arena_cleanup *c;
    pthread_mutex_lock(&s->lock);
    c = arena_cleanup_push(&s->inner, fn, ctx);
    pthread_mutex_unlock(&s->lock);
    return c;
}

void arena_shared_cleanup_cancel(arena_shared *s, arena_cleanup *c)
{
    pthread_mutex_lock(&s->lock);
    arena_cleanup_cancel(&s->inner, c);
    pthread_mutex_unlock(&s->lock);
}
