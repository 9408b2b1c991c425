/* SPDX-License-Identifier: MIT */
/* Scratch arenas (per thread, conflict avoidance, nesting) and scopes. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "support.h"

#include <arena/thread.h>

static void test_scratch_rewinds_at_end(void **state)
{
    (void)state;
    arena_scope s = arena_scratch_begin(NULL, 0);
    assert_non_null(s.arena);
    size_t before = arena_size(s.arena);
    char *p = arena_strdup(s.arena, "scratch");
    assert_non_null(p);
    assert_int_equal(arena_size(s.arena), before + 8);
    bool guarded = arena_guarded(s.arena);
    arena_scope_end(&s);
    assert_int_equal(arena_size(s.arena), before);

    /* The same shape lands at the same address; a guarded scope's address
     * is in the quarantine, and a guarded scope's chunk is a new one. */
    arena_scope t = arena_scratch_begin(NULL, 0);
    assert_ptr_equal(t.arena, s.arena);
    guarded = guarded || arena_guarded(t.arena);
    char *q = arena_strdup(t.arena, "scratch");
    if (guarded)
        assert_ptr_not_equal(q, p);
    else
        assert_ptr_equal(q, p);
    arena_scope_end(&t);
}

static void test_scratch_avoids_conflicts(void **state)
{
    (void)state;
    arena_scope s0 = arena_scratch_begin(NULL, 0);
    arena *c1[] = {s0.arena};
    arena_scope s1 = arena_scratch_begin(c1, 1);
    assert_non_null(s1.arena);
    assert_ptr_not_equal(s1.arena, s0.arena);

    /* NULL entries and unrelated arenas are not conflicts. */
    arena other = {0};
    arena *c2[] = {NULL, &other, s1.arena};
    arena_scope s2 = arena_scratch_begin(c2, 3);
    assert_ptr_equal(s2.arena, s0.arena);
    arena_scope_end(&s2);

    /* Every scratch arena a conflict: none can be given. */
    arena *both[] = {s0.arena, s1.arena};
    arena_scope none = arena_scratch_begin(both, 2);
    assert_null(none.arena);
    arena_scope_end(&none); /* harmless */
    arena_scope_end(&s1);
    arena_scope_end(&s0);
}

/* A callee that returns a string built in scratch memory into `out`, using a
 * scratch arena of its own for the intermediate pieces. */
static char *build(arena *out, int depth)
{
    arena *conflicts[] = {out};
    arena_scope s = arena_scratch_begin(conflicts, 1);
    assert_non_null(s.arena);
    assert_ptr_not_equal(s.arena, out);
    char *piece = arena_strdup(s.arena, depth % 2 ? "odd" : "even");
    /* The inner call writes into our scratch arena and takes the other one. */
    char *inner = depth > 0 ? build(s.arena, depth - 1) : arena_strdup(s.arena, "");
    size_t n = strlen(piece) + 1 + strlen(inner);
    char *result = (char *)arena_alloc(out, n + 1);
    assert_non_null(result);
    strcpy(result, piece);
    strcat(result, "/");
    strcat(result, inner);
    arena_scope_end(&s);
    return result;
}

static void test_nested_scratch_keeps_callers_values(void **state)
{
    (void)state;
    arena_scope s = arena_scratch_begin(NULL, 0);
    char *mine = arena_strdup(s.arena, "caller's value");
    char *r = build(s.arena, 5);
    assert_string_equal(r, "odd/even/odd/even/odd/even/");
    assert_string_equal(mine, "caller's value");
    arena_scope_end(&s);
}

static void test_scratch_ended_out_of_order_is_reported(void **state)
{
    (void)state;
    record_errors();
    arena_scope outer = arena_scratch_begin(NULL, 0);
    assert_non_null(arena_alloc(outer.arena, 10));
    arena_scope inner = arena_scratch_begin(NULL, 0); /* the same arena */
    assert_ptr_equal(inner.arena, outer.arena);
    assert_non_null(arena_alloc(inner.arena, 10));
    arena_scope_end(&outer);
    arena_scope_end(&inner); /* its mark is past the rewind */
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_BAD_MARK);
    arena_set_error_handler(NULL, NULL);
}

