/* SPDX-License-Identifier: MIT */
/* The pool: every behaviour pool.h promises. */
#include <stdio.h>

#include <arena/pool.h>

#include "support.h"

/* support.h defines TEST_ASAN to 0 or 1. */
#if TEST_ASAN
#  include <sanitizer/asan_interface.h>
#endif

/* A small deterministic generator (xorshift64*), seeded per test. */
static uint64_t rng_state;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

/* The pool's region, typed (the struct holds the addresses as integers). */
static char *base_of(const arena_pool *p) { return (char *)p->base; }
static uint32_t *stack_of(const arena_pool *p) { return (uint32_t *)p->stack; }
static uint32_t *states_of(const arena_pool *p) { return (uint32_t *)p->state; }
static char *slot(const arena_pool *p, size_t i) { return base_of(p) + i * p->stride; }

/* ---- Capacity, LIFO, stability ---------------------------------------------- */

static void test_fill_and_exhaust(void **state)
{
    enum { CAP = 100 };
    arena_pool p;
    void *got[CAP];
    size_t i, j;
    (void)state;

    assert_true(arena_pool_init(&p, 24, 8, CAP, NULL));
    assert_int_equal(arena_pool_capacity(&p), CAP);
    assert_int_equal(arena_pool_used(&p), 0);
    assert_int_equal(arena_pool_available(&p), CAP);
    for (i = 0; i < CAP; i++) {
        got[i] = arena_pool_alloc(&p);
        assert_non_null(got[i]);
        assert_int_equal((uintptr_t)got[i] % 8, 0);
        assert_true(arena_pool_owns(&p, got[i]));
        for (j = 0; j < i; j++)
            assert_ptr_not_equal(got[i], got[j]);
        assert_int_equal(arena_pool_used(&p), i + 1);
        assert_int_equal(arena_pool_available(&p), CAP - i - 1);
    }
    assert_null(arena_pool_alloc(&p));
    assert_null(arena_pool_alloc(&p));
    assert_int_equal(arena_pool_used(&p), CAP);
    assert_true(arena_pool_check(&p));
    /* One freed slot is handed out again, then it is full once more. */
    arena_pool_free(&p, got[42]);
    assert_ptr_equal(arena_pool_alloc(&p), got[42]);
    assert_null(arena_pool_alloc(&p));
    for (i = 0; i < CAP; i++)
        arena_pool_free(&p, got[i]);
    assert_int_equal(arena_pool_available(&p), CAP);
    assert_true(arena_pool_check(&p));
    assert_int_equal(recorded_errors.count, 0);
    arena_pool_destroy(&p);
}

static void test_lifo_order(void **state)
{
    arena_pool p;
    char *a, *b, *c;
    (void)state;

    assert_true(arena_pool_init(&p, 16, 16, 8, NULL));
    /* A fresh pool hands out its slots in address order. */
    a = (char *)arena_pool_alloc(&p);
    b = (char *)arena_pool_alloc(&p);
    c = (char *)arena_pool_alloc(&p);
    assert_ptr_equal(a, slot(&p, 0));
    assert_ptr_equal(b, a + 16);
    assert_ptr_equal(c, a + 32);
    arena_pool_free(&p, b);
    arena_pool_free(&p, a);
    arena_pool_free(&p, c);
    assert_ptr_equal(arena_pool_alloc(&p), c);
    assert_ptr_equal(arena_pool_alloc(&p), a);
    assert_ptr_equal(arena_pool_alloc(&p), b);
    assert_ptr_equal(arena_pool_alloc(&p), a + 48); /* then the untouched ones */
    assert_int_equal(recorded_errors.count, 0);
    arena_pool_destroy(&p);
}

/* Random alloc/free against a model that predicts every result: the model's
 * free stack says which slot comes next, its live set says which pointers
 * may be freed, and each live object keeps its own byte pattern, which must
 * survive every other object's writes (no overlap, addresses stable). */
