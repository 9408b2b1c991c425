/* SPDX-License-Identifier: MIT */
/*
 * libarena: memory whose lifetime is one batch.
 *
 * An arena hands out values by bumping a pointer through large chunks, and
 * drops them all at once: arena_reset() rewinds the whole batch and keeps the
 * chunks for the next one, arena_rewind() forgets everything stored after a
 * mark, arena_release() frees everything.
 *
 * The contract every function on an arena shares, unless its comment says
 * otherwise:
 *   - Thread-safety: an arena is NOT thread-safe.  One thread at a time may
 *     use a given arena (several threads may use several arenas); inline
 *     queries (arena_size(), arena_ref_ptr()) count as uses.
 *   - Ownership: the arena owns every value stored in it.  A value expires at
 *     the reset, release or rewind that covers it; every pointer and ref into
 *     it is dead from then on.  The caller owns the arena struct: do not copy
 *     it after its first use (it may point into itself); pass `arena *`.
 *   - Marks are a stack: a mark is valid until a reset, a release, or a
 *     rewind to a mark taken before it (rewinding to a mark leaves that mark
 *     valid).
 *   - Failure: out-of-memory is not an error: NULL (or the empty ref), and
 *     the arena exactly as it was, every byte of it but the two counters
 *     of arena_get_stats() that count the failure (`limit_hits`, and
 *     `backing_calls` for the calls it made).  Misuse (see arena_error) goes
 *     to the process-wide error handler, whose default prints and aborts; if
 *     a handler returns, the faulty call does nothing.
 *   - Checked build (ARENA_CHECKED=1): every value gets a header and a
 *     redzone (bytes after it that no value uses); expired memory is filled
 *     with 0xDD; redzones, headers and arena_check() are verified at every
 *     reset and rewind (ARENA_ERR_CORRUPT); stale refs are reported.  Under
 *     AddressSanitizer or Valgrind the redzones and the expired memory are
 *     poisoned instead.
 *
 * This file is the contract; docs/internals.md says how the arena keeps it.
 * The structs' private fields are laid out in arena/internal/types.h, which
 * it includes first; the inline functions declared here are defined in
 * arena/internal/arena.h, which it includes at its end.  Nothing named
 * arena__ or ARENA__ is API.  This header includes only <stdarg.h>,
 * <stddef.h>, <stdint.h>, <stdbool.h> and <string.h>, and is usable from C++.
 */
#ifndef ARENA_ARENA_H
#define ARENA_ARENA_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arena/version.h"
#include "arena/internal/compiler.h"
#include "arena/internal/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Constants -------------------------------------------------------------------- */

/** Default chunk size, in bytes of capacity. */
#define ARENA_DEFAULT_CHUNK 65536

/** The reach of a reset's memory, in batches: a spike is given back within
 *  this many batches (see arena_reset()). */
#define ARENA_RETAIN_BATCHES 256

/** A batch shape that recurs at least once every this many batches keeps its
 *  chunks (see arena_reset()). */
#define ARENA_RECUR_BATCHES 64

/** Alignment of arena_alloc(), of chunks and of what a backing allocator
 *  returns: alignof(max_align_t). */
#define ARENA_ALIGN ((size_t)ARENA__MAX_ALIGN)

/** The largest value a ref can describe, in bytes (also the largest chunk size). */
#define ARENA_REF_MAX ((size_t)INT32_MAX)

/* ---- The arena -------------------------------------------------------------------- */

/** Where all of an arena's (or pool's, or cache's) memory comes from.  The
 *  library calls it from calls on what it backs, so it needs to be
 *  thread-safe only when it backs things that several threads use at once.
 *  The library copies the struct; `ctx` must outlive what it backs. */
typedef struct arena_allocator {
    /** `size` bytes, ARENA_ALIGN-aligned; NULL on failure */
    void *(*alloc)(void *ctx, size_t size);
    /** gives back a block alloc returned, with the size asked of it */
    void (*free)(void *ctx, void *ptr, size_t size);
    /** passed to both */
    void *ctx;
} arena_allocator;

/**
 * The arena: a value the caller owns (on the stack, in a struct, static),
 * initialised by arena_init() or its variants or by `arena a = {0};` (an
 * empty arena with 64 KiB chunks and malloc backing).  Its fields are
 * private: the inline functions read them, a program does not (the queries
 * below report what it needs); arena/internal/types.h describes them.  Its
 * size and layout are ABI; what the library keeps in them may change.
 */
typedef struct arena arena;

/**
 * Initialises an empty arena whose chunk size is `chunk_bytes` (0:
 * ARENA_DEFAULT_CHUNK; above ARENA_REF_MAX: clamped): the capacity of each
 * regular chunk, the ones values are packed into.  A value that does not fit
 * an empty regular chunk gets a chunk of its own, of its size.  The chunk
 * size is not a limit, and need not be sized to the largest value: every chunk,
 * oversized ones included, is kept for the batches that follow (see
 * arena_reset()).  It sets how much memory the arena takes at a time, with
 * one exception: on Linux, where the kernel offers transparent huge pages, a
 * batch that holds 2 MiB in chunks takes its next regular chunks of 2 MiB,
 * aligned and advised for huge pages (not where the environment says
 * ARENA_HUGE_PAGES=0).  Allocates nothing; memory comes from the C library's
 * heap.  Requires an
 * arena that holds no chunks (arena_release() it first).  Never fails.
 */
ARENA_API void arena_init(arena *a, size_t chunk_bytes);

/** arena_init() with every chunk and all bookkeeping from `backing` (the
 *  struct is copied; its ctx must outlive the arena; NULL: malloc).  Never
 *  fails. */
ARENA_API void arena_init_with(arena *a, size_t chunk_bytes, const arena_allocator *backing);