static void test_scratch_trims_spares_and_releases(void **state)
{
    (void)state;
    arena_scope s = arena_scratch_begin(NULL, 0);
    size_t spares = arena_retained(s.arena);
    for (int i = 0; i < 40; i++) /* 40 chunks of 64 KiB */
        assert_non_null(arena_alloc(s.arena, ARENA_DEFAULT_CHUNK));
    bool guarded = arena_guarded(s.arena);
    arena_scope_end(&s);
    assert_true(arena_retained(s.arena) <= ((size_t)1 << 20));
    /* A guarded scope's chunks went to the quarantine: the spares it did not
     * use are all that is kept. */
    assert_true(guarded ? arena_retained(s.arena) == spares : arena_retained(s.arena) > 0);
    arena_scratch_release_thread();
    assert_int_equal(arena_retained(s.arena), 0);
    /* Usable again afterwards. */
    s = arena_scratch_begin(NULL, 0);
    assert_non_null(arena_alloc(s.arena, 10));
    arena_scope_end(&s);
    arena_scratch_release_thread();
}

/* Each thread has scratch arenas of its own; they are freed at its exit
 * (a leak here shows under ASan/LSan).  The workers compare their arenas
 * while all are alive: a thread's may take the address of one that exited. */
struct scratch_worker_arg {
    arena *seen;
    pthread_barrier_t *all_seen;
};

static void *scratch_worker(void *arg)
{
    struct scratch_worker_arg *w = (struct scratch_worker_arg *)arg;
    arena_scope s = arena_scratch_begin(NULL, 0);
    int i;
    for (i = 0; i < 1000; i++) {
        arena_scope t = arena_scratch_begin(&s.arena, 1);
        char *p = (char *)arena_alloc(t.arena, 100 + (size_t)i);
        if (p)
            memset(p, 0xab, 100 + (size_t)i);
        arena_scope_end(&t);
        if (!arena_alloc(s.arena, 32))
            break;
    }
    w->seen = i == 1000 ? s.arena : NULL; /* NULL: the test fails */
    pthread_barrier_wait(w->all_seen);
    pthread_barrier_wait(w->all_seen); /* compared */
    arena_scope_end(&s);
    return NULL;
}

static void test_scratch_arenas_are_per_thread(void **state)
{
    pthread_t t[2];
    pthread_barrier_t all_seen;
    struct scratch_worker_arg w[2];
    arena_scope mine = arena_scratch_begin(NULL, 0);
    (void)state;
    assert_non_null(mine.arena);
    pthread_barrier_init(&all_seen, NULL, 3);
    for (int i = 0; i < 2; i++) {
        w[i] = (struct scratch_worker_arg){NULL, &all_seen};
        assert_int_equal(pthread_create(&t[i], NULL, scratch_worker, &w[i]), 0);
    }
    pthread_barrier_wait(&all_seen);
    assert_non_null(w[0].seen);
    assert_non_null(w[1].seen);
    assert_ptr_not_equal(w[0].seen, w[1].seen);
    assert_ptr_not_equal(mine.arena, w[0].seen);
    assert_ptr_not_equal(mine.arena, w[1].seen);
    pthread_barrier_wait(&all_seen);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&all_seen);
    arena_scope_end(&mine);
    arena_scratch_release_thread();
}

/* ---- Scopes -------------------------------------------------------------------- */

static int leave_early(arena *a, int when)
{
    ARENA_SCOPE(a);
    for (int i = 0; i < 10; i++) {
        if (!arena_alloc(a, 100))
            return -1;
        if (i == when)
            return i;
    }
    return 10;
}

