/* SPDX-License-Identifier: MIT */
/*
 * libarena: request-scoped memory and threads.
 *
 *   - arena_cache:   a thread-safe store of reset arenas.  A request takes one
 *                    (arena_cache_acquire), uses it, and gives it back
 *                    (arena_cache_recycle), which resets it and keeps the
 *                    chunks its recent requests needed for the next one.
 *   - scratch:       per-thread scratch arenas that are never one of the
 *                    arenas the caller names as conflicts: arena_scratch_begin()
 *                    opens a scope (arena.h) of one, arena_scope_end() ends it.
 *   - arena_shared:  one arena that many threads allocate from at once; each
 *                    thread bumps through a private run of memory and takes a
 *                    lock only to claim the next run.
 *
 * The trim policy every arena has, arena_reset_to() and arena_trim(), is in
 * arena.h.
 *
 * The library uses POSIX threads (link with -pthread: the CMake target and
 * pkg-config do it).  This header includes only arena.h: the cache and the
 * shared arena are opaque, so no pthread or atomic type shows here, and it is
 * usable from C++.
 *
 * fork(): the library takes every lock it has (the caches', the shared
 * arenas', the registry's of report.h, the quarantine's of guard.h) before
 * a fork and releases them after it, in the parent and in the child
 * (pthread_atfork(), registered at the first call that takes a lock), so
 * the child of a process whose other threads use the library can use it
 * too: allocate, reset, acquire and recycle, use a shared arena, report.
 * What other threads held at the fork stays theirs in the child (an arena
 * they had acquired, or that waited in their stash, is freed by
 * arena_cache_destroy(); their runs of a shared arena go unused), and a
 * shared arena's or a cache's values are the parent's copy.  A fork from
 * inside a callback that the library makes under a lock (a cache's or
 * shared arena's backing allocator, a shared arena's limit callback) waits
 * for that lock for ever.  No fork() on Windows: nothing to do there.
 */
#ifndef ARENA_THREAD_H
#define ARENA_THREAD_H

#include "arena/arena.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Group limits ------------------------------------------------------------------ */

/**
 * A group limit (arena_budget, arena.h) of `limit` bytes (SIZE_MAX: none,
 * a counter only), named `name` (the caller's string, kept alive while the
 * budget is; NULL: none) for limit events and reports.  Arenas charge it
 * through arena_set_budget(), which joins an arena only when what it holds
 * fits.  NULL on out-of-memory.  Thread-safe: any number of arenas on any
 * threads charge one budget at once, and what they hold together never
 * exceeds its limit (a charge that would cross it fails whole; only
 * arena_budget_set_limit() below what is charged puts the budget over it).
 * Destroy it after every arena charging it is released or detached.
 */
ARENA__NODISCARD ARENA_API arena_budget *arena_budget_create(size_t limit, const char *name);

/** Frees a budget.  NULL does nothing. */
ARENA_API void arena_budget_destroy(arena_budget *b);

/** Changes the limit: charges already made stay (the budget may then be
 *  above it; later charges fail until it comes under).  Thread-safe. */
ARENA_API void arena_budget_set_limit(arena_budget *b, size_t limit);

/** The limit (SIZE_MAX: none).  Thread-safe. */
ARENA_API size_t arena_budget_limit(const arena_budget *b);

/** The bytes charged now: what the arenas charging it hold from their
 *  backing allocators.  Thread-safe (a moment old under concurrent use). */
ARENA_API size_t arena_budget_used(const arena_budget *b);

/** The name given at creation. */
ARENA_API const char *arena_budget_name(const arena_budget *b);

/** A backing allocator whose blocks are charged to a group limit: what a
 *  pool, a cache or anything else that takes an arena_allocator holds then
 *  counts against `budget` beside the arenas charging it.  The caller owns
 *  the struct; arena_budget_allocator() makes the allocator over it. */
typedef struct arena_budget_backing {
    arena_budget *budget;    /**< charged for every block */
    arena_allocator backing; /**< where the blocks come from (alloc NULL: malloc) */
} arena_budget_backing;

/** The allocator over `bb`: a block of n bytes is first charged to
 *  bb->budget (NULL, nothing taken, when the charge would cross its limit:
 *  exact at the byte, as for arenas), then taken from bb->backing (NULL, the
 *  charge refunded, when it fails); its free gives it back and refunds the
 *  n bytes.  `bb` must outlive everything the allocator backs.  Thread-safe
 *  when bb->backing is. */
