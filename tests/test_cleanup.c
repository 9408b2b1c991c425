/* SPDX-License-Identifier: MIT */
/*
 * Cleanups (arena_cleanup_push(), arena_cleanup_cancel()).
 *
 * Cleanups run exactly once, latest first, on every path that ends their
 * values (reset, arena_reset_to, release, rewind, scope end, cache
 * recycle, the inline paths' deferral included), before the memory they
 * read is touched; a property test checks random sequences against a small
 * model; the failure sweep fails each backing call in turn; misuse is
 * reported with a handler that returns.  The shared arena's cleanups, pushed
 * from many threads: test_thread_cleanups.c.
 */
#include "cleanup_log.h"

#include <arena/thread.h>

static test_backing tb;

/* ---- Each path runs them once, latest first ---------------------------------------- */

static void test_reset_runs_latest_first(void **state)
{
    arena a;
    static const int want[] = {3, 2, 1};
    (void)state;
    arena_init(&a, 1024);
    assert_false(has_cleanups(&a));
    push_id(&a, 1);
    push_id(&a, 2);
    push_id(&a, 3);
    assert_true(has_cleanups(&a));
    arena_reset(&a);
    expect_log(want, 3);
    assert_false(has_cleanups(&a));
    arena_reset(&a);
    expect_log(NULL, 0);
    arena_release(&a);
    expect_log(NULL, 0);
}

static void test_every_end_of_batch(void **state)
{
    arena a;
    static const int one[] = {1};
    (void)state;
    arena_init(&a, 0);
    push_id(&a, 1);
    arena_reset_to(&a, 0);
    expect_log(one, 1);
    push_id(&a, 1);
    arena_reset_to(&a, 1 << 20);
    expect_log(one, 1);
    push_id(&a, 1);
    arena_release(&a);
    expect_log(one, 1);
    /* An arena that held nothing but its cleanup (the record is a value). */
    arena_init(&a, 0);
    push_id(&a, 1);
    arena_release(&a);
    expect_log(one, 1);
}

static void test_rewind_runs_those_after_the_mark(void **state)
{
    arena a;
    arena_mark m0, m1;
    static const int after_m1[] = {3}, after_m0[] = {2}, rest[] = {1};
    (void)state;
    arena_init(&a, 256);
    push_id(&a, 1);
    m0 = arena_save(&a);
    push_id(&a, 2);
    assert_non_null(arena_alloc(&a, 1000)); /* a chunk of its own */
    m1 = arena_save(&a);
    push_id(&a, 3);
    arena_rewind(&a, m1);
    expect_log(after_m1, 1);
    arena_rewind(&a, m1); /* nothing left after it */
    expect_log(NULL, 0);
    arena_rewind(&a, m0);
    expect_log(after_m0, 1);
    assert_true(has_cleanups(&a));
    arena_reset(&a);
    expect_log(rest, 1);
    arena_release(&a);
}

static void test_pushed_right_after_the_mark(void **state)
{
    arena a = {0};
    arena_mark m;
    static const int one[] = {1};
    (void)state;
    m = arena_save(&a); /* on an empty arena: no chunk at the mark */
    push_id(&a, 1);
    arena_rewind(&a, m);
    expect_log(one, 1);
    assert_false(has_cleanups(&a));
    arena_release(&a);
}

#if ARENA_HAVE_SCOPE
static void scoped(arena *a)
{
    ARENA_SCOPE(a);
    push_id(a, 7);
}
#endif

static void test_scope_end(void **state)
{
    arena a = {0};
    static const int seven[] = {7};
    arena_scope s;
    (void)state;
    assert_non_null(arena_alloc(&a, 10));
    s = arena_scope_begin(&a);
    push_id(&a, 7);
    arena_scope_end(&s);
    expect_log(seven, 1);
#if ARENA_HAVE_SCOPE
    scoped(&a);
    expect_log(seven, 1);
#endif
    arena_release(&a);
}

/* The inline paths (one chunk, the window open; the caller's buffer alone;
 * the lazy arena of the inline arena_init_buffer()) defer to the library
 * while a cleanup is registered. */