static void test_scope_rewinds_on_every_exit(void **state)
{
    arena a = {0};
    (void)state;
    assert_non_null(arena_alloc(&a, 7));
    arena_mark m = arena_save(&a);
    assert_int_equal(leave_early(&a, 0), 0);
    assert_int_equal(arena_size(&a), 7);
    assert_int_equal(leave_early(&a, 5), 5);
    assert_int_equal(arena_size(&a), 7);
    assert_int_equal(leave_early(&a, 99), 10);
    assert_int_equal(arena_size(&a), 7);

    /* break out of a loop body's scope, and nested scopes. */
    for (int i = 0; i < 3; i++) {
        ARENA_SCOPE(&a);
        assert_non_null(arena_alloc(&a, 50));
        {
            ARENA_SCOPE(&a);
            assert_non_null(arena_alloc(&a, 50));
            assert_int_equal(arena_size(&a), 107);
        }
        assert_int_equal(arena_size(&a), 57);
        if (i == 1)
            break;
    }
    assert_int_equal(arena_size(&a), 7);
    void *next = arena_alloc(&a, 1);
    arena_rewind(&a, m);
    {
        ARENA_SCOPE(&a);
        assert_true(test_rewound_to(arena_guarded(&a), next, arena_alloc(&a, 1)));
        goto out;
    }
out:
    assert_int_equal(arena_size(&a), 7);
    assert_true(arena_check(&a));
    arena_release(&a);
}

static void test_scope_begin_end_pair(void **state)
{
    arena a = {0};
    (void)state;
    arena_scope outer = arena_scope_begin(&a);
    assert_non_null(arena_strdup(&a, "x"));
    arena_scope inner = arena_scope_begin(&a);
    assert_non_null(arena_alloc(&a, 1000));
    arena_scope_end(&inner);
    assert_int_equal(arena_size(&a), 2);
    arena_scope_end(&outer);
    assert_int_equal(arena_size(&a), 0);
    arena_scope none = {NULL, outer.mark};
    arena_scope_end(&none);
    arena_release(&a);
}

static size_t scratch_scope_early(int leave)
{
    ARENA_SCRATCH_SCOPE(s, NULL, 0);
    if (!s.arena)
        return 0;
    if (!arena_alloc(s.arena, 64))
        return 0;
    if (leave)
        return arena_size(s.arena);
    assert_non_null(arena_alloc(s.arena, 64));
    return arena_size(s.arena);
}

static void test_scratch_scope(void **state)
{
    (void)state;
    arena_scope probe = arena_scratch_begin(NULL, 0);
    size_t base = arena_size(probe.arena);
    arena_scope_end(&probe);
    assert_int_equal(scratch_scope_early(1), base + 64);
    assert_int_equal(arena_size(probe.arena), base);
    assert_int_equal(scratch_scope_early(0), base + 128);
    assert_int_equal(arena_size(probe.arena), base);
    arena_scratch_release_thread();
}

/* The trim belongs to scratch arenas: a scope of an ordinary arena keeps
 * every chunk it used, as arena_rewind() does. */
static void test_scope_of_plain_arena_keeps_spares(void **state)
{
    arena a = {0};
    (void)state;
    arena_scope s = arena_scope_begin(&a);
    for (int i = 0; i < 40; i++) /* 40 chunks of 64 KiB */
        assert_non_null(arena_alloc(&a, ARENA_DEFAULT_CHUNK));
    size_t held = arena_retained(&a);
    assert_true(held >= 40 * (size_t)ARENA_DEFAULT_CHUNK);
    bool guarded = arena_guarded(&a);
    arena_scope_end(&s);
    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(arena_retained(&a), guarded ? 0 : held); /* guarded: quarantined */
    arena_release(&a);
}

/* Any scope of a scratch arena trims it at its end, whether
 * arena_scratch_begin() or arena_scope_begin() opened it, and so does the
 * cleanup of ARENA_SCRATCH_SCOPE. */
static arena *scratch_scope_big(bool *guarded, size_t *spares)
{
    ARENA_SCRATCH_SCOPE(s, NULL, 0);
    assert_non_null(s.arena);
    *spares = arena_retained(s.arena);
    for (int i = 0; i < 40; i++)
        assert_non_null(arena_alloc(s.arena, ARENA_DEFAULT_CHUNK));
    assert_true(arena_retained(s.arena) > ((size_t)1 << 20));
    *guarded = arena_guarded(s.arena);
    return s.arena;
}

