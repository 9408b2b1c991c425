/* SPDX-License-Identifier: MIT */
/*
 * The adapters (arena/hooks.h) and free-last (arena_free): each hook shape,
 * alignment, overflow, the current arena (NULL, nesting, per thread, the
 * scoped pair and ARENA_CURRENT_SCOPE), the size header of the global family
 * (heap and arena blocks told apart, foreign pointers, blocks of an arena
 * that is not current), realloc growth and shrink, and the backing failing
 * at each call of a workload.
 */
#include "support.h"

#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdalign.h>

#include <arena/hooks.h>
#include <arena/pool.h>

#include "cold.h"

#if TEST_ASAN
#  include <sanitizer/asan_interface.h>
#endif

static test_backing tb;

/* The header the documentation promises before each arena_cur_* block: the
 * smallest multiple of ARENA_ALIGN that holds two words (three checked). */
#define WORDS     ((size_t)(ARENA_CHECKED ? 3 : 2))
#define HDR_BYTES ((WORDS * sizeof(size_t) + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN)

static bool aligned(const void *p) { return (uintptr_t)p % ARENA_ALIGN == 0; }

/* The alignment arena_cur_malloc() promises a block of `n` bytes: any
 * object's of that size (hooks.h): ARENA_ALIGN, 8 for at most 8 bytes. */
static bool cur_aligned(const void *p, size_t n)
{
    return (uintptr_t)p % (n <= 8 && ARENA_ALIGN > 8 ? 8 : ARENA_ALIGN) == 0;
}

/* The family's layout (hooks.h): in a plain build, a block of at most 256
 * bytes from an arena has no header, and lies in a page of its class (8
 * bytes, then 16-byte steps): it stores, and may use, its class's size.  Every other block takes
 * HDR_BYTES more than asked (a byte for a block of none) and may use what was
 * asked. */
static bool paged(size_t n) { return test_packed() && ARENA_ALIGN <= 16 && n <= 256; }
static size_t usable(size_t n) { return paged(n) ? (n <= 8 ? 8 : (n + 15) / 16 * 16) : n; }
static size_t stored(size_t n) { return paged(n) ? usable(n) : HDR_BYTES + (n ? n : 1); }

static int teardown_current(void **state)
{
    (void)state;
    arena_set_current(NULL);
    restore_errors();
    return 0;
}

/* ---- arena_free ------------------------------------------------------------------- */

static void free_last_gives_back(void **state)
{
    arena a;
    char *x, *y, *z, *w;
    size_t before;
    (void)state;

    arena_init(&a, 4096);
    before = arena_size(&a);
    x = (char *)arena_alloc(&a, 96);
    y = (char *)arena_alloc(&a, 200);
    assert_non_null(x);
    assert_non_null(y);
    arena_free(&a, x, 96); /* not the most recent: a free block */
    assert_int_equal(arena_size(&a), before + 200);
    arena_free(&a, y, 200); /* the most recent: back to the position */
    assert_int_equal(arena_size(&a), before);
    z = (char *)arena_alloc(&a, 200);
    assert_non_null(z);
    if (test_packed())
        assert_ptr_equal(z, y); /* the bytes were given back */
    arena_free(&a, NULL, 10);
    arena_free(&a, z, 0); /* size 0: nothing */
    assert_int_equal(arena_size(&a), before + 200);
    arena_free(&a, z, 200);
    assert_int_equal(arena_size(&a), before);
    /* arena_alloc() never looks at free blocks; arena_alloc_reuse() does */
    w = (char *)arena_alloc_reuse(&a, 96);
    assert_ptr_equal(w, x);
    assert_int_equal(arena_size(&a), before + 96);
    assert_true(arena_check(&a));
    arena_release(&a);
}

/* A value with its own (oversized) chunk is not in the current chunk: it
 * becomes a free block (its chunk stays until the reset), and the current
 * chunk is left alone. */
static void free_last_oversized_and_empty(void **state)
{
    arena a;
    char *small, *big;
    size_t before;
    (void)state;

    arena_free(&a, NULL, 0);
    arena_init(&a, 1024);
    arena_free(&a, NULL, 0);
    small = (char *)arena_alloc(&a, 16);
    big = (char *)arena_alloc(&a, 5000);
    assert_non_null(small);
    assert_non_null(big);
    before = arena_size(&a);
    arena_free(&a, big, 5000); /* a free block; its chunk stays */
    assert_int_equal(arena_size(&a), before - 5000);
    arena_free(&a, small, 16); /* the most recent of the current chunk */
    assert_int_equal(arena_size(&a), before - 5000 - 16);
    if (test_packed())
        assert_ptr_equal(arena_alloc(&a, 16), small);
    {
        char *x = (char *)arena_alloc_reuse(&a, 4000); /* in big's block (after a head) */
        assert_true(x >= big && x + 4000 <= big + 5000);
    }
    assert_true(arena_check(&a));
    arena_release(&a);
}

/* ---- Hooks with a context ------------------------------------------------------------ */