static void random_against_model(size_t size, size_t align, size_t cap, uint64_t seed)
{
    arena_pool p;
    char **live = (char **)calloc(cap, sizeof *live);
    uint64_t *ids = (uint64_t *)calloc(cap, sizeof *ids);
    char **model = (char **)calloc(cap, sizeof *model); /* the model's free stack */
    size_t nlive = 0, nfree = cap, i, step;
    uint64_t next_id = 0;

    assert_non_null(live);
    assert_non_null(ids);
    assert_non_null(model);
    rng_state = seed;
    assert_true(arena_pool_init(&p, size, align, cap, NULL));
    for (i = 0; i < cap; i++)
        model[i] = slot(&p, cap - 1 - i);
    for (step = 0; step < 20000; step++) {
        bool take = nlive == 0 || (nlive < cap && rng() % 100 < 55);
        if (take) {
            char *q = (char *)arena_pool_alloc(&p);
            assert_ptr_equal(q, model[--nfree]);
            assert_true(is_aligned(q, align));
            ids[nlive] = next_id++;
            fill_pattern(q, size, ids[nlive]);
            live[nlive++] = q;
        } else {
            size_t k = (size_t)(rng() % nlive);
            assert_true(has_pattern(live[k], size, ids[k]));
            arena_pool_free(&p, live[k]);
            model[nfree++] = live[k];
            live[k] = live[--nlive];
            ids[k] = ids[nlive];
        }
        assert_int_equal(arena_pool_used(&p), nlive);
        assert_int_equal(arena_pool_available(&p), nfree);
        if (nlive == cap)
            assert_null(arena_pool_alloc(&p));
        if (step % 1000 == 0) {
            for (i = 0; i < nlive; i++)
                assert_true(has_pattern(live[i], size, ids[i]));
            assert_true(arena_pool_check(&p));
        }
    }
    for (i = 0; i < nlive; i++)
        assert_true(has_pattern(live[i], size, ids[i]));
    assert_true(arena_pool_check(&p));
    assert_int_equal(recorded_errors.count, 0);
    arena_pool_destroy(&p);
    free(live);
    free(ids);
    free(model);
}

static void test_random_against_model(void **state)
{
    (void)state;
    random_against_model(16, 8, 64, 1);
    random_against_model(24, 8, 1000, 2);
    random_against_model(3, 1, 257, 3);
    random_against_model(100, 64, 33, 4);
    random_against_model(1, 1, 300, 5);
    random_against_model(7, 4, 100, 6);
}

/* ---- Misuse ---------------------------------------------------------------- */

/* Frees `bad` and expects exactly one report of `code` naming the function and
 * the pointer, with the pool unchanged (counters, check, and the next slot). */
static void expect_misuse(arena_pool *p, void *bad, arena_error code)
{
    size_t used = arena_pool_used(p), avail = arena_pool_available(p);
    arena_pool before = *p;
    uint32_t *states = (uint32_t *)malloc(p->cap * sizeof *states);
    uint32_t *stack = (uint32_t *)malloc(p->cap * sizeof *stack);
    char name[64];
    void *next;

    assert_non_null(states);
    assert_non_null(stack);
    memcpy(states, states_of(p), p->cap * sizeof *states);
    memcpy(stack, stack_of(p), p->cap * sizeof *stack);
    snprintf(name, sizeof name, "%p", bad);
    if (!bad)
        snprintf(name, sizeof name, "NULL");
    record_errors();
    arena_pool_free(p, bad);
    /* Exactly as before: the struct, every state, the whole stack. */
    assert_memory_equal(&before, p, sizeof before);
    assert_memory_equal(states, states_of(p), p->cap * sizeof *states);
    assert_memory_equal(stack, stack_of(p), p->cap * sizeof *stack);
    free(states);
    free(stack);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, code);
    assert_non_null(strstr(recorded_errors.message, "arena_pool_free"));
    assert_non_null(strstr(recorded_errors.message, name));
    assert_int_equal(arena_pool_used(p), used);
    assert_int_equal(arena_pool_available(p), avail);
    assert_true(arena_pool_check(p));
    assert_int_equal(recorded_errors.count, 1);
    /* Still usable: the next slot is the one that was on top. */
    if (avail) {
        char *top = slot(p, stack_of(p)[p->nfree - 1]);
        next = arena_pool_alloc(p);
        assert_ptr_equal(next, top);
        arena_pool_free(p, next);
        assert_ptr_equal(slot(p, stack_of(p)[p->nfree - 1]), top);
    }
    assert_int_equal(recorded_errors.count, 1);
}

