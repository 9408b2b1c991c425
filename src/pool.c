/* SPDX-License-Identifier: MIT */
/*
 * The fixed-capacity pool: the out-of-line half.
 *
 * Algorithm.  One region holds `cap` slots of `stride` bytes, then a stack of
 * free slot indices (uint32), then one state (uint32) per slot.  alloc pops an
 * index off the stack and marks its slot live.  free checks that the pointer
 * is a slot start and that the slot is live, marks it freed and pushes its
 * index.  The first check (arena__pool_index in pool.h) is one multiply by
 * the inverse of the stride's odd part and one rotate: a range and stride
 * check in one, exact and without a division.  Both fast paths are inline
 * in pool.h; this file holds init, destroy, the checks and every path that
 * reports.
 *
 * Why the links are not in the slots.  A bare intrusive free list keeps the
 * next pointer in the freed slot, so a write through a dangling pointer
 * redirects the next allocation anywhere.  Here a freed slot holds nothing the
 * pool reads: a stray write spoils garbage, and the stack and states stay
 * exact.  It costs 8 bytes of metadata per slot and a few instructions per
 * call (docs/fast-path.md), and buys speed where it matters most: the stack
 * is a dense array the CPU streams through, while an intrusive list reads
 * every slot it hands out (a cache miss per alloc once the slots outgrow the
 * cache).  The state is what makes double-free detection exact rather than a
 * heuristic.
 * A state per slot rather than a bit: a plain store, no read-modify-write.
 * A uint32_t rather than a byte: a char store may alias anything, so the
 * compiler would have to reload the pool's fields after each one (pool.h).
 *
 * Closing the inline paths (the inline protocol: arena/internal/compiler.h).
 * Under AddressSanitizer (or a checked build) the library must see every
 * transition, to poison free slots.  A program built with ASan never inlines
 * (level 1); a program built without it but linked to an instrumented
 * library sees `open == 0` (level 3), which fails both inline tests
 * (nfree - 1 < 0 and index < 0), so every call comes here.  Poisoning and
 * any future annotation go in take() and give().  The inline paths load the
 * pool's fields again after calling out, so a slow path (or an error
 * handler it calls) may change any of them.
 *
 * Tools.  Under ASan a free slot (freed, or never handed out) is poisoned.
 * Under Valgrind the slots are a mempool (anchored at base): a live object is
 * a MEMPOOL_ALLOC'd block of obj_size bytes, everything else is no-access.  A
 * checked build fills free slots with ARENA__CLOBBER and, outside ASan and
 * Valgrind (which see the write as it happens), verifies the fill when it
 * hands the slot out again, so a write after free is reported
 * (ARENA_ERR_CORRUPT); arena_pool_check() runs whenever the pool becomes empty
 * and at destroy.
 *
 * Costs: init and check are O(cap); alloc, free, owns and the counters O(1);
 * destroy O(1).  No call but init and destroy touches the backing allocator.
 */
#include <stdlib.h>
#include <string.h>

#include "arena/pool.h"
#include "arena/report.h"
#include "instrument.h"

/* Where the region's parts start, from one set of arguments. */
struct layout {
    size_t stride; /* slot size */
    size_t stack;  /* offset of the index stack */
    size_t state;  /* offset of the states */
    size_t total;  /* bytes from slot 0 to the end of the states */
};

/* What the library keeps of a pool in its reserved bytes. */
struct pool_extra {
    const char *name;         /* arena_pool_set_name(), or NULL */
    struct arena__node *node; /* its record in the registry (report.c), or NULL */
};

static struct pool_extra *extra(const arena_pool *p)
{
    return (struct pool_extra *)(void *)(uintptr_t)p->reserved.bytes;
}

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct pool_extra) <= sizeof(((arena_pool *)0)->reserved.bytes),
               "the pool's reserved bytes hold struct pool_extra");
#endif

/* The region's parts, typed (the struct holds their addresses as integers,
 * see pool.h). */
static char *slots_of(const arena_pool *p) { return (char *)p->base; }
static const uint32_t *stack_of(const arena_pool *p) { return (const uint32_t *)p->stack; }
static uint32_t *states_of(arena_pool *p) { return (uint32_t *)p->state; }

/* Fills `l`; false for arguments init refuses or sizes that overflow.
 * Every addition and product is checked before it is made. */
