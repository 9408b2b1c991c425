/* SPDX-License-Identifier: MIT */
/*
 * Guard sampling by time (arena_guard_sample_interval()): how many batches
 * a tight loop guards in the time it runs, alone, through an arena cache and
 * through scratch scopes, in several threads at once (one interval for the
 * whole process), and in a forked child.  Every bound comes from the time
 * the loop measured, so that a loaded machine moves both: at most one
 * guarded batch per interval, plus one (the interval since the last guarded
 * batch, of an earlier test, may have passed as the loop begins), and at
 * least one per two intervals of the time the loop was not stalled (an
 * arena looks at the clock about eight times an interval, but only while
 * its thread runs).
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
 * guarded batch that none ran, up to `arenas` in all): each at least an
 * interval after the last, the first possibly at once, and at most two
 * intervals apart, the first within two of the start (the countdown's
 * lateness, with room for a loaded machine). */
static void assert_bounded(unsigned long long guarded, unsigned long long seen, unsigned arenas,
                           uint64_t ns, uint64_t stalled, uint64_t interval, const char *what)
{
    unsigned long long most = ns / interval + 1, least = (ns - stalled) / (2 * interval);
    print_message("%s: stalled %.1f ms\n", what, (double)stalled / 1e6);
    print_message(
        "%s: %llu guarded batches (%llu seen) in %.1f ms at %.0f ms (bounds %llu..%llu)\n", what,
        guarded, seen, (double)ns / 1e6, (double)interval / 1e6, least, most);
    assert_true(seen <= guarded && guarded - seen <= arenas);
    assert_true(guarded <= most);
    assert_true(guarded >= least);
}

/* A loop that runs for a time: its start, the time it stalled (a step of
 * 64 batches, microseconds of work, that took over 2 ms: the thread did not
 * run), and its steps. */
struct loop {
    uint64_t t0, t, stalled;
    unsigned i;
};

static void loop_start(struct loop *l)
{
    l->t0 = l->t = now_ns();
    l->stalled = 0;
    l->i = 0;
}

/* Whether the loop goes on for `ns` nanoseconds from its start. */
static bool loop_on(struct loop *l, uint64_t ns)
{
    if (++l->i % 64 == 0) {
        uint64_t t = now_ns();
        if (t - l->t > 2 * MS)
            l->stalled += t - l->t;
        l->t = t;
    }
    return l->t - l->t0 < ns;
}

/* Batches of one arena, reset, for at least `ns` nanoseconds; the time they
 * took, and the time they stalled in *stalled. */
static uint64_t run_batches(arena *a, uint64_t ns, unsigned long long *seen, uint64_t *stalled)
{
    struct loop l;
    loop_start(&l);
    while (loop_on(&l, ns)) {
        assert_true(request(a, l.i));
        *seen += arena_guarded(a);
        arena_reset(a);
    }
    *stalled = l.stalled;
    return now_ns() - l.t0;
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
    uint64_t t0, ns, stalled;
    (void)state;

    arena_init(&a, 0);
    g0 = guarded_batches();
    t0 = now_ns();
    arena_guard_sample_interval(50 * MS);
    (void)run_batches(&a, 200 * MS, &seen, &stalled);
    ns = now_ns() - t0;
    arena_guard_sample(0);
    assert_bounded(guarded_batches() - g0, seen, 1, ns, stalled, 50 * MS, "one arena");
    arena_release(&a);
}

/* A cache's recycles and scratch scopes end batches that are sampled as
 * any other. */
