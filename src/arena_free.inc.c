/* SPDX-License-Identifier: MIT */
/*
 * Free, realloc and the blocks given back (the lists: src/reuse.c; pages:
 * src/pages.c).
 *
 * Every call told a size follows one rule: a value holds the bytes it was
 * asked for, and any such call (arena_free(), arena_realloc(), the hooks
 * of hooks.h) may give it back or resize it, whichever call stored it.
 * Where a value lies decides what else goes back with its bytes:
 *
 *   - a value in a page (plain build, at most ARENA__PAGE_BLOCK_MAX bytes,
 *     placed by a reusing call): its class's block, which the page's
 *     header tells from the value's address (pages.h);
 *   - a value after a head (plain build, a larger one placed by a reusing
 *     call): the block the head records, [head, head + extent), its
 *     alignment padding and any remainder too small to file included;
 *   - any other value (bare: placed by arena_alloc() and its kin, or by
 *     arena_alloc_reuse() while the batch had given nothing back): its own
 *     bytes only.  What follows a bare value's last byte may be another
 *     value: one stored at an alignment below ARENA_ALIGN (a string) starts
 *     right there.  The instrumented builds guard every value and know its
 *     extent, so that every value there is of this kind.
 *
 * So the blocks that reusing calls hand out go back whole and lie side by
 * side with the blocks around them, which merging joins again: what an
 * arena holds follows what is live under any pattern of frees.
 *
 * A head is 16 bytes before its value: the block's extent, and a key that
 * mixes it with the head's address, the arena, the lists' epoch and the
 * process's secret.  Only a head written by this arena in the lists'
 * current epoch passes: a reset, a rewind or a release ends an epoch
 * (reuse.c: revive() draws each from one count for the process), so no
 * head outlives its batch, and the bytes before a bare value, whatever they
 * hold, pass only by forgery.  A head is read where it lies in the value's
 * own OS page, or in its chunk: reading it never faults.
 *
 * A part of src/arena.c, which includes it (see there): never compiled
 * alone.
 */
#ifndef ARENA__IN_ARENA_C
#  error "src/arena_free.inc.c is a part of src/arena.c, never compiled alone"
#endif

/* ---- The most recent value ------------------------------------------------------------------ */

/* Resizes the most recent value `p` of the current chunk in place. */
static void resize_last(arena *a, char *p, size_t old_size, size_t new_size)
{
    guard_keep(a, &arena__cold(a)->guard, old_size, new_size);
    arena__value_resizing(a, p, old_size);
    set_cursor(a, p + arena__guarded_len(p, new_size, arena__cold(a)->lim));
    a->size = a->size - old_size + new_size;
    arena__value_resized(&a->chunks[a->cur], p, old_size, new_size);
    /* A placement that held this value, or the bytes it shrinks off, is
     * the position's now (arena__reuse_log_trim()). */
    if (arena__instrumented())
        arena__reuse_log_trim(a, a->chunks[a->cur].base,
                              new_size < old_size ? cursor(a) : p - arena__hdr());
}

/* Whether `p`, of `n` bytes, is the most recent value of the current chunk:
 * it ends (with its guard) at the position. */
static bool is_last(const arena *a, const char *p, size_t n)
{
    const char *pos = cursor(a), *lim = current_lim(a);
    return lim && p >= a->chunks[a->cur].base && p <= pos && n <= (size_t)(lim - p) &&
           pos == p + arena__guarded_len(p, n, lim);
}

/* ---- What a value holds --------------------------------------------------------------------- */

const struct arena__chunk *arena__chunk_of(const arena *a, const char *p)
{
    uint32_t i;
    for (i = a->nused; i-- > 0;)
        if ((uintptr_t)p - (uintptr_t)a->chunks[i].base < a->chunks[i].cap)
            return &a->chunks[i];
    return NULL;
}

/* The block of a value given back or resized: what it holds. */
enum kind { HELD_BARE, HELD_PAGE, HELD_HEAD };
struct held {
    enum kind kind;
    char *from; /* HELD_PAGE, HELD_HEAD: the block's start */
    size_t len; /* its length */
    unsigned c; /* HELD_PAGE: the class */
};

/* Whether the head before the value `p` may be read: in p's own OS page,
 * or else in p's chunk. */
static bool head_readable(const arena *a, const char *p)
{
    const struct arena__chunk *c;
    if (((uintptr_t)p & ARENA__PAGE_MASK) >= ARENA__HEAD)
        return true;
    c = arena__chunk_of(a, p);
    return c && (uintptr_t)p - (uintptr_t)c->base >= ARENA__HEAD;
}

