/* SPDX-License-Identifier: MIT */
/*
 * Per-thread state freed at thread exit (the arena cache's slot, the
 * scratch arenas): a zeroed heap block registered under a process-wide
 * pthread key whose destructor hands it back.  The block lives on the heap,
 * not in thread-local storage, because the destructor must still reach it:
 * mingw-w64 emulates thread-local storage with a pthread key of its own,
 * whose destructor may run first.  Never installed.
 */
#ifndef ARENA_THREAD_STATE_H
#define ARENA_THREAD_STATE_H

#include <pthread.h>

#include "internal.h"

/* One kind of per-thread state: `exit` runs at the exit of each thread
 * that made one, with the block; it empties it and then calls
 * arena__thread_state_free().  Statically initialised: { .exit = fn }; the
 * key is made at the first block. */
struct arena__thread_key {
    void (*exit)(void *state);
    pthread_key_t key;
    bool made; /* the key was tried */
    bool ok;   /* and made */
};

/* A zeroed block of `size` bytes for the calling thread, registered so that
 * k->exit gets it at thread exit; NULL when that cannot be arranged (no
 * key, no memory). */
ARENA__HIDDEN void *arena__thread_state_new(struct arena__thread_key *k, size_t size);

/* Every kind of per-thread state, whose keys a fork makes beforehand. */
ARENA__HIDDEN extern struct arena__thread_key arena__scratch_key; /* scratch.c */
ARENA__HIDDEN extern struct arena__thread_key arena__slot_key;    /* cache.c */

/* Frees a block of `size` bytes from arena__thread_state_new(). */
ARENA__HIDDEN void arena__thread_state_free(void *state, size_t size);

/* Registers a cache (`cache` 1) or shared arena (0) `obj` once: its record
 * goes to *slot, under `lock` (report.c).  False on out-of-memory. */
struct arena__node;
ARENA__HIDDEN bool arena__register_once(pthread_mutex_t *lock, struct arena__node **slot, int kind,
                                        void *obj);

/* A number no earlier call returned (from 1, process-wide, thread-safe): the
 * generation of a cache or a shared arena, which per-thread state compares
 * with its own to tell that what it holds is stale. */
ARENA__HIDDEN uint64_t arena__new_gen(void);

/* fork() safety (fork.c): registers, once, the handlers that take every
 * lock of the library before a fork and release them after it.  Every path
 * that may be the first to take a lock calls it first. */
ARENA__HIDDEN void arena__fork_ready(void);
/* Each part's locks, taken (`hold`) before a fork and released after it, in
 * fork.c's order: the caches' registry, the report's registry, the shared
 * arenas' locks, the caches' backing and own locks, the quarantine's lock
 * (with the first read of the sampling rate), the key maker. */
ARENA__HIDDEN void arena__cache_fork_registry(bool hold);
ARENA__HIDDEN void arena__report_fork(bool hold);
ARENA__HIDDEN void arena__shared_fork(bool hold);
ARENA__HIDDEN void arena__cache_fork_caches(bool hold);
ARENA__HIDDEN void arena__guard_fork(bool hold);
ARENA__HIDDEN void arena__thread_state_fork(bool hold);

#endif /* ARENA_THREAD_STATE_H */