/**
 * Initialises an arena whose first chunk is the caller's `buf` of `len` bytes
 * (any alignment: the start is rounded up to ARENA_ALIGN).  The arena never
 * frees `buf`, and reset and release keep it as the first chunk.  `buf` must
 * outlive the arena.  `backing == NULL`: fixed-size; an allocation that does
 * not fit returns NULL, and nothing is ever allocated from the heap.
 * Otherwise further chunks come from `backing`, with the chunk size
 * ARENA_DEFAULT_CHUNK, and are kept or given back as arena_reset() says.
 * Never fails.  Inline for a fixed-size arena where nothing is instrumented
 * (a few stores), so a scope on the stack (init, values, arena_release())
 * costs no call.
 */
static inline void arena_init_buffer(arena *a, void *buf, size_t len,
                                     const arena_allocator *backing);

/** Frees every chunk the arena allocated and its bookkeeping; the arena is
 *  empty and reusable, with the same chunk size, backing (and buffer).  This
 *  is the destructor.  Expires every value.  Inline for an arena that holds
 *  nothing but the caller's buffer (a scope on the stack: a few stores, or
 *  one load after the inline arena_init_buffer()). */
static inline void arena_release(arena *a);

/* ---- Storing values --------------------------------------------------------------- */

/**
 * `size` uninitialised bytes, ARENA_ALIGN-aligned, owned by the arena until
 * the reset, release or rewind that covers them.  Size 0 stores nothing and
 * returns a non-NULL, ARENA_ALIGN-aligned pointer that must not be
 * dereferenced (the address of an object of the library, the same for every
 * arena and no value's).  NULL on out-of-memory or when a size computation
 * would overflow, with the arena unchanged.  Inline: one compare sends size 0,
 * wrapped sizes and a full chunk to the slow path, and no counter is written
 * (docs/fast-path.md).
 * Checked build, ASan, Valgrind: a redzone follows the value, so a write past
 * its end is reported.
 */
ARENA__NODISCARD ARENA__MALLOC ARENA__ALLOC_SIZE(2) static inline void *arena_alloc(arena *a,
                                                                                    size_t size);

/** arena_alloc() at alignment `align`: a power of two (0: ARENA_ALIGN); any
 *  other value returns NULL and stores nothing.  Alignments above ARENA_ALIGN
 *  are supported (up to any power of two the backing allocator's chunks can
 *  be padded to).  Size 0, at any power of two: a non-NULL pointer at that
 *  alignment, not to be dereferenced: up to 4096 arena_alloc()'s for size 0,
 *  above it the address whose value is `align` (no object's: no object is
 *  aligned to every power of two). */
ARENA__NODISCARD ARENA__MALLOC ARENA__ALLOC_SIZE(2) static inline void *arena_alloc_aligned(
    arena *a, size_t size, size_t align);

/** `count * size` zeroed bytes, ARENA_ALIGN-aligned, owned by the arena.
 *  NULL (arena unchanged) when the product overflows or memory runs out. */
ARENA__NODISCARD ARENA__MALLOC static inline void *arena_calloc(arena *a, size_t count,
                                                                size_t size);

/** Copies `size` bytes of `src` into the arena at alignment `align` (a power
 *  of two, 0: ARENA_ALIGN).  Size 0 stores nothing (non-NULL result at
 *  `align`, as arena_alloc_aligned()'s).  NULL on out-of-memory or an
 *  invalid alignment, arena unchanged.  No size limit (unlike refs).  `src`
 *  must not overlap the arena's unused room. */
ARENA__NODISCARD
static inline void *arena_copy(arena *a, const void *src, size_t size, size_t align);

/** Copies `len` bytes of `s` (NULs included) and adds a NUL: a packed,
 *  alignment-1 string of len + 1 bytes, owned by the arena.  NULL on
 *  out-of-memory, arena unchanged. */
ARENA__NODISCARD
static inline char *arena_strndup(arena *a, const char *s, size_t len);

/** arena_strndup(a, s, strlen(s)). */
ARENA__NODISCARD
static inline char *arena_strdup(arena *a, const char *s);

/**
 * C's realloc, told the old size: resizes the value `ptr` of `old_size`
 * bytes to `new_size` bytes, keeping its first min(old_size, new_size) bytes.
 *   - Grow: in place (returns `ptr`) when ptr is the most recent value of
 *     the current chunk and the chunk has room.  Otherwise a new
 *     ARENA_ALIGN-aligned value of new_size bytes, placed as
 *     arena_alloc_reuse() places one, gets a copy of the old size's bytes
 *     and is returned.  The old value is given back as arena_free() gives
 *     it (as C's realloc frees it): `ptr` is dead.
 *   - Shrink (new_size <= old_size): returns `ptr`, which never moves.  The
 *     tail goes back to the arena when ptr is the most recent value or the
 *     arena knows the block that holds it (see arena_free()); otherwise it
 *     stays with the batch.  Size 0 is the shrink to nothing: `ptr` is
 *     returned (arena_free() drops it).
 *   - ptr NULL: arena_alloc(a, new_size) (size 0: a non-NULL pointer that
 *     must not be dereferenced).
 * Values stored with an alignment above ARENA_ALIGN must not be grown.
 * Failure (out of memory, or new_size beyond what can be allocated): NULL,
 * with the arena and the old value unchanged, as C's realloc.
 *
 * Requires: `ptr` is NULL or a live value of this arena, and `old_size` is
 * at most the size it was stored or last resized with.  A shrink gives the
 * tail back: its bytes are no longer the value's.  A string's size counts
 * its NUL.  A larger old_size would copy bytes past the value.  Every build
 * reports an old_size that reaches past the position of the current chunk
 * when ptr lies in it (ARENA_ERR_BAD_SIZE).  A checked build keeps each
 * value's size: it also reports any old_size above it (ARENA_ERR_BAD_SIZE),
 * and a ptr that is not the start of a live value
 * (ARENA_ERR_FOREIGN_POINTER).  After a report, NULL, and the arena is
 * unchanged.
 */
