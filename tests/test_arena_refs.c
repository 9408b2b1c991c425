/* SPDX-License-Identifier: MIT */
/*
 * Refs: 12 pointer-free bytes per value (arena.h, "Refs").
 */
#include "support.h"

#include <stdalign.h>
#include <stdio.h>

static test_backing tb;

static void init_tb(arena *a, size_t chunk_size)
{
    arena_allocator al = tb_allocator(&tb);
    arena_init_with(a, chunk_size, &al);
}

static void release_tb(arena *a)
{
    arena_release(a);
    assert_int_equal(arena_retained(a), 0);
    assert_int_equal(tb.live, 0);
}

/* The layout the contract promises, at compile time. */
_Static_assert(sizeof(arena_ref) == 12, "a ref is 12 bytes");
_Static_assert(ARENA_REF_MAX == INT32_MAX, "ARENA_REF_MAX is INT32_MAX");

static void test_empty_ref(void **state)
{
    arena a;
    arena_ref zero;
    (void)state;

    memset(&zero, 0, sizeof zero);
    arena_init(&a, 1000);
    assert_true(arena_ref_empty(zero));
    assert_int_equal(arena_ref_len(zero), 0);
    assert_null(arena_ref_ptr(&a, zero));
    assert_non_null(arena_ref_str(&a, zero));
    assert_string_equal(arena_ref_str(&a, zero), "");
    {
        arena_ref braces = {0, 0, 0};
        assert_true(arena_ref_empty(braces));
    }
    /* The empty ref resolves to NULL / "" in an arena that holds nothing. */
    {
        arena z = {0};
        assert_null(arena_ref_ptr(&z, zero));
        assert_string_equal(arena_ref_str(&z, zero), "");
    }
    /* Storing size 0 gives the empty ref, all bytes zero. */
    {
        arena_ref r = arena_ref_copy(&a, "abc", 0, 1);
        assert_memory_equal(&r, &zero, sizeof r);
        r = arena_ref_strndup(&a, "abc", 0);
        assert_memory_equal(&r, &zero, sizeof r);
        assert_string_equal(arena_ref_str(&a, r), "");
    }
    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(arena_retained(&a), 0);
    arena_release(&a);
}

