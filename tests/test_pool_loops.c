/* SPDX-License-Identifier: MIT */
/* The pool's inline paths in loops.  This file is built with optimisation
 * (tests/CMakeLists.txt): there the compiler keeps the pool's fields in
 * registers across a loop of calls (include/arena/pool.h), so every call that
 * goes out of line (an empty pool, a bad free reported to a handler that
 * returns, a closed pool, a handler that uses the pool itself) must leave the
 * next inline call working on the pool as it is now, not as it was before.
 * Each test runs its calls in a loop with no other call in it, then checks
 * every result against a model. */
#include <arena/pool.h>

#include "support.h"

/* A small deterministic generator (xorshift64*), seeded per run. */
static uint64_t rng_state;
static uint32_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

/* The pool's region, typed (the struct holds the addresses as integers). */
static char *slot(const arena_pool *p, size_t i) { return (char *)p->base + i * p->stride; }
static const uint32_t *stack_of(const arena_pool *p) { return (const uint32_t *)p->stack; }
static const uint32_t *states_of(const arena_pool *p) { return (const uint32_t *)p->state; }

/* The reports, in order: the handler only logs (it runs inside the loop). */
enum { MAX_OPS = 4000 };
static arena_error report_log[MAX_OPS];
static size_t nreports;
static void log_report(arena_error code, const char *message, void *ctx)
{
    (void)message;
    (void)ctx;
    if (nreports < MAX_OPS)
        report_log[nreports] = code;
    nreports++;
}

/* One step of a run: an alloc, or a free of `arg`. */
struct op {
    bool alloc;
    void *arg;
};

/* The loop under test: nothing but pool calls. */
static void run(arena_pool *p, const struct op *ops, void **got, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++) {
        if (ops[k].alloc)
            got[k] = arena_pool_alloc(p);
        else
            arena_pool_free(p, ops[k].arg);
    }
}

/* A run of `n` random steps on a pool of `cap` slots (closed: every call out
 * of line), planned by a model that knows which slot each alloc returns and
 * which free is refused with which code; then the pool must match the model
 * exactly: results, reports, counters, the free stack and every state. */
static void random_run(size_t size, size_t align, size_t cap, bool closed, uint64_t seed)
{
    static struct op ops[MAX_OPS];
    static void *got[MAX_OPS], *want[MAX_OPS];
    static arena_error codes[MAX_OPS];
    arena_pool p;
    uint32_t *free_stack = (uint32_t *)calloc(cap, sizeof *free_stack); /* the model's */
    uint32_t *state = (uint32_t *)calloc(cap, sizeof *state);
    uint32_t *live = (uint32_t *)calloc(cap, sizeof *live);
    size_t nfree = cap, nlive = 0, ncodes = 0, n = MAX_OPS, k, i;
    int local;

    assert_non_null(free_stack);
    assert_non_null(state);
    assert_non_null(live);
    rng_state = seed;
    assert_true(arena_pool_init(&p, size, align, cap, NULL));
    if (closed)
        p.open = 0;
    for (i = 0; i < cap; i++)
        free_stack[i] = (uint32_t)(cap - 1 - i);
    for (k = 0; k < n; k++) {
        uint32_t r = rng() % 100;
        want[k] = NULL;
        if (r < 45) { /* alloc: the top of the stack, or NULL when empty */
            ops[k].alloc = true;
            if (nfree) {
                i = free_stack[--nfree];
                state[i] = ARENA__POOL_LIVE;
                live[nlive++] = (uint32_t)i;
                want[k] = slot(&p, i);
            }
        } else if (r < 80 && nlive) { /* free a live slot */
            size_t j = rng() % nlive;
            i = live[j];
            live[j] = live[--nlive];
            free_stack[nfree++] = (uint32_t)i;
            state[i] = ARENA__POOL_FREED;
            ops[k].alloc = false;
            ops[k].arg = slot(&p, i);
        } else { /* a bad free: refused, the model unchanged */
            size_t s = rng() % cap;
            ops[k].alloc = false;
            codes[ncodes++] = ARENA_ERR_FOREIGN_POINTER;
            switch (rng() % 6) {
            case 0:
                ops[k].arg = NULL;
                codes[ncodes - 1] = ARENA_ERR_NULL_FREE;
                break;
            case 1:
                ops[k].arg = &local;
                if (p.stride > 1)
                    ops[k].arg = slot(&p, s) + 1 + rng() % (p.stride - 1);
                break;
            case 2: ops[k].arg = rng() % 2 ? slot(&p, cap) : (char *)p.base - p.stride; break;
            case 3: ops[k].arg = (void *)p.stack; break;
            default: /* a slot that is free: double free */
                if (state[s] == ARENA__POOL_LIVE) {
                    ops[k].arg = &local;
                } else {
                    ops[k].arg = slot(&p, s);
                    codes[ncodes - 1] = ARENA_ERR_DOUBLE_FREE;
                }
                break;
            }
        }
    }

    nreports = 0;
    arena_set_error_handler(log_report, NULL);
    run(&p, ops, got, n);
    arena_set_error_handler(NULL, NULL);

    for (k = 0; k < n; k++)
        if (ops[k].alloc)
            assert_ptr_equal(got[k], want[k]);
    assert_int_equal(nreports, ncodes);
    for (k = 0; k < ncodes; k++)
        assert_int_equal(report_log[k], codes[k]);
    assert_int_equal(arena_pool_available(&p), nfree);
    assert_int_equal(arena_pool_used(&p), nlive);
    assert_memory_equal(stack_of(&p), free_stack, nfree * sizeof *free_stack);
    assert_memory_equal(states_of(&p), state, cap * sizeof *state);
    record_errors();
    assert_true(arena_pool_check(&p));
    assert_int_equal(recorded_errors.count, 0);
    arena_pool_destroy(&p);
    free(free_stack);
    free(state);
    free(live);
}

