/* SPDX-License-Identifier: MIT */
/*
 * The caller-buffer arena and the backing allocator (arena_init_buffer() and
 * arena_allocator in arena.h).
 *
 * This suite is linked with -Wl,--wrap=malloc (and calloc, realloc, free,
 * aligned_alloc, posix_memalign): every call the library makes to the C heap
 * goes through the counters below, so "never calls malloc" is checked, not
 * assumed.
 */
#include "support.h"
#include "internal.h" /* arena__huge_pages(), ARENA__HUGE */

#include <stdalign.h>

/* ---- Counting the library's heap calls ------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **out, size_t align, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
int __wrap_posix_memalign(void **out, size_t align, size_t n);
void __wrap_free(void *p);

static struct {
    size_t allocs; /* every allocating call, failed or not */
    size_t frees;  /* free of a non-NULL pointer */
    long live;     /* allocations not yet freed */
} heap;

static void *count_alloc(void *p)
{
    heap.allocs++;
    if (p)
        heap.live++;
    return p;
}

void *__wrap_malloc(size_t n) { return count_alloc(__real_malloc(n)); }
void *__wrap_calloc(size_t k, size_t n) { return count_alloc(__real_calloc(k, n)); }
void *__wrap_aligned_alloc(size_t align, size_t n)
{
    return count_alloc(__real_aligned_alloc(align, n));
}
int __wrap_posix_memalign(void **out, size_t align, size_t n)
{
    int rc = __real_posix_memalign(out, align, n);
    count_alloc(rc == 0 ? *out : NULL);
    return rc;
}
void *__wrap_realloc(void *p, size_t n)
{
    heap.allocs++;
    return __real_realloc(p, n);
}
void __wrap_free(void *p)
{
    if (p) {
        heap.frees++;
        heap.live--;
    }
    __real_free(p);
}

/* ---- A backing that is not the heap: a bump over a static region -------------- */

#define POOL_BYTES ((size_t)4 << 20)

static struct {
    alignas(64) unsigned char mem[POOL_BYTES];
    size_t used;
    size_t calls, frees, live, live_bytes;
} pool;

static void *pool_alloc(void *ctx, size_t n)
{
    size_t at = (pool.used + 63) & ~(size_t)63;
    (void)ctx;
    pool.calls++;
    if (n > POOL_BYTES - at)
        return NULL;
    pool.used = at + n;
    pool.live++;
    pool.live_bytes += n;
    memset(pool.mem + at, TB_DIRT, n);
    return pool.mem + at;
}

static void pool_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    assert_true((unsigned char *)p >= pool.mem && (unsigned char *)p + n <= pool.mem + pool.used);
    pool.frees++;
    pool.live--;
    pool.live_bytes -= n;
}

static arena_allocator pool_allocator(void)
{
    arena_allocator al;
    memset(&pool, 0, sizeof pool);
    al.alloc = pool_alloc;
    al.free = pool_free;
    al.ctx = NULL;
    return al;
}

static test_backing tb;

static bool inside(const void *p, size_t n, const void *buf, size_t len)
{
    const char *c = (const char *)p, *b = (const char *)buf;
    return c >= b && c + n <= b + len;
}

/* ---- Fixed-size arenas --------------------------------------------------------------- */

