/* SPDX-License-Identifier: MIT */
/* The inline fast paths of arena_reset() and arena_release() (a one-chunk
 * batch, a scope on a stack buffer) leave the arena exactly as the slow
 * paths do: same counters, same next address, spares kept, marks expired,
 * nothing allocated or freed when nothing should be. */
#include "support.h"

#include <stdalign.h>

#include "exported_calls.h"

static void test_reset_one_chunk(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a;
    arena_mark m;
    char *first;
    (void)state;

    record_errors();
    arena_init_with(&a, 4096, &al);
    first = arena_alloc(&a, 100);
    assert_non_null(first);
    m = arena_save(&a);
    assert_non_null(arena_strndup(&a, "label", 5));
    arena_reset(&a);
    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(arena_retained(&a), 4096);
    assert_int_equal(tb.calls, 1);
    assert_int_equal(tb.frees, 0);
    assert_true(arena_check(&a));
    /* The next batch starts where the first did, and the old mark expired. */
    assert_ptr_equal(arena_alloc(&a, 100), first);
    arena_rewind(&a, m);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_BAD_MARK);
    assert_int_equal(arena_size(&a), 100);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
    arena_set_error_handler(NULL, NULL);
}

static void test_reset_keeps_the_chunks_used(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a;
    size_t calls;
    int i;
    (void)state;

    arena_init_with(&a, 1024, &al);
    for (i = 0; i < 3; i++) /* three uniform chunks */
        assert_non_null(arena_alloc(&a, 1000));
    assert_non_null(arena_alloc(&a, 5000)); /* and an oversized one */
    assert_int_equal(arena_retained(&a), 3 * 1024 + 5000);
    arena_reset(&a); /* the slow path: four chunks in use */
    assert_int_equal(arena_retained(&a), 3 * 1024 + 5000);
    assert_int_equal(tb.live, 5); /* four chunks and the index */
    assert_non_null(arena_alloc(&a, 10));
    arena_reset(&a); /* the slow path too: one chunk in use, but spares held */
    assert_int_equal(arena_retained(&a), 3 * 1024 + 5000);
    assert_true(arena_check(&a));
    calls = tb.calls;
    for (i = 0; i < 3; i++) /* the spares serve the next batch */
        assert_non_null(arena_alloc(&a, 1000));
    assert_non_null(arena_alloc(&a, 5000));
    assert_int_equal(tb.calls, calls);
    assert_int_equal(arena_size(&a), 8000);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

static void test_reset_empty(void **state)
{
    arena a = {0};
    (void)state;
    arena_reset(&a);
    assert_int_equal(arena_retained(&a), 0);
    assert_true(arena_check(&a));
    assert_non_null(arena_alloc(&a, 1));
    arena_release(&a);
    arena_release(&a);
    assert_int_equal(arena_retained(&a), 0);
}

/* Static buffers: on main, a released buffer arena leaves its buffer
 * poisoned under ASan, so a stack buffer would trip the next function to use
 * that stack (the safety work opens it on release). */
static _Alignas(16) char buf1k[1024];
static _Alignas(16) char buf256[256];

static void test_release_stack_buffer(void **state)
{
    char *buf = buf1k;
    arena a;
    arena_mark m;
    char *first;
    size_t cap;
    int round;
    (void)state;

    record_errors();
    arena_init_buffer(&a, buf, sizeof buf1k, NULL);
    cap = arena_retained(&a);
    assert_int_equal(cap, sizeof buf1k);
    for (round = 0; round < 3; round++) {
        first = arena_calloc(&a, 1, 512);
        assert_ptr_equal(first, buf + TEST_LEAD);
        m = arena_save(&a);
        assert_non_null(arena_alloc(&a, 256));
        assert_null(arena_alloc(&a, 512)); /* fixed size: full */
        arena_release(&a);
        assert_int_equal(arena_size(&a), 0);
        assert_int_equal(arena_retained(&a), cap);
        assert_true(arena_check(&a));
        arena_rewind(&a, m); /* expired by the release */
        assert_int_equal(recorded_errors.count, round + 1);
        assert_int_equal(recorded_errors.last, ARENA_ERR_BAD_MARK);
    }
    arena_set_error_handler(NULL, NULL);
}

static void test_release_buffer_with_heap_chunks(void **state)
{
    char *buf = buf256;
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a;
    (void)state;

    arena_init_buffer(&a, buf, sizeof buf256, &al);
    assert_non_null(arena_alloc(&a, 200));
    assert_non_null(arena_alloc(&a, 200)); /* a heap chunk, and a heap index */
    assert_true(tb.live >= 2);
    arena_reset(&a); /* two chunks in use: slow path; the heap chunk is a spare */
    assert_non_null(arena_alloc(&a, 10));
    arena_release(&a); /* a spare and a heap index: slow path, frees both */
    assert_int_equal(tb.live, 0);
    assert_int_equal(arena_retained(&a), sizeof buf256);
    assert_ptr_equal(arena_alloc(&a, 16), buf + TEST_LEAD);
    assert_true(arena_check(&a));
    arena_release(&a);

    /* A heap arena with one chunk is freed, never taken for a buffer arena. */
    arena_init_with(&a, 512, &al);
    assert_non_null(arena_alloc(&a, 16));
    arena_release(&a);
    assert_int_equal(tb.live, 0);
    assert_int_equal(arena_retained(&a), 0);
}

/* Refs stored by the inline paths resolve to their copies, across chunks. */
static void test_refs_inline(void **state)
{
    arena a;
    arena_ref r[20], s, e;
    char data[32];
    int i;
    (void)state;

    for (i = 0; i < 32; i++)
        data[i] = (char)('a' + i);
    arena_init(&a, 256);
    for (i = 0; i < 20; i++) {
        data[0] = (char)i;
        r[i] = arena_ref_copy(&a, data, 32, 0);
        assert_false(arena_ref_empty(r[i]));
    }
    assert_int_equal(arena_size(&a), 20 * 32);
    for (i = 0; i < 20; i++) {
        const char *p = arena_ref_ptr(&a, r[i]);
        assert_non_null(p);
        assert_int_equal(arena_ref_len(r[i]), 32);
        assert_int_equal(p[0], (char)i);
        assert_memory_equal(p + 1, data + 1, 31);
        assert_int_equal((uintptr_t)p % ARENA_ALIGN, 0);
        if (i > 0) /* chunk by chunk, in order */
            assert_true(test_ref_chunk(r[i]) == test_ref_chunk(r[i - 1]) ||
                        test_ref_chunk(r[i]) == test_ref_chunk(r[i - 1]) + 1);
    }
    assert_true(test_ref_chunk(r[19]) >= 2); /* at most 8 values per 256-byte chunk */
    s = arena_ref_strndup(&a, "hello, world", 5);
    assert_string_equal(arena_ref_str(&a, s), "hello");
    assert_int_equal(arena_ref_len(s), 5);
    assert_int_equal(arena_size(&a), 20 * 32 + 6);
    e = arena_ref_strndup(&a, "x", 0);
    assert_true(arena_ref_empty(e));
    assert_string_equal(arena_ref_str(&a, e), "");
    e = arena_ref_copy(&a, data, 0, 0);
    assert_true(arena_ref_empty(e));
    e = arena_ref_copy(&a, data, 8, 3); /* not a power of two */
    assert_true(arena_ref_empty(e));
    assert_int_equal(arena_size(&a), 20 * 32 + 6);
    s = arena_ref_copy(&a, data, 7, 1);
    assert_memory_equal(arena_ref_ptr(&a, s), data, 7);
    assert_true(arena_check(&a));
    arena_release(&a);
}

/* The inline small-copy path (<= 32 bytes: overlapping fixed-width moves)
 * copies every length exactly and touches nothing around the value. */
static void test_small_copies(void **state)
{
    char src[64], *v[3][41];
    arena_ref r[41];
    arena a;
    size_t n, i, k;
    (void)state;

    for (i = 0; i < sizeof src; i++)
        src[i] = (char)(i * 7 + 1);
    arena_init(&a, 0);
    for (n = 0; n <= 40; n++) {
        v[0][n] = arena_copy(&a, src + n % 5, n, 1);
        v[1][n] = arena_strndup(&a, src + n % 3, n);
        v[2][n] = arena_copy(&a, src + 1, n, 0);
        r[n] = arena_ref_copy(&a, src + n % 7, n, 1);
        assert_non_null(v[0][n]);
        assert_non_null(v[1][n]);
        assert_non_null(v[2][n]);
    }
    /* Checked after all of them are stored: no copy spilled into another. */
    for (n = 0; n <= 40; n++) {
        for (k = 0; k < n; k++) {
            assert_int_equal(v[0][n][k], src[n % 5 + k]);
            assert_int_equal(v[1][n][k], src[n % 3 + k]);
            assert_int_equal(v[2][n][k], src[1 + k]);
        }
        assert_int_equal(v[1][n][n], '\0');
        if (n == 0) {
            assert_true(arena_ref_empty(r[n]));
        } else {
            assert_int_equal(arena_ref_len(r[n]), n);
            assert_memory_equal(arena_ref_ptr(&a, r[n]), src + n % 7, n);
        }
    }
    arena_release(&a);
}

/* Values whose size is a compile-time constant and not a multiple of their
 * alignment (24 bytes at ARENA_ALIGN) take the padding from the size field
 * without a branch; sizes the compiler cannot see take the branch.  Both
 * place every value at the same offset and count the same bytes, padding
 * excluded, in runs of such values and mixed with odd-length strings. */
static void test_padding_constant_sizes(void **state)
{
    static const char src[64] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!";
    arena c, v; /* constant sizes, sizes from a volatile */
    char *pc[6], *pv[6], *base_c = NULL, *base_v = NULL;
    arena_ref rc, rv;
    size_t expect = 0;
    int i, k;
    (void)state;

    arena_init(&c, 4096);
    arena_init(&v, 4096);
    for (i = 0; i < 40; i++) {
        pc[0] = arena_alloc(&c, 24);
        pv[0] = arena_alloc(&v, opaque_size(24));
        pc[1] = arena_copy(&c, src, 40, 0);
        pv[1] = arena_copy(&v, src, opaque_size(40), 0);
        pc[2] = arena_strndup(&c, src, 5);
        pv[2] = arena_strndup(&v, src, opaque_size(5));
        pc[3] = arena_alloc_aligned(&c, 12, 8);
        pv[3] = arena_alloc_aligned(&v, opaque_size(12), 8);
        pc[4] = (char *)arena_calloc(&c, 3, 6);
        pv[4] = (char *)arena_calloc(&v, 3, opaque_size(6));
        rc = arena_ref_copy(&c, src, 20, 4);
        rv = arena_ref_copy(&v, src, opaque_size(20), 4);
        pc[5] = (char *)arena_ref_ptr(&c, rc);
        pv[5] = (char *)arena_ref_ptr(&v, rv);
        expect += 24 + 40 + 6 + 12 + 18 + 20;
        if (i == 0) {
            base_c = pc[0];
            base_v = pv[0];
        }
        for (k = 0; k < 6; k++) {
            assert_non_null(pc[k]);
            assert_non_null(pv[k]);
            if (i < 8) /* in the first chunk: the same offsets in both arenas */
                assert_int_equal(pc[k] - base_c, pv[k] - base_v);
        }
        assert_true(is_aligned(pc[0], ARENA_ALIGN));
        assert_true(is_aligned(pc[1], ARENA_ALIGN));
        assert_true(is_aligned(pc[3], 8));
        assert_true(is_aligned(pc[4], ARENA_ALIGN));
        assert_true(is_aligned(pc[5], 4));
        assert_memory_equal(pc[1], src, 40);
        assert_string_equal(pc[2], "01234");
        assert_true(all_zero(pc[4], 18));
        assert_memory_equal(pc[5], src, 20);
        assert_int_equal(arena_ref_len(rc), 20);
        assert_int_equal(arena_size(&c), expect);
        assert_int_equal(arena_size(&v), expect);
    }
    assert_true(arena_check(&c));
    assert_true(arena_check(&v));
    arena_release(&c);
    arena_release(&v);
}

/* The default backing hands out cache-line-aligned chunks. */
static void test_default_chunks_line_aligned(void **state)
{
    arena a = {0};
    bool guarded;
    int i;
    (void)state;
    for (i = 0; i < 3; i++) { /* three chunks: every chunk's first value */
        char *p = arena_alloc(&a, ARENA_DEFAULT_CHUNK - 16);
        assert_non_null(p);
#if !defined(_WIN32)
        assert_int_equal((uintptr_t)(p - TEST_LEAD) % 64, 0);
#endif
    }
    assert_non_null(arena_alloc(&a, 3 * ARENA_DEFAULT_CHUNK)); /* oversized */
    guarded = arena_guarded(&a);
    arena_reset(&a);
    /* A guarded batch's chunks go to the quarantine, not to the spares. */
    assert_int_equal(arena_retained(&a), guarded ? 0 : 6 * ARENA_DEFAULT_CHUNK);
    arena_release(&a);
}

/* ---- The retention policy on the inline paths ------------------------------------- */

/* Two arenas run the same workload: `fast` ends its batches with arena_reset()
 * and arena_release(), inline where the window is open, `slow` with the
 * library's arena__reset_slow() and arena__release_slow().  The retention
 * policy must see every batch and every release the same way on both: after
 * each step they retain the same and have made the same backing calls. */
static test_backing tb_fast, tb_slow;

enum shape { ONE, BIG, X, Y, Z };

/* A batch: ONE fits a 4096-byte chunk; BIG takes several and 1 MB more;
 * X, Y and Z take chunks none of the others can use (3 of 100 KiB, one of
 * 250 KiB, 7 of 40 KiB), together more than twice what any one demands. */
static void shaped(arena *a, enum shape k)
{
    static const size_t size[] = {0, 500 * 1024, 100 * 1024, 250 * 1024, 40 * 1024};
    static const int count[] = {0, 2, 3, 1, 7};
    int i;
    for (i = 0; i < (k == BIG ? 10 : 20); i++)
        assert_non_null(arena_alloc(a, k == BIG ? 3000 : 100));
    for (i = 0; i < count[k]; i++)
        assert_non_null(arena_alloc(a, size[k]));
}

static void both_agree(arena *fast, arena *slow)
{
    assert_int_equal(arena_retained(fast), arena_retained(slow));
    assert_int_equal(tb_fast.calls, tb_slow.calls);
    assert_int_equal(tb_fast.frees, tb_slow.frees);
    assert_true(arena_check(fast));
    assert_true(arena_check(slow));
}

/* `n` batches of shape k on both, each ended by a reset. */
static void batches(arena *fast, arena *slow, enum shape k, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        shaped(fast, k);
        shaped(slow, k);
        arena_reset(fast);
        arena__reset_slow(slow);
        both_agree(fast, slow);
    }
}

