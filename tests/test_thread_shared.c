/* SPDX-License-Identifier: MIT */
/* The shared arena: many threads allocating at once, reset, out-of-memory. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "support.h"

#include <arena/thread.h>

static void test_values_are_aligned_and_distinct(void **state)
{
    arena_shared *s = arena_shared_create(0, 0, NULL);
    (void)state;
    assert_non_null(s);
    char *prev = NULL;
    for (size_t n = 1; n < 3000; n += 37) {
        char *p = (char *)arena_shared_alloc(s, n);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % ARENA_ALIGN, 0);
        memset(p, 0x5a, n);
        assert_ptr_not_equal(p, prev);
        prev = p;
    }
    for (size_t align = 1; align <= 8192; align *= 2) {
        char *p = (char *)arena_shared_alloc_aligned(s, 24, align);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % align, 0);
    }
    char *odd = (char *)arena_shared_alloc_aligned(s, 1, 1);
    char *next = (char *)arena_shared_alloc_aligned(s, 1, 1);
    assert_ptr_equal(next, odd + 1); /* packed at alignment 1 */
    assert_null(arena_shared_alloc_aligned(s, 8, 3));
    assert_null(arena_shared_alloc_aligned(s, 8, 48));
    assert_non_null(arena_shared_alloc(s, 0));
    assert_int_equal((uintptr_t)arena_shared_alloc(s, 0) % ARENA_ALIGN, 0);
    assert_int_equal((uintptr_t)arena_shared_calloc(s, 0, 8) % ARENA_ALIGN, 0);
    for (unsigned k = 0; k < sizeof(size_t) * 8; k++) { /* every power of two */
        size_t align = (size_t)1 << k;
        char *p = (char *)arena_shared_alloc_aligned(s, 0, align);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % align, 0);
    }
    volatile size_t huge = SIZE_MAX; /* hides the size from the compiler's check */
    assert_null(arena_shared_alloc(s, huge));
    assert_null(arena_shared_alloc(s, huge - 8));
    assert_null(arena_shared_alloc_aligned(s, huge - 100, 4096));
    assert_null(arena_shared_calloc(s, SIZE_MAX / 2, 3));

    unsigned char *z = (unsigned char *)arena_shared_calloc(s, 100, 10);
    assert_non_null(z);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(z[i], 0);
    char *big = (char *)arena_shared_alloc(s, 5u << 20); /* larger than a chunk */
    assert_non_null(big);
    memset(big, 1, 5u << 20);
    arena_shared_destroy(s);
    arena_shared_destroy(NULL);
}

static void test_reset_reuses_chunks_and_honours_the_limit(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_shared *s = arena_shared_create(8192, 2048, &al);
    (void)state;
    assert_non_null(s);
    char *first = (char *)arena_shared_alloc(s, 100);
    assert_non_null(first);
    /* Where the inner arena guards its values (ASan, Valgrind, the checked
     * build), a run's guard leaves room for 3 runs a chunk, not 4. */
    size_t chunks = test_packed() ? 3 : 4;
    for (int i = 0; i < 100; i++) /* 9 values a run, 4 runs a chunk: 3 chunks */
        assert_non_null(arena_shared_alloc(s, 200));
    assert_int_equal(arena_shared_retained(s), chunks * 8192);

    arena_shared_reset(s, SIZE_MAX);
    assert_int_equal(arena_shared_retained(s), chunks * 8192);
    size_t calls = tb.calls;
    /* The thread's old run is abandoned: the batch starts at the first chunk. */
    assert_ptr_equal(arena_shared_alloc(s, 100), first);
    for (int i = 0; i < 100; i++)
        assert_non_null(arena_shared_alloc(s, 200));
    assert_int_equal(tb.calls, calls); /* nothing new from the backing */

    arena_shared_reset(s, 2 * 8192);
    assert_int_equal(arena_shared_retained(s), 2 * 8192);
    arena_shared_reset(s, 0);
    assert_int_equal(arena_shared_retained(s), 0);
    assert_int_equal(tb.live, 1); /* only the struct */
    assert_non_null(arena_shared_alloc(s, 10));
    arena_shared_destroy(s);
    assert_int_equal(tb.live, 0);
}

