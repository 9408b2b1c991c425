/* SPDX-License-Identifier: MIT */
/*
 * libarena: the registry of named arenas, and the report of what they hold.
 *
 * Opt-in: an arena, cache or shared arena appears in the report once it is
 * registered, and leaves it when it is released (or destroyed, or
 * unregistered).  A program that registers nothing pays nothing.  The
 * arenas of a registered cache are registered under it as they are made;
 * everything else is at the top.
 *
 * When the figures are current.  An arena is used by one thread at a time,
 * so the report, which any thread may ask for at any time, never reads the
 * arena: it reads a copy of its counters that the arena's own thread
 * publishes (a few relaxed atomic stores: no figure tears), with the
 * figures arena_get_stats() gives at that moment, at these calls:
 *   - arena_get_stats() itself;
 *   - a refusal (by a limit or the backing allocator, told to
 *     arena_on_limit() or not), as it happens;
 *   - an allocation that the library places rather than the inline window
 *     (one that takes a chunk; one that reuses a freed block; every value
 *     in the checked and instrumented builds), a reset or rewind that is not
 *     inline, arena_reset_to(), arena_trim();
 *   - arena_set_limit(), arena_set_name(), arena_register().
 * The inline calls (a value that fits the current chunk, the inline reset
 * and rewind) and arena_free() publish nothing, so that a registered arena's
 * fast paths cost what an unregistered one's do.  An arena's entry shows,
 * hence, its figures as of its last publishing call: exactly what
 * arena_get_stats() gives when the arena made no other call since.  So a
 * report printed right after arena_get_stats() on each arena of interest
 * (on its thread) shows the same stored, retained, held, limit, peak held,
 * chunks, resets and refusals.  A cache's figures (held, limit, arenas,
 * out) and a shared arena's are read as the report is written, through
 * their thread-safe queries: current.  A pool shows what init fixed (see
 * arena_pool_register()).
 *
 * Registration allocates a small record from the C heap (not from the
 * arena's backing: it is not counted in `held` or any limit).  This header
 * includes only pool.h and thread.h (hence arena.h), and is usable from C++.
 */
#ifndef ARENA_REPORT_H
#define ARENA_REPORT_H

#include "arena/pool.h"
#include "arena/thread.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Registers `a` for the report (again: nothing).  It stays registered until
 *  arena_release() (or arena_unregister()).  False on out-of-memory (then
 *  not registered).  The arena's thread calls it, as every use of the
 *  arena; the registry itself is thread-safe. */
ARENA_API bool arena_register(arena *a);

/** Takes `a` out of the report (not registered: nothing).  The arena's
 *  thread calls it. */
ARENA_API void arena_unregister(arena *a);

/** Registers a cache, and every arena it makes from now on under it, until
 *  arena_cache_destroy().  False on out-of-memory.  Thread-safe. */
ARENA_API bool arena_cache_register(arena_cache *c);

/** Registers a shared arena until arena_shared_destroy().  False on
 *  out-of-memory.  Thread-safe. */
ARENA_API bool arena_shared_register(arena_shared *s);

/** Registers a pool (pool.h) until arena_pool_destroy() (again: nothing).
 *  Its inline calls publish nothing, so the report shows what init fixed
 *  (held, capacity, slot size) and its name, and "-" for the counts that
 *  change (arena_pool_get_stats() reads those, on the pool's thread).
 *  False on out-of-memory.  The pool's thread calls it. */
ARENA_API bool arena_pool_register(arena_pool *p);

/** arena_report()'s formats.  A name is the caller's bytes, any bytes: the
 *  JSON escapes quotes, backslashes and control characters and writes U+FFFD
 *  for each byte of no well-formed UTF-8 sequence, so that the report is
 *  always valid UTF-8 JSON (RFC 8259); the text shows each byte of a
 *  control character (C0, DEL, C1) or of no well-formed sequence as \\xNN, so
 *  that a name never breaks its line, and truncates a name to its column
 *  (28 characters, less the indent) before the first character that would
 *  cross it, never inside one. */
enum {
    ARENA_REPORT_TEXT = 0, /**< aligned columns, one line per entry, children indented */
    ARENA_REPORT_JSON = 1  /**< one JSON object: {"entries": [ ... ]}, children nested */
};

/**
 * Writes the report of every registered entry into `buf` (`len` bytes):
 * for each its kind, name, and counters (stored, retained, held, limit,
 * peak held, resets, limit hits; a cache's arenas and arenas out), as
 * `format` says.  Truncated to fit, always NUL-terminated when len > 0
 * (buf may be NULL when len is 0).  Returns the length of the whole report
 * (without the NUL), which may exceed len - 1: call again with a buffer of
 * that size plus one.  Thread-safe, while other threads allocate, register
 * and release.  O(entries).
 */
ARENA_API size_t arena_report(char *buf, size_t len, int format);

/** arena_report() to a `FILE *` (given as `void *`, so that this header need
 *  not include <stdio.h>).  0, or -1 when writing fails. */
ARENA_API int arena_report_file(void *stream, int format);

#ifdef __cplusplus
}
#endif

#endif /* ARENA_REPORT_H */
