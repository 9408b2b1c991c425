/* SPDX-License-Identifier: MIT */
/*
 * arena_sprintf / arena_vsprintf: results as snprintf's, one formatting pass
 * when the string fits the inline window (counted by wrapping vsnprintf at
 * link time), two otherwise, NULL with the arena unchanged on every failure
 * (out of memory at each backing call, a result above INT_MAX, an encoding
 * error, a full caller's buffer).
 */
#include "support.h"

#include <stdalign.h>
#include <stdio.h>
#include <wchar.h>

static test_backing tb;

/* Every vsnprintf the library makes comes here (-Wl,--wrap=vsnprintf). */
int __real_vsnprintf(char *s, size_t n, const char *fmt, va_list ap);
int __wrap_vsnprintf(char *s, size_t n, const char *fmt, va_list ap);
static int passes;

int __wrap_vsnprintf(char *s, size_t n, const char *fmt, va_list ap)
{
    passes++;
    return __real_vsnprintf(s, n, fmt, ap);
}

#ifdef TEST_WRAP_VSNPRINTF_CHK
int __real___vsnprintf_chk(char *s, size_t n, int flag, size_t len, const char *fmt, va_list ap);
int __wrap___vsnprintf_chk(char *s, size_t n, int flag, size_t len, const char *fmt, va_list ap);

int __wrap___vsnprintf_chk(char *s, size_t n, int flag, size_t len, const char *fmt, va_list ap)
{
    passes++;
    return __real___vsnprintf_chk(s, n, flag, len, fmt, ap);
}
#endif

/* The passes the library takes: one when the string fits the open inline
 * window, else two (measure, then format). */
static int expected_passes(const arena *a, size_t len)
{
    return a->ptr && len < (size_t)(a->end - a->ptr) ? 1 : 2;
}

static void same_as_snprintf(void **state)
{
    arena a;
    char want[256];
    int i;
    (void)state;

    arena_init(&a, 4096);
    for (i = 0; i < 500; i++) {
        size_t before = arena_size(&a);
        int n = snprintf(want, sizeof want, "%d:%s:%08.3f:%c%%", i * 7919, "label", i / 7.0,
                         'a' + i % 26);
        int expect = expected_passes(&a, (size_t)n);
        char *s;
        passes = 0;
        s = arena_sprintf(&a, "%d:%s:%08.3f:%c%%", i * 7919, "label", i / 7.0, 'a' + i % 26);
        assert_non_null(s);
        assert_string_equal(s, want);
        assert_int_equal(passes, expect);
        assert_int_equal(arena_size(&a), before + (size_t)n + 1);
    }
    assert_true(arena_check(&a));
    arena_release(&a);
}

static void fits_in_one_pass_packed(void **state)
{
    arena a;
    char *s, *t;
    (void)state;

    arena_init(&a, 4096);
    assert_non_null(arena_alloc(&a, 8));
    passes = 0;
    s = arena_sprintf(&a, "%s-%d", "abc", 42);
    t = arena_sprintf(&a, "%s%s", s, s); /* arguments from the arena itself */
    assert_string_equal(s, "abc-42");
    assert_string_equal(t, "abc-42abc-42");
    if (test_packed()) {
        assert_int_equal(passes, 2); /* one each */
        assert_ptr_equal(t, s + 7);  /* packed at alignment 1, no copy */
    } else {
        assert_int_equal(passes, 4);
    }
    arena_release(&a);
}

/* The room of the inline window exactly: room - 1 characters and the NUL fit
 * in one pass, room characters take a second pass and a new place. */
static void exactly_the_room(void **state)
{
    arena a;
    size_t room;
    char *s;
    (void)state;

    arena_init(&a, 256);
    assert_non_null(arena_alloc(&a, 8));
    if (!a.ptr) { /* the window is closed: two passes, same strings */
        passes = 0;
        s = arena_sprintf(&a, "%*s", 100, "x");
        assert_non_null(s);
        assert_int_equal(strlen(s), 100);
        assert_int_equal(passes, 2);
        arena_release(&a);
        return;
    }
    room = (size_t)(a.end - a.ptr);
    passes = 0;
    s = arena_sprintf(&a, "%*s", (int)room - 1, "x");
    assert_non_null(s);
    assert_int_equal(strlen(s), room - 1);
    assert_int_equal(s[room - 2], 'x');
    assert_int_equal(passes, 1);
    arena_reset(&a);
    assert_non_null(arena_alloc(&a, 8));
    room = (size_t)(a.end - a.ptr);
    passes = 0;
    s = arena_sprintf(&a, "%*s", (int)room, "y");
    assert_non_null(s);
    assert_int_equal(strlen(s), room);
    assert_int_equal(passes, 2);
    arena_release(&a);
}

static void does_not_fit(void **state)
{
    arena a;
    char want[1200], *s;
    (void)state;

    arena_init(&a, 256);
    memset(want, 'q', 1000);
    want[1000] = '\0';
    passes = 0;
    s = arena_sprintf(&a, "%s", want); /* larger than a chunk */
    assert_non_null(s);
    assert_string_equal(s, want);
    assert_int_equal(passes, 2);
    assert_int_equal(arena_size(&a), 1001);
    s = arena_sprintf(&a, "%.200s|", want); /* a new uniform chunk */
    assert_non_null(s);
    assert_int_equal(strlen(s), 201);
    assert_int_equal(arena_size(&a), 1001 + 202);
    assert_true(arena_check(&a));
    arena_release(&a);
}

