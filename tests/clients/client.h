/* SPDX-License-Identifier: MIT */
/*
 * Shared by the client suites: real libraries plugged into libarena through
 * their hooks.  A workload writes what the library produced into an output
 * buffer; the suites compare it with the output of the library's own malloc,
 * and run it again with the arena's backing failing at each call in turn
 * (and from each call on), where every run must either produce the same
 * output or report the library's own out-of-memory error, and give every
 * byte back.
 */
#ifndef ARENA_TEST_CLIENT_H
#define ARENA_TEST_CLIENT_H

#include "../support.h"

#include <stdio.h>

#include <arena/hooks.h>

#define OUTPUT_MAX ((size_t)1 << 20)

typedef struct output {
    size_t len;
    char bytes[OUTPUT_MAX];
} output;

static inline void out_reset(output *o) { o->len = 0; }

static inline void out_add(output *o, const void *p, size_t n)
{
    assert_true(n <= OUTPUT_MAX - o->len);
    memcpy(o->bytes + o->len, p, n);
    o->len += n;
}

static inline void out_str(output *o, const char *s) { out_add(o, s, strlen(s)); }

static inline void assert_same_output(const output *got, const output *want)
{
    assert_int_equal(got->len, want->len);
    assert_memory_equal(got->bytes, want->bytes, want->len);
}

enum { CLIENT_OK, CLIENT_OOM };

/* A workload run in arena `a`: CLIENT_OK with its output in `out`, or
 * CLIENT_OOM when the library reported out-of-memory in its own way.  Any
 * other outcome fails the test inside the workload. */
typedef int client_fn(arena *a, output *out);

static test_backing client_tb;
static output client_got;

/* One run with chunks of `budget` bytes from a backing failing at call
 * `fail_at` or from call `fail_from` (0: never); checks that everything went
 * back to the backing.  Returns the outcome; *calls gets the backing calls. */
static inline int client_run(client_fn *fn, size_t budget, size_t fail_at, size_t fail_from,
                             size_t *calls)
{
    arena a;
    arena_allocator al = tb_allocator(&client_tb);
    int r;

    client_tb.fail_at = fail_at;
    client_tb.fail_from = fail_from;
    arena_init_with(&a, budget, &al);
    out_reset(&client_got);
    r = fn(&a, &client_got);
    if (r == CLIENT_OOM)
        assert_true(client_tb.failed > 0); /* only when the backing refused */
    assert_true(arena_check(&a));
    *calls = client_tb.calls;
    arena_release(&a);
    assert_int_equal(client_tb.live, 0);
    return r;
}

/* The workload in the default arena (`fn`, then `dropped`, the variant that
 * leaves its blocks to the arena, when not NULL), and with chunks of `small`
 * bytes (0: not) so that many blocks go to oversized chunks: each run must
 * succeed and give `want`. */
static inline void client_same_output(client_fn *fn, client_fn *dropped, size_t small,
                                      const output *want)
{
    size_t calls;
    assert_int_equal(client_run(fn, 0, 0, 0, &calls), CLIENT_OK);
    assert_same_output(&client_got, want);
    if (dropped) {
        assert_int_equal(client_run(dropped, 0, 0, 0, &calls), CLIENT_OK);
        assert_same_output(&client_got, want);
    }
    if (small) {
        assert_int_equal(client_run(fn, small, 0, 0, &calls), CLIENT_OK);
        assert_same_output(&client_got, want);
    }
}

/* The run without failures must give `want`; then the sweep.  Returns the
 * number of runs that ended in the library's out-of-memory error. */
static inline size_t client_sweep(client_fn *fn, size_t budget, const output *want)
{
    size_t total, n, calls, oom = 0;
    int mode;

    assert_int_equal(client_run(fn, budget, 0, 0, &total), CLIENT_OK);
    assert_same_output(&client_got, want);
    assert_true(total >= 3);
    for (n = 1; n <= total; n++) {
        for (mode = 0; mode < 2; mode++) {
            int r = client_run(fn, budget, mode ? 0 : n, mode ? n : 0, &calls);
            if (r == CLIENT_OK)
                assert_same_output(&client_got, want);
            else
                oom++;
        }
    }
    assert_true(oom > 0);
    print_message("sweep: %zu backing calls, %zu runs ended in out-of-memory\n", total, oom);
    return oom;
}

#endif /* ARENA_TEST_CLIENT_H */
