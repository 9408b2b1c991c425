/* The arena cache: acquire, recycle, bounds, misuse, out-of-memory, threads. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "support.h"

#include <arena/thread.h>

/* test_backing is not thread-safe: this wraps it in a mutex for the tests
 * where several threads allocate. */
typedef struct locked_backing {
    pthread_mutex_t lock;
    test_backing tb;
    arena_allocator inner;
} locked_backing;

static void *lb_alloc(void *ctx, size_t n)
{
    locked_backing *lb = (locked_backing *)ctx;
    pthread_mutex_lock(&lb->lock);
    void *p = lb->inner.alloc(lb->inner.ctx, n);
    pthread_mutex_unlock(&lb->lock);
    return p;
}

static void lb_free(void *ctx, void *p, size_t n)
{
    locked_backing *lb = (locked_backing *)ctx;
    pthread_mutex_lock(&lb->lock);
    lb->inner.free(lb->inner.ctx, p, n);
    pthread_mutex_unlock(&lb->lock);
}

static arena_allocator lb_allocator(locked_backing *lb)
{
    arena_allocator al = {lb_alloc, lb_free, lb};
    pthread_mutex_init(&lb->lock, NULL);
    lb->inner = tb_allocator(&lb->tb);
    return al;
}

static void test_acquire_recycle_reuses_the_arena_and_its_chunks(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_cache_config cfg = {1000, 4, 5000, &al};
    arena_cache *c = arena_cache_create(&cfg);
    (void)state;
    assert_non_null(c);

    arena *a = arena_cache_acquire(c);
    assert_non_null(a);
    assert_int_equal(arena_size(a), 0);
    char *p = (char *)arena_calloc(a, 1, 512);
    assert_non_null(p);
    assert_int_equal(arena_retained(a), 1000);
    arena_cache_recycle(c, a);
    assert_int_equal(arena_cache_count(c), 0); /* in this thread's slot */

    size_t calls = tb.calls;
    arena *b = arena_cache_acquire(c);
    assert_ptr_equal(b, a);
    assert_int_equal(arena_size(b), 0);
    assert_int_equal(arena_retained(b), 1000);
    assert_ptr_equal(arena_alloc(b, 512), p); /* same chunk, same place */
    assert_int_equal(tb.calls, calls);       /* nothing allocated */
    assert_true(arena_check(b));
    arena_cache_recycle(c, b);
    arena_cache_destroy(c);
    assert_int_equal(tb.live, 0);
}

static void test_bounds_on_cached_arenas_and_retained_bytes(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_cache_config cfg = {1000, 2, 3000, &al};
    arena_cache *c = arena_cache_create(&cfg);
    arena *a[5];
    (void)state;
    assert_non_null(c);
    for (int i = 0; i < 5; i++) {
        a[i] = arena_cache_acquire(c);
        assert_non_null(a[i]);
        for (int j = 0; j < 10; j++) /* 10 chunks of 1000 */
            assert_non_null(arena_alloc(a[i], 600));
        assert_non_null(arena_alloc(a[i], 70000)); /* and an oversized one */
    }
    for (int i = 0; i < 5; i++)
        arena_cache_recycle(c, a[i]);
    /* One waits in the slot, two in the store, two were freed. */
    assert_int_equal(arena_cache_count(c), 2);
    for (int i = 0; i < 3; i++) {
        a[i] = arena_cache_acquire(c);
        assert_int_equal(arena_retained(a[i]), 3000);
        assert_int_equal(arena_size(a[i]), 0);
    }
    assert_int_equal(arena_cache_count(c), 0);
    /* Live: the cache, 3 nodes with 3 chunks each (each index back inline
     * or kept): everything of the two freed arenas went back. */
    size_t live_nodes = tb.live;
    arena *fresh = arena_cache_acquire(c);
    assert_non_null(fresh);
    assert_int_equal(arena_retained(fresh), 0);
    assert_int_equal(tb.live, live_nodes + 1); /* a fresh struct, no chunk yet */
    arena_cache_recycle(c, fresh);
    for (int i = 0; i < 3; i++)
        arena_cache_recycle(c, a[i]);
    arena_cache_destroy(c);
    assert_int_equal(tb.live, 0);
}

