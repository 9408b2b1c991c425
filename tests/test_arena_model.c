/* SPDX-License-Identifier: MIT */
/*
 * Thousands of random mixed operations checked against a model (model.h):
 * every live value intact, arena_size() and arena_retained() exact,
 * arena_check() true, after every step.
 *
 * Deterministic: each run is seeded, and a failure names its seed and step.
 * ARENA_TEST_SEED=<n> replays one seed (in every configuration);
 * ARENA_TEST_STEPS=<n> changes the number of steps per run.
 */
#include "model.h"

#include <stdalign.h>

static test_backing tb;

static size_t env_size(const char *name, size_t fallback)
{
    const char *s = getenv(name);
    return s && *s ? (size_t)strtoull(s, NULL, 0) : fallback;
}

static void run_seed(uint64_t seed, size_t chunk_size, size_t steps)
{
    arena_allocator al = tb_allocator(&tb);
    size_t i;

    arena_init_with(&md.own, chunk_size, &al);
    md.tb = &tb;
    model_start(&md, &md.own, seed, chunk_size, 0);
    for (i = 0; i < steps; i++)
        model_step(&md);
    model_check_values(&md);
    model_op_release(&md);
    /* The run exercised what it is meant to. */
    for (i = 0; i < MODEL_OPS; i++)
        MCHECK(&md, md.ops[i] > 0 || steps < 2000);
}

static void run_seeds(size_t chunk_size)
{
    static const uint64_t seeds[] = {1, 2, 3, 0xC0FFEE, 20261130};
    size_t steps = env_size("ARENA_TEST_STEPS", 4000);
    uint64_t one = env_size("ARENA_TEST_SEED", 0);
    size_t i;

    if (one) {
        run_seed(one, chunk_size, steps);
        return;
    }
    for (i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        run_seed(seeds[i] * 1000003u + chunk_size, chunk_size, steps);
}

static void test_model_chunk_size_512(void **state)
{
    (void)state;
    run_seeds(512);
}

static void test_model_chunk_size_1000(void **state)
{
    (void)state;
    run_seeds(1000);
}

static void test_model_chunk_size_4096(void **state)
{
    (void)state;
    run_seeds(4096);
}

/* The caller's buffer as the first chunk (at an unaligned start), further
 * chunks from the backing. */
static void test_model_buffer_arena(void **state)
{
    alignas(16) static unsigned char buf[3000 + 1];
    size_t steps = env_size("ARENA_TEST_STEPS", 4000) / 2;
    uint64_t seed = env_size("ARENA_TEST_SEED", 77);
    arena_allocator al = tb_allocator(&tb);
    size_t i;
    (void)state;

    arena_init_buffer(&md.own, buf + 1, 3000, &al);
    md.tb = &tb;
    model_start(&md, &md.own, seed, ARENA_DEFAULT_CHUNK, 3000 - (ARENA_ALIGN - 1));
    MCHECK(&md, arena_retained(md.a) == md.base);
    for (i = 0; i < steps; i++)
        model_step(&md);
    model_check_values(&md);
    model_op_release(&md);
    MCHECK(&md, arena_retained(md.a) == md.base);
}

/* A fixed caller's buffer (no backing): a value that does not fit is NULL
 * with nothing changed, and the heap is never used. */
static void test_model_fixed_buffer(void **state)
{
    alignas(16) static unsigned char buf[16384 + 5];
    size_t steps = env_size("ARENA_TEST_STEPS", 4000);
    uint64_t seed = env_size("ARENA_TEST_SEED", 55);
    size_t i;
    (void)state;

    arena_init_buffer(&md.own, buf + 5, 16384, NULL);
    md.tb = NULL;
    model_start(&md, &md.own, seed, ARENA_DEFAULT_CHUNK, 16384 - (ARENA_ALIGN - 5));
    md.fixed = true;
    for (i = 0; i < steps; i++) {
        model_step(&md);
        MCHECK(&md, arena_retained(md.a) == md.base);
    }
    model_check_values(&md);
    MCHECK(&md, md.failures > 100); /* the buffer did fill up, many times */
    model_op_release(&md);
}

/* The zero-value arena on malloc: the same model without a recording backing. */
static void test_model_zero_value_malloc(void **state)
{
    size_t steps = env_size("ARENA_TEST_STEPS", 4000) / 2;
    uint64_t seed = env_size("ARENA_TEST_SEED", 99);
    size_t i;
    (void)state;

    memset(&md.own, 0, sizeof md.own);
    md.tb = NULL;
    model_start(&md, &md.own, seed, ARENA_DEFAULT_CHUNK, 0);
    for (i = 0; i < steps; i++)
        model_step(&md);
    model_check_values(&md);
    model_op_release(&md);
}

/* The model's limits and cleanups (model.h): a limit set at random, a
 * budget of 24 KiB charged at times, cleanups pushed, cancelled, and run by
 * resets, rewinds and releases, misbehaving ones included. */
static void test_model_limits_cleanups(void **state)
{
    static const uint64_t seeds[] = {11, 12, 13};
    size_t steps = env_size("ARENA_TEST_STEPS", 4000);
    uint64_t one = env_size("ARENA_TEST_SEED", 0);
    arena_budget *group = arena_budget_create(24 * 1024, "suite");
    size_t k, i;
    (void)state;

    TEST_CHECK(group != NULL);
    for (k = 0; k < (one ? 1 : sizeof seeds / sizeof seeds[0]); k++) {
        arena_allocator al = tb_allocator(&tb);
        arena_init_with(&md.own, 1000, &al);
        md.tb = &tb;
        model_start(&md, &md.own, one ? one : seeds[k], 1000, 0);
        md.misuse = true;
        model_limits(&md, group);
        model_cleanups(&md);
        for (i = 0; i < steps; i++)
            model_step(&md);
        model_check_values(&md);
        model_op_release(&md);
        arena_set_budget(md.a, NULL);
        MCHECK(&md, arena_budget_used(group) == 0);
        /* The run exercised what it is meant to. */
        MCHECK(&md, (md.hits > 0 && md.ran > 0 && md.pushes > md.ran) || steps < 2000);
    }
    arena_budget_destroy(group);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_model_chunk_size_512),  T(test_model_chunk_size_1000),
        T(test_model_chunk_size_4096), T(test_model_buffer_arena),
        T(test_model_fixed_buffer),    T(test_model_zero_value_malloc),
        T(test_model_limits_cleanups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
