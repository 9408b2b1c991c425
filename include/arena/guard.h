/* SPDX-License-Identifier: MIT */
/*
 * libarena: guarded batches, a debugging mode for stale pointers.
 *
 * In a guarded batch the arena's chunks come from page-granular mappings,
 * each followed by an inaccessible guard page, instead of from its backing
 * allocator.  When the batch ends (arena_reset(), arena_reset_to(),
 * arena_release(), a rewind past the values, arena_cache_recycle(), the end
 * of a scratch scope, arena_shared_reset()) its pages become inaccessible at
 * once and join a process-wide quarantine: any read or write through a
 * pointer, a ref or a hook block of that batch faults, and the address range
 * is not mapped again while it is in the quarantine (a bound in bytes of
 * address space, arena_guard_set_quarantine(); the oldest range leaves
 * first).  Quarantined pages cost address space, not memory: they are
 * decommitted.  A value's address, alignment and ref are what they would be
 * in an unguarded batch; only what happens after the batch ends differs:
 * a guarded batch's chunks are not kept for the next batch, and a rewind (or
 * scope end) in a guarded batch retires the whole pages past the mark, so
 * the next value does not come at the mark's address when they held it (the
 * rest of the page the mark's position lies in stays accessible, and cannot
 * fault).  A stale ref resolves through the arena's chunk index: it faults
 * while its entry there still names the retired chunk (until the arena takes
 * another chunk into that entry).
 *
 * Two ways in: an arena guards every batch (arena_set_guard()), or the
 * process samples batches of every arena backed by the C heap: one in N
 * (arena_guard_sample(), or the environment variable ARENA_GUARD: 1 guards
 * every batch, 1000 about one in a thousand), or at most one per interval
 * of time (arena_guard_sample_interval(), or ARENA_GUARD=1s), whose cost
 * stays bounded at any batch rate.  Off by default, and off costs nothing:
 * the inline paths are the same code, and a sampled arena's resets stay
 * inline between sampled batches.  arena_guard_report_faults() installs
 * a fault handler that names the arena, the ending and how many batches ago
 * a faulting address expired, then lets the fault kill the process as it
 * would have.
 *
 * Available where the C library maps pages (mmap and mprotect on POSIX
 * systems, VirtualAlloc and VirtualProtect on Windows); elsewhere
 * arena_guard_available() is false and arenas work as usual.  An arena that
 * stores into a caller's buffer (arena_init_buffer()) is never guarded: that
 * memory is the caller's, and cannot be protected.
 */
#ifndef ARENA_GUARD_H
#define ARENA_GUARD_H

#include "arena/arena.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The quarantine's default bound: 32 MiB of address space. */
#define ARENA_GUARD_QUARANTINE ((size_t)32 << 20)

/** True when this platform maps pages the mode needs (see above).
 *  Thread-safe. */
ARENA_API bool arena_guard_available(void);

/**
 * Guards every batch of `a` (`on`), or stops doing so.  On: from the batch
 * that begins at its next reset, or at once if it has no chunk in use (a
 * fresh, released or rewound-to-nothing arena).  Off: the batch in progress
 * stays guarded until it ends.  False, with nothing changed, when `on` is
 * asked where the mode is unavailable or of an arena that stores into a
 * caller's buffer.  Any backing allocator: the arena's limit and budget
 * count the pages it maps (arena_get_stats() counts them in `held`, not in
 * `backing_calls`).  Not thread-safe: the arena's own thread calls it.
 */
ARENA_API bool arena_set_guard(arena *a, bool on);

/** True when the batch in progress of `a` is guarded (a fresh arena's first
 *  batch is decided when it stores its first value). */
ARENA_API bool arena_guarded(const arena *a);

/**
 * Samples batches process-wide: 0 off, 1 every batch, N about one batch in
 * N, of every arena whose backing is the C heap (not an arena with a
 * backing allocator of its own: that memory is its provider's, unless
 * arena_set_guard() asks), each batch drawn with probability 1/N.  The
 * default is the environment variable ARENA_GUARD, read once, at the
 * library's first use of this setting: decimal digits, up to ULONG_MAX (or
 * an interval: arena_guard_sample_interval()); anything else (empty, a sign,
 * blanks, a fraction, other characters, a larger number) is 0.  Replaces
 * sampling by time.  An arena follows a change at its next call into the
 * library.  Thread-safe.
 */
ARENA_API void arena_guard_sample(unsigned long every);

/** The sampling in force (see arena_guard_sample()); 0 also while the
 *  process samples by time.  Thread-safe. */
