/* SPDX-License-Identifier: MIT */
/*
 * Guard sampling by time (arena_guard_sample_interval()): how many batches
 * a tight loop guards in the time it runs, alone, through an arena cache and
 * through scratch scopes, in several threads at once (one interval for the
 * whole process), and in a forked child.  Every bound comes from the time
 * the loop measured, so that a loaded machine moves both: at most one
 * guarded batch per interval, the first at once (the interval has passed
 * when the setting changes), and at least one per two intervals (an arena
 * looks at the clock about eight times an interval).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <time.h>
#if defined(__unix__) || defined(__APPLE__)
#  include <sys/wait.h>
#  include <unistd.h>
#  define TEST_FORK 1
#else
#  define TEST_FORK 0
#endif

#include <arena/guard.h>
#include <arena/thread.h>

#include "support.h"

#define MS      ((uint64_t)1000000)
#define THREADS 4

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned long long guarded_batches(void)
{
    arena_guard_stats s;
    arena_guard_get_stats(&s);
    return s.batches;
}

/* Small values of assorted sizes, as a request's. */
static bool request(arena *a, unsigned seed)
{
    unsigned i;
    for (i = 0; i < 24; i++) {
        char *p = (char *)arena_alloc(a, 16 + (seed * 7 + i * 37) % 400);
        if (!p)
            return false;
        p[0] = (char)i;
    }
    return true;
}

/* The guarded batches of loops that ran `ns` nanoseconds at `interval`
 * (`seen` of them seen guarded: each arena's last reset may have decided a
 * guarded batch that none ran, up to `arenas` in all): the first at once,
 * the others at least an interval apart and at most two (the countdown's
 * lateness, with room for a loaded machine). */
static void assert_bounded(unsigned long long guarded, unsigned long long seen, unsigned arenas,
                           uint64_t ns, uint64_t interval, const char *what)
{
    unsigned long long most = ns / interval + 1, least = ns / (2 * interval);
    print_message(
        "%s: %llu guarded batches (%llu seen) in %.1f ms at %.0f ms (bounds %llu..%llu)\n", what,
        guarded, seen, (double)ns / 1e6, (double)interval / 1e6, least, most);
    assert_true(seen <= guarded && guarded - seen <= arenas);
    assert_true(guarded <= most);
    assert_true(guarded >= least);
}

/* Batches of one arena, reset, for at least `ns` nanoseconds; the time they
 * took. */
static uint64_t run_batches(arena *a, uint64_t ns, unsigned long long *seen)
{
    uint64_t t0 = now_ns(), t = t0;
    unsigned i = 0;
    while (t - t0 < ns) {
        assert_true(request(a, i++));
        *seen += arena_guarded(a);
        arena_reset(a);
        if (i % 64 == 0)
            t = now_ns();
    }
    return now_ns() - t0;
}

static int setup(void **state)
{
    (void)state;
    arena_guard_sample(0);
    return 0;
}

/* A tight loop over 200 ms at 50 ms: 2 to 5 guarded batches. */
static void test_interval_bounds_a_loop(void **state)
{
    arena a;
    unsigned long long g0, seen = 0;
    uint64_t t0, ns;
    (void)state;

    arena_init(&a, 0);
    g0 = guarded_batches();
    t0 = now_ns();
    arena_guard_sample_interval(50 * MS);
    (void)run_batches(&a, 200 * MS, &seen);
    ns = now_ns() - t0;
    arena_guard_sample(0);
    assert_bounded(guarded_batches() - g0, seen, 1, ns, 50 * MS, "one arena");
    arena_release(&a);
}

/* A cache's recycles and scratch scopes end batches that are sampled as
 * any other. */
