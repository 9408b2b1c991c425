/* SPDX-License-Identifier: MIT */
/*
 * Limits, counters, names and the report (arena_set_limit(), arena_budget,
 * arena_get_stats(), arena_set_name(), arena/report.h), single-threaded:
 * the counters against a shadow count of the backing allocator, the limit
 * exact at the byte, a lowered limit, 0 and SIZE_MAX, the callback, group
 * limits, and the report's formats and truncation; the pool's figures, name
 * and registration, and a backing allocator charged to a group limit.
 */
#include <stdio.h>
#include <string.h>

#include <arena/arena.h>
#include <arena/hooks.h>
#include <arena/pool.h>
#include <arena/report.h>
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

/* ---- A shadow count ------------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* The shadow of the peaks of arena_size(): the largest figure seen after a
 * call, since init and since the batch began; and of arena_retained(). */
static size_t shadow_peak, shadow_peak_batch, shadow_retained, shadow_retained_batch;

/* Notes arena_size() after a call; `ended`: the call ended a batch. */
static void shadow_sample(const arena *a, bool ended)
{
    size_t n = arena_size(a), r = arena_retained(a);
    if (ended)
        shadow_peak_batch = shadow_retained_batch = 0;
    test_note_peak(&shadow_peak, n);
    test_note_peak(&shadow_peak_batch, n);
    test_note_peak(&shadow_retained, r);
    test_note_peak(&shadow_retained_batch, r);
}

/* Every counter the backing can see agrees with it, after every call, and
 * the peaks of arena_size() and arena_retained() with the shadow. */
static void check_against_backing(const arena *a, size_t limit, uint64_t resets)
{
    arena_stats s;
    arena_get_stats(a, &s);
    assert_int_equal(s.peak_stored, shadow_peak);
    assert_int_equal(s.peak_stored_batch, shadow_peak_batch);
    /* What the arena holds peaks within a call too (a chunk taken before
     * the one it outgrew is given back): held exactly as the backing saw
     * it, and retained (the chunks' capacities, less than they hold) at
     * least as after every call. */
    assert_int_equal(s.peak_held, tb.peak_bytes);
    assert_true(s.peak_retained >= shadow_retained && s.peak_retained <= s.peak_held);
    assert_true(s.peak_retained_batch >= shadow_retained_batch &&
                s.peak_retained_batch <= s.peak_retained);
    assert_int_equal(s.held, tb.live_bytes);
    assert_int_equal(s.backing_calls, tb.calls + tb.frees);
    assert_int_equal(s.chunks, a->nchunks);
    assert_int_equal(s.retained, arena_retained(a));
    assert_int_equal(s.stored, arena_size(a));
    assert_int_equal(s.resets, resets);
    /* The waste and the values lie in the chunks in use. */
    assert_true(s.waste <= s.held && s.stored <= s.held - s.waste);
    assert_true(tb.live_bytes <= limit);
    assert_true(s.limit == limit);
}

/* Random work under a random limit (or none): stores of every size class,
 * values given back and reused, grown, marks and rewinds, resets, trims and
 * releases.  The counters match the backing exactly, and the backing never
 * holds more than the limit. */
