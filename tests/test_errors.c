/* SPDX-License-Identifier: MIT */
/*
 * What a misuse report says of its object: the message names the arena,
 * pool or cache of the faulty call by its address and its name (escaped,
 * cut), and the handler learns the objects from arena_error_about(), which
 * is NULL outside a handler's call and nests with a report made from one.
 * One misuse of each kind that every build reports, on arenas, pools, a
 * cache and the current arena of the arena_cur_* family.
 */
#include <stdio.h>
#include <string.h>

#include <arena/arena.h>
#include <arena/hooks.h>
#include <arena/pool.h>
#include <arena/thread.h>

#include "support.h"

/* What the handler saw of the last report. */
static struct {
    int count;
    arena_error code;
    char message[2048];
    bool about_set;
    arena_error_info about;
    char name[256]; /* a copy of about.name ("" for NULL) */
} seen;

static void record(arena_error code, const char *message, void *ctx)
{
    const arena_error_info *about = arena_error_about();
    (void)ctx;
    seen.count++;
    seen.code = code;
    snprintf(seen.message, sizeof seen.message, "%s", message);
    seen.about_set = about != NULL;
    if (about) {
        seen.about = *about;
        snprintf(seen.name, sizeof seen.name, "%s", about->name ? about->name : "");
    }
}