static void test_fixed_buffer_never_mallocs(void **state)
{
    alignas(16) static char buf[256];
    arena a;
    char *vals[64];
    size_t n = 0, i, size, allocs;
    char *first;
    arena_mark m;
    (void)state;

    allocs = heap.allocs;
    arena_init_buffer(&a, buf, sizeof buf, NULL);
    assert_int_equal(arena_retained(&a), 256);
    assert_int_equal(arena_size(&a), 0);
    assert_true(arena_check(&a));

    /* Fill it: values land in buf, then NULL. */
    for (;;) {
        char *p = (char *)arena_alloc(&a, 24);
        if (!p)
            break;
        assert_true(n < 64);
        assert_true(inside(p, 24, buf, sizeof buf));
        assert_true(is_aligned(p, ARENA_ALIGN));
        fill_pattern(p, 24, n);
        vals[n++] = p;
    }
    assert_true(n >= 1 && n <= 256 / 24);
    if (test_packed())
        assert_int_equal(n,
                         256 / ((24 + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN)); /* padded */
    size = arena_size(&a);
    assert_int_equal(size, n * 24);
    /* Full: everything that does not fit is NULL, with the state unchanged. */
    assert_null(arena_alloc(&a, 24));
    assert_null(arena_alloc(&a, 5000));
    assert_null(arena_calloc(&a, 10, 10));
    assert_null(ARENA_NEW_ARRAY(&a, uint64_t, 40));
    assert_true(arena_ref_empty(arena_ref_copy(&a, buf, 300, 1)));
    assert_null(arena_realloc(&a, vals[n - 1], 24, 1000));
    assert_non_null(arena_alloc(&a, 0));
    assert_int_equal(arena_size(&a), size);
    assert_int_equal(arena_retained(&a), 256);
    assert_true(arena_check(&a));
    for (i = 0; i < n; i++)
        assert_true(has_pattern(vals[i], 24, i));

    /* Reset and rewind stay inside buf. */
    arena_reset(&a);
    assert_int_equal(arena_retained(&a), 256);
    first = arena_strdup(&a, "first");
    assert_true(inside(first, 6, buf, sizeof buf));
    m = arena_save(&a);
    while (arena_alloc(&a, 16))
        ;
    arena_rewind(&a, m);
    assert_int_equal(arena_size(&a), 6);
    assert_string_equal(first, "first");
    assert_non_null(arena_alloc(&a, 16));

    arena_release(&a);
    assert_int_equal(arena_retained(&a), 256); /* buf stays attached */
    assert_int_equal(arena_size(&a), 0);
    assert_ptr_equal(arena_alloc(&a, 24), vals[0]);
    arena_release(&a);
    assert_int_equal(heap.allocs, allocs); /* never touched the heap */
    assert_int_equal(recorded_errors.count, 0);
}

static void test_fixed_buffer_unaligned_start(void **state)
{
    alignas(16) static char storage[128];
    char *buf = storage + 1; /* ARENA_ALIGN - 1 bytes short of an aligned address */
    size_t len = 100, cap = len - (ARENA_ALIGN - 1);
    arena a;
    size_t allocs = heap.allocs, total = 0;
    (void)state;

    arena_init_buffer(&a, buf, len, NULL);
    assert_int_equal(arena_retained(&a), cap);
    for (;;) {
        char *p = (char *)arena_alloc(&a, 8);
        if (!p)
            break;
        assert_true(is_aligned(p, ARENA_ALIGN));
        assert_true(inside(p, 8, buf, len));
        total += 8;
    }
    assert_true(total >= 8);
    while (arena_strndup(&a, "", 0)) { /* the unaligned tail, byte by byte */
        total += 1;
        assert_true(total <= cap);
    }
    assert_int_equal(arena_size(&a), total);
    if (test_packed()) {
        arena_reset(&a);
        for (total = 0; arena_strndup(&a, "", 0); total++)
            ;
        assert_int_equal(total, cap); /* every usable byte, and none outside */
    }
    assert_true(arena_check(&a));
    arena_release(&a);
    assert_int_equal(arena_retained(&a), cap);
    assert_int_equal(heap.allocs, allocs);
}

static void test_fixed_buffer_tiny_and_empty(void **state)
{
    alignas(16) static char storage[64];
    arena a;
    size_t allocs = heap.allocs;
    struct {
        char *buf;
        size_t len;
    } cases[] = {/* storage + 1 is ARENA_ALIGN - 1 bytes short of an aligned address */
                 {storage, 0},
                 {storage + 1, ARENA_ALIGN / 2 + 2},
                 {storage + 1, ARENA_ALIGN - 1},
                 {NULL, 0},
                 {NULL, 100}};
    size_t i;
    (void)state;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        arena_init_buffer(&a, cases[i].buf, cases[i].len, NULL);
        assert_int_equal(arena_retained(&a), 0);
        assert_null(arena_alloc(&a, 1));
        assert_null(arena_strdup(&a, ""));
        assert_true(arena_ref_empty(arena_ref_copy(&a, "x", 1, 1)));
        assert_non_null(arena_alloc(&a, 0));
        assert_int_equal(arena_size(&a), 0);
        assert_true(arena_check(&a));
        arena_reset(&a);
        arena_release(&a);
        assert_int_equal(arena_retained(&a), 0);
        assert_null(arena_alloc(&a, 1));
    }
    /* One usable byte, at an aligned address (the checked build needs room
     * for a value's header too). */
    arena_init_buffer(&a, storage + 1, ARENA_ALIGN, NULL);
    assert_int_equal(arena_retained(&a), 1);
    assert_null(arena_alloc(&a, 2));
    if (!ARENA_CHECKED) {
        assert_ptr_equal(arena_alloc(&a, 1), storage + ARENA_ALIGN);
        assert_null(arena_alloc_aligned(&a, 1, 1));
        assert_int_equal(arena_size(&a), 1);
    }
    arena_release(&a);
    assert_int_equal(heap.allocs, allocs);
}

