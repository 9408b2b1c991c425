/* SPDX-License-Identifier: MIT */
/*
 * Internal helpers shared by the library's sources: platform macros, the
 * arena's flags, the registry, group limits, arithmetic, the backing
 * allocator, what the arena, its cleanups, its children and guarded batches
 * call of each other, errors, names in text.  Never installed.  The tools'
 * side (sanitizers, Valgrind, the checked build) is instrument.h; the reuse
 * of freed blocks, reuse.h.
 */
#ifndef ARENA_INTERNAL_H
#define ARENA_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "arena/arena.h"

#if defined(_WIN32) && (defined(__GNUC__) || defined(__clang__))
/* A DLL exports only what ARENA_API marks, so nothing needs hiding; the C
 * library's printf is mingw-w64's C99 one (__USE_MINGW_ANSI_STDIO, set by
 * CMakeLists.txt: msvcrt's knows no %zu), which gcc calls gnu_printf. */
#  define ARENA__HIDDEN
#  define ARENA__PRINTF(f, a) __attribute__((format(gnu_printf, f, a)))
#elif defined(__GNUC__) || defined(__clang__)
#  define ARENA__HIDDEN       __attribute__((visibility("hidden")))
#  define ARENA__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define ARENA__HIDDEN
#  define ARENA__PRINTF(f, a)
#endif

/* A function inlined even where the compiler's estimate of its size says
 * otherwise: the adapters' fast path (adapters.h, reuse.h). */
#if defined(__GNUC__) || defined(__clang__)
#  define ARENA__ALWAYS_INLINE inline __attribute__((always_inline))
#else
#  define ARENA__ALWAYS_INLINE inline
#endif

/* Thread-local storage of the library.  initial-exec makes an access one
 * %fs-relative load in the shared library too (no __tls_get_addr call); the
 * few bytes it takes come from the static TLS surplus that glibc keeps for
 * libraries loaded with dlopen. */
#if defined(__GNUC__) || defined(__clang__)
#  define ARENA__TLS _Thread_local __attribute__((tls_model("initial-exec")))
#else
#  define ARENA__TLS _Thread_local
#endif

#include "cold.h"

/* ---- The arena's flags ---------------------------------------------------------------- */

/* Bits of the arena's flags (`flags` of its bookkeeping, cold.h); the
 * checked build's tag serial is in bits 8-31.  The bits of `pending`, which
 * the inline paths read, are in arena/internal/types.h.
 *
 *   FIXED        a caller's buffer without backing: never allocate;
 *   BUF_OPEN     instrumented: the caller's buffer is open (after a release)
 *                until the arena next stores into it;
 *   OUTGREW      this batch gave an outgrown chunk back (free_outgrown());
 *   OUTGREW_LAST the last batch did;
 *   CLEANING     its cleanups are running (cleanup.c);
 *   LIMITED      set.limit applies (arena_set_limit());
 *   QUIET        a refusal is neither counted nor told (a request the caller
 *                makes smaller if refused: arena__alloc_pages()). */
enum {
    ARENA__FIXED = 1u,
    ARENA__BUF_OPEN = 2u,
    ARENA__OUTGREW = 4u,
    ARENA__OUTGREW_LAST = 8u,
    ARENA__CLEANING = 16u,
    ARENA__LIMITED = 32u,
    ARENA__QUIET = 64u
};

/* ---- The registry (src/report.c) --------------------------------------------------- */

/* arena__publish() copies a registered arena's counters, as
 * arena_get_stats() read them, and its name to its record; arena_get_stats()
 * calls it, and so do the arena's paths that change its figures, through
 * arena__publish_arena() (arena.c), after a registered arena's pointer
 * test. */
struct arena__node;
struct arena_cache;
struct arena_shared;
ARENA__HIDDEN void arena__publish(struct arena__node *n, const char *name, const arena_stats *s);
ARENA__HIDDEN void arena__publish_arena(const arena *a);
ARENA__HIDDEN bool arena__register_under(arena *a, struct arena__node *parent);
/* Registers `a` under `parent` if it is not (out-of-memory: not at all), or
 * unregisters it when `parent` is NULL: an arena a cache hands out again. */
ARENA__HIDDEN void arena__register_as(arena *a, struct arena__node *parent);
/* What a record of the registry stands for. */
enum { ARENA__NODE_ARENA, ARENA__NODE_CACHE, ARENA__NODE_SHARED, ARENA__NODE_POOL };
ARENA__HIDDEN struct arena__node *arena__register_object(int kind, void *obj);
/* A pool's figures in its record: what init fixed, and its name. */
ARENA__HIDDEN void arena__publish_pool(struct arena__node *n, const char *name, size_t held,
                                       size_t capacity);