static bool plan(size_t obj_size, size_t obj_align, size_t capacity, struct layout *l)
{
    size_t size = obj_size ? obj_size : 1;
    size_t slots;

    if (capacity == 0 || !arena__is_pow2(obj_align))
        return false;
#if SIZE_MAX > UINT32_MAX /* (a 32-bit size_t cannot exceed it: -m32 warns) */
    if (capacity > UINT32_MAX)
        return false;
#endif
    if (size > SIZE_MAX - (obj_align - 1))
        return false;
    l->stride = (size_t)arena__align_up(size, obj_align);
    if (ARENA__MUL_OVERFLOWS(capacity, l->stride, &slots))
        return false;
    if (slots > SIZE_MAX - (sizeof(uint32_t) - 1))
        return false;
    l->stack = (size_t)arena__align_up(slots, sizeof(uint32_t));
    if (capacity > (SIZE_MAX - l->stack) / (2 * sizeof(uint32_t)))
        return false;
    l->state = l->stack + capacity * sizeof(uint32_t);
    l->total = l->state + capacity * sizeof(uint32_t);
    return true;
}

/* The inverse of odd `d` modulo 2^N: each Newton step doubles the correct
 * low bits, from 3 (d * d == 1 mod 8 for any odd d). */
static size_t inverse(size_t d)
{
    size_t x = d;
    int i;
    for (i = 0; i < 6; i++)
        x *= 2 - d * x;
    return x;
}

/* Sets up `p` over `base` (aligned to obj_align, l->total bytes): every slot
 * free and poisoned, slot 0 on top of the stack. */
static void lay_out(arena_pool *p, char *base, const struct layout *l, size_t obj_size,
                    size_t obj_align, size_t capacity)
{
    size_t j, d = l->stride, k = 0;
    uint32_t *stack = (uint32_t *)(void *)(base + l->stack);
    uint32_t *state = (uint32_t *)(void *)(base + l->state);

    arena__ask_valgrind(); /* before `open` and the slots are decided */
    while ((d & 1) == 0) {
        d >>= 1;
        k++;
    }
    p->base = (uintptr_t)base;
    p->stack = (uintptr_t)stack;
    p->state = (uintptr_t)state;
    p->inv = inverse(d);
    p->stride = l->stride;
    p->shift = k;
    p->cap = capacity;
    p->nfree = capacity;
    p->open = arena__instrumented() ? 0 : capacity; /* level 3 of the inline protocol */
    p->obj_size = obj_size ? obj_size : 1;
    p->obj_align = obj_align;
    for (j = 0; j < capacity; j++) {
        stack[j] = (uint32_t)(capacity - 1 - j);
        state[j] = ARENA__POOL_NEVER;
    }
    arena__slots_made(base, capacity * l->stride);
}

bool arena_pool_init(arena_pool *p, size_t obj_size, size_t obj_align, size_t capacity,
                     const arena_allocator *backing)
{
    struct layout l;
    arena_allocator b = {NULL, NULL, NULL};
    size_t slack, n;
    void *block;

    if (backing && backing->alloc)
        b = *backing; /* before the memset: it may point into *p */
    memset(p, 0, sizeof *p);
    if (!plan(obj_size, obj_align, capacity, &l))
        return false;
    /* The backing allocator aligns to ARENA_ALIGN; pad for more. */
    slack = obj_align > ARENA_ALIGN ? obj_align - ARENA_ALIGN : 0;
    if (l.total > SIZE_MAX - slack)
        return false;
    n = l.total + slack;
    block = arena__back_alloc(&b, n);
    if (!block)
        return false;
    lay_out(p, (char *)block + arena__pad((uintptr_t)block, obj_align), &l, obj_size, obj_align,
            capacity);
    p->block = block;
    p->block_size = n;
    p->backing = b;
    return true;
}

size_t arena_pool_buffer_size(size_t obj_size, size_t obj_align, size_t capacity)
{
    struct layout l;
    return plan(obj_size, obj_align, capacity, &l) ? l.total : 0;
}

bool arena_pool_init_buffer(arena_pool *p, void *buf, size_t len, size_t obj_size, size_t obj_align,
                            size_t capacity)
{
    struct layout l;
    size_t align;

    memset(p, 0, sizeof *p);
    if (!buf || !plan(obj_size, obj_align, capacity, &l) || len < l.total)
        return false;
    align = obj_align > ARENA_ALIGN ? obj_align : ARENA_ALIGN;
    if ((uintptr_t)buf & (uintptr_t)(align - 1))
        return false;
    lay_out(p, (char *)buf, &l, obj_size, obj_align, capacity);
    return true;
}

void arena_pool_destroy(arena_pool *p)
{
    if (ARENA_CHECKED && p->cap)
        arena_pool_check(p);
    arena__unregister_object(extra(p)->node);
    if (p->cap)
        arena__slots_gone(slots_of(p), p->cap * p->stride);
    if (p->block)
        arena__back_free(&p->backing, p->block, p->block_size);
    memset(p, 0, sizeof *p);
}