static void counters_match_the_backing(void **state)
{
    int seed;
    (void)state;
    for (seed = 1; seed <= 12; seed++) {
        arena_allocator al = tb_allocator(&tb);
        arena a;
        size_t limit = seed % 3 == 0 ? SIZE_MAX : (size_t)(20000 + 37000 * (seed % 7));
        uint64_t resets = 0;
        void *last = NULL;
        size_t last_n = 0;
        arena_mark m = {0};
        bool marked = false;
        int step;

        rng_state = 0x9E3779B97F4A7C15ull * (uint64_t)seed;
        arena_init_with(&a, 4096 << (seed % 4), &al);
        arena_set_limit(&a, limit);
        shadow_peak = shadow_peak_batch = shadow_retained = shadow_retained_batch = 0;
        tb.peak_bytes = tb.live_bytes;
        for (step = 0; step < 1500; step++) {
            unsigned op = (unsigned)(rng() % 16);
            size_t n = (size_t)(rng() % (op == 0 ? 40000 : 300)) + 1;
            bool ended = op == 10 || op == 11;
            void *p;
            switch (op) {
            case 0:
            case 1:
            case 2:
            case 3:
            case 4:
                p = arena_alloc(&a, n);
                if (p) {
                    memset(p, 0x5A, n);
                    last = p;
                    last_n = n;
                }
                break;
            case 5:
            case 6:
                p = arena_alloc_reuse(&a, n);
                shadow_sample(&a, false);
                if (p && rng() % 2)
                    arena_free(&a, p, n);
                else if (p)
                    last = p, last_n = n;
                break;
            case 7:
                if (last) {
                    p = arena_realloc(&a, last, last_n, last_n + n);
                    if (p)
                        last = p, last_n += n;
                }
                break;
            case 8:
                m = arena_save(&a);
                marked = true;
                break;
            case 9:
                if (marked) {
                    arena_rewind(&a, m);
                    last = NULL;
                }
                break;
            case 10:
                arena_reset(&a);
                resets++;
                last = NULL;
                marked = false;
                break;
            case 11:
                arena_reset_to(&a, rng() % 50000);
                resets++;
                last = NULL;
                marked = false;
                break;
            case 12: arena_trim(&a, rng() % 50000); break;
            case 13:
                if (rng() % 8 == 0) {
                    arena_release(&a);
                    last = NULL;
                    marked = false;
                    ended = true;
                }
                break;
            default: p = arena_strdup(&a, "a string of some length"); break;
            }
            shadow_sample(&a, ended);
            check_against_backing(&a, limit, resets);
        }
        arena_release(&a);
        assert_int_equal(tb.live, 0);
    }
}

/* The peaks where the inline paths forget values: a rewind and a scope's
 * end in the window, the one-chunk reset (arena_reset(), arena_reset_to()),
 * the inline release of a caller's buffer, and the Lua hook's blocks given
 * back and taken again; exact after every call, in every build. */
static void check_peaks(const arena *a)
{
    arena_stats s;
    arena_get_stats(a, &s);
    assert_int_equal(s.stored, arena_size(a));
    assert_int_equal(s.peak_stored, shadow_peak);
    assert_int_equal(s.peak_stored_batch, shadow_peak_batch);
}

#define STEP(a, call, ended)                                                                       \
  do {                                                                                             \
    call;                                                                                          \
    shadow_sample((a), (ended));                                                                   \
    check_peaks(a);                                                                                \
  } while (0)

