/* SPDX-License-Identifier: MIT */
/*
 * Reuse within a batch: arena_free(), the adapters' frees and a moving
 * arena_realloc() give blocks back, the reusing allocations take them, and a
 * reset or rewind forgets them.  Memory that churns stays flat; every tool
 * sees a freed block closed; misuse is reported where the build can see it.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arena/arena.h>
#include <arena/hooks.h>

#include "support.h"

#if TEST_ASAN
#  include <sanitizer/asan_interface.h>
#endif

static test_backing tb;

static void init_tb(arena *a, size_t chunk_size)
{
    arena_allocator al = tb_allocator(&tb);
    tb_reset(&tb);
    arena_init_with(a, chunk_size, &al);
}

static void release_tb(arena *a)
{
    arena_release(a);
    assert_int_equal(tb.live, 0);
}

/* A freed value is closed to the program: poisoned under ASan, no-access
 * under Valgrind (the checked build clobbers it: see write_after_free). */
static bool closed(const void *p)
{
#if TEST_ASAN
    return __asan_address_is_poisoned(p) != 0;
#elif defined(RUNNING_ON_VALGRIND)
    char v;
    if (test_on_valgrind())
        return VALGRIND_GET_VBITS(p, &v, 1) == 3;
    return true;
#else
    (void)p;
    return true;
#endif
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static size_t draw(size_t below)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (size_t)(rng % below);
}

/* ---- One rule for sizes: a value holds the bytes it was asked for --------------------- */

/* Gives a value back that is not the most recent, so that the lists of
 * free blocks open, as they are in a batch that frees. */
static void open_lists(arena *a)
{
    void *p = arena_alloc(a, 32);
    assert_non_null(p);
    assert_non_null(arena_alloc(a, 16));
    arena_free(a, p, 32);
    assert_true((a->pending & 1u) != 0); /* ARENA__PENDING_REUSE */
}

/* Whether [p, p + n) and [q, q + m) share a byte. */
static bool overlap(const void *p, size_t n, const void *q, size_t m)
{
    const char *x = (const char *)p, *y = (const char *)q;
    return x < y + m && y < x + n;
}

/* yyjson's setup ({arena_hook_alloc, arena_hook_realloc, arena_hook_free}):
 * a value grown in place by arena_hook_realloc() owns its new bytes, so the
 * next value goes after them. */
static void hook_realloc_grows_what_hook_alloc_stored(void **state)
{
    arena a;
    unsigned char *p, *q, *next;
    (void)state;

    init_tb(&a, 0);
    p = (unsigned char *)arena_hook_alloc(&a, 2494);
    assert_non_null(p);
    fill_pattern(p, 2494, 1);
    q = (unsigned char *)arena_hook_realloc(&a, p, 2494, 2517);
    assert_non_null(q);
    assert_true(has_pattern(q, 2494, 1));
    fill_pattern(q, 2517, 2);
    next = (unsigned char *)arena_alloc(&a, 16);
    assert_non_null(next);
    fill_pattern(next, 16, 3);
    assert_false(overlap(q, 2517, next, 16));
    assert_true(has_pattern(q, 2517, 2));
    assert_int_equal(arena_size(&a), 2517 + 16);
    release_tb(&a);
}

/* Lua's hook frees a value with its size: only that value's bytes go back,
 * whichever call stored it, so the value after it stays. */
static void lua_free_gives_back_the_value_only(void **state)
{
    arena a;
    unsigned char *p, *next, *x;
    size_t i;
    (void)state;

    for (i = 0; i < 3; i++) {
        init_tb(&a, 0);
        p = (unsigned char *)(i == 0   ? arena_hook_alloc(&a, 486)
                              : i == 1 ? arena_alloc(&a, 486)
                                       : arena_alloc_reuse(&a, 486));
        next = (unsigned char *)arena_alloc(&a, 16);
        assert_non_null(p);
        assert_non_null(next);
        fill_pattern(next, 16, 7);
        assert_null(arena_hook_lua(&a, p, 486, 0));
        x = (unsigned char *)arena_alloc_reuse(&a, 500);
        assert_non_null(x);
        fill_pattern(x, 500, 8);
        assert_false(overlap(x, 500, next, 16));
        assert_true(has_pattern(next, 16, 7));
        assert_int_equal(arena_size(&a), 16 + 500);
        release_tb(&a);
    }
}

/* A value stored at an alignment below ARENA_ALIGN may start where the
 * value before it ends, in what would otherwise be that value's padding:
 * giving the first one back gives back its own bytes only. */
static void free_keeps_a_packed_neighbour(void **state)
{
    static const size_t sizes[] = {1, 7, 8, 9, 15, 17, 24, 40, 100, 250, 257, 300, 486, 1000};
    arena a;
    size_t i, k;
    (void)state;

    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p, *q;
        char *s;
        init_tb(&a, 0);
        open_lists(&a);
        for (k = 0; k < 4; k++) {
            p = (unsigned char *)(k == 0   ? arena_alloc(&a, sizes[i])
                                  : k == 1 ? arena_alloc_reuse(&a, sizes[i])
                                  : k == 2 ? arena_hook_lua(&a, NULL, 0, sizes[i])
                                           : arena_hook_realloc(&a, NULL, 0, sizes[i]));
            assert_non_null(p);
            s = arena_strdup(&a, "xyz");
            assert_non_null(s);
            q = (unsigned char *)arena_alloc_aligned(&a, 4, 4);
            assert_non_null(q);
            memcpy(q, "abcd", 4);
            arena_free(&a, p, sizes[i]);
            for (size_t j = 0; j < 8; j++) {
                unsigned char *x = (unsigned char *)arena_alloc_reuse(&a, sizes[i] + j);
                assert_non_null(x);
                memset(x, 0xEE, sizes[i] + j);
                assert_false(overlap(x, sizes[i] + j, s, 4));
                assert_false(overlap(x, sizes[i] + j, q, 4));
            }
            assert_string_equal(s, "xyz");
            assert_memory_equal(q, "abcd", 4);
        }
        release_tb(&a);
    }
}

