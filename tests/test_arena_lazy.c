/* SPDX-License-Identifier: MIT */
/*
 * The inline arena_init_buffer() (arena.h): a fixed-size caller-buffer arena
 * whose library bookkeeping is written by the first call that needs it.
 *
 * Every public call is made on such an arena right after its init, and on
 * one initialised by the library (arena__init_buffer_slow()): both must
 * answer the same, and stay consistent.  Misuse on it goes to a handler that
 * returns, and changes nothing.  In builds where the inline path is compiled
 * out (ASan, checked) the same checks run through the library's init.
 */
#include "support.h"

#include <arena/hooks.h>

#include <stdalign.h>

#define BUF 4096

/* Two buffers of the same alignment (the largest the calls below ask for):
 * `a` is set up inline, `b` by the library. */
static alignas(256) char buf_a[BUF + 64];
static alignas(256) char buf_b[BUF + 64];

/* True when the inline init can be taken here (no instrumentation compiled
 * in; the library decides about Valgrind). */
static bool inline_expected(void) { return ARENA__INLINE_WINDOW && arena__inline_ok; }

static void init_pair(arena *a, arena *b, size_t skew)
{
    arena_init_buffer(a, buf_a + skew, BUF, NULL);
    arena__init_buffer_slow(b, buf_b + skew, BUF, NULL);
    assert_int_equal(a->lazy != 0, inline_expected());
    assert_int_equal(b->lazy, 0);
}

/* A pointer's offset into its buffer (or a sentinel for NULL / the size-0
 * value), so that the two arenas' answers compare. */
static intptr_t off(const void *p, const char *buf)
{
    if (!p)
        return -1;
    if ((const char *)p < buf || (const char *)p >= buf + sizeof buf_a)
        return -2;
    return (intptr_t)((const char *)p - buf);
}

typedef void op_fn(arena *x, const char *buf, intptr_t *out);

