/*
 * Standalone measurements of request-scoped memory and of the shared arena
 * (until the Google Benchmark suite covers them).
 *
 *   threads_bench arena    the libarena side
 *   threads_bench malloc   the malloc side (run it again under
 *                          LD_PRELOAD=libmimalloc.so.2 / libjemalloc.so.2)
 *
 * Prints ns per request and million values per second, best of 5, from
 * CPU time (see timed_wall()).  Build and run (from the source tree, after
 * `cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release && cmake --build
 * build-rel --target arena_static`):
 *
 *   cc -O2 -std=c11 -Iinclude -Ibuild-rel/include bench/threads_standalone.c \
 *      build-rel/libarena.a -pthread -o build-rel/threads_bench
 *   build-rel/threads_bench arena
 *   build-rel/threads_bench malloc glibc
 *   LD_PRELOAD=libmimalloc.so.2 build-rel/threads_bench malloc mimalloc
 *   LD_PRELOAD=libjemalloc.so.2 build-rel/threads_bench malloc jemalloc
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arena/thread.h>

/* Makes the compiler assume `p` and the memory it points to are used, as
 * Google Benchmark's DoNotOptimize does: no malloc/free pair is elided. */
static inline void escape(const void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t small_size(unsigned i) { return 16 + (i * 37) % 113; } /* 16..128 B */

/* ---- Per request: one zeroed 512 B block ---------------------------------------- */

/* The block size is a run-time value, as Google Benchmark's state.range(0)
 * is: with a constant, gcc -O2 inlines both memsets as `rep stos`, which
 * costs more than the allocation being measured. */
static volatile size_t block_size_v = 512;

static arena_cache *cache;

static void req512_arena(unsigned n)
{
    size_t bs = block_size_v;
    for (unsigned i = 0; i < n; i++) {
        arena *a = arena_cache_acquire(cache);
        unsigned char *p = (unsigned char *)arena_calloc(a, 1, bs);
        memset(p, (int)i, bs);
        escape(p);
        arena_cache_recycle(cache, a);
    }
}

static void req512_malloc(unsigned n)
{
    size_t bs = block_size_v;
    for (unsigned i = 0; i < n; i++) {
        unsigned char *p = (unsigned char *)calloc(1, bs);
        memset(p, (int)i, bs);
        escape(p);
        free(p);
    }
}

/* ---- Per request: 100 small values (16..128 B, first word written) ----------------- */

static void req100_arena(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        arena *a = arena_cache_acquire(cache);
        for (unsigned k = 0; k < 100; k++) {
            size_t sz = small_size(i + k);
            char *p = (char *)arena_alloc(a, sz);
            *(unsigned *)p = k;
            escape(p);
        }
        arena_cache_recycle(cache, a);
    }
}

static void req100_malloc(unsigned n)
{
    void *v[100];
    for (unsigned i = 0; i < n; i++) {
        for (unsigned k = 0; k < 100; k++) {
            size_t sz = small_size(i + k);
            char *p = (char *)malloc(sz);
            *(unsigned *)p = k;
            escape(p);
            v[k] = p;
        }
        for (unsigned k = 0; k < 100; k++)
            free(v[k]);
    }
}

/* ---- Threads ------------------------------------------------------------------------ */

#define BATCH 4096
#define VALUE 32

static arena_shared *shared;
static pthread_barrier_t barrier;

struct job {
    void (*fn)(unsigned);
    unsigned n;
    int id;
};

/* ANCHORS.md's workload: copy BATCH values of 32 B, keep them live, drop the batch. */
static void batches_malloc(unsigned n)
{
    static _Thread_local void *v[BATCH];
    char src[VALUE] = "0123456789abcdef0123456789abcde";
    for (unsigned b = 0; b < n; b++) {
        for (unsigned k = 0; k < BATCH; k++) {
            v[k] = malloc(VALUE);
            memcpy(v[k], src, VALUE);
            escape(v[k]);
        }
        escape(v);
        for (unsigned k = 0; k < BATCH; k++)
            free(v[k]);
    }
}

/* The same into the shared arena; the batch ends for all threads together
 * (barrier, one reset, barrier), as the contract of reset asks. */