/* arena_hook_realloc() grows any value of its arena told its size, never
 * reporting a size it was not told. */
static void hook_realloc_grows_any_value(void **state)
{
    arena a;
    unsigned char *p, *q;
    size_t i;
    (void)state;

    record_errors();
    for (i = 0; i < 3; i++) {
        init_tb(&a, 0);
        p = (unsigned char *)(i == 0   ? arena_alloc(&a, 486)
                              : i == 1 ? arena_hook_alloc(&a, 486)
                                       : arena_hook_zalloc(&a, 486, 1));
        assert_non_null(p);
        fill_pattern(p, 486, 5);
        q = (unsigned char *)arena_hook_realloc(&a, p, 486, 600);
        assert_non_null(q);
        assert_true(has_pattern(q, 486, 5));
        q = (unsigned char *)arena_hook_lua(&a, q, 600, 700);
        assert_non_null(q);
        assert_true(has_pattern(q, 486, 5));
        assert_int_equal(arena_size(&a), 700);
        release_tb(&a);
    }
    assert_int_equal(recorded_errors.count, 0);
    restore_errors();
}

/* arena_alloc_reuse() takes a free block larger than the value before it
 * takes memory never used. */
static void alloc_reuse_takes_a_larger_block(void **state)
{
    arena a;
    char *v[3], *x;
    size_t held;
    (void)state;

    init_tb(&a, 4096);
    v[0] = (char *)arena_alloc_reuse(&a, 64);
    v[1] = (char *)arena_alloc_reuse(&a, 64);
    v[2] = (char *)arena_alloc_reuse(&a, 64);
    assert_true(v[0] && v[1] && v[2]);
    arena_free(&a, v[0], 64);
    held = tb.live;
    x = (char *)arena_alloc_reuse(&a, 40);
    assert_non_null(x);
    assert_true(x >= v[0] && x + 40 <= v[0] + 64);
    assert_int_equal(tb.live, held);
    release_tb(&a);
}

/* Values given back one after another as they were stored, the most recent
 * first: each goes back to the position, in every build, and so do the
 * chunks of short child arenas. */
static void freeing_the_most_recent_keeps_memory_flat(void **state)
{
    arena a;
    size_t i, held = 0;
    (void)state;

    init_tb(&a, 0);
    for (i = 0; i < 20000; i++) {
        void *p = arena_alloc(&a, 64);
        assert_non_null(p);
        arena_free(&a, p, 64);
        if (i == 100)
            held = tb.live;
    }
    assert_int_equal(tb.live, held);
    assert_int_equal(arena_size(&a), 0);
    for (i = 0; i < 20000; i++) {
        arena child;
        arena_init_child(&child, &a, 0);
        assert_non_null(arena_alloc(&child, 100));
        arena_release(&child);
        if (i == 100)
            held = tb.live;
    }
    assert_int_equal(tb.live, held);
    release_tb(&a);
}

/* ---- Late frees: a value given back after its batch ended ---------------------------- */

/* A value given back after the reset that ended its batch (a container
 * destroyed after the reset) lies beyond what the new batch has placed:
 * reported, and nothing is given back, whichever call stored it. */
static void late_free_after_reset_reported(void **state)
{
    arena a;
    size_t i;
    (void)state;

    record_errors();
    for (i = 0; i < 4; i++) {
        unsigned char *p, *x;
        int count;
        init_tb(&a, 0);
        open_lists(&a);
        p = (unsigned char *)(i == 0   ? arena_alloc(&a, 300)
                              : i == 1 ? arena_alloc_reuse(&a, 300)
                              : i == 2 ? arena_alloc_reuse(&a, 40)
                                       : arena_hook_lua(&a, NULL, 0, 40));
        assert_non_null(p);
        arena_reset(&a);
        x = (unsigned char *)arena_alloc(&a, 16);
        assert_non_null(x);
        fill_pattern(x, 16, 9);
        count = recorded_errors.count;
        arena_free(&a, p, i < 2 ? 300 : 40);
        assert_true(test_misuse_reported(count, ARENA_ERR_LATE_FREE));
        assert_non_null(strstr(recorded_errors.message, "arena"));
        assert_int_equal(arena_size(&a), 16);
        for (size_t k = 0; k < 16; k++) {
            unsigned char *y = (unsigned char *)arena_alloc_reuse(&a, i < 2 ? 300 : 40);
            assert_non_null(y);
            memset(y, 0xAB, i < 2 ? 300 : 40);
        }
        assert_true(has_pattern(x, 16, 9));
        release_tb(&a);
    }
    assert_int_equal(recorded_errors.count, recorded_errors.expected);
    restore_errors();
}

/* A plain build knows the block of a value a reusing allocation placed (its
 * page, or its head): a size past that block, and a second free of a page's
 * block, are reported there, and nothing is given back. */
static void known_blocks_report_misuse(void **state)
{
    arena a;
    char *small, *large, *keep[40];
    size_t i, size;
    int count;
    (void)state;

    if (!test_packed())
        return; /* instrumented builds: see double_free_reported */
    record_errors();
    init_tb(&a, 0);
    open_lists(&a);
    for (i = 0; i < 40; i++) /* past the values a class takes before its page */
        assert_non_null(keep[i] = (char *)arena_alloc_reuse(&a, 40));
    small = keep[39];
    large = (char *)arena_alloc_reuse(&a, 1000);
    assert_non_null(large);
    size = arena_size(&a);
    count = recorded_errors.count;
    arena_free(&a, large, 5000);
    assert_true(test_misuse_reported(count, ARENA_ERR_BAD_SIZE));
    arena_free(&a, small, 200);
    assert_true(test_misuse_reported(count + 1, ARENA_ERR_BAD_SIZE));
    assert_int_equal(arena_size(&a), size);
    arena_free(&a, small, 40);
    arena_free(&a, small, 40);
    assert_true(test_misuse_reported(count + 2, ARENA_ERR_DOUBLE_FREE));
    assert_int_equal(arena_size(&a), size - 40);
    assert_int_equal(recorded_errors.count, recorded_errors.expected);
    restore_errors();
    release_tb(&a);
}