static void misuse_kinds(arena_pool *p)
{
    char *a = (char *)arena_pool_alloc(p);
    char *b = (char *)arena_pool_alloc(p);
    char *c = (char *)arena_pool_alloc(p);
    char *end = slot(p, p->cap);
    int local;

    assert_non_null(c);
    arena_pool_free(p, b);
    expect_misuse(p, NULL, ARENA_ERR_NULL_FREE);
    expect_misuse(p, &local, ARENA_ERR_FOREIGN_POINTER);
    expect_misuse(p, base_of(p) - p->stride, ARENA_ERR_FOREIGN_POINTER);
    expect_misuse(p, base_of(p) - 1, ARENA_ERR_FOREIGN_POINTER);
    expect_misuse(p, end, ARENA_ERR_FOREIGN_POINTER);
    expect_misuse(p, end + p->stride, ARENA_ERR_FOREIGN_POINTER);
    expect_misuse(p, stack_of(p), ARENA_ERR_FOREIGN_POINTER); /* the metadata */
    expect_misuse(p, states_of(p), ARENA_ERR_FOREIGN_POINTER);
    expect_misuse(p, (void *)(uintptr_t)-1, ARENA_ERR_FOREIGN_POINTER);
    if (p->stride > 1) {
        expect_misuse(p, a + 1, ARENA_ERR_FOREIGN_POINTER);
        expect_misuse(p, c + p->stride - 1, ARENA_ERR_FOREIGN_POINTER);
        expect_misuse(p, b + p->stride / 2, ARENA_ERR_FOREIGN_POINTER); /* a free slot */
    }
    expect_misuse(p, b, ARENA_ERR_DOUBLE_FREE); /* freed before */
    assert_non_null(strstr(recorded_errors.message, "freed earlier"));
    expect_misuse(p, end - p->stride, ARENA_ERR_DOUBLE_FREE); /* never handed out */
    assert_non_null(strstr(recorded_errors.message, "never handed out"));
    /* The pool goes on working: the live ones free cleanly. */
    record_errors();
    arena_pool_free(p, a);
    arena_pool_free(p, c);
    assert_int_equal(recorded_errors.count, 0);
    expect_misuse(p, c, ARENA_ERR_DOUBLE_FREE);
    assert_int_equal(arena_pool_used(p), 0);
}

static void test_misuse_reported_once_pool_unchanged(void **state)
{
    static const size_t shapes[][2] = {{16, 16}, {24, 8}, {3, 1}, {1, 1}, {100, 4}, {8, 4096}};
    size_t s;
    (void)state;

    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        arena_pool p;
        assert_true(arena_pool_init(&p, shapes[s][0], shapes[s][1], 10, NULL));
        misuse_kinds(&p);
        arena_pool_destroy(&p);
    }
}

/* A program linked to an instrumented library sees `open == 0`: every call
 * goes out of line, with the same results. */
static void test_closed_inline_paths(void **state)
{
    arena_pool p;
    char *a, *b;
    (void)state;

    assert_true(arena_pool_init(&p, 32, 16, 10, NULL));
    p.open = 0;
    assert_true(arena_pool_check(&p));
    a = (char *)arena_pool_alloc(&p);
    b = (char *)arena_pool_alloc(&p);
    assert_ptr_equal(a, slot(&p, 0));
    assert_ptr_equal(b, slot(&p, 1));
    arena_pool_free(&p, a);
    assert_ptr_equal(arena_pool_alloc(&p), a);
    arena_pool_free(&p, a);
    arena_pool_free(&p, b);
    assert_int_equal(recorded_errors.count, 0);
    misuse_kinds(&p);
    while (arena_pool_alloc(&p))
        ;
    assert_int_equal(arena_pool_available(&p), 0);
    assert_true(arena_pool_check(&p));
    arena_pool_destroy(&p);
}

/* The links live outside the slots: a stray write into a freed slot spoils
 * nothing the pool reads. */
