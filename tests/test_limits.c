/* SPDX-License-Identifier: MIT */
/*
 * Limits, single-threaded (arena_set_limit(), arena_on_limit(), group limits:
 * arena_budget, arena_set_budget(), arena_budget_allocator()): the limit
 * exact at the byte, a lowered limit, 0 and SIZE_MAX, a refusal that changes
 * nothing, the callback, the backing's refusals, group limits shared and
 * joined only when the charge fits, and a backing allocator charged to a
 * group limit under a pool and an arena.  Many threads on one limit:
 * test_thread_limits.c.
 */
#include <string.h>

#include <arena/arena.h>
#include <arena/pool.h>
#include <arena/thread.h>

#include "cold.h"
#include "support.h"

static test_backing tb;

/* ---- The callback ----------------------------------------------------------------------- */

static arena_limit_event last_event;
static int events;

static void on_limit(const arena_limit_event *e, void *ctx)
{
    (void)ctx;
    last_event = *e;
    events++;
}

/* ---- The limit --------------------------------------------------------------------------- */

/* With 64 KiB chunks and a limit of 100,000 bytes, 112-byte values fill
 * nearly all of the limit (not one chunk's worth: the second chunk is cut
 * down to the room left), and the value that fails is one the room left
 * cannot hold. */
static void limit_is_enforced_at_the_byte(void **state)
{
    const size_t limit = 100000;
    arena_allocator al = tb_allocator(&tb);
    arena_stats s;
    arena a;
    size_t stored = 0;
    int before;
    (void)state;
    arena_init_with(&a, 65536, &al);
    arena_set_limit(&a, limit);
    arena_on_limit(&a, on_limit, NULL);
    events = 0;
    while (arena_alloc(&a, 112))
        stored += 112;
    arena_get_stats(&a, &s);
    assert_true(s.held <= limit);
    assert_int_equal(s.held, tb.live_bytes);
    /* Chunk granularity would have stopped near 65536. */
    assert_true(limit - s.held < 4096);
    if (test_packed()) /* no header or guard beside each value */
        assert_true(stored > limit - 8192);
    assert_int_equal(events, 1);
    assert_int_equal(last_event.cause, ARENA_LIMIT_ARENA);
    assert_int_equal(last_event.limit, limit);
    assert_int_equal(last_event.held, s.held);
    assert_ptr_equal(last_event.arena, &a);
    assert_int_equal(s.limit_hits, 1);
    /* A failure leaves the arena as it was: the same size, and the next
     * value that fits goes where it would have. */
    before = events;
    assert_int_equal(arena_size(&a), stored);
    assert_null(arena_alloc(&a, 112));
    assert_int_equal(arena_size(&a), stored);
    assert_int_equal(events, before + 1);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

static void lowered_limit_refuses_until_a_reset(void **state)
{
    arena_allocator al = tb_allocator(&tb);
    unsigned char *v[3], *grown;
    arena_stats s;
    arena_mark m;
    arena a;
    int i;
    (void)state;
    arena_init_with(&a, 4096, &al);
    arena_on_limit(&a, on_limit, NULL);
    for (i = 0; i < 3; i++) {
        v[i] = (unsigned char *)arena_alloc(&a, 3000);
        assert_non_null(v[i]);
        memset(v[i], i + 1, 3000);
    }
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 10));
    arena_get_stats(&a, &s);
    arena_set_limit(&a, s.held / 2);
    assert_int_equal(tb.live_bytes, s.held); /* nothing freed behind the caller's back */
    events = 0;
    assert_null(arena_alloc(&a, 1)); /* the inline path too */
    assert_null(arena_alloc_reuse(&a, 1));
    assert_null(arena_strdup(&a, "x"));
    grown = (unsigned char *)arena_realloc(&a, v[2], 3000, 3001);
    assert_null(grown);
    assert_true(events >= 4);
    assert_int_equal(last_event.cause, ARENA_LIMIT_ARENA);
    for (i = 0; i < 3; i++) {
        size_t j;
        for (j = 0; j < 3000; j++)
            assert_int_equal(v[i][j], i + 1);
    }
    /* A limit changed between a mark and its rewind: the rewind is valid,
     * and the limit stays. */
    arena_rewind(&a, m);
    assert_int_equal(arena_limit(&a), s.held / 2);
    assert_null(arena_alloc(&a, 1));
    /* The reset keeps no more than the limit allows: under it again. */
    arena_reset(&a);
    arena_get_stats(&a, &s);
    assert_true(s.held <= arena_limit(&a));
    assert_non_null(arena_alloc(&a, 100));
    arena_set_limit(&a, SIZE_MAX);
    assert_int_equal(arena_limit(&a), SIZE_MAX);
    assert_non_null(arena_alloc(&a, 100000));
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