/* One batch of a thread: values of 100 to 900 bytes, and one of `big`
 * bytes (none when 0), larger than a chunk. */
static void shared_batch(arena_shared *s, size_t big)
{
    for (int i = 0; i < 500; i++) {
        char *p = (char *)arena_shared_alloc(s, 100 + (size_t)(i * 37) % 801);
        assert_non_null(p);
        p[0] = 1;
    }
    if (big) {
        char *p = (char *)arena_shared_alloc(s, big);
        assert_non_null(p);
        memset(p, 2, big);
    }
}

/* arena_shared_reset() keeps what arena_reset() keeps: small batches and a
 * large one every 20th or every ARENA_RECUR_BATCHES-th make no backing call
 * once warm, through more than ARENA_RETAIN_BATCHES resets; once the large
 * ones stop, their chunk goes back within ARENA_RETAIN_BATCHES resets. */
static void test_a_recurring_batch_keeps_its_chunks(void **state)
{
    static const int periods[] = {20, ARENA_RECUR_BATCHES};
    const size_t mib = (size_t)1 << 20;
    (void)state;

    for (size_t p = 0; p < sizeof periods / sizeof periods[0]; p++) {
        test_backing tb;
        arena_allocator al = tb_allocator(&tb);
        arena_shared *s = arena_shared_create(0, 0, &al);
        int period = periods[p], warm = 2 * period + 2;
        size_t calls = 0, frees = 0;
        assert_non_null(s);

        for (int i = 0; i < warm + ARENA_RETAIN_BATCHES + 2 * period; i++) {
            if (i == warm) {
                calls = tb.calls;
                frees = tb.frees;
            }
            shared_batch(s, i % period == 0 ? 3 * mib : 0);
            arena_shared_reset(s, SIZE_MAX);
        }
        assert_int_equal(tb.calls, calls);
        assert_int_equal(tb.frees, frees);

        for (int i = 1; i <= ARENA_RETAIN_BATCHES; i++) {
            shared_batch(s, 0);
            arena_shared_reset(s, SIZE_MAX);
            if (i < ARENA_RECUR_BATCHES)
                assert_true(arena_shared_retained(s) > 3 * mib);
        }
        assert_true(arena_shared_retained(s) < 3 * mib);
        assert_true(tb.live_bytes < 3 * mib);
        calls = tb.calls;
        frees = tb.frees;
        for (int i = 0; i < 20; i++) {
            shared_batch(s, 0);
            arena_shared_reset(s, SIZE_MAX);
        }
        assert_int_equal(tb.calls, calls);
        assert_int_equal(tb.frees, frees);
        arena_shared_destroy(s);
        assert_int_equal(tb.live, 0);
    }
}

static void test_out_of_memory(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    (void)state;
    tb.fail_at = 1;
    assert_null(arena_shared_create(4096, 1024, &al));
    assert_int_equal(tb.live, 0);

    tb.fail_at = 0;
    arena_shared *s = arena_shared_create(4096, 1024, &al);
    assert_non_null(s);
    tb.fail_from = tb.calls + 1;
    assert_null(arena_shared_alloc(s, 16));   /* no run */
    assert_null(arena_shared_alloc(s, 1000)); /* big: direct */
    assert_int_equal(arena_shared_retained(s), 0);
    tb.fail_from = 0;
    char *p = (char *)arena_shared_alloc(s, 16);
    assert_non_null(p);
    /* With the run in place, a failure on a big value leaves the run alone. */
    tb.fail_from = tb.calls + 1;
    assert_null(arena_shared_alloc(s, 100000));
    assert_ptr_equal(arena_shared_alloc(s, 16), p + 16);
    tb.fail_from = 0;
    arena_shared_destroy(s);
    assert_int_equal(tb.live, 0);
}