static void peaks_exact_through_the_inline_paths(void **state)
{
    static char buf[8192];
    arena a = {0}, b;
    arena_mark m;
    arena_scope sc;
    void *p[8];
    int i, k;
    (void)state;

    shadow_peak = shadow_peak_batch = 0;
    STEP(&a, p[0] = arena_alloc(&a, 100), false);
    assert_non_null(p[0]);
    for (k = 0; k < 3; k++) {
        /* A batch whose high point a rewind, then a scope, forgets. */
        STEP(&a, m = arena_save(&a), false);
        STEP(&a, p[1] = arena_alloc(&a, 3000 - 1000 * (size_t)k), false);
        STEP(&a, p[2] = arena_alloc(&a, 7), false);
        STEP(&a, arena_rewind(&a, m), false);
        STEP(&a, sc = arena_scope_begin(&a), false);
        STEP(&a, p[1] = arena_alloc(&a, 500 * (size_t)k + 1), false);
        STEP(&a, arena_scope_end(&sc), false);
        STEP(&a, p[3] = arena_alloc(&a, 10), false);
        STEP(&a, arena_reset(&a), true);
        STEP(&a, p[3] = arena_alloc(&a, 40 * (size_t)k + 1), false);
        STEP(&a, arena_reset_to(&a, SIZE_MAX), true);
    }
    assert_non_null(p[1] && p[2] && p[3]);

    /* The Lua hook: blocks given back (filed for reuse, and the most recent
     * one) and taken again. */
    for (i = 0; i < 8; i++)
        STEP(&a, p[i] = arena_hook_lua(&a, NULL, 0, 24 + 8 * (size_t)i), false);
    for (i = 0; i < 8; i += 2)
        STEP(&a, (void)arena_hook_lua(&a, p[i], 24 + 8 * (size_t)i, 0), false);
    STEP(&a, (void)arena_hook_lua(&a, p[7], 80, 0), false);
    /* Above the high point of the blocks given back, then down again
     * through the fast path (a block filed at the head of its list). */
    for (i = 0; i < 4; i++)
        STEP(&a, p[2 * i] = arena_hook_lua(&a, NULL, 0, 200), false);
    STEP(&a, (void)arena_hook_lua(&a, p[2], 200, 0), false);
    STEP(&a, (void)arena_hook_lua(&a, p[4], 200, 0), false);
    STEP(&a, p[0] = arena_hook_lua(&a, NULL, 0, 24), false);
    STEP(&a, p[2] = arena_alloc(&a, 5000), false);
    STEP(&a, p[1] = arena_hook_lua(&a, p[1], 32, 30), false); /* within its block */
    STEP(&a, p[2] = arena_alloc(&a, 5000), false);
    STEP(&a, p[1] = arena_hook_lua(&a, p[1], 30, 20), false); /* a shrink */
    STEP(&a, p[1] = arena_hook_lua(&a, p[1], 20, 300), false);
    STEP(&a, arena_reset(&a), true);

    /* The current arena's family: small blocks (on pages where the build
     * keeps them) and larger ones, given back, shrunk and grown. */
    {
        arena *prev = arena_current_begin(&a);
        for (i = 0; i < 6; i++)
            STEP(&a, p[i] = arena_cur_malloc(i < 3 ? 24 : 700), false);
        for (i = 0; i < 6; i += 2)
            STEP(&a, arena_cur_free(p[i]), false);
        for (i = 0; i < 6; i += 2)
            STEP(&a, p[i] = arena_cur_malloc(i < 3 ? 40 : 900), false);
        STEP(&a, arena_cur_free(p[0]), false);
        /* Each shrink right after a new high point. */
        STEP(&a, p[6] = arena_alloc(&a, 5000), false);
        STEP(&a, p[1] = arena_cur_realloc(p[1], 8), false);
        STEP(&a, p[7] = arena_alloc(&a, 5000), false);
        STEP(&a, p[3] = arena_cur_realloc(p[3], 890), false);
        STEP(&a, p[7] = arena_alloc(&a, 5000), false);
        STEP(&a, p[3] = arena_cur_realloc(p[3], 100), false);
        assert_non_null(p[6] && p[7]);
        STEP(&a, p[5] = arena_cur_realloc(p[5], 3000), false);
        STEP(&a, arena_cur_free(p[2]), false);
        assert_non_null(p[1] && p[3] && p[5]);
        arena_current_end(prev);
    }
    STEP(&a, arena_release(&a), true);
    assert_true(shadow_peak >= 3000);

    /* A caller's buffer, untouched by the library (inline init and
     * release), then again with a rewind. */
    shadow_peak = shadow_peak_batch = 0;
    STEP(&b, arena_init_buffer(&b, buf, sizeof buf, NULL), false);
    STEP(&b, p[0] = arena_alloc(&b, 2000), false);
    STEP(&b, arena_release(&b), true);
    STEP(&b, m = arena_save(&b), false);
    STEP(&b, p[0] = arena_alloc(&b, 1500), false);
    STEP(&b, arena_rewind(&b, m), false);
    STEP(&b, p[0] = arena_alloc(&b, 16), false);
    STEP(&b, arena_reset(&b), true);
    STEP(&b, arena_release(&b), true);
    assert_int_equal(shadow_peak, 2000);
}

/* A child arena's chunks are values of its parent, and each comes with a
 * tie (a cleanup record) that replaces the last one once the parent took a
 * mark: the parent's peaks count the ties as they are between calls, not
 * the moment a chunk call holds both (nor a refused chunk's tie). */
