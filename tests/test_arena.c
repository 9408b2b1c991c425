/* SPDX-License-Identifier: MIT */
/*
 * The arena: every behaviour arena.h promises for the arena, storing values,
 * rewinding, the counters and errors, one test (or more) each.
 * Refs, the caller's buffer, failure injection, the randomized model and the
 * default handler's abort have files of their own.
 *
 * Tests assert what the contract promises: counters, alignment, contents, the
 * calls made to the backing allocator, and the same address after a rewind.
 * Exact packing is asserted only where arena.h promises it and only in builds
 * without guard bytes (TEST_PACKED).
 */
#include "support.h"
/* White-box: the corruption tests write the private bookkeeping. */
#include "cold.h"

#include <stdalign.h>
#include <stdio.h>

static test_backing tb;

/* An arena with `chunk_size`-byte uniform chunks from the recording backing. */
static void init_tb(arena *a, size_t chunk_size)
{
    arena_allocator al = tb_allocator(&tb);
    arena_init_with(a, chunk_size, &al);
}

/* Releases and checks that everything went back to the backing. */
static void release_tb(arena *a)
{
    arena_release(a);
    assert_int_equal(arena_retained(a), 0);
    assert_int_equal(arena_size(a), 0);
    assert_int_equal(tb.live, 0);
    assert_int_equal(tb.live_bytes, 0);
    assert_true(arena_check(a));
}

/* ---- Chunks and the chunk size --------------------------------------------------------- */

static void test_zero_value_arena(void **state)
{
    arena a = {0};
    char *p, *q;
    (void)state;

    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(arena_retained(&a), 0);
    assert_true(arena_check(&a));
    p = (char *)arena_alloc(&a, 10);
    assert_non_null(p);
    memset(p, 1, 10);
    assert_int_equal(arena_size(&a), 10);
    assert_int_equal(arena_retained(&a), ARENA_DEFAULT_CHUNK);
    assert_true(arena_check(&a));
    arena_release(&a);
    assert_int_equal(arena_retained(&a), 0);
    assert_int_equal(arena_size(&a), 0);

    /* Reusable after release, with the same (default) chunk size. */
    q = (char *)arena_alloc(&a, 20);
    assert_non_null(q);
    memset(q, 2, 20);
    assert_int_equal(arena_retained(&a), ARENA_DEFAULT_CHUNK);
    assert_int_equal(arena_size(&a), 20);
    arena_release(&a);
    arena_release(&a); /* twice is fine */
    assert_int_equal(arena_retained(&a), 0);
}

static void test_chunk_size_is_exact_capacity(void **state)
{
    arena a;
    (void)state;

    arena_init(&a, 1000);
    assert_int_equal(arena_retained(&a), 0); /* init allocates nothing */
    assert_non_null(arena_alloc(&a, 1));
    assert_int_equal(arena_retained(&a), 1000);
    assert_true(arena_check(&a));
    arena_release(&a);

    arena_init(&a, 0);
    assert_non_null(arena_alloc(&a, 1));
    assert_int_equal(arena_retained(&a), ARENA_DEFAULT_CHUNK);
    arena_release(&a);

    /* Odd chunk sizes are honoured too: capacity, not a rounded size. */
    arena_init(&a, 37);
    assert_non_null(arena_alloc_aligned(&a, 3, 1));
    assert_int_equal(arena_retained(&a), 37);
    arena_release(&a);

    init_tb(&a, 1000);
    assert_non_null(arena_alloc(&a, 1));
    assert_int_equal(arena_retained(&a), 1000);
    assert_true(tb.live_bytes >= 1000);
    release_tb(&a);
}

/* Chunk sizes below ARENA_ALIGN still work: every value fits a chunk, and the
 * capacity is counted exactly.  A reset keeps every chunk, so the same batch
 * again needs none. */
static void test_tiny_chunk_sizes(void **state)
{
    static const size_t chunk_sizes[] = {1, 2, 7, 15, 16, 17, 31};
    size_t bi;
    (void)state;

    for (bi = 0; bi < sizeof chunk_sizes / sizeof chunk_sizes[0]; bi++) {
        size_t chunk_size = chunk_sizes[bi], over = 0, size = 0, i, retained, calls;
        arena a;
        char *vals[200];
        init_tb(&a, chunk_size);
        for (i = 0; i < 200; i++) {
            size_t n = 1 + i % 20, align = (size_t)1 << (i % 5);
            vals[i] = (char *)arena_alloc_aligned(&a, n, align);
            assert_non_null(vals[i]);
            assert_true(is_aligned(vals[i], align));
            fill_pattern(vals[i], n, i);
            size += n;
            if (n + over_align(align) > chunk_size)
                over += n + over_align(align); /* own chunk, sized to it */
        }
        assert_int_equal(arena_size(&a), size);
        assert_true(arena_retained(&a) >= over);
        assert_int_equal((arena_retained(&a) - over) % chunk_size, 0);
        for (i = 0; i < 200; i++)
            assert_true(has_pattern(vals[i], 1 + i % 20, i));
        assert_true(arena_check(&a));
        retained = arena_retained(&a);
        arena_reset(&a);
        assert_int_equal(arena_retained(&a), retained);
        calls = tb.calls;
        for (i = 0; i < 200; i++) {
            size_t n = 1 + i % 20, align = (size_t)1 << (i % 5);
            vals[i] = (char *)arena_alloc_aligned(&a, n, align);
            assert_true(is_aligned(vals[i], align));
            fill_pattern(vals[i], n, i);
        }
        assert_int_equal(tb.calls, calls);
        assert_int_equal(arena_retained(&a), retained);
        assert_true(arena_check(&a));
        assert_non_null(arena_strdup(&a, ""));
        release_tb(&a);
    }
}

/* 1000 bytes of capacity hold 1000 one-byte strings, and not one more. */
static void test_chunk_size_packs_exactly(void **state)
{
    arena a;
    char *first, *p = NULL;
    int i;
    (void)state;

    if (!test_packed())
        return; /* guards take room: exact packing is promised only without */
    init_tb(&a, 1000);
    first = arena_strndup(&a, "", 0);
    assert_non_null(first);
    for (i = 1; i < 1000; i++) {
        p = arena_strndup(&a, "", 0);
        assert_ptr_equal(p, first + i);
    }
    assert_int_equal(arena_retained(&a), 1000);
    assert_int_equal(arena_size(&a), 1000);
    p = arena_strndup(&a, "", 0);
    assert_non_null(p);
    assert_int_equal(arena_retained(&a), 2000);
    assert_true(p < first || p >= first + 1000);
    release_tb(&a);

    /* arena_realloc in place up to the chunk's last byte, and not one further. */
    init_tb(&a, 1000);
    first = (char *)arena_alloc(&a, 100);
    fill_pattern(first, 100, 1);
    p = (char *)arena_realloc(&a, first, 100, 1000);
    assert_ptr_equal(p, first);
    assert_int_equal(arena_size(&a), 1000);
    assert_int_equal(arena_retained(&a), 1000);
    p = (char *)arena_realloc(&a, first, 1000, 1001);
    assert_non_null(p);
    assert_ptr_not_equal(p, first);
    assert_true(has_pattern(p, 100, 1));
    assert_int_equal(arena_size(&a), 1001);            /* the old place given back */
    assert_int_equal(arena_retained(&a), 1000 + 1001); /* oversized, exactly */
    release_tb(&a);

    /* A value of exactly the chunk size fits an empty uniform chunk: it is not
     * oversized, so a reset keeps its chunk. */
    init_tb(&a, 1000);
    assert_non_null(arena_alloc(&a, 1000));
    assert_int_equal(arena_retained(&a), 1000);
    arena_reset(&a);
    assert_int_equal(arena_retained(&a), 1000);
    release_tb(&a);
}

static void test_chunk_size_clamped_to_ref_max(void **state)
{
    arena a;
    size_t chunk_sizes[] = {(size_t)ARENA_REF_MAX + 1, SIZE_MAX / 2 + 5, SIZE_MAX};
    size_t i;
    (void)state;

    for (i = 0; i < sizeof chunk_sizes / sizeof chunk_sizes[0]; i++) {
        /* The backing refuses the chunk (it is above TB_HUGE), which shows
         * the size asked without allocating it. */
        init_tb(&a, chunk_sizes[i]);
        assert_null(arena_alloc(&a, 1));
        if (TEST_REF_MAX_CHUNK_ASKED) {
            assert_true(tb.calls >= 1);
            assert_true(tb.max_request >= ARENA_REF_MAX);
            assert_true(tb.max_request <= ARENA_REF_MAX + 4096);
        } else {
            assert_int_equal(tb.calls, 0);
        }
        assert_int_equal(arena_retained(&a), 0);
        assert_int_equal(arena_size(&a), 0);
        assert_true(arena_check(&a));
        release_tb(&a);
    }

    /* A chunk size of exactly ARENA_REF_MAX is kept. */
    init_tb(&a, ARENA_REF_MAX);
    assert_null(arena_alloc(&a, 1));
    if (TEST_REF_MAX_CHUNK_ASKED)
        assert_true(tb.max_request >= ARENA_REF_MAX && tb.max_request <= ARENA_REF_MAX + 4096);
    else
        assert_int_equal(tb.calls, 0);
    release_tb(&a);
}