static void test_random_runs(void **state)
{
    static const size_t shapes[][3] = {{16, 16, 64}, {24, 8, 300}, {3, 1, 17},
                                       {1, 1, 5},    {100, 4, 40}, {8, 4096, 9}};
    size_t s;
    int closed;
    (void)state;

    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (closed = 0; closed < 2; closed++)
            random_run(shapes[s][0], shapes[s][1], shapes[s][2], closed != 0, 7 + s);
}

/* A handler that uses the pool it is reporting on: it frees `victim` (or, with
 * `victim` NULL, takes a slot into `stolen`).  The inline call that reported
 * must not then store back the count it had before the report, and the next
 * inline call must see the slot the handler moved. */
static arena_pool *handler_pool;
static void *victim, *stolen;
static void meddle(arena_error code, const char *message, void *ctx)
{
    (void)code;
    (void)message;
    (void)ctx;
    if (victim) {
        arena_pool_free(handler_pool, victim);
        victim = NULL;
    } else {
        stolen = arena_pool_alloc(handler_pool);
    }
}

/* Frees `bad` (reported: the handler frees `v`), then takes a slot: `v`. */
static void *free_bad_then_alloc(arena_pool *p, void *bad, void *v)
{
    void *q;
    victim = v;
    arena_pool_free(p, bad);
    q = arena_pool_alloc(p);
    return q;
}

static void test_handler_uses_the_pool(void **state)
{
    static void *got[64];
    arena_pool p;
    size_t k;
    int closed;
    (void)state;

    for (closed = 0; closed < 2; closed++) {
        assert_true(arena_pool_init(&p, 32, 16, 64, NULL));
        if (closed)
            p.open = 0;
        handler_pool = &p;
        arena_set_error_handler(meddle, NULL);
        /* Take every slot; then each bad free hands one back through the
         * handler, and the alloc after it must get exactly that one. */
        for (k = 0; k < 64; k++)
            got[k] = arena_pool_alloc(&p);
        for (k = 0; k < 64; k++)
            assert_ptr_equal(free_bad_then_alloc(&p, NULL, got[k]), got[k]);
        assert_int_equal(arena_pool_available(&p), 0);
        /* An empty pool's alloc is not a report; a bad free lets the handler
         * take the last free slot, so the inline alloc after it gets NULL. */
        arena_pool_free(&p, got[5]);
        arena_pool_free(&p, (char *)got[5] + 1);
        assert_ptr_equal(stolen, got[5]);
        assert_null(arena_pool_alloc(&p));
        assert_int_equal(arena_pool_available(&p), 0);
        arena_set_error_handler(NULL, NULL);
        for (k = 0; k < 64; k++)
            arena_pool_free(&p, got[k]);
        assert_int_equal(arena_pool_available(&p), 64);
        record_errors();
        assert_true(arena_pool_check(&p));
        assert_int_equal(recorded_errors.count, 0);
        arena_pool_destroy(&p);
    }
}

/* Loops of allocs and of frees across the empty pool: the NULL from the slow
 * path, then the fast path again with the count the slow path left. */
static void test_alloc_past_empty_in_a_loop(void **state)
{
    enum { CAP = 50, N = 80 };
    static void *got[N];
    arena_pool p;
    size_t k;
    (void)state;

    assert_true(arena_pool_init(&p, 16, 8, CAP, NULL));
    for (k = 0; k < N; k++)
        got[k] = arena_pool_alloc(&p);
    for (k = 0; k < N; k++)
        assert_ptr_equal(got[k], k < CAP ? slot(&p, k) : NULL);
    for (k = 0; k < CAP; k += 2)
        arena_pool_free(&p, got[k]);
    for (k = 0; k < N; k++)
        got[k] = arena_pool_alloc(&p);
    for (k = 0; k < N; k++) /* LIFO: the last freed first */
        assert_ptr_equal(got[k], k < CAP / 2 ? slot(&p, CAP - 2 - 2 * k) : NULL);
    assert_int_equal(arena_pool_available(&p), 0);
    assert_true(arena_pool_check(&p));
    arena_pool_destroy(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_runs),
        cmocka_unit_test(test_handler_uses_the_pool),
        cmocka_unit_test(test_alloc_past_empty_in_a_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
