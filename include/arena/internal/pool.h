/* SPDX-License-Identifier: MIT */
/*
 * libarena: the inline code behind pool.h.
 *
 * Included by pool.h, never by itself.  The bodies of the pool's inline
 * functions and the internals they need (arena__ names): nothing here is
 * API, and any of it may change in any release.
 */
#ifndef ARENA_INTERNAL_POOL_H
#define ARENA_INTERNAL_POOL_H

#ifndef ARENA_POOL_H
#  error "include <arena/pool.h>, not arena/internal/pool.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Slot states, one uint32_t per slot (internal).  A free slot remembers
 * whether it was ever handed out, so that a bad free can say which mistake it
 * was. */
#define ARENA__POOL_NEVER 0u /* free, never handed out */
#define ARENA__POOL_LIVE  1u /* handed out */
#define ARENA__POOL_FREED 2u /* free, handed out and given back */

/* ---- Slow paths (internal; called by the inline functions below) ------------ */

/* Out of line: an empty pool (NULL), a closed one (instrumented library), a
 * bad free (reported).  Cold, so that a loop of inline calls keeps them off
 * its straight path. */
ARENA__COLD ARENA_API void *arena__pool_alloc_slow(arena_pool *p);
ARENA__COLD ARENA_API void arena__pool_free_slow(arena_pool *p, void *obj);

/* ---- The hot fields as values (internal) ---------------------------------------
 * An inline call loads the hot fields into a local copy, works on the copy,
 * and stores back the one that changed (nfree).  After an out-of-line call
 * it loads the copy again (the call may have changed anything) and holds the
 * fields its fast path uses to the end of the call.  Then, in a loop of calls,
 * each call finds those fields already in registers, whichever path the
 * previous call took: the compiler loads them once before the loop and again
 * only after a call out of line. */
typedef struct arena__pool_regs {
    uintptr_t base, stack, state;
    size_t nfree, open, inv, stride, shift;
} arena__pool_regs;

static inline arena__pool_regs arena__pool_load(const arena_pool *p)
{
    arena__pool_regs r;
    r.base = p->base;
    r.stack = p->stack;
    r.state = p->state;
    r.nfree = p->nfree;
    r.open = p->open;
    r.inv = p->inv;
    r.stride = p->stride;
    r.shift = p->shift;
    return r;
}

/* Keeps the copy's values alive to the end of an inline call, on every path.
 * Without it gcc drops the reload after an out-of-line call (nothing on that
 * path reads it), a field is then no longer known after that path, and the
 * next call of a loop must load it from memory on every path.  An empty asm
 * statement that takes the values: it emits no instruction.  Each path holds
 * the fields it uses: a function that allocates once loads no more than it
 * needs.  Not for clang, which keeps no field in a register across such a
 * call either way, and would store each held value to the stack. */
#if defined(__GNUC__) && !defined(__clang__)
#  define ARENA__POOL_HOLD_ALLOC(r)                                                                \
    __asm__(""                                                                                     \
            :                                                                                      \
            : "g"((r).base), "g"((r).stack), "g"((r).state), "g"((r).nfree), "g"((r).open),        \
              "g"((r).stride))
#  define ARENA__POOL_HOLD_FREE(r)                                                                 \
    __asm__(""                                                                                     \
            :                                                                                      \
            : "g"((r).base), "g"((r).stack), "g"((r).state), "g"((r).nfree), "g"((r).open),        \
              "g"((r).inv), "g"((r).shift))
#else
#  define ARENA__POOL_HOLD_ALLOC(r) ((void)(r))
#  define ARENA__POOL_HOLD_FREE(r)  ((void)(r))
#endif

/* ---- Slot-state transitions (internal) ----------------------------------------
 * Every change of a slot's state goes through these two, inline or not, so
 * that the library's wrappers (src/pool.c take/give) are the one place that
 * adds sanitizer annotations.  They work on the copy; the caller stores
 * nfree back. */

/* Hands out the top of the free stack: marks it live, returns its index.
 * Requires nfree > 0. */
static inline size_t arena__pool_pop(arena__pool_regs *r)
{
    size_t i = ((const uint32_t *)r->stack)[--r->nfree];
    ((uint32_t *)r->state)[i] = ARENA__POOL_LIVE;
    return i;
}

/* Takes slot i back.  Requires i < cap and state[i] == LIVE. */
static inline void arena__pool_push(arena__pool_regs *r, size_t i)
{
    ((uint32_t *)r->stack)[r->nfree++] = (uint32_t)i;
    ((uint32_t *)r->state)[i] = ARENA__POOL_FREED;
}

/*
 * The slot index of `obj`, or a value >= cap when `obj` is not a slot start
 * (outside the storage, inside a slot, or NULL).  No division: with
 * stride = d * 2^k (d odd) and inv = d^-1 mod 2^N, an offset that is i * stride
 * maps to i exactly, and any other offset, below the storage or past it
 * included, maps to a value >= cap (the low k bits of off * inv are non-zero
 * and rotate to the top, or the quotient is not exact and comes out above
 * SIZE_MAX / stride >= cap).  One multiply, one rotate, one compare: a range
 * and stride check in one.
 */
static inline size_t arena__pool_slot(uintptr_t base, size_t inv, size_t shift, const void *obj)
{
    size_t x = (size_t)((uintptr_t)obj - base) * inv;
    return (x >> shift) | (x << ((0 - shift) & (sizeof(size_t) * 8 - 1)));
}

static inline size_t arena__pool_index(const arena_pool *p, const void *obj)
{
    return arena__pool_slot(p->base, p->inv, p->shift, obj);
}

static inline void *arena_pool_alloc(arena_pool *p)
{
#if ARENA__INLINE_WINDOW
    arena__pool_regs r = arena__pool_load(p);
    void *obj;
    if (ARENA__LIKELY(r.nfree - 1 < r.open)) {
        size_t i = arena__pool_pop(&r);
        obj = (void *)(r.base + i * r.stride);
    } else {
        obj = arena__pool_alloc_slow(p);
        r = arena__pool_load(p);
    }
    p->nfree = r.nfree;
    ARENA__POOL_HOLD_ALLOC(r);
    return obj;
#else
    return arena__pool_alloc_slow(p); /* the library sees every transition */
#endif
}

static inline void arena_pool_free(arena_pool *p, void *obj)
{
#if ARENA__INLINE_WINDOW
    arena__pool_regs r = arena__pool_load(p);
    size_t i = arena__pool_slot(r.base, r.inv, r.shift, obj);
    if (ARENA__LIKELY(i < r.open) &&
        ARENA__LIKELY(((const uint32_t *)r.state)[i] == ARENA__POOL_LIVE)) {
        arena__pool_push(&r, i);
    } else {
        arena__pool_free_slow(p, obj);
        r = arena__pool_load(p);
    }
    p->nfree = r.nfree;
    ARENA__POOL_HOLD_FREE(r);
#else
    arena__pool_free_slow(p, obj);    /* the library sees every transition */
#endif
}

static inline bool arena_pool_owns(const arena_pool *p, const void *obj)
{
    return arena__pool_index(p, obj) < p->cap;
}

static inline size_t arena_pool_capacity(const arena_pool *p) { return p->cap; }

static inline size_t arena_pool_used(const arena_pool *p) { return p->cap - p->nfree; }

static inline size_t arena_pool_available(const arena_pool *p) { return p->nfree; }

#ifdef __cplusplus
}
#endif

#endif /* ARENA_INTERNAL_POOL_H */