/* The arena's struct as a failed allocation must leave it, `was` before:
 * every byte the same but the two counters a failure moves, `hits`
 * refusals more and `calls` backing calls more. */
static void assert_unchanged_but_counts(const arena *a, const arena *was, uint64_t hits,
                                        uint64_t calls)
{
    static arena now; /* static: the struct's bytes, not a register's */
    const struct arena__counts *k = &arena__cold(was)->counts;
    memcpy(&now, a, sizeof now);
    assert_int_equal(arena__cold(&now)->counts.limit_hits, k->limit_hits + hits);
    assert_int_equal(arena__cold(&now)->counts.calls, k->calls + calls);
    arena__cold(&now)->counts.limit_hits = k->limit_hits;
    arena__cold(&now)->counts.calls = k->calls;
    assert_memory_equal(&now, was, sizeof now);
}

/* Every figure of arena_get_stats() the same but limit_hits and
 * backing_calls (as above). */
static void assert_stats_unchanged(const arena *a, const arena_stats *was, uint64_t hits,
                                   uint64_t calls)
{
    arena_stats s;
    arena_get_stats(a, &s);
    assert_int_equal(s.limit_hits, was->limit_hits + hits);
    assert_int_equal(s.backing_calls, was->backing_calls + calls);
    s.limit_hits = was->limit_hits;
    s.backing_calls = was->backing_calls;
    assert_memory_equal(&s, was, sizeof s);
}

/* An allocation that needs a new chunk when the chunk index is full (8
 * entries: the 9th chunk grows it to 16), refused by the limit or failed by
 * the backing at each of its calls in turn: NULL, and the arena exactly as
 * it was (every byte of the struct, every figure but the refusal counted
 * and the calls made), the index not grown; a refusal makes no backing
 * call, and a failure gives back whatever it took before it. */