/* ---- Oversized values -------------------------------------------------------------- */

static void test_oversized_own_chunk_exact(void **state)
{
    arena a;
    char *s1, *big, *s2, *big2, *s3;
    (void)state;

    init_tb(&a, 1000);
    s1 = (char *)arena_alloc(&a, 16);
    assert_non_null(s1);
    fill_pattern(s1, 16, 1);
    assert_int_equal(arena_retained(&a), 1000);

    big = (char *)arena_alloc(&a, 5001);
    assert_non_null(big);
    assert_true(is_aligned(big, ARENA_ALIGN));
    fill_pattern(big, 5001, 2);
    assert_int_equal(arena_retained(&a), 1000 + 5001); /* exactly its size */
    assert_int_equal(arena_size(&a), 16 + 5001);

    /* Small values keep filling the chunk they were filling. */
    s2 = (char *)arena_alloc(&a, 16);
    assert_non_null(s2);
    fill_pattern(s2, 16, 3);
    assert_true(s2 > s1 && s2 < s1 + 1000);
    assert_int_equal(arena_retained(&a), 1000 + 5001);

    /* A second oversized value, a string this time (alignment 1). */
    big2 = arena_strndup(&a, big, 3000);
    assert_non_null(big2);
    assert_int_equal(big2[3000], '\0');
    assert_int_equal(arena_retained(&a), 1000 + 5001 + 3001);
    s3 = (char *)arena_alloc(&a, 16);
    assert_non_null(s3);
    fill_pattern(s3, 16, 4);
    assert_true(s3 > s2 && s3 < s1 + 1000);
    assert_int_equal(arena_retained(&a), 1000 + 5001 + 3001);
    assert_int_equal(arena_size(&a), 16 + 5001 + 16 + 3001 + 16);
    assert_true(arena_check(&a));

    assert_true(has_pattern(s1, 16, 1));
    assert_true(has_pattern(big, 5001, 2));
    assert_true(has_pattern(big2, 3000, 2));
    assert_true(has_pattern(s2, 16, 3));
    assert_true(has_pattern(s3, 16, 4));

    /* A reset keeps the oversized chunks too (the batch used them): the same
     * batch again gets the same places without a backing call.  A reset
     * with a limit below them gives them back, with the sizes asked. */
    {
        size_t live = tb.live, frees = tb.frees, calls = tb.calls;
        arena_reset(&a);
        assert_int_equal(arena_retained(&a), 1000 + 5001 + 3001);
        assert_int_equal(arena_size(&a), 0);
        assert_int_equal(tb.live, live);
        assert_true(arena_check(&a));
        assert_ptr_equal(arena_alloc(&a, 16), s1);
        assert_ptr_equal(arena_alloc(&a, 5001), big);
        assert_ptr_equal(arena_alloc(&a, 16), s2);
        fill_pattern(big, 3000, 5);
        assert_ptr_equal(arena_strndup(&a, big, 3000), big2);
        assert_ptr_equal(arena_alloc(&a, 16), s3);
        assert_int_equal(tb.calls, calls);
        assert_int_equal(arena_retained(&a), 1000 + 5001 + 3001);
        arena_reset_to(&a, 1000);
        assert_int_equal(arena_retained(&a), 1000);
        assert_int_equal(tb.live, 1); /* the uniform chunk: the index went back too */
        assert_int_equal(tb.frees, frees + live - 1);
        assert_true(arena_check(&a));
    }
    release_tb(&a);
}

static void test_oversized_first_and_lone(void **state)
{
    arena a;
    void *big, *small;
    (void)state;

    /* The first value of a fresh arena is oversized: no uniform chunk. */
    init_tb(&a, 1000);
    big = arena_alloc(&a, 1001);
    assert_non_null(big);
    assert_int_equal(arena_retained(&a), 1001);
    assert_int_equal(arena_size(&a), 1001);
    small = arena_alloc(&a, 8);
    assert_non_null(small);
    assert_int_equal(arena_retained(&a), 2001);
    /* Both are kept, and the uniform chunk, not the oversized one that came
     * first, is current after the reset. */
    arena_reset(&a);
    assert_int_equal(arena_retained(&a), 2001);
    {
        size_t calls = tb.calls;
        assert_ptr_equal(arena_alloc(&a, 8), small);
        assert_ptr_equal(arena_alloc(&a, 1001), big);
        assert_int_equal(tb.calls, calls);
    }
    release_tb(&a);

    /* Only oversized values: kept, with no current chunk; each is reused by
     * a value of its size.  A reset to 0 gives them all back. */
    init_tb(&a, 1000);
    big = arena_alloc(&a, 4000);
    assert_non_null(big);
    assert_non_null(arena_calloc(&a, 2, 3000));
    assert_non_null(arena_copy(&a, tb.blocks, 1500, 8));
    assert_int_equal(arena_retained(&a), 4000 + 6000 + 1500);
    arena_reset(&a);
    assert_int_equal(arena_retained(&a), 4000 + 6000 + 1500);
    assert_true(arena_check(&a));
    {
        size_t calls = tb.calls;
        assert_ptr_equal(arena_alloc(&a, 4000), big);
        assert_non_null(arena_calloc(&a, 2, 3000));
        assert_non_null(arena_copy(&a, tb.blocks, 1500, 8));
        assert_int_equal(tb.calls, calls);
    }
    arena_reset_to(&a, 0);
    assert_int_equal(arena_retained(&a), 0);
    assert_true(tb.frees >= 3); /* bookkeeping may stay; the chunks went back */
    assert_true(arena_check(&a));
    release_tb(&a);
}

