/* SPDX-License-Identifier: MIT */
/*
 * Misuse of an arena with an error handler that returns: each mistake is
 * reported once, with its code, and the call then does nothing -- the arena
 * struct is byte for byte what it was (arena.h, "Errors").  Marks and scopes
 * ended out of order, refs too large, arena_realloc() told too large an old
 * size, and (checked build) garbage refs.
 *
 * Every case is set up with an open inline run (plain build: the inline
 * paths have stored since the library last saw the arena), the state in
 * which folding the run into the size field would change the struct's bytes
 * while every figure stays the same.
 */
#include "support.h"

#include <arena/thread.h>

static test_backing tb;

static void init_tb(arena *a, size_t chunk_size)
{
    arena_allocator al = tb_allocator(&tb);
    arena_init_with(a, chunk_size, &al);
}

static void release_tb(arena *a)
{
    arena_release(a);
    assert_int_equal(arena_retained(a), 0);
    assert_int_equal(tb.live, 0);
}

/* Stores a few small values through the inline paths, so that (plain build)
 * the arena has uncounted inline bytes the library has not folded into its size. */
static void store_uncounted(arena *a)
{
    assert_non_null(arena_alloc(a, 8));
    assert_non_null(arena_strdup(a, "run"));
    if (TEST_PACKED && a->ptr)
        assert_ptr_not_equal(a->counted, a->ptr);
}

/* Runs `call`, which must report `code` exactly once and leave `*a` (and
 * the backing's calls) exactly as they were. */
#define EXPECT_MISUSE(a, code, call)                                                               \
  do {                                                                                             \
    arena before_;                                                                                 \
    size_t calls_ = tb.calls, frees_ = tb.frees;                                                   \
    memcpy(&before_, (a), sizeof before_);                                                         \
    recorded_errors.count = 0;                                                                     \
    call;                                                                                          \
    assert_int_equal(recorded_errors.count, 1);                                                    \
    assert_int_equal(recorded_errors.last, (code));                                                \
    assert_memory_equal(&before_, (a), sizeof before_);                                            \
    assert_int_equal(tb.calls, calls_);                                                            \
    assert_int_equal(tb.frees, frees_);                                                            \
  } while (0)

/* Runs `call`, which must report nothing. */
#define EXPECT_FINE(call)                                                                          \
  do {                                                                                             \
    int count_ = recorded_errors.count;                                                            \
    call;                                                                                          \
    assert_int_equal(recorded_errors.count, count_);                                               \
  } while (0)

/* ---- Marks and scopes ended out of order ------------------------------------------ */

/* Begin A, begin B, end A, store v, end B, with both marks in one chunk:
 * the end of B is reported and changes nothing, so v stays intact and the
 * next value does not overlap it. */
static void test_marks_out_of_order_in_one_chunk(void **state)
{
    arena a;
    arena_mark ma, mb;
    char *v, *p;
    size_t size;
    (void)state;

    init_tb(&a, 4096);
    assert_non_null(arena_alloc(&a, 16));
    ma = arena_save(&a);
    assert_non_null(arena_alloc(&a, 100));
    mb = arena_save(&a);
    assert_non_null(arena_alloc(&a, 100));
    EXPECT_FINE(arena_rewind(&a, ma));
    v = (char *)arena_alloc(&a, 300);
    assert_non_null(v);
    fill_pattern(v, 300, 1);
    store_uncounted(&a);
    size = arena_size(&a);
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, mb));
    assert_non_null(strstr(recorded_errors.message, "arena_rewind"));
    assert_int_equal(arena_size(&a), size);
    assert_true(arena_check(&a));
    p = (char *)arena_alloc(&a, 64);
    assert_non_null(p);
    assert_true(p >= v + 300 || p + 64 <= v);
    fill_pattern(p, 64, 2);
    assert_true(has_pattern(v, 300, 1));

    /* A itself is still valid, as often as wanted. */
    EXPECT_FINE(arena_rewind(&a, ma));
    EXPECT_FINE(arena_rewind(&a, ma));
    assert_int_equal(arena_size(&a), 16);
    release_tb(&a);
}

