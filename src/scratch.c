/*
 * Scopes and per-thread scratch arenas.
 *
 * Each thread has ARENA_SCRATCH_COUNT arenas, found through a thread-local
 * pointer: finding one that is not a conflict is a scan of at most COUNT x n
 * pointers, with no call and no lock.  The first use in a thread allocates
 * them and registers them under a process-wide pthread key whose destructor
 * releases them when the thread exits; that is the only step that can fail.
 * They live on the heap, not in thread-local storage, because the destructor
 * must not reach thread-local storage: mingw-w64 emulates it with a pthread
 * key of its own, whose destructor may already have freed it.
 *
 * Two arenas are enough for any depth of nesting when each function passes
 * the arena its results go to as a conflict: a callee writing into scratch
 * arena 0 takes 1 for its own scratch, its callee writing into 1 takes 0 again
 * (past the caller's values, thanks to the mark), and so on.
 *
 * A scratch scope is an ordinary arena_scope: arena_scope_end() recognises a
 * scratch arena of the calling thread by its address in the thread's set and
 * trims it after the rewind, so the scope type needs no flag.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <string.h>

#include "arena/thread.h"
#include "internal.h"

/* Spare chunks a scratch arena keeps after a scope ends. */
#define SCRATCH_RETAIN ((size_t)1 << 20)

struct scratch_set {
    arena arenas[ARENA_SCRATCH_COUNT];
};

static ARENA__TLS struct scratch_set *tls_scratch; /* NULL until first use */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;

static void release_set(struct scratch_set *set)
{
    int i;
    for (i = 0; i < ARENA_SCRATCH_COUNT; i++)
        arena_release(&set->arenas[i]);
}

/* Key destructor.  Clearing tls_scratch lets a later destructor that uses
 * scratch memory start a new set, registered and so freed too. */
static void scratch_exit(void *value)
{
    struct scratch_set *set = (struct scratch_set *)value;
    release_set(set);
    arena__back_free(ARENA__HEAP, set, sizeof *set);
    tls_scratch = NULL;
}

static void make_key(void) { scratch_key_ok = pthread_key_create(&scratch_key, scratch_exit) == 0; }

/* This thread's set, new and registered; NULL on failure. */
static struct scratch_set *start_thread(void)
{
    struct scratch_set *set;

    pthread_once(&scratch_once, make_key);
    if (!scratch_key_ok)
        return NULL;
    set = (struct scratch_set *)arena__back_alloc(ARENA__HEAP, sizeof *set);
    if (!set)
        return NULL;
    memset(set, 0, sizeof *set); /* arenas of ARENA_DEFAULT_CHUNK chunks from malloc */
    if (pthread_setspecific(scratch_key, set) != 0) {
        arena__back_free(ARENA__HEAP, set, sizeof *set);
        return NULL;
    }
    tls_scratch = set;
    return set;
}

static bool conflicts_with(const arena *a, arena *const *conflicts, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (conflicts[i] == a)
            return true;
    }
    return false;
}

/* The scope that arena_scratch_begin() returns on failure. */
static arena_scope no_scope(void)
{
    arena_scope s;
    memset(&s, 0, sizeof s);
    return s;
}

arena_scope arena_scratch_begin(arena *const *conflicts, size_t n)
{
    struct scratch_set *set = tls_scratch;
    int i;

    if (ARENA__UNLIKELY(!set) && !(set = start_thread()))
        return no_scope();
    if (!conflicts)
        n = 0;
    /* Each return builds its scope whole: a scope zeroed first and then
     * written field by field was read back by wider loads that straddled
     * those stores, a store-forwarding stall that cost more than the rest of
     * the call (perf annotate of the scratch scope benchmark row). */
    for (i = 0; i < ARENA_SCRATCH_COUNT; i++) {
        if (!conflicts_with(&set->arenas[i], conflicts, n))
            return arena_scope_begin(&set->arenas[i]);
    }
    return no_scope();
}

static bool is_scratch(const arena *a)
{
    const struct scratch_set *set = tls_scratch;
    int i;
    if (!set)
        return false;
    for (i = 0; i < ARENA_SCRATCH_COUNT; i++) {
        if (a == &set->arenas[i])
            return true;
    }
    return false;
}

void arena__scope_end_slow(arena_scope *s)
{
    /* A scope ended out of order is reported by the rewind; then nothing
     * happens at all (no trim either). */
    if (s->arena && arena__rewind(s->arena, s->mark) && is_scratch(s->arena))
        arena_trim(s->arena, SCRATCH_RETAIN);
}

void arena_scratch_release_thread(void)
{
    if (tls_scratch)
        release_set(tls_scratch);
}
