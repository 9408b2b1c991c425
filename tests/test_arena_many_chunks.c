/* SPDX-License-Identifier: MIT */
/*
 * More chunks than 2^20: every build, the checked one included, names them
 * all in refs (a checked ref keeps a tag in bits of its fields, which must
 * not cap the number of chunks).  One-byte chunks from a bump backing keep
 * a million of them cheap: about a second.
 *
 * Under Valgrind, where each chunk is a memcheck mempool (some kilobytes of
 * the tool's memory each: a million take minutes and gigabytes), the same
 * test runs with 2^14 as the boundary; the 2^20 one is the checked build's
 * concern, and its jobs run natively.
 */
#include "support.h"

/* Chunks (requests of up to BUMP_STEP bytes) are bumped out of one block
 * and never reused; the chunk index (larger requests) comes from malloc. */
#define BUMP_STEP ((size_t)32)

typedef struct bump {
    char *base, *at, *end;
    size_t small_live, large_live;
} bump;

static void *bump_alloc(void *ctx, size_t n)
{
    bump *b = (bump *)ctx;
    char *p;
    if (n > BUMP_STEP) {
        p = (char *)test_aligned_alloc(ARENA_ALIGN,
                                       (n + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN);
        if (p)
            b->large_live++;
        return p;
    }
    if ((size_t)(b->end - b->at) < BUMP_STEP)
        return NULL;
    p = b->at;
    b->at += BUMP_STEP;
    b->small_live++;
    return p;
}

static void bump_free(void *ctx, void *p, size_t n)
{
    bump *b = (bump *)ctx;
    if (n > BUMP_STEP) {
        b->large_live--;
        test_aligned_free(p);
    } else {
        assert_true((char *)p >= b->base && (char *)p < b->at);
        b->small_live--;
    }
}

static void test_more_than_a_million_chunks(void **state)
{
    /* Past the 2^20 chunks a checked ref could once name, by a few. */
    const size_t top = (size_t)1 << (test_on_valgrind() ? 14 : 20);
    const size_t nchunks = top + 5;
    const size_t probes[] = {0, 1, 2, top / 2, top - 2, top - 1, top, top + 1, nchunks - 1};
    enum { NPROBES = sizeof probes / sizeof probes[0] };
    arena_ref refs[NPROBES];
    char *where[NPROBES];
    size_t i, k = 0;
    bump b;
    arena_allocator al;
    arena a;
    arena_mark m;
    (void)state;

    memset(&b, 0, sizeof b);
    b.base = b.at = (char *)test_aligned_alloc(ARENA_ALIGN, nchunks * BUMP_STEP);
    assert_non_null(b.base);
    b.end = b.base + nchunks * BUMP_STEP;
    al.alloc = bump_alloc;
    al.free = bump_free;
    al.ctx = &b;
    arena_init_with(&a, 1, &al); /* one value per chunk */

    m = arena_save(&a);
    for (i = 0; i < nchunks; i++) {
        unsigned char v = (unsigned char)(i * 7 + 1);
        arena_ref r;
        if (i == top + 1)
            m = arena_save(&a);
        r = arena_ref_copy(&a, &v, 1, 1);
        if (arena_ref_empty(r))
            fail_msg("chunk %zu: no memory for it (the bump block has room)", i);
        if (k < NPROBES && probes[k] == i) {
            refs[k] = r;
            where[k] = (char *)arena_ref_ptr(&a, r);
            assert_non_null(where[k]);
            assert_int_equal(test_ref_chunk(r), i);
            k++;
        }
    }
    assert_int_equal(k, NPROBES);
    assert_int_equal(a.nused, nchunks);
    assert_int_equal(arena_size(&a), nchunks);
    for (k = 0; k < NPROBES; k++) {
        assert_ptr_equal(arena_ref_ptr(&a, refs[k]), where[k]);
        assert_int_equal((unsigned char)*where[k], (unsigned char)(probes[k] * 7 + 1));
        assert_int_equal(arena_ref_len(refs[k]), 1);
    }
    assert_int_equal(recorded_errors.count, 0);

    /* Rewinding past the last chunks expires their refs (the checked build
     * reports them, on both sides of 2^20); the rest stay valid. */
    arena_rewind(&a, m);
    assert_int_equal(recorded_errors.count, 0);
    assert_int_equal(a.nused, top + 1);
    for (k = 0; k < NPROBES; k++) {
        if (probes[k] <= top) {
            assert_ptr_equal(arena_ref_ptr(&a, refs[k]), where[k]);
        } else if (ARENA_CHECKED) {
            assert_null(arena_ref_ptr(&a, refs[k]));
            assert_int_equal(recorded_errors.last, ARENA_ERR_STALE_REF);
        }
    }
    arena_reset(&a);
    if (ARENA_CHECKED) {
        recorded_errors.count = 0;
        for (k = 0; k < NPROBES; k++)
            assert_null(arena_ref_ptr(&a, refs[k]));
        assert_int_equal(recorded_errors.count, NPROBES);
    }
    arena_release(&a);
    assert_int_equal(b.small_live, 0);
    assert_int_equal(b.large_live, 0);
    test_aligned_free(b.base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_more_than_a_million_chunks, setup_record_errors,
                                        teardown_record_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