static void test_defaults_and_unbounded_retention(void **state)
{
    arena_cache *c = arena_cache_create(NULL);
    (void)state;
    assert_non_null(c);
    arena *a = arena_cache_acquire(c);
    for (int i = 0; i < 20; i++)
        assert_non_null(arena_alloc(a, ARENA_DEFAULT_CHUNK));
    arena_cache_recycle(c, a);
    a = arena_cache_acquire(c);
    /* no fixed bound: what the request used */
    assert_int_equal(arena_retained(a), 20 * (size_t)ARENA_DEFAULT_CHUNK);
    arena_cache_recycle(c, a);
    arena_cache_destroy(c);

    arena_cache_config cfg = {4096, 1, SIZE_MAX, NULL};
    c = arena_cache_create(&cfg);
    a = arena_cache_acquire(c);
    for (int i = 0; i < 50; i++)
        assert_non_null(arena_alloc(a, 4000));
    arena_cache_recycle(c, a);
    a = arena_cache_acquire(c);
    assert_int_equal(arena_retained(a), 50 * 4096);
    arena_cache_recycle(c, a);
    arena_cache_destroy(c);
    arena_cache_destroy(NULL);
}

/* One request of the workload: small values around one of `big` bytes. */
static void request(arena *a, size_t big)
{
    for (int i = 0; i < 2000; i++) {
        char *p = (char *)arena_alloc(a, 16 + (size_t)(i * 37) % 400);
        assert_non_null(p);
        p[0] = 1;
    }
    char *p = (char *)arena_alloc(a, big);
    assert_non_null(p);
    memset(p, 2, big);
}

/* With the default configuration a cache's arenas adapt to the requests:
 * requests of one shape, a 17 MB value included, make no backing call once
 * warm (where a fixed 1 MiB bound trimmed and refetched it every time); a
 * one-off spike is given back after ARENA_RETAIN_BATCHES smaller requests;
 * an explicit max_retained still bounds every recycle. */
static void test_default_retention_adapts(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_cache_config cfg = {0, 0, 0, &al};
    arena_cache *c = arena_cache_create(&cfg);
    const size_t mib = (size_t)1 << 20;
    (void)state;
    assert_non_null(c);

    size_t calls = 0, frees = 0, normal = 0;
    for (int i = 0; i < 12; i++) {
        if (i == 2) {
            calls = tb.calls;
            frees = tb.frees;
        }
        arena *a = arena_cache_acquire(c);
        assert_non_null(a);
        request(a, 17 * mib);
        arena_cache_recycle(c, a);
    }
    assert_int_equal(tb.calls, calls);
    assert_int_equal(tb.frees, frees);

    /* Smaller requests: the 17 MB chunk stays for ARENA_RETAIN_BATCHES - 1
     * of them, and is freed by the recycle ending the last. */
    for (int i = 1; i <= ARENA_RETAIN_BATCHES; i++) {
        arena *a = arena_cache_acquire(c);
        assert_true(arena_retained(a) > 17 * mib);
        request(a, 100000);
        normal = arena_size(a);
        arena_cache_recycle(c, a);
    }
    arena *after = arena_cache_acquire(c);
    assert_true(arena_retained(after) <= 2 * normal + 2 * ARENA_DEFAULT_CHUNK);
    arena_cache_recycle(c, after);
    assert_true(tb.live_bytes < 2 * mib);
    arena_cache_destroy(c);
    assert_int_equal(tb.live, 0);

    /* An explicit bound is a hard one. */
    arena_cache_config capped = {0, 0, mib, &al};
    c = arena_cache_create(&capped);
    assert_non_null(c);
    for (int i = 0; i < 3; i++) {
        arena *a = arena_cache_acquire(c);
        request(a, 4 * mib);
        arena_cache_recycle(c, a);
        a = arena_cache_acquire(c);
        assert_true(arena_retained(a) <= mib);
        arena_cache_recycle(c, a);
    }
    arena_cache_destroy(c);
    assert_int_equal(tb.live, 0);
}

static void test_misuse_is_reported_and_harmless(void **state)
{
    arena_cache *c = arena_cache_create(NULL);
    arena_cache *other = arena_cache_create(NULL);
    (void)state;
    record_errors();
    arena *a = arena_cache_acquire(c);
    arena *b = arena_cache_acquire(c);
    assert_non_null(arena_alloc(a, 100));

    arena_cache_recycle(c, NULL);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_NULL_FREE);

    arena_cache_recycle(other, a);
    assert_int_equal(recorded_errors.count, 2);
    assert_int_equal(recorded_errors.last, ARENA_ERR_FOREIGN_POINTER);
    assert_int_equal(arena_size(a), 100); /* untouched */

    arena_cache_recycle(c, a); /* into the slot */
    arena_cache_recycle(c, a);
    assert_int_equal(recorded_errors.count, 3);
    assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
    arena_cache_recycle(c, b); /* into the store */
    arena_cache_recycle(c, b);
    assert_int_equal(recorded_errors.count, 4);
    assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
    assert_int_equal(arena_cache_count(c), 1);

    arena_set_error_handler(NULL, NULL);
    arena_cache_destroy(c);
    arena_cache_destroy(other);
}