static void test_cache_and_scratch_sample(void **state)
{
    arena_cache *c = arena_cache_create(NULL);
    unsigned long long g0, seen = 0;
    struct loop l;
    (void)state;

    assert_non_null(c);
    g0 = guarded_batches();
    arena_guard_sample_interval(20 * MS);
    loop_start(&l);
    while (loop_on(&l, 100 * MS)) {
        arena *a = arena_cache_acquire(c);
        assert_non_null(a);
        assert_true(request(a, l.i));
        seen += arena_guarded(a);
        arena_cache_recycle(c, a);
    }
    assert_bounded(guarded_batches() - g0, seen, 1, now_ns() - l.t0, l.stalled, 20 * MS,
                   "cache recycles");

    seen = 0;
    g0 = guarded_batches();
    loop_start(&l);
    while (loop_on(&l, 100 * MS)) {
        arena_scope s = arena_scratch_begin(NULL, 0);
        assert_non_null(s.arena);
        assert_true(request(s.arena, l.i));
        seen += arena_guarded(s.arena);
        arena_scope_end(&s);
    }
    arena_guard_sample(0);
    assert_bounded(guarded_batches() - g0, seen, 1, now_ns() - l.t0, l.stalled, 20 * MS,
                   "scratch scopes");
    arena_scratch_release_thread();
    arena_cache_destroy(c);
}

struct thread_run {
    unsigned long long seen;
    uint64_t stalled;
};

static void *thread_batches(void *arg)
{
    struct thread_run *r = (struct thread_run *)arg;
    arena a;
    arena_init(&a, 0);
    r->seen = 0;
    (void)run_batches(&a, 200 * MS, &r->seen, &r->stalled);
    arena_release(&a);
    return NULL;
}

/* Several threads' arenas share one interval: the process guards no more
 * batches than one arena alone would.  (The least any thread stalled bounds
 * the time that none ran from above.) */
static void test_threads_share_the_interval(void **state)
{
    pthread_t t[THREADS];
    struct thread_run r[THREADS];
    unsigned long long g0, all = 0;
    uint64_t t0, ns, stalled = UINT64_MAX;
    int i;
    (void)state;

    g0 = guarded_batches();
    t0 = now_ns();
    arena_guard_sample_interval(50 * MS);
    for (i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, thread_batches, &r[i]), 0);
    for (i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        all += r[i].seen;
        stalled = r[i].stalled < stalled ? r[i].stalled : stalled;
    }
    ns = now_ns() - t0;
    arena_guard_sample(0);
    assert_bounded(guarded_batches() - g0, all, THREADS, ns, stalled, 50 * MS, "4 threads");
}

#if TEST_FORK
/* Whether `n` guarded batches, `seen` of them seen, fit a loop of `ns`
 * nanoseconds, `stalled` of them stalled, at 20 ms (assert_bounded(), but
 * one fewer at least: the loop begins where an interval may be under way). */
static bool fits(unsigned long long n, unsigned long long seen, uint64_t ns, uint64_t stalled)
{
    return seen <= n && n <= seen + 1 && n <= ns / (20 * MS) + 1 &&
           n + 1 >= (ns - stalled) / (40 * MS);
}

/* A forked child samples on at the parent's interval, and so does the
 * parent after it. */
static void test_fork_child_samples(void **state)
{
    arena a;
    unsigned long long seen = 0, g0;
    uint64_t ns, stalled;
    pid_t pid;
    int status = 0;
    (void)state;

    arena_init(&a, 0);
    arena_guard_sample_interval(20 * MS);
    (void)run_batches(&a, 30 * MS, &seen, &stalled);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsigned long long in_child = 0;
        g0 = guarded_batches();
        ns = run_batches(&a, 100 * MS, &in_child, &stalled);
        _exit(fits(guarded_batches() - g0, in_child, ns, stalled) ? 0 : 1);
    }
    seen = 0;
    g0 = guarded_batches();
    ns = run_batches(&a, 100 * MS, &seen, &stalled);
    assert_true(waitpid(pid, &status, 0) == pid);
    arena_guard_sample(0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    g0 = guarded_batches() - g0;
    print_message("fork: the parent's %llu guarded batches (%llu seen) in %.1f ms\n", g0, seen,
                  (double)ns / 1e6);
    assert_true(fits(g0, seen, ns, stalled));
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
