/* SPDX-License-Identifier: MIT */
/*
 * fork() while other threads use the library.  The child of a
 * multithreaded process has one thread, the one that forked: a lock another
 * thread held at the fork stays held in the child for ever, and the
 * structure it guarded may be half written.  So the library takes every
 * lock it has before the fork (pthread_atfork()'s prepare handler) and
 * releases them after it, in the parent and in the child: the child finds
 * every lock free and every structure whole.  Other threads' per-thread
 * state (a cache's slot, a shared arena's runs) is simply never used again
 * in the child; what they had acquired stays theirs.
 *
 * The order is the library's own nesting, outermost first, so that the
 * prepare handler waits for a thread that holds a lock rather than
 * deadlocking with it:
 *
 *   1. the caches' registry, which a thread's slot eviction holds while it
 *      releases an arena, and so while it takes the report's registry and a
 *      cache's backing lock;
 *   2. the report's registry, held while it reads caches and shared arenas;
 *   3. the shared arenas' locks, held while their inner arena calls its
 *      backing, which may be a cache's arena;
 *   4. the caches' backing locks, newest cache first, since a cache's
 *      backing may allocate from an arena of an older one;
 *   5. the caches' own locks, which nothing is taken under;
 *   6. the quarantine's lock;
 *   7. the maker of per-thread keys;
 *   8. the moment the sampling rate is first read.
 *
 * The handlers are registered once, by the first call that may take a lock
 * (arena__fork_ready(), through pthread_once(): no constructor, so a program
 * that uses the library from its own constructors is covered too).  A fork
 * from inside a callback that the library makes while it holds a lock (a
 * cache's backing allocator, a shared arena's backing or limit callback)
 * would wait for that lock for ever, as any such fork would.  Windows has
 * no fork(): nothing to do there.
 */
#include "thread_state.h"

#if defined(_WIN32)

void arena__fork_ready(void) {}

#else

static void fork_prepare(void)
{
    arena__cache_fork_registry(true);
    arena__report_fork(true);
    arena__shared_fork(true);
    arena__cache_fork_caches(true);
    arena__guard_fork(true);
    arena__thread_state_fork(true);
}

/* In the parent and in the child alike. */
static void fork_after(void)
{
    arena__thread_state_fork(false);
    arena__guard_fork(false);
    arena__cache_fork_caches(false);
    arena__shared_fork(false);
    arena__report_fork(false);
    arena__cache_fork_registry(false);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* Out of memory for the handlers: nothing to do but go on without them. */
static void fork_install(void) { (void)pthread_atfork(fork_prepare, fork_after, fork_after); }

void arena__fork_ready(void) { (void)pthread_once(&fork_once, fork_install); }

#endif