static void test_stray_write_into_freed_slot(void **state)
{
    arena_pool p;
    char *a, *b;
    bool written = false;
    (void)state;

    assert_true(arena_pool_init(&p, 16, 8, 4, NULL));
    a = (char *)arena_pool_alloc(&p);
    b = (char *)arena_pool_alloc(&p);
    arena_pool_free(&p, a);
#if !TEST_ASAN /* under ASan (and memcheck) the write itself is reported, as it should be */
    if (!test_on_valgrind()) {
        memset(a, 0xff, 16);
        written = true;
    }
#endif
    assert_true(arena_pool_check(&p));
    assert_ptr_equal(arena_pool_alloc(&p), a);
    assert_ptr_equal(arena_pool_alloc(&p), b + 16);
    /* The checked build notices the write when it hands the slot out again. */
    assert_int_equal(recorded_errors.count, ARENA_CHECKED && written ? 1 : 0);
    if (ARENA_CHECKED && written)
        assert_int_equal(recorded_errors.last, ARENA_ERR_CORRUPT);
    arena_pool_destroy(&p);
}

/* ---- Shapes ------------------------------------------------------------------- */

static void test_every_shape(void **state)
{
    static const size_t sizes[] = {0, 1, 3, 7, 8, 24, 100, 4097};
    size_t s, align, i, j;
    (void)state;

    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (align = 1; align <= 4096; align *= 2) {
            enum { CAP = 17 };
            size_t size = sizes[s] ? sizes[s] : 1;
            char *got[CAP];
            arena_pool p;

            assert_true(arena_pool_init(&p, sizes[s], align, CAP, NULL));
            assert_true(arena_pool_check(&p));
            assert_true(p.stride >= size && p.stride % align == 0 && p.stride < size + align);
            for (i = 0; i < CAP; i++) {
                got[i] = (char *)arena_pool_alloc(&p);
                assert_non_null(got[i]);
                assert_int_equal((uintptr_t)got[i] % align, 0);
                memset(got[i], (int)i, size);
            }
            assert_null(arena_pool_alloc(&p));
            for (i = 0; i < CAP; i++) {
                for (j = 0; j < size; j++)
                    assert_int_equal((unsigned char)got[i][j], (unsigned char)i);
                for (j = 0; j < i; j++) /* no overlap */
                    assert_true(got[i] >= got[j] + size || got[j] >= got[i] + size);
                /* Every byte but the first of a slot is refused. */
                if (size > 1)
                    assert_false(arena_pool_owns(&p, got[i] + 1));
                assert_true(arena_pool_owns(&p, got[i]));
            }
            for (i = 0; i < CAP; i++)
                arena_pool_free(&p, got[(i * 7) % CAP]);
            assert_int_equal(arena_pool_available(&p), CAP);
            assert_true(arena_pool_check(&p));
            assert_int_equal(recorded_errors.count, 0);
            arena_pool_destroy(&p);
        }
    }
}

/* Exhaustive: for several strides, exactly the slot starts map to slots. */
static void test_owns_is_exact(void **state)
{
    static const size_t sizes[] = {1, 3, 6, 12, 24, 40, 48, 100, 192, 1000};
    size_t s;
    (void)state;

    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        arena_pool p;
        char *c;
        assert_true(arena_pool_init(&p, sizes[s], 1, 50, NULL));
        for (c = base_of(&p) - 3 * p.stride; c < slot(&p, 53); c++) {
            size_t off = (size_t)(c - base_of(&p));
            bool want = c >= base_of(&p) && off < 50 * p.stride && off % p.stride == 0;
            assert_int_equal(arena_pool_owns(&p, c), want);
        }
        assert_false(arena_pool_owns(&p, NULL));
        arena_pool_destroy(&p);
    }
}

/* ---- Storage: buffer, backing, overflow --------------------------------------- */