static void test_oversized_zeroed_and_aligned(void **state)
{
    arena a;
    unsigned char *z;
    char *al;
    (void)state;

    init_tb(&a, 1000);
    /* The backing hands out dirty memory: calloc must zero it all. */
    z = (unsigned char *)arena_calloc(&a, 1, 4000);
    assert_non_null(z);
    assert_true(all_zero(z, 4000));
    assert_int_equal(arena_retained(&a), 4000);

    /* Above ARENA_ALIGN the padding may cost capacity, but the value fits. */
    al = (char *)arena_alloc_aligned(&a, 3000, 4096);
    assert_non_null(al);
    assert_true(is_aligned(al, 4096));
    fill_pattern(al, 3000, 9);
    assert_true(arena_retained(&a) >= 4000 + 3000);
    assert_int_equal(arena_size(&a), 7000);
    /* An alignment that alone exceeds the chunk size. */
    al = (char *)arena_alloc_aligned(&a, 8, 8192);
    assert_non_null(al);
    assert_true(is_aligned(al, 8192));
    assert_int_equal(arena_size(&a), 7008);
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* ---- Reset ------------------------------------------------------------------------- */

#define BATCH 200

static void test_reset_keeps_uniform_chunks(void **state)
{
    arena a;
    char *vals[BATCH];
    size_t sizes[BATCH], i, retained_uniform, retained_all, calls;
    (void)state;

    init_tb(&a, 1000);
    /* A lumpy batch: small values with oversized ones among them. */
    for (i = 0; i < BATCH; i++) {
        sizes[i] = 1 + (i * 37) % 200;
        vals[i] = (char *)arena_alloc(&a, sizes[i]);
        assert_non_null(vals[i]);
        fill_pattern(vals[i], sizes[i], i);
        if (i % 50 == 7)
            assert_non_null(arena_alloc(&a, 2500 + i));
    }
    retained_all = arena_retained(&a);
    retained_uniform = retained_all - (2500 + 7) - (2500 + 57) - (2500 + 107) - (2500 + 157);
    assert_int_equal(retained_uniform % 1000, 0);
    assert_true(retained_uniform >= 2000);

    arena_reset(&a); /* keeps every chunk the batch used */
    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(arena_retained(&a), retained_all);
    assert_true(arena_check(&a));

#if !TEST_ASAN && !ARENA_CHECKED /* (the checked build clobbers expired memory) */
    /* Contents untouched: the chunks still hold the previous batch's bytes. */
    for (i = 0; i < BATCH; i++) {
        TEST_MAKE_DEFINED(vals[i], sizes[i]);
        assert_true(has_pattern(vals[i], sizes[i], i));
    }
#endif

    /* The same batch again, without the oversized values: no backing call. */
    calls = tb.calls;
    for (i = 0; i < BATCH; i++) {
        char *p = (char *)arena_alloc(&a, sizes[i]);
        assert_non_null(p);
        fill_pattern(p, sizes[i], i + 1000);
    }
    assert_int_equal(tb.calls, calls);
    assert_int_equal(arena_retained(&a), retained_all);

    /* Reset is idempotent.  Through batches without the oversized values
     * (this one and the empty ones) their chunks stay while they might
     * recur within the promise (ARENA_RECUR_BATCHES - 1 batches), and go
     * back by the reset ending the ARENA_RETAIN_BATCHES-th; the uniform
     * chunks, last used one batch later, go by one reset later, all but the
     * one every batch opens. */
    arena_reset(&a);
    arena_reset(&a);
    assert_int_equal(arena_retained(&a), retained_all);
    assert_int_equal(arena_size(&a), 0);
    for (i = 3; i < ARENA_RECUR_BATCHES; i++) {
        arena_reset(&a);
        assert_int_equal(arena_retained(&a), retained_all);
    }
    for (; i <= ARENA_RETAIN_BATCHES; i++)
        arena_reset(&a);
    assert_true(arena_retained(&a) <= retained_uniform);
    arena_reset(&a);
    assert_int_equal(arena_retained(&a), 1000);
    assert_true(arena_check(&a));
    release_tb(&a);

    /* Reset of an arena that holds nothing. */
    {
        arena z = {0};
        arena_reset(&z);
        assert_int_equal(arena_retained(&z), 0);
        assert_true(arena_check(&z));
        assert_non_null(arena_alloc(&z, 1));
        arena_release(&z);
    }
}

/* ---- Release ----------------------------------------------------------------------- */

static void test_release_returns_everything(void **state)
{
    arena a;
    size_t i, calls;
    (void)state;

    init_tb(&a, 256);
    for (i = 0; i < 300; i++) /* enough chunks to grow the chunk index */
        assert_non_null(arena_alloc(&a, 100 + i % 100));
    assert_non_null(arena_alloc(&a, 10000));
    assert_non_null(arena_strdup(&a, "still here"));
    assert_true(tb.live > 100);
    release_tb(&a);
    assert_int_equal(tb.frees, tb.calls);

    /* Reusable: same chunk size, same backing. */
    calls = tb.calls;
    assert_non_null(arena_alloc(&a, 10));
    assert_int_equal(arena_retained(&a), 256);
    assert_true(tb.calls > calls);
    release_tb(&a);
}

/* ---- Marks ------------------------------------------------------------------------- */

static void test_marks_nested_across_chunks(void **state)
{
    arena a;
    char *base, *first1, *first2, *p, *big;
    arena_mark m1, m2;
    size_t i, size1, size2, ret1, ret_full, live2, calls;
    (void)state;

    init_tb(&a, 1000);
    base = (char *)arena_alloc(&a, 100);
    assert_non_null(base);
    fill_pattern(base, 100, 0);

    m1 = arena_save(&a);
    size1 = arena_size(&a);
    ret1 = arena_retained(&a);
    first1 = (char *)arena_alloc(&a, 48);
    assert_non_null(first1);
    fill_pattern(first1, 48, 1);
    for (i = 0; i < 40; i++) /* several chunks */
        fill_pattern(arena_alloc(&a, 90), 90, 100 + i);

    m2 = arena_save(&a);
    size2 = arena_size(&a);
    live2 = tb.live;
    first2 = arena_strdup(&a, "second");
    assert_non_null(first2);
    big = (char *)arena_alloc(&a, 7777); /* oversized after m2 */
    assert_non_null(big);
    fill_pattern(big, 7777, 2);
    for (i = 0; i < 30; i++)
        fill_pattern(arena_alloc(&a, 90), 90, 200 + i);
    ret_full = arena_retained(&a);

    /* Rewind to the inner mark: every chunk stays, the oversized one too. */
    arena_rewind(&a, m2);
    assert_int_equal(arena_size(&a), size2);
    assert_int_equal(arena_retained(&a), ret_full);
    assert_true(tb.live >= live2 + 1); /* chunks kept */
    assert_true(arena_check(&a));
    assert_true(has_pattern(base, 100, 0));
    assert_true(has_pattern(first1, 48, 1));
    p = arena_strdup(&a, "second");
    assert_ptr_equal(p, first2); /* same shape, same address */

    /* The same work again after the inner mark needs no new chunk, and
     * the oversized value gets its chunk back. */
    arena_rewind(&a, m2);
    calls = tb.calls;
    assert_ptr_equal(arena_strdup(&a, "second"), first2);
    assert_ptr_equal(arena_alloc(&a, 7777), big);
    for (i = 0; i < 30; i++)
        assert_non_null(arena_alloc(&a, 90));
    assert_int_equal(tb.calls, calls);

    /* Rewind to the outer mark, across all those chunks. */
    arena_rewind(&a, m1);
    assert_int_equal(arena_size(&a), size1);
    assert_int_equal(arena_retained(&a), ret_full);
    assert_true(ret1 <= arena_retained(&a));
    assert_true(has_pattern(base, 100, 0));
    assert_true(arena_check(&a));
    p = (char *)arena_alloc(&a, 48);
    assert_ptr_equal(p, first1);

    /* Rewinding twice to the same mark is fine. */
    arena_rewind(&a, m1);
    arena_rewind(&a, m1);
    assert_int_equal(arena_size(&a), size1);
    release_tb(&a);
}

/* Same address after rewind, whatever the position at the mark: a fresh
 * arena, a full chunk, just after an oversized value, and at an odd offset. */
static void test_marks_same_address(void **state)
{
    arena a;
    arena_mark m;
    void *p, *q;
    size_t i, calls;
    (void)state;

    /* A mark of a fresh arena. */
    init_tb(&a, 1000);
    m = arena_save(&a);
    p = arena_alloc(&a, 64);
    assert_non_null(p);
    arena_rewind(&a, m);
    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(arena_retained(&a), 1000); /* the uniform chunk is kept */
    q = arena_alloc(&a, 64);
    assert_ptr_equal(p, q);
    release_tb(&a);

    /* A mark at the end of a full chunk: the next value opens a chunk,
     * and after the rewind it opens the same one. */
    init_tb(&a, 1000);
    for (i = 0;; i++) {
        size_t before = arena_retained(&a);
        assert_true(i < 100);
        m = arena_save(&a);
        p = arena_alloc(&a, 96);
        assert_non_null(p);
        if (i > 0 && arena_retained(&a) != before)
            break;
    }
    assert_int_equal(arena_retained(&a), 2000);
    arena_rewind(&a, m);
    assert_int_equal(arena_retained(&a), 2000);
    q = arena_alloc(&a, 96);
    assert_ptr_equal(p, q);
    assert_int_equal(arena_retained(&a), 2000);
    release_tb(&a);

    /* A mark just after an oversized value in a fresh arena (no current
     * uniform chunk yet). */
    init_tb(&a, 1000);
    assert_non_null(arena_alloc(&a, 3000));
    m = arena_save(&a);
    p = arena_alloc(&a, 10);
    assert_non_null(p);
    assert_non_null(arena_alloc(&a, 4000));
    arena_rewind(&a, m);
    assert_int_equal(arena_size(&a), 3000);
    assert_int_equal(arena_retained(&a), 3000 + 1000 + 4000); /* all kept */
    q = arena_alloc(&a, 10);
    assert_ptr_equal(p, q);
    assert_true(arena_check(&a));
    release_tb(&a);

    /* A mark at an odd offset (after a string), then an aligned value. */
    init_tb(&a, 1000);
    assert_non_null(arena_strdup(&a, "odd"));
    m = arena_save(&a);
    p = arena_alloc_aligned(&a, 24, 8);
    assert_non_null(p);
    assert_true(is_aligned(p, 8));
    assert_non_null(arena_strdup(&a, "more"));
    arena_rewind(&a, m);
    q = arena_alloc_aligned(&a, 24, 8);
    assert_ptr_equal(p, q);
    assert_int_equal(arena_size(&a), 4 + 24);
    release_tb(&a);

    /* Spares of 7000, 40000 and 9000 bytes, in that order, at the mark: a
     * value of 6000 would take the first (at most twice its size).  A value
     * of 8000 stored after the mark takes the third, out of order (the first
     * is too small for it, the second too large); after the rewind the value
     * of 6000 still lands where it would have at the mark, not in the third
     * spare, which would hold it too. */
    init_tb(&a, 1000);
    assert_non_null(arena_alloc(&a, 100));
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 7000));
    assert_non_null(arena_alloc(&a, 40000));
    assert_non_null(arena_alloc(&a, 9000));
    arena_rewind(&a, m);
    calls = tb.calls;
    p = arena_alloc(&a, 6000);
    assert_non_null(p);
    arena_rewind(&a, m);
    assert_non_null(arena_alloc(&a, 8000));
    arena_rewind(&a, m);
    q = arena_alloc(&a, 6000);
    assert_ptr_equal(p, q);
    /* Nested: the out-of-order value inside an inner scope. */
    arena_rewind(&a, m);
    {
        arena_mark inner;
        assert_non_null(arena_alloc(&a, 300));
        inner = arena_save(&a);
        assert_non_null(arena_alloc(&a, 8000));
        assert_non_null(arena_alloc(&a, 7000));
        arena_rewind(&a, inner);
        assert_non_null(arena_alloc(&a, 100));
    }
    arena_rewind(&a, m);
    q = arena_alloc(&a, 6000);
    assert_ptr_equal(p, q);
    assert_int_equal(tb.calls, calls);
    assert_true(arena_check(&a));
    release_tb(&a);

    /* At the mark the value of 6000 would take the spare of 7000, found
     * past one of 40000; after the mark it does, and a value of 7500 takes
     * a new chunk, which would hold the 6000 too.  After the rewind the
     * value of 6000 takes the spare it would have taken at the mark. */
    init_tb(&a, 1000);
    assert_non_null(arena_alloc(&a, 100));
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 40000));
    assert_non_null(arena_alloc(&a, 7000));
    arena_rewind(&a, m);
    p = arena_alloc(&a, 6000);
    assert_non_null(p);
    arena_rewind(&a, m);
    assert_ptr_equal(arena_alloc(&a, 6000), p);
    assert_non_null(arena_alloc(&a, 7500)); /* a new chunk */
    arena_rewind(&a, m);
    q = arena_alloc(&a, 6000);
    assert_ptr_equal(p, q);
    assert_true(arena_check(&a));
    release_tb(&a);
}