static void peaks_of_a_parent_exact_through_a_child(void **state)
{
    static char buf[8192];
    arena parent, child;
    void *p;
    (void)state;

    shadow_peak = shadow_peak_batch = 0;
    STEP(&parent, arena_init(&parent, 1 << 16), false);
    arena_init_child(&child, &parent, 4096);
    STEP(&parent, p = arena_alloc(&child, 100), false);
    STEP(&parent, p = arena_alloc(&child, 4000), false);
    STEP(&parent, (void)arena_save(&parent), false);
    STEP(&parent, p = arena_alloc(&child, 4000), false); /* a new tie, the old one given back */
    assert_non_null(p);
    STEP(&parent, arena_release(&child), false);
    STEP(&parent, arena_release(&parent), true);

    /* A parent on a caller's buffer that cannot hold the child's chunk. */
    shadow_peak = shadow_peak_batch = 0;
    STEP(&parent, arena_init_buffer(&parent, buf, sizeof buf, NULL), false);
    arena_init_child(&child, &parent, 4096);
    STEP(&parent, p = arena_alloc(&child, 100), false);
    STEP(&parent, (void)arena_save(&parent), false);
    STEP(&parent, p = arena_alloc(&child, 4000), false); /* refused: its tie given back */
    assert_null(p);
    STEP(&parent, arena_release(&child), false);
    STEP(&parent, arena_release(&parent), true);
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

/* ---- Counters ---------------------------------------------------------------------------- */

static void counters_of_reuse_resets_and_waste(void **state)
{
    arena_allocator al = tb_allocator(&tb);
    arena_stats s;
    arena a;
    void *p;
    int i;
    (void)state;
    arena_init_with(&a, 4096, &al);
    p = arena_alloc_reuse(&a, 200);
    assert_non_null(arena_alloc_reuse(&a, 8));
    arena_free(&a, p, 200);
    arena_get_stats(&a, &s);
    assert_true(s.waste >= 200); /* the block given back */
    assert_non_null(arena_alloc_reuse(&a, 200));
    arena_get_stats(&a, &s);
    assert_int_equal(s.reused, 200);
    for (i = 0; i < 10; i++) {
        assert_non_null(arena_alloc(&a, 64));
        arena_reset(&a); /* inline where the arena holds one chunk */
    }
    arena_get_stats(&a, &s);
    assert_int_equal(s.resets, 10);
    assert_int_equal(s.stored, 0);
    assert_true(s.peak_stored >= 208);
    assert_int_equal(s.peak_stored_batch, 0);
    if (test_packed()) {
        /* 1 byte, then a 16-byte value aligned after it: ARENA_ALIGN - 1 bytes
         * of padding (15 on x86-64, 7 where max_align_t is 8 bytes). */
        arena_reset_to(&a, 0);
        assert_non_null(arena_alloc(&a, 1));
        assert_non_null(arena_alloc(&a, 16));
        arena_get_stats(&a, &s);
        assert_int_equal(s.waste, ARENA_ALIGN - 1);
    }
    arena_release(&a);
}

/* What holds no value, exact where a chunk carries room beside its
 * capacity (the checked build's header; an oversized chunk's guard under
 * ASan, Valgrind and in the checked build): none in an empty current chunk,
 * after a reset and after a rewind that makes an oversized chunk current;
 * and never more, with the values, than the chunks in use, as that chunk
 * fills to its end. */
static void waste_is_exact_where_chunks_carry_room(void **state)
{
    arena_allocator al = tb_allocator(&tb);
    arena_stats s;
    arena_mark m;
    arena a;
    (void)state;
    arena_init_with(&a, 4096, &al);
    assert_non_null(arena_alloc(&a, 10));
    arena_reset(&a);
    arena_get_stats(&a, &s);
    assert_int_equal(s.stored, 0);
    assert_int_equal(s.waste, 0);
    arena_release(&a);

    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 5000)); /* a chunk of its own */
    arena_rewind(&a, m);                    /* ... kept current: it is a regular one's size */
    arena_get_stats(&a, &s);
    assert_int_equal(s.chunks, 1);
    assert_int_equal(s.stored, 0);
    assert_int_equal(s.waste, 0);
    while (s.chunks == 1) {
        assert_non_null(arena_alloc(&a, 100));
        arena_get_stats(&a, &s);
        assert_true(s.waste <= s.held && s.stored <= s.held - s.waste);
        assert_true(s.stored + s.waste <= arena_retained(&a) + 2 * (size_t)ARENA_ALIGN);
    }
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

