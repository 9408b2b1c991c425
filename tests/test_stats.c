/* SPDX-License-Identifier: MIT */
/*
 * The arena's figures (arena_get_stats()) and name (arena_set_name()): the
 * counters against a shadow count of the backing allocator through random
 * work under a random limit, the peaks exact through the inline paths and
 * through a child arena, the counters of reuse, resets and waste, and names
 * kept through resets and releases.
 */
#include <arena/arena.h>
#include <arena/hooks.h>

#include "cold.h"
#include "support.h"

static test_backing tb;

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counters_match_the_backing),
        cmocka_unit_test(peaks_exact_through_the_inline_paths),
        cmocka_unit_test(peaks_of_a_parent_exact_through_a_child),
        cmocka_unit_test(counters_of_reuse_resets_and_waste),
        cmocka_unit_test(waste_is_exact_where_chunks_carry_room),
        cmocka_unit_test(names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