static void test_marks_bad_reported_state_unchanged(void **state)
{
    arena a, b;
    arena_mark m, mb, m_inner;
    char *v, *p;
    size_t size, retained;
    (void)state;

    init_tb(&a, 1000);
    v = (char *)arena_alloc(&a, 40);
    fill_pattern(v, 40, 5);

    /* Expired by a reset. */
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 40));
    arena_reset(&a);
    v = (char *)arena_alloc(&a, 40);
    fill_pattern(v, 40, 6);
    assert_non_null(arena_alloc(&a, 2000));
    size = arena_size(&a);
    retained = arena_retained(&a);
    arena_rewind(&a, m);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_BAD_MARK);
    assert_non_null(strstr(recorded_errors.message, "arena_rewind"));
    assert_int_equal(arena_size(&a), size);
    assert_int_equal(arena_retained(&a), retained);
    assert_true(arena_check(&a));
    assert_true(has_pattern(v, 40, 6));
    /* The position did not move: the next value does not overlap v. */
    p = (char *)arena_alloc(&a, 40);
    assert_true(p >= v + 40 || p + 40 <= v);
    assert_true(has_pattern(v, 40, 6));

    /* Expired by a release. */
    m = arena_save(&a);
    arena_release(&a);
    arena_rewind(&a, m);
    assert_int_equal(recorded_errors.count, 2);
    assert_int_equal(recorded_errors.last, ARENA_ERR_BAD_MARK);
    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(arena_retained(&a), 0);
    assert_true(arena_check(&a));

    /* Expired by a rewind to an earlier mark (detectable: the later mark's
     * chunk is no longer in use). */
    v = (char *)arena_alloc(&a, 40);
    fill_pattern(v, 40, 7);
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 990)); /* opens the next chunk */
    m_inner = arena_save(&a);
    assert_non_null(arena_alloc(&a, 40));
    arena_rewind(&a, m);
    size = arena_size(&a);
    arena_rewind(&a, m_inner);
    assert_int_equal(recorded_errors.count, 3);
    assert_int_equal(recorded_errors.last, ARENA_ERR_BAD_MARK);
    assert_int_equal(arena_size(&a), size);
    p = (char *)arena_alloc(&a, 40);
    assert_true(p >= v + 40 || p + 40 <= v);
    assert_true(has_pattern(v, 40, 7));

    /* From another arena, at the same epoch as a fresh one. */
    {
        arena c, d;
        arena_init(&c, 1000);
        arena_init(&d, 1000);
        assert_non_null(arena_alloc(&d, 100));
        mb = arena_save(&d);
        assert_non_null(arena_alloc(&c, 200));
        arena_rewind(&c, mb);
        assert_int_equal(recorded_errors.count, 4);
        assert_int_equal(recorded_errors.last, ARENA_ERR_BAD_MARK);
        assert_int_equal(arena_size(&c), 200);
        arena_release(&c);
        arena_release(&d);
    }
    arena_init(&b, 1000);
    assert_non_null(arena_alloc(&b, 100));
    mb = arena_save(&b);
    size = arena_size(&a);
    retained = arena_retained(&a);
    arena_rewind(&a, mb);
    assert_int_equal(recorded_errors.count, 5);
    assert_int_equal(recorded_errors.last, ARENA_ERR_BAD_MARK);
    assert_int_equal(arena_size(&a), size);
    assert_int_equal(arena_retained(&a), retained);
    assert_true(arena_check(&a));
    assert_true(has_pattern(v, 40, 7));
    arena_release(&b);

    /* A valid mark still works after all that. */
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 500));
    arena_rewind(&a, m);
    assert_int_equal(recorded_errors.count, 5);
    assert_int_equal(arena_size(&a), size);
    release_tb(&a);
}

/* A mark stays valid when a value stored before it is shrunk after it (the
 * shrink gives the tail back, moving the position below the mark): the
 * rewind restores the position and the size at the save. */
static void test_marks_valid_after_shrink_before_them(void **state)
{
    arena a;
    char *buf, *p;
    arena_mark m, m2;
    (void)state;

    init_tb(&a, 1000);
    assert_non_null(arena_strdup(&a, "head"));
    buf = (char *)arena_alloc(&a, 200);
    assert_non_null(buf);
    fill_pattern(buf, 200, 1);
    m = arena_save(&a);
    buf = (char *)arena_realloc(&a, buf, 200, 20); /* shrink to fit */
    assert_non_null(buf);
    assert_int_equal(arena_size(&a), 5 + 20);
    assert_non_null(arena_alloc(&a, 30));
    arena_rewind(&a, m);
    assert_int_equal(recorded_errors.count, 0);
    assert_int_equal(arena_size(&a), 5 + 200);
    assert_true(has_pattern(buf, 20, 1)); /* the bytes given back are gone */
    p = (char *)arena_alloc(&a, 50);      /* after the restored 200 bytes */
    assert_true(p >= buf + 200);
    fill_pattern(p, 50, 2);
    assert_true(has_pattern(buf, 20, 1));

    /* And the same with the mark taken after the shrink, then rewound to
     * from before it: both marks are valid. */
    arena_reset(&a);
    buf = (char *)arena_alloc(&a, 100);
    m = arena_save(&a);
    buf = (char *)arena_realloc(&a, buf, 100, 10);
    m2 = arena_save(&a);
    assert_non_null(arena_alloc(&a, 8));
    arena_rewind(&a, m2);
    arena_rewind(&a, m);
    assert_int_equal(recorded_errors.count, 0);
    assert_int_equal(arena_size(&a), 100);
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* ---- Counters ---------------------------------------------------------------------- */

typedef struct point3 {
    double x, y, z;
} point3;

/* Every kind of operation, with the exact Size after it. */
static void test_counters_every_operation(void **state)
{
    arena a;
    size_t expect = 0;
    arena_mark m;
    void *p;
    char *s;
    (void)state;

#define EXPECT_SIZE(delta)                                                                         \
  do {                                                                                             \
    expect += (delta);                                                                             \
    assert_int_equal(arena_size(&a), expect);                                                      \
    assert_int_equal(arena_retained(&a), 4096);                                                    \
    assert_true(arena_check(&a));                                                                  \
  } while (0)

    init_tb(&a, 4096);
    assert_non_null(arena_alloc(&a, 3));
    EXPECT_SIZE(3);
    assert_non_null(arena_alloc_aligned(&a, 5, 64)); /* padding is not counted */
    EXPECT_SIZE(5);
    assert_non_null(arena_alloc_aligned(&a, 7, 1));
    EXPECT_SIZE(7);
    assert_non_null(arena_calloc(&a, 3, 7));
    EXPECT_SIZE(21);
    assert_non_null(arena_copy(&a, "abcdef", 6, 2));
    EXPECT_SIZE(6);
    assert_non_null(arena_strdup(&a, "hello"));
    EXPECT_SIZE(6); /* the NUL counts */
    assert_non_null(arena_strndup(&a, "hello", 2));
    EXPECT_SIZE(3);
    assert_non_null(arena_strndup(&a, "", 0));
    EXPECT_SIZE(1);
    assert_non_null(ARENA_NEW(&a, point3));
    EXPECT_SIZE(sizeof(point3));
    assert_non_null(ARENA_NEW_ARRAY(&a, uint16_t, 9));
    EXPECT_SIZE(18);
    assert_non_null(ARENA_ALLOC_ARRAY(&a, point3, 2));
    EXPECT_SIZE(2 * sizeof(point3));
    {
        arena_ref r = arena_ref_copy(&a, "xyz", 3, 1);
        assert_false(arena_ref_empty(r));
        EXPECT_SIZE(3);
        r = arena_ref_strndup(&a, "xyz", 3);
        assert_false(arena_ref_empty(r));
        EXPECT_SIZE(4);
    }
    p = arena_alloc(&a, 10);
    assert_non_null(p);
    EXPECT_SIZE(10);
    p = arena_realloc(&a, p, 10, 30); /* most recent, room: in place */
    assert_non_null(p);
    EXPECT_SIZE(20);
    p = arena_realloc(&a, p, 30, 12); /* shrink the most recent */
    assert_non_null(p);
    EXPECT_SIZE(-(size_t)18);
    s = arena_strdup(&a, "x");
    assert_non_null(s);
    EXPECT_SIZE(2);
    p = arena_realloc(&a, p, 12, 40); /* not the most recent: moves, gives the old back */
    assert_non_null(p);
    EXPECT_SIZE(40 - 12);
    p = arena_realloc(&a, NULL, 0, 9); /* NULL: alloc */
    assert_non_null(p);
    EXPECT_SIZE(9);

    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 100));
    EXPECT_SIZE(100);
    arena_rewind(&a, m);
    EXPECT_SIZE(-(size_t)100);

    /* Oversized values count in both. */
    assert_non_null(arena_alloc(&a, 5000));
    expect += 5000;
    assert_int_equal(arena_size(&a), expect);
    assert_int_equal(arena_retained(&a), 4096 + 5000);
    arena_rewind(&a, m);
    expect -= 5000;
    assert_int_equal(arena_size(&a), expect);
    assert_int_equal(arena_retained(&a), 4096 + 5000); /* kept as a spare */

    arena_reset(&a);
    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(arena_retained(&a), 4096 + 5000);
    arena_trim(&a, 4096);
    assert_int_equal(arena_retained(&a), 4096);
    release_tb(&a);