static void hook_alloc_and_free(void **state)
{
    arena a;
    arena_allocator al = tb_allocator(&tb);
    size_t n, before;
    void *p0;
    (void)state;

    arena_init_with(&a, 4096, &al);
    p0 = arena_hook_alloc(&a, 0); /* not to be dereferenced */
    assert_non_null(p0);
    assert_true(aligned(p0));
    assert_int_equal(arena_size(&a), 0);
    for (n = 1; n < 300; n += 7) {
        char *p = (char *)arena_hook_alloc(&a, n);
        assert_non_null(p);
        assert_true(aligned(p));
        memset(p, 0x5A, n);
        before = arena_size(&a);
        arena_hook_free(&a, p);
        assert_int_equal(arena_size(&a), before);
    }
    before = arena_size(&a);
    n = tb.calls;
    assert_null(arena_hook_alloc(&a, opaque_size(SIZE_MAX)));
    assert_null(arena_hook_alloc(&a, opaque_size(SIZE_MAX - ARENA_ALIGN)));
    assert_int_equal(arena_size(&a), before);
    assert_int_equal(tb.calls, n); /* refused before the backing is asked */
    tb.fail_from = tb.calls + 1;
    assert_null(arena_hook_alloc(&a, 5000));
    assert_int_equal(arena_size(&a), before);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

static void hook_zalloc_overflow(void **state)
{
    arena a;
    arena_allocator al = tb_allocator(&tb);
    char *p;
    (void)state;

    arena_init_with(&a, 4096, &al);
    p = (char *)arena_hook_zalloc(&a, 3, 40);
    assert_non_null(p);
    assert_true(aligned(p));
    assert_int_equal(arena_size(&a), 120);
    memset(p, 1, 120);
    /* UINT_MAX * UINT_MAX overflows a 32-bit size_t, and is beyond any object
     * with a 64-bit one: NULL either way, the arena unchanged. */
    assert_null(arena_hook_zalloc(&a, UINT_MAX, UINT_MAX));
    assert_null(arena_hook_zalloc(&a, UINT_MAX, 2));
    assert_int_equal(arena_size(&a), 120);
    assert_non_null(arena_hook_zalloc(&a, 0, 10));
    arena_hook_free(&a, p); /* zlib's zfree */
    assert_int_equal(arena_size(&a), 120);
    tb.fail_from = tb.calls + 1;
    assert_null(arena_hook_zalloc(&a, 1000, 1000));
    assert_int_equal(arena_size(&a), 120);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

static void hook_lua_shapes(void **state)
{
    arena a;
    char *p, *q, *r, *first;
    size_t before;
    (void)state;

    arena_init(&a, 4096);
    /* ptr NULL: old_size is Lua's type tag, not a size */
    p = (char *)arena_hook_lua(&a, NULL, 5, 40);
    assert_non_null(p);
    assert_true(aligned(p));
    assert_int_equal(arena_size(&a), 40);
    fill_pattern(p, 40, 1);
    /* the most recent value grows in place */
    q = (char *)arena_hook_lua(&a, p, 40, 100);
    assert_ptr_equal(q, p);
    assert_int_equal(arena_size(&a), 100);
    assert_true(has_pattern(q, 40, 1));
    fill_pattern(q, 100, 2);
    r = (char *)arena_hook_lua(&a, NULL, 0, 16);
    assert_non_null(r);
    /* not the most recent: moved, contents kept, the old block given back */
    first = q;
    p = (char *)arena_hook_lua(&a, q, 100, 200);
    assert_non_null(p);
    assert_ptr_not_equal(p, q);
    assert_true(has_pattern(p, 100, 2));
    assert_int_equal(arena_size(&a), 16 + 200);
    /* shrinking never moves; the most recent gives its tail back */
    q = (char *)arena_hook_lua(&a, p, 200, 50);
    assert_ptr_equal(q, p);
    assert_int_equal(arena_size(&a), 16 + 50);
    assert_true(has_pattern(q, 50, 2));
    /* no such growth: NULL, the block unchanged */
    assert_null(arena_hook_lua(&a, r, 16, opaque_size(SIZE_MAX)));
    assert_null(arena_hook_lua(&a, r, 16, opaque_size(SIZE_MAX - 16)));
    assert_int_equal(arena_size(&a), 16 + 50);
    /* free: NULL is nothing; every other block gives its bytes back */
    before = arena_size(&a);
    assert_null(arena_hook_lua(&a, r, 16, 0));
    assert_int_equal(arena_size(&a), before - 16);
    assert_null(arena_hook_lua(&a, q, 50, 0));
    assert_int_equal(arena_size(&a), before - 16 - 50);
    assert_null(arena_hook_lua(&a, NULL, 3, 0));
    /* the next blocks of those sizes take the freed places */
    assert_ptr_equal(arena_hook_lua(&a, NULL, 0, 16), r);
    assert_ptr_equal(arena_hook_lua(&a, NULL, 0, 100), first);
    assert_true(arena_check(&a));
    arena_release(&a);
}

static void hook_lua_out_of_memory(void **state)
{
    arena a;
    arena_allocator al = tb_allocator(&tb);
    char *p, *q;
    size_t before;
    (void)state;

    arena_init_with(&a, 1024, &al);
    p = (char *)arena_hook_lua(&a, NULL, 0, 600);
    assert_non_null(p);
    fill_pattern(p, 600, 3);
    tb.fail_from = tb.calls + 1;
    before = arena_size(&a);
    assert_null(arena_hook_lua(&a, p, 600, 2000)); /* needs a new chunk */
    assert_null(arena_hook_lua(&a, NULL, 0, 2000));
    assert_int_equal(arena_size(&a), before);
    assert_true(has_pattern(p, 600, 3));
    q = (char *)arena_hook_lua(&a, p, 600, 10); /* shrinking never fails */
    assert_ptr_equal(q, p);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

/* arena_hook_lua_align8(): Lua's shapes at 8-byte alignment.  A block of at
 * most 256 bytes takes the next multiple of 8 (in a plain build, once its
 * class has its page: blocks of 24 and 56 bytes lie 24 and 56 apart), a
 * larger one ARENA_ALIGN; each call told a size may give back or resize
 * them (arena_free, arena_realloc, arena_hook_lua), and the global family
 * finds a 24-byte block's class from its page. */
static void hook_lua_align8_shapes(void **state)
{
    enum { N = 48 };
    static const size_t sizes[] = {1,  7,   8,   9,   17,  24,  25,  40,  56,
                                   57, 100, 200, 248, 249, 256, 257, 1000};
    arena a;
    char *v[N], *p, *q, *r;
    size_t i, k, live = 0;
    int count;
    (void)state;

    record_errors();
    arena_init(&a, 65536);
    for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        for (i = 0; i < N; i++) {
            v[i] = (char *)arena_hook_lua_align8(&a, NULL, 4, n);
            assert_non_null(v[i]);
            assert_true(is_aligned(v[i], n <= 256 && ARENA_ALIGN > 8 ? 8 : ARENA_ALIGN));
            fill_pattern(v[i], n, k * N + i);
            live += n;
            assert_int_equal(arena_size(&a), live);
        }
        /* The last values of a class past its first ones share its page,
         * one after the other. */
        if (test_packed() && n <= 256) {
            size_t together = 0;
            for (i = N - 8; i < N - 1; i++)
                if (((uintptr_t)v[i] & ~(uintptr_t)4095) ==
                    ((uintptr_t)v[i + 1] & ~(uintptr_t)4095)) {
                    assert_int_equal(v[i + 1] - v[i], (ptrdiff_t)((n + 7) / 8 * 8));
                    together++;
                }
            assert_true(together >= 6);
        }
        for (i = 0; i < N; i++)
            assert_true(has_pattern(v[i], n, k * N + i));
        /* Given back, the next value of the class takes the block. */
        assert_null(arena_hook_lua_align8(&a, v[N - 2], n, 0));
        live -= n;
        if (test_packed() && n <= 256)
            assert_ptr_equal(arena_hook_lua_align8(&a, NULL, 0, n), v[N - 2]);
        else
            assert_non_null(arena_hook_lua_align8(&a, NULL, 0, n));
        live += n;
        assert_int_equal(arena_size(&a), live);
    }

    /* Resizes keep the bytes; a block moved stays at 8 bytes. */
    p = (char *)arena_hook_lua_align8(&a, NULL, 0, 20);
    r = (char *)arena_hook_lua_align8(&a, NULL, 0, 20); /* p is no longer the most recent */
    assert_non_null(p);
    assert_non_null(r);
    fill_pattern(p, 20, 1);
    q = (char *)arena_hook_lua_align8(&a, p, 20, 44);
    assert_non_null(q);
    assert_true(is_aligned(q, 8));
    assert_true(has_pattern(q, 20, 1));
    fill_pattern(q, 44, 2);
    p = (char *)arena_hook_lua_align8(&a, q, 44, 300); /* past the pages: ARENA_ALIGN */
    assert_non_null(p);
    assert_true(is_aligned(p, ARENA_ALIGN));
    assert_true(has_pattern(p, 44, 2));
    fill_pattern(p, 300, 3);
    assert_non_null(arena_hook_lua_align8(&a, NULL, 0, 300)); /* p is not the most recent */
    q = (char *)arena_hook_lua_align8(&a, p, 300, 24);        /* a shrink never fails */
    assert_non_null(q);
    assert_true(has_pattern(q, 24, 3));
    if (test_packed())
        assert_true(is_aligned(q, 8) && q != p); /* moved to a block of 24 bytes */
    live += 20 + 300 + 24;
    assert_int_equal(arena_size(&a), live);

    /* The one rule: arena_hook_lua and arena_realloc resize it, arena_free
     * gives it back; a size past its block is reported, nothing given. */
    fill_pattern(q, 24, 4);
    p = (char *)arena_hook_lua(&a, q, 24, 40);
    assert_non_null(p);
    assert_true(has_pattern(p, 24, 4));
    q = (char *)arena_realloc(&a, p, 40, 24);
    assert_non_null(q);
    assert_true(has_pattern(q, 24, 4));
    count = recorded_errors.count;
    if (test_packed()) {
        arena_free(&a, r, 30); /* r: a block of 24 bytes */
        assert_true(test_misuse_reported(count, ARENA_ERR_BAD_SIZE));
        assert_int_equal(arena_size(&a), live);
    }
    arena_free(&a, r, 20);
    live -= 20;
    assert_int_equal(arena_size(&a), live);

    /* The global family: a block of 24 bytes freed goes back to its own
     * class (the next value of 17 to 24 bytes takes it), and grown past it
     * moves, its bytes kept. */
    if (test_packed()) {
        arena *prev = arena_set_current(&a);
        r = (char *)arena_hook_lua_align8(&a, NULL, 0, 24);
        fill_pattern(r, 24, 5);
        assert_int_equal(arena_cur_size(r), 24);
        p = (char *)arena_cur_realloc(r, 30);
        assert_non_null(p);
        assert_ptr_not_equal(p, r);
        assert_true(has_pattern(p, 24, 5));
        arena_cur_free(p);
        q = (char *)arena_hook_lua_align8(&a, NULL, 0, 24);
        assert_ptr_equal(q, r);
        arena_cur_free(q);
        arena_set_current(prev);
        assert_ptr_equal(arena_hook_lua_align8(&a, NULL, 0, 17), r);
    }
    assert_int_equal(recorded_errors.count, recorded_errors.expected);
    assert_true(arena_check(&a));
    arena_release(&a);
    restore_errors();
}

static void hook_realloc_shape(void **state)
{
    arena a;
    char *p, *q;
    (void)state;

    arena_init(&a, 4096);
    p = (char *)arena_hook_realloc(&a, NULL, 99, 32);
    assert_non_null(p);
    assert_true(aligned(p));
    fill_pattern(p, 32, 4);
    q = (char *)arena_hook_realloc(&a, p, 32, 64);
    assert_ptr_equal(q, p);
    assert_true(has_pattern(q, 32, 4));
    q = (char *)arena_hook_realloc(&a, p, 64, 0); /* a block of no bytes */
    assert_ptr_equal(q, p);
    assert_int_equal(arena_size(&a), 0);
    assert_null(arena_hook_realloc(&a, p, 0, SIZE_MAX));
    assert_int_equal(arena_size(&a), 0);
    arena_release(&a);
}

/* A shrink to nothing of a block that is not the most recent leaves the
 * position where it was: the block after it stays live, and a value of its
 * own chunk leaves the current chunk alone (found by fuzz/fuzz_hooks.c:
 * instrumented builds, whose adapters keep exact sizes, took the shrink to
 * 0 for one of the most recent value; plain builds, which rounded 0 up to a
 * 16-byte class, moved the block instead of returning it). */
static void hook_realloc_to_nothing_not_last(void **state)
{
    arena a;
    char *x, *y, *z, *big;
    (void)state;

    record_errors();
    arena_init(&a, 4096);
    x = (char *)arena_hook_realloc(&a, NULL, 0, 100);
    y = (char *)arena_hook_realloc(&a, NULL, 0, 100);
    assert_non_null(x);
    assert_non_null(y);
    fill_pattern(y, 100, 7);
    assert_ptr_equal(arena_hook_realloc(&a, x, 100, 0), x);
    z = (char *)arena_hook_realloc(&a, NULL, 0, 100);
    assert_non_null(z);
    fill_pattern(z, 100, 8);
    assert_true(has_pattern(y, 100, 7));
    assert_true(arena_check(&a));
    arena_release(&a);

    /* A block of no bytes (not the most recent) grown again, where a free
     * block of the new size waits: the grow takes it, and gives back
     * nothing (its place went back at the shrink; a second filing of it, of
     * no bytes, corrupted the lists: the fuzzer's plain build found it). */
    arena_init(&a, 4096);
    x = (char *)arena_hook_realloc(&a, NULL, 0, 136);
    y = (char *)arena_hook_realloc(&a, NULL, 0, 224);
    z = (char *)arena_hook_realloc(&a, NULL, 0, 8);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(z);
    assert_null(arena_hook_lua(&a, y, 224, 0)); /* a free block of 224 */
    assert_ptr_equal(arena_hook_realloc(&a, x, 136, 0), x);
    x = (char *)arena_hook_realloc(&a, x, 0, 224);
    assert_non_null(x);
    fill_pattern(x, 224, 9);
    for (int i = 0; i < 8; i++) { /* the lists, read back: intact */
        y = (char *)arena_hook_realloc(&a, NULL, 0, 136);
        assert_non_null(y);
        fill_pattern(y, 136, 10);
        z = (char *)arena_hook_realloc(&a, NULL, 0, 224);
        assert_non_null(z);
        fill_pattern(z, 224, 11);
        assert_true(has_pattern(x, 224, 9));
    }
    assert_true(arena_check(&a));
    arena_release(&a);

    arena_init(&a, 4096);
    big = (char *)arena_hook_realloc(&a, NULL, 0, 3 * 4096); /* a chunk of its own */
    assert_non_null(big);
    assert_ptr_equal(arena_hook_realloc(&a, big, 3 * 4096, 0), big);
    assert_true(arena_check(&a));
    z = (char *)arena_alloc(&a, 10);
    assert_non_null(z);
    assert_true(arena_check(&a));
    arena_release(&a);
    assert_int_equal(recorded_errors.count, 0);
    restore_errors();
}

/* ---- An arena as an arena_allocator ------------------------------------------------------ */

/* A hook's free of the arena's most recent value takes the position back
 * to where the value (its head, its header and guard) began, with the lists
 * closed and open: the next value of any call starts there, in every build,
 * as arena_free()'s does; a small value of the arena_cur_* family lies in a
 * page in a plain build, whose block its class's next value takes.  (The
 * allocator of arena_allocator_of() is arena_backs_a_pool()'s.) */
static void hooks_give_back_the_most_recent(void **state)
{
    static const size_t sizes[] = {40, 300, 3000};
    size_t i;
    int hook, open;
    (void)state;

    for (open = 0; open < 2; open++)
        for (hook = 0; hook < 2; hook++)
            for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
                arena a;
                char *v, *q, *first;
                size_t before;
                arena_init(&a, 16384);
                first = (char *)arena_alloc(&a, 16);
                assert_non_null(first);
                if (open) { /* a value not the most recent given back */
                    assert_non_null(arena_alloc(&a, 16));
                    arena_free(&a, first, 16);
                }
                before = arena_size(&a);
                arena_set_current(&a);
                v = (char *)(hook ? arena_cur_malloc(sizes[i])
                                  : arena_hook_lua(&a, NULL, 0, sizes[i]));
                assert_non_null(v);
                memset(v, 3, sizes[i]);
                if (hook)
                    arena_cur_free(v);
                else
                    assert_null(arena_hook_lua(&a, v, sizes[i], 0));
                assert_int_equal(arena_size(&a), before);
                if (hook && sizes[i] <= 256 && test_packed()) {
                    /* a page's block (the family's small values, plain
                     * build): its class's next value takes it */
                    q = (char *)arena_cur_malloc(sizes[i]);
                    assert_ptr_equal(q, v);
                    arena_cur_free(q);
                    q = (char *)arena_alloc(&a, 8);
                    assert_non_null(q);
                    assert_true(q > v);
                } else {
                    q = (char *)arena_alloc(&a, 8);
                    assert_non_null(q);
                    assert_true(q <= v);
                }
                arena_set_current(NULL);
                assert_true(q > first);
                assert_true(arena_check(&a));
                arena_release(&a);
            }
}

static void arena_backs_a_pool(void **state)
{
    arena outer;
    arena_allocator al = tb_allocator(&tb), of;
    arena_pool pool;
    void *slots[10];
    size_t before, i;
    (void)state;

    arena_init_with(&outer, 1 << 16, &al);
    assert_non_null(arena_alloc(&outer, 10));
    before = arena_size(&outer);
    of = arena_allocator_of(&outer);
    assert_ptr_equal(of.ctx, &outer);
    assert_true(arena_pool_init(&pool, 24, 8, 10, &of));
    assert_true(arena_size(&outer) > before);
    for (i = 0; i < 10; i++) {
        slots[i] = arena_pool_alloc(&pool);
        assert_non_null(slots[i]);
        memset(slots[i], (int)i, 24);
    }
    assert_null(arena_pool_alloc(&pool));
    for (i = 0; i < 10; i++)
        arena_pool_free(&pool, slots[i]);
    arena_pool_destroy(&pool); /* its block was the most recent: given back */
    assert_int_equal(arena_size(&outer), before);
    /* the outer arena failing: the pool says so and holds nothing */
    tb.fail_from = tb.calls + 1;
    assert_false(arena_pool_init(&pool, 64, 8, 4096, &of));
    assert_int_equal(arena_size(&outer), before);
    arena_release(&outer);
    assert_int_equal(tb.live, 0);
}

static void arena_backs_an_arena(void **state)
{
    arena outer, inner;
    arena_allocator al = tb_allocator(&tb), of;
    char want[32];
    size_t i;
    (void)state;

    arena_init_with(&outer, 1 << 16, &al);
    of = arena_allocator_of(&outer);
    arena_init_with(&inner, 1024, &of);
    for (i = 0; i < 200; i++) {
        char *s = arena_sprintf(&inner, "value %zu", i);
        assert_non_null(s);
        snprintf(want, sizeof want, "value %zu", i);
        assert_string_equal(s, want);
    }
    assert_true(arena_retained(&inner) >= 2048);
    assert_true(arena_size(&outer) >= arena_retained(&inner));
    arena_reset(&inner);                        /* keeps its chunks */
    assert_non_null(arena_alloc(&inner, 5000)); /* an oversized chunk, from outer */
    assert_true(arena_check(&inner));
    arena_release(&inner);
    assert_true(arena_check(&outer));
    /* a one-chunk inner arena's release gives its chunk back to outer */
    arena_reset(&outer);
    arena_init_with(&inner, 1024, &of);
    assert_non_null(arena_alloc(&inner, 100));
    assert_true(arena_size(&outer) >= 1024);
    arena_release(&inner);
    assert_int_equal(arena_size(&outer), 0);
    /* outer out of memory: the inner arena's allocation fails, nothing changes */
    arena_init_with(&inner, 1024, &of);
    tb.fail_from = tb.calls + 1;
    assert_non_null(arena_alloc(&outer, 60000));
    assert_null(arena_alloc(&inner, 10000));
    assert_int_equal(arena_size(&inner), 0);
    assert_int_equal(arena_retained(&inner), 0);
    arena_release(&inner);
    arena_release(&outer);
    assert_int_equal(tb.live, 0);
}

/* ---- The current arena ------------------------------------------------------------------ */

static void current_nests(void **state)
{
    arena x, y, z;
    (void)state;

    arena_init(&x, 0);
    arena_init(&y, 0);
    arena_init(&z, 0);
    assert_null(arena_current());
    assert_null(arena_set_current(&x));
    assert_ptr_equal(arena_current(), &x);
    assert_ptr_equal(arena_set_current(&y), &x);
    assert_ptr_equal(arena_set_current(&z), &y);
    assert_ptr_equal(arena_current(), &z);
    assert_ptr_equal(arena_set_current(&y), &z);
    assert_ptr_equal(arena_set_current(&x), &y);
    assert_ptr_equal(arena_set_current(NULL), &x);
    assert_null(arena_current());
    arena_release(&x);
    arena_release(&y);
    arena_release(&z);
}

struct thread_probe {
    arena *seen_at_start;
    arena *mine;
    void *block;
    bool in_mine;
};

static void *probe_thread(void *arg)
{
    struct thread_probe *t = (struct thread_probe *)arg;
    size_t before;
    t->seen_at_start = arena_current();
    arena_set_current(t->mine);
    before = arena_size(t->mine);
    t->block = arena_cur_malloc(100);
    t->in_mine = t->block && arena_size(t->mine) == before + stored(100);
    return NULL;
}

static void current_is_per_thread(void **state)
{
    arena main_arena, other;
    struct thread_probe t;
    pthread_t th;
    void *p;
    (void)state;

    arena_init(&main_arena, 0);
    arena_init(&other, 0);
    arena_set_current(&main_arena);
    memset(&t, 0, sizeof t);
    t.mine = &other;
    assert_int_equal(pthread_create(&th, NULL, probe_thread, &t), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_null(t.seen_at_start);
    assert_true(t.in_mine);
    assert_ptr_equal(arena_current(), &main_arena);
    /* the other thread's block, freed here: its arena is not current here,
     * so neither arena is touched */
    p = arena_cur_malloc(8);
    assert_non_null(p);
    arena_cur_free(t.block);
    assert_int_equal(arena_size(&other), stored(100));
    assert_int_equal(arena_size(&main_arena), stored(8));
    arena_cur_free(p);
    assert_int_equal(arena_size(&main_arena), 0);
    arena_set_current(NULL);
    arena_release(&main_arena);
    arena_release(&other);
}

/* ---- The global family ------------------------------------------------------------------ */

static void cur_malloc_heap_without_current(void **state)
{
    size_t n;
    (void)state;

    assert_null(arena_current());
    for (n = 0; n < 200; n += 3) {
        char *p = (char *)arena_cur_malloc(n);
        assert_non_null(p);
        assert_true(aligned(p));
        assert_int_equal(arena_cur_size(p), n);
        memset(p, 0x11, n);
        arena_cur_free(p); /* a leak here fails memcheck and LeakSanitizer */
    }
    assert_null(arena_cur_malloc(opaque_size(SIZE_MAX)));
    assert_null(arena_cur_malloc(opaque_size(SIZE_MAX - HDR_BYTES + 1)));
    assert_null(arena_cur_malloc(opaque_size((size_t)PTRDIFF_MAX)));
    assert_null(arena_cur_calloc(SIZE_MAX / 2 + 1, 2));
    assert_int_equal(arena_cur_size(NULL), 0);
    arena_cur_free(NULL);
    {
        /* realloc that fails, on the heap: NULL, the block intact */
        char *p = (char *)arena_cur_malloc(10), *q;
        assert_non_null(p);
        memcpy(p, "123456789", 10);
        assert_null(arena_cur_realloc(p, opaque_size(SIZE_MAX)));
        assert_null(arena_cur_realloc(p, opaque_size(SIZE_MAX - HDR_BYTES + 1)));
        /* the largest size allowed reaches realloc(), which refuses it where
         * that is beyond the address space (a 32-bit process may have 2 GiB) */
        if (sizeof(size_t) >= 8)
            assert_null(arena_cur_realloc(p, opaque_size((size_t)PTRDIFF_MAX - HDR_BYTES)));
        assert_string_equal(p, "123456789");
        assert_int_equal(arena_cur_size(p), 10);
        q = (char *)arena_cur_realloc(p, 100000);
        assert_non_null(q);
        assert_string_equal(q, "123456789");
        arena_cur_free(q);
    }
}

static void cur_malloc_from_current(void **state)
{
    arena a;
    arena_allocator al = tb_allocator(&tb);
    size_t n, before, calls;
    char *p, *z;
    (void)state;

    arena_init_with(&a, 4096, &al);
    arena_set_current(&a);
    for (n = 0; n < 200; n += 5) {
        before = arena_size(&a);
        p = (char *)arena_cur_malloc(n);
        assert_non_null(p);
        assert_true(cur_aligned(p, n));
        assert_int_equal(arena_size(&a), before + stored(n));
        assert_int_equal(arena_cur_size(p), usable(n));
        memset(p, 0x22, n);
    }
    /* calloc zeroes (the test backing hands out dirty memory) */
    z = (char *)arena_cur_calloc(30, 7);
    assert_non_null(z);
    for (n = 0; n < 210; n++)
        assert_int_equal(z[n], 0);
    assert_int_equal(arena_cur_size(z), usable(210));
    p = arena_cur_strdup("strdup");
    assert_string_equal(p, "strdup");
    assert_int_equal(arena_cur_size(p), usable(7));
    /* too large: NULL, no backing call, arena unchanged */
    before = arena_size(&a);
    calls = tb.calls;
    assert_null(arena_cur_malloc(opaque_size(SIZE_MAX)));
    assert_null(arena_cur_malloc(opaque_size(SIZE_MAX - HDR_BYTES)));
    assert_null(arena_cur_calloc(SIZE_MAX / 4, 8));
    assert_null(arena_cur_calloc(3, SIZE_MAX / 2));
    assert_int_equal(arena_size(&a), before);
    assert_int_equal(tb.calls, calls);
    /* the arena out of memory: NULL, never the heap */
    tb.fail_from = tb.calls + 1;
    assert_null(arena_cur_malloc(5000));
    assert_null(arena_cur_calloc(50, 100));
    {
        static char longer[5000];
        memset(longer, 'x', sizeof longer - 1);
        assert_null(arena_cur_strdup(longer));
    }
    assert_int_equal(arena_size(&a), before);
    arena_set_current(NULL);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

static void cur_free_reuses(void **state)
{
    arena a;
    char *x, *y, *z;
    size_t base;
    (void)state;

    arena_init(&a, 4096);
    arena_set_current(&a);
    x = (char *)arena_cur_malloc(40);
    base = arena_size(&a);
    y = (char *)arena_cur_malloc(24);
    assert_non_null(x);
    assert_non_null(y);
    arena_cur_free(x); /* not the most recent: a free block */
    assert_int_equal(arena_size(&a), base + stored(24) - stored(40));
#if TEST_ASAN
    assert_true(__asan_address_is_poisoned(x));     /* a use after free is caught */
    assert_true(__asan_address_is_poisoned(y - 1)); /* and so is a write before a block */
    assert_false(__asan_address_is_poisoned(y));
#endif
    arena_cur_free(y);
    assert_int_equal(arena_size(&a), base - stored(40));
    z = (char *)arena_cur_malloc(4); /* another class: in a plain build's pages,
                                        x's place is kept; the instrumented
                                        builds keep no pages, and the
                                        smallest free block that holds it
                                        is x's */
    assert_non_null(z);
    if (test_packed())
        assert_ptr_not_equal(z, x);
    arena_cur_free(z);
    z = (char *)arena_cur_malloc(36); /* x's class: x's place (a free block
                                         at least, where z split it) */
    if (test_packed())
        assert_ptr_equal(z, x);
    else
        assert_int_equal(arena_retained(&a), 4096);
    arena_cur_free(z);
    assert_true(arena_check(&a));
    arena_set_current(NULL);
    arena_release(&a);
}

static void cur_realloc_in_the_arena(void **state)
{
    arena a;
    char *p, *q, *r;
    size_t before;
    (void)state;

    arena_init(&a, 4096);
    arena_set_current(&a);
    p = (char *)arena_cur_realloc(NULL, 272); /* NULL: malloc (a block with a header) */
    assert_non_null(p);
    fill_pattern(p, 32, 5);
    q = (char *)arena_cur_realloc(p, 300); /* the most recent: in place */
    assert_ptr_equal(q, p);
    assert_int_equal(arena_cur_size(q), 300);
    assert_int_equal(arena_size(&a), HDR_BYTES + 300);
    assert_true(has_pattern(q, 32, 5));
    fill_pattern(q, 300, 6);
    r = (char *)arena_cur_malloc(260); /* with a header too: right after q */
    assert_non_null(r);
    p = (char *)arena_cur_realloc(q, 600); /* not the most recent: copied */
    assert_non_null(p);
    assert_ptr_not_equal(p, q);
    assert_true(aligned(p));
    assert_true(has_pattern(p, 300, 6));
    assert_int_equal(arena_cur_size(p), 600);
#if TEST_ASAN
    assert_true(__asan_address_is_poisoned(q)); /* the old block is dead */
#endif
    before = arena_size(&a);
    q = (char *)arena_cur_realloc(p, 100); /* shrink in place, tail given back */
    assert_ptr_equal(q, p);
    assert_int_equal(arena_size(&a), before - 500);
    assert_true(has_pattern(q, 100, 6));
    q = (char *)arena_cur_realloc(r, 0); /* not the most recent: a block of no
                                            bytes, moved to a smaller one */
    assert_non_null(q);
    assert_int_equal(arena_cur_size(q), 0);
    q = (char *)arena_cur_realloc(p, 0); /* no longer the most recent either */
    assert_non_null(q);
    assert_int_equal(arena_cur_size(q), 0);
    /* overflow: NULL, block unchanged */
    p = (char *)arena_cur_realloc(q, 20);
    fill_pattern(p, 20, 7);
    before = arena_size(&a);
    assert_null(arena_cur_realloc(p, SIZE_MAX));
    assert_null(arena_cur_realloc(p, SIZE_MAX - HDR_BYTES));
    assert_int_equal(arena_size(&a), before);
    assert_true(has_pattern(p, 20, 7));
    assert_int_equal(arena_cur_size(p), 20);
    assert_true(arena_check(&a));
    arena_set_current(NULL);
    arena_release(&a);
}

/* A heap block stays on the heap, whatever arena is current; an arena block
 * realloc'd while its arena is not current goes to the heap. */
static void cur_realloc_keeps_lifetimes(void **state)
{
    arena a, b;
    char *heap, *ina, *moved;
    size_t sa, sb;
    (void)state;

    arena_init(&a, 4096);
    arena_init(&b, 4096);
    heap = (char *)arena_cur_malloc(50);
    assert_non_null(heap);
    fill_pattern(heap, 50, 8);
    arena_set_current(&a);
    ina = (char *)arena_cur_malloc(70);
    assert_non_null(ina);
    fill_pattern(ina, 70, 9);
    sa = arena_size(&a);
    heap = (char *)arena_cur_realloc(heap, 5000);
    assert_non_null(heap);
    assert_true(aligned(heap));
    assert_true(has_pattern(heap, 50, 8));
    assert_int_equal(arena_size(&a), sa);
    /* an inner scope: a's block is moved to the heap, neither arena grows */
    assert_ptr_equal(arena_set_current(&b), &a);
    moved = (char *)arena_cur_realloc(ina, 90);
    assert_non_null(moved);
    assert_true(has_pattern(moved, 70, 9));
    assert_int_equal(arena_cur_size(moved), 90);
    assert_int_equal(arena_size(&a), sa);
    assert_int_equal(arena_size(&b), 0);
    sb = arena_size(&b);
    arena_cur_free(heap); /* freed on the heap, b untouched */
    assert_int_equal(arena_size(&b), sb);
    arena_set_current(&a);
    arena_release(&b); /* the moved block survives its arena's scopes */
    arena_release(&a);
    assert_true(has_pattern(moved, 70, 9));
    arena_set_current(NULL);
    /* with no arena current, an arena block is also moved to the heap */
    arena_set_current(&a);
    ina = (char *)arena_cur_malloc(10);
    assert_non_null(ina);
    memcpy(ina, "123456789", 10);
    arena_set_current(NULL);
    assert_null(arena_cur_realloc(ina, opaque_size(SIZE_MAX))); /* too large: NULL */
    heap = (char *)arena_cur_realloc(ina, 20);
    assert_non_null(heap);
    assert_string_equal(heap, "123456789");
    assert_int_equal(arena_size(&a), stored(10));
    /* the realloc freed `ina`: freeing it again is reported, and its arena
     * (not current) is not touched */
    record_errors();
    arena_cur_free(ina);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
    restore_errors();
    assert_int_equal(arena_size(&a), stored(10));
    arena_cur_free(heap);
    arena_cur_free(moved);
    arena_release(&a);
}

/* Out of memory in realloc: NULL, the block intact and still usable. */
static void cur_realloc_out_of_memory(void **state)
{
    arena a;
    arena_allocator al = tb_allocator(&tb);
    char *p, *q;
    size_t before;
    (void)state;

    arena_init_with(&a, 1024, &al);
    arena_set_current(&a);
    p = (char *)arena_cur_malloc(500);
    assert_non_null(p);
    fill_pattern(p, 500, 10);
    tb.fail_from = tb.calls + 1;
    before = arena_size(&a);
    assert_null(arena_cur_realloc(p, 3000));
    assert_int_equal(arena_size(&a), before);
    assert_true(has_pattern(p, 500, 10));
    assert_int_equal(arena_cur_size(p), 500);
    q = (char *)arena_cur_realloc(p, 600); /* fits the chunk: no backing call */
    assert_ptr_equal(q, p);
    arena_cur_free(q);
    assert_int_equal(arena_size(&a), 0);
    arena_set_current(NULL);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

/* Pointers that are not from the family, or whose header was overwritten,
 * go to the error handler; then the call does nothing. */
static void cur_foreign_pointers(void **state)
{
    alignas(16) static unsigned char zeroes[64];
    void *fake = zeroes + 32;
    (void)state;

    record_errors();
    arena_cur_free(fake);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_FOREIGN_POINTER);
    assert_non_null(strstr(recorded_errors.message, "arena_cur_free"));
    assert_null(arena_cur_realloc(fake, 10));
    assert_int_equal(recorded_errors.count, 2);
    assert_non_null(strstr(recorded_errors.message, "arena_cur_realloc"));
    assert_int_equal(arena_cur_size(fake), 0);
    assert_int_equal(recorded_errors.count, 3);
    assert_non_null(strstr(recorded_errors.message, "arena_cur_size"));
#if !TEST_ASAN
    {
        /* a stray write that changes the size field (ASan reports the write
         * itself: the header is poisoned, see cur_free_reuses) */
        arena a;
        void *p;
        size_t *size_field;
        arena_init(&a, 0);
        arena_set_current(&a);
        p = arena_cur_malloc(300); /* a block with a header in every layout */
        assert_non_null(p);
        size_field = (size_t *)(uintptr_t)((uintptr_t)p - HDR_BYTES);
        *size_field ^= 1;
        arena_cur_free(p);
        assert_int_equal(recorded_errors.count, 4);
        assert_int_equal(arena_cur_size(p), 0);
        assert_int_equal(recorded_errors.count, 5);
        *size_field ^= 1;
        assert_int_equal(arena_cur_size(p), 300);
        arena_cur_free(p);
        assert_int_equal(arena_size(&a), 0);
        arena_set_current(NULL);
        arena_release(&a);
    }
#endif
    assert_true(zeroes[0] == 0 && zeroes[63] == 0); /* nothing written */
    restore_errors();
}

/* ---- Blocks in pages (a plain build's layout of small blocks) --------------------------- */

#define PAGE_BYTES ((uintptr_t)4096)

/* The small blocks of one class: handed out side by side, reused last in
 * first out, a second free and a pointer inside a block reported, in every
 * layout; in the plain build's, a page holds them with no header between. */
static void cur_small_blocks(void **state)
{
    arena a;
    char *p[100], *q;
    size_t i, before;
    (void)state;

    arena_init(&a, 0);
    arena_set_current(&a);
    for (i = 0; i < 100; i++) {
        p[i] = (char *)arena_cur_malloc(64);
        assert_non_null(p[i]);
        assert_true(aligned(p[i]));
        memset(p[i], 0x5A, 64);
        /* blocks of a page lie 64 bytes apart, with no header */
        if (paged(64) && i > 0 &&
            ((uintptr_t)p[i] & ~(PAGE_BYTES - 1)) == ((uintptr_t)p[i - 1] & ~(PAGE_BYTES - 1)))
            assert_int_equal(p[i] - p[i - 1], 64);
    }
    assert_int_equal(arena_size(&a), 100 * stored(64));
    assert_int_equal(arena_cur_size(p[7]), usable(64));
    arena_cur_free(p[50]);
    arena_cur_free(p[60]);
    assert_int_equal(arena_size(&a), 98 * stored(64));
    q = (char *)arena_cur_malloc(50); /* the class of 64: the last freed first */
    assert_ptr_equal(q, p[60]);
    q = (char *)arena_cur_malloc(64);
    assert_ptr_equal(q, p[50]);
    assert_int_equal(arena_size(&a), 99 * stored(64) + stored(50));

    record_errors();
    arena_cur_free(p[10]);
    before = arena_size(&a);
    arena_cur_free(p[10]);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
    assert_null(arena_cur_realloc(p[10], 10));
    assert_int_equal(recorded_errors.count, 2);
    assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
    assert_int_equal(arena_size(&a), before);
    /* inside a block, not its start */
    arena_cur_free(p[11] + 16);
    assert_int_equal(recorded_errors.count, 3);
    assert_int_equal(recorded_errors.last, ARENA_ERR_FOREIGN_POINTER);
    assert_int_equal(arena_size(&a), before);
    restore_errors();
    q = (char *)arena_cur_malloc(64); /* p[10]'s place, handed out once */
    assert_ptr_equal(q, p[10]);
    assert_ptr_not_equal(arena_cur_malloc(64), p[10]);
    assert_true(arena_check(&a));
    arena_set_current(NULL);
    arena_release(&a);
}

/* A pointer inside a block of a page, at any offset past its start, is no
 * block of the family, in every class: reported, and nothing given back; the
 * blocks' starts are still freed once each.  So is one inside a block with a
 * header in the checked build (its check word), and in every build one that
 * no header could precede (misaligned for it: read as a header, undefined);
 * elsewhere the header's cheap test catches most such pointers, not all
 * (hooks.h), so none is tried. */
static void cur_interior_pointers_reported(void **state)
{
    static const size_t sizes[] = {1,   7,   8,   9,   16,  17,  24,  33,  48,  64,  80,
                                   100, 128, 129, 176, 200, 240, 255, 256, 257, 1000};
    arena a;
    size_t i, j, k, errors = 0, before;
    char *p[3];
    (void)state;

    arena_init(&a, 0);
    arena_set_current(&a);
    record_errors();
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        bool every = paged(sizes[i]) || ARENA_CHECKED;
        for (j = 0; j < 3; j++) {
            p[j] = (char *)arena_cur_malloc(sizes[i]);
            assert_non_null(p[j]);
            memset(p[j], 0xA5, sizes[i]);
        }
        before = arena_size(&a);
        for (j = 0; j < 3; j++) {
            for (k = 1; k < arena_cur_size(p[j]); k++) {
                if (!every && k % _Alignof(uintptr_t) == 0)
                    continue;
                arena_cur_free(p[j] + k);
                assert_null(arena_cur_realloc(p[j] + k, sizes[i] + 1));
                assert_int_equal(arena_cur_size(p[j] + k), 0);
                errors += 3;
                assert_int_equal(recorded_errors.count, errors);
                assert_int_equal(recorded_errors.last, ARENA_ERR_FOREIGN_POINTER);
            }
        }
        assert_int_equal(arena_size(&a), before);
        for (j = 0; j < 3; j++)
            arena_cur_free(p[j]);
        assert_int_equal(recorded_errors.count, errors);
    }
    restore_errors();
    assert_true(arena_check(&a));
    arena_set_current(NULL);
    arena_release(&a);
}

/* Blocks of at most 8 bytes: 8-aligned, 8 apart in the plain build's
 * pages (whose free blocks have no room for a key: a second free is still
 * reported, from the page's bits), reused last in first out. */
static void cur_tiny_blocks(void **state)
{
    arena a, b;
    char *p[600], *q;
    size_t i;
    (void)state;

    arena_init(&a, 0);
    arena_init(&b, 0);
    arena_set_current(&a);
    for (i = 0; i < 600; i++) {
        p[i] = (char *)arena_cur_malloc(i % 9);
        assert_non_null(p[i]);
        assert_true(cur_aligned(p[i], 8));
        memset(p[i], 0xA5, i % 9);
        if (paged(8) && i > 0 &&
            ((uintptr_t)p[i] & ~(PAGE_BYTES - 1)) == ((uintptr_t)p[i - 1] & ~(PAGE_BYTES - 1)))
            assert_int_equal(p[i] - p[i - 1], 8);
    }
    assert_int_equal(arena_cur_size(p[5]), usable(5));
    record_errors();
    for (i = 0; i < 600; i += 7) {
        arena_cur_free(p[i]);
        arena_cur_free(p[i]);
        assert_int_equal(recorded_errors.count, i / 7 + 1);
        assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
    }
    restore_errors();
    q = (char *)arena_cur_malloc(3); /* the last freed */
    assert_ptr_equal(q, p[595]);
    q = (char *)arena_cur_malloc(1);
    assert_ptr_equal(q, p[588]);
    /* another arena's: left alone (and a page's 8-byte block has no room
     * to be marked freed: its arena's bits are that arena's thread's), so a
     * second free is reported only where a header shows it */
    arena_set_current(&b);
    i = arena_size(&a);
    arena_cur_free(p[1]);
    record_errors();
    arena_cur_free(p[1]);
    assert_int_equal(recorded_errors.count, paged(1) ? 0 : 1);
    if (!paged(1))
        assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
    restore_errors();
    assert_int_equal(arena_size(&b), 0);
    assert_int_equal(arena_size(&a), i);
    arena_set_current(NULL);
    arena_release(&b);
    arena_release(&a);
}

/* An arena set up inline in a caller's buffer (arena_init_buffer() with no
 * backing: its bookkeeping is written at its first library call), in
 * memory that held another arena: its blocks must not use what that
 * bookkeeping held before (the fuzzer's plain build found a stale table
 * taken there: a write into freed memory, or a table lost). */
static void cur_small_blocks_in_a_lazy_arena(void **state)
{
    alignas(16) static char buf[8192];
    alignas(16) static unsigned char stale[4096];
    arena a;
    char *p[20];
    size_t i;
    (void)state;

    memset(&a, 0, sizeof a);
    memset(stale, 0x5A, sizeof stale);
    /* what a released arena may leave: a table pointer, no flags */
    arena__cold(&a)->reuse = (struct arena__reuse *)(void *)stale;
    arena_init_buffer(&a, buf, sizeof buf, NULL);
    arena_set_current(&a);
    for (i = 0; i < 20; i++) {
        p[i] = (char *)arena_cur_malloc(24);
        assert_non_null(p[i]);
        fill_pattern(p[i], 24, i);
    }
    for (i = 0; i < 20; i += 2)
        arena_cur_free(p[i]);
    for (i = 1; i < 20; i += 2)
        assert_true(has_pattern(p[i], 24, i));
    for (i = 0; i < sizeof stale; i++)
        assert_int_equal(stale[i], 0x5A);
    assert_true(arena_check(&a));
    arena_set_current(NULL);
    arena_release(&a);
}

/* Resizing a small block: within its class it stays; to another class it
 * moves, and its old place goes back to its class. */
static void cur_small_realloc(void **state)
{
    arena a;
    char *p, *q, *r;
    (void)state;

    arena_init(&a, 0);
    arena_set_current(&a);
    p = (char *)arena_cur_malloc(20);
    assert_non_null(p);
    fill_pattern(p, 20, 3);
    q = (char *)arena_cur_realloc(p, 30);
    assert_non_null(q);
    assert_true(has_pattern(q, 20, 3));
    if (paged(30)) {
        assert_ptr_equal(q, p); /* the class of 32 holds it */
        assert_int_equal(arena_cur_size(q), 32);
    }
    fill_pattern(q, 30, 4);
    r = (char *)arena_cur_realloc(q, 200);
    assert_non_null(r);
    assert_true(has_pattern(r, 30, 4));
    assert_int_equal(arena_cur_size(r), usable(200));
    assert_int_equal(arena_size(&a), stored(200) + (paged(30) ? 0 : stored(0) - stored(0)));
    fill_pattern(r, 200, 5);
    q = (char *)arena_cur_realloc(r, 1000); /* past the pages: a header */
    assert_non_null(q);
    assert_true(has_pattern(q, 200, 5));
    assert_int_equal(arena_cur_size(q), 1000);
    q = (char *)arena_cur_realloc(q, 8); /* a block with a header keeps it */
    assert_non_null(q);
    assert_int_equal(arena_cur_size(q), 8);
    assert_true(has_pattern(q, 8, 5));
    p = (char *)arena_cur_malloc(100);
    assert_non_null(p);
    fill_pattern(p, 100, 6);
    r = (char *)arena_cur_realloc(p, 0); /* a block of no bytes */
    assert_non_null(r);
    assert_int_equal(arena_cur_size(r), paged(100) ? 8 : 0);
    if (paged(100)) /* p's place went back to the class of 112 */
        assert_ptr_equal(arena_cur_malloc(112), p);
    arena_cur_free(r);
    arena_cur_free(q);
    assert_true(arena_check(&a));
    arena_set_current(NULL);
    arena_release(&a);
}

/* Blocks with a header placed where pages were, after the batch or the
 * scope that held the pages ended, are never taken for pages' blocks (the
 * pages' headers are erased): their bytes are never written here, so that
 * whatever the memory held before stays. */
static void cur_pages_end_with_their_batch(void **state)
{
    arena a;
    char *p[200], *keep;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    size_t i, k, overlap = 0, reusing = 0;
    bool before_guarded;
    int round;
    (void)state;

    arena_init(&a, 0);
    arena_set_current(&a);
    for (round = 0; round < 4; round++) {
        arena_mark m;
        /* a block of another class: before the mark (rounds 2 and 3), or
         * after it */
        keep = round >= 2 ? (char *)arena_cur_malloc(48) : NULL;
        m = arena_save(&a);
        if (round < 2)
            assert_non_null(arena_cur_malloc(48));
        for (i = 0; i < 200; i++) {
            p[i] = (char *)arena_cur_malloc(200);
            assert_non_null(p[i]);
            memset(p[i], 0xEE, 200);
            if ((uintptr_t)p[i] < lo)
                lo = (uintptr_t)p[i];
            if ((uintptr_t)p[i] > hi)
                hi = (uintptr_t)p[i];
        }
        before_guarded = arena_guarded(&a);
        if (round % 2 == 0) {
            arena_reset(&a);
            keep = NULL;
        } else {
            arena_rewind(&a, m);
        }
        for (i = 0; i < 200; i++) {
            char *h = (char *)arena_cur_malloc(1000 - 3 * i);
            assert_non_null(h);
            /* a guarded batch's memory is not given out again (guard.h) */
            if (i == 0 && !before_guarded && !arena_guarded(&a))
                reusing++;
            if ((uintptr_t)h >= lo && (uintptr_t)h <= hi)
                overlap++;
            assert_int_equal(arena_cur_size(h), 1000 - 3 * i);
            if (i % 3 == 0)
                arena_cur_free(h);
        }
        if (keep) { /* a block from before the mark is still a block */
            assert_int_equal(arena_cur_size(keep), usable(48));
            arena_cur_free(keep);
        }
        for (k = 0; k < 50; k++)
            assert_non_null(arena_cur_malloc(200));
        arena_reset(&a);
    }
    /* the blocks with headers did land on the pages */
    assert_true(overlap > 0 || reusing == 0);
    assert_true(reusing > 0 || getenv("ARENA_GUARD") != NULL);
    arena_set_current(NULL);
    arena_release(&a);
}

/* A block of an arena that is not current: a free leaves it (and its
 * arena) alone, and a second free is reported. */
static void cur_small_block_of_another_arena(void **state)
{
    arena a, b;
    char *p, *q;
    size_t sa;
    (void)state;

    arena_init(&a, 0);
    arena_init(&b, 0);
    arena_set_current(&a);
    p = (char *)arena_cur_malloc(40);
    q = (char *)arena_cur_malloc(40);
    assert_non_null(p);
    assert_non_null(q);
    sa = arena_size(&a);
    arena_set_current(&b);
    arena_cur_free(p);
    assert_int_equal(arena_size(&a), sa);
    assert_int_equal(arena_size(&b), 0);
    record_errors();
    arena_cur_free(p);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_DOUBLE_FREE);
    restore_errors();
    /* realloc from b: a copy on the heap */
    fill_pattern(q, 40, 2);
    p = (char *)arena_cur_realloc(q, 60);
    assert_non_null(p);
    assert_true(has_pattern(p, 40, 2));
    assert_int_equal(arena_cur_size(p), 60);
    assert_int_equal(arena_size(&b), 0);
    arena_set_current(NULL);
    arena_release(&b);
    arena_release(&a);
    arena_cur_free(p); /* the heap's */
}

#if !TEST_ASAN
/* In the plain build's layout, an overwritten free block or page header is
 * reported; elsewhere, an overwritten header (ASan reports the write
 * itself). */
static void cur_page_corruption(void **state)
{
    arena a;
    char *p, *q, *old;
    uintptr_t *page;
    (void)state;

    arena_init(&a, 0);
    arena_set_current(&a);
    record_errors();
    if (!paged(32)) { /* blocks with headers: an overwritten header instead */
        p = (char *)arena_cur_malloc(32);
        assert_non_null(p);
        page = (uintptr_t *)(uintptr_t)((uintptr_t)p - HDR_BYTES);
        page[1] ^= 1;
        arena_cur_free(p);
        assert_int_equal(recorded_errors.count, 1);
        assert_int_equal(recorded_errors.last, ARENA_ERR_FOREIGN_POINTER);
        page[1] ^= 1;
        arena_cur_free(p);
        assert_int_equal(recorded_errors.count, 1);
        restore_errors();
        arena_set_current(NULL);
        arena_release(&a);
        return;
    }
    p = (char *)arena_cur_malloc(32);
    q = (char *)arena_cur_malloc(32);
    assert_non_null(p);
    assert_non_null(q);
    arena_cur_free(p);
    memset(p, 0x77, 16); /* a write after free over the list's node */
    old = p;
    p = (char *)arena_cur_malloc(32);
    assert_non_null(p);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_CORRUPT);
    assert_ptr_equal(q, old + 32);
    memset(old + 16, 0, 16); /* what a header before q would be: none */
    page = (uintptr_t *)(void *)((uintptr_t)q & ~(PAGE_BYTES - 1));
    page[0] ^= 1; /* an overwritten page header: q is no block of the family */
    arena_cur_free(q);
    assert_int_equal(recorded_errors.count, 2);
    assert_int_equal(recorded_errors.last, ARENA_ERR_FOREIGN_POINTER);
    page[0] ^= 1;
    arena_cur_free(q);
    assert_int_equal(recorded_errors.count, 2);
    restore_errors();
    arena_set_current(NULL);
    arena_release(&a);
}
#endif