/* The same through scopes: arena_scope_end() of an inner scope after its
 * enclosing one ended. */
static void test_scopes_out_of_order(void **state)
{
    arena a;
    arena_scope outer, inner;
    char *v;
    size_t size;
    (void)state;

    init_tb(&a, 4096);
    outer = arena_scope_begin(&a);
    assert_non_null(arena_alloc(&a, 40));
    inner = arena_scope_begin(&a);
    assert_non_null(arena_alloc(&a, 40));
    EXPECT_FINE(arena_scope_end(&outer));
    v = arena_strdup(&a, "a value stored after the outer scope ended, longer than 40");
    assert_non_null(v);
    store_uncounted(&a);
    size = arena_size(&a);
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_scope_end(&inner));
    assert_int_equal(arena_size(&a), size);
    assert_string_equal(arena_strdup(&a, "next"), "next");
    assert_string_equal(v, "a value stored after the outer scope ended, longer than 40");
    release_tb(&a);
}

/* The same through this thread's scratch arena, whose chunk already holds
 * values (so both marks lie in one chunk).  A reported end does nothing at
 * all: no rewind and no trim of the scratch arena's spares. */
static void test_scratch_out_of_order_in_one_chunk(void **state)
{
    arena_scope base, outer, inner;
    arena *s;
    char *v;
    size_t size;
    (void)state;

    base = arena_scratch_begin(NULL, 0);
    assert_non_null(base.arena);
    s = base.arena;
    assert_non_null(arena_alloc(s, 100));
    outer = arena_scratch_begin(NULL, 0);
    assert_ptr_equal(outer.arena, s);
    assert_non_null(arena_alloc(s, 10));
    inner = arena_scratch_begin(NULL, 0);
    assert_ptr_equal(inner.arena, s);
    assert_non_null(arena_alloc(s, 10));
    EXPECT_FINE(arena_scope_end(&outer));
    v = arena_strdup(s, "stored after the outer scratch ended");
    assert_non_null(v);
    store_uncounted(s);
    size = arena_size(s);
    {
        arena before;
        memcpy(&before, s, sizeof before);
        recorded_errors.count = 0;
        arena_scope_end(&inner);
        assert_int_equal(recorded_errors.count, 1);
        assert_int_equal(recorded_errors.last, ARENA_ERR_BAD_MARK);
        assert_memory_equal(&before, s, sizeof before);
    }
    assert_int_equal(arena_size(s), size);
    assert_string_equal(v, "stored after the outer scratch ended");
    EXPECT_FINE(arena_scope_end(&base));
    arena_scratch_release_thread();
}

/* The rule, exactly: a mark is valid until a reset, a release or a rewind to
 * a mark taken before it; rewinding to a mark does not expire it, and marks
 * taken after a rewind are valid. */