/* ---- Transitions: the one place a slot changes state out of line ------------- */

/* Checked build, outside ASan and Valgrind: a free slot must still hold the
 * clobber pattern when it is handed out again. */
static void verify_free_slot(const arena_pool *p, const unsigned char *obj)
{
    size_t j;
    if (!ARENA_CHECKED || ARENA__ASAN || ARENA__VALGRIND)
        return;
    for (j = 0; j < p->stride; j++) {
        if (obj[j] != ARENA__CLOBBER) {
            arena__report(ARENA__ABOUT_POOL(p), ARENA_ERR_CORRUPT,
                          "arena_pool_alloc: pool %p: slot %p was written after it was freed "
                          "(byte %zu)",
                          (const void *)p, (const void *)obj, j);
            return;
        }
    }
}

static void *take(arena_pool *p)
{
    arena__pool_regs r = arena__pool_load(p);
    void *obj = slots_of(p) + arena__pool_pop(&r) * p->stride;
    p->nfree = r.nfree;
    verify_free_slot(p, (const unsigned char *)obj);
    arena__slot_taken(slots_of(p), obj, p->obj_size);
    return obj;
}

static void give(arena_pool *p, void *obj, size_t i)
{
    arena__pool_regs r = arena__pool_load(p);
    arena__slot_given(slots_of(p), obj, p->obj_size, p->stride);
    arena__pool_push(&r, i);
    p->nfree = r.nfree;
    if (ARENA_CHECKED && p->nfree == p->cap)
        arena_pool_check(p);
}

void *arena__pool_alloc_slow(arena_pool *p) { return p->nfree ? take(p) : NULL; }

/* Says why `obj`, which is no slot start, was refused. */
static void report_foreign(const arena_pool *p, void *obj)
{
    uintptr_t at = (uintptr_t)obj, base = p->base;
    size_t span = p->cap * p->stride;

    if (p->cap && at >= base && at - base < span)
        arena__report(ARENA__ABOUT_POOL(p), ARENA_ERR_FOREIGN_POINTER,
                      "arena_pool_free: %p is inside slot %zu of pool %p (at offset %zu), not "
                      "at its start",
                      obj, (size_t)(at - base) / p->stride, (const void *)p,
                      (size_t)(at - base) % p->stride);
    else
        arena__report(ARENA__ABOUT_POOL(p), ARENA_ERR_FOREIGN_POINTER,
                      "arena_pool_free: %p is not in pool %p (storage at %p, %zu bytes)", obj,
                      (const void *)p, (void *)slots_of(p), span);
}

void arena__pool_free_slow(arena_pool *p, void *obj)
{
    size_t i;
    const uint32_t *state = states_of(p);

    if (!obj) {
        arena__report(ARENA__ABOUT_POOL(p), ARENA_ERR_NULL_FREE,
                      "arena_pool_free: NULL pointer given to pool %p", (void *)p);
        return;
    }
    i = arena__pool_index(p, obj);
    if (i >= p->cap) {
        report_foreign(p, obj);
        return;
    }
    if (state[i] != ARENA__POOL_LIVE) {
        arena__report(ARENA__ABOUT_POOL(p), ARENA_ERR_DOUBLE_FREE,
                      "arena_pool_free: double free of %p (slot %zu of pool %p is already free: "
                      "%s)",
                      obj, i, (void *)p,
                      state[i] == ARENA__POOL_NEVER ? "never handed out" : "freed earlier");
        return;
    }
    give(p, obj, i);
}

/* ---- Consistency ---------------------------------------------------------------- */

#define SEEN 0x80000000u /* marks a state while check walks the stack */

/* The fields must describe a region check can walk. */
static bool check_shape(const arena_pool *p)
{
    size_t d = p->shift < sizeof(size_t) * 8 ? p->stride >> p->shift : 0;
    struct layout l;

    if (p->cap == 0) {
        if (p->nfree || p->open || p->block)
            return arena__corrupt(ARENA__ABOUT_POOL(p),
                                  "arena_pool_check: pool %p: capacity 0 but %zu free slots",
                                  (const void *)p, p->nfree);
        return true;
    }
    if (!p->base || !p->stack || !p->state || !arena__is_pow2(p->obj_align) ||
        (p->base & (p->obj_align - 1)))
        return arena__corrupt(ARENA__ABOUT_POOL(p),
                              "arena_pool_check: pool %p: storage %p is missing or misaligned",
                              (const void *)p, (void *)slots_of(p));
    if ((d & 1) == 0 || (d << p->shift) != p->stride || d * p->inv != 1 ||
        !plan(p->obj_size, p->obj_align, p->cap, &l) || l.stride != p->stride ||
        p->stack != p->base + l.stack || p->state != p->base + l.state)
        return arena__corrupt(
            ARENA__ABOUT_POOL(p),
            "arena_pool_check: pool %p: stride %zu (shift %zu, inverse %zx) or layout "
            "does not fit %zu objects of %zu bytes at alignment %zu",
            (const void *)p, p->stride, p->shift, p->inv, p->cap, p->obj_size, p->obj_align);
    if (p->nfree > p->cap || (p->open != 0 && p->open != p->cap))
        return arena__corrupt(ARENA__ABOUT_POOL(p),
                              "arena_pool_check: pool %p: %zu free slots (inline bound %zu) of %zu",
                              (const void *)p, p->nfree, p->open, p->cap);
    return true;
}