static void names(void **state)
{
    static _Alignas(16) unsigned char buf[256];
    arena a = {0}, b;
    (void)state;
    assert_null(arena_name(&a));
    arena_set_name(&a, "one");
    assert_string_equal(arena_name(&a), "one");
    arena_set_name(&a, "two");
    assert_string_equal(arena_name(&a), "two");
    arena_reset(&a);
    arena_release(&a);
    assert_string_equal(arena_name(&a), "two");
    arena_set_name(&a, NULL);
    assert_null(arena_name(&a));
    arena_init_buffer(&b, buf, sizeof buf, NULL);
    assert_null(arena_name(&b));
    arena_set_name(&b, "stack");
    assert_string_equal(arena_name(&b), "stack");
    arena_release(&b);
}

/* ---- The report ------------------------------------------------------------------------- */

static void report_formats_and_truncation(void **state)
{
    static char big[1 << 16], small[16];
    arena a = {0}, b = {0};
    arena_cache *c = arena_cache_create(NULL);
    arena_shared *sh = arena_shared_create(0, 0, NULL);
    arena *r;
    size_t n, m;
    (void)state;
    assert_non_null(c);
    assert_non_null(sh);
    arena_set_name(&a, "request \"quoted\"");
    assert_non_null(arena_alloc(&a, 1000));
    assert_true(arena_register(&a));
    assert_true(arena_register(&a)); /* again: nothing */
    assert_true(arena_register(&b));
    arena_cache_set_name(c, "requests");
    assert_true(arena_cache_register(c));
    r = arena_cache_acquire(c);
    assert_non_null(r);
    arena_set_name(r, "in the cache");
    assert_non_null(arena_alloc(r, 5000));
    arena_shared_set_name(sh, "shared");
    assert_true(arena_shared_register(sh));
    assert_non_null(arena_shared_alloc(sh, 64));

    n = arena_report(big, sizeof big, ARENA_REPORT_TEXT);
    assert_true(n < sizeof big);
    assert_int_equal(strlen(big), n);
    assert_non_null(strstr(big, "request \"quoted\""));
    assert_non_null(strstr(big, "(unnamed)"));
    assert_non_null(strstr(big, "requests"));
    assert_non_null(strstr(big, "  in the cache")); /* indented under its cache */
    assert_non_null(strstr(big, "shared"));

    n = arena_report(big, sizeof big, ARENA_REPORT_JSON);
    assert_int_equal(strlen(big), n);
    assert_non_null(strstr(big, "\"name\": \"request \\\"quoted\\\"\""));
    assert_non_null(strstr(big, "\"name\": null"));
    assert_non_null(strstr(big, "\"kind\": \"cache\""));
    assert_non_null(strstr(big, "\"arenas_registered\": ["));

    /* Too small: truncated, NUL-terminated, the whole length returned. */
    m = arena_report(small, sizeof small, ARENA_REPORT_JSON);
    assert_int_equal(m, n);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, big, sizeof small - 1);
    assert_int_equal(arena_report(NULL, 0, ARENA_REPORT_JSON), n);
    small[0] = 'x';
    (void)arena_report(small, 1, ARENA_REPORT_TEXT);
    assert_int_equal(small[0], '\0');

    /* To a FILE. */
    {
        /* A file of the working directory (tmpfile() needs the root
         * directory's permissions on Windows). */
        FILE *f = fopen("test_limits_report.txt", "wb+");
        long len;
        assert_non_null(f);
        assert_int_equal(arena_report_file(f, ARENA_REPORT_TEXT), 0);
        len = ftell(f);
        assert_int_equal((size_t)len, arena_report(NULL, 0, ARENA_REPORT_TEXT));
        fclose(f);
        remove("test_limits_report.txt");
    }

    /* Released, unregistered, destroyed: gone from the report. */
    arena_release(&a);
    arena_unregister(&b);
    arena_cache_recycle(c, r);
    arena_cache_destroy(c);
    arena_shared_destroy(sh);
    (void)arena_report(big, sizeof big, ARENA_REPORT_TEXT);
    assert_null(strstr(big, "quoted"));
    assert_null(strstr(big, "requests"));
    assert_null(strstr(big, "shared"));
    assert_null(strstr(big, "(unnamed)"));
}

