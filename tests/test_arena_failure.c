/* SPDX-License-Identifier: MIT */
/*
 * Failure sweep: a mixed workload (every kind of store, oversized values,
 * refs, grow, marks and rewinds, resets, size 0 and sizes near SIZE_MAX) is
 * run once to count its backing calls, then once for every N with the
 * backing failing at call N (and, separately, from call N on).
 *
 * The model (model.h) checks at every failure that the call returned NULL or
 * the empty ref, that arena_size(), arena_retained() and arena_check() are as
 * before, and that every earlier value is intact; that no call fails unless
 * the backing refused; and, at the release ending each run, that everything
 * went back to the backing.
 */
#include "model.h"

#include <stdalign.h>

static test_backing tb;

#define STEPS 800

typedef struct sweep_config {
    uint64_t seed;
    size_t chunk_size; /* 0: the caller-buffer arena */
} sweep_config;

/* Runs the workload; returns the number of backing calls it made. */
static size_t run_workload(const sweep_config *c, size_t fail_at, size_t fail_from)
{
    alignas(16) static unsigned char buf[2000 + 3];
    arena_allocator al = tb_allocator(&tb);
    size_t i, calls;

    tb.fail_at = fail_at;
    tb.fail_from = fail_from;
    md.tb = &tb;
    if (c->chunk_size) {
        arena_init_with(&md.own, c->chunk_size, &al);
        model_start(&md, &md.own, c->seed, c->chunk_size, 0);
    } else {
        arena_init_buffer(&md.own, buf + 3, 2000, &al);
        model_start(&md, &md.own, c->seed, ARENA_DEFAULT_CHUNK, 2000 - (ARENA_ALIGN - 3));
        md.big_rarity = 4; /* 128 KiB values: keep the run short */
    }
    for (i = 0; i < STEPS; i++) {
        model_step(&md);
        if (i % 100 == 99) { /* a reset in every workload, whatever the draw */
            md.ops[MODEL_RESET]++;
            model_op_reset(&md);
            model_check_counters(&md);
        }
    }
    model_check_values(&md);
    calls = tb.calls;
    model_op_release(&md); /* checks that nothing leaked */
    return calls;
}

static void sweep(const sweep_config *c, bool from)
{
    size_t total, n, injected = 0, observed = 0, failures = 0;
    size_t i;

    total = run_workload(c, 0, 0);
    assert_int_equal(md.failures, 0);
    /* The workload is mixed: it does every kind of operation. */
    for (i = 0; i < MODEL_OPS; i++)
        MCHECK(&md, md.ops[i] > 0 || i == MODEL_RELEASE);
    assert_true(total >= 10);

    /* A failure changes what follows it, so a run may make more calls than
     * the first: go on past `total` while the runs still reach call N. */
    for (n = 1;; n++) {
        size_t calls = from ? run_workload(c, 0, n) : run_workload(c, n, 0);
        if (calls < n && n > total)
            break;
        if (calls >= n) {
            injected++;
            observed += md.failures + md.refused > 0;
        }
        failures += md.failures;
        MCHECK(&md, n < 20 * total + 100);
    }
    assert_true(injected >= total);
    /* An injected failure shows as a failed call. */
    assert_true(observed * 10 >= injected * 9);
    print_message("sweep seed %llu chunk size %zu %s: %zu backing calls, %zu runs with a failure "
                  "injected, %zu of them seen failing, %zu failed calls checked\n",
                  (unsigned long long)c->seed, c->chunk_size, from ? "fail-from-N" : "fail-at-N",
                  total, injected, observed, failures);
}

static void test_sweep_fail_at_512(void **state)
{
    sweep_config c = {11, 512};
    (void)state;
    sweep(&c, false);
}

static void test_sweep_fail_at_1000(void **state)
{
    sweep_config c = {12, 1000};
    (void)state;
    sweep(&c, false);
}

static void test_sweep_fail_from_512(void **state)
{
    sweep_config c = {13, 512};
    (void)state;
    sweep(&c, true);
}

static void test_sweep_buffer_arena(void **state)
{
    sweep_config c = {14, 0};
    (void)state;
    sweep(&c, false);
    sweep(&c, true);
}

/* The same idea, spelled out for one value of each kind: with the backing
 * refusing everything, each store that needs a chunk fails cleanly. */
static void test_every_entry_point_out_of_memory(void **state)
{
    arena a;
    arena_allocator al = tb_allocator(&tb);
    char *v;
    size_t size, retained;
    (void)state;

    arena_init_with(&a, 256, &al);
    v = (char *)arena_alloc(&a, 100);
    fill_pattern(v, 100, 1);
    tb.fail_from = tb.calls + 1;
    /* fill the chunk's remaining room with what still fits */
    while (arena_alloc_aligned(&a, 1, 1))
        ;
    size = arena_size(&a);
    retained = arena_retained(&a);
#define OOM(expr)                                                                                  \
  do {                                                                                             \
    assert_null(expr);                                                                             \
    assert_int_equal(arena_size(&a), size);                                                        \
    assert_int_equal(arena_retained(&a), retained);                                                \
    assert_true(arena_check(&a));                                                                  \
    assert_true(has_pattern(v, 100, 1));                                                           \
  } while (0)
    OOM(arena_alloc(&a, 8));
    OOM(arena_alloc(&a, 1000)); /* oversized */
    OOM(arena_alloc_aligned(&a, 8, 64));
    OOM(arena_alloc_aligned(&a, 8, 4096));
    OOM(arena_calloc(&a, 2, 4));
    OOM(arena_copy(&a, "abcdefgh", 8, 1));
    OOM(arena_strdup(&a, "x"));
    OOM(arena_strndup(&a, "xyz", 3));
    OOM(ARENA_NEW(&a, uint64_t));
    OOM(ARENA_NEW_ARRAY(&a, uint32_t, 3));
    OOM(ARENA_ALLOC_ARRAY(&a, uint32_t, 3));
    OOM(arena_realloc(&a, v, 100, 200));
    OOM(arena_realloc(&a, NULL, 0, 8));
    assert_true(arena_ref_empty(arena_ref_copy(&a, "abc", 3, 1)));
    assert_true(arena_ref_empty(arena_ref_strndup(&a, "abc", 3)));
    assert_int_equal(arena_size(&a), size);
    assert_int_equal(recorded_errors.count, 0);
#undef OOM
    /* Size 0 and shrinking need no memory. */
    assert_non_null(arena_alloc(&a, 0));
    assert_ptr_equal(arena_realloc(&a, v, 100, 50), v);
    /* It recovers when the backing does. */
    tb.fail_from = 0;
    assert_non_null(arena_alloc(&a, 8));
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_sweep_fail_at_512),
        T(test_sweep_fail_at_1000),
        T(test_sweep_fail_from_512),
        T(test_sweep_buffer_arena),
        T(test_every_entry_point_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