/* What the value `p` of `n` bytes of `a` holds (plain build), in *h; false
 * after a report of misuse that its page shows (a pointer inside a block,
 * a block given back already, another arena's block). */
static bool held_by(const arena *a, const char *p, size_t n, const char *fn, struct held *h)
{
    const arena *owner;
    size_t block;
    uintptr_t page;

    h->kind = HELD_BARE;
    if (!arena__paging() || !(a->pending & ARENA__PENDING_REUSE) || n == 0)
        return true;
    if (n <= ARENA__PAGE_BLOCK_MAX && (page = arena__page_of(p, &owner, &block)) != 0) {
        if (!arena__page_on_boundary(p, page, block) || owner != a)
            return !arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_FOREIGN_POINTER,
                                   "%s: %p is not the start of a live value of arena %p", fn,
                                   (const void *)p, (const void *)a);
        if (arena__page_is_freed(p, block))
            return !arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_DOUBLE_FREE,
                                   "%s: the value at %p of arena %p was freed already", fn,
                                   (const void *)p, (const void *)a);
        if (n > block)
            return !arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_BAD_SIZE,
                                   "%s: size %zu exceeds the %zu-byte block of the value at %p "
                                   "(arena %p)",
                                   fn, n, block, (const void *)p, (const void *)a);
        h->kind = HELD_PAGE;
        h->from = (char *)(uintptr_t)p;
        h->len = block;
        h->c = arena__page_class_at(block);
        return true;
    }
    if (head_readable(a, p)) {
        size_t extent = arena__head_extent(a, p - ARENA__HEAD);
        if (extent) {
            h->kind = HELD_HEAD;
            h->from = (char *)(uintptr_t)p - ARENA__HEAD;
            h->len = extent;
        }
    }
    return true;
}

/* ---- Taking free blocks --------------------------------------------------------------------- */

/* The bytes of a free block that a value of `n` bytes takes from its start:
 * the value, and when instrumented its header and guard. */
static size_t block_need(size_t n)
{
    if (!arena__instrumented())
        return n;
    return arena__hdr() + ((n + ARENA__GRANULE - 1) & ~(ARENA__GRANULE - 1)) + ARENA__GRANULE;
}

/* Whether the lists may hold a block of `n` bytes: they are valid and the
 * arena is under its limit.  Tested inline, so that a batch with no free
 * block pays a load and a branch, not the call and the saved registers of
 * the search. */
static ARENA__ALWAYS_INLINE bool reuse_open(const arena *a, size_t n)
{
    return (a->pending & (ARENA__PENDING_REUSE | ARENA__PENDING_OVER)) == ARENA__PENDING_REUSE &&
           n <= SIZE_MAX / 4;
}

/* A free block of `need` bytes at least, unlinked, its length in *len: from
 * the lists, merged first where they hold none (reuse.c). */
static char *take_free(arena *a, size_t need, size_t *len)
{
    char *s = arena__reuse_take(a, need, len);
    if (!s && arena__reuse_merge(a))
        s = arena__reuse_take(a, need, len);
    return s;
}

/* A free block of `need` bytes at least whose rest is at most `spare` bytes,
 * which the value's block then keeps, or with `split` one whose rest makes a
 * block of its own (it holds `need` and a node after it, rounded up to
 * ARENA_ALIGN); NULL when there is none.  So no remainder too small to file
 * separates the blocks given back later by more than `spare`. */
static char *take_fitting(arena *a, size_t need, size_t spare, bool split, size_t *len)
{
    size_t whole = (size_t)arena__align_up(need, ARENA_ALIGN) + arena__reuse_min();
    char *s = take_free(a, need, len);
    if (!s || *len - need <= spare || (split && *len >= whole))
        return s;
    (void)arena__reuse_file(a, s, *len);
    return split ? take_free(a, whole, len) : NULL;
}

/* Files the part of the block [s, end) that a value leaves from `to` on,
 * when it can be a block of its own; returns where the value's block ends. */
static char *file_rest(arena *a, char *to, char *end)
{
    if (to >= end || (size_t)(end - to) < arena__reuse_min())
        return end;
    (void)arena__reuse_file(a, to, (size_t)(end - to));
    return to;
}

/* A bare value of `n` (> 0) bytes, ARENA_ALIGN-aligned, in a free block of
 * this batch; NULL when no block holds it (with `tight`, none that it fills
 * but for less than ARENA_ALIGN bytes).  What the value leaves of the block
 * (rounded up to ARENA_ALIGN) is filed again where it makes a block; an
 * instrumented build takes no block whose rest could not, but for what its
 * merges join across (what no value fits in: see reuse.c), since a value
 * freed gives back what its guard covers.  Only where reuse_open(). */