static void test_buffer_variant(void **state)
{
    size_t need = arena_pool_buffer_size(24, 8, 10);
    arena_pool p;
    char *buf = (char *)malloc(need + 64);
    char *got[10];
    size_t i;
    (void)state;

    assert_non_null(buf);
    assert_true(need >= 10 * 24);
    assert_false(arena_pool_init_buffer(&p, buf, need - 1, 24, 8, 10));
    assert_int_equal(arena_pool_capacity(&p), 0);
    assert_null(arena_pool_alloc(&p));
    assert_false(
        arena_pool_init_buffer(&p, buf + ARENA_ALIGN / 2, need, 24, 8, 10)); /* not ARENA_ALIGN */
    assert_false(arena_pool_init_buffer(&p, NULL, need, 24, 8, 10));
    assert_false(arena_pool_init_buffer(&p, buf, need, 24, 3, 10));
    assert_false(arena_pool_init_buffer(&p, buf, need, 24, 8, 0));
    assert_true(arena_pool_init_buffer(&p, buf, need, 24, 8, 10));
    assert_ptr_equal(base_of(&p), buf);
    assert_true(arena_pool_check(&p));
    for (i = 0; i < 10; i++) {
        got[i] = (char *)arena_pool_alloc(&p);
        assert_true(got[i] >= buf && got[i] + 24 <= buf + need);
    }
    assert_null(arena_pool_alloc(&p));
    arena_pool_free(&p, got[3]);
    assert_ptr_equal(arena_pool_alloc(&p), got[3]);
    arena_pool_destroy(&p);
    /* The buffer is the caller's again, whole (and unpoisoned under ASan). */
    memset(buf, 0, need + 64);
    free(buf);

    /* A buffer aligned to a large object alignment. */
    {
        size_t n = arena_pool_buffer_size(10, 256, 4);
        char *raw = (char *)malloc(n + 256);
        char *al;
        assert_non_null(raw);
        al = (char *)(((uintptr_t)raw + 255) & ~(uintptr_t)255);
        assert_false(arena_pool_init_buffer(&p, al + 16, n, 10, 256, 4));
        assert_true(arena_pool_init_buffer(&p, al, n, 10, 256, 4));
        for (i = 0; i < 4; i++)
            assert_int_equal((uintptr_t)arena_pool_alloc(&p) % 256, 0);
        arena_pool_destroy(&p);
        free(raw);
    }
    assert_int_equal(recorded_errors.count, 0);
}

static void test_backing_variant(void **state)
{
    static test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_pool p;
    size_t align;
    (void)state;

    assert_true(arena_pool_init(&p, 40, 8, 100, &al));
    assert_int_equal(tb.calls, 1);
    assert_int_equal(tb.live, 1);
    assert_int_equal(tb.live_bytes, arena_pool_buffer_size(40, 8, 100));
    assert_non_null(arena_pool_alloc(&p));
    arena_pool_destroy(&p);
    assert_int_equal(tb.live, 0);
    assert_int_equal(tb.frees, 1);
    assert_int_equal(arena_pool_capacity(&p), 0);

    /* Large alignments are padded inside the one block. */
    for (align = 32; align <= 4096; align *= 2) {
        void *q;
        assert_true(arena_pool_init(&p, 5, align, 3, &al));
        assert_int_equal(tb.live, 1);
        q = arena_pool_alloc(&p);
        assert_int_equal((uintptr_t)q % align, 0);
        arena_pool_free(&p, q);
        assert_true(arena_pool_check(&p));
        arena_pool_destroy(&p);
        assert_int_equal(tb.live, 0);
    }

    /* A failing backing: false, nothing allocated, the empty pool. */
    al = tb_allocator(&tb);
    tb.fail_at = 1;
    assert_false(arena_pool_init(&p, 16, 8, 10, &al));
    assert_int_equal(tb.calls, 1);
    assert_int_equal(tb.live, 0);
    assert_int_equal(arena_pool_capacity(&p), 0);
    assert_int_equal(arena_pool_available(&p), 0);
    assert_null(arena_pool_alloc(&p));
    assert_true(arena_pool_check(&p));
    arena_pool_destroy(&p);
    assert_int_equal(tb.live, 0);
    assert_int_equal(tb.frees, 0);
    /* The next call succeeds: nothing was left half done. */
    assert_true(arena_pool_init(&p, 16, 8, 10, &al));
    arena_pool_destroy(&p);
    assert_int_equal(tb.live, 0);
    assert_int_equal(recorded_errors.count, 0);
}