ARENA_API arena_allocator arena_budget_allocator(arena_budget_backing *bb);

/* ---- Arena cache ------------------------------------------------------------ */

/** An opaque, thread-safe store of reset arenas. */
typedef struct arena_cache arena_cache;

/** How a cache is set up.  Zero fields take the defaults. */
typedef struct arena_cache_config {
    /** chunk size of each arena (0: ARENA_DEFAULT_CHUNK) */
    size_t chunk_bytes;
    /** arenas kept in the shared store (0: 64); beyond it a recycled arena is
     *  released */
    size_t max_arenas;
    /** a hard bound on the bytes of chunks a recycled arena keeps, as with
     *  arena_reset_to() (0 or SIZE_MAX: none, the arena keeps what its recent
     *  requests needed, see arena_reset(); below chunk_bytes: no chunk) */
    size_t max_retained;
    /** every arena's memory and the cache's own (NULL: malloc); copied.  The
     *  cache calls it one call at a time (under a lock of its own), so it need
     *  not be thread-safe unless other caches, arenas or pools use it too */
    const arena_allocator *backing;
} arena_cache_config;

/**
 * Creates a cache (`config` NULL: every default).  The cache and its arena
 * structs come from the backing allocator.  An arena struct, once made, is
 * kept until arena_cache_destroy() (an arena released beyond max_arenas keeps
 * its struct, without chunks, for a later acquire), so they number at most the
 * most arenas ever out at once (acquired, or waiting in threads' stashes), at
 * about the size of an arena struct each.  The caller owns the cache until
 * arena_cache_destroy().  NULL on out-of-memory or when the system refuses a
 * mutex.  Thread-safe.
 */
ARENA__NODISCARD ARENA_API arena_cache *arena_cache_create(const arena_cache_config *config);

/**
 * Frees every arena the cache made (cached, waiting in a thread's stash, and
 * also any still acquired: those become invalid) and the cache.  Requires that
 * no other thread uses the cache during the call (join the workers, or have
 * them stop using it, first); threads that used it may exit at any time.
 * NULL: nothing.
 */
ARENA_API void arena_cache_destroy(arena_cache *c);

/**
 * An empty arena for one request: the one this thread recycled last, when it
 * still waits in the thread's stash (no lock, no atomic operation), else one
 * from the shared store (a short lock), else a fresh one (its chunks come on
 * first use).  It holds the chunks its last recycle kept: once the requests
 * it serves repeat a shape, they make no backing-allocator call.  The caller
 * owns it until arena_cache_recycle(); it is an ordinary arena (not
 * thread-safe itself), which may be handed to another thread and recycled
 * there.  Do not arena_init*() it.
 * Its settings are the cache's, whatever an earlier request on it set: the
 * name, limit and limit callback that arena_cache_set_arena_name(),
 * arena_cache_set_arena_limit() and arena_cache_on_limit() give (default:
 * none), the cache's budget (arena_cache_set_limit()), no guard of its own
 * (arena_set_guard() off; the process's sampling applies as to any arena),
 * and registered under the cache exactly when the cache is
 * (arena_cache_register()).  What the request sets on it lasts until its
 * recycle.  Its counters (arena_get_stats()) run on from its earlier
 * requests: peaks and totals are the arena's, since the cache made it.
 * NULL on out-of-memory.  Thread-safe.
 */
ARENA__NODISCARD ARENA_API arena *arena_cache_acquire(arena_cache *c);

