/* SPDX-License-Identifier: MIT */
/*
 * The instrumentation (ASan, Valgrind, the checked build): counters and
 * reuse stay exact while every value has a redzone, arena_check() finds
 * inconsistency, and, in the build that has them, the poisoning (ASan), the
 * stale-ref detection, clobbering and redzone checks (checked build).
 */
#include <stdio.h>

#include <arena/pool.h>

#include "support.h"
/* White-box: the corruption tests write the private bookkeeping. */
#include "cold.h"

#if TEST_ASAN
#  include <sanitizer/asan_interface.h>
#endif

/* Counters are what the contract says, guards or not. */
static void test_counters_exact(void **state)
{
    arena a;
    char *p, *q;
    bool guarded;
    (void)state;
    arena_init(&a, 1000);
    p = (char *)arena_alloc(&a, 1000); /* the whole chunk size: a uniform chunk */
    assert_non_null(p);
    memset(p, 7, 1000);
    assert_int_equal(arena_size(&a), 1000);
    assert_int_equal(arena_retained(&a), 1000);
    q = arena_strdup(&a, "abc");
    assert_string_equal(q, "abc");
    assert_int_equal(arena_size(&a), 1004);
    assert_int_equal(arena_retained(&a), 2000);
    p = (char *)arena_alloc(&a, 5000); /* oversized: exactly its size */
    assert_non_null(p);
    memset(p, 1, 5000);
    assert_int_equal(arena_retained(&a), 7000);
    assert_true(arena_check(&a));
    guarded = arena_guarded(&a);
    arena_reset(&a);
    assert_int_equal(arena_size(&a), 0);
    /* every chunk the batch used stays; a guarded batch's go to the quarantine */
    assert_int_equal(arena_retained(&a), guarded ? 0 : 7000);
    assert_true(arena_check(&a));
    arena_reset_to(&a, 2000);
    assert_int_equal(arena_retained(&a), guarded ? 0 : 2000); /* the oversized one went first */
    assert_true(arena_check(&a));
    arena_release(&a);
    assert_int_equal(arena_retained(&a), 0);
}

/* arena_realloc() recognises the most recent value behind its guard. */
static void test_grow_in_place(void **state)
{
    arena a = {0};
    char *p, *q;
    size_t i;
    (void)state;
    p = (char *)arena_alloc(&a, 10);
    memcpy(p, "0123456789", 10);
    q = (char *)arena_realloc(&a, p, 10, 100);
    assert_ptr_equal(q, p);
    assert_memory_equal(q, "0123456789", 10);
    for (i = 10; i < 100; i++)
        q[i] = (char)i;
    assert_int_equal(arena_size(&a), 100);
    q = (char *)arena_realloc(&a, p, 100, 3);
    assert_ptr_equal(q, p);
    assert_int_equal(arena_size(&a), 3);
    q = (char *)arena_realloc(&a, p, 3, 20);
    assert_ptr_equal(q, p);
    assert_memory_equal(q, "012", 3);
    memset(q + 3, 'x', 17);
    /* Not the most recent any more: a copy. */
    assert_non_null(arena_alloc(&a, 1));
    q = (char *)arena_realloc(&a, p, 20, 40);
    assert_ptr_not_equal(q, p);
    assert_memory_equal(q, "012xxxxxxxxxxxxxxxxx", 20);
    assert_int_equal(arena_size(&a), 1 + 40); /* the old place given back */
    assert_true(arena_check(&a));
    arena_release(&a);
}

/* Rewind returns the same address for the same shape, guards or not. */
static void test_rewind_same_address(void **state)
{
    arena a = {0};
    arena_mark m;
    void *p, *q;
    (void)state;
    assert_non_null(arena_strdup(&a, "x"));
    m = arena_save(&a);
    p = arena_alloc(&a, 24);
    memset(p, 1, 24);
    arena_rewind(&a, m);
    q = arena_alloc(&a, 24);
    assert_true(test_rewound_to(arena_guarded(&a), p, q));
    memset(q, 2, 24);
    assert_true(arena_check(&a));
    arena_release(&a);
}