static ARENA__NOINLINE void *take_listed(arena *a, size_t n, bool tight)
{
    const struct arena__chunk *c = NULL;
    size_t need, len;
    char *s, *p, *to, *end;
    bool logged;

    /* A rewind to a mark taken before this placement must find it. */
    logged = arena__instrumented() && a->saves > a->expired;
    if (logged && !arena__reuse_log_room(a))
        return NULL;
    need = block_need(n);
    if (tight)
        s = take_fitting(a, need, (size_t)arena__align_up(need, ARENA_ALIGN) - need, false, &len);
    else if (arena__instrumented())
        s = take_fitting(a, need, arena__reuse_gap(), true, &len);
    else
        s = take_free(a, need, &len);
    if (!s)
        return NULL;
    catch_up(a);
    end = s + len;
    p = s + arena__hdr();
    to = (char *)arena__align_up((uintptr_t)s + need, ARENA_ALIGN);
    if (to >= end || (size_t)(end - to) < arena__reuse_min())
        to = end;
    if (arena__instrumented()) {
        c = arena__chunk_of(a, p);
        if (!c) {
            arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_CORRUPT,
                          "arena: arena %p: a free block at %p lies in no chunk of it (its "
                          "list was overwritten)",
                          (void *)a, (void *)s);
            return NULL;
        }
        arena__instr_reused(a, c, s, p, n, to, len);
        if (logged)
            arena__reuse_log(a, c->base, s, to, p);
    }
    (void)file_rest(a, to, end);
    a->size += n;
    arena__cold(a)->counts.reused += n;
    published(a);
    return p;
}

/* Whether `need` bytes at ARENA_ALIGN fit the room left in the current
 * chunk. */
static bool fits_current(const arena *a, size_t need)
{
    const char *lim = arena__cold(a)->lim;
    uintptr_t at;
    if (!lim)
        return false;
    at = arena__align_up((uintptr_t)cursor(a), ARENA_ALIGN);
    return at <= (uintptr_t)lim && need <= (size_t)((uintptr_t)lim - at);
}

/* A value of `n` bytes after a head (plain build) in a free block of the
 * lists, else bare in a block that holds it but not its head, else, unless
 * `listed_only`, after a head placed anew; NULL when there is none or on
 * failure (arena unchanged).  A large value's block is a whole class
 * (arena__class_round()) where that fits a chunk of the chunk size, a small
 * one's (a page's class had none) its value's size; one past the chunk size
 * takes a chunk of its own, bare. */
static void *place_headed(arena *a, size_t n, bool listed_only)
{
    size_t need, len;
    uint32_t chunk;
    char *h, *end;

    if (n > SIZE_MAX / 4)
        return NULL;
    need = (size_t)arena__align_up(ARENA__HEAD + n, ARENA_ALIGN);
    /* Without the lists (their table could not be had), the value goes
     * bare. */
    if (!arena__reuse_live(a))
        return listed_only ? NULL : place(a, n, ARENA_ALIGN, &chunk);
    if (n > ARENA__PAGE_BLOCK_MAX && arena__class_round(need) <= arena__chunk_size(a))
        need = arena__class_round(need);
    h = take_free(a, need, &len);
    if (h) {
        end = file_rest(a, h + need, h + len);
        arena__cold(a)->counts.reused += n;
    } else {
        void *p;
        /* A block that holds the value but not its head, with less than a
         * granule to spare (one that a bare value of the same size left),
         * takes it bare. */
        if (reuse_open(a, n) && (p = take_listed(a, n, true)) != NULL)
            return p;
        if (listed_only)
            return NULL;
        /* A value past the chunk size takes a chunk of its own, where
         * nothing follows it. */
        if (need > arena__chunk_size(a))
            return place(a, n, ARENA_ALIGN, &chunk);
        /* Placed anew: a whole class where the current chunk has room for
         * one, else just what the value takes, rather than a new chunk. */
        if (!fits_current(a, need) && fits_current(a, ARENA__HEAD + n))
            need = (size_t)arena__align_up(ARENA__HEAD + n, ARENA_ALIGN);
        h = place_as(a, need, ARENA_ALIGN, &chunk, false);
        if (!h)
            return NULL;
        end = h + need;
    }
    arena__head_write(a, h, (size_t)(end - h));
    a->size += n;
    published(a);
    return h + ARENA__HEAD;
}