/* ---- Pools --------------------------------------------------------------------------- */

/* A pool's figures against a shadow count through random allocs and frees:
 * used, the peak, stored; the storage, held and waste. */
static void pool_figures_match_a_shadow(void **state)
{
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

static void pool_names_and_report(void **state)
{
    static char text[1 << 16];
    arena_pool p, q = {0};
    (void)state;
    assert_true(arena_pool_init(&p, 32, 8, 64, NULL));
    assert_null(arena_pool_name(&p));
    arena_pool_set_name(&p, "sessions");
    assert_string_equal(arena_pool_name(&p), "sessions");
    assert_true(arena_pool_register(&p));
    assert_true(arena_pool_register(&p)); /* again: nothing */
    (void)arena_report(text, sizeof text, ARENA_REPORT_TEXT);
    assert_non_null(strstr(text, "sessions"));
    assert_non_null(strstr(text, "pool"));
    assert_non_null(strstr(text, "(64 slots)"));
    arena_pool_set_name(&p, "conns"); /* renamed while registered */
    (void)arena_report(text, sizeof text, ARENA_REPORT_JSON);
    assert_null(strstr(text, "sessions"));
    assert_non_null(strstr(text, "\"kind\": \"pool\", \"name\": \"conns\", \"stored\": null"));
    assert_non_null(strstr(text, "\"capacity\": 64"));
    arena_pool_set_name(&p, NULL);
    assert_null(arena_pool_name(&p));
    arena_pool_destroy(&p);
    (void)arena_report(text, sizeof text, ARENA_REPORT_JSON);
    assert_null(strstr(text, "\"pool\""));
    /* Init clears the name; an empty pool registers and leaves at destroy. */
    arena_pool_set_name(&q, "empty");
    assert_true(arena_pool_register(&q));
    (void)arena_report(text, sizeof text, ARENA_REPORT_TEXT);
    assert_non_null(strstr(text, "empty"));
    arena_pool_destroy(&q);
    (void)arena_report(text, sizeof text, ARENA_REPORT_TEXT);
    assert_null(strstr(text, "empty"));
    assert_true(arena_pool_init(&q, 8, 8, 4, NULL));
    assert_null(arena_pool_name(&q));
    arena_pool_destroy(&q);
}

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
        cmocka_unit_test(counters_match_the_backing),
        cmocka_unit_test(peaks_exact_through_the_inline_paths),
        cmocka_unit_test(peaks_of_a_parent_exact_through_a_child),
        cmocka_unit_test(limit_is_enforced_at_the_byte),
        cmocka_unit_test(lowered_limit_refuses_until_a_reset),
        cmocka_unit_test(refused_growth_changes_nothing),
        cmocka_unit_test(reset_brings_the_arena_under_a_lowered_limit),
        cmocka_unit_test(limit_zero_and_size_max),
        cmocka_unit_test(backing_failure_is_reported),
        cmocka_unit_test(budget_is_shared_and_given_back),
        cmocka_unit_test(budget_joined_only_when_the_charge_fits),
        cmocka_unit_test(counters_of_reuse_resets_and_waste),
        cmocka_unit_test(waste_is_exact_where_chunks_carry_room),
        cmocka_unit_test(names),
        cmocka_unit_test(report_formats_and_truncation),
        cmocka_unit_test(pool_figures_match_a_shadow),
        cmocka_unit_test(pool_names_and_report),
        cmocka_unit_test(budget_allocator_charges_pools_and_arenas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
