/* SPDX-License-Identifier: MIT */
/* Request-scoped memory on worker threads: each request takes an arena from a
 * cache and gives it back, formats through a scratch arena, and the workers
 * together build one index in a shared arena. */
#define _POSIX_C_SOURCE 200809L
#include <arena/thread.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define WORKERS  4
#define REQUESTS 1000

static arena_cache *cache;
static arena_shared *index_arena;

/* Formats "<greeting>, <name>!" into `out`, with scratch memory of its own. */
static const char *greet(arena *out, const char *name, int n)
{
    arena_scope s = arena_scratch_begin(&out, 1); /* never `out` */
    if (!s.arena)
        return NULL;
    char *upper = arena_strdup(s.arena, name);
    for (char *c = upper; c && *c; c++)
        *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
    char tmp[64];
    int len = snprintf(tmp, sizeof tmp, "hello %d, %s!", n, upper ? upper : "?");
    const char *result = arena_strndup(out, tmp, (size_t)len);
    arena_scope_end(&s); /* `upper` is gone, `result` lives in `out` */
    return result;
}

struct entry {
    int worker, request;
};

static void *worker(void *arg)
{
    int id = *(const int *)arg, bad = 0;
    for (int r = 0; r < REQUESTS; r++) {
        arena *a = arena_cache_acquire(cache);
        if (!a)
            return "out of memory";
        const char *reply = greet(a, "world", r);
        bad += !reply || strncmp(reply, "hello ", 6) != 0;
        struct entry *e = (struct entry *)arena_shared_alloc(index_arena, sizeof *e);
        if (e) {
            e->worker = id;
            e->request = r;
        }
        bad += !e;
        arena_cache_recycle(cache, a); /* reset, chunks kept for the next request */
    }
    arena_scratch_release_thread(); /* would happen at thread exit anyway */
    return bad ? "bad reply" : NULL;
}

int main(void)
{
    arena_cache_config cfg = {.max_arenas = WORKERS, .max_retained = 1 << 20};
    pthread_t t[WORKERS];
    int ids[WORKERS], failed = 0;

    cache = arena_cache_create(&cfg);
    index_arena = arena_shared_create(0, 0, NULL);
    if (!cache || !index_arena)
        return 1;
    for (int i = 0; i < WORKERS; i++) {
        ids[i] = i;
        if (pthread_create(&t[i], NULL, worker, &ids[i]) != 0)
            return 1;
    }
    for (int i = 0; i < WORKERS; i++) {
        void *err;
        pthread_join(t[i], &err);
        if (err) {
            fprintf(stderr, "worker %d: %s\n", i, (const char *)err);
            failed = 1;
        }
    }
    printf("%d requests served, %zu bytes of shared index chunks, %zu arenas cached\n",
           WORKERS * REQUESTS, arena_shared_retained(index_arena), arena_cache_count(cache));
    arena_shared_reset(index_arena, 0); /* the workers are joined: allowed */
    arena_shared_destroy(index_arena);
    arena_cache_destroy(cache);
    return failed;
}