static void test_overflow_and_bad_arguments(void **state)
{
    static test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena_pool p;
    (void)state;

    tb.fail_from = 1; /* a size that does not overflow must still not be asked of malloc */
    assert_false(arena_pool_init(&p, SIZE_MAX, 1, 2, &al));
    assert_false(arena_pool_init(&p, SIZE_MAX / 2 + 1, 1, 2, &al));
    assert_false(arena_pool_init(&p, SIZE_MAX - 100, 4096, 1, &al));
    assert_false(arena_pool_init(&p, SIZE_MAX / 3, 1, 3, &al));
    assert_false(arena_pool_init(&p, 1, 1, SIZE_MAX, &al));
    assert_false(arena_pool_init(&p, 16, 16, (size_t)UINT32_MAX + 1, &al));
    assert_int_equal(tb.calls, 0); /* each refused before any allocation */
    assert_false(arena_pool_init(&p, 16, 8, 0, &al));
    assert_false(arena_pool_init(&p, 16, 0, 4, &al));
    assert_false(arena_pool_init(&p, 16, 3, 4, &al));
    assert_false(arena_pool_init(&p, 16, 24, 4, &al));
    assert_int_equal(tb.calls, 0);
    /* Large but representable: asked of the backing, which fails. */
    assert_false(arena_pool_init(&p, SIZE_MAX / 16, 1, 2, &al));
    assert_int_equal(tb.calls, 1);
    assert_int_equal(tb.live, 0);
    assert_int_equal(arena_pool_capacity(&p), 0);

    assert_int_equal(arena_pool_buffer_size(SIZE_MAX, 1, 2), 0);
    assert_int_equal(arena_pool_buffer_size(SIZE_MAX - 100, 4096, 1), 0);
    assert_int_equal(arena_pool_buffer_size(SIZE_MAX / 6, 1, 6), 0); /* metadata overflows */
    assert_int_equal(arena_pool_buffer_size(1, 1, SIZE_MAX), 0);
    assert_int_equal(arena_pool_buffer_size(16, 8, 0), 0);
    assert_int_equal(arena_pool_buffer_size(16, 6, 4), 0);
    assert_int_equal(arena_pool_buffer_size(16, 0, 4), 0);
    /* Slots (rounded up to 4 bytes), then 4 bytes of stack and 4 of state per slot. */
    assert_int_equal(arena_pool_buffer_size(16, 8, 10), 160 + 40 + 40);
    assert_int_equal(arena_pool_buffer_size(3, 1, 3), 12 + 12 + 12);
    assert_int_equal(arena_pool_buffer_size(0, 1, 1), 4 + 4 + 4);
    assert_int_equal(recorded_errors.count, 0);
}

static void test_destroy_leaves_empty_pool(void **state)
{
    arena_pool p;
    arena_pool z;
    (void)state;

    memset(&z, 0, sizeof z);
    assert_true(arena_pool_check(&z));
    assert_null(arena_pool_alloc(&z));
    arena_pool_destroy(&z);

    assert_true(arena_pool_init(&p, 16, 8, 4, NULL));
    assert_non_null(arena_pool_alloc(&p));
    arena_pool_destroy(&p);
    assert_int_equal(arena_pool_capacity(&p), 0);
    assert_int_equal(arena_pool_used(&p), 0);
    assert_int_equal(arena_pool_available(&p), 0);
    assert_null(arena_pool_alloc(&p));
    assert_true(arena_pool_check(&p));
    arena_pool_destroy(&p);
    /* Any free on the empty pool is foreign (NULL is NULL). */
    {
        int x;
        arena_pool_free(&p, &x);
        assert_int_equal(recorded_errors.count, 1);
        assert_int_equal(recorded_errors.last, ARENA_ERR_FOREIGN_POINTER);
        arena_pool_free(&p, NULL);
        assert_int_equal(recorded_errors.count, 2);
        assert_int_equal(recorded_errors.last, ARENA_ERR_NULL_FREE);
    }
    /* And it can be initialised again. */
    assert_true(arena_pool_init(&p, 16, 8, 4, NULL));
    assert_non_null(arena_pool_alloc(&p));
    arena_pool_destroy(&p);
}

/* ---- Check -------------------------------------------------------------------- */

