/* SPDX-License-Identifier: MIT */
/*
 * Per-thread state freed at thread exit, and generation numbers
 * (thread_state.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <string.h>

#include "thread_state.h"

/* Serialises the making of keys: once per kind, at a thread's first block,
 * so never on a hot path. */
static pthread_mutex_t making = PTHREAD_MUTEX_INITIALIZER;

/* Makes `k`'s key where it was not tried yet; `making` held. */
static void make_key(struct arena__thread_key *k)
{
    if (!k->made) {
        k->ok = pthread_key_create(&k->key, k->exit) == 0;
        k->made = true;
    }
}

void *arena__thread_state_new(struct arena__thread_key *k, size_t size)
{
    void *state;
    bool ok;

    arena__fork_ready();
    pthread_mutex_lock(&making);
    make_key(k);
    ok = k->ok;
    pthread_mutex_unlock(&making);
    if (!ok)
        return NULL;
    state = arena__back_alloc(ARENA__HEAP, size);
    if (!state)
        return NULL;
    memset(state, 0, size);
    if (pthread_setspecific(k->key, state) != 0) {
        arena__back_free(ARENA__HEAP, state, size);
        return NULL;
    }
    return state;
}

/* Before a fork, every kind's key is made, so that the child never makes
 * one: where the C library guards its keys with a lock that a thread's
 * exit holds while it runs the keys' destructors (musl: a read lock), a
 * fork at that moment leaves the lock held in the child for ever, and a
 * pthread_key_create() there waits for it (the child's first scratch
 * arena hung in a run of test_thread_fork's hammer_every_lock now and
 * then: 6 of some 200 runs of its 100 forks, on a busy machine). */
void arena__thread_state_fork(bool hold)
{
    if (hold) {
        pthread_mutex_lock(&making);
        make_key(&arena__scratch_key);
        make_key(&arena__slot_key);
    } else {
        pthread_mutex_unlock(&making);
    }
}

void arena__thread_state_free(void *state, size_t size)
{
    arena__back_free(ARENA__HEAP, state, size);
}

static _Atomic uint64_t next_gen = 1;

uint64_t arena__new_gen(void)
{
    return atomic_fetch_add_explicit(&next_gen, 1, memory_order_relaxed);
}
