/* SPDX-License-Identifier: MIT */
/*
 * A log of the cleanups run, in order, for the suites of cleanups
 * (test_cleanup.c) and child arenas (test_child.c).  White-box: reads the
 * arena's `pending` bits.
 */
#ifndef TEST_CLEANUP_LOG_H
#define TEST_CLEANUP_LOG_H

#include "support.h"

#define PENDING_CLEANUP 2u /* src/internal.h's ARENA__PENDING_CLEANUP */

#define LOG_MAX 4096

static int run_log[LOG_MAX];
static int nrun;

static inline void log_id(void *ctx)
{
    assert_true(nrun < LOG_MAX);
    run_log[nrun++] = (int)(intptr_t)ctx;
}

static inline void clear_log(void) { nrun = 0; }

static inline void expect_log(const int *ids, int n)
{
    int i;
    assert_int_equal(nrun, n);
    for (i = 0; i < n; i++)
        assert_int_equal(run_log[i], ids[i]);
    clear_log();
}

static inline arena_cleanup *push_id(arena *a, int id)
{
    arena_cleanup *c = arena_cleanup_push(a, log_id, (void *)(intptr_t)id);
    assert_non_null(c);
    return c;
}

static inline bool has_cleanups(const arena *a) { return (a->pending & PENDING_CLEANUP) != 0; }

#endif /* TEST_CLEANUP_LOG_H */