/* A value stored before a mark and grown in place after it is cut back by
 * the rewind; the arena and its neighbours stay intact (under memcheck, a
 * trim of a block that straddles the cut once marked memory outside the
 * chunk no-access). */
static void test_rewind_cuts_value_grown_across_mark(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    arena a;
    arena_mark m;
    char *first, *x, *y, *grown, *neighbour;
    size_t i;
    (void)state;
    arena_init_with(&a, 4096, &al);
    first = (char *)arena_alloc(&a, 2500);
    memset(first, 2, 2500);
    neighbour = (char *)malloc(4096); /* most likely just past the chunk */
    assert_non_null(neighbour);
    memset(neighbour, 1, 4096);
    x = (char *)arena_alloc(&a, 100);
    memset(x, 3, 100);
    m = arena_save(&a);
    grown = (char *)arena_realloc(&a, x, 100, 1500);
    assert_ptr_equal(grown, x);
    memset(grown, 4, 1500);
    arena_rewind(&a, m);
    assert_int_equal(arena_size(&a), 2600);
    for (i = 0; i < 100; i++)
        assert_int_equal(x[i], 4);
    y = (char *)arena_alloc(&a, 64);
    assert_non_null(y);
    memset(y, 5, 64);
    assert_true(arena_check(&a));
    for (i = 0; i < 4096; i++)
        assert_int_equal(neighbour[i], 1);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
    free(neighbour);
}

/* Checked build: the 18-byte value of ref `r` at `at` has expired: the ref
 * is reported stale (the `count`-th report), and its bytes are clobbered
 * (poisoned under ASan).  Nothing to check in other builds. */
static void assert_expired(const arena *a, arena_ref r, const char *at, int count)
{
#if ARENA_CHECKED
    assert_null(arena_ref_ptr(a, r));
    assert_int_equal(recorded_errors.count, count);
    assert_int_equal(recorded_errors.last, ARENA_ERR_STALE_REF);
#  if TEST_ASAN
    assert_true(__asan_address_is_poisoned(at));
#  else
    for (size_t i = 0; i < 18; i++)
        assert_int_equal((unsigned char)at[i], 0xDD); /* library-test peek */
#  endif
#else
    (void)a, (void)r, (void)at, (void)count;
#endif
}

/* The value before a mark is the most recent one once everything after the
 * mark is gone, so it can be freed or shrunk below the mark's position.  A
 * rewind to the mark then restores the arena as it was at the mark (its size,
 * and the address the next value gets), and forgets what was stored after
 * the mark, below its position too: in the checked build their refs are
 * stale and their bytes clobbered.  Two nested marks, each given back below,
 * are rewound in turn. */