static void test_cache_and_scratch_sample(void **state)
{
    arena_cache *c = arena_cache_create(NULL);
    unsigned long long g0, seen = 0;
    uint64_t t0, t, ns;
    unsigned i = 0;
    (void)state;

    assert_non_null(c);
    g0 = guarded_batches();
    t0 = t = now_ns();
    arena_guard_sample_interval(20 * MS);
    while (t - t0 < 100 * MS) {
        arena *a = arena_cache_acquire(c);
        assert_non_null(a);
        assert_true(request(a, i++));
        seen += arena_guarded(a);
        arena_cache_recycle(c, a);
        if (i % 64 == 0)
            t = now_ns();
    }
    ns = now_ns() - t0;
    assert_bounded(guarded_batches() - g0, seen, 1, ns, 20 * MS, "cache recycles");

    seen = 0;
    g0 = guarded_batches();
    t0 = t = now_ns();
    arena_guard_sample_interval(20 * MS);
    while (t - t0 < 100 * MS) {
        arena_scope s = arena_scratch_begin(NULL, 0);
        assert_non_null(s.arena);
        assert_true(request(s.arena, i++));
        seen += arena_guarded(s.arena);
        arena_scope_end(&s);
        if (i % 64 == 0)
            t = now_ns();
    }
    ns = now_ns() - t0;
    arena_guard_sample(0);
    assert_bounded(guarded_batches() - g0, seen, 1, ns, 20 * MS, "scratch scopes");
    arena_scratch_release_thread();
    arena_cache_destroy(c);
}

static void *thread_batches(void *arg)
{
    arena a;
    unsigned long long seen = 0;
    arena_init(&a, 0);
    (void)run_batches(&a, 200 * MS, &seen);
    arena_release(&a);
    *(unsigned long long *)arg = seen;
    return NULL;
}

/* Several threads' arenas share one interval: the process guards no more
 * batches than one arena alone would. */
static void test_threads_share_the_interval(void **state)
{
    pthread_t t[THREADS];
    unsigned long long seen[THREADS], g0, all = 0;
    uint64_t t0, ns;
    int i;
    (void)state;

    g0 = guarded_batches();
    t0 = now_ns();
    arena_guard_sample_interval(50 * MS);
    for (i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, thread_batches, &seen[i]), 0);
    for (i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        all += seen[i];
    }
    ns = now_ns() - t0;
    arena_guard_sample(0);
    assert_bounded(guarded_batches() - g0, all, THREADS, ns, 50 * MS, "4 threads");
}

/* A forked child samples on at the parent's interval, and so does the
 * parent after it. */
#if TEST_FORK
static void test_fork_child_samples(void **state)
{
    arena a;
    unsigned long long seen = 0, g0;
    uint64_t ns;
    pid_t pid;
    int status = 0;
    (void)state;

    arena_init(&a, 0);
    arena_guard_sample_interval(20 * MS);
    (void)run_batches(&a, 30 * MS, &seen);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsigned long long in_child = 0, n;
        g0 = guarded_batches();
        ns = run_batches(&a, 100 * MS, &in_child);
        n = guarded_batches() - g0;
        /* The first look may find the interval not yet passed: one fewer
         * than assert_bounded() allows at least. */
        _exit(in_child <= n && n <= in_child + 1 && n <= ns / (20 * MS) + 1 &&
                      n + 1 >= ns / (40 * MS)
                  ? 0
                  : 1);
    }
    seen = 0;
    g0 = guarded_batches();
    ns = run_batches(&a, 100 * MS, &seen);
    assert_true(waitpid(pid, &status, 0) == pid);
    arena_guard_sample(0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    g0 = guarded_batches() - g0;
    print_message("fork: the parent's %llu guarded batches (%llu seen) in %.1f ms\n", g0, seen,
                  (double)ns / 1e6);
    assert_true(seen <= g0 && g0 <= seen + 1);
    assert_true(g0 <= ns / (20 * MS) + 1 && g0 + 1 >= ns / (40 * MS));
    arena_release(&a);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_interval_bounds_a_loop, setup),
        cmocka_unit_test_setup(test_cache_and_scratch_sample, setup),
        cmocka_unit_test_setup(test_threads_share_the_interval, setup),
#if TEST_FORK
        cmocka_unit_test_setup(test_fork_child_samples, setup),
#endif
    };
    if (!arena_guard_available()) {
        print_message("guarded batches are unavailable here: nothing to test\n");
        return 0;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
