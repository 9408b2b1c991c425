/*
 * Per-thread scratch arenas.
 *
 * Each thread has ARENA_SCRATCH_COUNT arenas in thread-local storage: finding
 * one that is not a conflict is a scan of at most COUNT x n pointers, with no
 * call and no lock.  The first use in a thread registers the thread's arenas
 * under a process-wide pthread key whose destructor releases them when the
 * thread exits; registration is the only step that can fail.
 *
 * Two arenas are enough for any depth of nesting when each function passes
 * the arena its results go to as a conflict: a callee writing into scratch
 * arena 0 takes 1 for its own scratch, its callee writing into 1 takes 0 again
 * (past the caller's values, thanks to the mark), and so on.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include "arena/thread.h"
#include "internal.h"

/* Spare chunks a scratch arena keeps after a scope ends. */
#define SCRATCH_RETAIN ((size_t)1 << 20)

struct scratch_set {
    arena arenas[ARENA_SCRATCH_COUNT];
    bool registered; /* the key's value is set: the arenas are freed at exit */
};

static ARENA__TLS struct scratch_set tls_scratch;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;

static void release_set(struct scratch_set *set)
{
    int i;
    for (i = 0; i < ARENA_SCRATCH_COUNT; i++)
        arena_release(&set->arenas[i]);
}

/* Key destructor.  Clearing `registered` lets a later destructor that uses
 * scratch memory register again, so that it is freed too. */
static void scratch_exit(void *value)
{
    struct scratch_set *set = (struct scratch_set *)value;
    set->registered = false;
    release_set(set);
}

static void make_key(void) { scratch_key_ok = pthread_key_create(&scratch_key, scratch_exit) == 0; }

static bool register_thread(struct scratch_set *set)
{
    pthread_once(&scratch_once, make_key);
    if (!scratch_key_ok || pthread_setspecific(scratch_key, set) != 0)
        return false;
    set->registered = true;
    return true;
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

arena_scratch arena_scratch_begin(arena *const *conflicts, size_t n)
{
    struct scratch_set *set = &tls_scratch;
    arena_scratch s;
    int i;

    s.arena = NULL;
    memset(&s.mark, 0, sizeof s.mark);
    if (ARENA_UNLIKELY(!set->registered) && !register_thread(set))
        return s;
    if (!conflicts)
        n = 0;
    for (i = 0; i < ARENA_SCRATCH_COUNT; i++) {
        if (!conflicts_with(&set->arenas[i], conflicts, n)) {
            s.arena = &set->arenas[i];
            s.mark = arena_save(s.arena);
            break;
        }
    }
    return s;
}

void arena_scratch_end(arena_scratch s)
{
    /* A scratch ended out of order is reported by the rewind; then nothing
     * happens at all (no trim either). */
    if (s.arena && arena__rewind(s.arena, s.mark))
        arena_trim(s.arena, SCRATCH_RETAIN);
}

void arena_scratch_release_thread(void) { release_set(&tls_scratch); }