/**
 * Ends a request.  It resets `a` with arena_reset_to(a, max_retained): every
 * value in it expires, and its cleanups run and a guarded batch ends under
 * the settings the request gave it.  It gives the arena back the cache's
 * settings (see arena_cache_acquire()); an arena that keeps more than the
 * cache's arena limit frees every chunk.  It keeps the arena for a later
 * arena_cache_acquire(): in this thread's stash when the stash is empty,
 * else in the shared store while that holds fewer than max_arenas.
 * Otherwise the arena is released: its chunks are freed, and its struct is
 * kept (see arena_cache_create()).  Never fails.  Thread-safe.  Checked
 * build: the reset verifies the arena's values (see arena_reset()).
 *
 * What an arena keeps follows the requests it serves (arena_reset()'s
 * policy, under max_retained when set).  A huge request that recurs at least
 * once every ARENA_RECUR_BATCHES requests keeps its chunks, with no backing
 * call once warm.  A one-off one's go back within ARENA_RETAIN_BATCHES
 * smaller requests' recycles.  An arena waiting in the store keeps its
 * chunks until it serves again.  A thread's stash holds one arena of one
 * cache: recycling into another cache sends it back to its own cache's
 * store first.  A thread that exits returns the arena waiting in its stash
 * to the store.  So max_arenas bounds the store, and each thread holds at
 * most one more.
 *
 * `a` must come from arena_cache_acquire() of this cache.  Misuse is
 * reported, and then nothing happens: NULL (ARENA_ERR_NULL_FREE); an arena
 * already recycled, wherever the cache has put it since (stash, store, or
 * released: ARENA_ERR_DOUBLE_FREE); an arena from another cache, or `c` NULL
 * (ARENA_ERR_FOREIGN_POINTER).  Once a later acquire hands the arena out
 * again it is that request's, and a stale recycle of it cannot be told from
 * that request's own.  An arena that no cache made, or whose cache was
 * destroyed, is undefined.
 */
ARENA_API void arena_cache_recycle(arena_cache *c, arena *a);

/** Arenas in the shared store now (not counting those waiting in threads'
 *  stashes, nor the structs of released ones).  Thread-safe; a snapshot, for
 *  monitoring and tests. */
ARENA_API size_t arena_cache_count(arena_cache *c);

/** A snapshot of a cache (arena_cache_get_stats()). */
typedef struct arena_cache_stats {
    size_t arenas;      /**< arenas the cache holds (made, and not freed) */
    size_t out;         /**< of them, not in the shared store: acquired, or
                             waiting in a thread's stash for its next acquire */
    size_t stored;      /**< in the shared store (arena_cache_count()) */
    size_t held;        /**< bytes all its arenas hold from the backing now */
    size_t limit;       /**< arena_cache_set_limit() (SIZE_MAX: none) */
    size_t reserved[3]; /**< zero; room for later figures */
} arena_cache_stats;

/** A group limit over every arena of the cache: what they hold together
 *  from the backing allocator (chunks, bookkeeping) stays at or below
 *  `limit` bytes (SIZE_MAX: none, the default), under any number of
 *  threads; an allocation that would cross it fails as an arena's own
 *  limit does (arena_set_limit(), arena_on_limit() with
 *  ARENA_LIMIT_BUDGET), beside each arena's own limit.  The arenas charge
 *  the cache's budget (arena_set_budget() on one of them replaces it).
 *  Lowering it frees nothing.  Thread-safe. */
ARENA_API void arena_cache_set_limit(arena_cache *c, size_t limit);

/** Names the cache (the caller's string; NULL: none), for reports and the
 *  limit events of the cache's limit.  Set it before threads use the cache. */
ARENA_API void arena_cache_set_name(arena_cache *c, const char *name);

/** The name (arena_set_name()) of every arena the cache hands out: the
 *  caller's string, which must outlive the cache; NULL (the default): none.
 *  Set it before threads use the cache (it is read without a lock); arenas
 *  already made take it at their next recycle.  O(arenas). */
ARENA_API void arena_cache_set_arena_name(arena_cache *c, const char *name);

/** The limit (arena_set_limit()) of every arena the cache hands out, each
 *  on its own, beside the cache's limit over all of them
 *  (arena_cache_set_limit()); SIZE_MAX (the default): none.  A request may
 *  set its arena's limit otherwise until its recycle.  Set it before
 *  threads use the cache (it is read without a lock); arenas already made
 *  take it at their next recycle.  O(arenas). */
ARENA_API void arena_cache_set_arena_limit(arena_cache *c, size_t limit);

/** The limit callback (arena_on_limit()) of every arena the cache hands
 *  out, with `ctx` (fn NULL, the default: none): told of each refusal by
 *  the arena's own limit, by the cache's limit (ARENA_LIMIT_BUDGET) and by
 *  the backing allocator, in the thread that allocated, so it must be
 *  thread-safe when several threads serve requests.  Set it before threads
 *  use the cache (it is read without a lock); arenas already made take it at
 *  their next recycle.  O(arenas). */
ARENA_API void arena_cache_on_limit(arena_cache *c, arena_limit_fn *fn, void *ctx);