static void test_inline_paths_defer(void **state)
{
    static _Alignas(16) unsigned char buf[4096];
    static const int one[] = {1};
    arena a;
    arena_mark m;
    int i;
    (void)state;

    arena_init(&a, 4096);
    for (i = 0; i < 3; i++) { /* a warm one-chunk arena: the inline reset's case */
        assert_non_null(arena_alloc(&a, 100));
        arena_reset(&a);
    }
    push_id(&a, 1);
    arena_reset(&a);
    expect_log(one, 1);
    assert_non_null(arena_alloc(&a, 10));
    m = arena_save(&a);
    push_id(&a, 1);
    arena_rewind(&a, m); /* the inline rewind's case */
    expect_log(one, 1);
    arena_release(&a);

    arena_init_buffer(&a, buf, sizeof buf, NULL); /* lazy where inline */
    push_id(&a, 1);
    assert_int_equal(a.lazy, 0);
    arena_release(&a); /* the inline buffer-alone release's case */
    expect_log(one, 1);
    push_id(&a, 1);
    arena_reset(&a);
    expect_log(one, 1);
    arena_release(&a);
    expect_log(NULL, 0);
}

static void test_cache_recycle(void **state)
{
    arena_cache *c = arena_cache_create(NULL);
    arena *a;
    static const int two[] = {2, 1};
    (void)state;
    assert_non_null(c);
    a = arena_cache_acquire(c);
    push_id(a, 1);
    push_id(a, 2);
    arena_cache_recycle(c, a);
    expect_log(two, 2);
    a = arena_cache_acquire(c);
    push_id(a, 1);
    push_id(a, 2);
    arena_cache_destroy(c); /* an acquired arena: released by destroy */
    expect_log(two, 2);
}

/* A cleanup reads what was stored before it, intact (the checked build
 * clobbers expired memory, ASan poisons it: both after the cleanups). */
struct resource {
    int id;
    unsigned char bytes[200];
};

static int seen_intact;

static void check_resource(void *ctx)
{
    const struct resource *r = (const struct resource *)ctx;
    size_t i;
    for (i = 0; i < sizeof r->bytes; i++)
        if (r->bytes[i] != (unsigned char)r->id)
            return;
    seen_intact++;
}

static void test_cleanup_reads_its_values(void **state)
{
    arena a;
    arena_mark m;
    struct resource *r;
    int i;
    (void)state;
    arena_init(&a, 512);
    seen_intact = 0;
    for (i = 0; i < 20; i++) {
        r = ARENA_NEW(&a, struct resource);
        assert_non_null(r);
        r->id = i;
        memset(r->bytes, i, sizeof r->bytes);
        assert_non_null(arena_cleanup_push(&a, check_resource, r));
    }
    arena_reset(&a);
    assert_int_equal(seen_intact, 20);
    m = arena_save(&a);
    r = ARENA_NEW(&a, struct resource);
    assert_non_null(r);
    r->id = 99;
    memset(r->bytes, 99, sizeof r->bytes);
    assert_non_null(arena_cleanup_push(&a, check_resource, r));
    arena_rewind(&a, m);
    assert_int_equal(seen_intact, 21);
    r = ARENA_NEW(&a, struct resource);
    assert_non_null(r);
    r->id = 5;
    memset(r->bytes, 5, sizeof r->bytes);
    assert_non_null(arena_cleanup_push(&a, check_resource, r));
    arena_release(&a);
    assert_int_equal(seen_intact, 22);
}

/* ---- Cancel ---------------------------------------------------------------------- */

static void test_cancel(void **state)
{
    arena a = {0};
    arena_cleanup *c1, *c2, *c3;
    static const int left[] = {3, 1};
    size_t size;
    (void)state;
    c1 = push_id(&a, 1);
    c2 = push_id(&a, 2);
    c3 = push_id(&a, 3);
    size = arena_size(&a);
    arena_cleanup_cancel(&a, c2); /* in the middle */
    assert_true(arena_size(&a) < size);
    arena_cleanup_cancel(&a, NULL);
    arena_reset(&a);
    expect_log(left, 2);
    c1 = push_id(&a, 1);
    c3 = push_id(&a, 3);
    arena_cleanup_cancel(&a, c3); /* the head */
    arena_cleanup_cancel(&a, c1); /* the last: the list is empty */
    assert_false(has_cleanups(&a));
    arena_reset(&a);
    expect_log(NULL, 0);
    arena_release(&a);
}

