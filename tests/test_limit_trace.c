/* SPDX-License-Identifier: MIT */
/*
 * A limit refusal that no arena_on_limit() callback is told of leaves a line
 * on stderr where ARENA_LIMIT_TRACE says so: "1" every refusal, "0" none,
 * unset the first 64 of the process in the checked build and none in the
 * others.  CTest runs this suite three times (unset, 1, 0); it reads the
 * variable itself to know which lines to expect, and captures stderr in a
 * file.  A refusal told to a callback and a backing allocator's failure
 * (out of memory) never print.
 */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arena/thread.h>

/* What ARENA_LIMIT_TRACE asks for: 0 none, 1 every refusal, 2 the first
 * 64 (the checked build's default). */
static int expected_mode(void)
{
    const char *s = getenv("ARENA_LIMIT_TRACE");
    if (s && strcmp(s, "1") == 0)
        return 1;
    if (s && strcmp(s, "0") == 0)
        return 0;
    return ARENA_CHECKED ? 2 : 0;
}

/* stderr, redirected to a file while a case runs. */
static FILE *capture;
static int saved_fd = -1;

static void capture_begin(void)
{
    fflush(stderr);
    capture = tmpfile();
    assert_non_null(capture);
    saved_fd = dup(fileno(stderr));
    assert_true(saved_fd >= 0);
    assert_true(dup2(fileno(capture), fileno(stderr)) >= 0);
}

/* Ends the capture; what was written, NUL-terminated, in `out`. */
static void capture_end(char *out, size_t cap)
{
    size_t n;
    fflush(stderr);
    assert_true(dup2(saved_fd, fileno(stderr)) >= 0);
    close(saved_fd);
    rewind(capture);
    n = fread(out, 1, cap - 1, capture);
    out[n] = '\0';
    fclose(capture);
}

static int lines_in(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static int told;

static void on_limit(const arena_limit_event *e, void *ctx)
{
    (void)e;
    (void)ctx;
    told++;
}

static char out[1 << 16];
static int lines_so_far; /* traced by the cases before */

/* capture_end(), counting the lines. */
static int captured(void)
{
    int n;
    capture_end(out, sizeof out);
    n = lines_in(out);
    lines_so_far += n;
    return n;
}

/* An arena's own limit and a group limit, refused without a callback: one
 * line each (when traced), naming the arena, its name, the bytes asked and
 * the limit; with a callback, none. */
static void refusals_without_a_callback_are_traced(void **state)
{
    arena a;
    arena_budget *b = arena_budget_create(3000, "group\tg");
    char words[256];
    bool traced = expected_mode() != 0;
    (void)state;
    assert_non_null(b);
    arena_init(&a, 4096);
    arena_set_name(&a, "request\n42");
    arena_set_limit(&a, 2000);

    capture_begin();
    assert_null(arena_alloc(&a, 3000));
    assert_int_equal(captured(), traced ? 1 : 0);
    if (traced) {
        snprintf(words, sizeof words, "libarena: limit: arena %p \"request\\x0a42\" refused ",
                 (void *)&a);
        assert_non_null(strstr(out, words));
        assert_non_null(strstr(out, " bytes (its limit 2000, held "));
    }

    arena_set_limit(&a, SIZE_MAX);
    arena_set_budget(&a, b);
    capture_begin();
    assert_null(arena_alloc(&a, 5000));
    assert_int_equal(captured(), traced ? 1 : 0);
    if (traced)
        assert_non_null(strstr(out, " bytes (budget \"group\\x09g\": limit 3000, used "));

    arena_on_limit(&a, on_limit, NULL);
    told = 0;
    capture_begin();
    assert_null(arena_alloc(&a, 5000));
    assert_int_equal(captured(), 0);
    assert_int_equal(told, 1);
    arena_set_budget(&a, NULL);
    arena_release(&a);
    arena_budget_destroy(b);
}

/* A backing allocator's failure is out of memory: never printed. */
static void backing_failures_are_not_traced(void **state)
{
    static test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a;
    (void)state;
    arena_init_with(&a, 4096, &al);
    tb.fail_from = 1;
    capture_begin();
    assert_null(arena_alloc(&a, 100));
    assert_int_equal(captured(), 0);
    assert_int_equal(tb.failed, 1);
    arena_release(&a);
}

/* Unset in the checked build: the first 64 refusals of the process (those
 * of the cases before count), then a line that says the trace stops; "1":
 * every one. */
static void the_default_trace_stops(void **state)
{
    arena a;
    int i, before = lines_so_far, mode = expected_mode();
    (void)state;
    arena_init(&a, 4096);
    arena_set_limit(&a, 0);
    capture_begin();
    for (i = 0; i < 100; i++)
        assert_null(arena_alloc(&a, 10));
    if (mode == 0) {
        assert_int_equal(captured(), 0);
    } else if (mode == 1) {
        assert_int_equal(captured(), 100);
    } else {
        assert_true(before > 0 && before < 64);
        assert_int_equal(captured(), 64 - before + 1);
        assert_non_null(strstr(out, "libarena: limit: 64 refusals traced, no more "));
    }
    arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refusals_without_a_callback_are_traced),
        cmocka_unit_test(backing_failures_are_not_traced),
        cmocka_unit_test(the_default_trace_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