static void op_alloc_inline(arena *x, const char *buf, intptr_t *out)
{
    out[0] = off(arena_alloc(x, 24), buf);
    out[1] = off(arena_alloc(x, BUF), buf); /* does not fit: the library, NULL */
}
static void op_alloc_too_big(arena *x, const char *buf, intptr_t *out)
{
    out[0] = off(arena_alloc(x, BUF * 2), buf);
    out[1] = off(arena_alloc(x, 8), buf);
}
static void op_alloc_zero(arena *x, const char *buf, intptr_t *out)
{
    out[0] = arena_alloc(x, 0) != NULL;
    out[1] = off(arena_alloc(x, 8), buf);
}
static void op_alloc_aligned(arena *x, const char *buf, intptr_t *out)
{
    out[0] = off(arena_alloc_aligned(x, 40, 256), buf);
    out[1] = off(arena_alloc(x, 8), buf);
}
static void op_calloc(arena *x, const char *buf, intptr_t *out)
{
    char *p = (char *)arena_calloc(x, 10, 10);
    out[0] = off(p, buf);
    out[1] = p && p[0] == 0 && p[99] == 0;
    out[2] = off(arena_calloc(x, SIZE_MAX / 2, 4), buf); /* overflow: NULL */
}
static void op_copy_strings(arena *x, const char *buf, intptr_t *out)
{
    char *s = arena_strdup(x, "lazy");
    out[0] = off(s, buf);
    out[1] = s && strcmp(s, "lazy") == 0;
    out[2] = off(arena_copy(x, "0123456789abcdef0123456789abcdef0123", 36, 4), buf);
    out[3] = off(arena_strndup(x, "x", 1), buf);
}
static void op_realloc(arena *x, const char *buf, intptr_t *out)
{
    char *p = (char *)arena_realloc(x, NULL, 0, 100);
    out[0] = off(p, buf);
    out[1] = off(arena_realloc(x, p, 100, 300), buf); /* in place */
    out[2] = off(arena_realloc(x, p, 300, 0), buf);   /* shrink to nothing */
    out[3] = off(arena_alloc(x, 8), buf);
}
static void op_free(arena *x, const char *buf, intptr_t *out)
{
    void *p = arena_alloc(x, 64);
    arena_free(x, p, 64);
    out[0] = off(p, buf);
    out[1] = off(arena_alloc(x, 8), buf);
}
static void op_sprintf(arena *x, const char *buf, intptr_t *out)
{
    char *s = arena_sprintf(x, "%d-%s", 42, "lazy");
    out[0] = off(s, buf);
    out[1] = s && strcmp(s, "42-lazy") == 0;
}
static void op_refs(arena *x, const char *buf, intptr_t *out)
{
    arena_ref r = arena_ref_copy(x, "abcdefgh", 8, 1);
    arena_ref e = arena_ref_copy(x, "abcdefgh", 0, 1); /* the library: empty */
    arena_ref s = arena_ref_strndup(x, "ref", 3);
    out[0] = off(arena_ref_ptr(x, r), buf);
    out[1] = arena_ref_empty(e);
    out[2] = strcmp(arena_ref_str(x, s), "ref") == 0;
    out[3] = (intptr_t)arena_ref_len(r);
}
static void op_marks(arena *x, const char *buf, intptr_t *out)
{
    arena_mark m = arena_save(x);
    out[0] = off(arena_alloc(x, 48), buf);
    arena_rewind(x, m);
    out[1] = off(arena_alloc(x, 48), buf);
    arena_rewind(x, m);
    out[2] = (intptr_t)arena_size(x);
}
static void op_rewind_first(arena *x, const char *buf, intptr_t *out)
{
    arena_mark m = arena_save(x);
    arena_rewind(x, m); /* the library's first call */
    out[0] = off(arena_alloc(x, 8), buf);
}
static void op_reset(arena *x, const char *buf, intptr_t *out)
{
    assert_non_null(arena_alloc(x, 100));
    arena_reset(x);
    out[0] = off(arena_alloc(x, 8), buf);
}
static void op_reset_to(arena *x, const char *buf, intptr_t *out)
{
    assert_non_null(arena_alloc(x, 100));
    arena_reset_to(x, 0);
    out[0] = off(arena_alloc(x, 8), buf);
}
static void op_trim(arena *x, const char *buf, intptr_t *out)
{
    arena_trim(x, 0);
    out[0] = off(arena_alloc(x, 8), buf);
}
static void op_release(arena *x, const char *buf, intptr_t *out)
{
    assert_non_null(arena_alloc(x, 100));
    arena_release(x);
    out[0] = (intptr_t)arena_size(x);
    out[1] = off(arena_alloc(x, 8), buf);
}
static void op_check(arena *x, const char *buf, intptr_t *out)
{
    (void)buf;
    out[0] = arena_check(x);
}

static op_fn *const ops[] = {
    op_alloc_inline, op_alloc_too_big, op_alloc_zero, op_alloc_aligned, op_calloc, op_copy_strings,
    op_realloc,      op_free,          op_sprintf,    op_refs,          op_marks,  op_rewind_first,
    op_reset,        op_reset_to,      op_trim,       op_release,       op_check,
};

/* Fills what is left with 16-byte values, recording where each one went. */
static size_t fill(arena *x, const char *buf, intptr_t *out, size_t max)
{
    size_t n = 0;
    void *p;
    while (n < max && (p = arena_alloc(x, 16)) != NULL)
        out[n++] = off(p, buf);
    return n;
}

/* Every call, made first on a fresh buffer arena, answers as on one the
 * library set up, at every start alignment; the arena stays consistent, and
 * holds as much afterwards, through a release and a second life. */
static void test_every_call_right_after_init(void **state)
{
    size_t skew, i;
    (void)state;

    for (skew = 0; skew < 32; skew += 7) {
        for (i = 0; i < sizeof ops / sizeof ops[0]; i++) {
            arena a, b;
            intptr_t ra[8] = {0}, rb[8] = {0};
            static intptr_t fa[BUF / 16], fb[BUF / 16];
            size_t na, nb, k;

            init_pair(&a, &b, skew);
            ops[i](&a, buf_a, ra);
            ops[i](&b, buf_b, rb);
            for (k = 0; k < 8; k++)
                if (ra[k] != rb[k])
                    fail_msg("op %zu, skew %zu: answer %zu is %ld inline, %ld from the library", i,
                             skew, k, (long)ra[k], (long)rb[k]);
            assert_int_equal(arena_size(&a), arena_size(&b));
            assert_int_equal(arena_retained(&a), arena_retained(&b));
            assert_true(arena_check(&a));
            na = fill(&a, buf_a, fa, BUF / 16);
            nb = fill(&b, buf_b, fb, BUF / 16);
            assert_int_equal(na, nb);
            assert_memory_equal(fa, fb, na * sizeof fa[0]);
            arena_release(&a);
            arena_release(&b);
            assert_true(arena_check(&a));
            assert_int_equal(arena_retained(&a), arena_retained(&b));
            assert_int_equal(off(arena_alloc(&a, 8), buf_a), off(arena_alloc(&b, 8), buf_b));
            arena_release(&a);
            arena_release(&b);
        }
    }
    assert_int_equal(recorded_errors.count, 0);
}