static void test_marks_lifo_rule(void **state)
{
    arena a;
    arena_mark m1, m2, m3, m4, m5, m6;
    (void)state;

    init_tb(&a, 4096);
    m1 = arena_save(&a);
    assert_non_null(arena_alloc(&a, 10));
    m2 = arena_save(&a);
    assert_non_null(arena_alloc(&a, 10));
    EXPECT_FINE(arena_rewind(&a, m1)); /* m2 expires */
    m3 = arena_save(&a);
    assert_non_null(arena_alloc(&a, 10));
    m4 = arena_save(&a);
    assert_non_null(arena_alloc(&a, 10));
    EXPECT_FINE(arena_rewind(&a, m3)); /* m4 expires */
    m5 = arena_save(&a);
    assert_non_null(arena_alloc(&a, 10));
    EXPECT_FINE(arena_rewind(&a, m5)); /* nothing after m5: nothing expires */
    EXPECT_FINE(arena_rewind(&a, m5));
    m6 = arena_save(&a);
    EXPECT_FINE(arena_rewind(&a, m6));

    /* Expired marks, from the latest rewind and from older ones, each at
     * the position of a valid one or between valid ones. */
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, m4));
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, m2));
    /* Valid ones, from the newest down. */
    EXPECT_FINE(arena_rewind(&a, m6));
    EXPECT_FINE(arena_rewind(&a, m5));
    EXPECT_FINE(arena_rewind(&a, m3));
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, m5));
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, m6));
    EXPECT_FINE(arena_rewind(&a, m1));
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, m3));
    assert_int_equal(arena_size(&a), 0);

    /* Four scopes in a row, each ended with a scope inside it still open:
     * every abandoned inner mark is remembered as expired (four separate
     * records), every outer one stays valid until an earlier one is
     * rewound to. */
    {
        arena_mark outer[4], inner[4];
        int i;
        for (i = 0; i < 4; i++) {
            outer[i] = arena_save(&a);
            assert_non_null(arena_alloc(&a, 10));
            inner[i] = arena_save(&a);
            assert_non_null(arena_alloc(&a, 10));
            EXPECT_FINE(arena_rewind(&a, outer[i]));
        }
        for (i = 0; i < 4; i++)
            EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, inner[i]));
        for (i = 3; i >= 0; i--)
            EXPECT_FINE(arena_rewind(&a, outer[i]));
        for (i = 1; i < 4; i++)
            EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, outer[i]));
        EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, inner[0]));
        EXPECT_FINE(arena_rewind(&a, m1));
    }

    /* A mark expired by a reset, a release, or never taken by this arena
     * (a zeroed one, and one from another arena that took more marks). */
    m1 = arena_save(&a);
    arena_reset(&a);
    store_uncounted(&a);
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, m1));
    m1 = arena_save(&a);
    arena_release(&a);
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, m1));
    memset(&m2, 0, sizeof m2);
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, m2));
    {
        arena b;
        int i;
        arena_init(&b, 4096);
        for (i = 0; i < 20; i++)
            m2 = arena_save(&b);
        store_uncounted(&a);
        m1 = arena_save(&a);
        EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, m2));
        EXPECT_FINE(arena_rewind(&a, m1));
        arena_release(&b);
    }
    release_tb(&a);
}

/* Scopes that end in order never report, however they nest and repeat:
 * a long random run of properly nested scopes (a scope may also be ended
 * again, or its enclosing scope ended while it is open, which abandons
 * it).  Every mark the run expires is reported when used right after the
 * rewind that expired it. */
static void test_marks_nested_never_misreported(void **state)
{
    enum { STEPS = 20000, DEPTH = 64 };
    arena a;
    arena_mark stack[DEPTH], dead[DEPTH];
    size_t depth = 0, ndead, i, k;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    (void)state;

    init_tb(&a, 512);
    for (i = 0; i < STEPS; i++) {
        unsigned r;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        r = (unsigned)(x >> 40);
        if (r % 4 == 0 || depth == 0) {
            if (depth == DEPTH)
                continue;
            stack[depth++] = arena_save(&a);
        } else if (r % 4 == 1) {
            assert_non_null(arena_alloc(&a, 1 + r % 200));
        } else {
            /* Rewind to one of the open marks, the innermost most often:
             * the marks above it expire. */
            k = r % 4 == 2 ? depth - 1 : (r >> 3) % depth;
            ndead = 0;
            while (depth > k + 1)
                dead[ndead++] = stack[--depth];
            EXPECT_FINE(arena_rewind(&a, stack[k]));
            if (ndead)
                EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, dead[r % ndead]));
        }
    }
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* ---- Every misuse leaves the struct byte-identical ------------------------------- */