/* ---- The family under failure at each backing call -------------------------------------- */

#define LIVE 24

/* A workload of malloc/calloc/realloc/free over LIVE slots with a 256-byte
 * chunk size (many backing calls); every call that fails must leave the
 * arena and every live block as they were.  Returns the backing calls. */
static size_t family_workload(size_t fail_at, size_t fail_from, size_t *failures)
{
    arena a;
    arena_allocator al = tb_allocator(&tb);
    char *slot[LIVE] = {0};
    size_t len[LIVE] = {0}, i, calls;
    uint64_t x = 0x9E3779B97F4A7C15ull;

    tb.fail_at = fail_at;
    tb.fail_from = fail_from;
    arena_init_with(&a, 256, &al);
    arena_set_current(&a);
    for (i = 0; i < 250; i++) {
        size_t k, n, before = arena_size(&a), failed = tb.failed;
        char *p;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        k = (size_t)(x % LIVE);
        n = (size_t)(x >> 40) % 400;
        switch ((x >> 20) % 4) {
        case 0:
        case 1: p = (char *)(x & 0x100000 ? arena_cur_calloc(1, n) : arena_cur_malloc(n)); break;
        case 2: p = (char *)arena_cur_realloc(slot[k], n); break;
        default:
            arena_cur_free(slot[k]);
            slot[k] = NULL;
            len[k] = 0;
            continue;
        }
        if (!p) {
            assert_true(tb.failed > failed); /* only the backing may fail */
            assert_int_equal(arena_size(&a), before);
            (*failures)++;
            continue;
        }
        /* A realloc absorbs a refusal: a shrink that could not move shrinks
         * in place, a move whose old block could not be filed leaves it to
         * the batch.  An allocation does only where a page was refused: the
         * block then gets a header instead. */
        if (tb.failed > failed) {
            assert_true((x >> 20) % 4 == 2 || paged(n));
            (*failures)++;
        }
        assert_true(cur_aligned(p, n));
        if ((x >> 20) % 4 == 2) {
            assert_true(has_pattern(p, len[k] < n ? len[k] : n, k));
        } else {
            arena_cur_free(slot[k]);
        }
        fill_pattern(p, n, k);
        slot[k] = p;
        len[k] = n;
        for (n = 0; n < LIVE; n++) {
            if (slot[n]) {
                /* a block with a header (a page's refused, or one grown
                 * past a page) may use what was asked; a page's block, its
                 * class's size (a shrink that could not move keeps its
                 * class) */
                size_t size = arena_cur_size(slot[n]);
                assert_true(size == len[n] ||
                            (paged(size) && size >= len[n] && (size == 8 || size % 16 == 0)));
                assert_true(has_pattern(slot[n], len[n], n));
            }
        }
    }
    assert_true(arena_check(&a));
    arena_set_current(NULL);
    calls = tb.calls;
    arena_release(&a);
    assert_int_equal(tb.live, 0);
    return calls;
}