/* The values of a class placed after a head before the class takes pages
 * (counted over the arena's batches): a page of 4 KiB for each class a
 * batch touches would cost a small arena more than its values; the heads
 * cost 16 bytes each.  An
 * arena whose chunks are smaller than PAGE_CHUNKS pages takes none (each
 * region of pages would be a chunk of its own). */
#define PAGE_AFTER  32
#define PAGE_CHUNKS 4

/* A value of `n` (> 0, at most ARENA__PAGE_BLOCK_MAX) bytes (plain build),
 * where arena__small_take() found no block of its page class at once;
 * NULL on failure.  Until the class has had PAGE_AFTER values, the value
 * goes after a head, in a free block of the lists, else placed anew.  Then
 * it takes the first of: a block of a page carved from memory given back
 * (a free block of the lists that holds a whole page), a place after a head
 * in a free block too small for a page, the same once the lists are tidied
 * (pages whose blocks are all free recycled, blocks merged, each where due),
 * a block of a page of new memory, a bare place.  The order is
 * arena_cur_malloc()'s.  A class whose pages were full took no page while
 * the lists held a block for its value after a head, so a Lua state whose
 * classes outgrew their pages placed half its values after heads, through
 * the general paths, for good (client/lua/tables 1.3x the time).  The
 * lists are tidied only when they hold no block for the value: tidied each
 * time a class's page ran out, a Lua state's lists of thousands of blocks
 * were sorted and merged over and over (2.2x the time). */
static void *place_small(arena *a, size_t n, unsigned c)
{
    struct arena__pages *pg = arena__pages_of(a);
    void *p;
    uint32_t chunk;
    bool tidied = false;

    if (!pg)
        return place(a, n, ARENA_ALIGN, &chunk);
    if (arena__cold(a)->reuse->placed[c] < PAGE_AFTER ||
        arena__chunk_size(a) < PAGE_CHUNKS * ARENA__PAGE) {
        p = place_headed(a, n, false);
        if (p && arena__cold(a)->reuse->placed[c] < PAGE_AFTER)
            arena__cold(a)->reuse->placed[c]++;
        return p;
    }
    for (;;) {
        while (arena__page_refill(a, pg, c, false, "arena_alloc_reuse"))
            if ((p = arena__small_take_in(a, n, c)) != NULL)
                return p;
        if ((p = place_headed(a, n, true)) != NULL || tidied)
            break;
        arena__pages_tidy(a);
        tidied = true;
    }
    if (p)
        return p;
    while (arena__page_refill(a, pg, c, true, "arena_alloc_reuse"))
        if ((p = arena__small_take_in(a, n, c)) != NULL)
            return p;
    return place(a, n, ARENA_ALIGN, &chunk);
}

void *arena__reuse_alloc(arena *a, size_t n) { return arena__reuse_alloc_as(a, n, 0); }

void *arena__reuse_alloc_as(arena *a, size_t n, unsigned how)
{
    void *p;
    if (n == 0)
        return arena__zero_size_value(ARENA_ALIGN);
    if (lazy_full(a, n, ARENA_ALIGN))
        return NULL;
    catch_up(a);
    if (ARENA__UNLIKELY(a->pending & ARENA__PENDING_OVER)) {
        uint32_t chunk;
        return place(a, n, ARENA_ALIGN, &chunk); /* refused, and told */
    }
    if (arena__paging()) {
        if (n <= ARENA__PAGE_BLOCK_MAX && !(how & ARENA__PLACE_NO_PAGES)) {
            unsigned c = arena__small_class_as(n, how);
            return (p = arena__small_take_in(a, n, c)) != NULL ? p : place_small(a, n, c);
        }
        return place_headed(a, n, false);
    }
    if (reuse_open(a, n) && (p = take_listed(a, n, false)) != NULL) {
        return p;
    }
    return arena__alloc_slow(a, n, ARENA_ALIGN);
}

void *arena__reuse_alloc_listed(arena *a, size_t n)
{
    if (n == 0 || !arena__paging() || a->lazy || !reuse_open(a, n))
        return NULL;
    catch_up(a);
    return place_headed(a, n, true);
}

/* arena_alloc_reuse() where the lists are open. */
static ARENA__NOINLINE void *alloc_listed(arena *a, size_t size)
{
    void *p;
    /* The head of its class's list, or its page's next block, inline. */
    if (size <= ARENA__PAGE_BLOCK_MAX ? (p = arena__small_take(a, size)) != NULL
                                      : (p = arena__headed_take(a, size)) != NULL)
        return p;
    return arena__reuse_alloc(a, size);
}