/* Cycles of X, Y and Z: what is kept follows the history, which the
 * one-chunk batches before them (inline on `fast`) and a release shape. */
static void cycles(arena *fast, arena *slow, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        batches(fast, slow, X, 1);
        batches(fast, slow, Y, 1);
        batches(fast, slow, Z, 1);
    }
}

static void test_inline_resets_and_releases_count_for_retention(void **state)
{
    static _Alignas(16) char buf_fast[4096], buf_slow[4096];
    arena_allocator af = tb_allocator(&tb_fast), as = tb_allocator(&tb_slow);
    arena fast, slow;
    (void)state;

    /* A batch cut by a limit to one chunk, one-chunk batches, then shapes
     * whose chunks outgrow twice the demand of each. */
    arena_init_with(&fast, 4096, &af);
    arena_init_with(&slow, 4096, &as);
    batches(&fast, &slow, BIG, 2);
    shaped(&fast, BIG);
    shaped(&slow, BIG);
    arena_reset_to(&fast, 4096);
    arena_reset_to(&slow, 4096);
    both_agree(&fast, &slow);
    assert_int_equal(arena_retained(&fast), 4096);
    batches(&fast, &slow, ONE, ARENA_RETAIN_BATCHES + 40);
    cycles(&fast, &slow, 40);
    arena_release(&fast);
    arena__release_slow(&slow);
    both_agree(&fast, &slow);

    /* A caller's buffer: a batch cut to it, one-chunk batches, a release of
     * the buffer alone (inline on `fast`), then the same shapes. */
    arena_init_buffer(&fast, buf_fast, sizeof buf_fast, &af);
    arena_init_buffer(&slow, buf_slow, sizeof buf_slow, &as);
    batches(&fast, &slow, BIG, 2);
    shaped(&fast, BIG);
    shaped(&slow, BIG);
    arena_reset_to(&fast, 0);
    arena_reset_to(&slow, 0);
    both_agree(&fast, &slow);
    batches(&fast, &slow, ONE, 30);
    arena_release(&fast);
    arena__release_slow(&slow);
    both_agree(&fast, &slow);
    cycles(&fast, &slow, 40);
    batches(&fast, &slow, ONE, ARENA_RETAIN_BATCHES + 40);
    arena_release(&fast);
    arena__release_slow(&slow);
    both_agree(&fast, &slow);
    assert_int_equal(tb_fast.live, 0);
    assert_int_equal(tb_slow.live, 0);
}