ARENA__HIDDEN void arena__unregister_object(struct arena__node *n);
ARENA__HIDDEN const char *arena__cache_name(struct arena_cache *c);
ARENA__HIDDEN const char *arena__shared_name(struct arena_shared *s);

/* ---- Group limits (src/budget.c) --------------------------------------------------- */

/* A group limit; the cache embeds one. */
struct arena_budget {
    _Atomic size_t used;
    _Atomic size_t limit;
    const char *name;
};
ARENA__HIDDEN void arena__budget_init(arena_budget *b, size_t limit, const char *name);

/* Charge `n` bytes (false, nothing charged, when that would cross the
 * limit), give them back, and the room left. */
ARENA__HIDDEN bool arena__budget_charge(arena_budget *b, size_t n);
ARENA__HIDDEN void arena__budget_refund(arena_budget *b, size_t n);
ARENA__HIDDEN size_t arena__budget_room(const arena_budget *b);

/* ---- Arithmetic --------------------------------------------------------------- */

static inline bool arena__is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

static inline uintptr_t arena__align_down(uintptr_t p, size_t align)
{
    return p & ~(uintptr_t)(align - 1);
}

/* ---- Backing allocator ------------------------------------------------------- */

/* b->alloc, or the C library's heap (64-byte aligned blocks) when it is NULL. */
ARENA__HIDDEN void *arena__back_alloc(const arena_allocator *b, size_t n);
/* Gives `p` of `n` bytes back to where arena__back_alloc() took it. */
ARENA__HIDDEN void arena__back_free(const arena_allocator *b, void *p, size_t n);

/* Where a block of the C library's heap of ARENA__HUGE bytes or more is a
 * mapping of its own, aligned and advised for transparent huge pages
 * (backing.c): read once, the same for the process's life. */
#define ARENA__HUGE ((size_t)2 << 20)
ARENA__HIDDEN bool arena__huge_pages(void);

/* The C library's heap (the backing of an arena without an allocator). */
#define ARENA__HEAP (&(const arena_allocator){NULL, NULL, NULL})

/* What the arena takes from and gives back to its backing allocator, counted
 * and limited (arena_set_limit(), arena_set_budget()): NULL when a limit or
 * the backing refuses (the callback told).  Every backing call of an arena
 * goes through these two. */
ARENA__HIDDEN void *arena__take_backing(arena *a, size_t n);
ARENA__HIDDEN void arena__give_backing(arena *a, void *p, size_t n);
/* What a limit leaves for a new request (SIZE_MAX: no limit). */
ARENA__HIDDEN size_t arena__backing_room(const arena *a);

/* ---- Size 0 --------------------------------------------------------------------- */

/* The result of a size-0 allocation at `align` (a power of two): non-NULL,
 * aligned to `align`, not to be dereferenced, and no value (nothing is
 * stored, poisoned or tagged for it): up to 4096 the address of a static
 * object of the library, above it the address whose value is `align`. */
ARENA__HIDDEN void *arena__zero_size_value(size_t align);

/* ---- The arena (src/arena.c) ------------------------------------------------------ */

/* Writes the bookkeeping of an arena the inline arena_init_buffer() left
 * `lazy`, as every entry point that reads or writes it must first. */
ARENA__HIDDEN void arena__wake(arena *a);

/* The chunk in use that holds `p`, NULL if none: O(chunks in use), for the
 * paths that are not hot (the tools' checks, reuse.c's merge). */
ARENA__HIDDEN const struct arena__chunk *arena__chunk_of(const arena *a, const char *p);
/* Sets ARENA__PENDING_HOLDS as the reuse table and the registry record say. */
ARENA__HIDDEN void arena__note_holds(arena *a);

/* arena_free() of a value that the calling function placed itself and
 * gives back before it returns: the size with it was never the program's
 * to see, so no high point is noted (arena_vsprintf()). */
ARENA__HIDDEN void arena__free_placed(arena *a, void *ptr, size_t size);
/* arena_rewind(), which says whether it rewound (false: the mark was
 * reported, and nothing happened). */
ARENA__HIDDEN bool arena__rewind(arena *a, arena_mark m);

/* ---- Cleanups (src/cleanup.c) ------------------------------------------------------ */