static void test_ref_copy_and_strndup(void **state)
{
    arena a;
    arena_ref r, s, t;
    unsigned char src[300];
    size_t align;
    (void)state;

    init_tb(&a, 1000);
    fill_pattern(src, sizeof src, 1);
    r = arena_ref_copy(&a, src, 300, 0);
    assert_false(arena_ref_empty(r));
    assert_int_equal(arena_ref_len(r), 300);
    assert_true(is_aligned(arena_ref_ptr(&a, r), ARENA_ALIGN));
    assert_memory_equal(arena_ref_ptr(&a, r), src, 300);
    assert_int_equal(arena_size(&a), 300);

    /* Strings: the length without the NUL, NUL-terminated in the arena,
     * embedded NULs copied. */
    s = arena_ref_strndup(&a, "key\0value", 9);
    assert_int_equal(arena_ref_len(s), 9);
    assert_memory_equal(arena_ref_ptr(&a, s), "key\0value\0", 10);
    assert_string_equal(arena_ref_str(&a, s), "key");
    assert_int_equal(arena_size(&a), 300 + 10);
    t = arena_ref_strndup(&a, "hello, world", 5);
    assert_string_equal(arena_ref_str(&a, t), "hello");
    assert_int_equal(arena_ref_len(t), 5);
    assert_int_equal(arena_size(&a), 300 + 10 + 6);
    assert_ptr_equal(arena_ref_str(&a, t), arena_ref_ptr(&a, t));

    /* Alignment, including above ARENA_ALIGN. */
    for (align = 1; align <= 8192; align <<= 1) {
        arena_ref x = arena_ref_copy(&a, src, 33, align);
        assert_false(arena_ref_empty(x));
        assert_true(is_aligned(arena_ref_ptr(&a, x), align));
        assert_memory_equal(arena_ref_ptr(&a, x), src, 33);
    }

    /* The copy is independent of the source. */
    src[0] ^= 0xFF;
    assert_true(has_pattern(arena_ref_ptr(&a, r), 300, 1));
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* The same sequence of stores in two arenas yields byte-identical refs: a ref
 * holds no address.  A ref written out as bytes and read back resolves. */
static void test_refs_hold_no_pointer(void **state)
{
    static test_backing tb2;
    arena a, b;
    arena_ref ra[300], rb[300];
    unsigned char bytes[sizeof ra];
    arena_allocator al2 = tb_allocator(&tb2);
    size_t i;
    (void)state;

    init_tb(&a, 512);
    arena_init_with(&b, 512, &al2);
    {
        for (i = 0; i < 300; i++) {
            unsigned char v[700];
            size_t n = 1 + (i * 131) % 700; /* some oversized */
            fill_pattern(v, n, i);
            if (i % 3 == 0) {
                ra[i] = arena_ref_strndup(&a, (const char *)v, n);
                rb[i] = arena_ref_strndup(&b, (const char *)v, n);
            } else {
                ra[i] = arena_ref_copy(&a, v, n, (size_t)1 << (i % 5));
                rb[i] = arena_ref_copy(&b, v, n, (size_t)1 << (i % 5));
            }
        }
    }
    assert_memory_equal(ra, rb, sizeof ra);
    assert_true(arena_ref_ptr(&a, ra[5]) != arena_ref_ptr(&b, rb[5]));

    memcpy(bytes, ra, sizeof ra);
    memset(ra, 0, sizeof ra);
    memcpy(ra, bytes, sizeof ra);
    for (i = 0; i < 300; i++) {
        size_t n = 1 + (i * 131) % 700;
        assert_int_equal(arena_ref_len(ra[i]), n);
        assert_true(has_pattern(arena_ref_ptr(&a, ra[i]), n, i));
        assert_true(has_pattern(arena_ref_ptr(&b, ra[i]), n, i));
        if (i % 3 == 0)
            assert_int_equal(((const char *)arena_ref_ptr(&a, ra[i]))[n], '\0');
    }
    release_tb(&a);
    arena_release(&b);
    assert_int_equal(tb2.live, 0);
}

#define MANY    5000
#define LOOKUPS 400

/* Thousands of tiny chunks: every ref resolves, and resolving is O(1) (the
 * loop below does 2 million look-ups: a walk of the chunk list would cost
 * billions of steps and trip the test's timeout). */
static void test_refs_across_thousands_of_chunks(void **state)
{
    static arena_ref refs[MANY];
    static void *where[MANY];
    arena a;
    size_t i, k, sum = 0;
    (void)state;

    init_tb(&a, 64);
    for (i = 0; i < MANY; i++) {
        unsigned char v[40];
        fill_pattern(v, sizeof v, i);
        refs[i] = arena_ref_copy(&a, v, 40, 16); /* one per 64-byte chunk */
        assert_false(arena_ref_empty(refs[i]));
        where[i] = arena_ref_ptr(&a, refs[i]);
        /* earlier refs stay valid while the chunk index grows */
        if (i % 97 == 0 && i > 0)
            assert_ptr_equal(arena_ref_ptr(&a, refs[i / 2]), where[i / 2]);
    }
    assert_true(arena_retained(&a) >= (size_t)MANY * 40);
    assert_true(tb.live >= MANY);
    for (i = 0; i < MANY; i++) {
        assert_ptr_equal(arena_ref_ptr(&a, refs[i]), where[i]);
        assert_true(has_pattern(where[i], 40, i));
    }
    for (k = 0; k < LOOKUPS; k++) {
        for (i = 0; i < MANY; i++)
            sum += (size_t)((const unsigned char *)arena_ref_ptr(&a, refs[i]))[k % 40];
    }
    assert_true(sum > 0);
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* Refs from before a mark survive a rewind that frees chunks after it, and
 * storing more afterwards. */
static void test_refs_survive_rewind_of_later_values(void **state)
{
    arena a;
    arena_ref keep[50];
    arena_mark m;
    size_t i;
    (void)state;

    init_tb(&a, 256);
    for (i = 0; i < 50; i++) {
        unsigned char v[500];
        size_t n = i % 5 == 0 ? 500 : 30; /* some oversized */
        fill_pattern(v, n, i);
        keep[i] = arena_ref_copy(&a, v, n, 0);
    }
    m = arena_save(&a);
    for (i = 0; i < 100; i++) {
        unsigned char v[400];
        fill_pattern(v, sizeof v, 1000 + i);
        assert_false(arena_ref_empty(arena_ref_copy(&a, v, i % 2 ? 400 : 20, 0)));
    }
    arena_rewind(&a, m);
    for (i = 0; i < 200; i++)
        assert_false(arena_ref_empty(arena_ref_strndup(&a, "after the rewind", 16)));
    for (i = 0; i < 50; i++)
        assert_true(has_pattern(arena_ref_ptr(&a, keep[i]), i % 5 == 0 ? 500 : 30, i));
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* Refs into the caller's buffer (chunk 0) and into chunks after it. */
static void test_refs_in_buffer_arena(void **state)
{
    alignas(16) char buf[200];
    arena a;
    arena_ref r[20];
    arena_allocator al = tb_allocator(&tb);
    size_t i;
    (void)state;

    arena_init_buffer(&a, buf, sizeof buf, &al);
    for (i = 0; i < 20; i++) {
        char v[32];
        fill_pattern(v, sizeof v, i);
        r[i] = arena_ref_copy(&a, v, sizeof v, 1);
    }
    assert_true((char *)arena_ref_ptr(&a, r[0]) >= buf &&
                (char *)arena_ref_ptr(&a, r[0]) < buf + sizeof buf);
    for (i = 0; i < 20; i++)
        assert_true(has_pattern(arena_ref_ptr(&a, r[i]), 32, i));
    arena_release(&a);
    assert_int_equal(arena_retained(&a), sizeof buf); /* buf stays attached */
    assert_int_equal(tb.live, 0);
}

/* A value too large for a ref is refused through the handler, and nothing is
 * stored.  (A large size with a small src: it must be refused before any read.) */
static void test_ref_too_large_refused(void **state)
{
    arena a;
    char small[8] = "abcdefg";
    char *v;
    size_t size, retained, calls;
    arena_ref r;
    char expect_ptr[32];
    /* Every one is above ARENA_REF_MAX on 32- and 64-bit targets alike. */
    static const size_t too_large[] = {(size_t)ARENA_REF_MAX + 1, (size_t)UINT32_MAX,
                                       SIZE_MAX / 2 + 1, SIZE_MAX};
    size_t i;
    (void)state;

    init_tb(&a, 1000);
    v = (char *)arena_alloc(&a, 16);
    fill_pattern(v, 16, 4);
    size = arena_size(&a);
    retained = arena_retained(&a);
    calls = tb.calls;

    for (i = 0; i < sizeof too_large / sizeof too_large[0]; i++) {
        int before = recorded_errors.count;
        r = arena_ref_copy(&a, small, too_large[i], 1);
        assert_true(arena_ref_empty(r));
        assert_int_equal(recorded_errors.count, before + 1);
        assert_int_equal(recorded_errors.last, ARENA_ERR_REF_TOO_LARGE);
        assert_non_null(strstr(recorded_errors.message, "arena_ref_copy"));
        snprintf(expect_ptr, sizeof expect_ptr, "%p", (void *)small);
        assert_non_null(strstr(recorded_errors.message, expect_ptr));

        r = arena_ref_strndup(&a, small, too_large[i]);
        assert_true(arena_ref_empty(r));
        assert_int_equal(recorded_errors.count, before + 2);
        assert_int_equal(recorded_errors.last, ARENA_ERR_REF_TOO_LARGE);
        assert_non_null(strstr(recorded_errors.message, "arena_ref_strndup"));
    }
    /* A string of ARENA_REF_MAX bytes needs ARENA_REF_MAX + 1 with its NUL. */
    r = arena_ref_strndup(&a, small, ARENA_REF_MAX);
    assert_true(arena_ref_empty(r));
    assert_int_equal(recorded_errors.last, ARENA_ERR_REF_TOO_LARGE);
    assert_int_equal(tb.calls, calls); /* refused before asking for memory */
    assert_int_equal(arena_size(&a), size);
    assert_int_equal(arena_retained(&a), retained);
    assert_true(has_pattern(v, 16, 4));

    /* At the limit a ref is not refused: the backing is asked (and, being
     * above TB_HUGE, says no), which is out-of-memory, not misuse.  (Where
     * the chunk cannot exist, the arena says so without asking.) */
    {
        int before = recorded_errors.count;
        r = arena_ref_copy(&a, small, ARENA_REF_MAX, 1);
        assert_true(arena_ref_empty(r));
        r = arena_ref_strndup(&a, small, ARENA_REF_MAX - 1);
        assert_true(arena_ref_empty(r));
        assert_int_equal(recorded_errors.count, before);
        if (TEST_REF_MAX_CHUNK_ASKED) {
            assert_true(tb.calls > calls);
            assert_true(tb.max_request >= ARENA_REF_MAX);
        } else {
            assert_int_equal(tb.calls, calls);
        }
    }
    assert_int_equal(arena_size(&a), size);
    assert_int_equal(arena_retained(&a), retained);
    assert_true(arena_check(&a));

    /* arena_copy has no such limit: it is not refused as misuse. */
    {
        int before = recorded_errors.count;
        assert_null(arena_copy(&a, small, opaque_size((size_t)ARENA_REF_MAX + 1), 1));
        assert_int_equal(recorded_errors.count, before);
    }
    release_tb(&a);
}

/* Out-of-memory while storing a ref: the empty ref, nothing changed. */
static void test_ref_out_of_memory(void **state)
{
    arena a;
    arena_ref r, ok;
    size_t size, retained;
    (void)state;

    init_tb(&a, 100);
    ok = arena_ref_strndup(&a, "kept", 4);
    size = arena_size(&a);
    retained = arena_retained(&a);
    tb.fail_from = tb.calls + 1;
    r = arena_ref_copy(&a, "0123456789", 10, 1); /* fits: no backing needed */
    assert_false(arena_ref_empty(r));
    size += 10;
    r = arena_ref_copy(&a, tb.blocks, 200, 1); /* oversized: needs a chunk */
    assert_true(arena_ref_empty(r));
    r = arena_ref_strndup(&a, (const char *)tb.blocks, 150);
    assert_true(arena_ref_empty(r));
    while (!arena_ref_empty(arena_ref_copy(&a, "x", 1, 1)))
        size += 1;
    assert_int_equal(recorded_errors.count, 0);
    assert_int_equal(arena_size(&a), size);
    assert_int_equal(arena_retained(&a), retained);
    assert_string_equal(arena_ref_str(&a, ok), "kept");
    tb.fail_from = 0;
    r = arena_ref_copy(&a, "x", 1, 1);
    assert_false(arena_ref_empty(r));
    assert_int_equal(*(const char *)arena_ref_ptr(&a, r), 'x');
    release_tb(&a);
}

#if ARENA_CHECKED
/* Checked builds report a ref from before the last reset, release or rewind. */
static void test_stale_refs_reported(void **state)
{
    arena a;
    arena_ref r, live;
    arena_mark m;
    (void)state;

    init_tb(&a, 64);
    live = arena_ref_strndup(&a, "live", 4);
    m = arena_save(&a);
    r = arena_ref_copy(&a, tb.blocks, 40, 1);
    assert_non_null(arena_ref_ptr(&a, r));
    r = arena_ref_copy(&a, tb.blocks, 40, 1); /* a chunk after the mark */
    arena_rewind(&a, m);
    assert_null(arena_ref_ptr(&a, r));
    assert_int_equal(recorded_errors.last, ARENA_ERR_STALE_REF);
    assert_string_equal(arena_ref_str(&a, live), "live");

    arena_reset(&a);
    recorded_errors.count = 0;
    assert_null(arena_ref_ptr(&a, live));
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_STALE_REF);
    release_tb(&a);
}
#endif

#define T(f) cmocka_unit_test_setup_teardown(f, setup_record_errors, teardown_record_errors)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_empty_ref),
        T(test_ref_copy_and_strndup),
        T(test_refs_hold_no_pointer),
        T(test_refs_across_thousands_of_chunks),
        T(test_refs_survive_rewind_of_later_values),
        T(test_refs_in_buffer_arena),
        T(test_ref_too_large_refused),
        T(test_ref_out_of_memory),
#if ARENA_CHECKED
        T(test_stale_refs_reported),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