/* The size of the run the thread claimed at `run` (its first value), read
 * from where an over-aligned value lands: such a value goes to the inner
 * arena directly, after the last run claimed (after alignment padding, and a
 * guard where values are guarded). */
static void assert_run(arena_shared *s, const char *run, size_t bytes)
{
    const char *next = (const char *)arena_shared_alloc_aligned(s, 16, 64);
    assert_non_null(next);
    assert_in_range((size_t)(next - run), bytes, bytes + (test_packed() ? 63 : 320));
}

/* Stores `bytes` in 32-byte values (the first in the thread's current run);
 * returns the last. */
static const char *store(arena_shared *s, size_t bytes)
{
    const char *p = NULL;
    for (size_t i = 0; i < bytes / 32; i++) {
        p = (const char *)arena_shared_alloc(s, 32);
        assert_non_null(p);
    }
    return p;
}

static void test_runs_follow_what_a_thread_stores(void **state)
{
    const size_t k = 1024;
    arena_shared *s = arena_shared_create(0, 0, NULL); /* 1 MiB chunks, 16 KiB runs */
    (void)state;
    assert_non_null(s);
    /* The first run is the smallest; each claim then doubles what the thread
     * has claimed in the batch. */
    size_t sizes[] = {16 * k, 16 * k, 32 * k, 64 * k};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        const char *run = (const char *)arena_shared_alloc(s, 32);
        assert_non_null(run);
        assert_run(s, run, sizes[i]);
        store(s, sizes[i] - 32); /* fills the run */
    }
    arena_shared_reset(s, SIZE_MAX);
    /* The first run of a batch covers what the thread stored in the last one
     * (128 KiB): a thread that stores as much in each batch claims once. */
    const char *run = (const char *)arena_shared_alloc(s, 32);
    assert_run(s, run, 128 * k);
    assert_ptr_equal(store(s, 128 * k - 32), run + 128 * k - 32); /* all in that run */
    arena_shared_reset(s, SIZE_MAX);
    /* What it stored shrinks (3 KiB + 32 bytes)... */
    run = (const char *)arena_shared_alloc(s, 32);
    store(s, 3 * k);
    arena_shared_reset(s, SIZE_MAX);
    /* ...and so does its next run, to the smallest. */
    run = (const char *)arena_shared_alloc(s, 32);
    assert_run(s, run, 16 * k);
    /* A run is never larger than a quarter of a chunk. */
    store(s, 2048 * k);
    arena_shared_reset(s, SIZE_MAX);
    run = (const char *)arena_shared_alloc(s, 32);
    assert_run(s, run, 256 * k);
    arena_shared_destroy(s);

    /* With runs of a quarter chunk already, they do not grow. */
    s = arena_shared_create(64 * k, 16 * k, NULL);
    assert_non_null(s);
    for (int i = 0; i < 3; i++) {
        run = (const char *)arena_shared_alloc(s, 32);
        assert_non_null(run);
        assert_run(s, run, 16 * k);
        store(s, 16 * k - 32);
    }
    arena_shared_destroy(s);
}

/* A grown run that does not fit what is left of the chunk, with no memory
 * for another, falls back to the smallest run, which does. */
static void test_a_grown_run_falls_back_to_the_smallest(void **state)
{
    const size_t k = 1024;
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    (void)state;
    arena_shared *s = arena_shared_create(64 * k, 4 * k, &al); /* runs of 4 to 16 KiB */
    assert_non_null(s);
    store(s, 32 * k); /* runs of 4, 4, 8 and 16 KiB, filled */
    store(s, 16 * k); /* a run of 16 KiB (at most a quarter chunk), filled */
    assert_non_null(arena_shared_alloc(s, 6 * k)); /* placed in the chunk directly */
    /* 10 KiB left in the chunk (less the guards where values are guarded):
     * room for two runs of 4 KiB, not one of 16. */
    tb.fail_from = tb.calls + 1;
    size_t got = 0;
    while (arena_shared_alloc(s, 32))
        got += 32;
    if (test_packed())
        assert_int_equal(got, 8 * k);
    else
        assert_in_range(got, 4 * k, 8 * k);
    tb.fail_from = 0;
    arena_shared_destroy(s);
    assert_int_equal(tb.live, 0);
}