/* A cleanup may cancel another one that has not run yet. */
static arena_cleanup *victim;
static arena *victim_arena;

static void cancel_victim(void *ctx)
{
    log_id(ctx);
    arena_cleanup_cancel(victim_arena, victim);
}

static void test_cancel_from_a_cleanup(void **state)
{
    arena a = {0};
    static const int want[] = {3, 1};
    (void)state;
    victim_arena = &a;
    push_id(&a, 1);
    victim = push_id(&a, 2);
    assert_non_null(arena_cleanup_push(&a, cancel_victim, (void *)(intptr_t)3));
    arena_reset(&a);
    expect_log(want, 2);
    arena_release(&a);
}

/* ---- The model: random sequences ----------------------------------------------------- */

#define MODEL_MAX   256
#define MODEL_MARKS 16

struct model {
    int id[MODEL_MAX];    /* live cleanups, in order of push */
    int depth[MODEL_MAX]; /* marks on the stack at the push */
    arena_cleanup *handle[MODEL_MAX];
    int n;
    arena_mark marks[MODEL_MARKS];
    int nmarks;
};

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* The model runs, latest first, the cleanups pushed at a depth above `keep`
 * (after the mark at index `keep` was taken; -1: all). */
static void model_end(struct model *md, int keep)
{
    int expect[MODEL_MAX], ne = 0, i, j = 0;
    for (i = md->n; i-- > 0;)
        if (md->depth[i] > keep)
            expect[ne++] = md->id[i];
    for (i = 0; i < md->n; i++) {
        if (md->depth[i] <= keep) {
            md->id[j] = md->id[i];
            md->depth[j] = md->depth[i];
            md->handle[j] = md->handle[i];
            j++;
        }
    }
    md->n = j;
    expect_log(expect, ne);
}

static void model_run(uint64_t seed, arena *a, arena_cache *cache, int steps)
{
    static struct model md;
    int next_id = 1, step;

    memset(&md, 0, sizeof md);
    rng_state = seed;
    for (step = 0; step < steps; step++) {
        uint32_t op = rnd(100);
        if (op < 30 && md.n < MODEL_MAX) {
            arena_cleanup *c = arena_cleanup_push(a, log_id, (void *)(intptr_t)next_id);
            assert_non_null(c);
            md.id[md.n] = next_id++;
            md.depth[md.n] = md.nmarks;
            md.handle[md.n] = c;
            md.n++;
        } else if (op < 50) {
            size_t n = rnd(4) == 0 ? 100 + rnd(3000) : 1 + rnd(64);
            void *p = arena_alloc(a, n);
            assert_non_null(p);
            memset(p, 0x5A, n);
        } else if (op < 62 && md.nmarks < MODEL_MARKS) {
            md.marks[md.nmarks++] = arena_save(a);
        } else if (op < 74 && md.nmarks > 0) {
            int j = (int)rnd((uint32_t)md.nmarks);
            arena_rewind(a, md.marks[j]);
            md.nmarks = j + 1;
            model_end(&md, j);
        } else if (op < 86 && md.n > 0) {
            int i = (int)rnd((uint32_t)md.n);
            arena_cleanup_cancel(a, md.handle[i]);
            memmove(&md.id[i], &md.id[i + 1], (size_t)(md.n - i - 1) * sizeof md.id[0]);
            memmove(&md.depth[i], &md.depth[i + 1], (size_t)(md.n - i - 1) * sizeof md.depth[0]);
            memmove(&md.handle[i], &md.handle[i + 1], (size_t)(md.n - i - 1) * sizeof md.handle[0]);
            md.n--;
        } else if (op < 93) {
            arena_reset(a);
            md.nmarks = 0;
            model_end(&md, -1);
        } else if (op < 96) {
            arena_reset_to(a, rnd(2) ? 0 : 4096);
            md.nmarks = 0;
            model_end(&md, -1);
        } else if (cache) {
            arena_cache_recycle(cache, a);
            md.nmarks = 0;
            model_end(&md, -1);
            a = arena_cache_acquire(cache);
            assert_non_null(a);
        } else {
            arena_release(a);
            md.nmarks = 0;
            model_end(&md, -1);
        }
        assert_int_equal(has_cleanups(a), md.n > 0);
    }
    if (cache) {
        arena_cache_recycle(cache, a);
    } else {
        arena_release(a);
    }
    model_end(&md, -1);
}