static void test_every_scope_of_a_scratch_arena_trims(void **state)
{
    (void)state;
    bool guarded;
    size_t spares;
    arena *sa = scratch_scope_big(&guarded, &spares);
    assert_true(arena_retained(sa) <= ((size_t)1 << 20));
    /* A guarded scope's chunks went to the quarantine: the spares it did not
     * use are all that is kept. */
    assert_true(guarded ? arena_retained(sa) == spares : arena_retained(sa) > 0);

    arena_scope s = arena_scratch_begin(NULL, 0);
    assert_ptr_equal(s.arena, sa);
    arena_scope inner = arena_scope_begin(s.arena);
    for (int i = 0; i < 40; i++)
        assert_non_null(arena_alloc(s.arena, ARENA_DEFAULT_CHUNK));
    assert_true(arena_retained(sa) > ((size_t)1 << 20));
    arena_scope_end(&inner);
    assert_true(arena_retained(sa) <= ((size_t)1 << 20));
    arena_scope_end(&s);
    arena_scratch_release_thread();
}

/* A scope that stays within its chunk ends inline; when the scratch arena
 * holds spare chunks beyond what it keeps (here left by a plain rewind), the
 * end still trims them. */
static void test_scratch_scope_in_its_chunk_still_trims(void **state)
{
    (void)state;
    arena_scope s = arena_scratch_begin(NULL, 0);
    arena *sa = s.arena;
    assert_non_null(sa);
    assert_non_null(arena_alloc(sa, 100));
    arena_mark m = arena_save(sa);
    for (int i = 0; i < 40; i++)
        assert_non_null(arena_alloc(sa, ARENA_DEFAULT_CHUNK));
    bool guarded = arena_guarded(sa);
    arena_rewind(sa, m);
    /* A guarded batch's rewind retires the chunks past the mark. */
    assert_true(guarded ? arena_retained(sa) < ((size_t)1 << 20)
                        : arena_retained(sa) > ((size_t)1 << 20));

    arena_scope inner = arena_scope_begin(sa);
    assert_non_null(arena_alloc(sa, 10));
    /* (A guarded batch's rewinds are the library's.) */
    assert_int_equal(arena__rewind_window(sa, inner.mark), sa->ptr != NULL && !arena_guarded(sa));
    arena_scope_end(&inner);
    assert_int_equal(arena_size(sa), 100);
    assert_true(arena_retained(sa) <= ((size_t)1 << 20));
    arena_scope_end(&s);
    arena_scratch_release_thread();
}

/* A scratch arena is recognised as the calling thread's: another thread's
 * ordinary arena at the end of a scope is not trimmed, even while that
 * thread holds scratch arenas of its own. */
static void *plain_scope_worker(void *arg)
{
    arena *a = (arena *)arg;
    arena_scope mine = arena_scratch_begin(NULL, 0);
    arena_scope s = arena_scope_begin(a);
    size_t held;
    for (int i = 0; i < 40; i++)
        if (!arena_alloc(a, ARENA_DEFAULT_CHUNK))
            return NULL;
    /* A guarded scope's chunks go to the quarantine instead. */
    held = arena_guarded(a) ? 0 : arena_retained(a);
    arena_scope_end(&s);
    arena_scope_end(&mine);
    arena_scratch_release_thread();
    return arena_retained(a) == held ? a : NULL;
}

static void test_plain_scope_in_a_scratch_thread(void **state)
{
    pthread_t t;
    void *ok = NULL;
    arena a = {0};
    (void)state;
    assert_int_equal(pthread_create(&t, NULL, plain_scope_worker, &a), 0);
    assert_int_equal(pthread_join(t, &ok), 0);
    assert_ptr_equal(ok, &a);
    arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scratch_rewinds_at_end),
        cmocka_unit_test(test_scratch_avoids_conflicts),
        cmocka_unit_test(test_nested_scratch_keeps_callers_values),
        cmocka_unit_test(test_scratch_ended_out_of_order_is_reported),
        cmocka_unit_test(test_scratch_trims_spares_and_releases),
        cmocka_unit_test(test_scratch_arenas_are_per_thread),
        cmocka_unit_test(test_scope_rewinds_on_every_exit),
        cmocka_unit_test(test_scope_begin_end_pair),
        cmocka_unit_test(test_scratch_scope),
        cmocka_unit_test(test_scope_of_plain_arena_keeps_spares),
        cmocka_unit_test(test_every_scope_of_a_scratch_arena_trims),
        cmocka_unit_test(test_scratch_scope_in_its_chunk_still_trims),
        cmocka_unit_test(test_plain_scope_in_a_scratch_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