static void test_misuse_leaves_arena_identical(void **state)
{
    static char big[64];
    arena a, b;
    arena_mark m, later;
    arena_scope s1, s2;
    arena_ref r;
    (void)state;

    init_tb(&a, 1000);
    store_uncounted(&a);

    /* A mark expired by a rewind to an earlier mark, in another chunk. */
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 990));
    later = arena_save(&a);
    assert_non_null(arena_alloc(&a, 10));
    arena_rewind(&a, m);
    store_uncounted(&a);
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, later));

    /* In the same chunk. */
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 10));
    later = arena_save(&a);
    arena_rewind(&a, m);
    assert_non_null(arena_alloc(&a, 30));
    store_uncounted(&a);
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, later));

    /* Scopes. */
    s1 = arena_scope_begin(&a);
    s2 = arena_scope_begin(&a);
    arena_scope_end(&s1);
    store_uncounted(&a);
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_scope_end(&s2));

    /* Expired by a reset; from another arena. */
    m = arena_save(&a);
    arena_reset(&a);
    store_uncounted(&a);
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, m));
    arena_init(&b, 1000);
    assert_non_null(arena_alloc(&b, 500));
    for (int i = 0; i < 50; i++)
        m = arena_save(&b);
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_MARK, arena_rewind(&a, m));
    arena_release(&b);

    /* Refs too large. */
    store_uncounted(&a);
    EXPECT_MISUSE(&a, ARENA_ERR_REF_TOO_LARGE,
                  r = arena_ref_copy(&a, big, opaque_size(ARENA_REF_MAX + (size_t)1), 1));
    assert_true(arena_ref_empty(r));
    EXPECT_MISUSE(&a, ARENA_ERR_REF_TOO_LARGE,
                  r = arena_ref_strndup(&a, big, opaque_size(ARENA_REF_MAX)));
    assert_true(arena_ref_empty(r));

    /* arena_realloc() told an old size past the position. */
    {
        char *v = (char *)arena_alloc(&a, 24);
        void *q = v;
        store_uncounted(&a);
        EXPECT_MISUSE(&a, ARENA_ERR_BAD_SIZE, q = arena_realloc(&a, v, 4096, 8192));
        assert_null(q);
    }

#if ARENA_CHECKED
    /* Checked build: a stale ref, a garbage one. */
    m = arena_save(&a);
    r = arena_ref_strndup(&a, "stale", 5);
    arena_rewind(&a, m);
    EXPECT_MISUSE(&a, ARENA_ERR_STALE_REF, assert_null(arena_ref_ptr(&a, r)));
    r.off += 3;
    EXPECT_MISUSE(&a, ARENA_ERR_STALE_REF, assert_string_equal(arena_ref_str(&a, r), ""));
#endif
    release_tb(&a);
}

/* ---- arena_realloc() told a wrong old size -------------------------------------------- */

/* Any build: an old size that reaches past the position of the value's
 * chunk (the overlapping copy of the most recent value grown past a
 * neighbour) is reported, and nothing is copied or stored. */
static void test_grow_old_size_past_position(void **state)
{
    arena a;
    char *v, *w, *q;
    (void)state;

    init_tb(&a, 4096);
    v = (char *)arena_alloc(&a, 100);
    fill_pattern(v, 100, 1);
    w = (char *)arena_alloc(&a, 50);
    fill_pattern(w, 50, 2);
    store_uncounted(&a);
    /* Bigger than all that is stored after v, and bigger than the chunk. */
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_SIZE, q = (char *)arena_realloc(&a, v, 1000, 2000));
    assert_null(q);
    assert_non_null(strstr(recorded_errors.message, "arena_realloc"));
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_SIZE, q = (char *)arena_realloc(&a, w, 4000, 100000));
    assert_null(q);
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_SIZE, q = (char *)arena_realloc(&a, w, SIZE_MAX, 10));
    assert_null(q);
    assert_true(has_pattern(v, 100, 1));
    assert_true(has_pattern(w, 50, 2));

    /* The right sizes (and smaller ones) still work. */
    EXPECT_FINE(q = (char *)arena_realloc(&a, v, 100, 300));
    assert_non_null(q);
    assert_true(has_pattern(q, 100, 1));
    EXPECT_FINE(q = (char *)arena_realloc(&a, q, 300, 400));
    EXPECT_FINE(q = (char *)arena_realloc(&a, w, 10, 20));
    assert_true(has_pattern(q, 10, 2));
    assert_true(arena_check(&a));
    release_tb(&a);
}