bool arena_pool_check(arena_pool *p)
{
    uint32_t *st = states_of(p);
    const uint32_t *stack = stack_of(p);
    size_t i, j, nfree = 0, bad = 0;
    const char *why = NULL;

    if (!check_shape(p))
        return false;
    for (i = 0; i < p->cap; i++) {
        if (st[i] > ARENA__POOL_FREED)
            return arena__corrupt(ARENA__ABOUT_POOL(p),
                                  "arena_pool_check: pool %p: slot %zu has state %u",
                                  (const void *)p, i, (unsigned)st[i]);
        nfree += st[i] != ARENA__POOL_LIVE;
    }
    if (nfree != p->nfree)
        return arena__corrupt(
            ARENA__ABOUT_POOL(p),
            "arena_pool_check: pool %p: %zu slots are free but the free stack holds "
            "%zu",
            (const void *)p, nfree, p->nfree);
    /* Every stack entry must name a distinct free slot; with the count above,
     * the stack then names every free slot exactly once.  Mark as we go. */
    for (j = 0; j < p->nfree && !why; j++) {
        i = stack[j];
        if (i >= p->cap)
            why = "out of range";
        else if (st[i] & SEEN)
            why = "named twice";
        else if (st[i] == ARENA__POOL_LIVE)
            why = "live";
        else
            st[i] |= SEEN;
        bad = j;
    }
    /* Restore the marks before anything is reported. */
    for (j = 0; j < p->nfree; j++) {
        i = stack[j];
        if (i < p->cap)
            st[i] &= ~SEEN;
    }
    if (why)
        return arena__corrupt(
            ARENA__ABOUT_POOL(p),
            "arena_pool_check: pool %p: free stack entry %zu names slot %zu, which "
            "is %s",
            (const void *)p, bad, (size_t)stack[bad], why);
    return true;
}

/* ---- Figures and names ------------------------------------------------------------ */

/* Slots are handed out from the free stack, whose bottom holds, in order,
 * the slots never handed out (slot 0 on top at init): one of them is popped
 * only when every slot above it is live.  So the slots ever handed out are
 * [0, k) for some k, which is the most ever live at once; their states are
 * not ARENA__POOL_NEVER, the others' are. */
static size_t peak_used(const arena_pool *p)
{
    const uint32_t *state = (const uint32_t *)p->state;
    size_t lo = 0, hi = p->cap; /* the answer is in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (state[mid] != ARENA__POOL_NEVER)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void arena_pool_get_stats(const arena_pool *p, arena_pool_stats *out)
{
    size_t storage = p->block_size;
    memset(out, 0, sizeof *out);
    out->name = extra(p)->name;
    if (!p->cap)
        return;
    if (!p->block) { /* a caller's buffer: the part the pool lays out (init planned it) */
        struct layout l;
        storage = plan(p->obj_size, p->obj_align, p->cap, &l) ? l.total : p->cap * p->obj_size;
    }
    out->capacity = p->cap;
    out->used = p->cap - p->nfree;
    out->peak_used = peak_used(p);
    out->slot_size = p->stride;
    out->stored = out->used * p->obj_size;
    out->held = p->block_size;
    out->waste = storage - p->cap * p->obj_size;
    out->backing_calls = p->block ? 1 : 0;
}

void arena_pool_set_name(arena_pool *p, const char *name)
{
    extra(p)->name = name;
    if (extra(p)->node)
        arena__publish_pool(extra(p)->node, name, p->block_size, p->cap);
}

const char *arena_pool_name(const arena_pool *p) { return extra(p)->name; }

bool arena_pool_register(arena_pool *p)
{
    struct arena__node *n;
    if (extra(p)->node)
        return true;
    n = arena__register_object(ARENA__NODE_POOL, p);
    if (!n)
        return false;
    arena__publish_pool(n, extra(p)->name, p->block_size, p->cap);
    extra(p)->node = n;
    return true;
}