/** Fills `*out` with the cache's figures: counts under the cache's lock,
 *  `held` from the cache's budget.  Thread-safe; a moment old under
 *  concurrent use.  O(arenas). */
ARENA_API void arena_cache_get_stats(arena_cache *c, arena_cache_stats *out);

/* ---- Scratch arenas ------------------------------------------------------------ */

/** Scratch arenas per thread: arena_scratch_begin() fails when the caller
 *  names this many of them as conflicts. */
#define ARENA_SCRATCH_COUNT 2

/**
 * A scope of one of this thread's ARENA_SCRATCH_COUNT scratch arenas that is
 * none of the `n` arenas in `conflicts` (NULL entries and conflicts == NULL
 * are fine): allocate from s.arena, then arena_scope_end(&s) forgets what was
 * stored and frees the arena's spare chunks beyond 1 MiB.  Pass as conflicts
 * every arena that the caller wants results in, so that a function can use
 * scratch memory while its result goes to its caller's scratch arena;
 * nesting is fine as long as the scopes end in reverse order (one ended
 * after an enclosing one of the same arena is reported, ARENA_ERR_BAD_MARK,
 * and then nothing happens: no rewind, no trim).
 *
 * Scratch arenas belong to the calling thread, have ARENA_DEFAULT_CHUNK
 * chunks from malloc, and are freed when the thread exits (or by
 * arena_scratch_release_thread()).  Do not hand them to another thread, reset,
 * release or trim them, and end their scopes in the thread that began them.
 * Fails, with s.arena NULL (arena_scope_end() of it does nothing), when every
 * scratch arena is a conflict, or on out-of-memory registering the thread's
 * clean-up.
 */
ARENA__NODISCARD ARENA_API arena_scope arena_scratch_begin(arena *const *conflicts, size_t n);

/** Frees this thread's scratch arenas now (the main thread, which need not
 *  run thread-exit clean-up, or a thread that is done with scratch memory).
 *  No scratch scope of this thread may be open.  They come back on next use. */
ARENA_API void arena_scratch_release_thread(void);

#if ARENA_HAVE_SCOPE
/**
 * ARENA_SCRATCH_SCOPE(s, conflicts, n);  declares `arena_scope s` from
 * arena_scratch_begin(conflicts, n), ended by arena_scope_end() when the
 * enclosing block is left (as ARENA_SCOPE).  Check s.arena for NULL.  gcc and
 * clang only.
 */
#  define ARENA_SCRATCH_SCOPE(s, conflicts, n)                                                     \
    arena_scope s __attribute__((cleanup(arena_scope_end))) = arena_scratch_begin((conflicts), (n))
#endif

/* ---- Shared arena ---------------------------------------------------------------- */

/** An opaque arena that many threads allocate from at once. */
typedef struct arena_shared arena_shared;

/**
 * Creates a shared arena whose chunks hold `chunk_bytes` each (0: 1 MiB;
 * clamped to ARENA_REF_MAX), from `backing` (NULL: malloc).  It allocates no
 * chunk yet.  NULL on out-of-memory.  The caller owns it until
 * arena_shared_destroy().  Thread-safe.
 *
 * Each allocating thread claims a private run from the current chunk under a
 * short lock, then bumps through it with no atomic operation.  Runs are sized
 * to what the thread stores.  The first is `run_bytes` (0: 16 KiB; at most
 * chunk_bytes, at least 1 KiB).  Each further claim in a batch doubles what
 * the thread has claimed in it.  The first claim of a batch covers what the
 * thread stored in its previous batch.  No run exceeds a quarter of a chunk,
 * or run_bytes if that is larger.  So a thread that stores about as much in
 * every batch takes the lock about once a batch.  A run's tail that does not
 * fit the next value is left unused, as is the rest of the last run of a
 * batch.  A thread keeps its runs in a table of four entries, one per shared
 * arena by creation order modulo four.  A thread that alternates between two
 * shared arenas created four apart gives up a run tail at each switch, which
 * is correct but wasteful.
 */
ARENA__NODISCARD ARENA_API arena_shared *arena_shared_create(size_t chunk_bytes, size_t run_bytes,
                                                             const arena_allocator *backing);

/** Runs its cleanups (arena_shared_cleanup_push()), then frees every chunk
 *  and the shared arena.  No thread may allocate from it during or after
 *  the call.  NULL: nothing. */
ARENA_API void arena_shared_destroy(arena_shared *s);