ARENA__NODISCARD
ARENA_API void *arena_realloc(arena *a, void *ptr, size_t old_size, size_t new_size);

/**
 * Gives the value `ptr` of `size` bytes back before its batch ends.
 * arena_size() drops by `size`.  Never fails.  One rule holds for every call
 * told a size (this one, arena_realloc(), the adapters of hooks.h): a value
 * holds the bytes it was asked for, whichever call stored it, and any of
 * those calls may give it back or resize it.
 *   - The most recent value of the current chunk goes back to the position:
 *     the next allocation of any kind reuses its bytes.
 *   - Any other value becomes a free block.  The reusing allocations (the
 *     adapters, arena_alloc_reuse(), a moving arena_realloc()) take free
 *     blocks before they bump; arena_alloc() never looks at them.
 *   - A value that a reusing allocation placed gives back the whole block
 *     that holds it, its padding included.  So what the arena holds follows
 *     what is live, under any pattern of frees.
 *   - Any other value gives back its own bytes only: a value stored at a
 *     lesser alignment (a string) may follow its last byte.
 *   - A reset or a rewind forgets the free blocks, in O(1).  After a rewind,
 *     a block freed before its mark waits for the next reset.
 *   - A fixed-size arena (a caller's buffer without backing) reuses only its
 *     most recent value.  So do blocks too small for a free block's node (16
 *     bytes, 48 in the checked build).
 * A freed value is poisoned until it is handed out again: no-access to ASan
 * and Valgrind, clobbered in the checked build.
 *
 * Requires: `ptr` NULL (nothing happens) or a live value of this arena's
 * current batch, and `size` its size (a string's counts its NUL; 0: nothing
 * happens).  A late free, after the reset, rewind or release that ended the
 * value's batch, is reported in every build (ARENA_ERR_LATE_FREE) when the
 * value lies beyond what the batch has stored since: past the position of
 * the current chunk, or in a spare chunk.  That is the common case, a
 * container destroyed just after the reset.  Where the new batch has stored
 * over the value already, no build can tell it from a value of the new
 * batch, and giving it back corrupts that value.  So end a batch after
 * everything that gives its values back (in C++, declare the scope or the
 * batch before the containers).
 *
 * Other misuse.  In a plain build a value freed twice, or a wrong size, is
 * undefined; an overwritten free block is reported (ARENA_ERR_CORRUPT) when
 * the lists next read it.  Instrumented builds report a pointer in no chunk
 * of the arena (ARENA_ERR_FOREIGN_POINTER) and a second free
 * (ARENA_ERR_DOUBLE_FREE): ASan and Valgrind see the value poisoned, the
 * checked build its header.  The checked build also reports a pointer that
 * is not the start of a value (ARENA_ERR_FOREIGN_POINTER), a size above the
 * value's (ARENA_ERR_BAD_SIZE), a write past the value's end (its redzone,
 * ARENA_ERR_CORRUPT), and a write into a free block (ARENA_ERR_CORRUPT, when
 * it is reused or the batch ends).  After a report nothing happens.
 *
 * Cost: O(1) for a value a reusing allocation placed; O(chunks in use) for
 * any other that is not the most recent (the late-free check).  Not
 * warn_unused_result, so that it can serve as a free hook.
 */
ARENA_API void arena_free(arena *a, void *ptr, size_t size);

/**
 * The allocation for values that are freed one by one: `size` uninitialised
 * bytes, ARENA_ALIGN-aligned.  While nothing was given back in the batch, it
 * is arena_alloc() (one test, no call).  Once something was, the value goes
 * where the arena can take it back whole when it is freed: a block given back
 * in this batch, a slab of its size class, or a block of its size class
 * (docs/internals.md says which).  So what the arena holds follows what is
 * live, under any pattern of frees.  Instrumented builds keep exact sizes,
 * with a redzone after each value.  O(1) but for a merge of the free blocks,
 * amortized O(log n) per block given back.  Size 0 and failure as
 * arena_alloc().
 */
ARENA__NODISCARD ARENA__MALLOC ARENA__ALLOC_SIZE(2) ARENA_API
    void *arena_alloc_reuse(arena *a, size_t size);

/**
 * Formats like printf straight into the arena: a NUL-terminated string,
 * packed at alignment 1 as arena_strndup() stores it, owned by the arena.
 * One formatting pass when the result fits the room left in the current
 * chunk (it is written there, then kept); otherwise the length is measured
 * and the string formatted again into a new place.  NULL when memory runs
 * out, the result would exceed INT_MAX bytes, or formatting fails (an
 * encoding error), with the arena unchanged.  As for printf, `fmt` and its
 * arguments must not point at memory the call writes (the arena's unused
 * room).
 */
ARENA__NODISCARD ARENA__FORMAT_PRINTF(2, 3) ARENA_API
    char *arena_sprintf(arena *a, const char *fmt, ...);

/** arena_sprintf() with a va_list, which it consumes (va_end is the caller's). */
ARENA__NODISCARD ARENA__FORMAT_PRINTF(2, 0) ARENA_API
    char *arena_vsprintf(arena *a, const char *fmt, va_list ap);

/** A zeroed T, aligned to alignof(T) (above ARENA_ALIGN too), owned by the
 *  arena.  NULL on out-of-memory. */
#define ARENA_NEW(a, T) ((T *)arena__new((a), sizeof(T), ARENA__ALIGNOF(T)))
/** A zeroed T[n], aligned to alignof(T); NULL when n * sizeof(T) overflows
 *  or on out-of-memory. */
#define ARENA_NEW_ARRAY(a, T, n)                                                                   \
  ((T *)arena__new_array((a), (size_t)(n), sizeof(T), ARENA__ALIGNOF(T)))
/** An uninitialised T[n], aligned to alignof(T); NULL when n * sizeof(T)
 *  overflows or on out-of-memory. */
