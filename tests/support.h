/*
 * Test support shared by the cmocka suites: a backing allocator that records
 * every chunk and can fail on the Nth call, and an error handler that records
 * instead of aborting.
 */
#ifndef ARENA_TEST_SUPPORT_H
#define ARENA_TEST_SUPPORT_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <arena/arena.h>

#define TB_MAX_LIVE 4096

/* A backing allocator that records what is live and fails the call numbered
 * `fail_at` (1-based; 0: never) or every call from `fail_from` on. */
typedef struct test_backing {
    size_t calls;      /* alloc calls so far */
    size_t fail_at;    /* fail exactly this call */
    size_t fail_from;  /* fail this call and every later one (0: never) */
    size_t live;       /* allocations not yet freed */
    size_t live_bytes; /* their bytes */
    size_t frees;
    struct { void *p; size_t n; } blocks[TB_MAX_LIVE];
} test_backing;

static void *tb_alloc(void *ctx, size_t n)
{
    test_backing *tb = (test_backing *)ctx;
    void *p;
    tb->calls++;
    if (tb->calls == tb->fail_at || (tb->fail_from && tb->calls >= tb->fail_from))
        return NULL;
    assert_true(tb->live < TB_MAX_LIVE);
    p = malloc(n ? n : 1);
    if (!p)
        return NULL;
    assert_int_equal((uintptr_t)p % ARENA_ALIGN, 0);
    tb->blocks[tb->live].p = p;
    tb->blocks[tb->live].n = n;
    tb->live++;
    tb->live_bytes += n;
    return p;
}

static void tb_free(void *ctx, void *p, size_t n)
{
    test_backing *tb = (test_backing *)ctx;
    size_t i;
    for (i = 0; i < tb->live; i++) {
        if (tb->blocks[i].p == p) {
            assert_int_equal(tb->blocks[i].n, n); /* freed with the size asked */
            tb->live_bytes -= n;
            tb->blocks[i] = tb->blocks[--tb->live];
            tb->frees++;
            free(p);
            return;
        }
    }
    fail_msg("backing free of %p (%zu bytes), which it never handed out", p, n);
}

static inline arena_allocator tb_allocator(test_backing *tb)
{
    arena_allocator al;
    memset(tb, 0, sizeof *tb);
    al.alloc = tb_alloc;
    al.free = tb_free;
    al.ctx = tb;
    return al;
}

/* An error handler that records instead of aborting. */
typedef struct test_errors {
    int count;
    arena_error last;
    char message[256];
} test_errors;

static test_errors recorded_errors;

static void record_error(arena_error code, const char *message, void *ctx)
{
    (void)ctx;
    recorded_errors.count++;
    recorded_errors.last = code;
    strncpy(recorded_errors.message, message, sizeof recorded_errors.message - 1);
}

static inline void record_errors(void)
{
    memset(&recorded_errors, 0, sizeof recorded_errors);
    arena_set_error_handler(record_error, NULL);
}

#endif /* ARENA_TEST_SUPPORT_H */