/**
 * `size` uninitialised bytes, ARENA_ALIGN-aligned, valid until the next
 * arena_shared_reset() or arena_shared_destroy().  Thread-safe: any number of
 * threads at once.  A value that does not fit the thread's run and is larger
 * than a quarter of `run_bytes` is placed under the lock, not in a new run.
 * Size 0 returns a non-NULL pointer not to be dereferenced, aligned as
 * arena_alloc()'s for size 0 (arena_shared_alloc_aligned(): as
 * arena_alloc_aligned()'s).  NULL on out-of-memory or overflow, with the
 * arena as it was (the thread's run too).
 * The values of one run are packed without redzones between them; under
 * AddressSanitizer the rest of the run stays poisoned, and values placed
 * under the lock get arena_alloc()'s redzones.
 */
ARENA__NODISCARD ARENA__MALLOC ARENA__ALLOC_SIZE(2) ARENA_API
    void *arena_shared_alloc(arena_shared *s, size_t size);

/** arena_shared_alloc() at `align`, a power of two (0: ARENA_ALIGN); any
 *  other alignment returns NULL.  Thread-safe. */
ARENA__NODISCARD ARENA__MALLOC ARENA__ALLOC_SIZE(2) ARENA_API
    void *arena_shared_alloc_aligned(arena_shared *s, size_t size, size_t align);

/** `count * size` zeroed bytes, ARENA_ALIGN-aligned; NULL when the product
 *  overflows or on out-of-memory.  Thread-safe. */
ARENA__NODISCARD ARENA__MALLOC ARENA_API void *arena_shared_calloc(arena_shared *s, size_t count,
                                                                   size_t size);

/**
 * Runs the cleanups of the batch (arena_shared_cleanup_push()), then
 * forgets every value and keeps chunks for the next batch as arena_reset_to()
 * does (SIZE_MAX: what the retention policy of arena_reset() keeps; 0: none).
 * Every thread's run is abandoned.  Requires that no thread allocates from
 * `s` during the call, and that the threads that allocate afterwards are
 * ordered after it (join them, or use a barrier or a mutex, between the
 * batch and the reset).  Never fails.
 */
ARENA_API void arena_shared_reset(arena_shared *s, size_t retain_limit);

/** Capacity of the chunks held, in bytes.  Thread-safe (a snapshot). */
ARENA_API size_t arena_shared_retained(arena_shared *s);

/** arena_set_limit() on the shared arena (the arena its threads' runs come
 *  from): what it holds stays at or below `limit` bytes.  A thread whose run
 *  cannot be refilled under the limit gets NULL.  Thread-safe. */
ARENA_API void arena_shared_set_limit(arena_shared *s, size_t limit);

/** Names the shared arena (the caller's string; NULL: none).  Thread-safe. */
ARENA_API void arena_shared_set_name(arena_shared *s, const char *name);

/** arena_get_stats() of the shared arena, under its lock: `stored` counts
 *  the runs threads claimed (values and the unused rest of each run).
 *  Thread-safe; a moment old under concurrent use. */
ARENA_API void arena_shared_get_stats(arena_shared *s, arena_stats *out);
/**
 * arena_cleanup_push() on the shared arena: `fn(ctx)` runs exactly once, at
 * the next arena_shared_reset() or at arena_shared_destroy(), last pushed
 * first, before the batch's memory is given back or reused, in the thread
 * that resets (and outside the arena's lock: a cleanup may allocate from
 * other arenas, or from `s`, whose values die with the batch being ended).
 * Thread-safe: any number of threads at once (a short lock; the record is
 * stored under it, not in the thread's run).  NULL on out-of-memory, with
 * nothing registered.  Misuse as arena_cleanup_push() (ARENA_ERR_CLEANUP:
 * fn NULL, or a push from one of `s`'s cleanups), then NULL.
 */
ARENA_API arena_cleanup *arena_shared_cleanup_push(arena_shared *s, arena_cleanup_fn *fn,
                                                   void *ctx);

/** arena_cleanup_cancel() on the shared arena: `c` (a handle from
 *  arena_shared_cleanup_push() on `s` in this batch, or NULL) will not run.
 *  Thread-safe.  Misuse as arena_cleanup_cancel(). */
ARENA_API void arena_shared_cleanup_cancel(arena_shared *s, arena_cleanup *c);

#ifdef __cplusplus
}
#endif

#endif /* ARENA_THREAD_H */