#define ARENA_ALLOC_ARRAY(a, T, n)                                                                 \
  ((T *)arena__alloc_array((a), (size_t)(n), sizeof(T), ARENA__ALIGNOF(T)))

/* ---- Batches ---------------------------------------------------------------------- */

/**
 * Ends the batch: forgets every value (size 0) and keeps the chunks, contents untouched,
 * for the next batch.  What it keeps follows recent demand, with nothing to tune.  A
 * batch's demand is the capacity of the chunks it used; docs/internals.md says the rest.
 *   - Batches of one shape make no backing-allocator call and take no page fault from
 *     the second or third on, values larger than a chunk included.
 *   - So do, once warm, a shape that recurs at least once every ARENA_RECUR_BATCHES
 *     batches among others, and a workload that alternates between shapes.
 *   - A spike that does not recur is given back within ARENA_RETAIN_BATCHES batches.
 *   - What a reset keeps never exceeds twice the largest demand of the last
 *     ARENA_RETAIN_BATCHES batches.  The caller's buffer is always kept.
 * A release forgets the demand of the batches before it.  Every value, pointer, ref and
 * mark expires.  Never fails.  Inline when the arena holds one chunk; O(chunks)
 * otherwise.  Checked build: first verifies every redzone and header, and
 * arena_check().
 */
static inline void arena_reset(arena *a);

/**
 * arena_reset() that keeps at most `retain_limit` bytes of chunks ("retain
 * with a limit"): of the chunks the policy keeps, taken in order of use (the
 * batch's own first, then older ones, the most recently used first), each
 * one is kept if it still fits under `retain_limit`, and the others go back to
 * the backing allocator.  With chunks of the chunk size B only, the arena
 * retains min(what arena_reset() keeps, floor(retain_limit / B) * B) bytes.
 * The caller's buffer is always kept (and counts).  retain_limit SIZE_MAX is
 * arena_reset(); 0 frees every chunk the arena allocated and its
 * bookkeeping, like arena_release().  Expires every value.  Never fails.
 */
ARENA_API void arena_reset_to(arena *a, size_t retain_limit);

/**
 * Frees spare chunks (those a reset or rewind kept and no value uses now),
 * oversized ones included, at once and with no policy: taken in order of use
 * (most recent first), each spare is kept if it still fits under
 * `max_retained` beside the chunks in use, and freed otherwise.  Chunks
 * holding values are never freed, so every value, pointer, ref and mark
 * stays valid: arena_retained() may stay above `max_retained`.  Cheap when
 * there is nothing to free (a few comparisons); O(spares) otherwise.  Never
 * fails.
 */
ARENA_API void arena_trim(arena *a, size_t max_retained);

/** Bytes stored since the last reset or release (string NULs included;
 *  alignment padding and chunk tails excluded).  O(1), inline. */
static inline size_t arena_size(const arena *a);

/** Capacity of every chunk held, in bytes: in use and spare, regular and
 *  oversized, the caller's buffer included.  Chunk overhead (redzones, the
 *  checked build's headers) is not counted.  O(1). */
ARENA_API size_t arena_retained(const arena *a);

/* ---- Marks and scopes ------------------------------------------------------------- */

/** A saved position: a plain value, owned by the caller, that may be copied
 *  and dropped freely.  See arena_save() and arena_rewind(). */
typedef struct arena_mark {
    char *pos;       /**< position in the current chunk, NULL: none */
    size_t size;     /**< arena_size() at the save */
    uint32_t cur;    /**< current chunk */
    uint32_t nused;  /**< chunks in use */
    uint64_t serial; /**< which of the arena's saves this is (increasing from 1;
                          a rewind that expires marks skips one) */
} arena_mark;

/** The current position, to give to arena_rewind().  Each mark has its own
 *  serial, which tells a rewind whether it has expired, so taking one writes
 *  the arena (a few loads and stores, no call).  Never fails. */
static inline arena_mark arena_save(arena *a);

/**
 * Forgets everything stored after `m` was taken: arena_size() is what it was then, and
 * the next allocation of the same shape returns the address it would have then.  Every
 * chunk stays with the arena, for the stores that follow; docs/internals.md says which
 * one becomes current.  A value stored before `m` and grown in place since ends again
 * at the position `m` saved (at its size at `m` where values have redzones).  Bytes
 * given back below that position count again.
 * Misuse, in every build: a mark that has expired, or that this arena never made (where
 * detectable), is reported as ARENA_ERR_BAD_MARK, and then nothing happens.  A valid
 * mark is never reported.  A mark expired by an older rewind than the latest four goes
 * unreported.  Checked build: also verifies the redzones and headers of the values
 * it forgets.  Inline (a few comparisons and stores) for a rewind to the latest mark with
 * no chunk taken since, where nothing is instrumented; a call in every other case.
 */
#ifndef ARENA__OUT_OF_LINE
static inline void arena_rewind(arena *a, arena_mark m);
#else
ARENA_API void arena_rewind(arena *a, arena_mark m);
#endif

/** A mark of an arena, to be rewound at the end of a scope: what
 *  arena_scope_begin() and arena_scratch_begin() return.  A plain value,
 *  owned by the caller. */
typedef struct arena_scope {
    struct arena *arena; /**< NULL: nothing to rewind (`struct`: C++ allows the name) */
    arena_mark mark;     /**< its position at the start of the scope */
} arena_scope;

/** Starts a scope of `a`: arena_scope_end() forgets everything stored in `a`
 *  after this call.  arena_save() in a struct: inline, never fails. */
static inline arena_scope arena_scope_begin(arena *a);