#undef EXPECT_SIZE
}

/* ---- Alignment --------------------------------------------------------------------- */

static void test_alignment_powers_of_two(void **state)
{
    arena a;
    void *vals[128];
    size_t aligns[128], sizes[128], n = 0, align, expect = 0, i;
    (void)state;

    init_tb(&a, 4096);
    for (align = 1; align <= ((size_t)1 << 20); align <<= 1) {
        size_t size;
        for (size = 1; size <= 100; size += 33) {
            char *p;
            assert_true(n < 128);
            p = (char *)arena_alloc_aligned(&a, size, align);
            assert_non_null(p);
            assert_true(is_aligned(p, align));
            fill_pattern(p, size, n);
            vals[n] = p;
            aligns[n] = align;
            sizes[n] = size;
            expect += size;
            n++;
        }
        /* a string between values leaves the position unaligned */
        assert_non_null(arena_strdup(&a, "ab"));
        expect += 3;
    }
    assert_int_equal(n, 21 * 4);
    assert_int_equal(arena_size(&a), expect);
    for (i = 0; i < n; i++) {
        assert_true(is_aligned(vals[i], aligns[i]));
        assert_true(has_pattern(vals[i], sizes[i], i));
    }
    assert_true(arena_check(&a));

    /* arena_copy and the typed macros honour alignment too. */
    for (align = 1; align <= 8192; align <<= 1) {
        char *p = (char *)arena_copy(&a, "0123456789", 10, align);
        assert_non_null(p);
        assert_true(is_aligned(p, align));
        assert_memory_equal(p, "0123456789", 10);
    }
    {
        typedef struct {
            alignas(64) char c[3];
        } wide;
        wide *w = ARENA_NEW(&a, wide);
        wide *wa = ARENA_NEW_ARRAY(&a, wide, 3);
        wide *wu = ARENA_ALLOC_ARRAY(&a, wide, 2);
        assert_non_null(w);
        assert_non_null(wa);
        assert_non_null(wu);
        assert_true(is_aligned(w, 64));
        assert_true(is_aligned(wa, 64));
        assert_true(is_aligned(wu, 64));
        assert_true(all_zero(w, sizeof *w));
        assert_true(all_zero(wa, 3 * sizeof *wa));
    }
    /* 0 means ARENA_ALIGN. */
    assert_non_null(arena_strdup(&a, "x"));
    assert_true(is_aligned(arena_alloc_aligned(&a, 5, 0), ARENA_ALIGN));
    assert_non_null(arena_strdup(&a, "x"));
    assert_true(is_aligned(arena_copy(&a, "abc", 3, 0), ARENA_ALIGN));
    assert_non_null(arena_strdup(&a, "x"));
    assert_true(is_aligned(arena_alloc(&a, 5), ARENA_ALIGN));
    assert_non_null(arena_strdup(&a, "x"));
    assert_true(is_aligned(arena_calloc(&a, 1, 5), ARENA_ALIGN));
    release_tb(&a);
}

static void test_alignment_invalid(void **state)
{
    arena a;
    size_t bad[] = {3,
                    5,
                    6,
                    7,
                    12,
                    24,
                    48,
                    100,
                    4095,
                    4097,
                    (size_t)3 << 20,
                    SIZE_MAX,
                    SIZE_MAX - 1,
                    SIZE_MAX / 2 + 2};
    size_t i, size, retained, calls;
    char *v;
    (void)state;

    init_tb(&a, 1000);
    v = (char *)arena_alloc(&a, 32);
    fill_pattern(v, 32, 1);
    size = arena_size(&a);
    retained = arena_retained(&a);
    calls = tb.calls;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        arena_ref r;
        assert_null(arena_alloc_aligned(&a, 8, bad[i]));
        assert_null(arena_alloc_aligned(&a, 5000, bad[i])); /* oversized too */
        assert_null(arena_copy(&a, "abcdefgh", 8, bad[i]));
        r = arena_ref_copy(&a, "abcdefgh", 8, bad[i]);
        assert_true(arena_ref_empty(r));
        assert_null(arena_ref_ptr(&a, r));
        assert_int_equal(arena_size(&a), size);
        assert_int_equal(arena_retained(&a), retained);
    }
    assert_int_equal(tb.calls, calls);
    assert_int_equal(recorded_errors.count, 0); /* not misuse: just NULL */

    /* Powers of two too large to pad: a clean NULL, never a wrapped pointer. */
    for (i = 40; i < sizeof(size_t) * 8; i++) {
        size_t align = (size_t)1 << i;
        arena_ref r;
        assert_null(arena_alloc_aligned(&a, 1, align));
        assert_null(arena_copy(&a, "a", 1, align));
        r = arena_ref_copy(&a, "a", 1, align);
        assert_true(arena_ref_empty(r));
        assert_int_equal(arena_size(&a), size);
        assert_int_equal(arena_retained(&a), retained);
    }
    assert_true(has_pattern(v, 32, 1));
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* ---- Zeroing ----------------------------------------------------------------------- */

/* Dirties the arena's uniform chunk, rewinds or resets, and checks that every
 * zeroing entry point zeroes the reused bytes. */
static void test_zeroing_of_reused_chunks(void **state)
{
    arena a;
    int round;
    (void)state;

    init_tb(&a, 4096);
    for (round = 0; round < 2; round++) {
        arena_mark m = arena_save(&a);
        size_t used, retained;
        /* Fill the first chunk (and some of the next) with non-zero bytes. */
        for (used = 0; used < 4096 + 512; used += 64) {
            void *p = arena_alloc(&a, 64);
            assert_non_null(p);
            memset(p, 0xEE, 64);
        }
        retained = arena_retained(&a);
        if (round == 0)
            arena_reset(&a);
        else
            arena_rewind(&a, m);
        {
            unsigned char *c = (unsigned char *)arena_calloc(&a, 10, 13);
            point3 *pt = ARENA_NEW(&a, point3);
            uint32_t *arr = ARENA_NEW_ARRAY(&a, uint32_t, 100);
            unsigned char *c2 = (unsigned char *)arena_calloc(&a, 1, 1000);
            assert_non_null(c);
            assert_non_null(pt);
            assert_non_null(arr);
            assert_non_null(c2);
            assert_true(all_zero(c, 130));
            assert_true(all_zero(pt, sizeof *pt));
            assert_true(all_zero(arr, 400));
            assert_true(all_zero(c2, 1000));
            assert_int_equal(arena_retained(&a), retained); /* reused, not fresh */
        }
        arena_reset(&a);
    }
    release_tb(&a);

    /* Fresh chunks from a dirty backing are zeroed too. */
    init_tb(&a, 4096);
    {
        unsigned char *c = (unsigned char *)arena_calloc(&a, 4096, 1);
        uint64_t *arr = ARENA_NEW_ARRAY(&a, uint64_t, 300);
        point3 *pt = ARENA_NEW(&a, point3);
        assert_non_null(c);
        assert_non_null(arr);
        assert_non_null(pt);
        assert_true(all_zero(c, 4096));
        assert_true(all_zero(arr, 2400));
        assert_true(all_zero(pt, sizeof *pt));
    }
    release_tb(&a);
}