/* ---- Threads ------------------------------------------------------------------ */

#define THREADS 4
#define VALUES  20000

struct value {
    uint32_t *p;
    uint32_t words;
};

struct worker {
    arena_shared *s;
    uint32_t id;
    struct value *v;
    int errors;
};

/* Stores VALUES values of 1..64 words, each filled with (thread, sequence). */
static void *allocate(void *arg)
{
    struct worker *w = (struct worker *)arg;
    for (uint32_t i = 0; i < VALUES; i++) {
        uint32_t words = 1 + (i * 13 + w->id) % 64;
        if (i % 997 == 0)
            words = 2000; /* now and then a big one, placed under the lock */
        uint32_t *p = i % 3 ? (uint32_t *)arena_shared_alloc(w->s, words * 4)
                            : (uint32_t *)arena_shared_calloc(w->s, words, 4);
        if (!p) {
            w->errors++;
            continue;
        }
        for (uint32_t k = 0; k < words; k++)
            w->errors += i % 3 == 0 && p[k] != 0;
        for (uint32_t k = 0; k < words; k++)
            p[k] = w->id << 20 ^ i;
        w->v[i].p = p;
        w->v[i].words = words;
    }
    return NULL;
}

static int by_address(const void *x, const void *y)
{
    uintptr_t a = (uintptr_t)((const struct value *)x)->p;
    uintptr_t b = (uintptr_t)((const struct value *)y)->p;
    return a < b ? -1 : a > b;
}

static void run_batch(arena_shared *s)
{
    pthread_t t[THREADS];
    struct worker w[THREADS];
    struct value *all = (struct value *)calloc(THREADS * VALUES, sizeof *all);
    assert_non_null(all);
    for (uint32_t i = 0; i < THREADS; i++) {
        w[i] = (struct worker){s, i + 1, all + i * VALUES, 0};
        assert_int_equal(pthread_create(&t[i], NULL, allocate, &w[i]), 0);
    }
    for (uint32_t i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(w[i].errors, 0);
    }
    /* Every value still holds its own pattern... */
    for (uint32_t i = 0; i < THREADS; i++)
        for (uint32_t j = 0; j < VALUES; j++) {
            struct value *v = &all[i * VALUES + j];
            for (uint32_t k = 0; k < v->words; k++)
                assert_int_equal(v->p[k], (i + 1) << 20 ^ j);
        }
    /* ...and no two values overlap. */
    qsort(all, THREADS * VALUES, sizeof *all, by_address);
    for (size_t i = 1; i < THREADS * VALUES; i++)
        assert_true((uintptr_t)(all[i - 1].p + all[i - 1].words) <= (uintptr_t)all[i].p);
    free(all);
}

static void test_many_threads_never_overlap(void **state)
{
    arena_shared *s = arena_shared_create(64 * 1024, 4096, NULL);
    arena_guard_stats g0, g;
    (void)state;
    assert_non_null(s);
    run_batch(s);
    size_t held = arena_shared_retained(s);
    assert_true(held > 0);
    arena_guard_get_stats(&g0);
    arena_shared_reset(s, SIZE_MAX); /* the threads are joined */
    run_batch(s);
    arena_guard_get_stats(&g);
    /* A guarded batch (ARENA_GUARD) maps its chunks beside the spares. */
    assert_true(arena_shared_retained(s) <=
                (g.batches != g0.batches ? 2 : 1) * held + 4 * 64 * 1024);
    arena_shared_reset(s, 0);
    run_batch(s);
    arena_shared_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_are_aligned_and_distinct),
        cmocka_unit_test(test_reset_reuses_chunks_and_honours_the_limit),
        cmocka_unit_test(test_a_recurring_batch_keeps_its_chunks),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_runs_follow_what_a_thread_stores),
        cmocka_unit_test(test_a_grown_run_falls_back_to_the_smallest),
        cmocka_unit_test(test_many_threads_never_overlap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
