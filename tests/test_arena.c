/* The arena: every behaviour of API.md's arena sections. */
#include "support.h"

static void test_zero_value_and_budget(void **state)
{
    arena a = {0};
    (void)state;
    void *p = arena_alloc(&a, 10);
    assert_non_null(p);
    assert_int_equal(arena_size(&a), 10);
    assert_int_equal(arena_retained(&a), ARENA_DEFAULT_CHUNK);
    arena_release(&a);
    assert_int_equal(arena_retained(&a), 0);

    arena_init(&a, 1000);
    assert_non_null(arena_alloc(&a, 1));
    assert_int_equal(arena_retained(&a), 1000);
    assert_true(arena_check(&a));
    arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_value_and_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