static void empty_string(void **state)
{
    arena a = {0};
    char *s;
    const char *none = "";
    (void)state;

    s = arena_sprintf(&a, "%s", none); /* no chunk yet: the slow path */
    assert_non_null(s);
    assert_string_equal(s, "");
    assert_int_equal(arena_size(&a), 1);
    s = arena_sprintf(&a, "%s", none); /* in the window, where it is open */
    assert_non_null(s);
    assert_string_equal(s, "");
    assert_int_equal(arena_size(&a), 2);
    arena_release(&a);
}

/* A width past INT_MAX (out of sight of gcc's format checks, which know). */
static const char *volatile over_int_max = "%2147483648d";

/* Formatting that fails: NULL, and the arena exactly as before. */
static void failures_leave_the_arena(void **state)
{
    arena a;
    arena_mark m;
    size_t size, retained;
    char *s;
    (void)state;

    arena_init(&a, 4096);
    assert_non_null(arena_sprintf(&a, "start"));
    m = arena_save(&a);
    size = arena_size(&a);
    retained = arena_retained(&a);
    /* a result longer than INT_MAX */
    assert_null(arena_sprintf(&a, over_int_max, 1));
    /* an encoding error (no wide character above 0x7F in the C locale) */
    assert_null(arena_sprintf(&a, "ok %lc", (wint_t)0xE9));
    assert_int_equal(arena_size(&a), size);
    assert_int_equal(arena_retained(&a), retained);
    assert_ptr_equal(arena_save(&a).pos, m.pos);
    s = arena_sprintf(&a, "next");
    assert_string_equal(s, "next");
    if (test_packed())
        assert_ptr_equal(s, m.pos);
    arena_release(&a);
}

static void full_caller_buffer(void **state)
{
    alignas(16) char buf[128]; /* room for two short strings, headers included */
    arena a;
    size_t size;
    (void)state;

    arena_init_buffer(&a, buf, sizeof buf, NULL);
    assert_string_equal(arena_sprintf(&a, "%d", 12345), "12345");
    size = arena_size(&a);
    assert_null(arena_sprintf(&a, "%200d", 1));
    assert_int_equal(arena_size(&a), size);
    assert_string_equal(arena_sprintf(&a, "%d", 6), "6");
    arena_release(&a);
}

#if defined(__GNUC__) || defined(__clang__)
static char *format_v(arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
static char *format_v(arena *a, const char *fmt, ...)
{
    va_list ap;
    char *s;
    va_start(ap, fmt);
    s = arena_vsprintf(a, fmt, ap);
    va_end(ap);
    return s;
}

static void vsprintf_wrapper(void **state)
{
    arena a;
    (void)state;

    arena_init(&a, 128);
    assert_string_equal(format_v(&a, "%s=%u", "k", 7u), "k=7");
    assert_int_equal(strlen(format_v(&a, "%300s", "long")), 300);
    arena_release(&a);
}

/* The backing fails at call N (and from call N on), for every N: each failing
 * call returns NULL with the arena as it was and every string kept intact. */
#define STRINGS 150

static size_t format_workload(size_t fail_at, size_t fail_from, size_t *failures)
{
    static char *kept[STRINGS];
    static char want[STRINGS][160];
    arena a;
    arena_allocator al = tb_allocator(&tb);
    size_t i, j, calls;

    tb.fail_at = fail_at;
    tb.fail_from = fail_from;
    arena_init_with(&a, 128, &al);
    for (i = 0; i < STRINGS; i++) {
        size_t size = arena_size(&a), retained = arena_retained(&a), failed = tb.failed;
        int width = (int)((i * 37) % 150);
        snprintf(want[i], sizeof want[i], "%*zu|", width, i);
        kept[i] = arena_sprintf(&a, "%*zu|", width, i);
        if (!kept[i]) {
            assert_true(tb.failed > failed);
            assert_int_equal(arena_size(&a), size);
            assert_int_equal(arena_retained(&a), retained);
            (*failures)++;
        }
    }
    for (j = 0; j < STRINGS; j++) {
        if (kept[j])
            assert_string_equal(kept[j], want[j]);
    }
    assert_true(arena_check(&a));
    calls = tb.calls;
    arena_release(&a);
    assert_int_equal(tb.live, 0);
    return calls;
}

static void failure_sweep(void **state)
{
    size_t failures = 0, total = format_workload(0, 0, &failures), n;
    (void)state;
    assert_int_equal(failures, 0);
    assert_true(total > 50);
    for (n = 1; n <= total; n++) {
        size_t at = 0, from = 0;
        format_workload(n, 0, &at);
        format_workload(0, n, &from);
        assert_true(at >= 1);
        assert_true(from >= 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_as_snprintf),   cmocka_unit_test(fits_in_one_pass_packed),
        cmocka_unit_test(exactly_the_room),   cmocka_unit_test(does_not_fit),
        cmocka_unit_test(empty_string),       cmocka_unit_test(failures_leave_the_arena),
        cmocka_unit_test(full_caller_buffer), cmocka_unit_test(vsprintf_wrapper),
        cmocka_unit_test(failure_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