/* arena_realloc() with every legitimate old size reports nothing: strings
 * with their NUL, values grown or shrunk before, values in earlier and
 * oversized chunks, in a caller's buffer, and the size-0 value. */
static void test_grow_legitimate_sizes(void **state)
{
    _Alignas(16) char buf[2048];
    arena a;
    char *s, *v, *big, *q;
    arena_mark m;
    (void)state;

    init_tb(&a, 1000);
    s = arena_strdup(&a, "string");
    EXPECT_FINE(q = (char *)arena_realloc(&a, s, 7, 8));
    assert_string_equal(q, "string");
    v = (char *)arena_alloc(&a, 200);
    fill_pattern(v, 200, 3);
    EXPECT_FINE(v = (char *)arena_realloc(&a, v, 200, 100)); /* shrunk in place */
    EXPECT_FINE(v = (char *)arena_realloc(&a, v, 100, 150));
    big = (char *)arena_alloc(&a, 5000);
    fill_pattern(big, 5000, 4);
    assert_non_null(arena_alloc(&a, 900));                   /* the next chunk */
    EXPECT_FINE(q = (char *)arena_realloc(&a, v, 150, 160)); /* an earlier chunk */
    assert_true(has_pattern(q, 100, 3));
    EXPECT_FINE(q = (char *)arena_realloc(&a, big, 5000, 6000));
    assert_true(has_pattern(q, 5000, 4));
    EXPECT_FINE(q = (char *)arena_realloc(&a, arena_alloc(&a, 0), 0, 16));
    assert_non_null(q);

    /* A value grown in place across a mark, cut by the rewind, then grown
     * with its size at the mark. */
    v = (char *)arena_alloc(&a, 40);
    m = arena_save(&a);
    EXPECT_FINE(v = (char *)arena_realloc(&a, v, 40, 80));
    arena_rewind(&a, m);
    EXPECT_FINE(q = (char *)arena_realloc(&a, v, 40, 48));
    assert_non_null(q);
    assert_true(arena_check(&a));
    release_tb(&a);

    arena_init_buffer(&a, buf, sizeof buf, NULL);
    v = (char *)arena_alloc(&a, 64);
    assert_non_null(arena_alloc(&a, 8));
    EXPECT_FINE(q = (char *)arena_realloc(&a, v, 64, 128));
    assert_non_null(q);
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_SIZE, q = (char *)arena_realloc(&a, q, 1024, 1100));
    arena_release(&a);
}

#if ARENA_CHECKED
/* Checked build: each value's header holds its size, so an old size beyond
 * it is reported wherever the value is (an earlier chunk, an oversized one,
 * short of the position), and a pointer that is not the start of a live
 * value is reported too. */
static void test_checked_grow_checks_the_header(void **state)
{
    arena a;
    char *v, *w, *big, *q;
    arena_mark m;
    (void)state;

    init_tb(&a, 1000);
    v = (char *)arena_alloc(&a, 100);
    fill_pattern(v, 100, 1);
    w = (char *)arena_alloc(&a, 100);
    fill_pattern(w, 100, 2);
    /* Short of the position, in the current chunk. */
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_SIZE, q = (char *)arena_realloc(&a, v, 101, 300));
    assert_null(q);
    assert_non_null(strstr(recorded_errors.message, "100-byte"));
    big = (char *)arena_alloc(&a, 3000);
    assert_non_null(arena_alloc(&a, 900)); /* the next chunk */
    /* An earlier chunk, an oversized one. */
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_SIZE, q = (char *)arena_realloc(&a, w, 120, 200));
    EXPECT_MISUSE(&a, ARENA_ERR_BAD_SIZE, q = (char *)arena_realloc(&a, big, 3001, 4000));
    /* Not the start of a value, or not a live one. */
    EXPECT_MISUSE(&a, ARENA_ERR_FOREIGN_POINTER, q = (char *)arena_realloc(&a, v + 16, 16, 32));
    EXPECT_MISUSE(&a, ARENA_ERR_FOREIGN_POINTER, q = (char *)arena_realloc(&a, v + 3, 16, 32));
    EXPECT_MISUSE(&a, ARENA_ERR_FOREIGN_POINTER,
                  q = (char *)arena_realloc(&a, (char *)tb.blocks, 16, 32));
    m = arena_save(&a);
    q = (char *)arena_alloc(&a, 30);
    arena_rewind(&a, m);
    EXPECT_MISUSE(&a, ARENA_ERR_FOREIGN_POINTER, q = (char *)arena_realloc(&a, q, 30, 60));
    assert_true(has_pattern(v, 100, 1));
    assert_true(has_pattern(w, 100, 2));
    EXPECT_FINE(q = (char *)arena_realloc(&a, w, 100, 200));
    assert_true(has_pattern(q, 100, 2));
    release_tb(&a);
}

