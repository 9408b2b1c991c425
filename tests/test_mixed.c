/* SPDX-License-Identifier: MIT */
/*
 * The inline fast path when the program and the library disagree about ASan.
 * Built twice by tests/CMakeLists.txt: with -fsanitize=address against a
 * library without it (the program's header keeps its inline window closed and
 * calls the library for everything), and, in an ASan build, without
 * -fsanitize=address against the sanitized library (the header would inline,
 * but the library keeps the window closed, so every allocation still reaches
 * it and is poisoned).  Either way values, counters and refs must be right.
 */
#include "support.h"

#if defined(__SANITIZE_ADDRESS__)
#  define PROGRAM_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define PROGRAM_ASAN 1
#  endif
#endif
#ifndef PROGRAM_ASAN
#  define PROGRAM_ASAN 0
#  include <sanitizer/asan_interface.h> /* the library brings the runtime */
#endif

static void test_mixed_values_and_counters(void **state)
{
    arena a;
    char *p[300];
    arena_ref r;
    arena_mark m;
    size_t i, total = 0;
    (void)state;
    arena_init(&a, 2048);
    for (i = 0; i < 300; i++) {
        p[i] = (char *)arena_alloc(&a, i % 40 + 1);
        assert_non_null(p[i]);
        assert_int_equal((uintptr_t)p[i] % ARENA_ALIGN, 0);
        memset(p[i], (int)(i & 0x7F), i % 40 + 1);
        total += i % 40 + 1;
    }
    assert_int_equal(arena_size(&a), total);
    for (i = 0; i < 300; i++)
        assert_int_equal(p[i][i % 40], (char)(i & 0x7F));
    m = arena_save(&a);
    assert_string_equal(arena_strdup(&a, "mixed"), "mixed");
    r = arena_ref_strndup(&a, "ref", 3);
    assert_string_equal(arena_ref_str(&a, r), "ref");
    assert_int_equal(arena_size(&a), total + 6 + 4);
    arena_rewind(&a, m);
    assert_int_equal(arena_size(&a), total);
    assert_true(arena_check(&a));
#if !PROGRAM_ASAN
    /* The sanitized library never opens the window this header would use. */
    assert_null(a.ptr);
    assert_true(__asan_address_is_poisoned(p[299] + 299 % 40 + 1));
#endif
    arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_values_and_counters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