static void test_model(void **state)
{
    static _Alignas(16) unsigned char buf[3000];
    arena_allocator al;
    arena a, b;
    arena_cache *cache;
    uint64_t seed;
    (void)state;
    al = tb_allocator(&tb);
    arena_init_buffer(&b, buf, sizeof buf, &al); /* once: a release keeps the buffer */
    for (seed = 1; seed <= 40; seed++) {
        arena_init(&a, seed % 2 ? 512 : 0);
        model_run(seed * 0x9E3779B97F4A7C15u, &a, NULL, 3000);
        model_run(seed * 0x2545F4914F6CDD1Du, &b, NULL, 3000);
        /* The lists' table that a cancel's arena_free() made stays after a
         * reset, and the inline release of the buffer alone does not free
         * it (a leak older than cleanups, reported to the lead): the
         * release to nothing does. */
        arena_reset_to(&b, 0);
        assert_int_equal(tb.live, 0);
    }
    cache = arena_cache_create(NULL);
    assert_non_null(cache);
    for (seed = 1; seed <= 10; seed++)
        model_run(seed * 0x5851F42D4C957F2Du, arena_cache_acquire(cache), cache, 3000);
    arena_cache_destroy(cache);
}

/* ---- Failure: a push that fails registers nothing ----------------------------------- */

static int sweep_runs;

static void count_run(void *ctx)
{
    (void)ctx;
    sweep_runs++;
}

/* Pushes and stores until `rounds` pushes were tried, a reset among them;
 * returns the backing calls made.  Every push that failed left the arena as
 * it was, and every one that succeeded runs once. */
static size_t sweep_once(size_t fail_at, size_t fail_from)
{
    arena a;
    arena_allocator al = tb_allocator(&tb);
    int pushed = 0, i;
    size_t calls;

    tb.fail_at = fail_at;
    tb.fail_from = fail_from;
    sweep_runs = 0;
    arena_init_with(&a, 256, &al);
    for (i = 0; i < 60; i++) {
        size_t size = arena_size(&a), retained = arena_retained(&a), failed = tb.failed;
        arena_cleanup *c = arena_cleanup_push(&a, count_run, NULL);
        if (c) {
            pushed++;
        } else {
            assert_true(tb.failed > failed);
            assert_int_equal(arena_size(&a), size);
            assert_int_equal(arena_retained(&a), retained);
            assert_true(arena_check(&a));
        }
        if (arena_alloc(&a, 40 + (size_t)i * 7) == NULL)
            assert_true(tb.failed > 0);
        if (i == 30) {
            arena_reset(&a);
            assert_int_equal(sweep_runs, pushed);
        }
    }
    calls = tb.calls;
    arena_release(&a);
    assert_int_equal(sweep_runs, pushed);
    assert_int_equal(tb.live, 0);
    return calls;
}

static void test_failure_sweep(void **state)
{
    size_t total = sweep_once(0, 0), k;
    (void)state;
    assert_true(total > 3);
    for (k = 1; k <= total; k++) {
        sweep_once(k, 0);
        sweep_once(0, k);
    }
}

/* ---- Misuse ------------------------------------------------------------------------ */

static arena *misuse_arena;
static arena_mark misuse_mark;
static int misuse_reports;

static void misbehave(void *ctx)
{
    int before = recorded_errors.count;
    (void)ctx;
    assert_null(arena_cleanup_push(misuse_arena, log_id, NULL));
    misuse_reports += test_misuse_reported(before, ARENA_ERR_CLEANUP);
    before = recorded_errors.count;
    arena_reset(misuse_arena);
    misuse_reports += test_misuse_reported(before, ARENA_ERR_CLEANUP);
    before = recorded_errors.count;
    arena_reset_to(misuse_arena, 0);
    misuse_reports += test_misuse_reported(before, ARENA_ERR_CLEANUP);
    before = recorded_errors.count;
    arena_rewind(misuse_arena, misuse_mark);
    misuse_reports += test_misuse_reported(before, ARENA_ERR_CLEANUP);
    before = recorded_errors.count;
    arena_release(misuse_arena);
    misuse_reports += test_misuse_reported(before, ARENA_ERR_CLEANUP);
    /* Storing in it is fine: the value dies with the batch being ended. */
    assert_non_null(arena_alloc(misuse_arena, 16));
}