/**
 * Ends a scope: arena_rewind(s->arena, s->mark); nothing when s->arena is
 * NULL.  The scope of a scratch arena (arena_scratch_begin() in thread.h) also
 * frees that arena's spare chunks beyond 1 MiB.  Scopes of one arena must end
 * in reverse order of their start: one ended after an enclosing one is
 * reported (ARENA_ERR_BAD_MARK, in every build: see arena_rewind()), and then
 * nothing happens (no rewind, no trim).  Ending a scope again is fine.  The
 * thread that uses the arena ends its scopes.  Inline where arena_rewind()
 * is, and then a call only to trim spare chunks.
 */
#ifndef ARENA__OUT_OF_LINE
static inline void arena_scope_end(arena_scope *s);
#else
ARENA_API void arena_scope_end(arena_scope *s);
#endif

#if defined(__GNUC__) || defined(__clang__)
/** 1 where ARENA_SCOPE and ARENA_SCRATCH_SCOPE exist (gcc, clang), else 0. */
#  define ARENA_HAVE_SCOPE 1
/**
 * ARENA_SCOPE(a);  as a statement between braces: everything stored in `a`
 * from here on is forgotten when the braces are left, however they are left
 * (their end, return, break, goto out of them), through the cleanup
 * attribute of gcc and clang.  Not longjmp, and not C++ exceptions in C code.
 * Elsewhere (MSVC) the macro does not exist: use arena_scope_begin() and
 * arena_scope_end() on every path.  At most one per line.
 */
#  define ARENA_SCOPE(a)                                                                           \
    arena_scope ARENA__CAT(arena__scope_, __LINE__)                                                \
        __attribute__((cleanup(arena_scope_end), unused)) = arena_scope_begin(a)
#else
#  define ARENA_HAVE_SCOPE 0
#endif

/* ---- Refs ------------------------------------------------------------------------- */

/** A 12-byte, pointer-free descriptor of a stored value: a plain value that
 *  may be copied, stored in the arena itself, or written to disk and read
 *  back while the value lives.  The all-zero ref is the empty ref.  Resolve
 *  it with arena_ref_ptr()/arena_ref_str(), and read its length with
 *  arena_ref_len(): a checked build keeps a tag in the top bits of `chunk`
 *  and `len`. */
typedef struct arena_ref {
    uint32_t chunk; /**< index of the chunk */
    uint32_t off;   /**< offset in the chunk */
    uint32_t len;   /**< length in bytes (without the NUL of a string) */
} arena_ref;

/**
 * Stores a copy of `size` bytes at `align` (a power of two, 0: ARENA_ALIGN)
 * and returns its ref.  The empty ref for size 0, on out-of-memory, or for an
 * invalid alignment (nothing stored).  size > ARENA_REF_MAX is misuse:
 * ARENA_ERR_REF_TOO_LARGE goes to the error handler and the empty ref is
 * returned.  Inline like arena_copy() when the value fits the current chunk
 * (which also proves size <= ARENA_REF_MAX).
 */
static inline arena_ref arena_ref_copy(arena *a, const void *src, size_t size, size_t align);

/** Stores `len` bytes of `s` plus a NUL (as arena_strndup()) and returns a
 *  ref whose length is `len`.  len 0 stores nothing and returns the empty
 *  ref (whose string is "").  len >= ARENA_REF_MAX: ARENA_ERR_REF_TOO_LARGE,
 *  then the empty ref.  The empty ref on out-of-memory.  Inline when the
 *  string fits the current chunk. */
static inline arena_ref arena_ref_strndup(arena *a, const char *s, size_t len);

/** True for the empty ref.  Pure: needs no arena. */
static inline bool arena_ref_empty(arena_ref r);

/** The value's length in bytes (without the NUL of a string).  Pure: needs no
 *  arena. */
static inline size_t arena_ref_len(arena_ref r);

/** The value's address, NULL for the empty ref.  O(1).  Requires a ref from
 *  this arena whose value has not expired; a checked build reports a ref from
 *  before the last reset, release or rewind, another arena's, or a garbage
 *  one (ARENA_ERR_STALE_REF, then NULL) before reading through it. */
static inline void *arena_ref_ptr(const arena *a, arena_ref r);

/** The string a ref from arena_ref_strndup() describes; "" for the empty ref
 *  (and, in a checked build, after a report as arena_ref_ptr()). */
static inline const char *arena_ref_str(const arena *a, arena_ref r);

/* ---- Cleanups and child arenas ---------------------------------------------------- */

/** A cleanup: called once with the `ctx` it was pushed with. */
typedef void arena_cleanup_fn(void *ctx);

/** A registered cleanup (opaque): a record stored in the arena, the handle
 *  to cancel it by.  It is a value of the arena's batch. */
typedef struct arena_cleanup arena_cleanup;

/**
 * Registers `fn(ctx)` to run exactly once when the values stored before
 * this call die: at the reset, arena_reset_to() or release that ends the
 * batch (the recycle of an arena_cache's arena is a reset), or at a rewind
 * (or scope end) to a mark taken before this call.  Cleanups run last
 * registered first, before the end of the batch or scope touches any
 * memory.  So a cleanup may read the values stored before it was pushed (a
 * struct holding a FILE *, say).  It may use other arenas.  While an arena's
 * cleanups run, a push on it and a reset, rewind or release of it are
 * misuse (ARENA_ERR_CLEANUP, then nothing happens).  A cleanup may store
 * values in it, which die with the batch or scope being ended, and cancel
 * its other cleanups.
 *
 * The record (48 bytes on 64-bit targets) is a value of the arena, taken as
 * arena_alloc_reuse() takes one.  The returned handle stays valid until the
 * cleanup runs or is cancelled.  Failure: out of memory returns NULL, with
 * nothing registered and the arena as it was.  Misuse: fn NULL, or a push on
 * an arena whose cleanups are running: ARENA_ERR_CLEANUP, then NULL.  Not
 * thread-safe (see arena_shared_cleanup_push() in thread.h).  Checked build,
 * and every build where cheap: a record overwritten by the program is
 * reported (ARENA_ERR_CORRUPT) when it would run; it and the older cleanups
 * are then dropped unrun.
 *
 * Cost: an allocation and a few stores.  While any cleanup is registered,
 * the arena's reset, rewind and release are calls (the inline paths defer to
 * the library), each O(cleanups it runs) more.  An arena with none pays
 * nothing.
 */
