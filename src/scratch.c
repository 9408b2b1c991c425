/* SPDX-License-Identifier: MIT */
/*
 * Scopes and per-thread scratch arenas.
 *
 * Each thread has ARENA_SCRATCH_COUNT arenas, found through a thread-local
 * pointer: finding one that is not a conflict is a scan of at most COUNT x n
 * pointers, with no call and no lock.  The first use in a thread makes them
 * (per-thread state, thread_state.h), released when the thread exits; that
 * is the only step that can fail.
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
#include <string.h>

#include "arena/thread.h"
#include "thread_state.h"

/* Spare chunks a scratch arena keeps after a scope ends. */
#define SCRATCH_RETAIN ((size_t)1 << 20)

struct scratch_set {
    arena arenas[ARENA_SCRATCH_COUNT];
};

static ARENA__TLS struct scratch_set *tls_scratch; /* NULL until first use */

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
    arena__thread_state_free(set, sizeof *set);
    tls_scratch = NULL;
}

struct arena__thread_key arena__scratch_key = {.exit = scratch_exit};

/* This thread's set, new and registered; NULL on failure. */
static struct scratch_set *start_thread(void)
{
    /* Zeroed: arenas of ARENA_DEFAULT_CHUNK chunks from malloc. */
    struct scratch_set *set =
        (struct scratch_set *)arena__thread_state_new(&arena__scratch_key, sizeof *set);
    if (set)
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
     * written field by field is read back by wider loads that straddle
     * those stores, and the store forwarding fails (docs/fast-path.md). */
    for (i = 0; i < ARENA_SCRATCH_COUNT; i++) {
        if (!conflicts_with(&set->arenas[i], conflicts, n)) {
            if (ARENA__UNLIKELY(arena__guard_every()))
                arena__scratch_batch(&set->arenas[i]);
            return arena_scope_begin(&set->arenas[i]);
        }
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
    bool scratch = s->arena && is_scratch(s->arena);
    /* A guarded scope's values expire as a scratch scope's (guard.c). */
    bool guarded = scratch && (s->arena->pending & ARENA__PENDING_GUARD);
    if (guarded)
        arena__guard_cause(ARENA__END_SCRATCH);
    if (s->arena && arena__rewind(s->arena, s->mark) && scratch)
        arena_trim(s->arena, SCRATCH_RETAIN);
    if (guarded)
        arena__guard_cause(0);
}

void arena_scratch_release_thread(void)
{
    if (tls_scratch)
        release_set(tls_scratch);
}