/* A value placed after a head before a rewind outlives it (it was stored
 * before the mark): its head belongs to an epoch the rewind ended, so it is
 * given back as its own bytes, never past them; and a value stored after
 * the mark, given back after the rewind, lies past the position: reported. */
static void rewind_ends_heads(void **state)
{
    arena a;
    arena_mark m;
    char *before, *after, *next;
    int count;
    (void)state;

    record_errors();
    init_tb(&a, 0);
    open_lists(&a);
    before = (char *)arena_alloc_reuse(&a, 600);
    assert_non_null(before);
    m = arena_save(&a);
    after = (char *)arena_alloc_reuse(&a, 600);
    assert_non_null(after);
    arena_rewind(&a, m);
    next = arena_strdup(&a, "packed after the rewind");
    assert_non_null(next);
    count = recorded_errors.count;
    arena_free(&a, after, 600);
    assert_true(test_misuse_reported(count, ARENA_ERR_LATE_FREE));
    arena_free(&a, before, 600);
    for (size_t i = 0; i < 8; i++) {
        char *x = (char *)arena_alloc_reuse(&a, 600);
        assert_non_null(x);
        memset(x, 0x77, 600);
    }
    assert_string_equal(next, "packed after the rewind");
    assert_int_equal(recorded_errors.count, recorded_errors.expected);
    restore_errors();
    release_tb(&a);
}

/* ---- Memory follows what is live ------------------------------------------------- */

/* Lua's allocator, churning: a ring of live blocks of varied sizes, each
 * replaced, grown or shrunk in turn.  Without reuse the arena would hold
 * everything ever allocated (hundreds of MiB); with it, what it holds stops
 * growing once the ring is warm. */