/* ---- The inline rewind ------------------------------------------------------------- */

/* Rewinds `a` to `m` as arena_rewind() does, and checks the result against
 * the library's rewind of the same state, byte for byte: the inline path is
 * taken exactly when `expect` says (where the window is open), and leaves
 * what the library would; where it is not taken it changes nothing. */
static void rewind_both_ways(arena *a, arena_mark m, bool expect)
{
    arena before, fast;
    bool open = a->ptr != NULL, took;

    memcpy(&before, a, sizeof before);
    took = arena__rewind_window(a, m);
    assert_int_equal(took, expect && open);
    memcpy(&fast, a, sizeof fast);
    if (!took)
        assert_memory_equal(&fast, &before, sizeof fast);
    memcpy(a, &before, sizeof before);
    arena__rewind_slow(a, m);
    if (took)
        assert_memory_equal(&fast, a, sizeof fast);
}

static void test_rewind_inline_as_the_library(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a, before;
    arena_mark m, m2;
    char *p, *q;
    (void)state;

    record_errors();
    arena_init_with(&a, 4096, &al);
    p = arena_alloc(&a, 100);
    assert_non_null(p);

    /* The latest mark, in the window's chunk: inline, and again. */
    m = arena_save(&a);
    q = arena_alloc(&a, 50);
    assert_non_null(arena_strndup(&a, "label", 5));
    rewind_both_ways(&a, m, true);
    assert_int_equal(arena_size(&a), 100);
    assert_ptr_equal(arena_alloc(&a, 50), q);
    rewind_both_ways(&a, m, true);
    assert_ptr_equal(arena_alloc(&a, 50), q);
    rewind_both_ways(&a, m, true);

    /* The value before the mark given back below it: the library moves the
     * position back up to the mark's. */
    arena_free(&a, p, 100);
    rewind_both_ways(&a, m, false);
    assert_int_equal(arena_size(&a), 100);
    assert_ptr_equal(arena_alloc(&a, 50), q);

    /* A mark taken after it: not the latest.  That rewind expires m2. */
    m2 = arena_save(&a);
    assert_non_null(arena_alloc(&a, 10));
    rewind_both_ways(&a, m, false);
    assert_int_equal(recorded_errors.count, 0);
    memcpy(&before, &a, sizeof before);
    arena_rewind(&a, m2);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_BAD_MARK);
    assert_memory_equal(&a, &before, sizeof before);
    rewind_both_ways(&a, m, false); /* m's serial is no longer the arena's latest */

    /* A value that takes a chunk of its own: the library drops it. */
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 5000));
    rewind_both_ways(&a, m, false);
    assert_int_equal(arena_size(&a), 100);

    /* A library call in the same chunk (an alignment above ARENA_ALIGN)
     * folds the window's run past the mark. */
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 16));
    assert_non_null(arena_alloc_aligned(&a, 8, 2 * ARENA_ALIGN));
    rewind_both_ways(&a, m, false);
    assert_int_equal(arena_size(&a), 100);

    /* A mark a reset expired: reported, the arena unchanged. */
    m = arena_save(&a);
    arena_reset(&a);
    memcpy(&before, &a, sizeof before);
    arena_rewind(&a, m);
    assert_int_equal(recorded_errors.count, 2);
    assert_memory_equal(&a, &before, sizeof before);
    rewind_both_ways(&a, m, false); /* the library's reports it again */
    assert_int_equal(recorded_errors.count, 3);

    /* The library's exported copies (for programs built against a header
     * where these were calls) do the same. */
    m = arena_save(&a);
    q = arena_alloc(&a, 40);
    exported_rewind(&a, m);
    assert_int_equal(arena_size(&a), 0);
    assert_ptr_equal(arena_alloc(&a, 40), q);
    {
        arena_scope s = arena_scope_begin(&a);
        assert_non_null(arena_alloc(&a, 40));
        exported_scope_end(&s);
        assert_int_equal(arena_size(&a), 40);
    }
    exported_rewind(&a, m2); /* expired long ago */
    assert_int_equal(recorded_errors.count, 4);
    assert_true(arena_check(&a));
    arena_release(&a);
    assert_int_equal(tb.live, 0);
    arena_set_error_handler(NULL, NULL);
}