/* arena_retained() and arena_check() right after the init: the buffer's
 * capacity, consistent, nothing reported. */
static void test_queries_right_after_init(void **state)
{
    arena a;
    (void)state;

    arena_init_buffer(&a, buf_a + 3, BUF, NULL);
    /* (The start is rounded up to ARENA_ALIGN.) */
    assert_int_equal(arena_retained(&a), BUF - (ARENA_ALIGN - 3));
    assert_int_equal(arena_size(&a), 0);
    assert_true(arena_check(&a));
    assert_int_equal(arena_retained(&a), BUF - (ARENA_ALIGN - 3));
    assert_int_equal(recorded_errors.count, 0);
    arena_release(&a);
}

/* Where the values `sizes` (0-terminated) go in a fresh buffer arena on
 * buf_b: the last one's offset (instrumented builds add headers and guards). */
static intptr_t fresh_offset(const size_t *sizes)
{
    arena b;
    intptr_t at = -1;
    arena_init_buffer(&b, buf_b, BUF, NULL);
    for (; *sizes; sizes++)
        at = off(arena_alloc(&b, *sizes), buf_b);
    arena_release(&b);
    return at;
}

/* The inline release of an untouched buffer arena expires its marks as the
 * library's does; a mark from an earlier arena on the same memory, or from
 * another arena, is rejected, and the rejected call changes nothing. */
static void test_misuse_right_after_init(void **state)
{
    arena a, other;
    arena_mark m, zero;
    int before;
    char *p, *q;
    arena_ref r;
    static const size_t first[] = {8, 0}, second[] = {16, 16, 0};
    intptr_t first_at = fresh_offset(first), second_at = fresh_offset(second);
    (void)state;

    memset(&zero, 0, sizeof zero);
    arena_init_buffer(&a, buf_a, BUF, NULL);
    before = recorded_errors.count;
    arena_rewind(&a, zero);
    assert_true(test_misuse_reported(before, ARENA_ERR_BAD_MARK));
    assert_int_equal(arena_size(&a), 0);
    assert_int_equal(off(arena_alloc(&a, 8), buf_a), first_at);
    assert_true(arena_check(&a));
    arena_release(&a);

    /* A mark of the arena's last life (same memory, same address). */
    arena_init_buffer(&a, buf_a, BUF, NULL);
    m = arena_save(&a);
    assert_non_null(arena_alloc(&a, 32));
    arena_release(&a);
    before = recorded_errors.count;
    arena_rewind(&a, m);
    assert_true(test_misuse_reported(before, ARENA_ERR_BAD_MARK));
    arena_init_buffer(&a, buf_a, BUF, NULL);
    before = recorded_errors.count;
    arena_rewind(&a, m);
    assert_true(test_misuse_reported(before, ARENA_ERR_BAD_MARK));
    assert_int_equal(off(arena_alloc(&a, 8), buf_a), first_at);
    arena_release(&a);

    /* Another arena's mark. */
    arena_init_buffer(&a, buf_a, BUF, NULL);
    arena_init_buffer(&other, buf_b, BUF, NULL);
    (void)arena_save(&other);
    m = arena_save(&other);
    before = recorded_errors.count;
    arena_rewind(&a, m);
    assert_true(test_misuse_reported(before, ARENA_ERR_BAD_MARK));
    arena_release(&other);

    /* An old size past what the arena holds (any build: the value is in the
     * current chunk), then a ref too large: reported, nothing changes. */
    p = (char *)arena_alloc(&a, 16);
    assert_non_null(p);
    before = recorded_errors.count;
    assert_null(arena_realloc(&a, p, 64, 128));
    assert_true(test_misuse_reported(before, ARENA_ERR_BAD_SIZE));
    before = recorded_errors.count;
    r = arena_ref_copy(&a, buf_b, (size_t)ARENA_REF_MAX + 1, 1);
    assert_true(test_misuse_reported(before, ARENA_ERR_REF_TOO_LARGE));
    assert_true(arena_ref_empty(r));
    assert_int_equal(arena_size(&a), 16);
    q = (char *)arena_alloc(&a, 16);
    assert_int_equal(off(q, buf_a), second_at);
    assert_true(arena_check(&a));
    arena_release(&a);
    assert_int_equal(recorded_errors.count, recorded_errors.expected);
}