/* Runs the cleanups of `a` pushed since the mark of `serial` (0: all), the
 * latest first, before a reset, rewind or release (named by `caller`)
 * touches anything; false, reported, when `a` is running its cleanups
 * already (a call from one of them): the caller then does nothing. */
ARENA__HIDDEN bool arena__cleanups_run(arena *a, uint64_t serial, const char *caller);

/* Whether `a` is running its cleanups. */
ARENA__HIDDEN bool arena__cleaning(const arena *a);

/* The mark serial of its arena when `c` was pushed: a rewind to a mark of
 * a larger serial does not run it. */
ARENA__HIDDEN uint64_t arena__cleanup_serial(const arena_cleanup *c);

/* arena_cleanup_cancel() of a record that the calling function pushed, or
 * replaces by one it pushed, in the same call: through arena__free_placed(). */
ARENA__HIDDEN void arena__cleanup_drop(arena *a, arena_cleanup *c);
/* arena__cleanups_run() where cleanups are registered: one test otherwise. */
static inline bool arena__cleanups_end(arena *a, uint64_t serial, const char *caller)
{
    return !(a->pending & ARENA__PENDING_CLEANUP) || arena__cleanups_run(a, serial, caller);
}

/* ---- Child arenas (src/child.c) --------------------------------------------------- */

/* After a release or a reset that left `a` nothing (no chunk, no index, no
 * lists): a child then holds no memory of its parent's, and cancels its tie
 * to the parent's batch.  One test for any other arena. */
ARENA__HIDDEN void arena__child_idle(arena *a);

/* ---- Guarded batches (src/guard.c) ---------------------------------------------- */

/* The calls that end a guarded batch's values, as the fault reporter names
 * them. */
enum arena__ending {
    ARENA__END_RESET = 1,
    ARENA__END_RESET_TO,
    ARENA__END_REWIND,
    ARENA__END_RELEASE,
    ARENA__END_RECYCLE,
    ARENA__END_SCRATCH,
    ARENA__END_SHARED,
    ARENA__END_KINDS
};

/* What a quarantined range remembers of its arena: the name (copied), the
 * ending, and what "how many batches ago" needs without the arena (which
 * may be gone by then): the arena's identity, its clock's slot, and the
 * batches it had ended when this one's values expired. */
struct arena__guard_why {
    const char *name;
    int ending;
    uint64_t id;
    uint32_t clock;
    uint64_t ended;
};

/* The page size, or 0 where the mode is unavailable. */
ARENA__HIDDEN size_t arena__guard_page(void);
/* `n` (> 0) bytes of fresh pages, readable and writable, that end less than
 * 64 bytes before an inaccessible guard page (their start is 64-byte
 * aligned, as the heap's chunks are); NULL on failure. */
ARENA__HIDDEN void *arena__guard_map(size_t n);
/* Unmaps what arena__guard_map(n) returned, its pages and guard page. */
ARENA__HIDDEN void arena__guard_unmap(void *p, size_t n);
/* Makes the pages that [p, p + n) touches inaccessible and decommitted, and
 * quarantines them, with the guard page after them when `guard` (not when a
 * rewind quarantined it already with the pages past the mark). */
ARENA__HIDDEN void arena__guard_retire(char *p, size_t n, bool guard,
                                       const struct arena__guard_why *why);
/* Nonzero while the process samples batches (arena_guard_sample(),
 * arena_guard_sample_interval(), ARENA_GUARD). */
ARENA__HIDDEN unsigned long arena__guard_every(void);
/* Whether the sampled batch of `g`'s arena that begins now is guarded;
 * moves its countdown on, and sets `cut` for an unguarded one.  Requires
 * sampling on (arena__guard_every()). */
ARENA__HIDDEN bool arena__guard_draw(struct arena__guard_state *g);
/* True when the sampled batch of `g`'s arena that begins now is one of
 * its countdown's, which it moves on: no decision (no change to the
 * setting since the last one, and the countdown not at its end). */
ARENA__HIDDEN bool arena__guard_pass(struct arena__guard_state *g);
/* A scratch scope begins on `a` while the process samples (src/arena.c). */
ARENA__HIDDEN void arena__scratch_batch(arena *a);
/* A guarded batch began (the counter). */
ARENA__HIDDEN void arena__guard_began(void);
/* A new identity for an arena's records, and its clock's slot. */
ARENA__HIDDEN uint64_t arena__guard_identity(uint32_t *clock);
/* The arena of identity `id` has ended `ended` batches. */
ARENA__HIDDEN void arena__guard_tick(uint64_t id, uint32_t clock, uint64_t ended);
/* The ending that the caller of a reset or rewind stands for (a cache's
 * recycle, a scratch scope's end, a shared reset), set around that call
 * while the arena is guarded (ARENA__PENDING_GUARD); 0 when the call
 * stands for itself. */