static int setup(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    arena_set_error_handler(record, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    arena_set_error_handler(NULL, NULL);
    return 0;
}

/* `obj` as %p prints it. */
static const char *addr_of(const void *obj)
{
    static char buf[4][32];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%p", obj);
    return b;
}

/* Asserts that the last report was one, of `code`, about arena `a` (and
 * nothing else), and that its message names it: its address, followed by
 * `shown` in quotes when not NULL. */
static void check_about_arena(int before, arena_error code, const arena *a, const char *shown)
{
    char words[256];
    assert_int_equal(seen.count, before + 1);
    assert_int_equal(seen.code, code);
    assert_true(seen.about_set);
    assert_int_equal(seen.about.code, code);
    assert_ptr_equal(seen.about.arena, a);
    assert_null(seen.about.pool);
    assert_null(seen.about.cache);
    if (shown) {
        snprintf(words, sizeof words, "%s \"%s\"", addr_of(a), shown);
        assert_string_equal(seen.name, arena_name(a));
    } else {
        snprintf(words, sizeof words, "%s", addr_of(a));
        assert_null(seen.about.name);
        assert_null(strchr(seen.message, '"'));
    }
    assert_non_null(strstr(seen.message, words));
    assert_null(arena_error_about()); /* outside the handler */
}

/* The misuses an arena's calls report in every build, on `a`. */
static void misuse_arena(arena *a, const char *shown)
{
    static char src[8];
    arena_mark m;
    char *v;
    int before;

    assert_non_null(arena_alloc(a, 10));
    m = arena_save(a);
    arena_reset(a);
    before = seen.count;
    arena_rewind(a, m);
    check_about_arena(before, ARENA_ERR_BAD_MARK, a, shown);
    assert_non_null(strstr(seen.message, "arena_rewind"));

    /* A message that did not print the arena's address gets it at its end. */
    before = seen.count;
    (void)arena_ref_copy(a, src, (size_t)ARENA_REF_MAX + 1, 1);
    check_about_arena(before, ARENA_ERR_REF_TOO_LARGE, a, shown);
    assert_non_null(strstr(seen.message, " (arena "));

    before = seen.count;
    assert_null(arena_cleanup_push(a, NULL, NULL));
    check_about_arena(before, ARENA_ERR_CLEANUP, a, shown);

    v = (char *)arena_alloc(a, 100);
    assert_non_null(v);
    assert_non_null(arena_alloc(a, 50));
    before = seen.count;
    assert_null(arena_realloc(a, v, SIZE_MAX, 10));
    check_about_arena(before, ARENA_ERR_BAD_SIZE, a, shown);
    arena_reset(a);
}

static void messages_name_the_arena(void **state)
{
    arena a, plain;
    (void)state;
    arena_init(&a, 4096);
    arena_set_name(&a, "request 42");
    misuse_arena(&a, "request 42");
    arena_release(&a);

    arena_init(&plain, 4096); /* unnamed: the address only, as before */
    misuse_arena(&plain, NULL);
    arena_release(&plain);
}

/* A name with a newline, a quote's neighbours, invalid UTF-8 and a C1
 * control is shown escaped; a long one cut to 64 characters. */
static void names_in_messages_are_escaped_and_cut(void **state)
{
    static char src[8];
    static char long_name[300];
    char want[300];
    arena a;
    int before;
    (void)state;
    arena_init(&a, 4096);
    arena_set_name(&a, "two\nlines \xff tab\t c1\xc2\x85 ok \xc3\xa9");
    before = seen.count;
    (void)arena_ref_copy(&a, src, (size_t)ARENA_REF_MAX + 1, 1);
    check_about_arena(before, ARENA_ERR_REF_TOO_LARGE, &a,
                      "two\\x0alines \\xff tab\\x09 c1\\xc2\\x85 ok \xc3\xa9");
    assert_null(strchr(seen.message, '\n'));

    memset(long_name, 'n', 100);
    memcpy(long_name + 62, "\xc3\xa9\xc3\xa9\xc3\xa9", 6); /* characters 63 to 65 */
    arena_set_name(&a, long_name);
    before = seen.count;
    (void)arena_ref_copy(&a, src, (size_t)ARENA_REF_MAX + 1, 1);
    memset(want, 'n', 62);
    memcpy(want + 62, "\xc3\xa9\xc3\xa9\"", 6); /* 64 characters, then the quote */
    want[68] = '\0';
    assert_non_null(strstr(seen.message, want));
    assert_string_equal(seen.name, long_name); /* the info has the whole name */
    arena_release(&a);
}

static void messages_name_the_pool(void **state)
{
    arena_pool p, q;
    char words[128];
    void *x;
    (void)state;
    assert_true(arena_pool_init(&p, 32, 8, 4, NULL));
    assert_true(arena_pool_init(&q, 32, 8, 4, NULL));
    arena_pool_set_name(&p, "sessions");
    x = arena_pool_alloc(&p);
    assert_non_null(x);

    arena_pool_free(&p, NULL);
    assert_int_equal(seen.code, ARENA_ERR_NULL_FREE);
    arena_pool_free(&p, x);
    arena_pool_free(&p, x);
    assert_int_equal(seen.code, ARENA_ERR_DOUBLE_FREE);
    assert_true(seen.about_set);
    assert_ptr_equal(seen.about.pool, &p);
    assert_null(seen.about.arena);
    assert_null(seen.about.cache);
    assert_string_equal(seen.name, "sessions");
    snprintf(words, sizeof words, "pool %s \"sessions\"", addr_of(&p));
    assert_non_null(strstr(seen.message, words));
    assert_int_equal(seen.count, 2);

    x = arena_pool_alloc(&q); /* a slot of q given to p */
    assert_non_null(x);
    arena_pool_free(&p, x);
    assert_int_equal(seen.code, ARENA_ERR_FOREIGN_POINTER);
    assert_non_null(strstr(seen.message, words));
    assert_int_equal(seen.count, 3);
    arena_pool_free(&q, x);
    arena_pool_destroy(&q);
    arena_pool_destroy(&p);
}

static void messages_name_the_cache_and_its_arena(void **state)
{
    arena_cache *c = arena_cache_create(NULL), *d = arena_cache_create(NULL);
    arena *a, *b;
    char words[128];
    (void)state;
    assert_non_null(c);
    assert_non_null(d);
    arena_cache_set_name(c, "requests");
    /* The cache's name for its arenas, which a recycled arena keeps (a name
     * set on it by a request would not outlive the recycle). */
    arena_cache_set_arena_name(c, "request 7");
    a = arena_cache_acquire(c);
    b = arena_cache_acquire(d);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(arena_name(a), "request 7");

    arena_cache_recycle(c, NULL);
    assert_int_equal(seen.count, 1);
    assert_int_equal(seen.code, ARENA_ERR_NULL_FREE);
    assert_ptr_equal(seen.about.cache, c);
    assert_null(seen.about.arena);
    assert_string_equal(seen.name, "requests");
    snprintf(words, sizeof words, "cache %s \"requests\"", addr_of(c));
    assert_non_null(strstr(seen.message, words));

    arena_cache_recycle(c, a);
    arena_cache_recycle(c, a);
    assert_int_equal(seen.count, 2);
    assert_int_equal(seen.code, ARENA_ERR_DOUBLE_FREE);
    assert_ptr_equal(seen.about.cache, c);
    assert_ptr_equal(seen.about.arena, a);
    assert_string_equal(seen.name, "request 7"); /* the arena's first */
    assert_non_null(strstr(seen.message, words));
    snprintf(words, sizeof words, "arena %s \"request 7\"", addr_of(a));
    assert_non_null(strstr(seen.message, words));

    arena_cache_recycle(c, b); /* d's */
    assert_int_equal(seen.count, 3);
    assert_int_equal(seen.code, ARENA_ERR_FOREIGN_POINTER);
    assert_ptr_equal(seen.about.arena, b);
    assert_string_equal(seen.name, ""); /* b is unnamed */
    snprintf(words, sizeof words, "%s \"requests\"", addr_of(c));
    assert_non_null(strstr(seen.message, words));
    arena_cache_recycle(d, b);
    arena_cache_destroy(d);
    arena_cache_destroy(c);
}

static void messages_name_the_current_arena(void **state)
{
    static _Alignas(16) unsigned char zeroes[64];
    arena a;
    arena *prev;
    char words[128];
    (void)state;
    arena_init(&a, 4096);
    arena_set_name(&a, "current");
    prev = arena_set_current(&a);
    arena_cur_free(zeroes + 32);
    assert_int_equal(seen.count, 1);
    assert_int_equal(seen.code, ARENA_ERR_FOREIGN_POINTER);
    assert_ptr_equal(seen.about.arena, &a);
    snprintf(words, sizeof words, "(arena %s \"current\")", addr_of(&a));
    assert_non_null(strstr(seen.message, words));
    arena_set_current(prev);
    arena_release(&a);
}

/* A handler that makes a misuse itself: the inner report has its own
 * objects, and the outer one is back when the inner handler returns. */
static arena inner_arena;
static int depth;
static struct {
    const arena *inner_seen, *outer_after;
} nested;

static void nesting(arena_error code, const char *message, void *ctx)
{
    const arena_error_info *about = arena_error_about();
    (void)code;
    (void)message;
    (void)ctx;
    assert_non_null(about);
    if (depth++ == 0) {
        static char src[8];
        (void)arena_ref_copy(&inner_arena, src, (size_t)ARENA_REF_MAX + 1, 1);
        nested.outer_after = arena_error_about()->arena;
    } else {
        nested.inner_seen = about->arena;
    }
    depth--;
}

static void about_nests(void **state)
{
    arena outer;
    arena_mark m;
    (void)state;
    arena_init(&outer, 4096);
    arena_init(&inner_arena, 4096);
    assert_null(arena_error_about());
    arena_set_error_handler(nesting, NULL);
    assert_non_null(arena_alloc(&outer, 10));
    m = arena_save(&outer);
    arena_reset(&outer);
    arena_rewind(&outer, m);
    assert_ptr_equal(nested.inner_seen, &inner_arena);
    assert_ptr_equal(nested.outer_after, &outer);
    assert_null(arena_error_about());
    arena_release(&inner_arena);
    arena_release(&outer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(messages_name_the_arena, setup, teardown),
        cmocka_unit_test_setup_teardown(names_in_messages_are_escaped_and_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(messages_name_the_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(messages_name_the_cache_and_its_arena, setup, teardown),
        cmocka_unit_test_setup_teardown(messages_name_the_current_arena, setup, teardown),
        cmocka_unit_test_setup_teardown(about_nests, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