static void family_failure_sweep(void **state)
{
    size_t failures = 0, total = family_workload(0, 0, &failures), n;
    size_t silent_at = 0, silent_from = 0;
    (void)state;
    assert_int_equal(failures, 0);
    assert_true(total > 20);
    for (n = 1; n <= total; n++) {
        size_t at = 0, from = 0;
        family_workload(n, 0, &at);
        family_workload(0, n, &from);
        /* One call fails no allocation: the arena's table of free blocks
         * (without it, freed blocks wait for the reset instead). */
        silent_at += at == 0;
        silent_from += from == 0;
    }
    assert_true(silent_at <= 1);
    assert_true(silent_from <= 1);
}

/* ---- The scoped current arena ---------------------------------------------------------- */

static arena *inner_current;

static int early_return(arena *a, bool leave)
{
    arena *prev = arena_current_begin(a);
    if (leave) {
        arena_current_end(prev);
        return 1;
    }
    inner_current = arena_current();
    arena_current_end(prev);
    return 0;
}

#if ARENA_HAVE_SCOPE
static int scoped_return(arena *a, int how)
{
    ARENA_CURRENT_SCOPE(a);
    inner_current = arena_current();
    if (how == 0)
        return 1;
    for (;;) {
        ARENA_CURRENT_SCOPE(NULL);
        assert_null(arena_current());
        if (how == 1)
            break;
        goto out;
    }
    assert_ptr_equal(arena_current(), a);
    return 2;
out:
    assert_ptr_equal(arena_current(), a);
    return 3;
}
#endif