static void test_out_of_memory(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_cache_config cfg = {1000, 4, 5000, &al};
    (void)state;

    tb.fail_at = 1; /* the cache itself */
    assert_null(arena_cache_create(&cfg));
    assert_int_equal(tb.live, 0);

    tb.fail_at = 0;
    arena_cache *c = arena_cache_create(&cfg);
    assert_non_null(c);
    tb.fail_at = tb.calls + 1; /* the arena struct */
    assert_null(arena_cache_acquire(c));
    assert_int_equal(tb.live, 1);

    arena *a = arena_cache_acquire(c);
    assert_non_null(a);
    tb.fail_at = tb.calls + 1; /* its first chunk */
    assert_null(arena_alloc(a, 10));
    assert_int_equal(arena_retained(a), 0);
    assert_non_null(arena_alloc(a, 10));
    arena_cache_recycle(c, a);
    arena_cache_destroy(c);
    assert_int_equal(tb.live, 0);
}

static void test_destroy_frees_acquired_and_parked_arenas(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_cache_config cfg = {1000, 4, 5000, &al};
    arena_cache *c = arena_cache_create(&cfg);
    (void)state;
    arena *a = arena_cache_acquire(c);
    arena *b = arena_cache_acquire(c);
    arena *d = arena_cache_acquire(c);
    assert_non_null(arena_alloc(a, 100));
    assert_non_null(arena_alloc(b, 100));
    assert_non_null(arena_alloc(d, 5000));
    arena_cache_recycle(c, a); /* slot */
    arena_cache_recycle(c, b); /* store */
    arena_cache_destroy(c);    /* d is still acquired */
    assert_int_equal(tb.live, 0);

    /* A cache created after it starts with an empty slot in this thread. */
    c = arena_cache_create(&cfg);
    a = arena_cache_acquire(c);
    assert_non_null(a);
    assert_int_equal(arena_retained(a), 0);
    arena_cache_recycle(c, a);
    arena_cache_destroy(c);
    assert_int_equal(tb.live, 0);
}


static void test_two_caches_on_one_thread(void **state)
{
    arena_cache *c1 = arena_cache_create(NULL);
    arena_cache *c2 = arena_cache_create(NULL);
    (void)state;
    arena *a1 = arena_cache_acquire(c1);
    arena *a2 = arena_cache_acquire(c2);
    arena_cache_recycle(c1, a1); /* slot: c1's */
    arena_cache_recycle(c2, a2); /* slot: c2's; a1 back to c1's store */
    assert_int_equal(arena_cache_count(c1), 1);
    assert_int_equal(arena_cache_count(c2), 0);
    assert_ptr_equal(arena_cache_acquire(c2), a2);
    assert_ptr_equal(arena_cache_acquire(c1), a1);
    assert_int_equal(arena_cache_count(c1), 0);
    arena_cache_recycle(c1, a1);
    arena_cache_recycle(c2, a2);
    arena_cache_destroy(c1); /* a1 waits in this thread's slot */
    a1 = arena_cache_acquire(c2);
    assert_ptr_equal(a1, a2);
    arena_cache_recycle(c2, a1);
    arena_cache_destroy(c2);
}

/* ---- Threads ------------------------------------------------------------------ */

#define THREADS 4
#define ROUNDS 1000

struct worker {
    arena_cache *c;
    pthread_barrier_t *barrier;
    unsigned id;
    int errors;
};

/* Many requests: each fills its arena with the thread's pattern and checks it
 * before recycling; an arena shared by two threads at once would show.  Every
 * other request holds a second arena meanwhile, which comes from and goes
 * back to the shared store (the slot holds one). */
static void *requests(void *arg)
{
    struct worker *w = (struct worker *)arg;
    for (unsigned r = 0; r < ROUNDS; r++) {
        arena *extra = r % 2 ? arena_cache_acquire(w->c) : NULL;
        if (extra && !arena_strdup(extra, "held meanwhile"))
            w->errors++;
        arena *a = arena_cache_acquire(w->c);
        if (!a || arena_size(a) != 0) {
            w->errors++;
            continue;
        }
        unsigned n = 1 + (r * 7 + w->id) % 40;
        uint32_t *v[40];
        for (unsigned i = 0; i < n; i++) {
            v[i] = ARENA_ALLOC_ARRAY(a, uint32_t, 16 * (i + 1));
            if (!v[i]) {
                w->errors++;
                n = i;
                break;
            }
            for (unsigned k = 0; k < 16 * (i + 1); k++)
                v[i][k] = w->id << 24 | r << 8 | i;
        }
        for (unsigned i = 0; i < n; i++)
            for (unsigned k = 0; k < 16 * (i + 1); k++)
                w->errors += v[i][k] != (w->id << 24 | r << 8 | i);
        arena_cache_recycle(w->c, a);
        if (extra)
            arena_cache_recycle(w->c, extra);
    }
    return NULL;
}