void *arena_alloc_reuse(arena *a, size_t size)
{
    /* A batch with no free block bumps with no call and no saved register. */
    if (size && reuse_open(a, size))
        return alloc_listed(a, size);
    return arena_alloc(a, size);
}

/* ---- Giving values back --------------------------------------------------------------------- */

/* Reports a value that arena_free() or an adapter may not give back, in an
 * instrumented build (where the chunks, and in the checked build the
 * headers, tell); true when reported.  `*n` becomes the value's size as
 * recorded (the checked build's header). */
static bool free_misused(const arena *a, const char *p, size_t *n,
                         const struct arena__chunk **chunk)
{
    uint64_t size = *n;
    int state = 2;

    *chunk = arena__chunk_of(a, p);
    if (*chunk)
        state = arena__instr_free_state(a, *chunk, p, *n, &size);
    if (state == 1)
        return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_DOUBLE_FREE,
                              "arena_free: the value at %p of arena %p was freed already",
                              (const void *)p, (const void *)a);
    if (state == 2)
        return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_FOREIGN_POINTER,
                              "arena_free: %p is not the start of a live value of arena %p",
                              (const void *)p, (const void *)a);
    if (*n > size)
        return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_BAD_SIZE,
                              "arena_free: size %zu exceeds the %llu-byte value at %p (arena %p)",
                              *n, (unsigned long long)size, (const void *)p, (const void *)a);
    *n = (size_t)size;
    return false;
}

/* Reports a bare value that cannot be one of this batch's: it lies past the
 * position of the current chunk, or in no chunk in use (a spare's memory,
 * or another arena's, or a guarded batch's pages that the quarantine keeps
 * for this arena); true when reported.  A value given back after the reset
 * or rewind that ended its batch mostly lies there (the new batch has not
 * reached it yet); where the new batch has stored over it already, nothing
 * tells it from a value of the new batch. */
static ARENA__NOINLINE bool late_free_found(const arena *a, const char *p, size_t n, const char *fn)
{
    const struct arena__chunk *c = arena__chunk_of(a, p);
    const char *pos = cursor(a), *lim = current_lim(a);
    bool in_current = c && lim && c->base + c->cap == lim && pos && p + n > pos;
    uint32_t i;

    if (c && !in_current)
        return false;
    for (i = a->nused; !c && i < a->nchunks; i++)
        if ((uintptr_t)p - (uintptr_t)a->chunks[i].base < a->chunks[i].cap)
            in_current = true; /* a spare chunk's memory */
    if (!c && arena__guard_retired_by(p, arena__cold(a)->guard.id))
        in_current = true; /* a guarded batch's pages, in the quarantine */
    if (in_current)
        return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_LATE_FREE,
                              "%s: the %zu-byte value at %p lies beyond what arena %p has "
                              "stored in this batch: given back after the reset, rewind or "
                              "release that ended its batch",
                              fn, n, (const void *)p, (const void *)a);
    return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_FOREIGN_POINTER,
                          "%s: %p lies in no chunk of arena %p", fn, (const void *)p,
                          (const void *)a);
}

static inline bool late_free(const arena *a, const char *p, size_t n, const char *fn)
{
    const char *pos = cursor(a);
    /* Most values given back lie below the position of the current chunk. */
    if (current_lim(a) && pos && p >= a->chunks[a->cur].base && p < pos && n <= (size_t)(pos - p))
        return false;
    return late_free_found(a, p, n, fn);
}

bool arena__stored_now(const arena *a, const void *ptr, size_t n)
{
    const char *p = (const char *)ptr;
    const struct arena__chunk *c = a->lazy ? NULL : arena__chunk_of(a, p);
    const char *pos = cursor(a), *lim = current_lim(a);

    if (!c || n > c->cap - (size_t)(p - c->base))
        return false;
    if (lim && c->base + c->cap == lim) /* the current chunk */
        return pos && p < pos && n <= (size_t)(pos - p);
    return true;
}

/* The block [from, from + len), which the arena no longer needs, goes back:
 * to the position when it ends there, else to the lists when it can hold a
 * node. */
static void give_block(arena *a, char *from, size_t len)
{
    char *s, *to = from + len;
    if (to == cursor(a) && current_lim(a) && from >= a->chunks[a->cur].base &&
        !arena__instrumented()) {
        set_cursor(a, from);
        return;
    }
    s = (char *)arena__align_up((uintptr_t)from, ARENA_ALIGN);
    if (s < to && (size_t)(to - s) >= arena__reuse_min())
        (void)arena__reuse_file(a, s, (size_t)(to - s));
}

