/* SPDX-License-Identifier: MIT */
/*
 * Child arenas (arena_init_child()): chunks come from the parent and go back
 * to it, the child dies with the parent's batch and with a scope of the
 * parent, it may be made in a cleanup of its parent, and 10^5 child cycles
 * cost the parent no backing call once warm.
 */
#include "cleanup_log.h"

static test_backing tb;

static void test_child_basics(void **state)
{
    arena parent, child;
    arena_allocator al = tb_allocator(&tb);
    static const int one[] = {1};
    char *p;
    (void)state;
    arena_init_with(&parent, 1 << 16, &al);
    assert_non_null(arena_alloc(&parent, 100));
    arena_init_child(&child, &parent, 0);
    assert_false(has_cleanups(&parent)); /* tied at its first chunk */
    p = arena_strdup(&child, "temporary");
    assert_non_null(p);
    assert_true(has_cleanups(&parent));
    assert_int_equal(arena_retained(&child), (1 << 16) / 4);
    arena_reset(&child); /* keeps its chunk, and its tie */
    assert_true(has_cleanups(&parent));
    arena_release(&child); /* gives it back, cancels the tie */
    assert_false(has_cleanups(&parent));
    assert_int_equal(arena_retained(&child), 0);

    /* The child dies with the parent's batch, its own cleanups first. */
    assert_non_null(arena_alloc(&child, 5000));
    push_id(&child, 1);
    arena_reset(&parent);
    expect_log(one, 1);
    assert_int_equal(arena_retained(&child), 0);
    assert_false(has_cleanups(&parent));
    /* ... and may be used again, in the parent's next batch. */
    assert_non_null(arena_alloc(&child, 10));
    arena_release(&parent); /* releases the child too */
    assert_int_equal(arena_retained(&child), 0);
    assert_int_equal(tb.live, 0);
}

static void test_child_in_parent_memory(void **state)
{
    arena parent = {0};
    arena *child;
    arena_mark m;
    int i;
    (void)state;
    m = arena_save(&parent);
    child = ARENA_NEW(&parent, arena);
    assert_non_null(child);
    arena_init_child(child, &parent, 1024);
    for (i = 0; i < 50; i++) /* many chunks: an index of the parent's too */
        assert_non_null(arena_alloc(child, 700));
    arena_rewind(&parent, m); /* the child was made after the mark */
    assert_false(has_cleanups(&parent));
    arena_release(&parent);
}

/* A scope of the parent begun after the child's first chunk, in which the
 * child takes more of the parent's memory: the scope's end forgets that
 * memory, so it ends the child too (its own cleanups first), and the
 * parent's next values may take the place of the child's. */
static void test_child_dies_with_parent_scope(void **state)
{
    static const int one[] = {1};
    arena parent, child;
    arena_allocator al = tb_allocator(&tb);
    arena_mark m;
    unsigned char *first, *later, *p;
    (void)state;
    arena_init_with(&parent, 4096, &al);
    arena_init_child(&child, &parent, 256);
    first = (unsigned char *)arena_alloc(&child, 16); /* the first chunk: the tie */
    assert_non_null(first);
    m = arena_save(&parent);
    later = (unsigned char *)arena_alloc(&child, 200);
    later = (unsigned char *)arena_alloc(&child, 200); /* a chunk (and an index) after m */
    assert_non_null(later);
    push_id(&child, 1);
    arena_rewind(&parent, m);
    expect_log(one, 1);
    assert_int_equal(arena_retained(&child), 0);
    assert_int_equal(arena_size(&child), 0);
    p = (unsigned char *)arena_alloc(&parent, 600); /* where the child's chunk was */
    assert_non_null(p);
    memset(p, 0x33, 600);
    assert_non_null(arena_alloc(&child, 10)); /* usable again */
    arena_release(&child);
    assert_false(has_cleanups(&parent));
    arena_release(&parent);
    assert_int_equal(tb.live, 0);
}

/* A cleanup of the parent may use other arenas, its children among them:
 * memory the parent would give then dies with the batch that is ending, so
 * the child is out of memory (NULL), which is no misuse of the program's. */
static arena *cleanup_child;
static int child_nulls;

static void use_child(void *ctx)
{
    (void)ctx;
    child_nulls += arena_alloc(cleanup_child, 100) == NULL;
}

static void test_child_in_a_cleanup_of_its_parent(void **state)
{
    arena parent, child;
    arena_allocator al = tb_allocator(&tb);
    (void)state;
    arena_init_with(&parent, 4096, &al);
    arena_init_child(&child, &parent, 256);
    cleanup_child = &child;
    child_nulls = 0;
    assert_non_null(arena_cleanup_push(&parent, use_child, NULL));
    arena_reset(&parent);
    assert_int_equal(recorded_errors.count, 0);
    assert_int_equal(child_nulls, 1);
    assert_int_equal(arena_retained(&child), 0);
    assert_non_null(arena_alloc(&child, 100)); /* the parent's next batch gives */
    arena_release(&child);
    arena_release(&parent);
    assert_int_equal(tb.live, 0);
}

/* 10^5 children made, used and released in one batch of the parent: once
 * warm, the parent makes no backing call and does not grow. */
static void test_child_cycles_are_flat(void **state)
{
    arena parent;
    arena_allocator al = tb_allocator(&tb);
    size_t calls = 0, retained = 0, size = 0;
    int i, j;
    (void)state;
    arena_init_with(&parent, 1 << 16, &al);
    for (i = 0; i < 100000 + 100; i++) {
        arena child;
        arena_init_child(&child, &parent, 4096);
        for (j = 0; j < 1 + i % 7; j++) /* up to 7 KiB: one or two chunks */
            assert_non_null(arena_alloc(&child, 1000));
        if (i % 3 == 0)
            arena_reset(&child);
        arena_release(&child);
        if (i == 99) {
            calls = tb.calls;
            retained = arena_retained(&parent);
            size = arena_size(&parent);
        }
    }
    if (test_packed()) {
        assert_int_equal(tb.calls, calls);
        assert_int_equal(arena_retained(&parent), retained);
        assert_int_equal(arena_size(&parent), size);
    } else {
        /* Instrumented builds reuse by first fit with exact sizes (each
         * block has its guard), so the parent's free blocks fragment a
         * little before they settle: bounded, not flat. */
        assert_true(tb.calls - calls <= 32);
    }
    assert_false(has_cleanups(&parent));
    arena_release(&parent);
    assert_int_equal(tb.live, 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_record_errors, teardown_record_errors)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_child_basics),
        T(test_child_in_parent_memory),
        T(test_child_dies_with_parent_scope),
        T(test_child_in_a_cleanup_of_its_parent),
        T(test_child_cycles_are_flat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