static void test_rewind_after_give_back_below_mark(void **state)
{
    arena a;
    arena_mark outer, inner, at_outer;
    arena_ref w1, w2;
    char *first, *p1, *p2, *after, *again, *w1_at, *w2_at;
    size_t i, outer_size;
    (void)state;
    record_errors();
    arena_init(&a, 4096);
    first = (char *)arena_alloc(&a, 100);
    memset(first, 1, 100);
    p1 = (char *)arena_alloc(&a, 200);
    memset(p1, 2, 200);
    outer = arena_save(&a);
    outer_size = arena_size(&a);
    /* where the next value goes at the outer mark (a save of its own) */
    at_outer = arena_save(&a);
    after = (char *)arena_alloc(&a, 16);
    arena_rewind(&a, at_outer);

    arena_free(&a, p1, 200); /* the most recent value: given back, below `outer` */
    assert_int_equal(arena_size(&a), 100);
    w1 = arena_ref_copy(&a, "stored after outer", 18, 0);
    assert_false(arena_ref_empty(w1));
    w1_at = (char *)arena_ref_ptr(&a, w1);
    assert_true(w1_at > first && w1_at < after); /* below the mark */
    p2 = (char *)arena_alloc(&a, 300);
    memset(p2, 3, 300);
    inner = arena_save(&a);
    arena_free(&a, p2, 300); /* below `inner` */
    w2 = arena_ref_copy(&a, "stored after inner", 18, 0);
    w2_at = (char *)arena_ref_ptr(&a, w2);
    assert_true(w2_at >= p2 && w2_at < p2 + 300);

    arena_rewind(&a, inner);
    assert_int_equal(recorded_errors.count, 0);
    assert_int_equal(arena_size(&a), 100 + 18 + 300);
    assert_memory_equal(arena_ref_ptr(&a, w1), "stored after outer", 18);
    assert_true(arena_check(&a));
    assert_expired(&a, w2, w2_at, 1);

    arena_rewind(&a, outer);
    assert_int_equal(arena_size(&a), outer_size);
    for (i = 0; i < 100; i++)
        assert_int_equal(first[i], 1);
    assert_true(arena_check(&a));
    assert_expired(&a, w1, w1_at, 2);
#if !ARENA_CHECKED
    assert_int_equal(recorded_errors.count, 0);
#endif
    again = (char *)arena_alloc(&a, 16);
    assert_ptr_equal(again, after);
    memset(again, 4, 16);
    assert_true(arena_check(&a));
    arena_release(&a);
    arena_set_error_handler(NULL, NULL);
}

/* After a release the caller's buffer is the caller's again: writable,
 * even while the arena keeps it attached. */
static void test_buffer_open_after_release(void **state)
{
    _Alignas(16) char buf[1024];
    arena a;
    char *p;
    (void)state;
    arena_init_buffer(&a, buf, sizeof buf, NULL);
    p = (char *)arena_alloc(&a, 100);
    assert_ptr_equal(p >= buf && p < buf + sizeof buf, 1);
    memset(p, 3, 100);
    arena_release(&a);
    memset(buf, 9, sizeof buf); /* ASan would report a poisoned buffer */
    assert_true(arena_check(&a));
    p = (char *)arena_alloc(&a, 100); /* the arena takes it back */
    assert_ptr_equal(p >= buf && p < buf + sizeof buf, 1);
    memset(p, 4, 100);
    assert_int_equal(arena_retained(&a), sizeof buf);
    arena_release(&a);
    memset(buf, 0, sizeof buf);
}

/* A failing backing allocator leaves an instrumented arena unchanged too. */
static void test_failure_unchanged(void **state)
{
    test_backing tb;
    arena_allocator al = tb_allocator(&tb);
    volatile size_t huge = SIZE_MAX; /* hidden from the compiler's size checks */
    arena a;
    char *p;
    (void)state;
    arena_init_with(&a, 256, &al);
    p = (char *)arena_alloc(&a, 200);
    memset(p, 5, 200);
    tb.fail_from = tb.calls + 1;
    assert_null(arena_alloc(&a, 200));
    assert_null(arena_alloc(&a, 100000));
    assert_null(arena_alloc(&a, huge));
    assert_null(arena_alloc(&a, huge - 8));
    assert_null(arena_alloc_aligned(&a, huge / 2, (size_t)1 << 20));
    assert_int_equal(arena_size(&a), 200);
    assert_int_equal(arena_retained(&a), 256);
    assert_true(arena_check(&a));
    assert_int_equal(p[199], 5);
    arena_release(&a);
    assert_int_equal(tb.live, 0);
}

/* Under Valgrind (the memcheck job runs this suite under it): values are
 * addressable, guards, chunk tails, expired values and free pool slots are
 * not.  GET_VBITS answers 3 for unaddressable bytes without reporting. */
static bool vg_open(const void *p)
{
#ifdef RUNNING_ON_VALGRIND
    char v;
    return VALGRIND_GET_VBITS(p, &v, 1) != 3;
#else
    (void)p;
    return true;
#endif
}

