/* SPDX-License-Identifier: MIT */
/*
 * A request server that caps memory: each request may hold at most 256 KiB
 * (the cache's arena limit), all requests together at most 4 MiB (the
 * cache's group limit), a cap that is hit is logged with the request's name
 * (which each request sets, and which dies with it at the recycle), and
 * the registry's report is printed on SIGUSR1 and at exit.  Threads stand in
 * for the server's workers; one request in 50 is hostile and asks for far
 * more than its cap.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <arena/arena.h>
#include <arena/report.h>
#include <arena/thread.h>

#define WORKERS     4
#define REQUESTS    500
#define REQUEST_CAP ((size_t)256 << 10)
#define SERVER_CAP  ((size_t)4 << 20)

static arena_cache *requests;
static atomic_int capped, shed;
static volatile sig_atomic_t report_asked;

#ifdef SIGUSR1
static void on_sigusr1(int sig)
{
    (void)sig;
    report_asked = 1;
}
#endif

/* Told of each refusal: log the first few, count them all.  It must not
 * call anything on the arena; the request sees NULL and sheds itself. */
static void on_limit(const arena_limit_event *e, void *ctx)
{
    (void)ctx;
    if (atomic_fetch_add(&capped, 1) < 3)
        fprintf(stderr, "cap hit: %s (%s limit %zu bytes, held %zu, asked %zu)\n",
                e->name ? e->name : "?", e->cause == ARENA_LIMIT_BUDGET ? "server" : "request",
                e->limit, e->held, e->asked);
}

/* One request: parse-like work in its arena; false when a cap shed it. */
static bool serve(arena *a, int id)
{
    size_t want = id % 50 == 7 ? (size_t)64 << 20 : 20000 + (size_t)(id % 17) * 4000;
    size_t got = 0;
    while (got < want) {
        char *field = arena_sprintf(a, "request %d field %lu", id, (unsigned long)got);
        char *body = arena_alloc(a, 1000);
        if (!field || !body)
            return false;
        memset(body, 'x', 1000);
        got += 1000 + strlen(field);
    }
    return true;
}

static void *worker(void *arg)
{
    int w = (int)(intptr_t)arg, i;
    for (i = 0; i < REQUESTS; i++) {
        arena *a = arena_cache_acquire(requests);
        if (!a)
            continue;
        arena_set_name(a, w % 2 ? "request (odd worker)" : "request (even worker)");
        if (!serve(a, w * REQUESTS + i))
            atomic_fetch_add(&shed, 1);
        arena_cache_recycle(requests, a); /* the name goes; the cache's settings stay */
    }
    return NULL;
}

int main(void)
{
    pthread_t t[WORKERS];
    intptr_t i;

#ifdef SIGUSR1 /* POSIX; not on Windows */
    signal(SIGUSR1, on_sigusr1);
#endif
    requests = arena_cache_create(NULL);
    if (!requests)
        return 1;
    arena_cache_set_name(requests, "requests");
    arena_cache_set_limit(requests, SERVER_CAP);
    arena_cache_set_arena_limit(requests, REQUEST_CAP);
    arena_cache_on_limit(requests, on_limit, NULL);
    if (!arena_cache_register(requests))
        return 1;
    for (i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    if (report_asked)
        printf("(SIGUSR1 arrived while serving)\n");
    printf("%d requests, %d shed, %d caps hit\n", WORKERS * REQUESTS, atomic_load(&shed),
           atomic_load(&capped));
    arena_report_file(stdout, ARENA_REPORT_TEXT);
    arena_cache_destroy(requests);
    return atomic_load(&shed) >= WORKERS * REQUESTS / 50 ? 0 : 1; /* every hostile one shed */
}