static void test_many_threads_acquire_and_recycle(void **state)
{
    locked_backing lb;
    arena_allocator al = lb_allocator(&lb);
    arena_cache_config cfg = {4096, 3, 8 * 4096, &al};
    arena_cache *c = arena_cache_create(&cfg);
    pthread_t t[THREADS];
    struct worker w[THREADS];
    (void)state;
    assert_non_null(c);
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (struct worker){c, NULL, i + 1, 0};
        assert_int_equal(pthread_create(&t[i], NULL, requests, &w[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(w[i].errors, 0);
    }
    assert_true(arena_cache_count(c) <= 3);
    arena_cache_destroy(c);
    assert_int_equal(lb.tb.live, 0);
    pthread_mutex_destroy(&lb.lock);
}

/* Each thread holds an arena while all do, then recycles it and exits: the
 * arena in its slot must reach the store. */
static void *hold_then_exit(void *arg)
{
    struct worker *w = (struct worker *)arg;
    arena *a = arena_cache_acquire(w->c);
    w->errors += a == NULL || arena_alloc(a, 100) == NULL;
    pthread_barrier_wait(w->barrier);
    arena_cache_recycle(w->c, a);
    return NULL;
}

static void test_thread_exit_returns_the_slot(void **state)
{
    arena_cache *c = arena_cache_create(NULL);
    pthread_barrier_t barrier;
    pthread_t t[THREADS];
    struct worker w[THREADS];
    (void)state;
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (struct worker){c, &barrier, i + 1, 0};
        assert_int_equal(pthread_create(&t[i], NULL, hold_then_exit, &w[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(w[i].errors, 0);
    }
    assert_int_equal(arena_cache_count(c), THREADS);
    pthread_barrier_destroy(&barrier);
    arena_cache_destroy(c);
}

/* An arena acquired on one thread may be recycled on another. */
static void *recycle_elsewhere(void *arg)
{
    struct worker *w = (struct worker *)arg;
    arena_cache_recycle(w->c, (arena *)w->barrier);
    return NULL;
}

static void test_recycle_on_another_thread(void **state)
{
    arena_cache *c = arena_cache_create(NULL);
    pthread_t t;
    (void)state;
    arena *a = arena_cache_acquire(c);
    assert_non_null(arena_strdup(a, "request"));
    struct worker w = {c, (pthread_barrier_t *)(void *)a, 0, 0};
    assert_int_equal(pthread_create(&t, NULL, recycle_elsewhere, &w), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(arena_cache_count(c), 1); /* that thread's exit gave it back */
    arena *b = arena_cache_acquire(c);
    assert_ptr_equal(b, a);
    assert_int_equal(arena_size(b), 0);
    arena_cache_recycle(c, b);
    arena_cache_destroy(c);
}

/* A thread parks an arena of a cache that is then destroyed; the thread then
 * works with another cache and exits. */
struct stale {
    arena_cache *a, *b;
    pthread_barrier_t *barrier;
};

static void *park_then_switch(void *arg)
{
    struct stale *st = (struct stale *)arg;
    arena *x = arena_cache_acquire(st->a);
    arena_cache_recycle(st->a, x);
    pthread_barrier_wait(st->barrier); /* parked */
    pthread_barrier_wait(st->barrier); /* st->a destroyed */
    x = arena_cache_acquire(st->b);
    arena_cache_recycle(st->b, x);
    return NULL;
}

static void test_destroyed_cache_in_another_threads_slot(void **state)
{
    pthread_barrier_t barrier;
    struct stale st = {arena_cache_create(NULL), arena_cache_create(NULL), &barrier};
    pthread_t t;
    (void)state;
    pthread_barrier_init(&barrier, NULL, 2);
    assert_int_equal(pthread_create(&t, NULL, park_then_switch, &st), 0);
    pthread_barrier_wait(&barrier);
    arena_cache_destroy(st.a);
    pthread_barrier_wait(&barrier);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(arena_cache_count(st.b), 1); /* returned at the thread's exit */
    pthread_barrier_destroy(&barrier);
    arena_cache_destroy(st.b);
}

/* Producers fill arenas and hand them to consumers, which check and recycle
 * them: acquire and recycle on different threads, all at once. */
#define HANDOFFS 500
#define QUEUE 8

struct payload;

struct handoff {
    arena_cache *c;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct {
        arena *a;
        struct payload *p;
    } q[QUEUE];
    unsigned head, count, producers_left;
    int errors;
};

struct payload {
    uint32_t producer, seq, n;
    uint64_t *words;
};

static void *produce(void *arg)
{
    struct worker *w = (struct worker *)arg;
    struct handoff *h = (struct handoff *)(void *)w->barrier;
    for (uint32_t i = 0; i < HANDOFFS; i++) {
        arena *a = arena_cache_acquire(h->c);
        struct payload *p = a ? ARENA_NEW(a, struct payload) : NULL;
        if (!p) {
            w->errors++;
            if (a)
                arena_cache_recycle(h->c, a);
            continue;
        }
        p->producer = w->id;
        p->seq = i;
        p->n = 1 + i % 300;
        p->words = ARENA_ALLOC_ARRAY(a, uint64_t, p->n);
        for (uint32_t k = 0; p->words && k < p->n; k++)
            p->words[k] = (uint64_t)w->id << 32 | i;
        pthread_mutex_lock(&h->lock);
        while (h->count == QUEUE)
            pthread_cond_wait(&h->changed, &h->lock);
        h->q[(h->head + h->count) % QUEUE].a = a;
        h->q[(h->head + h->count++) % QUEUE].p = p;
        pthread_cond_broadcast(&h->changed);
        pthread_mutex_unlock(&h->lock);
    }
    pthread_mutex_lock(&h->lock);
    h->producers_left--;
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

static void *consume(void *arg)
{
    struct handoff *h = (struct handoff *)arg;
    for (;;) {
        pthread_mutex_lock(&h->lock);
        while (h->count == 0 && h->producers_left)
            pthread_cond_wait(&h->changed, &h->lock);
        if (h->count == 0) {
            pthread_mutex_unlock(&h->lock);
            return NULL;
        }
        arena *a = h->q[h->head].a;
        struct payload *p = h->q[h->head].p;
        h->head = (h->head + 1) % QUEUE;
        h->count--;
        pthread_cond_broadcast(&h->changed);
        pthread_mutex_unlock(&h->lock);

        int bad = !p->words;
        for (uint32_t k = 0; !bad && k < p->n; k++)
            bad = p->words[k] != ((uint64_t)p->producer << 32 | p->seq);
        arena_cache_recycle(h->c, a);
        if (bad) {
            pthread_mutex_lock(&h->lock);
            h->errors++;
            pthread_mutex_unlock(&h->lock);
        }
    }
}

static void test_handoff_between_threads(void **state)
{
    struct handoff h;
    pthread_t prod[2], cons[2];
    struct worker w[2];
    (void)state;
    memset(&h, 0, sizeof h);
    arena_cache_config cfg = {8192, 4, 4 * 8192, NULL};
    h.c = arena_cache_create(&cfg);
    assert_non_null(h.c);
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.changed, NULL);
    h.producers_left = 2;
    for (unsigned i = 0; i < 2; i++) {
        w[i] = (struct worker){h.c, (pthread_barrier_t *)(void *)&h, i + 1, 0};
        assert_int_equal(pthread_create(&prod[i], NULL, produce, &w[i]), 0);
        assert_int_equal(pthread_create(&cons[i], NULL, consume, &h), 0);
    }
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(prod[i], NULL), 0);
        assert_int_equal(pthread_join(cons[i], NULL), 0);
        assert_int_equal(w[i].errors, 0);
    }
    assert_int_equal(h.errors, 0);
    assert_int_equal(h.count, 0);
    assert_true(arena_cache_count(h.c) <= 4);
    pthread_cond_destroy(&h.changed);
    pthread_mutex_destroy(&h.lock);
    arena_cache_destroy(h.c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acquire_recycle_reuses_the_arena_and_its_chunks),
        cmocka_unit_test(test_bounds_on_cached_arenas_and_retained_bytes),
        cmocka_unit_test(test_defaults_and_unbounded_retention),
        cmocka_unit_test(test_default_retention_adapts),
        cmocka_unit_test(test_misuse_is_reported_and_harmless),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_destroy_frees_acquired_and_parked_arenas),
        cmocka_unit_test(test_two_caches_on_one_thread),
        cmocka_unit_test(test_many_threads_acquire_and_recycle),
        cmocka_unit_test(test_destroyed_cache_in_another_threads_slot),
        cmocka_unit_test(test_thread_exit_returns_the_slot),
        cmocka_unit_test(test_recycle_on_another_thread),
        cmocka_unit_test(test_handoff_between_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
