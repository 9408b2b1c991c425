/* SPDX-License-Identifier: MIT */
/* The trim policy of every arena: arena_reset_to() and arena_trim(). */
#include "support.h"

/* Fills `n` chunks of an arena of 1000-byte chunks, one 600-byte value each. */
static void fill_chunks(arena *a, int n)
{
    for (int i = 0; i < n; i++)
        assert_non_null(arena_alloc(a, 600));
}

static void test_reset_to_keeps_whole_chunks_up_to_the_limit(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a;
    (void)state;
    arena_init_with(&a, 1000, &al);
    fill_chunks(&a, 5);
    assert_int_equal(arena_retained(&a), 5000);

    arena_reset_to(&a, 2999);
    assert_int_equal(arena_retained(&a), 2000);
    assert_int_equal(arena_size(&a), 0);
    assert_true(arena_check(&a));

    /* The kept chunks serve the next batch without any allocation. */
    size_t calls = tb.calls;
    fill_chunks(&a, 2);
    assert_int_equal(tb.calls, calls);

    arena_reset_to(&a, 3000); /* holds only 2000: nothing to free */
    assert_int_equal(arena_retained(&a), 2000);
    arena_reset_to(&a, 1000);
    assert_int_equal(arena_retained(&a), 1000);
    arena_reset_to(&a, SIZE_MAX);
    assert_int_equal(arena_retained(&a), 1000);

    /* Below one chunk: everything goes back, bookkeeping included. */
    fill_chunks(&a, 12);
    arena_reset_to(&a, 999);
    assert_int_equal(arena_retained(&a), 0);
    assert_int_equal(tb.live, 0);
    assert_true(arena_check(&a));
    assert_non_null(arena_alloc(&a, 10)); /* usable again */
    assert_int_equal(arena_retained(&a), 1000);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

static void test_reset_to_keeps_oversized_chunks_within_the_limit(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a;
    size_t calls;
    (void)state;
    arena_init_with(&a, 1000, &al);
    fill_chunks(&a, 2);
    assert_non_null(arena_alloc(&a, 50000));
    assert_int_equal(arena_retained(&a), 52000);
    arena_reset_to(&a, 100000); /* within the limit: all kept, all reused */
    assert_int_equal(arena_retained(&a), 52000);
    assert_true(arena_check(&a));
    calls = tb.calls;
    fill_chunks(&a, 2);
    assert_non_null(arena_alloc(&a, 50000));
    assert_int_equal(tb.calls, calls);
    arena_reset_to(&a, 51999); /* whole chunks, in order, while they fit */
    assert_int_equal(arena_retained(&a), 2000);
    assert_true(arena_check(&a));
    arena_release(&a);
    assert_int_equal(tb.live, 0);

    /* An oversized chunk first, a uniform one after: the limit keeps the
     * chunks that fit it, whatever comes before them. */
    assert_non_null(arena_alloc(&a, 5000));
    arena_reset_to(&a, SIZE_MAX);
    assert_int_equal(arena_retained(&a), 5000);
    assert_int_equal(tb.live, 1);
    assert_non_null(arena_alloc(&a, 10));
    assert_int_equal(arena_retained(&a), 6000);
    arena_reset_to(&a, 1000);
    assert_int_equal(arena_retained(&a), 1000);
    assert_int_equal(arena_size(&a), 0);
    arena_reset_to(&a, 999);
    assert_int_equal(arena_retained(&a), 0);
    assert_int_equal(tb.live, 0);
    assert_true(arena_check(&a));
}

static void test_reset_to_keeps_the_callers_buffer(void **state)
{
    /* static: under ASan the attached buffer stays poisoned after the test */
    static _Alignas(16) char buf[512];
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a;
    (void)state;
    arena_init_buffer(&a, buf, sizeof buf, &al);
    assert_non_null(arena_alloc(&a, 500));
    assert_non_null(arena_alloc(&a, 500)); /* a default chunk from the backing */
    assert_int_equal(arena_retained(&a), 512 + ARENA_DEFAULT_CHUNK);
    arena_reset_to(&a, 0);
    assert_int_equal(arena_retained(&a), 512);
    assert_int_equal(tb.live, 0);
    assert_ptr_equal(arena_alloc(&a, 16), buf + TEST_LEAD);
    assert_true(arena_check(&a));
    arena_release(&a);
}

static void test_trim_frees_only_spares(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a;
    (void)state;
    arena_init_with(&a, 1000, &al);
    char *keep = (char *)arena_alloc(&a, 600);
    assert_non_null(keep);
    memset(keep, 'k', 600);
    arena_mark m = arena_save(&a);
    fill_chunks(&a, 4);
    arena_rewind(&a, m); /* 4 spares */
    assert_int_equal(arena_retained(&a), 5000);

    arena_trim(&a, 2500);
    assert_int_equal(arena_retained(&a), 2000);
    arena_trim(&a, 0);
    assert_int_equal(arena_retained(&a), 1000); /* the chunk in use stays */
    assert_int_equal(tb.live, 1);
    for (int i = 0; i < 600; i++)
        assert_int_equal(keep[i], 'k');
    assert_int_equal(arena_size(&a), 600);
    assert_true(arena_check(&a));

    /* The mark is still valid, and allocation goes on. */
    arena_rewind(&a, m);
    assert_int_equal(arena_size(&a), 600);
    fill_chunks(&a, 2);
    assert_int_equal(arena_retained(&a), 3000);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

static void test_trim_of_an_arena_without_values(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a;
    (void)state;
    record_errors();
    arena_init_with(&a, 1000, &al);
    arena_trim(&a, 0); /* empty: nothing happens */
    assert_int_equal(arena_retained(&a), 0);
    arena_mark empty = arena_save(&a);
    char *first = arena_alloc(&a, 600);
    assert_non_null(first);
    fill_chunks(&a, 2);
    arena_rewind(&a, empty);
    assert_int_equal(arena_size(&a), 0);
    arena_trim(&a, SIZE_MAX);
    assert_int_equal(arena_retained(&a), 3000);
    /* The rewind left the first chunk current and empty, as a reset does:
     * a trim frees the spares, not it, and the index goes back into the
     * struct (one block live: that chunk). */
    arena_trim(&a, 0);
    assert_int_equal(arena_retained(&a), 1000);
    assert_int_equal(tb.live, 1);
    assert_true(arena_check(&a));
    /* The next value goes where the first did, with no backing call; the
     * mark is still valid. */
    size_t calls = tb.calls;
    assert_ptr_equal(arena_alloc(&a, 600), first);
    assert_int_equal(tb.calls, calls);
    arena_rewind(&a, empty);
    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(recorded_errors.count, 0);
    fill_chunks(&a, 2);
    assert_true(arena_check(&a));
    arena_release(&a);
    assert_int_equal(tb.live, 0);
    arena_set_error_handler(NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reset_to_keeps_whole_chunks_up_to_the_limit),
        cmocka_unit_test(test_reset_to_keeps_oversized_chunks_within_the_limit),
        cmocka_unit_test(test_reset_to_keeps_the_callers_buffer),
        cmocka_unit_test(test_trim_frees_only_spares),
        cmocka_unit_test(test_trim_of_an_arena_without_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