/* A scope on a stack buffer: the rewind is inline, so the library's
 * bookkeeping stays unwritten (`lazy`) where the inline init left it so. */
static void test_rewind_inline_on_a_stack_buffer(void **state)
{
    alignas(64) char buf[1024];
    arena a;
    arena_mark m;
    char *q;
    bool lazy;
    (void)state;

    arena_init_buffer(&a, buf, sizeof buf, NULL);
    lazy = a.lazy != 0;
    assert_non_null(arena_alloc(&a, 10));
    m = arena_save(&a);
    q = arena_alloc(&a, 100);
    assert_non_null(q);
    arena_rewind(&a, m);
    assert_int_equal(arena_size(&a), 10);
    assert_ptr_equal(arena_alloc(&a, 100), q);
    {
        arena_scope s = arena_scope_begin(&a);
        assert_non_null(arena_alloc(&a, 500));
        arena_scope_end(&s);
    }
    assert_int_equal(arena_size(&a), 110);
    assert_int_equal(a.lazy != 0, lazy);
    arena_release(&a);
}

/* A scope begun on an empty arena: its rewind leaves the first chunk current
 * and empty, so the next such scope stores into it again, with no backing
 * call, and ends inline. */
static void test_scope_on_an_empty_arena_keeps_its_chunk(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a;
    char *p;
    size_t calls;
    (void)state;

    arena_init_with(&a, 4096, &al);
    {
        arena_scope s = arena_scope_begin(&a);
        p = arena_alloc(&a, 64);
        assert_non_null(p);
        arena_scope_end(&s);
    }
    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(arena_retained(&a), 4096);
    calls = tb.calls;
    for (int i = 0; i < 3; i++) {
        arena_scope s = arena_scope_begin(&a);
        assert_ptr_equal(arena_alloc(&a, 64), p);
        assert_int_equal(arena__rewind_window(&a, s.mark), a.ptr != NULL);
        arena_scope_end(&s);
        assert_int_equal(arena_size(&a), 0);
    }
    assert_int_equal(tb.calls, calls);
    assert_true(arena_check(&a));
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reset_one_chunk),
        cmocka_unit_test(test_reset_keeps_the_chunks_used),
        cmocka_unit_test(test_reset_empty),
        cmocka_unit_test(test_release_stack_buffer),
        cmocka_unit_test(test_release_buffer_with_heap_chunks),
        cmocka_unit_test(test_default_chunks_line_aligned),
        cmocka_unit_test(test_inline_resets_and_releases_count_for_retention),
        cmocka_unit_test(test_refs_inline),
        cmocka_unit_test(test_small_copies),
        cmocka_unit_test(test_padding_constant_sizes),
        cmocka_unit_test(test_rewind_inline_as_the_library),
        cmocka_unit_test(test_rewind_inline_on_a_stack_buffer),
        cmocka_unit_test(test_scope_on_an_empty_arena_keeps_its_chunk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