static void expect_corrupt(arena_pool *p)
{
    record_errors();
    assert_false(arena_pool_check(p));
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_CORRUPT);
    assert_non_null(strstr(recorded_errors.message, "arena_pool_check"));
}

static void test_check_finds_corruption(void **state)
{
    arena_pool p;
    uint32_t saved_state[8];
    uint32_t saved_stack[8];
    void *a, *b;
    (void)state;

    assert_true(arena_pool_init(&p, 16, 8, 8, NULL));
    a = arena_pool_alloc(&p);
    b = arena_pool_alloc(&p);
    arena_pool_free(&p, a);
    memcpy(saved_state, states_of(&p), sizeof saved_state);
    memcpy(saved_stack, stack_of(&p), sizeof saved_stack);
    assert_true(arena_pool_check(&p));
    assert_memory_equal(saved_state, states_of(&p), sizeof saved_state); /* restored its marks */

    states_of(&p)[1] = ARENA__POOL_FREED; /* b looks free but is not on the stack */
    expect_corrupt(&p);
    states_of(&p)[1] = 7; /* not a state */
    expect_corrupt(&p);
    states_of(&p)[1] = ARENA__POOL_LIVE;
    stack_of(&p)[p.nfree - 1] = stack_of(&p)[0]; /* a slot named twice */
    expect_corrupt(&p);
    assert_memory_equal(saved_state, states_of(&p), sizeof saved_state);
    stack_of(&p)[p.nfree - 1] = 1; /* a live slot on the stack */
    expect_corrupt(&p);
    stack_of(&p)[p.nfree - 1] = 99; /* out of range */
    expect_corrupt(&p);
    memcpy(stack_of(&p), saved_stack, sizeof saved_stack);
    p.nfree++;
    expect_corrupt(&p);
    p.nfree--;
    p.open = 3;
    expect_corrupt(&p);
    p.open = p.cap;
    p.inv++;
    expect_corrupt(&p);
    p.inv--;
    assert_memory_equal(saved_state, states_of(&p), sizeof saved_state);
    record_errors();
    assert_true(arena_pool_check(&p));
    arena_pool_free(&p, b);
    assert_int_equal(recorded_errors.count, 0);
    arena_pool_destroy(&p);
}

/* ---- Sanitizers ---------------------------------------------------------------- */

/* Whether the library is instrumented: in a program built without ASan but
 * linked to an ASan-built library, the runtime is there (weak lookup). */
#if TEST_ASAN
#  define asan_is_poisoned __asan_address_is_poisoned
#  define asan_runtime()   true
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__ELF__)
int __asan_address_is_poisoned(void const volatile *addr) __attribute__((weak));
#  define asan_is_poisoned __asan_address_is_poisoned
#  define asan_runtime()   (__asan_address_is_poisoned != NULL)
#endif

static void test_free_slots_poisoned(void **state)
{
    arena_pool p;
    char *a, *b;
    (void)state;

    assert_true(arena_pool_init(&p, 32, 16, 4, NULL));
#ifdef asan_is_poisoned
    if (asan_runtime()) {
        /* The library must see every transition: the inline paths are closed. */
        assert_int_equal(p.open, 0);
        a = (char *)arena_pool_alloc(&p);
        b = (char *)arena_pool_alloc(&p);
        assert_false(asan_is_poisoned(a));
        assert_false(asan_is_poisoned(a + 31));
        assert_true(asan_is_poisoned(slot(&p, 2))); /* never handed out */
        assert_true(asan_is_poisoned(slot(&p, 3) + 31));
        arena_pool_free(&p, a);
        assert_true(asan_is_poisoned(a)); /* freed */
        assert_true(asan_is_poisoned(a + 31));
        assert_false(asan_is_poisoned(b));
        assert_ptr_equal(arena_pool_alloc(&p), a);
        assert_false(asan_is_poisoned(a + 16));
        arena_pool_destroy(&p);
        return;
    }
#endif
    /* No ASan anywhere: the annotations compile to nothing, the inline paths
     * are open (closed in a checked build, and under Valgrind), and the pool
     * works. */
    assert_int_equal(p.open, ARENA_CHECKED || test_on_valgrind() ? 0 : p.cap);
    a = (char *)arena_pool_alloc(&p);
    b = (char *)arena_pool_alloc(&p);
    assert_ptr_equal(b, a + 32);
    arena_pool_destroy(&p);
}