/* ---- Arrays: overflow -------------------------------------------------------------- */

static void test_array_overflow(void **state)
{
    arena a;
    char *v;
    size_t size, retained, calls;
    (void)state;

    init_tb(&a, 1000);
    v = (char *)arena_alloc(&a, 24);
    fill_pattern(v, 24, 3);
    size = arena_size(&a);
    retained = arena_retained(&a);
    calls = tb.calls;

    assert_null(ARENA_NEW_ARRAY(&a, uint64_t, SIZE_MAX / 8 + 1));
    assert_null(ARENA_NEW_ARRAY(&a, uint64_t, SIZE_MAX));
    assert_null(ARENA_NEW_ARRAY(&a, point3, SIZE_MAX / sizeof(point3) + 1));
    assert_null(ARENA_ALLOC_ARRAY(&a, uint64_t, SIZE_MAX / 8 + 1));
    assert_null(ARENA_ALLOC_ARRAY(&a, uint32_t, SIZE_MAX / 2));
    assert_null(ARENA_ALLOC_ARRAY(&a, point3, SIZE_MAX / sizeof(point3) + 1));
    assert_null(arena_calloc(&a, SIZE_MAX / 2 + 1, 2));
    assert_null(arena_calloc(&a, 2, SIZE_MAX / 2 + 1));
    assert_null(arena_calloc(&a, SIZE_MAX, SIZE_MAX));
    /* (2^32 each on 64-bit, 2^16 on 32-bit: the product just overflows) */
    assert_null(
        arena_calloc(&a, (size_t)1 << (sizeof(size_t) * 4), (size_t)1 << (sizeof(size_t) * 4)));
    assert_int_equal(tb.calls, calls); /* refused before asking for memory */
    assert_int_equal(arena_size(&a), size);
    assert_int_equal(arena_retained(&a), retained);
    assert_true(has_pattern(v, 24, 3));
    assert_true(arena_check(&a));

    /* Products that fit are fine, the boundary included. */
    assert_non_null(ARENA_ALLOC_ARRAY(&a, uint64_t, 10));
    assert_non_null(arena_calloc(&a, 1, 5));
    release_tb(&a);
}

/* ---- arena_realloc -------------------------------------------------------------------- */

static void test_grow(void **state)
{
    arena a;
    char *p, *q, *r, *s;
    size_t size;
    (void)state;

    init_tb(&a, 1000);

    /* In place: the most recent value, room in the chunk. */
    p = (char *)arena_alloc(&a, 20);
    fill_pattern(p, 20, 1);
    q = (char *)arena_realloc(&a, p, 20, 100);
    assert_ptr_equal(q, p);
    assert_true(has_pattern(q, 20, 1));
    fill_pattern(q, 100, 2);
    assert_int_equal(arena_size(&a), 100);
    /* Again, byte by byte (strings grow this way). */
    q = (char *)arena_realloc(&a, q, 100, 101);
    assert_ptr_equal(q, p);
    assert_int_equal(arena_size(&a), 101);
    q[100] = 'z';

    /* Shrinking the most recent value gives the tail back: growing it back
     * is in place again, and so is a new value after it. */
    q = (char *)arena_realloc(&a, p, 101, 30);
    assert_ptr_equal(q, p);
    assert_int_equal(arena_size(&a), 30);
    assert_true(has_pattern(q, 30, 2));
    q = (char *)arena_realloc(&a, p, 30, 60);
    assert_ptr_equal(q, p);
    assert_int_equal(arena_size(&a), 60);
    assert_true(has_pattern(q, 30, 2));
    q = (char *)arena_realloc(&a, p, 60, 60); /* same size: nothing */
    assert_ptr_equal(q, p);
    assert_int_equal(arena_size(&a), 60);
    if (test_packed()) {
        q = (char *)arena_realloc(&a, p, 60, 31);
        s = arena_strdup(&a, "tail");
        assert_ptr_equal(s, p + 31);
        assert_int_equal(arena_size(&a), 31 + 5);
        q = (char *)arena_realloc(&a, s, 5, 5);
        assert_ptr_equal(q, s);
        size = 36;
    } else {
        size = 60;
    }
    fill_pattern(p, 31, 2);

    /* Moving: not the most recent value. */
    r = (char *)arena_alloc(&a, 10);
    fill_pattern(r, 10, 3);
    size += 10;
    q = (char *)arena_realloc(&a, p, 31, 200);
    assert_non_null(q);
    assert_ptr_not_equal(q, p);
    assert_true(is_aligned(q, ARENA_ALIGN));
    assert_true(has_pattern(q, 31, 2));
    assert_true(has_pattern(r, 10, 3));
    size += 200 - 31; /* the old place is given back, as by arena_free() */
    assert_int_equal(arena_size(&a), size);
    /* Shrinking a value that is not the most recent: ptr, and its tail given
     * back. */
    s = (char *)arena_realloc(&a, r, 10, 4);
    assert_ptr_equal(s, r);
    assert_true(has_pattern(r, 4, 3));
    size -= 6;
    assert_int_equal(arena_size(&a), size);

    /* Moving: the most recent value, but its chunk has no room. */
    p = (char *)arena_alloc(&a, 400);
    fill_pattern(p, 400, 4);
    size += 400;
    q = (char *)arena_realloc(&a, p, 400, 900);
    assert_non_null(q);
    assert_ptr_not_equal(q, p);
    assert_true(has_pattern(q, 400, 4));
    size += 900 - 400;
    assert_int_equal(arena_size(&a), size);
    assert_int_equal(arena_retained(&a), 2000);

    /* Growing into an oversized value. */
    r = (char *)arena_realloc(&a, q, 900, 5000);
    assert_non_null(r);
    assert_true(has_pattern(r, 400, 4));
    size += 5000 - 900;
    assert_int_equal(arena_size(&a), size);
    assert_int_equal(arena_retained(&a), 2000 + 5000);

    /* ptr == NULL behaves as arena_alloc. */
    p = (char *)arena_realloc(&a, NULL, 0, 24);
    assert_non_null(p);
    assert_true(is_aligned(p, ARENA_ALIGN));
    size += 24;
    assert_int_equal(arena_size(&a), size);
    p = (char *)arena_realloc(&a, NULL, 0, 0);
    assert_non_null(p);
    assert_int_equal(arena_size(&a), size);

    /* Growing a size-0 value. */
    p = (char *)arena_alloc(&a, 0);
    q = (char *)arena_realloc(&a, p, 0, 8);
    assert_non_null(q);
    memset(q, 1, 8);
    size += 8;
    assert_int_equal(arena_size(&a), size);

    assert_true(arena_check(&a));
    release_tb(&a);

    /* A string value grows byte by byte in place when it is the most recent. */
    init_tb(&a, 1000);
    s = arena_strdup(&a, "ab");
    q = (char *)arena_realloc(&a, s, 3, 4);
    assert_ptr_equal(q, s);
    assert_string_equal(q, "ab");
    q[3] = 'c';
    assert_int_equal(arena_size(&a), 4);
    release_tb(&a);
}

/* ---- Strings ----------------------------------------------------------------------- */