/* The most recent value `p` of the current chunk, `held` bytes as placed,
 * goes back to the position; in an instrumented build with its header and
 * guard (the chunk `c`), so that a value freed as it was stored leaves
 * nothing behind.  (While a mark is live the checked build keeps the
 * header, a value of no bytes: its rewind's cut finds the values stored
 * after the mark by their headers.) */
static void unplace_last(arena *a, char *p, size_t held, const struct arena__chunk *c)
{
    char *from;
    if (!arena__instrumented() || !c || (ARENA_CHECKED && a->saves > a->expired)) {
        resize_last(a, p, held, 0);
        return;
    }
    from = p - arena__hdr();
    resize_last(a, p, held, 0);
    (void)arena__instr_freed(a, c, from, p, 0, cursor(a));
    set_cursor(a, from);
    arena__reuse_log_trim(a, c->base, from);
}

/* arena_free() of a value whose caller counts `size` bytes (arena_realloc()
 * may be told less than the value holds).  `note`: the size before it is
 * a figure the program saw, to note as the batch's high point (not when the
 * call placed the value that replaces it first: arena_realloc()). */
static void free_value(arena *a, char *p, size_t size, bool note)
{
    const struct arena__chunk *c = NULL;
    struct held h;
    char *from = p, *to;
    size_t held = size;

    if (!p || size == 0)
        return;
    wake(a);
    /* Reported before catch_up(): the arena's bytes stay as they were.  An
     * instrumented build knows every value's chunk: a late free is told
     * apart there first. */
    if (arena__instrumented() &&
        (late_free(a, p, size, "arena_free") || free_misused(a, p, &held, &c)))
        return;
    if (!held_by(a, p, size, "arena_free", &h))
        return;
    if (h.kind == HELD_HEAD && size > h.len - ARENA__HEAD) {
        arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_BAD_SIZE,
                       "arena_free: size %zu exceeds the %zu-byte block of the value at %p "
                       "(arena %p)",
                       size, h.len - ARENA__HEAD, (void *)p, (void *)a);
        return;
    }
    catch_up(a);
    if (note)
        arena__note_high(a);
    switch (h.kind) {
    case HELD_PAGE:
        a->size -= size;
        arena__page_give(&arena__pages_live(a)->cls[h.c], p, h.len);
        return;
    case HELD_HEAD:
        a->size -= size;
        memset(h.from, 0, ARENA__HEAD); /* no longer a head */
        give_block(a, h.from, h.len);
        return;
    case HELD_BARE: break;
    }
    if (is_last(a, p, held)) {
        unplace_last(a, p, held, c);
        a->size += held - size;
        return;
    }
    if (!arena__instrumented() && late_free(a, p, size, "arena_free"))
        return;
    to = p + held;
    if (c) {
        from = p - arena__hdr();
        to = p + arena__guarded_len(p, held, c->base + c->cap);
        (void)arena__instr_freed(a, c, from, p, held, to);
    }
    a->size -= size;
    give_block(a, from, (size_t)(to - from));
}

void arena_free(arena *a, void *ptr, size_t size)
{
    /* A page's block or a block after a head goes back to its class's list
     * inline, as the adapters give one back (adapters.h). */
    if (ptr && size &&
        (size <= ARENA__PAGE_BLOCK_MAX ? arena__small_give(a, (char *)ptr, size)
                                       : arena__headed_give(a, (char *)ptr, size)))
        return;
    free_value(a, (char *)ptr, size, true);
}

void arena__free_placed(arena *a, void *ptr, size_t size)
{
    free_value(a, (char *)ptr, size, false);
}

/* ---- Resizing ------------------------------------------------------------------------------- */

/* Checked build: the size of the live value that starts at `p`, in *size;
 * false when p is not the start of one (in no chunk in use, or see
 * arena__value_size()).  The chunk is found before anything is loaded: the
 * current one first (where grown values mostly are), then the others, newest
 * first. */
static bool live_value_size(const arena *a, const char *p, uint64_t *size)
{
    const struct arena__chunk *c = NULL;
    const char *end = NULL;

    /* (Compared as integers: p may point anywhere.) */
    if (arena__cold(a)->lim &&
        (uintptr_t)p - (uintptr_t)a->chunks[a->cur].base <
            (uintptr_t)arena__cold(a)->lim - (uintptr_t)a->chunks[a->cur].base) {
        c = &a->chunks[a->cur];
        end = cursor(a);
    }
    if (!c && (c = arena__chunk_of(a, p)) != NULL)
        end = c->base + c->cap;
    return c && arena__value_size(c, end, p, size);
}