/* Every test runs with the recording handler installed. */
/* A pool's figures against a shadow count through random allocs and frees:
 * used, the peak, stored; the storage, held and waste. */
static void test_figures_match_a_shadow(void **state)
{
    static test_backing tb;
    enum { CAP = 300 };
    static void *live[CAP];
    arena_pool p, p0 = {0};
    arena_pool_stats st;
    arena_allocator al = tb_allocator(&tb);
    size_t n = 0, peak = 0;
    int step;
    (void)state;

    arena_pool_get_stats(&p0, &st);
    assert_int_equal(st.capacity + st.used + st.held + st.peak_used + st.waste, 0);
    assert_null(st.name);

    assert_true(arena_pool_init(&p, 24, 8, CAP, &al));
    arena_pool_get_stats(&p, &st);
    assert_int_equal(st.capacity, CAP);
    assert_int_equal(st.slot_size, 24);
    assert_int_equal(st.held, tb.live_bytes);
    assert_int_equal(st.backing_calls, 1);
    assert_int_equal(st.waste, tb.live_bytes - CAP * 24);
    assert_int_equal(st.used + st.peak_used + st.stored, 0);
    rng_state = 0x51DE5EEDu;
    for (step = 0; step < 20000; step++) {
        bool grow = n == 0 || (n < CAP && rng() % 100 < (step % 4000 < 2000 ? 60u : 40u));
        if (grow) {
            live[n] = arena_pool_alloc(&p);
            assert_non_null(live[n]);
            n++;
        } else {
            size_t k = (size_t)(rng() % n);
            arena_pool_free(&p, live[k]);
            live[k] = live[--n];
        }
        peak = n > peak ? n : peak;
        arena_pool_get_stats(&p, &st);
        assert_int_equal(st.used, n);
        assert_int_equal(st.peak_used, peak);
        assert_int_equal(st.stored, n * 24);
    }
    assert_true(peak > 0 && peak <= CAP);
    while (n)
        arena_pool_free(&p, live[--n]);
    arena_pool_get_stats(&p, &st);
    assert_int_equal(st.used, 0);
    assert_int_equal(st.peak_used, peak);
    arena_pool_destroy(&p);
    assert_int_equal(tb.live_bytes, 0);

    /* A caller's buffer: nothing held, the laid-out part counted as storage. */
    {
        static _Alignas(64) unsigned char buf[4096];
        size_t need = arena_pool_buffer_size(40, 16, 50);
        assert_true(need > 0 && need <= sizeof buf);
        assert_true(arena_pool_init_buffer(&p, buf, sizeof buf, 40, 16, 50));
        assert_non_null(arena_pool_alloc(&p));
        arena_pool_get_stats(&p, &st);
        assert_int_equal(st.held, 0);
        assert_int_equal(st.backing_calls, 0);
        assert_int_equal(st.slot_size, 48);
        assert_int_equal(st.waste, need - 50 * 40);
        assert_int_equal(st.peak_used, 1);
        arena_pool_destroy(&p);
    }
}

#define POOL_TEST(f) cmocka_unit_test_setup_teardown(f, setup_record_errors, teardown_record_errors)

int main(void)
{
    const struct CMUnitTest tests[] = {
        POOL_TEST(test_fill_and_exhaust),
        POOL_TEST(test_lifo_order),
        POOL_TEST(test_random_against_model),
        POOL_TEST(test_misuse_reported_once_pool_unchanged),
        POOL_TEST(test_closed_inline_paths),
        POOL_TEST(test_stray_write_into_freed_slot),
        POOL_TEST(test_every_shape),
        POOL_TEST(test_owns_is_exact),
        POOL_TEST(test_buffer_variant),
        POOL_TEST(test_backing_variant),
        POOL_TEST(test_overflow_and_bad_arguments),
        POOL_TEST(test_destroy_leaves_empty_pool),
        POOL_TEST(test_check_finds_corruption),
        POOL_TEST(test_free_slots_poisoned),
        POOL_TEST(test_figures_match_a_shadow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