static void batches_shared(unsigned n)
{
    char src[VALUE] = "0123456789abcdef0123456789abcde";
    for (unsigned b = 0; b < n; b++) {
        for (unsigned k = 0; k < BATCH; k++) {
            void *p = arena_shared_alloc(shared, VALUE);
            memcpy(p, src, VALUE);
            escape(p);
        }
        if (pthread_barrier_wait(&barrier) == PTHREAD_BARRIER_SERIAL_THREAD)
            arena_shared_reset(shared, SIZE_MAX);
        pthread_barrier_wait(&barrier);
    }
}

/* Same batches in a per-request arena of the cache. */
static void batches_cache(unsigned n)
{
    char src[VALUE] = "0123456789abcdef0123456789abcde";
    for (unsigned b = 0; b < n; b++) {
        arena *a = arena_cache_acquire(cache);
        for (unsigned k = 0; k < BATCH; k++) {
            void *p = arena_alloc(a, VALUE);
            memcpy(p, src, VALUE);
            escape(p);
        }
        arena_cache_recycle(cache, a);
    }
}

static void *run_job(void *arg)
{
    struct job *j = (struct job *)arg;
    j->fn(j->n);
    return NULL;
}

/* Seconds for `threads` threads each running fn(n), best of 5.  On a shared
 * machine wall time counts the time other processes take the cores, so the
 * figure is the process CPU time divided by the threads (what the threads
 * would take running in parallel undisturbed); contention between the
 * threads (cache lines moving, waiting on a lock) still counts, as it burns
 * CPU time.  *wall gets the best wall time. */
static double timed_wall(void (*fn)(unsigned), unsigned n, int threads, double *wall)
{
    double best = 1e30;
    *wall = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        pthread_t t[16];
        struct job j[16];
        pthread_barrier_init(&barrier, NULL, (unsigned)threads);
        double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC);
        for (int i = 0; i < threads; i++) {
            j[i] = (struct job){fn, n, i};
            pthread_create(&t[i], NULL, run_job, &j[i]);
        }
        for (int i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
        double dt = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / threads;
        double dw = clock_s(CLOCK_MONOTONIC) - t0;
        pthread_barrier_destroy(&barrier);
        if (dt < best)
            best = dt;
        if (dw < *wall)
            *wall = dw;
    }
    return best;
}

static double timed(void (*fn)(unsigned), unsigned n, int threads)
{
    double wall;
    return timed_wall(fn, n, threads, &wall);
}

static void scaling(const char *who, const char *what, void (*fn)(unsigned), unsigned batches,
                    int th)
{
    double wall, t = timed_wall(fn, batches, th, &wall);
    double values = (double)batches * BATCH * th;
    printf("%-10s %d thread(s), %-22s %7.1f M values/s (wall: %7.1f)\n", who, th, what,
           values / t / 1e6, values / wall / 1e6);
}

int main(int argc, char **argv)
{
    int arena_side = argc > 1 && strcmp(argv[1], "arena") == 0;
    const char *who = argc > 2 ? argv[2] : (arena_side ? "libarena" : "malloc");
    unsigned reqs = 2000000, batches = 200;

    cache = arena_cache_create(NULL);
    shared = arena_shared_create(0, 0, NULL);
    /* Warm up (first chunks, first runs, the allocator's caches). */
    timed(arena_side ? req100_arena : req100_malloc, 10000, 1);

    double t = timed(arena_side ? req512_arena : req512_malloc, reqs, 1);
    printf("%-10s request, one zeroed 512 B block:  %6.1f ns/request\n", who, t * 1e9 / reqs);
    t = timed(arena_side ? req100_arena : req100_malloc, reqs / 10, 1);
    printf("%-10s request, 100 small values:        %6.1f ns/request\n", who, t * 1e9 / (reqs / 10));
    for (int th = 1; th <= 2; th++) {
        if (arena_side) {
            scaling(who, "cache arena batches:", batches_cache, batches, th);
            scaling(who, "shared arena batches:", batches_shared, batches, th);
        } else {
            scaling(who, "malloc batches:", batches_malloc, batches, th);
        }
    }
    arena_shared_destroy(shared);
    arena_cache_destroy(cache);
    return 0;
}