/* A buffer larger than the default chunk: a value larger than a chunk still
 * goes in it when it fits (a fixed arena has nowhere else to put it). */
static void test_fixed_big_buffer(void **state)
{
    static unsigned char big[3 * ARENA_DEFAULT_CHUNK];
    arena a;
    unsigned char *p, *q;
    size_t allocs = heap.allocs;
    (void)state;

    arena_init_buffer(&a, big, sizeof big, NULL);
    assert_int_equal(arena_retained(&a),
                     sizeof big - (ARENA_ALIGN - (uintptr_t)big % ARENA_ALIGN) % ARENA_ALIGN);
    p = (unsigned char *)arena_alloc(&a, 2 * ARENA_DEFAULT_CHUNK);
    assert_non_null(p);
    assert_true(inside(p, 2 * ARENA_DEFAULT_CHUNK, big, sizeof big));
    fill_pattern(p, 2 * ARENA_DEFAULT_CHUNK, 5);
    q = (unsigned char *)arena_alloc(&a, ARENA_DEFAULT_CHUNK / 2);
    assert_non_null(q);
    assert_true(inside(q, ARENA_DEFAULT_CHUNK / 2, big, sizeof big));
    assert_null(arena_alloc(&a, ARENA_DEFAULT_CHUNK));
    assert_true(has_pattern(p, 2 * ARENA_DEFAULT_CHUNK, 5));
    arena_reset(&a);
    assert_ptr_equal(arena_alloc(&a, 2 * ARENA_DEFAULT_CHUNK), p);
    arena_release(&a);
    assert_int_equal(heap.allocs, allocs);
}

/* ---- Caller's buffer with a backing ------------------------------------------------- */

static void test_buffer_with_backing(void **state)
{
    alignas(16) static char buf[300];
    arena a;
    arena_allocator al = tb_allocator(&tb);
    char *first, *p, *spill, *big;
    size_t allocs = heap.allocs, i;
    arena_mark m;
    (void)state;

    arena_init_buffer(&a, buf, sizeof buf, &al);
    assert_int_equal(arena_retained(&a), 300);

    /* While values fit buf, nothing is allocated at all. */
    first = (char *)arena_alloc(&a, 100);
    assert_true(inside(first, 100, buf, sizeof buf));
    m = arena_save(&a);
    for (i = 0; i < (test_packed() ? 10u : ARENA_CHECKED ? 3u : 4u); i++) /* (guards, headers) */
        assert_true(inside(arena_alloc(&a, 8), 8, buf, sizeof buf));
    arena_rewind(&a, m);
    assert_int_equal(tb.calls, 0);

    /* Then further chunks come from the backing, with the default chunk size. */
    for (;;) {
        p = (char *)arena_alloc(&a, 50);
        assert_non_null(p);
        if (!inside(p, 50, buf, sizeof buf))
            break;
    }
    spill = p;
    fill_pattern(spill, 50, 1);
    assert_true(tb.calls >= 1);
    assert_int_equal(arena_retained(&a), 300 + ARENA_DEFAULT_CHUNK);
    big = (char *)arena_alloc(&a, ARENA_DEFAULT_CHUNK + 1);
    assert_non_null(big);
    assert_int_equal(arena_retained(&a), 300 + ARENA_DEFAULT_CHUNK + ARENA_DEFAULT_CHUNK + 1);
    assert_true(arena_check(&a));

    /* Reset keeps buf as the first chunk, and the chunks the batch used:
     * the same values again need no backing call. */
    arena_reset(&a);
    assert_int_equal(arena_retained(&a), 300 + ARENA_DEFAULT_CHUNK + ARENA_DEFAULT_CHUNK + 1);
    i = tb.calls;
    p = (char *)arena_alloc(&a, 100);
    assert_ptr_equal(p, first);
    assert_ptr_equal(arena_alloc(&a, ARENA_DEFAULT_CHUNK + 1), big);
    assert_int_equal(tb.calls, i);
    assert_true(arena_check(&a));

    /* Release: back to the state right after init. */
    arena_release(&a);
    assert_int_equal(arena_retained(&a), 300);
    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(tb.live, 0);
    assert_int_equal(tb.live_bytes, 0);
    i = tb.calls;
    p = (char *)arena_alloc(&a, 100);
    assert_ptr_equal(p, first);
    assert_int_equal(tb.calls, i);
    arena_release(&a);
    /* the backing's own mallocs, and none by the library */
    assert_int_equal(heap.allocs - allocs, tb.calls - tb.failed);
}