/* Checked build: a garbage ref is validated before anything is loaded
 * through it (no misaligned or out-of-chunk read: UBSan and ASan watch),
 * reported as stale, and resolves to NULL ("" as a string). */
static void test_checked_garbage_refs(void **state)
{
    arena a;
    arena_ref good, r;
    size_t i;
    const uint32_t offs[] = {1,         3, 4, 7, 12, 17, 33, 999, 1000, 1001, 4096, UINT32_MAX - 7,
                             UINT32_MAX};
    const uint32_t lens[] = {1, 2, 5, 1000, 0x7FFFFFFFu};
    (void)state;

    init_tb(&a, 1000);
    good = arena_ref_strndup(&a, "good", 4);
    assert_non_null(arena_ref_ptr(&a, good));
    assert_false(arena_ref_empty(arena_ref_strndup(&a, "more", 4)));
    store_uncounted(&a);
    for (i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        size_t j;
        for (j = 0; j < sizeof lens / sizeof lens[0]; j++) {
            r = good;
            r.off = offs[i];
            r.len = (r.len & 0x80000000u) | lens[j];
            EXPECT_MISUSE(&a, ARENA_ERR_STALE_REF, assert_null(arena_ref_ptr(&a, r)));
            EXPECT_MISUSE(&a, ARENA_ERR_STALE_REF, assert_string_equal(arena_ref_str(&a, r), ""));
        }
    }
    /* Chunk indices out of range, in every form a ref can take. */
    {
        const uint32_t chunks[] = {1,           2,           0xFFFFFu,   0x100000u,
                                   0x7FFFFFFFu, 0x80000001u, 0xFFFFFFFFu};
        for (i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
            r = good;
            r.chunk = chunks[i];
            EXPECT_MISUSE(&a, ARENA_ERR_STALE_REF, assert_null(arena_ref_ptr(&a, r)));
        }
    }
    /* An 8-aligned offset inside a value (no header there). */
    r = arena_ref_copy(&a, tb.blocks, 64, 8);
    r.off += 16;
    r.len = (r.len & 0x80000000u) | 8;
    EXPECT_MISUSE(&a, ARENA_ERR_STALE_REF, assert_null(arena_ref_ptr(&a, r)));
    EXPECT_FINE(assert_string_equal(arena_ref_str(&a, good), "good"));
    release_tb(&a);
}
#endif

#define T(f) cmocka_unit_test_setup_teardown(f, setup_record_errors, teardown_record_errors)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_marks_out_of_order_in_one_chunk),
        T(test_scopes_out_of_order),
        T(test_scratch_out_of_order_in_one_chunk),
        T(test_marks_lifo_rule),
        T(test_marks_nested_never_misreported),
        T(test_misuse_leaves_arena_identical),
        T(test_grow_old_size_past_position),
        T(test_grow_legitimate_sizes),
#if ARENA_CHECKED
        T(test_checked_grow_checks_the_header),
        T(test_checked_garbage_refs),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