/* Reports the misuse of arena_realloc() that can be seen: an old size that
 * reaches past the position, when `p` lies in the current chunk before it
 * (no live value does); in the checked build, a `p` that is not the start
 * of a live value, or an old size above the value's size.  Nothing is read
 * when old_size is 0, so nothing is checked then. */
static bool grow_misused(const arena *a, const char *p, size_t old_size)
{
    const char *pos, *lim;
    uint64_t n;

    if (old_size == 0)
        return false;
    if (ARENA_CHECKED) {
        if (!live_value_size(a, p, &n))
            return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_FOREIGN_POINTER,
                                  "arena_realloc: %p is not the start of a live value of arena %p",
                                  (const void *)p, (const void *)a);
        if (old_size > n)
            return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_BAD_SIZE,
                                  "arena_realloc: old size %zu exceeds the %llu-byte value at %p "
                                  "(arena %p)",
                                  old_size, (unsigned long long)n, (const void *)p,
                                  (const void *)a);
        return false;
    }
    pos = cursor(a);
    lim = current_lim(a);
    if (lim && p >= a->chunks[a->cur].base && p <= pos && old_size > (size_t)(pos - p))
        return arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_BAD_SIZE,
                              "arena_realloc: old size %zu of the value at %p reaches past the end "
                              "of what arena %p holds (%zu bytes from it)",
                              old_size, (const void *)p, (const void *)a, (size_t)(pos - p));
    return false;
}

/* The value `p`, not the most recent, shrinks in place from `old_size` to
 * `new_size` bytes: the bytes past it (with its guard) go back as a free
 * block. */
static void shrink_block(arena *a, char *p, size_t old_size, size_t new_size)
{
    char *from = p + new_size, *to = p + old_size;
    if (arena__instrumented()) {
        const struct arena__chunk *c = arena__chunk_of(a, p);
        uint64_t held;
        if (!c || arena__instr_free_state(a, c, p, old_size, &held) != 0)
            return;
        from = p + arena__guarded_len(p, new_size, c->base + c->cap);
        to = p + arena__guarded_len(p, (size_t)held, c->base + c->cap);
        arena__value_resized(c, p, (size_t)held, new_size);
    }
    a->size -= old_size - new_size;
    give_block(a, from, (size_t)(to - from));
}

/* A headed value `p` whose block `h` holds `new_size` bytes keeps it; what
 * the value no longer needs past it goes back when it makes a block. */
static void resize_headed(arena *a, char *p, const struct held *h, size_t old_size, size_t new_size)
{
    char *end = h->from + h->len;
    char *to = (char *)arena__align_up((uintptr_t)p + new_size, ARENA_ALIGN);
    a->size += new_size - old_size;
    if (to < end && (size_t)(end - to) >= arena__reuse_min() + ARENA__HEAD) {
        arena__head_write(a, h->from, (size_t)(to - h->from));
        give_block(a, to, (size_t)(end - to));
    }
}

/* A headed value `p` (block `h`) that ends at the position grows in place
 * when its chunk has room: true when it did. */
static bool grow_headed_last(arena *a, char *p, const struct held *h, size_t old_size,
                             size_t new_size)
{
    char *end = h->from + h->len, *lim = current_lim(a);
    uintptr_t to;
    if (end != cursor(a) || !lim || h->from < a->chunks[a->cur].base ||
        (a->pending & ARENA__PENDING_OVER) || new_size > (size_t)(lim - p))
        return false;
    to = arena__align_up((uintptr_t)p + new_size, ARENA_ALIGN);
    if (to > (uintptr_t)lim)
        to = (uintptr_t)lim;
    set_cursor(a, (char *)to);
    arena__head_write(a, h->from, (size_t)(to - (uintptr_t)h->from));
    a->size += new_size - old_size;
    return true;
}

/* The resize of a value in a page or after a head (plain build).  A growth
 * stays only where the block ends at the position and its chunk has room; a
 * shrink stays, but with `shrink_moves` (the adapters') for one that a
 * smaller block serves: to a smaller page class, or a large value's, not
 * the most recent, to a page.  Size 0 gives it back (`p` is returned). */
