/* SPDX-License-Identifier: MIT */
/*
 * The default error handler writes a message naming the misuse to stderr and
 * aborts.  Each case runs in a child process whose stderr is captured; the
 * parent checks that the child died of SIGABRT and what it wrote.
 */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void misuse_fn(void);

/* Runs `fn` in a child with the default handler, checks that the child died
 * of SIGABRT, and returns what it wrote to stderr in `out`. */
static void expect_abort(misuse_fn *fn, char *out, size_t cap)
{
    int fds[2], status = 0;
    pid_t pid;
    size_t got = 0;
    ssize_t n;

    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        arena_set_error_handler(NULL, NULL);
        fn();
        _exit(0); /* not reached when the handler aborts */
    }
    close(fds[1]);
    while (got + 1 < cap && (n = read(fds[0], out + got, cap - 1 - got)) > 0)
        got += (size_t)n;
    out[got] = '\0';
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

static char src_bytes[8];

static void ref_too_large(void)
{
    arena a;
    arena_init(&a, 1000);
    (void)arena_ref_copy(&a, src_bytes, (size_t)ARENA_REF_MAX + 1, 1);
}

static void string_ref_too_large(void)
{
    arena a;
    arena_init(&a, 1000);
    (void)arena_ref_strndup(&a, src_bytes, SIZE_MAX);
}

static arena expired_arena;

static void rewind_expired_mark(void)
{
    arena_mark m;
    arena_init(&expired_arena, 1000);
    assert_non_null(arena_alloc(&expired_arena, 10));
    m = arena_save(&expired_arena);
    arena_reset(&expired_arena);
    arena_rewind(&expired_arena, m);
}

static void test_default_handler_aborts_ref_too_large(void **state)
{
    char out[1024], ptr[32];
    (void)state;

    expect_abort(ref_too_large, out, sizeof out);
    assert_non_null(strstr(out, "libarena"));
    assert_non_null(strstr(out, "ARENA_ERR_REF_TOO_LARGE"));
    assert_non_null(strstr(out, "arena_ref_copy"));
    snprintf(ptr, sizeof ptr, "%p", (void *)src_bytes);
    assert_non_null(strstr(out, ptr)); /* names the pointer */

    expect_abort(string_ref_too_large, out, sizeof out);
    assert_non_null(strstr(out, "ARENA_ERR_REF_TOO_LARGE"));
    assert_non_null(strstr(out, "arena_ref_strndup"));
}

static void test_default_handler_aborts_bad_mark(void **state)
{
    char out[1024], ptr[32];
    (void)state;

    expect_abort(rewind_expired_mark, out, sizeof out);
    assert_non_null(strstr(out, "ARENA_ERR_BAD_MARK"));
    assert_non_null(strstr(out, "arena_rewind"));
    snprintf(ptr, sizeof ptr, "%p", (void *)&expired_arena);
    assert_non_null(strstr(out, ptr)); /* names the arena */
}

/* Out-of-memory is not misuse: the default handler stays silent and the
 * process lives. */
static void test_out_of_memory_does_not_abort(void **state)
{
    arena a;
    (void)state;
    arena_set_error_handler(NULL, NULL);
    arena_init(&a, 1000);
    assert_null(arena_alloc(&a, opaque_size(SIZE_MAX - 8)));
    assert_null(arena_calloc(&a, SIZE_MAX, 8));
    assert_true(arena_ref_empty(arena_ref_copy(&a, "x", 1, 3)));
    arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_handler_aborts_ref_too_large),
        cmocka_unit_test(test_default_handler_aborts_bad_mark),
        cmocka_unit_test(test_out_of_memory_does_not_abort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