static void test_valgrind_annotations(void **state)
{
    arena a;
    arena_mark m;
    arena_pool pool;
    char *p, *q, *s, *big;
    (void)state;
    if (!test_on_valgrind())
        return; /* natively there is nothing to observe */
    arena_init(&a, 4096);
    p = (char *)arena_alloc(&a, 13);
    assert_true(vg_open(p) && vg_open(p + 12));
    assert_false(vg_open(p + 13));
    s = arena_strdup(&a, "abc");
    assert_false(vg_open(s + 4));
    assert_false(vg_open(s + 1000));
    big = (char *)arena_alloc(&a, 10000);
    assert_true(vg_open(big + 9999));
    m = arena_save(&a);
    q = (char *)arena_alloc(&a, 32);
    assert_true(vg_open(q + 31));
    arena_rewind(&a, m);
    assert_false(vg_open(q));
    assert_true(vg_open(p));
    arena_reset(&a);
    assert_false(vg_open(p));
    arena_release(&a);

    assert_true(arena_pool_init(&pool, 24, 8, 4, NULL));
    p = (char *)arena_pool_alloc(&pool);
    assert_true(vg_open(p) && vg_open(p + 23));
    q = (char *)arena_pool_alloc(&pool);
    assert_false(vg_open(q + 24)); /* the next slot, never handed out */
    arena_pool_free(&pool, p);
    assert_false(vg_open(p));
    arena_pool_destroy(&pool);
}

/* arena_check() reports a damaged arena in every build. */
static void test_check_reports_corruption(void **state)
{
    arena a = {0};
    size_t saved;
    (void)state;
    record_errors();
    assert_non_null(arena_alloc(&a, 10));
    assert_true(arena_check(&a));
    assert_int_equal(recorded_errors.count, 0);
    saved = arena__cold(&a)->retained;
    arena__cold(&a)->retained += 1;
    assert_false(arena_check(&a));
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_CORRUPT);
    arena__cold(&a)->retained = saved;
    a.nused = a.nchunks + 1;
    assert_false(arena_check(&a));
    assert_int_equal(recorded_errors.count, 2);
    a.nused = a.nchunks;
    arena__cold(&a)->lim += 1;
    assert_false(arena_check(&a));
    assert_int_equal(recorded_errors.count, 3);
    arena__cold(&a)->lim -= 1;
    assert_true(arena_check(&a));
    arena_release(&a);
    arena_set_error_handler(NULL, NULL);
}

/* Refs keep their documented shape whatever tag a checked build adds. */
static void test_refs_round_trip(void **state)
{
    arena a;
    arena_ref r[200];
    char text[32];
    int i;
    (void)state;
    arena_init(&a, 512);
    for (i = 0; i < 200; i++) {
        int n = snprintf(text, sizeof text, "value %d", i);
        r[i] = arena_ref_strndup(&a, text, (size_t)n);
        assert_int_equal(arena_ref_len(r[i]), (size_t)n);
        assert_false(arena_ref_empty(r[i]));
    }
    for (i = 0; i < 200; i++) {
        snprintf(text, sizeof text, "value %d", i);
        assert_string_equal(arena_ref_str(&a, r[i]), text);
    }
    assert_true(arena_ref_empty(arena_ref_copy(&a, text, 0, 1)));
    assert_string_equal(arena_ref_str(&a, arena_ref_strndup(&a, "", 0)), "");
    arena_release(&a);
}

#if TEST_ASAN
/* Under ASan: values are open, everything around them is poisoned, and
 * what a reset, rewind or release expires is poisoned (or freed). */