/* Asserts that `x` holds exactly the bytes of `was`. */
#define assert_unchanged(x, was) assert_memory_equal((x), (was), sizeof(arena))

/* A call on a fresh buffer arena that is reported (a bad mark, an old size
 * past the position, a ref too large) or fails (out of memory: the buffer
 * is full) does nothing: every byte of the struct is as it was, the
 * library's bookkeeping, which the inline init leaves unwritten, included.
 * The arena then works as if the calls had not been made. */
static void test_failed_calls_change_no_byte(void **state)
{
    static arena a, other, was; /* static: the struct's bytes, not a register's */
    arena_mark live, zero, foreign, old;
    arena_ref r;
    char *p, *q;
    int before, i;
    static const size_t shape[] = {16, 24, 40, 0};
    intptr_t expected = fresh_offset(shape);
    (void)state;

    memset(&zero, 0, sizeof zero);
    arena_init_buffer(&other, buf_b, BUF, NULL);
    for (i = 0; i < 5; i++) /* a serial `a` never hands out below */
        foreign = arena_save(&other);
    /* Bytes no init writes: the bookkeeping keeps them while it is unwritten. */
    memset(&a, 0x5A, sizeof a);
    arena_init_buffer(&a, buf_a, BUF, NULL);
    old = arena_save(&a);
    arena_release(&a); /* expires `old` */
    assert_int_equal(a.lazy != 0, inline_expected());
    p = (char *)arena_alloc(&a, 16);
    assert_non_null(p);
    live = arena_save(&a);
    q = (char *)arena_alloc(&a, 24);
    assert_non_null(q);
    memcpy(&was, &a, sizeof a);

    before = recorded_errors.count;
    arena_rewind(&a, zero);
    assert_true(test_misuse_reported(before, ARENA_ERR_BAD_MARK));
    assert_unchanged(&a, &was);
    arena_rewind(&a, foreign);
    assert_true(test_misuse_reported(before + 1, ARENA_ERR_BAD_MARK));
    assert_unchanged(&a, &was);
    arena_rewind(&a, old);
    assert_true(test_misuse_reported(before + 2, ARENA_ERR_BAD_MARK));
    assert_unchanged(&a, &was);

    before = recorded_errors.count;
    assert_null(arena_realloc(&a, q, 64, 128)); /* 24 bytes stored, not 64 */
    assert_true(test_misuse_reported(before, ARENA_ERR_BAD_SIZE));
    assert_unchanged(&a, &was);
    r = arena_ref_copy(&a, buf_b, (size_t)ARENA_REF_MAX + 1, 1);
    assert_true(test_misuse_reported(before + 1, ARENA_ERR_REF_TOO_LARGE));
    assert_true(arena_ref_empty(r));
    assert_unchanged(&a, &was);
    /* The realloc hooks' shrink with the same old size: the peaks' note
     * comes after the check too. */
    assert_null(arena_hook_realloc(&a, q, 64, 32));
    assert_true(test_misuse_reported(before + 2, ARENA_ERR_BAD_SIZE));
    assert_unchanged(&a, &was);
    assert_null(arena_hook_lua(&a, q, 64, 40));
    assert_true(test_misuse_reported(before + 3, ARENA_ERR_BAD_SIZE));
    assert_unchanged(&a, &was);

    /* Out of memory: nothing more fits the buffer. */
    before = recorded_errors.count;
    assert_null(arena_alloc(&a, BUF));
    assert_null(arena_alloc_aligned(&a, BUF - 64, 256)); /* fits but for the padding */
    assert_null(arena_calloc(&a, BUF, 2));
    assert_null(ARENA_NEW_ARRAY(&a, double, BUF));
    assert_null(arena_copy(&a, buf_b, BUF, 0));
    assert_null(arena_strndup(&a, buf_b, BUF));
    assert_null(arena_realloc(&a, q, 24, BUF));
    assert_null(arena_realloc(&a, p, 16, BUF));
    assert_null(arena_realloc(&a, NULL, 0, BUF));
    assert_null(arena_sprintf(&a, "%*s", BUF, "x"));
    assert_true(arena_ref_empty(arena_ref_copy(&a, buf_b, BUF, 1)));
    assert_true(arena_ref_empty(arena_ref_strndup(&a, buf_b, BUF)));
    assert_int_equal(recorded_errors.count, before);
    assert_unchanged(&a, &was);

    /* As if nothing had happened: the mark valid, values where they go. */
    arena_rewind(&a, live);
    assert_int_equal(arena_size(&a), 16);
    assert_ptr_equal(arena_alloc(&a, 24), q);
    assert_int_equal(off(arena_alloc(&a, 40), buf_a), expected);
    assert_true(arena_check(&a));
    arena_release(&a);
    arena_release(&other);
    assert_int_equal(recorded_errors.count, recorded_errors.expected);
}

