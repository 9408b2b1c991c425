/* SPDX-License-Identifier: MIT */
/*
 * Cleanups on the shared arena: pushes and cancels from several threads at
 * once; each cleanup pushed and not cancelled runs exactly once, latest
 * first per thread, at arena_shared_reset() or arena_shared_destroy(), in
 * the resetting thread.  Runs under TSan (the
 * tsan preset builds the test_thread_* suites).
 */
#include "support.h"

#include <pthread.h>

#include <arena/thread.h>

#define THREADS 4
#define PUSHES  500

static arena_shared *shared;
static int ran[THREADS][PUSHES]; /* written by the resetting thread only */
static int order[THREADS];       /* the last index run per thread: descending */
static bool in_order;

static void mark_ran(void *ctx)
{
    int *slot = (int *)ctx;
    int t = (int)((slot - &ran[0][0]) / PUSHES), i = (int)((slot - &ran[0][0]) % PUSHES);
    (*slot)++;
    if (i >= order[t])
        in_order = false;
    order[t] = i;
    /* A cleanup may allocate from the arena whose batch ends. */
    assert_non_null(arena_shared_alloc(shared, 32));
}

static void *pusher(void *arg)
{
    int t = (int)(intptr_t)arg, i;
    for (i = 0; i < PUSHES; i++) {
        arena_cleanup *c = arena_shared_cleanup_push(shared, mark_ran, &ran[t][i]);
        assert_non_null(c);
        assert_non_null(arena_shared_alloc(shared, 24 + (size_t)i % 100));
        if (i % 5 == 4) /* every fifth is closed early */
            arena_shared_cleanup_cancel(shared, c);
    }
    return NULL;
}

static void run_batch(bool destroy)
{
    pthread_t th[THREADS];
    int t, i;
    memset(ran, 0, sizeof ran);
    for (t = 0; t < THREADS; t++)
        order[t] = PUSHES;
    in_order = true;
    for (t = 0; t < THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, pusher, (void *)(intptr_t)t), 0);
    for (t = 0; t < THREADS; t++)
        assert_int_equal(pthread_join(th[t], NULL), 0);
    if (destroy)
        arena_shared_destroy(shared);
    else
        arena_shared_reset(shared, SIZE_MAX);
    for (t = 0; t < THREADS; t++)
        for (i = 0; i < PUSHES; i++)
            assert_int_equal(ran[t][i], i % 5 == 4 ? 0 : 1);
    assert_true(in_order);
}

static void test_shared_cleanups(void **state)
{
    (void)state;
    shared = arena_shared_create(0, 0, NULL);
    assert_non_null(shared);
    run_batch(false);
    run_batch(false);
    run_batch(true);
}

static void push_again(void *ctx)
{
    int before = recorded_errors.count;
    (void)ctx;
    assert_null(arena_shared_cleanup_push(shared, mark_ran, &ran[0][0]));
    assert_true(test_misuse_reported(before, ARENA_ERR_CLEANUP));
}

static void test_shared_push_from_a_cleanup(void **state)
{
    (void)state;
    shared = arena_shared_create(0, 0, NULL);
    assert_non_null(shared);
    assert_non_null(arena_shared_cleanup_push(shared, push_again, NULL));
    arena_shared_reset(shared, 0); /* refused, not a deadlock */
    assert_int_equal(recorded_errors.count, 1);
    assert_null(arena_shared_cleanup_push(shared, NULL, NULL));
    assert_int_equal(recorded_errors.last, ARENA_ERR_CLEANUP);
    arena_shared_destroy(shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shared_cleanups, setup_record_errors,
                                        teardown_record_errors),
        cmocka_unit_test_setup_teardown(test_shared_push_from_a_cleanup, setup_record_errors,
                                        teardown_record_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