/* arena_current_begin()/arena_current_end() and ARENA_CURRENT_SCOPE restore
 * the previous current arena on every path out, nested and early returns
 * included. */
/* A value shrunk to nothing gave its block back, and another value took
 * part of that memory: the value's growth from nothing is a new value, and
 * gives back nothing of what its old place holds now.  It gave back the head
 * before it, inside the other value, which the lists then overwrote. */
static void grow_from_nothing_gives_back_nothing(void **state)
{
    arena a;
    unsigned char *v, *c1, *c2, *w;
    (void)state;

    arena_init(&a, 4096);
    arena_set_current(&a);
    v = (unsigned char *)arena_hook_alloc(&a, 224);
    assert_non_null(v);
    assert_ptr_equal(arena_hook_realloc(&a, v, 224, 0), v); /* given back */
    c1 = (unsigned char *)arena_cur_malloc(1);
    assert_non_null(c1);
    w = (unsigned char *)arena_hook_realloc(&a, v, 0, 30);
    assert_non_null(w);
    assert_ptr_equal(arena_hook_realloc(&a, w, 30, 0), w);
    arena_cur_free(c1);
    c2 = (unsigned char *)arena_cur_malloc(46);
    assert_non_null(c2);
    memset(c2, 0xC2, 46);
    v = (unsigned char *)arena_hook_realloc(&a, w, 0, 30);
    assert_non_null(v);
    memset(v, 0xA3, 30);
    assert_true(v + 30 <= c2 || v >= c2 + 46);
    for (int i = 0; i < 46; i++)
        assert_int_equal(c2[i], 0xC2);
    for (int i = 0; i < 30; i++)
        assert_int_equal(v[i], 0xA3);
    arena_cur_free(c2);
    arena_set_current(NULL);
    arena_release(&a);
}