static void test_strings_nuls(void **state)
{
    arena a;
    char *s, *t;
    static const char embedded[] = "a\0b\0c"; /* 5 bytes + the literal's NUL */
    char src[] = "terminal\0";
    (void)state;

    init_tb(&a, 1000);
    s = arena_strndup(&a, embedded, 5);
    assert_non_null(s);
    assert_memory_equal(s, "a\0b\0c\0", 6);
    assert_int_equal(arena_size(&a), 6);

    s = arena_strndup(&a, src, 9); /* a terminal NUL inside len is copied */
    assert_memory_equal(s, "terminal\0\0", 10);
    assert_int_equal(arena_size(&a), 6 + 10);

    s = arena_strdup(&a, embedded); /* strdup stops at the first NUL */
    assert_memory_equal(s, "a\0", 2);
    assert_int_equal(arena_size(&a), 6 + 10 + 2);

    s = arena_strndup(&a, "abcdef", 3); /* copies len bytes, adds a NUL */
    assert_string_equal(s, "abc");
    assert_int_equal(arena_size(&a), 6 + 10 + 2 + 4);

    s = arena_strndup(&a, "ignored", 0);
    assert_non_null(s);
    assert_string_equal(s, "");
    assert_int_equal(arena_size(&a), 6 + 10 + 2 + 4 + 1);

    s = arena_strdup(&a, "");
    assert_non_null(s);
    assert_string_equal(s, "");

    /* The copy is independent of the source (interning a decoder's buffer). */
    s = arena_strdup(&a, src);
    src[0] = 'X';
    assert_string_equal(s, "terminal");

    if (test_packed()) {
        /* Strings are packed at alignment 1. */
        s = arena_strdup(&a, "one");
        t = arena_strdup(&a, "two");
        assert_ptr_equal(t, s + 4);
        t = arena_strndup(&a, embedded, 3);
        assert_ptr_equal(t, s + 8);
    } else {
        t = arena_strdup(&a, "two");
        assert_string_equal(t, "two");
    }
    /* A string across a chunk boundary moves whole to the next chunk. */
    {
        char long_src[600];
        memset(long_src, 'q', sizeof long_src);
        s = arena_strndup(&a, long_src, 599);
        t = arena_strndup(&a, long_src, 599);
        assert_non_null(s);
        assert_non_null(t);
        assert_int_equal(strlen(s), 599);
        assert_int_equal(strlen(t), 599);
        assert_memory_equal(s, long_src, 599);
    }
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* ---- Size 0 ------------------------------------------------------------------------ */

/* A type aligned above ARENA_ALIGN. */
typedef struct wide {
    alignas(256) char bytes[256];
} wide;

/* A size-0 result: non-NULL, at the alignment asked. */
#define assert_zero_value(p, align)                                                                \
  do {                                                                                             \
    const void *zv_ = (p);                                                                         \
    assert_non_null(zv_);                                                                          \
    assert_true(is_aligned(zv_, (align)));                                                         \
  } while (0)

static void check_zero_size_entry_points(arena *a)
{
    size_t size = arena_size(a), retained = arena_retained(a), calls = tb.calls;
    arena_ref r;
    unsigned k;

    assert_zero_value(arena_alloc(a, 0), ARENA_ALIGN);
    assert_zero_value(arena_alloc_aligned(a, 0, 0), ARENA_ALIGN);
    /* every alignment the call accepts, up to the largest power of two */
    for (k = 0; k < sizeof(size_t) * 8; k++) {
        assert_zero_value(arena_alloc_aligned(a, 0, (size_t)1 << k), (size_t)1 << k);
        assert_zero_value(arena_copy(a, "abc", 0, (size_t)1 << k), (size_t)1 << k);
    }
    assert_zero_value(arena_calloc(a, 0, 0), ARENA_ALIGN);
    assert_zero_value(arena_calloc(a, 0, 16), ARENA_ALIGN);
    assert_zero_value(arena_calloc(a, 16, 0), ARENA_ALIGN);
    assert_zero_value(arena_calloc(a, SIZE_MAX, 0), ARENA_ALIGN); /* the product is 0 */
    assert_zero_value(arena_copy(a, "abc", 0, 0), ARENA_ALIGN);
    assert_zero_value(arena_copy(a, NULL, 0, 8), 8);
    assert_zero_value(arena_realloc(a, NULL, 0, 0), ARENA_ALIGN);
    assert_zero_value(ARENA_NEW_ARRAY(a, point3, 0), alignof(point3));
    assert_zero_value(ARENA_ALLOC_ARRAY(a, point3, 0), alignof(point3));
    assert_zero_value(ARENA_NEW_ARRAY(a, wide, 0), alignof(wide));
    assert_zero_value(ARENA_ALLOC_ARRAY(a, wide, 0), alignof(wide));
    r = arena_ref_copy(a, "abc", 0, 0);
    assert_true(arena_ref_empty(r));
    r = arena_ref_strndup(a, "abc", 0);
    assert_true(arena_ref_empty(r));
    assert_string_equal(arena_ref_str(a, r), "");
    assert_int_equal(arena_size(a), size);
    assert_int_equal(arena_retained(a), retained);
    assert_int_equal(tb.calls, calls);
    assert_true(arena_check(a));
}

static void test_size_zero(void **state)
{
    arena a;
    char *v;
    (void)state;

    /* A fresh arena: no chunk is created. */
    init_tb(&a, 1000);
    check_zero_size_entry_points(&a);
    assert_int_equal(arena_retained(&a), 0);
    assert_int_equal(tb.calls, 0);

    /* With a current chunk, and with a full one. */
    v = (char *)arena_alloc(&a, 16);
    fill_pattern(v, 16, 8);
    check_zero_size_entry_points(&a);
    for (;;) { /* fill the chunk to its last byte */
        arena_mark m = arena_save(&a);
        assert_non_null(arena_alloc_aligned(&a, 1, 1));
        if (arena_retained(&a) != 1000) {
            arena_rewind(&a, m);
            break;
        }
    }
    check_zero_size_entry_points(&a);
    assert_true(has_pattern(v, 16, 8));
    release_tb(&a);

    /* The zero value. */
    {
        arena z = {0};
        assert_zero_value(arena_alloc(&z, 0), ARENA_ALIGN);
        assert_zero_value(arena_calloc(&z, 0, 1), ARENA_ALIGN);
        assert_int_equal(arena_retained(&z), 0);
        arena_release(&z);
    }

    /* A size-0 result is no value: free and realloc take it as 0 bytes (in
     * the checked build too: the default handler would abort on a report),
     * and values go where they would have gone without it. */
    {
        arena z;
        char *x, *zero, *y, *moved;
        arena_mark m;
        init_tb(&z, 1000);
        x = (char *)arena_alloc(&z, 24);
        m = arena_save(&z);
        y = (char *)arena_alloc(&z, 8);
        arena_rewind(&z, m);
        zero = (char *)arena_alloc_aligned(&z, 0, (size_t)1 << 20);
        assert_zero_value(zero, (size_t)1 << 20);
        arena_free(&z, zero, 0);
        moved = (char *)arena_realloc(&z, zero, 0, 8);
        assert_ptr_equal(moved, y);
        memset(moved, 1, 8);
        zero = (char *)arena_alloc(&z, 0);
        assert_ptr_equal(arena_realloc(&z, zero, 0, 0), zero);
        assert_int_equal(arena_size(&z), 32);
        assert_non_null(x);
        assert_true(arena_check(&z));
        release_tb(&z);
    }
}

/* ---- Sizes near SIZE_MAX ----------------------------------------------------------- */

static void check_huge_sizes(arena *a, char *v, size_t vlen, uint64_t vid)
{
    static const size_t huge[] = {
        SIZE_MAX,         SIZE_MAX - 1,    SIZE_MAX - 15,           SIZE_MAX - 16,
        SIZE_MAX - 4095,  SIZE_MAX - 4096, (size_t)PTRDIFF_MAX + 1, SIZE_MAX / 2 + 2,
        SIZE_MAX / 4 * 3, SIZE_MAX / 8 * 7};
    static const size_t aligns[] = {0, 1, 16, 64, 4096, (size_t)1 << 20};
    size_t size = arena_size(a), retained = arena_retained(a);
    size_t i, j;
    char src[8] = "1234567";

    for (i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        size_t n = huge[i];
        arena_ref r;
        assert_null(arena_alloc(a, n));
        for (j = 0; j < sizeof aligns / sizeof aligns[0]; j++) {
            assert_null(arena_alloc_aligned(a, n, aligns[j]));
            /* Must fail before reading src (which is 8 bytes). */
            assert_null(arena_copy(a, src, n, aligns[j]));
        }
        assert_null(arena_calloc(a, 1, n));
        assert_null(arena_calloc(a, n, 1));
        assert_null(arena_strndup(a, src, n));
        assert_null(ARENA_NEW_ARRAY(a, char, n));
        assert_null(ARENA_ALLOC_ARRAY(a, char, n));
        assert_null(arena_realloc(a, NULL, 0, n));
        assert_null(arena_realloc(a, v, vlen, n));
        r = arena_ref_copy(a, src, n, 0);
        assert_true(arena_ref_empty(r));
        r = arena_ref_strndup(a, src, n);
        assert_true(arena_ref_empty(r));
        assert_int_equal(arena_size(a), size);
        assert_int_equal(arena_retained(a), retained);
        assert_true(arena_check(a));
        assert_true(has_pattern(v, vlen, vid));
    }
    /* Refs refuse these as too large, through the handler. */
    assert_int_equal(recorded_errors.last, ARENA_ERR_REF_TOO_LARGE);
}

static void test_sizes_near_size_max(void **state)
{
    arena a;
    char *v, *w;
    (void)state;

    /* Recording backing: refuses anything above TB_HUGE. */
    init_tb(&a, 1000);
    v = (char *)arena_alloc(&a, 40);
    fill_pattern(v, 40, 11);
    check_huge_sizes(&a, v, 40, 11); /* v is the most recent value */
    w = (char *)arena_alloc(&a, 16);
    fill_pattern(w, 16, 12);
    check_huge_sizes(&a, v, 40, 11); /* v is not */
    assert_true(has_pattern(w, 16, 12));
    release_tb(&a);

    /* A request above PTRDIFF_MAX (no object can be that large) never
     * reaches the backing, whatever entry point it comes from. */
    init_tb(&a, 1000);
    v = (char *)arena_alloc(&a, 40);
    {
        size_t calls = tb.calls;
        static const size_t beyond[] = {(size_t)PTRDIFF_MAX + 1, SIZE_MAX / 2 + 77, SIZE_MAX - 8};
        size_t i;
        for (i = 0; i < sizeof beyond / sizeof beyond[0]; i++) {
            assert_null(arena_alloc(&a, beyond[i]));
            assert_null(arena_calloc(&a, 1, beyond[i]));
            assert_null(arena_copy(&a, v, opaque_size(beyond[i]), 1));
            assert_null(arena_strndup(&a, (const char *)v, opaque_size(beyond[i])));
            assert_null(arena_realloc(&a, v, 40, beyond[i]));
            assert_null(arena_alloc_aligned(&a, beyond[i] - 4000, 4096));
        }
        assert_int_equal(tb.calls, calls);
    }
    release_tb(&a);

    /* malloc backing (ASAN_OPTIONS=allocator_may_return_null=1 under ASan). */
    arena_init(&a, 1000);
    v = (char *)arena_alloc(&a, 40);
    fill_pattern(v, 40, 13);
    check_huge_sizes(&a, v, 40, 13);
    arena_release(&a);
}

/* ---- The error handler ------------------------------------------------------------- */

static int handler_calls;
static void counting_handler(arena_error code, const char *message, void *ctx)
{
    (void)code;
    (void)message;
    *(int *)ctx += 1;
    handler_calls++;
}

static void test_error_handler_api(void **state)
{
    /* (volatile: a constant would let -m32 gcc judge the inline copy's bound) */
    volatile size_t too_big = (size_t)ARENA_REF_MAX + 1;
    void *ctx = (void *)1;
    int counter = 0;
    arena_error_fn *prev;
    arena a;
    arena_ref r;
    (void)state;

    restore_errors();
    assert_ptr_equal(arena_get_error_handler(&ctx), arena_default_error_handler);
    assert_null(ctx);
    assert_ptr_equal(arena_get_error_handler(NULL), arena_default_error_handler);

    prev = arena_set_error_handler(counting_handler, &counter);
    assert_ptr_equal(prev, arena_default_error_handler);
    assert_ptr_equal(arena_get_error_handler(&ctx), counting_handler);
    assert_ptr_equal(ctx, &counter);

    /* The handler sees misuse, with its ctx; the faulty call does nothing. */
    arena_init(&a, 1000);
    r = arena_ref_copy(&a, "x", too_big, 1);
    assert_true(arena_ref_empty(r));
    assert_int_equal(counter, 1);
    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(arena_retained(&a), 0);
    arena_release(&a);

    prev = arena_set_error_handler(record_error, NULL);
    assert_ptr_equal(prev, counting_handler);
    prev = arena_set_error_handler(NULL, &counter); /* NULL restores the default */
    assert_ptr_equal(prev, record_error);
    assert_ptr_equal(arena_get_error_handler(&ctx), arena_default_error_handler);
    assert_null(ctx);
    assert_int_equal(handler_calls, 1);
    record_errors(); /* for the teardown */
}

static void test_error_names(void **state)
{
    (void)state;
    assert_string_equal(arena_error_name(ARENA_ERR_NULL_FREE), "ARENA_ERR_NULL_FREE");
    assert_string_equal(arena_error_name(ARENA_ERR_FOREIGN_POINTER), "ARENA_ERR_FOREIGN_POINTER");
    assert_string_equal(arena_error_name(ARENA_ERR_DOUBLE_FREE), "ARENA_ERR_DOUBLE_FREE");
    assert_string_equal(arena_error_name(ARENA_ERR_REF_TOO_LARGE), "ARENA_ERR_REF_TOO_LARGE");
    assert_string_equal(arena_error_name(ARENA_ERR_STALE_REF), "ARENA_ERR_STALE_REF");
    assert_string_equal(arena_error_name(ARENA_ERR_BAD_MARK), "ARENA_ERR_BAD_MARK");
    assert_string_equal(arena_error_name(ARENA_ERR_CORRUPT), "ARENA_ERR_CORRUPT");
    assert_string_equal(arena_error_name(ARENA_ERR_BAD_SIZE), "ARENA_ERR_BAD_SIZE");
    assert_string_equal(arena_error_name((arena_error)0), "unknown");
    assert_string_equal(arena_error_name((arena_error)9999), "unknown");
    assert_int_equal(ARENA_ERR_NULL_FREE, 1);
    assert_int_equal(ARENA_ERR_FOREIGN_POINTER, 2);
    assert_int_equal(ARENA_ERR_DOUBLE_FREE, 3);
    assert_int_equal(ARENA_ERR_REF_TOO_LARGE, 4);
    assert_int_equal(ARENA_ERR_STALE_REF, 5);
    assert_int_equal(ARENA_ERR_BAD_MARK, 6);
    assert_int_equal(ARENA_ERR_CORRUPT, 7);
    assert_int_equal(ARENA_ERR_BAD_SIZE, 8); /* added last: earlier codes keep their values */
}

/* ---- Values never move, and arena_check catches corruption ------------------------- */

static void test_values_stable_while_storing(void **state)
{
    arena a;
    char *vals[2000];
    size_t i;
    (void)state;

    init_tb(&a, 512);
    for (i = 0; i < 2000; i++) {
        size_t n = 1 + (i * 7919) % 700; /* some oversized */
        vals[i] = (char *)arena_alloc_aligned(&a, n, (size_t)1 << (i % 6));
        assert_non_null(vals[i]);
        fill_pattern(vals[i], n, i);
    }
    for (i = 0; i < 2000; i++)
        assert_true(has_pattern(vals[i], 1 + (i * 7919) % 700, i));
    assert_true(arena_check(&a));
    release_tb(&a);
}

static void test_check_reports_corruption(void **state)
{
    arena a;
    (void)state;

    init_tb(&a, 1000);
    assert_non_null(arena_alloc(&a, 10));
    assert_true(arena_check(&a));
    assert_int_equal(recorded_errors.count, 0);
    arena__cold(&a)->retained += 1; /* a deliberate inconsistency */
    assert_false(arena_check(&a));
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_CORRUPT);
    arena__cold(&a)->retained -= 1;
    assert_true(arena_check(&a));

    /* The record of expired marks: a span past the serials handed out. */
    {
        arena_mark m = arena_save(&a);
        (void)arena_save(&a);
        arena_rewind(&a, m);
        assert_int_equal(arena__cold(&a)->ndead, 1);
        assert_true(arena_check(&a));
        arena__cold(&a)->dead[0].to += 5;
        assert_false(arena_check(&a));
        assert_int_equal(recorded_errors.count, 2);
        assert_int_equal(recorded_errors.last, ARENA_ERR_CORRUPT);
        arena__cold(&a)->dead[0].to -= 5;
        assert_true(arena_check(&a));
    }
    release_tb(&a);
}