ARENA_API arena_cleanup *arena_cleanup_push(arena *a, arena_cleanup_fn *fn, void *ctx);

/**
 * Cancels the cleanup `c` of `a` (a resource closed early): it will not
 * run, and its record goes back to the arena (arena_free()).  O(1).  NULL,
 * the result of a failed push, does nothing.
 *
 * Requires a handle of `a` whose cleanup has neither run nor been cancelled.
 * Its record is a value of the batch that pushed it, so a handle used after
 * that batch or scope ended is a use after reset: undefined, and mostly
 * reported by the checked build, which clobbers expired memory.  Within the
 * batch, misuse is reported, and then nothing happens:
 *   - a cleanup that ran (cancelled from a cleanup of the same run):
 *     ARENA_ERR_CLEANUP;
 *   - one cancelled already: ARENA_ERR_CLEANUP in a plain build, while its
 *     record is not reused.  The checked build clobbers the freed record, so
 *     it reads as foreign; ASan and Valgrind report the read of it;
 *   - a handle that is no record of `a`, where its bytes show it:
 *     ARENA_ERR_FOREIGN_POINTER.
 */
ARENA_API void arena_cleanup_cancel(arena *a, arena_cleanup *c);

/**
 * Initialises `child` as an empty arena whose chunks come from `parent`,
 * through arena_allocator_of(parent): each chunk is a value of the parent.
 * Every chunk the child gives back (at a reset, per its retention policy,
 * at arena_trim() or at its release) goes back to the parent's free blocks,
 * O(1) each, for the next child to take with no backing call.
 * `chunk_bytes` is the child's chunk size (0: a quarter of the parent's, so
 * that a child's chunk fits in one of the parent's).  The child struct may
 * be a value of the parent.
 *
 * The child dies with the parent's batch, and with a scope of the parent in
 * which it took memory.  When it first takes memory of the parent, and at
 * its first take after each mark of the parent, it pushes on the parent a
 * cleanup that releases the child (arena_cleanup_push(); the one it pushed
 * before is cancelled).  So the parent's reset, release, or rewind to a mark
 * taken before that releases the child, whose own cleanups run then.  The
 * child's release before that cancels the cleanup.  Values of the child used
 * after that are a use after reset.  The child itself is then empty, and may
 * be used again in the parent's next batch.
 *
 * Requires that `parent` outlives the child's use and is not used by another
 * thread meanwhile: the child's slow paths allocate from it.  Never fails.
 * A chunk the parent cannot give is the child's out-of-memory, and so is one
 * asked while the parent runs its cleanups (it would die with the batch or
 * scope ending).
 */
ARENA_API void arena_init_child(arena *child, arena *parent, size_t chunk_bytes);

/* ---- Limits, counters and names --------------------------------------------------- */

/** A group limit: one byte budget that several arenas (every arena of an
 *  arena_cache, say) charge what they take from their backing allocators
 *  against, beside each arena's own limit.  Opaque and thread-safe: arenas
 *  on many threads charge it at once, and nothing they hold together ever
 *  exceeds its limit.  See arena_budget_create() in thread.h. */
typedef struct arena_budget arena_budget;

/** Why an allocation was refused (arena_limit_event.cause). */
typedef enum arena_limit_cause {
    ARENA_LIMIT_ARENA = 1, /**< the arena's own limit (arena_set_limit()) */
    ARENA_LIMIT_BUDGET,    /**< the group limit it charges (arena_set_budget()) */
    ARENA_LIMIT_BACKING    /**< the backing allocator returned NULL */
} arena_limit_cause;

/** What an allocation that a limit (or the backing allocator) refused
 *  asked for, as arena_on_limit()'s callback gets it. */
typedef struct arena_limit_event {
    const struct arena *arena; /**< the arena whose allocation failed */
    const char *name;          /**< its name (arena_set_name()), or NULL */
    arena_limit_cause cause;   /**< which limit said no */
    const char *limit_name;    /**< the budget's name for ARENA_LIMIT_BUDGET, else `name` */
    size_t limit;              /**< that limit, in bytes (SIZE_MAX: the backing's failure) */
    size_t held;               /**< what the limited party held then, in bytes */
    size_t asked;              /**< the bytes the arena asked of its backing */
} arena_limit_event;

/** A callback told of each refusal: it may log, count, or note that the
 *  request should be shed; it must not call any function on the arena
 *  (the allocation that failed is under way).  Runs in the thread that
 *  allocated. */
typedef void arena_limit_fn(const arena_limit_event *event, void *ctx);

/**
 * Limits what the arena holds to `limit` bytes: everything it takes from its
 * backing allocator (chunks with their overhead, oversized values, and its
 * bookkeeping: the chunk index and the reuse table); the caller's buffer
 * of arena_init_buffer() is not taken, and does not count.  SIZE_MAX: no
 * limit (the default).
 *
 * Enforced at the byte.  A new chunk is shrunk to the room left under the
 * limit, to no less than the value that needs it, and beside the growth of
 * the chunk index it may need.  So an allocation fails only when no memory
 * the limit allows could hold it.  It then returns NULL with the arena
 * unchanged, as on out-of-memory, and arena_on_limit() is told.  It asks the
 * backing nothing, and every byte of the arena and every figure of
 * arena_get_stats() but `limit_hits` is as it was.  The inline fast path is
 * unchanged: it stores into chunks already held.
 *
 * A limit below what the arena holds already frees nothing.  Every
 * allocation, inline ones included, fails until a reset, arena_reset_to(),
 * arena_trim() or release brings the arena under it.  A reset does: it keeps
 * only the chunks that fit under the limit beside the rest of what the arena
 * holds (the chunks' overhead, its bookkeeping).  0 refuses every allocation
 * that needs memory.  The limit stays through resets, rewinds (it is not
 * part of a mark) and releases.  Never fails; O(1).
 */