static void refused_growth_changes_nothing(void **state)
{
    static arena a, was;
    arena_allocator al = tb_allocator(&tb);
    arena_stats s;
    size_t live, k;
    uint64_t calls;
    int i;
    (void)state;
    arena_init_with(&a, 4096, &al);
    for (i = 0; i < 8; i++)
        assert_non_null(arena_alloc(&a, 3000)); /* a chunk each */
    assert_int_equal(a.nchunks, 8);
    assert_int_equal(arena__cold(&a)->ncap, 8);
    arena_get_stats(&a, &s);

    /* Room under the limit for the grown index (512 bytes), not the chunk. */
    arena_set_limit(&a, s.held + 1024);
    arena_get_stats(&a, &s);
    memcpy(&was, &a, sizeof a);
    calls = tb.calls + tb.frees;
    live = tb.live_bytes;
    assert_null(arena_alloc(&a, 3000));
    assert_int_equal(tb.calls + tb.frees, calls);
    assert_int_equal(tb.live_bytes, live);
    assert_unchanged_but_counts(&a, &was, 1, 0);
    assert_stats_unchanged(&a, &s, 1, 0);

    /* The backing fails the first call the growth makes, then the second... */
    arena_set_limit(&a, SIZE_MAX);
    for (k = 1;; k++) {
        void *p;
        arena_get_stats(&a, &s);
        memcpy(&was, &a, sizeof a);
        calls = tb.calls + tb.frees;
        tb.fail_at = tb.calls + k;
        p = arena_alloc(&a, 3000);
        tb.fail_at = 0;
        if (p)
            break;
        assert_int_equal(tb.live_bytes, live);
        assert_unchanged_but_counts(&a, &was, 1, tb.calls + tb.frees - calls);
        assert_stats_unchanged(&a, &s, 1, tb.calls + tb.frees - calls);
    }
    assert_true(k > 2); /* the chunk and the index, in some order */
    assert_int_equal(a.nchunks, 9);
    assert_true(arena_check(&a));
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

/* A limit lowered to one byte under what the arena holds: the next reset
 * brings it under the limit (its chunk's overhead counted, as in the
 * checked build's), and allocations succeed again, in a chunk cut down to
 * the room the limit leaves. */
static void reset_brings_the_arena_under_a_lowered_limit(void **state)
{
    arena_allocator al = tb_allocator(&tb);
    arena_stats s;
    arena a;
    int round;
    (void)state;
    for (round = 0; round < 2; round++) {
        arena_init_with(&a, 0, &al);
        assert_non_null(arena_alloc(&a, 100));
        if (round) /* a second chunk, and the heap index */
            assert_non_null(arena_alloc(&a, 65536));
        arena_get_stats(&a, &s);
        arena_set_limit(&a, s.held - 1);
        assert_null(arena_alloc(&a, 100));
        arena_reset(&a);
        arena_get_stats(&a, &s);
        assert_true(s.held <= arena_limit(&a));
        assert_int_equal(s.held, tb.live_bytes);
        assert_non_null(arena_alloc(&a, 100));
        arena_reset(&a);
        arena_get_stats(&a, &s);
        assert_true(s.held <= arena_limit(&a));
        assert_non_null(arena_alloc(&a, 100));
        assert_true(arena_check(&a));
        arena_release(&a);
        assert_int_equal(tb.live, 0);
    }
}

static void limit_zero_and_size_max(void **state)
{
    static _Alignas(16) unsigned char buf[1024];
    arena_allocator al = tb_allocator(&tb);
    arena a, b;
    (void)state;
    arena_init_with(&a, 0, &al);
    arena_set_limit(&a, 0);
    assert_int_equal(arena_limit(&a), 0);
    assert_null(arena_alloc(&a, 1));
    assert_null(arena_alloc(&a, 100000));
    assert_int_equal(tb.calls, 0);
    arena_set_limit(&a, SIZE_MAX);
    assert_non_null(arena_alloc(&a, 1));
    arena_release(&a);
    /* The caller's buffer is not taken from a backing: it does not count. */
    arena_init_buffer(&b, buf, sizeof buf, NULL);
    arena_set_limit(&b, 0);
    assert_non_null(arena_alloc(&b, 100));
    assert_null(arena_alloc(&b, 2000));
    arena_release(&b);
    assert_int_equal(tb.live, 0);
}

static void backing_failure_is_reported(void **state)
{
    arena_allocator al = tb_allocator(&tb);
    arena_stats s;
    arena a;
    (void)state;
    arena_init_with(&a, 0, &al);
    arena_set_name(&a, "request 7");
    arena_on_limit(&a, on_limit, NULL);
    tb.fail_from = 1;
    events = 0;
    assert_null(arena_alloc(&a, 10));
    assert_true(events >= 1);
    assert_int_equal(last_event.cause, ARENA_LIMIT_BACKING);
    assert_int_equal(last_event.limit, SIZE_MAX);
    assert_string_equal(last_event.name, "request 7");
    assert_true(last_event.asked >= 10);
    arena_get_stats(&a, &s);
    assert_int_equal(s.limit_hits, (uint64_t)events);
    tb.fail_from = 0;
    arena_release(&a);
}

/* ---- Group limits ------------------------------------------------------------------------ */

static void budget_is_shared_and_given_back(void **state)
{
    arena_budget *b = arena_budget_create(200000, "tenant");
    arena_allocator al = tb_allocator(&tb);
    arena x, y;
    arena_stats sx, sy;
    (void)state;
    assert_non_null(b);
    assert_string_equal(arena_budget_name(b), "tenant");
    arena_init_with(&x, 8192, &al);
    arena_init_with(&y, 8192, &al);
    arena_set_budget(&x, b);
    arena_set_budget(&y, b);
    arena_on_limit(&y, on_limit, NULL);
    events = 0;
    for (;;) {
        void *p = arena_alloc(&x, 1000), *q = arena_alloc(&y, 1000);
        if (!p && !q)
            break;
        assert_true(arena_budget_used(b) <= 200000);
    }
    arena_get_stats(&x, &sx);
    arena_get_stats(&y, &sy);
    assert_int_equal(arena_budget_used(b), sx.held + sy.held);
    assert_int_equal(tb.live_bytes, sx.held + sy.held);
    assert_true(200000 - arena_budget_used(b) < 8192 + 1024);
    assert_true(events >= 1);
    assert_int_equal(last_event.cause, ARENA_LIMIT_BUDGET);
    assert_string_equal(last_event.limit_name, "tenant");
    assert_int_equal(last_event.limit, 200000);
    /* Values still fit the chunks held: only new memory is refused. */
    arena_release(&x);
    assert_int_equal(arena_budget_used(b), sy.held);
    assert_non_null(arena_alloc(&y, 100000));
    arena_set_budget(&y, NULL);
    assert_int_equal(arena_budget_used(b), 0);
    arena_release(&y);
    arena_budget_destroy(b);
    assert_int_equal(tb.live, 0);
}

/* An arena that holds memory joins a budget only when what it holds fits
 * under the budget's limit, after it gives back its spare chunks if it must
 * (and only then); otherwise it stays as it was, with the budget it had, and
 * the budget is not charged: what the arenas charging a budget hold never
 * exceeds its limit. */
static void budget_joined_only_when_the_charge_fits(void **state)
{
    static arena a, was;
    arena_budget *b = arena_budget_create(SIZE_MAX, "join"), *c = arena_budget_create(0, "full");
    arena_allocator al = tb_allocator(&tb);
    unsigned char *v[3];
    arena_stats s, spares;
    arena_mark m;
    size_t calls;
    int i;
    (void)state;
    assert_non_null(b);
    assert_non_null(c);
    arena_init_with(&a, 4096, &al);
    for (i = 0; i < 3; i++) { /* a chunk each, in use */
        v[i] = (unsigned char *)arena_alloc(&a, 3000);
        assert_non_null(v[i]);
        memset(v[i], i + 1, 3000);
    }
    m = arena_save(&a);
    for (i = 0; i < 3; i++) /* three more, spares after the rewind */
        assert_non_null(arena_alloc(&a, 3000));
    arena_rewind(&a, m);
    arena_get_stats(&a, &spares);

    /* What it holds fits: charged whole, nothing given back. */
    arena_budget_set_limit(b, spares.held);
    assert_true(arena_set_budget(&a, b));
    assert_int_equal(arena_budget_used(b), spares.held);
    arena_get_stats(&a, &s);
    assert_int_equal(s.held, spares.held);
    assert_true(arena_set_budget(&a, b)); /* the budget it has */
    assert_true(arena_set_budget(&a, NULL));
    assert_int_equal(arena_budget_used(b), 0);

    /* Only without its spares: they go back first. */
    arena_budget_set_limit(b, spares.held - 1);
    assert_true(arena_set_budget(&a, b));
    arena_get_stats(&a, &s);
    assert_true(s.held < spares.held);
    assert_int_equal(s.chunks, 3);
    assert_int_equal(arena_budget_used(b), s.held);
    assert_int_equal(tb.live_bytes, s.held);
    for (i = 0; i < 3; i++)
        assert_int_equal(v[i][2999], i + 1);

    /* Not even then: nothing changes, and it keeps the budget it had. */
    arena_get_stats(&a, &s);
    memcpy(&was, &a, sizeof a);
    calls = tb.calls + tb.frees;
    assert_false(arena_set_budget(&a, c));
    assert_memory_equal(&a, &was, sizeof a);
    assert_int_equal(tb.calls + tb.frees, calls);
    assert_int_equal(arena_budget_used(c), 0);
    assert_int_equal(arena_budget_used(b), s.held);
    arena_budget_set_limit(c, s.held);
    assert_true(arena_set_budget(&a, c)); /* from one budget to another */
    assert_int_equal(arena_budget_used(b), 0);
    assert_int_equal(arena_budget_used(c), s.held);
    arena_release(&a);
    assert_int_equal(arena_budget_used(c), 0);

    /* An arena that holds nothing joins a budget at or over its limit. */
    arena_budget_set_limit(c, 0);
    assert_true(arena_set_budget(&a, b));
    assert_true(arena_set_budget(&a, c));
    assert_null(arena_alloc(&a, 1));
    assert_true(arena_set_budget(&a, NULL));
    arena_budget_destroy(b);
    arena_budget_destroy(c);
    assert_int_equal(tb.live, 0);
}

/* ---- A backing allocator on a group limit -------------------------------------------- */

/* arena_budget_allocator(): a pool and an arena on one group limit, exact at
 * the byte; a refused charge takes nothing; a failing backing refunds. */
static void budget_allocator_charges_pools_and_arenas(void **state)
{
    arena_budget_backing bb;
    arena_allocator al;
    arena_pool p;
    arena a;
    size_t block;
    (void)state;
    bb.budget = arena_budget_create(SIZE_MAX, "pools");
    assert_non_null(bb.budget);
    bb.backing = tb_allocator(&tb);
    al = arena_budget_allocator(&bb);

    assert_true(arena_pool_init(&p, 64, 8, 100, &al));
    block = tb.live_bytes;
    assert_int_equal(arena_budget_used(bb.budget), block);
    arena_pool_destroy(&p);
    assert_int_equal(arena_budget_used(bb.budget), 0);

    /* The limit one byte short of the block: refused, nothing taken. */
    arena_budget_set_limit(bb.budget, block - 1);
    tb.calls = 0;
    assert_false(arena_pool_init(&p, 64, 8, 100, &al));
    assert_int_equal(tb.calls, 0);
    assert_int_equal(arena_budget_used(bb.budget), 0);
    arena_budget_set_limit(bb.budget, block);
    assert_true(arena_pool_init(&p, 64, 8, 100, &al));
    assert_int_equal(arena_budget_used(bb.budget), block);

    /* An arena on the same allocator: nothing left, so its chunk is refused. */
    arena_init_with(&a, 4096, &al);
    assert_null(arena_alloc(&a, 16));
    arena_budget_set_limit(bb.budget, SIZE_MAX);
    assert_non_null(arena_alloc(&a, 16));
    assert_int_equal(arena_budget_used(bb.budget), tb.live_bytes);
    arena_release(&a);
    arena_pool_destroy(&p);
    assert_int_equal(arena_budget_used(bb.budget), 0);

    /* The backing fails: the charge comes back. */
    tb.fail_from = tb.calls + 1;
    assert_false(arena_pool_init(&p, 64, 8, 100, &al));
    assert_int_equal(arena_budget_used(bb.budget), 0);
    tb.fail_from = 0;
    assert_int_equal(tb.live_bytes, 0);
    arena_budget_destroy(bb.budget);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(limit_is_enforced_at_the_byte),
        cmocka_unit_test(lowered_limit_refuses_until_a_reset),
        cmocka_unit_test(refused_growth_changes_nothing),
        cmocka_unit_test(reset_brings_the_arena_under_a_lowered_limit),
        cmocka_unit_test(limit_zero_and_size_max),
        cmocka_unit_test(backing_failure_is_reported),
        cmocka_unit_test(budget_is_shared_and_given_back),
        cmocka_unit_test(budget_joined_only_when_the_charge_fits),
        cmocka_unit_test(budget_allocator_charges_pools_and_arenas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
