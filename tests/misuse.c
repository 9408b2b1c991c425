/* SPDX-License-Identifier: MIT */
/*
 * Deliberate misuse of dead arena memory, one kind per argument, for the
 * tests that prove ASan and memcheck see it (tests/CMakeLists.txt expects
 * their report in the output).  Each case touches memory the program must
 * not touch; in a build without a tool watching, it prints "not reported"
 * and exits 1, so a case that a tool misses fails its test.
 */
#include <stdio.h>
#include <string.h>

#include <arena/arena.h>
#include <arena/pool.h>

static volatile char sink;

/* Reads *p through a pointer the compiler cannot trace back to p: gcc -O2
 * takes an access to bytes the program itself wrote (memset) before the
 * call that expired them for one already checked, and drops its ASan check. */
static void touch(const char *p)
{
    const char *volatile hidden = p;
    sink = *(const volatile char *)hidden;
}

static int after_reset(void)
{
    arena a = {0};
    char *p = (char *)arena_alloc(&a, 32);
    memset(p, 1, 32);
    arena_reset(&a);
    touch(p);
    arena_release(&a);
    return 1;
}

static int after_rewind(void)
{
    arena a = {0};
    char *keep = (char *)arena_alloc(&a, 16);
    arena_mark m = arena_save(&a);
    char *p = (char *)arena_alloc(&a, 32);
    memset(keep, 1, 16);
    memset(p, 1, 32);
    arena_rewind(&a, m);
    touch(p);
    arena_release(&a);
    return 1;
}

static int after_release_oversized(void)
{
    arena a;
    char *p;
    arena_init(&a, 1024);
    p = (char *)arena_alloc(&a, 4096);
    memset(p, 1, 4096);
    arena_release(&a);
    touch(p + 100);
    return 1;
}

static int after_reset_oversized(void)
{
    arena a;
    char *p;
    arena_init(&a, 1024);
    p = (char *)arena_alloc(&a, 4096);
    memset(p, 1, 4096);
    arena_reset(&a);
    touch(p + 100);
    arena_release(&a);
    return 1;
}

static int chunk_tail(void)
{
    arena a = {0};
    char *p = (char *)arena_alloc(&a, 32);
    memset(p, 1, 32);
    touch(p + 200);
    arena_release(&a);
    return 1;
}

static int past_end(void)
{
    arena a = {0};
    char *p = (char *)arena_alloc(&a, 13);
    char *q = (char *)arena_alloc(&a, 16);
    memset(p, 1, 13);
    memset(q, 1, 16);
    *(volatile char *)(p + 13) = 2; /* off by one */
    arena_release(&a);
    return 1;
}

/* A value stored before a mark and grown in place past it: the rewind cuts
 * it back, and a write just past it (its guard again) is reported. */
static int grown_past_rewind(void)
{
    arena a;
    arena_mark m;
    char *x, *grown, *next;
    char *volatile hidden;
    arena_init(&a, 4096);
    x = (char *)arena_alloc(&a, 96);
    m = arena_save(&a);
    grown = (char *)arena_realloc(&a, x, 96, 1500); /* in place */
    if (grown)
        memset(grown, 1, 1500);
    arena_rewind(&a, m);
    next = (char *)arena_alloc(&a, 16);
    memset(next, 1, 16);
    hidden = x + 96; /* see touch() */
    *hidden = 2;
    arena_release(&a);
    return 1;
}

/* The same with a value whose end is inside a granule (13 bytes): the
 * rewind cuts it back to its size at the mark, and a write one byte past
 * that is reported. */
static int grown_past_rewind_odd(void)
{
    arena a;
    arena_mark m;
    char *x, *grown, *next;
    char *volatile hidden;
    arena_init(&a, 4096);
    x = (char *)arena_alloc(&a, 13);
    memset(x, 1, 13);
    m = arena_save(&a);
    grown = (char *)arena_realloc(&a, x, 13, 1500); /* in place */
    if (grown)
        memset(grown, 1, 1500);
    arena_rewind(&a, m);
    next = (char *)arena_alloc(&a, 16);
    memset(next, 1, 16);
    hidden = x + 13; /* see touch() */
    *hidden = 2;
    arena_release(&a);
    return 1;
}

static int string_past_end(void)
{
    arena a = {0};
    char *s = arena_strdup(&a, "abc");
    char *t = arena_strdup(&a, "def");
    touch(s + 4);
    (void)t;
    arena_release(&a);
    return 1;
}

static int buffer_tail(void)
{
    _Alignas(16) char buf[512];
    arena a;
    char *p;
    arena_init_buffer(&a, buf, sizeof buf, NULL);
    p = (char *)arena_alloc(&a, 8);
    memset(p, 1, 8);
    touch(buf + 300);
    arena_release(&a);
    return 1;
}

static int uninitialised(void)
{
    arena a = {0};
    char *p = (char *)arena_alloc(&a, 8);
    int r = p[3] == 42; /* never written */
    if (r)
        puts("42");
    arena_release(&a);
    return 1;
}

static int pool_freed(void)
{
    arena_pool p;
    char *o;
    if (!arena_pool_init(&p, 32, 8, 4, NULL))
        return 2;
    o = (char *)arena_pool_alloc(&p);
    memset(o, 1, 32);
    arena_pool_free(&p, o);
    touch(o + 8);
    arena_pool_destroy(&p);
    return 1;
}

static int pool_never(void)
{
    arena_pool p;
    char *o;
    if (!arena_pool_init(&p, 32, 8, 4, NULL))
        return 2;
    o = (char *)arena_pool_alloc(&p);
    memset(o, 1, 32);
    touch(o + 32); /* the next slot, never handed out */
    arena_pool_destroy(&p);
    return 1;
}

static const struct {
    const char *name;
    int (*run)(void);
} cases[] = {
    {"after_reset", after_reset},
    {"after_rewind", after_rewind},
    {"after_release_oversized", after_release_oversized},
    {"after_reset_oversized", after_reset_oversized},
    {"chunk_tail", chunk_tail},
    {"past_end", past_end},
    {"grown_past_rewind", grown_past_rewind},
    {"grown_past_rewind_odd", grown_past_rewind_odd},
    {"string_past_end", string_past_end},
    {"buffer_tail", buffer_tail},
    {"uninitialised", uninitialised},
    {"pool_freed", pool_freed},
    {"pool_never", pool_never},
};

int main(int argc, char **argv)
{
    size_t i;
    if (argc != 2) {
        fprintf(stderr, "usage: %s CASE\n", argv[0]);
        return 2;
    }
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(argv[1], cases[i].name) == 0) {
            int rc = cases[i].run();
            printf("misuse %s: not reported\n", argv[1]);
            return rc;
        }
    }
    fprintf(stderr, "misuse: unknown case %s\n", argv[1]);
    return 2;
}