ARENA_API void arena_set_limit(arena *a, size_t limit);

/** The arena's limit (arena_set_limit()); SIZE_MAX when none. */
ARENA_API size_t arena_limit(const arena *a);

/**
 * Charges what the arena holds, and what it takes from its backing from now
 * on, against the group limit `b` (NULL: none) instead of the budget it
 * charged, whose bytes go back to it.  `b` must outlive the arena, or be
 * left (arena_set_budget(a, NULL)) first.
 *
 * Joining charges what the arena holds at once, and only if it fits under
 * the budget's limit.  If it does not, the arena first gives back its spare
 * chunks (arena_trim(a, 0)).  If what it holds still does not fit, nothing
 * changes and false is returned: the arena keeps the budget it had, and
 * every byte of it is as it was.  True otherwise: always for NULL, for the
 * budget it has, and for an arena that holds nothing.  Once joined, a charge
 * that would cross the budget's limit fails as the arena's own limit does.
 * Only new memory is refused: values still fit the chunks the arena holds.
 * The bytes go back to the budget as the arena frees chunks.  Thread-safe
 * towards the budget, which arenas on other threads may charge meanwhile;
 * the arena is its thread's.  O(chunks) when it gives back spares, else
 * O(1).
 */
ARENA_API bool arena_set_budget(arena *a, arena_budget *b);

/** Installs `fn` (with `ctx`; NULL: none) to be told of every allocation of
 *  this arena that a limit or the backing allocator refuses (see
 *  arena_limit_event).  Neither is misuse: the allocation returns NULL
 *  either way, as it does without a callback.  Kept through resets and
 *  releases.  Without a callback, a refusal by a limit (the arena's or its
 *  budget's, not the backing's out-of-memory) writes one line to stderr
 *  (`libarena: limit: arena 0x... "name" refused N bytes (...)`) where
 *  the environment variable ARENA_LIMIT_TRACE, read at the process's first
 *  refusal, asks: "1" every such refusal, in any build; "0" none; unset (or
 *  another value), the checked build traces the first 64 of the process and
 *  then a line saying it stops, other builds none. */
ARENA_API void arena_on_limit(arena *a, arena_limit_fn *fn, void *ctx);

/** Names the arena for reports and limit events: `name` is the caller's
 *  string, which must stay valid while the arena uses it (no copy is made,
 *  nothing is allocated); NULL clears it.  A name set again replaces the
 *  last.  Kept through resets and releases.  O(1). */
ARENA_API void arena_set_name(arena *a, const char *name);

/** The arena's name, or NULL. */
ARENA_API const char *arena_name(const arena *a);

/** A snapshot of an arena's counters (arena_get_stats()).  All in bytes but
 *  for the counts of events. */
typedef struct arena_stats {
    size_t stored;              /**< arena_size() */
    size_t retained;            /**< arena_retained() */
    size_t held;                /**< taken from the backing allocator now: chunks
                                     with their overhead, and bookkeeping */
    size_t waste;               /**< of the chunks in use, what holds no value:
                                     chunk tails, alignment padding, blocks given
                                     back and not reused yet (and, under ASan or
                                     Valgrind and in the checked build, the
                                     values' redzones and headers; not the room a
                                     chunk keeps for its first header) */
    size_t limit;               /**< arena_limit() */
    size_t peak_stored;         /**< the largest `stored` since init ... */
    size_t peak_stored_batch;   /**< ... and since the batch began (see below) */
    size_t peak_retained;       /**< the largest `retained` since init ... */
    size_t peak_retained_batch; /**< ... and since the batch began */
    size_t peak_held;           /**< the largest `held` since init */
    uint64_t chunks;            /**< chunks held (in use and spare) */
    uint64_t reused;            /**< bytes handed out again from blocks given back */
    uint64_t backing_calls;     /**< calls to the backing allocator, both ways */
    uint64_t resets;            /**< batches ended by a reset or arena_reset_to() */
    uint64_t limit_hits;        /**< allocations refused (arena_on_limit()) */
    uint64_t reserved[4];       /**< zero; room for later counters */
} arena_stats;

/**
 * Fills `*out` with the arena's counters.  O(1); it only reads, on the
 * arena's thread as every use of the arena.  Every figure is exact, in every
 * build.
 *   - The peaks of `stored` are the largest arena_size() between calls.  A
 *     call that forgets values (a rewind or scope end, a reset, a release, a
 *     value given back or shrunk, through the adapters too), inline or not,
 *     notes the size before it first.  A call that places a value and gives
 *     another back (a moving arena_realloc()) counts once, as it leaves them.
 *   - An arena that backs others (arena_allocator_of(), arena_init_child())
 *     sees their chunk requests as calls of its own.  A nested arena's call
 *     that takes a chunk from it before giving one back counts here as the
 *     two calls it makes, the moment between them included.
 *   - A batch ends at a reset, arena_reset_to() or release.  Values a cleanup
 *     stores while its batch or scope ends count in that batch.
 *   - Sizes compare as signed here.  arena_size() after a rewind is the
 *     mark's, so a value from before the mark that shrank after it, shrunk
 *     again, can wrap it below zero, which is no peak.
 *   - The peaks of `held` and `retained` are of memory at any moment, within
 *     a call too.  A call that takes a larger chunk before it gives back the
 *     one it outgrew held both for that moment.
 *   - A call that fails (out-of-memory, a limit) changes no figure but
 *     `limit_hits` and `backing_calls`.  Memory it took before a later step
 *     failed goes back uncounted: it was never the arena's.
 */
ARENA_API void arena_get_stats(const arena *a, arena_stats *out);

/* ---- Errors ----------------------------------------------------------------------- */