static void test_misuse_in_a_cleanup(void **state)
{
    arena a = {0};
    static const int one[] = {1};
    (void)state;
    misuse_arena = &a;
    misuse_reports = 0;
    push_id(&a, 1);
    misuse_mark = arena_save(&a);
    assert_non_null(arena_cleanup_push(&a, misbehave, NULL));
    arena_reset(&a);
    assert_int_equal(misuse_reports, 5);
    expect_log(one, 1); /* the reset went on after the refused calls */
    assert_false(has_cleanups(&a));
    assert_true(arena_check(&a));
    arena_release(&a);
    assert_int_equal(recorded_errors.count, recorded_errors.expected);
}

static arena_cleanup *spent;

static void cancel_spent(void *ctx)
{
    int before = recorded_errors.count;
    (void)ctx;
    arena_cleanup_cancel(misuse_arena, spent);
    misuse_reports += test_misuse_reported(before, ARENA_ERR_CLEANUP);
}

static void test_misuse_cancel(void **state)
{
    arena a = {0}, b = {0};
    arena_cleanup *c;
    int before;
    (void)state;
    before = recorded_errors.count;
    assert_null(arena_cleanup_push(&a, NULL, NULL));
    assert_true(test_misuse_reported(before, ARENA_ERR_CLEANUP));

    c = push_id(&a, 1);
    push_id(&a, 2); /* keeps c's record from being the arena's last value */
    arena_cleanup_cancel(&a, c);
    /* Twice: its record is a free block now, which a plain build leaves
     * readable (ASan and Valgrind report the read of it, the checked build
     * clobbers it). */
    if (test_packed()) {
        before = recorded_errors.count;
        arena_cleanup_cancel(&a, c);
        assert_true(test_misuse_reported(before, ARENA_ERR_CLEANUP));
    }

    c = push_id(&a, 3);
    before = recorded_errors.count;
    arena_cleanup_cancel(&b, c); /* another arena's */
    assert_true(test_misuse_reported(before, ARENA_ERR_FOREIGN_POINTER));

    /* A cleanup that ran, cancelled by a cleanup of the same run. */
    misuse_arena = &a;
    misuse_reports = 0;
    assert_non_null(arena_cleanup_push(&a, cancel_spent, NULL));
    spent = push_id(&a, 4);
    arena_reset(&a);
    assert_int_equal(misuse_reports, 1);
    clear_log();
    arena_release(&a);
    arena_release(&b);
    assert_int_equal(recorded_errors.count, recorded_errors.expected);
}

/* A record the program overwrote is reported when it would run (every
 * build: its check word), and the cleanups older than it are dropped. */
static void test_overwritten_record(void **state)
{
    arena a = {0};
    arena_cleanup *c;
    static const int newer[] = {3};
    int before;
    (void)state;
    push_id(&a, 1);
    c = push_id(&a, 2);
    push_id(&a, 3);
    /* The record: four pointers, a serial, a check word (48 bytes on 64-bit
     * targets, 28 on 32-bit ones, where 48 reached the next record). */
    memset((void *)c, 0x33, 4 * sizeof(void *) + sizeof(uint64_t) + sizeof(uintptr_t));
    before = recorded_errors.count;
    arena_reset(&a);
    assert_true(test_misuse_reported(before, ARENA_ERR_CORRUPT));
    expect_log(newer, 1);
    assert_false(has_cleanups(&a));
    arena_release(&a);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_record_errors, teardown_record_errors)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_reset_runs_latest_first),
        T(test_every_end_of_batch),
        T(test_rewind_runs_those_after_the_mark),
        T(test_pushed_right_after_the_mark),
        T(test_scope_end),
        T(test_inline_paths_defer),
        T(test_cache_recycle),
        T(test_cleanup_reads_its_values),
        T(test_cancel),
        T(test_cancel_from_a_cleanup),
        T(test_model),
        T(test_failure_sweep),
        T(test_misuse_in_a_cleanup),
        T(test_misuse_cancel),
        T(test_overwritten_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