static void test_asan_poisoning(void **state)
{
    arena a;
    arena_mark m;
    char *p, *q, *big;
    (void)state;
    arena_init(&a, 4096);
    p = (char *)arena_alloc(&a, 13);
    assert_null(__asan_region_is_poisoned(p, 13));
    assert_true(__asan_address_is_poisoned(p + 13));
    assert_true(__asan_address_is_poisoned(p + 16));
    q = arena_strdup(&a, "hello");
    assert_true(__asan_address_is_poisoned(q + 6));
    assert_true(__asan_address_is_poisoned(q + 1000)); /* chunk tail */
    big = (char *)arena_alloc(&a, 10000);
    assert_null(__asan_region_is_poisoned(big, 10000));
    assert_true(__asan_address_is_poisoned(big + 10000));
    m = arena_save(&a);
    q = (char *)arena_alloc(&a, 32);
    assert_null(__asan_region_is_poisoned(q, 32));
    q = (char *)arena_realloc(&a, q, 32, 64);
    assert_null(__asan_region_is_poisoned(q, 64));
    assert_true(__asan_address_is_poisoned(q + 64));
    q = (char *)arena_realloc(&a, q, 64, 8);
    assert_true(__asan_address_is_poisoned(q + 8));
    arena_rewind(&a, m);
    assert_true(__asan_address_is_poisoned(q));
    assert_null(__asan_region_is_poisoned(p, 13));
    arena_reset(&a);
    assert_true(__asan_address_is_poisoned(p));
    arena_release(&a);
}

/* Under ASan: a value stored before a mark and grown in place after it is
 * cut back by the rewind to its size at the mark, whose guard is poisoned
 * again from its last byte on, as is everything from the mark on: a write
 * past the value is reported, also once the next value takes the mark's
 * place.  Sizes that end on a granule and inside one; grown past the mark,
 * and only within its guard (the position unmoved); the mark taken after a
 * resize, and a second mark at the same place. */
static void test_asan_rewind_cuts_grown_value(void **state)
{
    arena a;
    arena_mark m;
    char *first, *x, *grown, *next;
    size_t sizes[] = {96, 100, 1, 13}, grow[] = {1500, 0}, i, j;
    (void)state;
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (j = 0; j < 2; j++) {
            /* the end of the granule that holds the value's last byte */
            size_t end = (sizes[i] + 7) / 8 * 8, to = grow[j] ? grow[j] : end;
            arena_init(&a, 4096);
            first = (char *)arena_alloc(&a, 40);
            x = (char *)arena_alloc(&a, sizes[i] + 1);
            x = (char *)arena_realloc(&a, x, sizes[i] + 1, sizes[i]); /* a resize before */
            m = arena_save(&a);
            if (j)
                (void)arena_save(&a);             /* a later mark, rewound past */
            assert_ptr_equal(m.pos, x + end + 8); /* after the value's guard */
            grown = (char *)arena_realloc(&a, x, sizes[i], to);
            assert_ptr_equal(grown, x);
            memset(grown, 4, to);
            arena_rewind(&a, m);
            assert_null(__asan_region_is_poisoned(first, 40));
            assert_null(__asan_region_is_poisoned(x, sizes[i]));
            for (char *q = x + sizes[i]; q < x + (to > end + 8 ? to : end + 8); q++)
                assert_true(__asan_address_is_poisoned(q)); /* its guard, and past */
            next = (char *)arena_alloc_aligned(&a, 64, 8);
            /* right after the guard (and a checked build's header), as at the mark */
            assert_ptr_equal(next, m.pos + TEST_LEAD);
            assert_true(__asan_address_is_poisoned(next - 1));
            assert_true(__asan_address_is_poisoned(next + 64));
            assert_true(arena_check(&a));
            arena_release(&a);
        }
    }
}
#endif

#if ARENA_CHECKED
/* A ref resolved after the reset, rewind or release that expired it, or
 * against another arena, is reported, even when new values took its place. */