/** Misuse codes passed to the error handler.  Out-of-memory is not misuse. */
typedef enum arena_error {
    /** arena_pool_free(p, NULL), arena_cache_recycle(c, NULL) */
    ARENA_ERR_NULL_FREE = 1,
    /** not the start of a slot of this pool, not a block of the arena_cur_*
     *  family, an arena recycled into a cache that did not make it; checked
     *  build: arena_realloc() of a pointer that is not the start of a live value */
    ARENA_ERR_FOREIGN_POINTER,
    /** the slot is already free; the arena was already recycled */
    ARENA_ERR_DOUBLE_FREE,
    /** a ref cannot describe the value (larger than ARENA_REF_MAX) */
    ARENA_ERR_REF_TOO_LARGE,
    /** checked build: a ref from before the last reset, release or rewind,
     *  or one no call of this arena made */
    ARENA_ERR_STALE_REF,
    /** a rewind or scope end to a mark that has expired (a reset, a release,
     *  or a rewind to an earlier mark since), from another arena, or never
     *  taken */
    ARENA_ERR_BAD_MARK,
    /** arena_check() or arena_pool_check() found an inconsistency; checked
     *  build: a redzone or header overwritten */
    ARENA_ERR_CORRUPT,
    /** arena_realloc() told an old size larger than the value */
    ARENA_ERR_BAD_SIZE,
    /** a cleanup pushed with fn NULL, or on an arena whose cleanups are
     *  running (from one of them); a reset, rewind or release of an arena
     *  from one of its own cleanups; a cleanup cancelled after it ran or
     *  was cancelled, where detectable (see arena_cleanup_cancel()) */
    ARENA_ERR_CLEANUP,
    /** a value given back or resized after the batch that stored it ended
     *  (a reset, rewind or release since): seen where it lies beyond what
     *  the arena's current batch has stored (see arena_free()) */
    ARENA_ERR_LATE_FREE
} arena_error;

/** An error handler.  `message` names the function, the offending value,
 *  and the arena, pool or cache the faulty call was on, by its address and,
 *  when it has one, its name (arena_set_name(), arena_pool_set_name(),
 *  arena_cache_set_name(); in double quotes after the address, control
 *  characters and bytes of no well-formed UTF-8 sequence as \\xNN,
 *  truncated to 64 characters); it is valid only during the call.
 *  arena_error_about() gives the handler the objects themselves.  If the
 *  handler returns, the faulty call does nothing: the state is exactly as
 *  before.  It runs in the thread that made the faulty call. */
typedef void arena_error_fn(arena_error code, const char *message, void *ctx);

/** What a misuse is about, as arena_error_about() gives it to the error
 *  handler.  The library owns it. */
typedef struct arena_error_info {
    arena_error code;                /**< the code the handler was given */
    const struct arena *arena;       /**< the arena the faulty call was on, or NULL */
    const struct arena_pool *pool;   /**< the pool it was on (pool.h), or NULL */
    const struct arena_cache *cache; /**< the cache it was on (thread.h), or NULL */
    const char *name;                /**< the name of `arena`, else of `pool`, else of
                                          `cache` (the first that is not NULL), or NULL */
    const void *reserved[4];         /**< NULL; room for later fields */
} arena_error_info;

/** Installs `fn` (with `ctx`) as the process-wide error handler and returns the
 *  previous one.  `fn == NULL` restores arena_default_error_handler().
 *  Not thread-safe: set it at start-up, before threads use the library. */
ARENA_API arena_error_fn *arena_set_error_handler(arena_error_fn *fn, void *ctx);

/** The current handler; stores its ctx in `*ctx` when ctx is not NULL (a
 *  handler that chains to the one it replaced).  Not thread-safe against
 *  arena_set_error_handler(). */
ARENA_API arena_error_fn *arena_get_error_handler(void **ctx);

/**
 * During a call of the error handler, from the handler (its thread): what the
 * misuse being reported is about, so that a handler can name the object in
 * its own words (the request an arena serves, say) or act on it.  The
 * objects are those of the faulty call (the arena of arena_free(), the pool
 * of arena_pool_free(), the cache and the arena of arena_cache_recycle(),
 * the current arena of the arena_cur_* family); the struct is valid until
 * the handler returns.  A report from within the handler (a misuse there)
 * has its own, and the outer one is back when that inner handler returns.
 * NULL outside a handler's call, but for a thread whose handler left by
 * longjmp(): it still gives that report (its storage, the library's, stays
 * valid; its objects may not).  Thread-safe: each thread sees its own.
 */
ARENA_API const arena_error_info *arena_error_about(void);

/** The default handler: writes "libarena: " and the message to stderr and
 *  aborts.  Thread-safe. */
ARENA_API void arena_default_error_handler(arena_error code, const char *message, void *ctx);

/** A short constant name for a code ("ARENA_ERR_DOUBLE_FREE"), "unknown"
 *  otherwise; a static string.  Thread-safe. */
ARENA_API const char *arena_error_name(arena_error code);

/* ---- Version ---------------------------------------------------------------------- */

/** The library's version as "MAJOR.MINOR.PATCH" (of the library linked, which
 *  may differ from ARENA_VERSION_STRING, the header's); a static string.
 *  Thread-safe. */
ARENA_API const char *arena_version(void);

/* ---- Checks ----------------------------------------------------------------------- */

/** Walks the arena's bookkeeping and reports the first inconsistency through
 *  the error handler (ARENA_ERR_CORRUPT).  Returns true when consistent.  Any
 *  build; reads only.  O(chunks); a checked build also walks every byte held
 *  and reports the first overwritten redzone, pad or header (outside
 *  Valgrind, whose no-access redzones catch such writes as they happen). */
ARENA_API bool arena_check(const arena *a);

#ifdef __cplusplus
}
#endif

#include "arena/internal/arena.h"

#endif /* ARENA_ARENA_H */
