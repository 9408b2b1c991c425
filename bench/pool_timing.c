/* SPDX-License-Identifier: MIT */
/*
 * A quick side-by-side timing of arena_pool against a bare intrusive LIFO
 * free list (the least work a pool can do) and malloc/free, on the batch and
 * rolling patterns of the suite's pool rows (bench/workloads.h: take every
 * slot then give all back; cap/2 live, free the oldest, take one).  Not the
 * benchmark suite: a sanity check for whoever touches the pool's fast paths.
 *
 *   cc -O2 -Iinclude -Ibuild/include bench/pool_timing.c build/libarena.a -o pool_timing
 *   ./pool_timing                                  # pool and bare list
 *   LD_PRELOAD=libmimalloc.so.2 ./pool_timing malloc
 *
 * Figures are ns per operation (one alloc or one free), median of 9 runs,
 * interleaved.  "bare" is the list as a local the compiler keeps in a
 * register; "bare-lib" is the same list with an out-of-line call when empty,
 * as a library would ship it: gcc then keeps its head in memory across the
 * loop, storing and reloading it at every call.  The pool has such calls too
 * (to report misuse) but reloads its fields after them and holds them to the
 * end of each call (pool.h), so gcc keeps them in registers: compare the two
 * to see what that is worth.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arena/pool.h>

#define REPS 9

typedef struct bare {
    void *head;
    char *mem;
} bare;

static void bare_init(bare *b, size_t size, size_t cap)
{
    size_t i;
    b->mem = malloc(size * cap);
    b->head = NULL;
    for (i = cap; i-- > 0;) {
        *(void **)(b->mem + i * size) = b->head;
        b->head = b->mem + i * size;
    }
}

static inline void *bare_alloc(bare *b)
{
    void *p = b->head;
    if (!p)
        return NULL;
    b->head = *(void **)p;
    return p;
}

static inline void bare_free(bare *b, void *p)
{
    *(void **)p = b->head;
    b->head = p;
}

enum kind { POOL, BARE, BARE_LIB, MALLOC };

/* The bare list as a library would ship it: when empty, alloc calls out of
 * line (to grow, or to report).  That call is enough to keep the compiler
 * from holding the head in a register across a loop of calls. */
__attribute__((noinline)) static void *bare_refill(bare *b)
{
    __asm__ volatile("" : : "r"(b) : "memory");
    return NULL;
}

static inline void *bare_lib_alloc(bare *b)
{
    void *p = b->head;
    if (__builtin_expect(!p, 0))
        return bare_refill(b);
    b->head = *(void **)p;
    return p;
}

static void **live;
static size_t obj_size;

/* The pattern, written once per kind so that each inlines its own calls. */
#define BATCH(ALLOC, FREE)                       \
    for (r = 0; r < rounds; r++) {               \
        for (i = 0; i < cap; i++)                \
            live[i] = ALLOC;                     \
        for (i = 0; i < cap; i++)                \
            FREE(live[i]);                       \
    }
#define ROLLING(ALLOC, FREE)                     \
    for (i = 0; i < half; i++)                   \
        live[i] = ALLOC;                         \
    for (r = 0; r < rounds; r++) {               \
        for (i = 0; i < half; i++) {             \
            FREE(live[i]);                       \
            live[i] = ALLOC;                     \
        }                                        \
    }                                            \
    for (i = 0; i < half; i++)                   \
        FREE(live[i]);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* time on the CPU: a shared machine */
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define POOL_FREE(x) arena_pool_free(&pool, (x))
#define BARE_FREE(x) bare_free(&b, (x))
#define LIB_FREE(x) bare_free(&bl, (x))
#define MALLOC_FREE(x) free(x)

/* ns per op for one run. */
static double run(enum kind k, int rolling, size_t cap)
{
    size_t half = cap / 2, i, r, rounds = (1u << 24) / cap;
    arena_pool pool;
    bare b, bl;
    double t0, t;
    size_t ops = rolling ? rounds * half * 2 : rounds * cap * 2;

    if (k == POOL && !arena_pool_init(&pool, obj_size, 8, cap, NULL))
        abort();
    if (k == BARE)
        bare_init(&b, obj_size, cap);
    if (k == BARE_LIB)
        bare_init(&bl, obj_size, cap);
    t0 = now();
    if (k == POOL) {
        if (rolling) { ROLLING(arena_pool_alloc(&pool), POOL_FREE) }
        else { BATCH(arena_pool_alloc(&pool), POOL_FREE) }
    } else if (k == BARE) {
        if (rolling) { ROLLING(bare_alloc(&b), BARE_FREE) }
        else { BATCH(bare_alloc(&b), BARE_FREE) }
    } else if (k == BARE_LIB) {
        if (rolling) { ROLLING(bare_lib_alloc(&bl), LIB_FREE) }
        else { BATCH(bare_lib_alloc(&bl), LIB_FREE) }
    } else {
        if (rolling) { ROLLING(malloc(obj_size), MALLOC_FREE) }
        else { BATCH(malloc(obj_size), MALLOC_FREE) }
    }
    t = (now() - t0) / (double)ops;
    if (k == POOL) {
        if (arena_pool_used(&pool) != 0 || !arena_pool_check(&pool))
            abort();
        arena_pool_destroy(&pool);
    }
    if (k == BARE)
        free(b.mem);
    if (k == BARE_LIB)
        free(bl.mem);
    return t;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    static const size_t caps[] = {1024, 8192, 65536, 262144};
    static const size_t sizes[] = {16, 256};
    int use_malloc = argc > 1 && strcmp(argv[1], "malloc") == 0;
    size_t s, c;
    int rolling, rep, k;

    live = malloc(sizeof *live * 262144);
    if (use_malloc)
        printf("%-8s %5s %7s %8s\n", "pattern", "size", "cap", "malloc");
    else
        printf("%-8s %5s %7s %8s %8s %8s %11s %11s\n", "pattern", "size", "cap", "pool",
               "bare", "bare-lib", "pool/bare", "pool/b-lib");
    for (rolling = 0; rolling < 2; rolling++) {
        for (s = 0; s < 2; s++) {
            for (c = 0; c < 4; c++) {
                double t[3][REPS], m[3];
                obj_size = sizes[s];
                /* Interleaved, so that a noisy neighbour hits every kind alike. */
                for (rep = 0; rep < REPS; rep++)
                    for (k = 0; k < (use_malloc ? 1 : 3); k++)
                        t[k][rep] = run(use_malloc ? MALLOC : (enum kind)k, rolling, caps[c]);
                for (k = 0; k < 3; k++) {
                    qsort(t[k], REPS, sizeof t[k][0], cmp);
                    m[k] = t[k][REPS / 2];
                }
                if (use_malloc)
                    printf("%-8s %5zu %7zu %8.2f\n", rolling ? "rolling" : "batch", sizes[s],
                           caps[c], m[0]);
                else
                    printf("%-8s %5zu %7zu %8.2f %8.2f %8.2f %11.2f %11.2f\n",
                           rolling ? "rolling" : "batch", sizes[s], caps[c], m[0], m[1], m[2],
                           m[0] / m[1], m[0] / m[2]);
            }
        }
    }
    free(live);
    return 0;
}
