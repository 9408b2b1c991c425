/*
 * The arena cache: reset arenas kept for the next request.
 *
 * Two levels.  Each thread has a slot per cache (a pthread key whose value is
 * the one arena the thread recycled last): a request that starts and ends on
 * one thread takes and gives back its arena with no lock and no atomic
 * operation, which is what makes acquire + recycle cheaper than a malloc and
 * free of the same request.  Behind the slots is a shared stack (LIFO, so the
 * warmest arena goes out first) under a mutex, bounded by max_arenas; an
 * arena recycled while the slot is full goes there, and beyond the bound it
 * is freed.  A thread that exits gives its slot's arena to the stack (key
 * destructor).
 *
 * Every arena the cache made is also on a list (`all`), so that destroy frees
 * them wherever they are: on the stack, in some thread's slot, or acquired.
 * Deleting the key at destroy makes POSIX forget every thread's slot value
 * (a key created later starts at NULL in every thread), so no thread ever
 * sees a slot of a destroyed cache.
 *
 * Costs: acquire and recycle from the slot are two pthread_getspecific and
 * one pthread_setspecific calls plus arena_reset_to() (O(chunks)); the stack
 * adds one lock; a fresh arena is one allocation for its struct.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>

#include "arena/thread.h"
#include "internal.h"

enum { ACQUIRED = 1, STACKED, PARKED };

struct node {
    arena a; /* first: recycle maps the arena back to its node */
    struct arena_cache *owner;
    struct node *next;             /* the stack */
    struct node *prev_all, *next_all; /* every node of the cache */
    int state;
};

struct arena_cache {
    pthread_mutex_t lock;
    struct node *stack; /* under lock */
    size_t nstack;      /* under lock */
    struct node all;    /* sentinel of the list of every node; under lock */
    size_t chunk_bytes, max_arenas, max_retained;
    arena_allocator backing; /* alloc NULL: malloc */
    pthread_key_t slot;
};

static void *cache_alloc(const arena_allocator *b, size_t n)
{
    return b->alloc ? b->alloc(b->ctx, n) : malloc(n);
}

static void cache_free(const arena_allocator *b, void *p, size_t n)
{
    if (b->alloc)
        b->free(b->ctx, p, n);
    else
        free(p);
}

/* Unlinks `n` from every list (lock held) and frees it. */
static void free_node(arena_cache *c, struct node *n)
{
    n->prev_all->next_all = n->next_all;
    n->next_all->prev_all = n->prev_all;
    arena_release(&n->a);
    cache_free(&c->backing, n, sizeof *n);
}

/* Puts `n` (reset) on the stack, or frees it when the stack is full. */
static void stack_push(arena_cache *c, struct node *n)
{
    pthread_mutex_lock(&c->lock);
    if (c->nstack < c->max_arenas) {
        n->state = STACKED;
        n->next = c->stack;
        c->stack = n;
        c->nstack++;
    } else {
        free_node(c, n);
    }
    pthread_mutex_unlock(&c->lock);
}

/* Key destructor: the exiting thread's slot goes back to the stack. */
static void slot_exit(void *value)
{
    struct node *n = (struct node *)value;
    stack_push(n->owner, n);
}

arena_cache *arena_cache_create(const arena_cache_config *config)
{
    arena_cache_config cfg = {0, 0, 0, NULL};
    arena_allocator backing = {NULL, NULL, NULL};
    arena_cache *c;

    if (config)
        cfg = *config;
    if (cfg.backing && cfg.backing->alloc)
        backing = *cfg.backing;
    c = (arena_cache *)cache_alloc(&backing, sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    c->backing = backing;
    c->chunk_bytes = cfg.chunk_bytes ? cfg.chunk_bytes : ARENA_DEFAULT_CHUNK;
    if (c->chunk_bytes > ARENA_REF_MAX)
        c->chunk_bytes = ARENA_REF_MAX;
    c->max_arenas = cfg.max_arenas ? cfg.max_arenas : 64;
    c->max_retained = cfg.max_retained ? cfg.max_retained
                      : c->chunk_bytes > SIZE_MAX / 16 ? SIZE_MAX
                                                       : c->chunk_bytes * 16;
    c->all.prev_all = c->all.next_all = &c->all;
    if (pthread_mutex_init(&c->lock, NULL) != 0)
        goto fail;
    if (pthread_key_create(&c->slot, slot_exit) != 0) {
        pthread_mutex_destroy(&c->lock);
        goto fail;
    }
    return c;
fail:
    cache_free(&backing, c, sizeof *c);
    return NULL;
}

void arena_cache_destroy(arena_cache *c)
{
    arena_allocator backing;
    if (!c)
        return;
    pthread_key_delete(c->slot);
    while (c->all.next_all != &c->all)
        free_node(c, c->all.next_all);
    pthread_mutex_destroy(&c->lock);
    backing = c->backing;
    cache_free(&backing, c, sizeof *c);
}

arena *arena_cache_acquire(arena_cache *c)
{
    struct node *n = (struct node *)pthread_getspecific(c->slot);

    if (ARENA_LIKELY(n != NULL)) {
        pthread_setspecific(c->slot, NULL); /* clearing a set key cannot fail */
        n->state = ACQUIRED;
        return &n->a;
    }
    pthread_mutex_lock(&c->lock);
    n = c->stack;
    if (n) {
        c->stack = n->next;
        c->nstack--;
        n->state = ACQUIRED;
        pthread_mutex_unlock(&c->lock);
        return &n->a;
    }
    pthread_mutex_unlock(&c->lock);

    n = (struct node *)cache_alloc(&c->backing, sizeof *n);
    if (!n)
        return NULL;
    arena_init_with(&n->a, c->chunk_bytes, &c->backing);
    n->owner = c;
    n->next = NULL;
    n->state = ACQUIRED;
    pthread_mutex_lock(&c->lock);
    n->next_all = c->all.next_all;
    n->prev_all = &c->all;
    c->all.next_all->prev_all = n;
    c->all.next_all = n;
    pthread_mutex_unlock(&c->lock);
    return &n->a;
}

void arena_cache_recycle(arena_cache *c, arena *a)
{
    struct node *n = (struct node *)(void *)a;

    if (!a) {
        arena__report(ARENA_ERR_NULL_FREE, "arena_cache_recycle: NULL arena (cache %p)",
                      (void *)c);
        return;
    }
    if (n->owner != c) {
        arena__report(ARENA_ERR_FOREIGN_POINTER,
                      "arena_cache_recycle: arena %p belongs to cache %p, not %p", (void *)a,
                      (void *)n->owner, (void *)c);
        return;
    }
    if (n->state != ACQUIRED) {
        arena__report(ARENA_ERR_DOUBLE_FREE,
                      "arena_cache_recycle: arena %p is already recycled (cache %p)",
                      (void *)a, (void *)c);
        return;
    }
    arena_reset_to(&n->a, c->max_retained);
    if (!pthread_getspecific(c->slot) && pthread_setspecific(c->slot, n) == 0) {
        n->state = PARKED;
        return;
    }
    stack_push(c, n);
}

size_t arena_cache_count(arena_cache *c)
{
    size_t n;
    pthread_mutex_lock(&c->lock);
    n = c->nstack;
    pthread_mutex_unlock(&c->lock);
    return n;
}