static void test_version(void **state)
{
    char expect[32];
    (void)state;
    snprintf(expect, sizeof expect, "%d.%d.%d", ARENA_VERSION_MAJOR, ARENA_VERSION_MINOR,
             ARENA_VERSION_PATCH);
    assert_string_equal(arena_version(), expect);
    assert_int_equal(ARENA_VERSION,
                     ARENA_VERSION_MAJOR * 10000 + ARENA_VERSION_MINOR * 100 + ARENA_VERSION_PATCH);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_record_errors, teardown_record_errors)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_zero_value_arena),
        T(test_chunk_size_is_exact_capacity),
        T(test_chunk_size_packs_exactly),
        T(test_chunk_size_clamped_to_ref_max),
        T(test_tiny_chunk_sizes),
        T(test_oversized_own_chunk_exact),
        T(test_oversized_first_and_lone),
        T(test_oversized_zeroed_and_aligned),
        T(test_reset_keeps_uniform_chunks),
        T(test_release_returns_everything),
        T(test_marks_nested_across_chunks),
        T(test_marks_same_address),
        T(test_marks_bad_reported_state_unchanged),
        T(test_marks_valid_after_shrink_before_them),
        T(test_counters_every_operation),
        T(test_alignment_powers_of_two),
        T(test_alignment_invalid),
        T(test_zeroing_of_reused_chunks),
        T(test_array_overflow),
        T(test_grow),
        T(test_strings_nuls),
        T(test_size_zero),
        T(test_sizes_near_size_max),
        T(test_error_handler_api),
        T(test_error_names),
        T(test_values_stable_while_storing),
        T(test_check_reports_corruption),
        T(test_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