static void never_run(void *ctx)
{
    (void)ctx;
    fail_msg("a cleanup whose push failed ran");
}

static void count_run(void *ctx) { ++*(int *)ctx; }

/* A cleanup push whose record does not fit the full buffer fails as an
 * allocation does: NULL, nothing registered, every byte of the arena as it
 * was (a lazy one's bookkeeping still unwritten); the next push that fits
 * registers, and runs at the release. */
static void test_failed_cleanup_push_changes_no_byte(void **state)
{
    static alignas(64) char small[256];
    static arena a, was;
    int ran = 0;
    (void)state;
    arena_init_buffer(&a, small, sizeof small, NULL);
    assert_int_equal(a.lazy != 0, inline_expected());
    while (arena_alloc(&a, 8)) /* nothing left for a record */
        ;
    assert_int_equal(a.lazy != 0, inline_expected());
    memcpy(&was, &a, sizeof a);
    assert_null(arena_cleanup_push(&a, never_run, NULL));
    assert_unchanged(&a, &was);
    assert_int_equal(recorded_errors.count, 0);
    arena_release(&a);
    assert_non_null(arena_cleanup_push(&a, count_run, &ran));
    assert_true(arena_check(&a));
    arena_release(&a);
    assert_int_equal(ran, 1);
}

/* The inline init is taken wherever it may be: a plain build outside
 * Valgrind (which preloads its own objects); otherwise the library's. */
static void test_inline_init_is_taken(void **state)
{
    arena a;
    const arena_allocator no_alloc = {NULL, NULL, NULL}; /* fixed-size too */
    const char *preload = getenv("LD_PRELOAD");
    bool valgrind = preload && strstr(preload, "vgpreload");
    (void)state;

    if (ARENA__INLINE_WINDOW && !valgrind)
        assert_true(arena__inline_ok);
    arena_init_buffer(&a, buf_a, BUF, NULL);
    assert_int_equal(a.lazy != 0, inline_expected());
    arena_release(&a);
    /* Never for a backing, a buffer with no room, or none. */
    arena_init_buffer(&a, buf_a, BUF, &no_alloc);
    assert_int_equal(a.lazy, 0);
    arena_release(&a);
    arena_init_buffer(&a, buf_a + 1, ARENA_ALIGN - 1, NULL); /* all padding */
    assert_int_equal(a.lazy, 0);
    assert_null(arena_alloc(&a, 1));
    arena_release(&a);
    arena_init_buffer(&a, NULL, BUF, NULL);
    assert_int_equal(a.lazy, 0);
    assert_null(arena_alloc(&a, 1));
    arena_release(&a);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup_record_errors, teardown_record_errors)
    const struct CMUnitTest tests[] = {
        T(test_every_call_right_after_init), T(test_queries_right_after_init),
        T(test_misuse_right_after_init),     T(test_failed_calls_change_no_byte),
        T(test_inline_init_is_taken),        T(test_failed_cleanup_push_changes_no_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