ARENA_API unsigned long arena_guard_sampling(void);

/** The interval that sampling by time is meant to run at: 1 s, in
 *  nanoseconds.  A guarded batch costs some 15 microseconds when it is short
 *  (two mappings, a protection, an unmapping, a fault per fresh page), but
 *  milliseconds when it holds megabytes (every page faulted in fresh, and
 *  the next batch takes fresh chunks too): at 1 s either stays under 1% of
 *  one core, so that the mode can stay on in production, while a process
 *  that runs for an hour still guards some 3,600 batches. */
#define ARENA_GUARD_INTERVAL ((uint64_t)1000000000)

/**
 * Samples batches process-wide by time: at most one guarded batch per `ns`
 * nanoseconds in the whole process (of all threads' arenas together), of
 * every arena whose backing is the C heap (as arena_guard_sample()); 0 off.
 * Replaces sampling by count (arena_guard_sampling() is then 0), as
 * arena_guard_sample() replaces this.  The process's first batch sampled so
 * is guarded at once; each next one is the first that an arena decides once
 * the interval (the one in force then) has passed since the last.
 * An arena decides without reading the clock: a countdown, armed from the
 * rate at which it ran its batches, says when it next looks (about eight
 * times an interval), so its inline resets stay inline in between; an
 * arena whose batches suddenly run far slower than before looks late (it
 * guards later, never sooner).  The environment variable ARENA_GUARD sets
 * it too: decimal digits followed by one unit, `ns`, `us`, `ms` or `s`
 * (`100ms`, `2s`), up to UINT64_MAX nanoseconds; other forms are 0 (see
 * arena_guard_sample()).  A forked child keeps the setting and the time of
 * the process's last guarded batch.  An arena follows a change at its next
 * call into the library.  Thread-safe.
 */
ARENA_API void arena_guard_sample_interval(uint64_t ns);

/** The interval in force, in nanoseconds (arena_guard_sample_interval());
 *  0 while the process samples by count or not at all.  Thread-safe. */
ARENA_API uint64_t arena_guard_sampling_interval(void);

/** Bounds the quarantine to `bytes` of address space (0: none is kept; a
 *  range then is unmapped as its batch ends, and its addresses may be
 *  handed out again).  Ranges beyond the bound leave it at once, the
 *  oldest first.  Default ARENA_GUARD_QUARANTINE.  Thread-safe. */
ARENA_API void arena_guard_set_quarantine(size_t bytes);

/**
 * Installs the fault reporter (again: nothing): a handler of SIGSEGV and
 * SIGBUS (on Windows, a vectored exception handler of access violations)
 * that recognises an address in the quarantine and writes to stderr which
 * arena it belonged to (arena_set_name()'s name, copied when the batch
 * ended), which call ended its batch, and how many of that arena's batches
 * ended since.  It says no more than it knows: where an earlier guarded
 * batch whose range has left the quarantine held (or, once more ranges
 * left than it keeps track of, may have held) the address too, the report
 * names the quarantined batch as the last to hold it and says the pointer
 * may be from either; an address of a range that left the quarantine and
 * was not mapped again is reported as memory a guarded batch held, with no
 * arena or ending.  Memory the heap held before a guarded batch mapped it is
 * beyond what it sees.  Then it restores the previous handler and returns,
 * so that the fault happens again under it (the default: the process dies,
 * with a core dump where they are enabled).  A fault elsewhere goes to the
 * previous handler untouched.  False when the mode is unavailable or the
 * handler could not be installed.  Thread-safe.
 */
ARENA_API bool arena_guard_report_faults(void);

/** The process's counters of the mode (arena_guard_get_stats()). */
typedef struct arena_guard_stats {
    unsigned long long batches;      /**< guarded batches begun */
    unsigned long long ranges;       /**< address ranges quarantined, in all */
    unsigned long long evicted;      /**< ranges that left the quarantine (unmapped) */
    unsigned long long map_failures; /**< page mappings the system refused */
    unsigned long long detections;   /**< faults the reporter wrote a report of */
    size_t quarantined;              /**< bytes of address space in the quarantine now */
    size_t quarantined_ranges;       /**< ranges in it now */
    size_t mapped;                   /**< bytes of guarded chunks mapped now, guard pages
                                          included (not the quarantine's) */
} arena_guard_stats;

/** Fills `*out` with a snapshot of the counters.  Thread-safe (a moment old
 *  under concurrent use). */
ARENA_API void arena_guard_get_stats(arena_guard_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* ARENA_GUARD_H */