static void *resize_held(arena *a, char *p, const struct held *h, size_t old_size, size_t new_size,
                         unsigned how)
{
    bool shrink_moves = (how & ARENA__RESIZE_SHRINK_MOVES) != 0;
    bool stays;
    /* A shrink forgets bytes: the size before it is a figure the program
     * saw, noted before a move counts the copy. */
    if (new_size < old_size)
        arena__note_high(a);
    if (new_size == 0) {
        free_value(a, p, old_size, false);
        return p;
    }
    /* A growth stays only where the value ends at the position, as
     * arena_realloc() promises. */
    if (new_size > old_size)
        stays = h->kind == HELD_HEAD && grow_headed_last(a, p, h, old_size, new_size);
    else
        stays = !shrink_moves ||
                (h->kind == HELD_PAGE
                     ? arena__small_class_as(new_size, how) >= h->c
                     : new_size > ARENA__PAGE_BLOCK_MAX || h->from + h->len == cursor(a));
    if (stays && new_size > old_size)
        return p;
    if (!stays) {
        char *q = (char *)arena__reuse_alloc_as(a, new_size, how);
        if (q) {
            memcpy(q, p, old_size < new_size ? old_size : new_size);
            free_value(a, p, old_size, false);
            return q;
        }
        if (new_size > old_size)
            return NULL;
        /* A shrink that finds no room stays where it is. */
    }
    if (h->kind == HELD_HEAD)
        resize_headed(a, p, h, old_size, new_size);
    else
        a->size += new_size - old_size;
    return p;
}

void *arena__shrink_moving(arena *a, void *ptr, size_t old_size, size_t new_size, unsigned how)
{
    char *p = (char *)ptr, *q;
    struct held h;

    /* Reported before wake() and catch_up(): the arena's bytes stay as they were. */
    if (grow_misused(a, p, old_size) || !held_by(a, p, old_size, "arena_realloc", &h))
        return NULL;
    catch_up(a);
    if (h.kind != HELD_BARE)
        return resize_held(a, p, &h, old_size, new_size, how | ARENA__RESIZE_SHRINK_MOVES);
    arena__note_high(a);
    /* The shrink to nothing gives the value back: no value of no bytes is
     * left in place. */
    if (new_size == 0) {
        free_value(a, p, old_size, false);
        return p;
    }
    if (is_last(a, p, old_size)) {
        resize_last(a, p, old_size, new_size);
        return p;
    }
    q = (char *)arena__reuse_alloc_as(a, new_size, how);
    if (!q) {
        shrink_block(a, p, old_size, new_size);
        return p;
    }
    memcpy(q, p, new_size);
    free_value(a, p, old_size, false);
    return q;
}

void *arena_realloc(arena *a, void *ptr, size_t old_size, size_t new_size)
{
    return arena__realloc_as(a, ptr, old_size, new_size, 0);
}

void *arena__realloc_as(arena *a, void *ptr, size_t old_size, size_t new_size, unsigned how)
{
    char *p = (char *)ptr;
    char *lim = current_lim(a);
    char *q;
    bool last;
    struct held h;

    /* Reported before wake() and catch_up(): the arena's bytes stay as they were. */
    if (p && (grow_misused(a, p, old_size) || !held_by(a, p, old_size, "arena_realloc", &h)))
        return NULL;
    if (!p)
        return arena__alloc_slow(a, new_size, ARENA_ALIGN);
    if (old_size == 0) {
        /* A value of no bytes holds nothing: its shrink to nothing gave its
         * block back, where another value may lie now, and its head with
         * it.  Grown, it is a new value; it gives back nothing. */
        if (new_size == 0)
            return p;
        if (lazy_full(a, new_size, ARENA_ALIGN))
            return NULL;
        catch_up(a);
        return how ? arena__reuse_alloc_as(a, new_size, how) : arena_alloc_reuse(a, new_size);
    }
    if (h.kind != HELD_BARE) {
        catch_up(a);
        return resize_held(a, p, &h, old_size, new_size, how);
    }
    last = is_last(a, p, old_size);
    /* A growth that fails leaves a lazy arena unwoken (lazy_full()). */
    if (new_size > old_size && !(last && new_size <= (size_t)(lim - p)) &&
        lazy_full(a, new_size, ARENA_ALIGN))
        return NULL;
    catch_up(a);
    if (new_size <= old_size) {
        arena__note_high(a);
        if (new_size == 0) /* the shrink to nothing gives the value back */
            free_value(a, p, old_size, false);
        else if (last)
            resize_last(a, p, old_size, new_size);
        else if (new_size < old_size)
            shrink_block(a, p, old_size, new_size);
        return p;
    }
    if (last && new_size <= (size_t)(lim - p) && !(a->pending & ARENA__PENDING_OVER)) {
        resize_last(a, p, old_size, new_size);
        return p;
    }
    q = (char *)(how ? arena__reuse_alloc_as(a, new_size, how) : arena_alloc_reuse(a, new_size));
    if (q) {
        memcpy(q, p, old_size);
        free_value(a, p, old_size, false);
    }
    return q;
}