static void test_checked_stale_refs(void **state)
{
    arena a, b;
    arena_ref r, s;
    arena_mark m;
    (void)state;
    record_errors();
    arena_init(&a, 4096);
    arena_init(&b, 4096);

    r = arena_ref_strndup(&a, "first", 5);
    assert_string_equal(arena_ref_str(&a, r), "first");
    arena_reset(&a);
    s = arena_ref_strndup(&a, "again", 5); /* the same place */
    assert_int_equal(recorded_errors.count, 0);
    assert_null(arena_ref_ptr(&a, r));
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_STALE_REF);
    assert_string_equal(arena_ref_str(&a, s), "again");

    m = arena_save(&a);
    r = arena_ref_strndup(&a, "scoped", 6);
    arena_rewind(&a, m);
    assert_null(arena_ref_ptr(&a, r)); /* nothing there now */
    assert_int_equal(recorded_errors.count, 2);
    (void)arena_ref_strndup(&a, "scoped", 6); /* the same place and shape */
    assert_null(arena_ref_ptr(&a, r));
    assert_int_equal(recorded_errors.count, 3);
    assert_string_equal(arena_ref_str(&a, s), "again"); /* before the mark: live */

    r = arena_ref_copy(&a, "0123456789abcdef", 16, 16);
    (void)arena_ref_strndup(&b, "other arena", 11);
    (void)arena_ref_strndup(&b, "other arena", 11);
    assert_null(arena_ref_ptr(&b, r));
    assert_int_equal(recorded_errors.count, 4);

    arena_release(&a);
    assert_null(arena_ref_ptr(&a, s));
    assert_int_equal(recorded_errors.count, 5);
    assert_int_equal(recorded_errors.last, ARENA_ERR_STALE_REF);
    arena_release(&b);
    arena_set_error_handler(NULL, NULL);
}
#endif

#if ARENA_CHECKED && !TEST_ASAN
/* Expired memory is clobbered with a recognisable pattern, and a write past
 * the end of a value is reported at the next reset or rewind. */
static void test_checked_clobber_and_sentinels(void **state)
{
    arena a;
    arena_mark m;
    unsigned char *p;
    char *s;
    bool guarded;
    (void)state;
    if (test_on_valgrind())
        return; /* memcheck reports these writes itself, so the library leaves it to it */
    record_errors();
    arena_init(&a, 4096);
    p = (unsigned char *)arena_alloc(&a, 32);
    memset(p, 1, 32);
    guarded = arena_guarded(&a);
    arena_reset(&a);
    /* (A guarded batch's dead memory is inaccessible: guard_death.c reads it.) */
    if (!guarded) {
        assert_int_equal(p[0], 0xDD); /* library-test peek at dead memory */
        assert_int_equal(p[31], 0xDD);
    }
    assert_int_equal(recorded_errors.count, 0);

    m = arena_save(&a);
    s = arena_strdup(&a, "abc");
    s[4] = 'X'; /* past the end */
    arena_rewind(&a, m);
    assert_int_equal(recorded_errors.count, 1);
    assert_int_equal(recorded_errors.last, ARENA_ERR_CORRUPT);

    p = (unsigned char *)arena_alloc(&a, 16);
    p[-1] = 0x55; /* before the start: the header */
    assert_false(arena_check(&a));
    assert_int_equal(recorded_errors.count, 2);
    arena_reset(&a);
    assert_true(recorded_errors.count >= 3);
    arena_release(&a);
    arena_set_error_handler(NULL, NULL);
}

/* A value grown in place after a mark (past its position, or only into
 * its guard) is cut back by the rewind to its size at the mark, whose guard
 * is clobbered and verified again: a write one byte past it is reported by
 * the next arena_check(), for sizes that end inside a granule too. */