/* A buffer too small to hold anything, with a backing: a plain arena. */
static void test_tiny_buffer_with_backing(void **state)
{
    alignas(16) static char storage[32];
    arena a;
    arena_allocator al = tb_allocator(&tb);
    char *p;
    (void)state;

    arena_init_buffer(&a, storage + 1, ARENA_ALIGN / 2, &al);
    assert_int_equal(arena_retained(&a), 0);
    p = arena_strdup(&a, "from the backing");
    assert_non_null(p);
    assert_false(inside(p, 1, storage, sizeof storage));
    assert_int_equal(arena_retained(&a), ARENA_DEFAULT_CHUNK);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

/* ---- The backing allocator --------------------------------------------------------- */

/* With a backing, everything (chunks and bookkeeping) comes from it and goes
 * back to it; the library never calls the C heap. */
static void test_backing_gets_everything(void **state)
{
    static const char src[1000] = "not in the arena";
    arena a;
    arena_allocator al = pool_allocator();
    size_t allocs = heap.allocs, i;
    arena_mark m;
    (void)state;

    arena_init_with(&a, 200, &al);
    for (i = 0; i < 600; i++) /* hundreds of chunks: the index grows */
        assert_non_null(arena_alloc(&a, 100 + i % 90));
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 5000));
    assert_non_null(arena_strndup(&a, (const char *)src, 999));
    assert_false(arena_ref_empty(arena_ref_copy(&a, src, 700, 64)));
    assert_non_null(arena_realloc(&a, NULL, 0, 3000));
    arena_rewind(&a, m);
    arena_reset(&a);
    for (i = 0; i < 300; i++)
        assert_non_null(arena_calloc(&a, 1, 150));
    assert_true(pool.calls > 300);
    assert_true(arena_retained(&a) <= pool.live_bytes);
    arena_release(&a);
    assert_int_equal(pool.live, 0);
    assert_int_equal(pool.live_bytes, 0);
    assert_int_equal(pool.frees, pool.calls);
    assert_int_equal(heap.allocs, allocs);
}

/* Without one, malloc is the backing: every block goes back to free. */
static void test_default_backing_is_malloc(void **state)
{
    arena a = {0};
    size_t allocs = heap.allocs, frees = heap.frees, i;
    long live = heap.live;
    (void)state;

    for (i = 0; i < 300; i++)
        assert_non_null(arena_alloc(&a, 40000)); /* one per 64 KiB chunk */
    assert_non_null(arena_alloc(&a, 200000));
    if (arena_guarded(&a)) {
        /* The chunks are mapped pages; the heap holds the index alone. */
        arena_guard_stats gs;
        arena_guard_get_stats(&gs);
        assert_true(gs.mapped >= 301 * (size_t)40000);
        assert_true(heap.allocs - allocs < 301);
    } else if (arena__huge_pages()) {
        /* Chunks of 64 KiB from the heap until the batch holds 2 MiB in
         * them, then chunks of 2 MiB, mappings of their own (backing.c). */
        assert_true(heap.allocs - allocs >= ARENA__HUGE / ARENA_DEFAULT_CHUNK + 1);
        assert_true(heap.allocs - allocs < 301);
        arena_reset_to(&a, 200 * (size_t)ARENA_DEFAULT_CHUNK);
        assert_true(heap.frees > frees); /* chunks went back */
    } else {
        assert_true(heap.allocs - allocs >= 301);
        arena_reset_to(&a, 200 * (size_t)ARENA_DEFAULT_CHUNK);
        assert_true(heap.frees > frees); /* chunks went back */
    }
    arena_release(&a);
    assert_int_equal(heap.live, live);
    assert_int_equal(heap.allocs - allocs, heap.frees - frees);

    arena_init(&a, 100);
    for (i = 0; i < 100; i++)
        assert_non_null(arena_strdup(&a, "0123456789012345678901234567890123456789"));
    arena_release(&a);
    assert_int_equal(heap.live, live);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_record_errors, teardown_record_errors)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_fixed_buffer_never_mallocs),  T(test_fixed_buffer_unaligned_start),
        T(test_fixed_buffer_tiny_and_empty), T(test_fixed_big_buffer),
        T(test_buffer_with_backing),         T(test_tiny_buffer_with_backing),
        T(test_backing_gets_everything),     T(test_default_backing_is_malloc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