ARENA__HIDDEN void arena__guard_cause(int ending);
ARENA__HIDDEN int arena__guard_caused(void);
/* True when `addr` lies in a range that the quarantine keeps for the arena
 * whose identity is `id` (a batch of it ended there). */
ARENA__HIDDEN bool arena__guard_retired_by(const void *addr, uint64_t id);
/* Test hook: the mapping after `after` more succeed fails (0: none fails). */
ARENA__HIDDEN void arena__guard_fail_map(unsigned long after);
/* Test hook: what the fault reporter would write of a fault at `addr`, into
 * `buf` (NUL-terminated, cut to `len`); its length, 0 when it would write
 * nothing. */
ARENA__HIDDEN size_t arena__guard_describe(const void *addr, char *buf, size_t len);

/* ---- Errors --------------------------------------------------------------------- */

/* What a report is about (arena_error_info): the object or objects of the
 * faulty call, NULL where none.  The message names each by its name too. */
struct arena__about {
    const arena *arena;
    const struct arena_pool *pool;
    const struct arena_cache *cache;
};
#define ARENA__ABOUT_ARENA(a)    (&(const struct arena__about){(a), NULL, NULL})
#define ARENA__ABOUT_POOL(p)     (&(const struct arena__about){NULL, (p), NULL})
#define ARENA__ABOUT_CACHE(c, a) (&(const struct arena__about){(a), NULL, (c)})

/* Formats a message and hands it to the current error handler, which can
 * learn `about` from arena_error_about() during the call. */
ARENA__HIDDEN void arena__report(const struct arena__about *about, arena_error code,
                                 const char *fmt, ...) ARENA__PRINTF(3, 4);

/* arena__report() for a check that found misuse and returns true ("the call
 * is refused"). */
ARENA__HIDDEN bool arena__misused(const struct arena__about *about, arena_error code,
                                  const char *fmt, ...) ARENA__PRINTF(3, 4);
/* arena__report() of ARENA_ERR_CORRUPT for a consistency check, which then
 * returns false ("not consistent"). */
ARENA__HIDDEN bool arena__corrupt(const struct arena__about *about, const char *fmt, ...)
    ARENA__PRINTF(2, 3);

/* Tells of a limit's refusal that no arena_on_limit() callback was told: a
 * line on stderr where ARENA_LIMIT_TRACE says so (the checked build traces
 * the first ARENA__TRACED of the process by default). */
#define ARENA__TRACED 64
ARENA__HIDDEN void arena__limit_trace(const arena_limit_event *e);

/* ---- Names in text ------------------------------------------------------------- */

/* A name is the caller's bytes, any bytes; text that shows one (the report,
 * messages) shows each character as itself, but for each byte of a control
 * character (C0, DEL, C1) or of no well-formed UTF-8 sequence, as \xNN, so
 * that a name never breaks a line nor makes the text invalid UTF-8.  This
 * is the length of the well-formed sequence that `s` (NUL-terminated)
 * begins with, 0 if none (RFC 3629: no overlong form, no surrogate, nothing
 * above U+10FFFF; a NUL is no continuation byte, so nothing past the string
 * is read). */
static inline size_t arena__utf8_len(const unsigned char *s)
{
    unsigned lo = 0x80, hi = 0xBF;
    size_t n, i;
    if (s[0] < 0x80)
        return 1;
    if (s[0] < 0xC2 || s[0] > 0xF4)
        return 0;
    n = s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
    if (s[0] == 0xE0)
        lo = 0xA0; /* overlong below */
    else if (s[0] == 0xED)
        hi = 0x9F; /* surrogates above */
    else if (s[0] == 0xF0)
        lo = 0x90; /* overlong below */
    else if (s[0] == 0xF4)
        hi = 0x8F; /* above U+10FFFF */
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

/* The bytes of the character `s` begins with as a name shows it (1 for a
 * byte of no well-formed sequence), and in `*escaped` whether each is
 * shown as \xNN. */
static inline size_t arena__name_char(const unsigned char *s, bool *escaped)
{
    size_t k = arena__utf8_len(s);
    *escaped = k == 0 || s[0] < 0x20 || s[0] == 0x7F || (s[0] == 0xC2 && s[1] < 0xA0);
    return k ? k : 1;
}

#endif /* ARENA_INTERNAL_H */