static void test_checked_rewind_cuts_grown_value(void **state)
{
    size_t sizes[] = {96, 100, 13}, grow[] = {1500, 0}, i, j;
    (void)state;
    if (test_on_valgrind())
        return; /* memcheck reports these writes itself */
    record_errors();
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (j = 0; j < 2; j++) {
            size_t to = grow[j] ? grow[j] : (sizes[i] + 7) / 8 * 8;
            arena a;
            arena_mark m;
            char *x;
            int before = recorded_errors.count;
            arena_init(&a, 4096);
            x = (char *)arena_alloc(&a, sizes[i]);
            memset(x, 1, sizes[i]);
            m = arena_save(&a);
            if (j)
                (void)arena_save(&a); /* a later mark, rewound past */
            assert_ptr_equal(arena_realloc(&a, x, sizes[i], to), x);
            memset(x, 2, to);
            arena_rewind(&a, m);
            assert_int_equal(arena_size(&a), sizes[i]);
            assert_true(arena_check(&a));
            assert_int_equal(recorded_errors.count, before);
            x[sizes[i]] = 3; /* one past its end at the mark */
            assert_false(arena_check(&a));
            assert_true(test_misuse_reported(before, ARENA_ERR_CORRUPT));
            x[sizes[i]] = (char)0xDD; /* (the clobber byte) */
            arena_release(&a);
        }
    }
    arena_set_error_handler(NULL, NULL);
}

/* A stray write of one byte into expired memory is reported by the next
 * arena_check(), wherever the byte lies: at each offset of three 64-byte
 * blocks (the walk tests a block at a time), from an aligned and from an
 * unaligned value's end. */
static void test_checked_stray_write_anywhere(void **state)
{
    arena a;
    unsigned char *dead;
    size_t off, errors = 0;
    (void)state;
    if (test_on_valgrind())
        return; /* memcheck reports these writes itself */
    record_errors();
    arena_init(&a, 4096);
    dead = (unsigned char *)arena_alloc(&a, 1024);
    assert_non_null(dead);
    if (arena_guarded(&a)) { /* dead memory faults: guard_death.c reads it */
        arena_release(&a);
        return;
    }
    arena_reset(&a);
    assert_true(arena_check(&a));
    for (off = 0; off < 3 * 64; off++) {
        unsigned char *p = dead + 256 + off;
        assert_int_equal(*p, 0xDD); /* library-test peek at dead memory */
        *p = 0x5A;
        assert_false(arena_check(&a));
        assert_int_equal(recorded_errors.count, ++errors);
        assert_int_equal(recorded_errors.last, ARENA_ERR_CORRUPT);
        *p = 0xDD;
        assert_true(arena_check(&a));
    }
    /* The same after a value of an odd size: its guard ends mid-granule. */
    assert_non_null(arena_alloc(&a, 13));
    for (off = 0; off < 3 * 64; off++) {
        unsigned char *p = dead + 512 + off;
        *p = 0x5A;
        assert_false(arena_check(&a));
        assert_int_equal(recorded_errors.count, ++errors);
        *p = 0xDD;
        assert_true(arena_check(&a));
    }
    assert_int_equal(recorded_errors.count, errors);
    arena_release(&a);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters_exact),
        cmocka_unit_test(test_grow_in_place),
        cmocka_unit_test(test_rewind_same_address),
        cmocka_unit_test(test_rewind_cuts_value_grown_across_mark),
        cmocka_unit_test(test_rewind_after_give_back_below_mark),
        cmocka_unit_test(test_buffer_open_after_release),
        cmocka_unit_test(test_failure_unchanged),
        cmocka_unit_test(test_check_reports_corruption),
        cmocka_unit_test(test_valgrind_annotations),
        cmocka_unit_test(test_refs_round_trip),
#if TEST_ASAN
        cmocka_unit_test(test_asan_poisoning),
        cmocka_unit_test(test_asan_rewind_cuts_grown_value),
#endif
#if ARENA_CHECKED
        cmocka_unit_test(test_checked_stale_refs),
#endif
#if ARENA_CHECKED && !TEST_ASAN
        cmocka_unit_test(test_checked_clobber_and_sentinels),
        cmocka_unit_test(test_checked_stray_write_anywhere),
        cmocka_unit_test(test_checked_rewind_cuts_grown_value),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