static void current_scope(void **state)
{
    arena a = {0}, b = {0};
    (void)state;
    assert_null(arena_current());
    assert_int_equal(early_return(&a, true), 1);
    assert_null(arena_current());
    assert_int_equal(early_return(&a, false), 0);
    assert_ptr_equal(inner_current, &a);
    assert_null(arena_current());
    {
        arena *outer = arena_current_begin(&a);
        arena *mid = arena_current_begin(&b);
        assert_ptr_equal(mid, &a);
        assert_ptr_equal(arena_current(), &b);
        arena_current_end(mid);
        assert_ptr_equal(arena_current(), &a);
        arena_current_end(outer);
    }
#if ARENA_HAVE_SCOPE
    {
        ARENA_CURRENT_SCOPE(&b);
        assert_int_equal(scoped_return(&a, 0), 1);
        assert_ptr_equal(arena_current(), &b);
        assert_int_equal(scoped_return(&a, 1), 2);
        assert_ptr_equal(arena_current(), &b);
        assert_int_equal(scoped_return(&a, 2), 3);
        assert_ptr_equal(inner_current, &a);
        assert_ptr_equal(arena_current(), &b);
        {
            void *p = arena_cur_malloc(10);
            assert_non_null(p);
            assert_true(arena_size(&b) >= 10);
            arena_cur_free(p);
        }
    }
#endif
    assert_null(arena_current());
    arena_release(&a);
    arena_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(free_last_gives_back),
        cmocka_unit_test(free_last_oversized_and_empty),
        cmocka_unit_test(hook_alloc_and_free),
        cmocka_unit_test(hook_zalloc_overflow),
        cmocka_unit_test(hook_lua_shapes),
        cmocka_unit_test(hook_lua_out_of_memory),
        cmocka_unit_test(hook_lua_align8_shapes),
        cmocka_unit_test(hook_realloc_shape),
        cmocka_unit_test(hook_realloc_to_nothing_not_last),
        cmocka_unit_test_teardown(hooks_give_back_the_most_recent, teardown_current),
        cmocka_unit_test(arena_backs_a_pool),
        cmocka_unit_test(arena_backs_an_arena),
        cmocka_unit_test_teardown(current_nests, teardown_current),
        cmocka_unit_test_teardown(current_is_per_thread, teardown_current),
        cmocka_unit_test_teardown(current_scope, teardown_current),
        cmocka_unit_test_teardown(cur_malloc_heap_without_current, teardown_current),
        cmocka_unit_test_teardown(cur_malloc_from_current, teardown_current),
        cmocka_unit_test_teardown(cur_free_reuses, teardown_current),
        cmocka_unit_test_teardown(cur_realloc_in_the_arena, teardown_current),
        cmocka_unit_test_teardown(cur_realloc_keeps_lifetimes, teardown_current),
        cmocka_unit_test_teardown(cur_realloc_out_of_memory, teardown_current),
        cmocka_unit_test_teardown(cur_foreign_pointers, teardown_current),
        cmocka_unit_test_teardown(cur_small_blocks, teardown_current),
        cmocka_unit_test_teardown(cur_interior_pointers_reported, teardown_current),
        cmocka_unit_test_teardown(cur_tiny_blocks, teardown_current),
        cmocka_unit_test_teardown(cur_small_blocks_in_a_lazy_arena, teardown_current),
        cmocka_unit_test_teardown(cur_small_realloc, teardown_current),
        cmocka_unit_test_teardown(cur_pages_end_with_their_batch, teardown_current),
        cmocka_unit_test_teardown(cur_small_block_of_another_arena, teardown_current),
#if !TEST_ASAN /* which reports the write itself */
        cmocka_unit_test_teardown(cur_page_corruption, teardown_current),
#endif
        cmocka_unit_test_teardown(family_failure_sweep, teardown_current),
        cmocka_unit_test_teardown(grow_from_nothing_gives_back_nothing, teardown_current),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