static void lua_hook_churn_is_flat(void **state)
{
    enum { RING = 64, WARM = 40000, OPS = 40000 };
    static struct {
        char *p;
        size_t n;
        uint64_t id;
    } ring[RING];
    arena a;
    size_t i, warm_retained = 0, warm_calls = 0, most_live = 0, live = 0, total = 0;
    uint64_t id = 1;
    (void)state;

    init_tb(&a, 65536);
    memset(ring, 0, sizeof ring);
    for (i = 0; i < WARM + OPS; i++) {
        size_t k = draw(RING), n = 16 + draw(3000);
        char *p;
        if (draw(50) == 0)
            n = 20000 + draw(20000);
        if (i == WARM) {
            warm_retained = arena_retained(&a);
            warm_calls = tb.calls;
        }
        if (ring[k].p && draw(3) == 0) { /* grow or shrink, keeping the bytes */
            size_t keep = ring[k].n < n ? ring[k].n : n;
            p = (char *)arena_hook_lua(&a, ring[k].p, ring[k].n, n);
            assert_non_null(p);
            assert_true(has_pattern(p, keep, ring[k].id));
        } else {
            if (ring[k].p) {
                assert_true(has_pattern(ring[k].p, ring[k].n, ring[k].id));
                assert_null(arena_hook_lua(&a, ring[k].p, ring[k].n, 0));
                live -= ring[k].n;
            } else {
                live -= 0;
            }
            p = (char *)arena_hook_lua(&a, NULL, 4, n);
            assert_non_null(p);
            ring[k].n = 0;
        }
        assert_true(is_aligned(p, ARENA_ALIGN));
        live += n - ring[k].n;
        total += n;
        ring[k].p = p;
        ring[k].n = n;
        ring[k].id = id++;
        fill_pattern(p, n, ring[k].id);
        if (live > most_live)
            most_live = live;
        assert_int_equal(arena_size(&a), live);
    }
    /* Flat: the warm arena needed hardly more chunks (a class's largest
     * count of live values may still rise, rarely), and holds a few times
     * what is live at most, where without reuse it would hold everything
     * ever allocated (about 150 MiB here). */
    print_message("lua churn: %zu ops, %zu bytes allocated, at most %zu live, %zu retained "
                  "(%zu when warm), %zu backing calls after warm-up\n",
                  (size_t)(WARM + OPS), total, most_live, arena_retained(&a), warm_retained,
                  tb.calls - warm_calls);
    if (!test_packed()) {
        /* Instrumented builds keep exact sizes (a guard follows each
         * block's last byte), so their reuse is first fit and fragments:
         * still a small part of what the batch allocated. */
        assert_true(arena_retained(&a) <= total / 4);
    } else {
        assert_true(arena_retained(&a) <= warm_retained + 2 * 65536);
        assert_true(arena_retained(&a) <= 6 * most_live);
    }
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* The arena_cur_* family under a print loop: a buffer grown by doubling
 * (each growth a move, a small block being stored between), then freed with
 * the strings made alongside it, round after round.  The rounds after the
 * first take the blocks the earlier ones gave back. */
static void cur_family_print_loop_is_flat(void **state)
{
    arena a;
    size_t round, after_warmup = 0, calls = 0;
    (void)state;

    init_tb(&a, 65536);
    arena_set_current(&a);
    for (round = 0; round < 300; round++) {
        char *buf = (char *)arena_cur_malloc(64), *strs[32];
        size_t n, k = 0;
        if (round == 5) {
            after_warmup = arena_retained(&a);
            calls = tb.calls;
        }
        assert_non_null(buf);
        memset(buf, 'a', 64);
        for (n = 64; n < 256 * 1024; n *= 2) {
            buf = (char *)arena_cur_realloc(buf, 2 * n);
            assert_non_null(buf);
            assert_int_equal(buf[n - 1], 'a');
            memset(buf, 'a', 2 * n);
            strs[k] = arena_cur_strdup("a key of a document");
            assert_non_null(strs[k]);
            k++;
        }
        while (k > 0)
            arena_cur_free(strs[--k]);
        arena_cur_free(buf);
        assert_int_equal(arena_size(&a), 0);
    }
    assert_int_equal(arena_retained(&a), after_warmup);
    assert_int_equal(tb.calls, calls);
    assert_true(arena_check(&a));
    arena_set_current(NULL);
    release_tb(&a);
}

/* A large freed block is split for smaller values once the current chunk
 * is full, instead of a new chunk: none is stranded. */
static void large_block_serves_small_values(void **state)
{
    arena a;
    char *big, *p;
    size_t i, inside = 0, retained;
    (void)state;

    init_tb(&a, 9000);
    big = (char *)arena_alloc(&a, 8192);
    assert_non_null(big);
    assert_non_null(arena_alloc(&a, 16));
    arena_free(&a, big, 8192);
    retained = arena_retained(&a);
    for (i = 0; i < 16; i++) {
        p = (char *)arena_alloc_reuse(&a, 200);
        assert_non_null(p);
        inside += p >= big && p + 200 <= big + 8192;
        memset(p, (int)i, 200);
    }
    assert_true(inside >= 12);
    assert_int_equal(arena_retained(&a), retained); /* no new chunk */
    assert_int_equal(arena_size(&a), 16 + 16 * 200);
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* A small class whose pages are full, while the lists hold a free block of
 * whole pages (a large value given back), carves a page from that block:
 * its next values lie a block apart with no head between them, in the
 * memory given back, and the arena takes no new memory.  (Placed after
 * heads instead, such a class never took another page while the lists held
 * a block, and a Lua state's values went through the heads' slow paths for
 * good.) */
static void full_class_carves_memory_given_back(void **state)
{
    enum { N = 300, NEXT = 400, BIG = 8 * 4096 };
    static char *v[N + NEXT];
    arena a;
    char *big;
    size_t i, retained, inside = 0, apart = 0;
    (void)state;

    init_tb(&a, 65536);
    open_lists(&a);
    /* Past the values a class takes before its pages; N fill them. */
    for (i = 0; i < N; i++) {
        v[i] = (char *)arena_alloc_reuse(&a, 64);
        assert_non_null(v[i]);
        memset(v[i], 1, 64);
    }
    big = (char *)arena_alloc_reuse(&a, BIG);
    assert_non_null(big);
    assert_non_null(arena_alloc(&a, 16)); /* keeps the block from the position */
    arena_free(&a, big, BIG);
    retained = arena_retained(&a);
    for (i = N; i < N + NEXT; i++) {
        v[i] = (char *)arena_alloc_reuse(&a, 64);
        assert_non_null(v[i]);
        memset(v[i], 2, 64);
        inside += v[i] >= big && v[i] + 64 <= big + BIG;
        apart += v[i] == v[i - 1] + 64;
    }
    assert_true(inside >= NEXT / 2);
    /* Pages: headerless blocks, carved from the block given back, and no
     * new memory.  (An instrumented build's values carry a header and a
     * guard each, and the block holds fewer of them: s390x's checked build
     * took a chunk for the rest.) */
    if (test_packed() && ARENA_ALIGN <= 16) {
        assert_int_equal(arena_retained(&a), retained);
        assert_true(apart >= NEXT - 10);
    }
    for (i = 0; i < N + NEXT; i++)
        arena_free(&a, v[i], 64);
    assert_int_equal(arena_size(&a), 16 + 16);
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* An oversized value (a chunk of its own) freed serves the next one of its
 * size: a buffer that grows past the chunk size every round soon takes no new
 * chunk.  (A small value carves the smallest large block once the current
 * chunk is full, and each growth then takes the next larger one: the
 * rounds after that find every size where it was.) */
static void oversized_blocks_are_reused(void **state)
{
    arena a;
    size_t round, retained = 0, calls = 0;
    (void)state;

    init_tb(&a, 4096);
    for (round = 0; round < 50; round++) {
        char *p = (char *)arena_alloc_reuse(&a, 100);
        void *sep[16];
        size_t n, k;
        if (round == 10) {
            retained = arena_retained(&a);
            calls = tb.calls;
        }
        assert_non_null(p);
        for (n = 100, k = 0; n < 100000; n *= 2, k++) {
            p = (char *)arena_realloc(&a, p, n, 2 * n);
            assert_non_null(p);
            sep[k] = arena_alloc_reuse(&a, 16); /* so that the next growth moves */
            assert_non_null(sep[k]);
        }
        arena_free(&a, p, n);
        while (k > 0)
            arena_free(&a, sep[--k], 16);
    }
    if (test_packed()) {
        assert_int_equal(arena_retained(&a), retained);
        assert_int_equal(tb.calls, calls);
    } else { /* exact sizes, first fit (see lua_hook_churn_is_flat) */
        assert_true(arena_retained(&a) <= 2 * retained);
    }
    release_tb(&a);
}

/* A value that grows by appends (a string built in a loop, a buffer grown a
 * little at a time), its older copies freed a few steps later (a
 * collector's delay): each size is asked for once, so the blocks it leaves
 * behind fit no later request of their own class.  Adjacent free blocks are
 * merged before the arena takes a new chunk, and the grown value is placed
 * in them: what the arena holds follows what is live, not the sum of every
 * size the value went through. */
static void growing_value_reuses_what_it_left(void **state)
{
    enum { KEEP = 8, STEPS = 4000, TOP = 2000 };
    static struct {
        char *p;
        size_t n;
    } ring[KEEP];
    arena a;
    size_t i, n = 0, live = 0, most_live = 0, total = 0;
    (void)state;

    init_tb(&a, 16384);
    memset(ring, 0, sizeof ring);
    for (i = 0; i < STEPS; i++) {
        size_t k = i % KEEP;
        char *p;
        /* 13 bytes more each step up to TOP, then TOP plus the digits of i */
        n = n + 13 < TOP ? n + 13 : TOP + 25 + (i % 7);
        if (ring[k].p) {
            assert_true(has_pattern(ring[k].p, ring[k].n, ring[k].n));
            assert_null(arena_hook_lua(&a, ring[k].p, ring[k].n, 0));
            live -= ring[k].n;
        }
        p = (char *)arena_hook_lua(&a, NULL, 4, n);
        assert_non_null(p);
        fill_pattern(p, n, n);
        ring[k].p = p;
        ring[k].n = n;
        live += n;
        total += n;
        if (live > most_live)
            most_live = live;
        assert_int_equal(arena_size(&a), live);
    }
    print_message("growing value: %zu bytes allocated, at most %zu live, %zu retained\n", total,
                  most_live, arena_retained(&a));
    if (test_packed() || ARENA_CHECKED) {
        assert_true(arena_retained(&a) <= 4 * most_live + 2 * 16384);
    } else {
        /* ASan and memcheck without the checked build: a value's guard
         * ends 8 bytes short of the next value's alignment, and 8 bytes
         * may be the guard of a value shrunk to nothing, so no two blocks
         * merge (reuse is first fit there, as lua_hook_churn_is_flat says). */
        assert_true(arena_retained(&a) <= total / 16);
    }
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* A backing whose chunks lie side by side: blocks of 4 KiB and more are cut
 * one after the other from one region, from its start up, or from its end
 * down while `side_down` is set (the arena's bookkeeping, smaller, comes
 * from malloc), so the last byte of one chunk is followed by the first of
 * the next. */
static struct {
    _Alignas(64) char region[1 << 20];
    size_t used;
    char *bases[64];
    size_t sizes[64];
    size_t nbases;
} side;
static bool side_down;

static void *side_alloc(void *ctx, size_t size)
{
    size_t step = (size + 63) & ~(size_t)63;
    char *p;
    (void)ctx;
    if (size < 4096)
        return malloc(size);
    if (step > sizeof side.region - side.used || side.nbases == 64)
        return NULL;
    p = side_down ? side.region + sizeof side.region - side.used - step : side.region + side.used;
    side.used += step;
    side.sizes[side.nbases] = size;
    side.bases[side.nbases++] = p;
    return p;
}

static void side_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    if (size < 4096)
        free(ptr);
}

/* Where `p` lies: which chunk, in the order the backing gave them, and at
 * what offset in it (SIZE_MAX: in none). */
static size_t side_place(const void *p)
{
    size_t i;
    for (i = 0; i < side.nbases; i++)
        if ((uintptr_t)p - (uintptr_t)side.bases[i] < side.sizes[i])
            return i << 16 | ((uintptr_t)p - (uintptr_t)side.bases[i]);
    return SIZE_MAX;
}

/* A growing value (which merges), run twice: with the backing's chunks in
 * rising and in falling addresses, every value lands in the same chunk at
 * the same offset, and the backing sees the same calls: what the lists
 * hand out after a merge follows the batch, not the addresses. */
static void merge_is_repeatable(void **state)
{
    enum { KEEP = 8, STEPS = 3000 };
    static size_t where[2][STEPS];
    static struct {
        char *p;
        size_t n;
    } ring[KEEP];
    size_t run, i, n, calls[2];
    (void)state;
    for (run = 0; run < 2; run++) {
        arena_allocator al = {side_alloc, side_free, NULL};
        arena a;
        memset(&side, 0, sizeof side);
        memset(ring, 0, sizeof ring);
        side_down = run == 1;
        arena_init_with(&a, 16384, &al);
        for (i = 0, n = 0; i < STEPS; i++) {
            size_t k = i % KEEP;
            n = i < 100 ? 16 + 16 * i : 16 + 16 * ((i * 7919) % 120);
            if (ring[k].p)
                assert_null(arena_hook_lua(&a, ring[k].p, ring[k].n, 0));
            ring[k].p = (char *)arena_hook_lua(&a, NULL, 0, n);
            assert_non_null(ring[k].p);
            ring[k].n = n;
            where[run][i] = side_place(ring[k].p);
        }
        calls[run] = side.nbases;
        assert_true(arena_check(&a));
        arena_release(&a);
    }
    assert_int_equal(calls[0], calls[1]);
    for (i = 0; i < STEPS; i++)
        assert_int_equal(where[0][i], where[1][i]);
}

/* Blocks merge within a chunk, never across the end of one into the next,
 * however close the backing put them. */
static void merge_stays_in_its_chunk(void **state)
{
    arena_allocator al = {side_alloc, side_free, NULL};
    arena a;
    char *v[200], *p;
    size_t n = 0, i, k;
    (void)state;

    memset(&side, 0, sizeof side);
    side_down = false;
    arena_init_with(&a, 4096, &al);
    /* Two chunks full of 64-byte values, and a third begun. */
    while (side.nbases < 3) {
        assert_true(n < 200);
        v[n] = (char *)arena_hook_lua(&a, NULL, 0, 64);
        assert_non_null(v[n]);
        n++;
    }
    /* All but the last value given back: more than MERGE_MIN blocks. */
    for (i = 0; i + 1 < n; i++)
        assert_null(arena_hook_lua(&a, v[i], 64, 0));
    /* A value larger than a chunk's blocks together, once the third chunk
     * cannot hold it: it must not lie across the end of a chunk. */
    for (k = 0; k < 3; k++) {
        p = (char *)arena_alloc_reuse(&a, 3 * 4096 / 2);
        assert_non_null(p);
        for (i = 1; i < side.nbases; i++)
            assert_false((uintptr_t)p < (uintptr_t)side.bases[i] &&
                         (uintptr_t)p + 3 * 4096 / 2 > (uintptr_t)side.bases[i]);
    }
    assert_true(arena_check(&a));
    arena_release(&a);
}

/* A value shrunk to nothing keeps its place (in an instrumented build, its
 * header and guard: 40 bytes in the checked build, fewer than any block);
 * the blocks on either side of it do not merge over it. */
static void merge_keeps_values_between_blocks(void **state)
{
    arena a;
    char *v[40], *z[40];
    size_t i;
    (void)state;
    init_tb(&a, 4096);
    for (i = 0; i < 40; i++) {
        assert_non_null(v[i] = (char *)arena_alloc(&a, 64));
        /* at alignment 8, right after v[i]'s guard where it ends mid-16 */
        assert_non_null(z[i] = (char *)arena_alloc_aligned(&a, 64, 8));
    }
    assert_non_null(arena_alloc(&a, 8)); /* none of them is the most recent */
    for (i = 0; i < 40; i++) {
        arena_free(&a, v[i], 64);
        assert_ptr_equal(arena_realloc(&a, z[i], 64, 0), z[i]);
    }
    /* Larger than a chunk: the blocks are merged first. */
    assert_non_null(arena_alloc_reuse(&a, 5000));
    assert_true(arena_check(&a));
    for (i = 0; i < 40; i++) /* each still a value: grown, it moves */
        assert_non_null(arena_realloc(&a, z[i], 0, 16));
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* Blocks on either side of a live mark's position: a rewind to the mark
 * forgets what was placed after it, and in an instrumented build it checks
 * (and closes) from the mark's position on, where a value must begin, not
 * lie across.  The merge leaves them apart while a mark is live there. */
static void merge_keeps_a_mark_between_blocks(void **state)
{
    arena a;
    char *v[12], *w[12], *x[16], *p;
    arena_mark m;
    size_t i;
    (void)state;
    init_tb(&a, 16384);
    record_errors();
    for (i = 0; i < 12; i++)
        assert_non_null(v[i] = (char *)arena_alloc(&a, 512));
    m = arena_save(&a);
    for (i = 0; i < 12; i++)
        assert_non_null(w[i] = (char *)arena_alloc(&a, 512));
    for (i = 0; i < 16; i++)
        assert_non_null(x[i] = (char *)arena_alloc(&a, 16));
    assert_non_null(arena_alloc(&a, 8)); /* none of them is the most recent */
    for (i = 0; i < 12; i++) {
        arena_free(&a, v[i], 512);
        arena_free(&a, w[i], 512);
    }
    for (i = 0; i < 16; i++)
        arena_free(&a, x[i], 16);
    /* Larger than a chunk: the blocks may merge first. */
    assert_non_null(arena_alloc_reuse(&a, 20000));
    arena_rewind(&a, m);
    assert_int_equal(recorded_errors.count, 0);
    assert_true(arena_check(&a));
    /* Values where those after the mark were, up to the chunk's end: the
     * blocks before the mark (forgotten by the rewind, not erased) must not
     * claim their bytes. */
    for (i = 0; i < 17; i++) {
        assert_non_null(p = (char *)arena_alloc(&a, 512));
        memset(p, 0x11, 512);
    }
    assert_true(arena_check(&a));
    assert_int_equal(recorded_errors.count, 0);
    release_tb(&a);
}

/* A plain build cannot see a block given back twice through the Lua hook
 * (it keeps no header), and its list then loops: the merge reports the list
 * (ARENA_ERR_CORRUPT), leaves its blocks unused, and the arena goes on. */
static void merge_reports_a_looping_list(void **state)
{
    arena a;
    char *v[40], *p;
    size_t i;
    (void)state;
    if (!test_packed())
        return; /* instrumented builds report the second free itself (double_free_reported) */
    init_tb(&a, 4096);
    record_errors();
    for (i = 0; i < 40; i++)
        assert_non_null(v[i] = (char *)arena_hook_lua(&a, NULL, 0, 64));
    assert_non_null(arena_alloc(&a, 8)); /* none of them is the most recent */
    for (i = 0; i < 40; i++)
        assert_null(arena_hook_lua(&a, v[i], 64, 0));
    assert_null(arena_hook_lua(&a, v[7], 64, 0)); /* the second time */
    assert_int_equal(recorded_errors.count, 0);
    p = (char *)arena_alloc_reuse(&a, 3000); /* too large for the chunk's room: a merge */
    assert_non_null(p);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_CORRUPT);
    memset(p, 1, 3000);
    arena_reset(&a);
    assert_non_null(arena_hook_lua(&a, NULL, 0, 64));
    release_tb(&a);
}

/* ---- Forgetting --------------------------------------------------------------------- */

static void reset_forgets_free_blocks(void **state)
{
    arena a;
    char *x, *y, *w;
    (void)state;

    init_tb(&a, 4096);
    x = (char *)arena_alloc(&a, 64);
    y = (char *)arena_alloc(&a, 64);
    assert_non_null(arena_alloc(&a, 16));
    arena_free(&a, y, 64);
    arena_reset(&a);
    /* the batch starts over at the chunk's start, y's block forgotten */
    w = (char *)arena_alloc_reuse(&a, 64);
    assert_ptr_equal(w, x);
    w = (char *)arena_alloc_reuse(&a, 64);
    assert_ptr_equal(w, y);
    assert_int_equal(arena_size(&a), 128);
    release_tb(&a);
}

/* A rewind forgets the free blocks, and a value placed in one after the mark
 * expires with everything else stored since. */
static void rewind_forgets_and_expires(void **state)
{
    arena a;
    arena_mark m;
    char *x, *z, *w;
    size_t size;
    (void)state;

    init_tb(&a, 4096);
    x = (char *)arena_alloc(&a, 100);
    assert_non_null(arena_alloc(&a, 100));
    arena_free(&a, x, 100);
    m = arena_save(&a);
    size = arena_size(&a);
    z = (char *)arena_alloc_reuse(&a, 100);
    assert_ptr_equal(z, x); /* placed below the mark's position */
    memset(z, 7, 100);
    assert_int_equal(arena_size(&a), size + 100);
    arena_rewind(&a, m);
    assert_int_equal(arena_size(&a), size);
    assert_true(closed(z)); /* expired with the rest of the scope */
    w = (char *)arena_alloc_reuse(&a, 100);
    assert_ptr_not_equal(w, x); /* the lists were forgotten */
    assert_true(arena_check(&a));
    /* the same through a scope, nested */
    {
        arena_scope outer = arena_scope_begin(&a), inner;
        char *v = (char *)arena_alloc(&a, 48);
        assert_non_null(arena_alloc(&a, 16));
        arena_free(&a, v, 48);
        inner = arena_scope_begin(&a);
        assert_ptr_equal(arena_alloc_reuse(&a, 48), v);
        arena_scope_end(&inner);
        assert_true(closed(v));
        arena_scope_end(&outer);
    }
    assert_int_equal(arena_size(&a), size + 100);
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* ---- Tools and misuse ---------------------------------------------------------------- */

static void freed_blocks_are_closed(void **state)
{
    arena a;
    char *x, *y;
    (void)state;

    init_tb(&a, 4096);
    x = (char *)arena_alloc(&a, 64);
    assert_non_null(arena_alloc(&a, 16));
    arena_free(&a, x, 64);
    assert_true(closed(x));
    assert_true(closed(x + 63));
    y = (char *)arena_alloc_reuse(&a, 64);
    assert_ptr_equal(y, x);
    memset(y, 1, 64); /* open again: no report */
    assert_true(closed(y + 64) || test_packed());
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* A write into a free block: the plain build reads it back as a broken node
 * when the lists next reach it, the checked build as bytes that are no longer
 * clobbered (at the next check, or when the block is reused).  ASan and
 * Valgrind report the write itself instead, so this runs without them. */
static void write_after_free(void **state)
{
    arena a;
    char *x;
    (void)state;
    if (TEST_ASAN || test_on_valgrind())
        return;

    init_tb(&a, 4096);
    x = (char *)arena_alloc(&a, 64);
    assert_non_null(arena_alloc(&a, 16));
    arena_free(&a, x, 64);
    record_errors();
    memset(x, 0x55, 64);
    if (ARENA_CHECKED) {
        assert_false(arena_check(&a));
        assert_int_equal(recorded_errors.last, ARENA_ERR_CORRUPT);
    }
    x = (char *)arena_alloc_reuse(&a, 64);
    assert_true(recorded_errors.count >= 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_CORRUPT);
    restore_errors();
    arena_reset(&a);
    release_tb(&a);
}

/* The same through Lua's hook, whose plain build takes a block of its own
 * class from the list's head inline: a head whose length or link was
 * overwritten is reported (by the general path, which reads it next) and
 * never handed out.  Overwritten whole, and its link alone (the checked
 * build keeps its nodes in headers and finds the write by its walks). */
static void lua_hook_write_after_free(void **state)
{
    int link_only;
    (void)state;
    if (TEST_ASAN || test_on_valgrind())
        return;
    for (link_only = 0; link_only <= 1; link_only++) {
        arena a;
        char *x[4], *y;
        int i;
        init_tb(&a, 4096);
        for (i = 0; i < 4; i++)
            assert_non_null(x[i] = (char *)arena_hook_lua(&a, NULL, 0, 64));
        arena_hook_lua(&a, x[0], 64, 0); /* makes the lists */
        arena_hook_lua(&a, x[1], 64, 0); /* the head of its class */
        record_errors();
        /* The value's first word is a free block's node or canary in every
         * layout (a page's block, a block after a head, a bare one). */
        if (link_only)
            memset(x[1], 0x55, sizeof(uintptr_t));
        else
            memset(x[1], 0x55, 64);
        if (ARENA_CHECKED) { /* its node is the header before the value: its walks see the write */
            assert_false(arena_check(&a));
        } else {
            y = (char *)arena_hook_lua(&a, NULL, 0, 64);
            assert_non_null(y);
            assert_ptr_not_equal(y, x[1]);
        }
        assert_true(recorded_errors.count >= 1);
        assert_int_equal(recorded_errors.last, ARENA_ERR_CORRUPT);
        arena_reset(&a); /* which the checked build verifies: reported again */
        restore_errors();
        release_tb(&a);
    }
}

/* A second free through each path that can tell: the arena_cur_* family in
 * every build (its header), arena_free() and Lua's hook where the build
 * keeps track (ASan, Valgrind, the checked build). */
static void double_free_reported(void **state)
{
    arena a;
    char *p, *q;
    size_t size;
    bool tracked = TEST_ASAN || ARENA_CHECKED || test_on_valgrind();
    (void)state;

    init_tb(&a, 4096);
    record_errors();
    if (!test_on_valgrind()) { /* memcheck reports the read of the freed header itself */
        arena_set_current(&a);
        p = (char *)arena_cur_malloc(40);
        assert_non_null(arena_cur_malloc(8));
        arena_cur_free(p);
        size = arena_size(&a);
        arena_cur_free(p);
        assert_int_equal(recorded_errors.count, 1);
        assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
        assert_int_equal(arena_size(&a), size);
        assert_null(arena_cur_realloc(p, 100));
        assert_int_equal(recorded_errors.count, 2);
        assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
        arena_set_current(NULL);
    }
    if (tracked) {
        size_t before = recorded_errors.count;
        q = (char *)arena_alloc(&a, 100);
        assert_non_null(arena_alloc(&a, 8));
        arena_free(&a, q, 100);
        size = arena_size(&a);
        arena_free(&a, q, 100);
        assert_int_equal(recorded_errors.count, before + 1);
        assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
        q = (char *)arena_hook_lua(&a, NULL, 0, 72);
        assert_non_null(arena_alloc(&a, 8));
        assert_null(arena_hook_lua(&a, q, 72, 0));
        assert_null(arena_hook_lua(&a, q, 72, 0));
        assert_int_equal(recorded_errors.count, before + 2);
        assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
        assert_int_equal(arena_size(&a), size + 8);
        /* a pointer into no chunk of the arena */
        arena_free(&a, &size, sizeof size);
        assert_int_equal(recorded_errors.count, before + 3);
        assert_int_equal(recorded_errors.last, ARENA_ERR_FOREIGN_POINTER);
    }
    restore_errors();
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* ---- Failure and limits -------------------------------------------------------------- */

/* The lists' table is the one allocation reuse makes; when the backing
 * refuses it, freed blocks wait for the reset, and nothing else changes. */
static void table_refused(void **state)
{
    arena a;
    char *x, *y, *w;
    size_t calls;
    (void)state;

    init_tb(&a, 4096);
    x = (char *)arena_alloc(&a, 64);
    y = (char *)arena_alloc(&a, 64);
    assert_non_null(x);
    assert_non_null(y);
    fill_pattern(y, 64, 3);
    calls = tb.calls;
    tb.fail_at = calls + 1;
    arena_free(&a, x, 64);
    assert_int_equal(tb.calls, calls + 1); /* asked, refused */
    assert_int_equal(arena_size(&a), 64);
    w = (char *)arena_alloc_reuse(&a, 64);
    assert_non_null(w);
    assert_ptr_not_equal(w, x);
    assert_true(has_pattern(y, 64, 3));
    tb.fail_at = 0;
    arena_free(&a, w, 64); /* the most recent: back to the position */
    arena_free(&a, y, 64); /* now the table is made */
    assert_ptr_equal(arena_alloc_reuse(&a, 64), y);
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* A caller's buffer without backing never allocates: it keeps no lists and
 * reuses only its most recent value. */
static void fixed_buffer_reuses_the_last_only(void **state)
{
    static char buf[1024];
    arena a;
    char *x, *y;
    (void)state;

    arena_init_buffer(&a, buf, sizeof buf, NULL);
    x = (char *)arena_alloc(&a, 64);
    y = (char *)arena_alloc(&a, 64);
    assert_non_null(x);
    assert_non_null(y);
    arena_free(&a, x, 64);
    assert_int_equal(arena_size(&a), 64);
    assert_ptr_not_equal(arena_alloc_reuse(&a, 64), x);
    arena_free(&a, y, 64);
    assert_true(arena_check(&a));
    arena_release(&a);
}

static void sizes_near_size_max(void **state)
{
    arena a;
    char *x;
    (void)state;

    init_tb(&a, 4096);
    x = (char *)arena_alloc(&a, 4000);
    assert_non_null(arena_alloc(&a, 8));
    arena_free(&a, x, 4000);
    assert_null(arena_alloc_reuse(&a, opaque_size(SIZE_MAX)));
    assert_null(arena_alloc_reuse(&a, opaque_size(SIZE_MAX / 2)));
    assert_null(arena_alloc_reuse(&a, opaque_size(SIZE_MAX - ARENA_ALIGN)));
    assert_null(arena_hook_lua(&a, NULL, 0, SIZE_MAX));
    assert_null(arena_hook_lua(&a, NULL, 0, SIZE_MAX - 3));
    assert_non_null(arena_alloc_reuse(&a, 0));
    assert_int_equal(arena_size(&a), 8);
    assert_ptr_equal(arena_alloc_reuse(&a, 4000), x); /* still filed */
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* A backed arena that holds nothing but its caller's buffer once made a
 * reuse table (a value freed that was not the most recent); after a reset,
 * which forgets the lists but keeps the table, the release (inline in a plain
 * build: the buffer alone, the window open) must still give the table back. */
static void buffer_arena_release_frees_the_table(void **state)
{
    static _Alignas(16) unsigned char buf[4096];
    arena_allocator al = tb_allocator(&tb);
    arena a;
    void *v1, *v2;
    (void)state;
    arena_init_buffer(&a, buf, sizeof buf, &al);
    v1 = arena_alloc_reuse(&a, 64);
    v2 = arena_alloc_reuse(&a, 64);
    assert_non_null(v1);
    assert_non_null(v2);
    arena_free(&a, v1, 64);
    assert_int_equal(tb.live, 1); /* the table */
    arena_reset(&a);
    assert_int_equal(tb.live, 1);
    assert_non_null(arena_alloc(&a, 32));
    arena_release(&a);
    assert_int_equal(tb.live, 0);
    assert_int_equal(tb.live_bytes, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buffer_arena_release_frees_the_table),
        cmocka_unit_test(hook_realloc_grows_what_hook_alloc_stored),
        cmocka_unit_test(lua_free_gives_back_the_value_only),
        cmocka_unit_test(free_keeps_a_packed_neighbour),
        cmocka_unit_test(hook_realloc_grows_any_value),
        cmocka_unit_test(alloc_reuse_takes_a_larger_block),
        cmocka_unit_test(freeing_the_most_recent_keeps_memory_flat),
        cmocka_unit_test(late_free_after_reset_reported),
        cmocka_unit_test(known_blocks_report_misuse),
        cmocka_unit_test(rewind_ends_heads),
        cmocka_unit_test(lua_hook_churn_is_flat),
        cmocka_unit_test(cur_family_print_loop_is_flat),
        cmocka_unit_test(growing_value_reuses_what_it_left),
        cmocka_unit_test(merge_stays_in_its_chunk),
        cmocka_unit_test(merge_is_repeatable),
        cmocka_unit_test(merge_keeps_values_between_blocks),
        cmocka_unit_test(merge_keeps_a_mark_between_blocks),
        cmocka_unit_test(merge_reports_a_looping_list),
        cmocka_unit_test(large_block_serves_small_values),
        cmocka_unit_test(full_class_carves_memory_given_back),
        cmocka_unit_test(oversized_blocks_are_reused),
        cmocka_unit_test(reset_forgets_free_blocks),
        cmocka_unit_test(rewind_forgets_and_expires),
        cmocka_unit_test(freed_blocks_are_closed),
        cmocka_unit_test(write_after_free),
        cmocka_unit_test(lua_hook_write_after_free),
        cmocka_unit_test(double_free_reported),
        cmocka_unit_test(table_refused),
        cmocka_unit_test(fixed_buffer_reuses_the_last_only),
        cmocka_unit_test(sizes_near_size_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
