/* SPDX-License-Identifier: MIT */
/*
 * Reuse: the index of blocks given back within a batch.
 *
 * A value freed before its batch ends (arena_free() of a value that is not
 * the most recent, an adapter's free, the old place of a value that
 * arena_realloc() moved) becomes a free block.  The reusing allocations
 * (the adapters, arena_alloc_reuse(), a moving arena_realloc()) take free
 * blocks before they bump.  So the memory of a client that frees follows
 * what it holds, not everything it ever allocated.  arena_alloc() never looks
 * here, so its inline path stays what it was.
 *
 * Classes.  A block of `len` bytes (at least arena__reuse_min()) is filed in
 * the class whose lower bound is the largest at or below len: 16-byte steps
 * below 256 bytes, then eight classes per doubling, so bounds are at most
 * 12.5% apart; blocks above 2^36 bytes share the last class.  Each class is
 * a LIFO list threaded through the blocks themselves, and a bitmap says
 * which lists hold a block.
 *
 * Fit.  A request of `need` bytes takes the first of:
 *
 *   1. the head of the smallest class whose every block holds it, exact and
 *      with no search (a reusing call places a large value in a whole
 *      class, arena__class_round(), so that the block it gives back fits
 *      the next value of that class);
 *   2. the first of FIT_SCAN blocks of the class below that holds it (the
 *      exact sizes of bare values given back);
 *   3. the head of the smallest larger class that holds a block.  The
 *      caller splits it, and files the rest as a block of its own when it
 *      can hold one (arena_free.inc.c: file_rest()).  Where the caller asks
 *      a tight fit, it files the block again instead (arena_free.inc.c:
 *      take_fitting()).
 *
 * Small values seldom come here: once their class has pages (pages.c),
 * they take its page blocks, and a page that empties goes back to these
 * lists whole.
 *
 * Merging.  A value that grows a little at a time (a string built by
 * appends, its older copies freed later) asks for each size once, so the
 * blocks it leaves fit no later request of their class.  Where a reusing
 * call finds no block, the lists are merged (arena__reuse_merge()) and
 * searched again.  Their blocks are gathered into an array (or, past
 * MERGE_SPANS, a list) and sorted by address.  Blocks that lie side by side
 * in one chunk become one, filed again by its length, chunk by chunk in the
 * index's order.  So what the lists hand out next never depends on where
 * the backing put the chunks: a run is repeatable, and a failure sweep
 * meets the same calls.  Pages whose every block is free are recycled
 * first (recycle(): their headers erased, each filed as a block of
 * ARENA__PAGE bytes), so that they join their neighbours.  An
 * arena with more than MERGE_CHUNKS chunks in use does not merge.  Side by
 * side: touching in a plain build; in an instrumented one, apart by less
 * than arena__reuse_gap() (the padding before an aligned header, and the
 * redzone a sanitizer keeps).  An instrumented arena does not merge while
 * a mark is live: its rewind verifies and closes from the mark's position
 * on, which must not lie inside a block that joins values placed before
 * the mark to values placed after it.  (A plain build's rewind reads
 * nothing there, and what was placed after the mark dies with it.)  A
 * merge runs only once as many blocks were filed since the last one as it
 * left (and MERGE_MIN at least), and a recycling only once as many page
 * blocks were given back since the last one as it left, so that their O(n)
 * is paid for by as many frees.  A list that does not decode, loops (a block freed twice in
 * a plain build), or names a block outside the chunks in use is reported
 * as ARENA_ERR_CORRUPT, and what it holds is left unused until the batch
 * ends, as when a take reads it.
 *
 * Nodes.  A free block starts with its node: its length and its successor,
 * the successor stored XORed with the length and a constant.  A node that
 * does not decode to a plausible block (a write after free, a double free
 * through a path that cannot see it) is reported as ARENA_ERR_CORRUPT when
 * it is read, in every build, and its list is dropped.  The checked build's
 * node is a header of its own kind (instrument.c), so that its walks step
 * over free blocks and verify that nothing wrote into them.
 *
 * Forgetting.  The table of lists is the arena's bookkeeping, allocated
 * from its backing at the first block and kept until the release; it is
 * valid only while the arena's `pending` has ARENA__PENDING_REUSE.  A reset
 * or a rewind clears that bit (one store: arena__reuse_forget()), and the
 * next block filed clears the bitmap first.  A fixed-size arena (a caller's
 * buffer with no backing) never allocates, so it keeps no table: it reuses
 * only its most recent value.
 *
 * Rewinds.  A value placed through reuse lies below the position, where a
 * rewind does not look, so an instrumented arena logs each one placed while
 * a mark is live (in its table, up to LOG_CAP), and a rewind expires those
 * placed after its mark (arena__reuse_forget()).  A plain build has nothing
 * to expire: the rewind forgets the lists and the bytes wait for the reset.
 *
 * Costs: filing and taking a block are O(1) (a class computation, a bitmap
 * scan of four words, at most FIT_SCAN nodes read); merging is amortized
 * O(log n) per block filed.
 */
#include <stdlib.h>
#include <string.h>

#include "reuse.h"

/* Placements an instrumented arena's table can log; past them, a live mark
 * turns reuse off until the next reset or rewind. */
#define LOG_CAP 1024

/* Blocks of the class below a request's that it reads for one that fits. */
#define FIT_SCAN 8
/* The fewest blocks filed since the last merge (or since the lists became
 * valid) for which a merge runs. */
#define MERGE_MIN 32
/* The most chunks in use for which a merge runs (it keeps a list head per
 * chunk on the stack). */
#define MERGE_CHUNKS 256
/* The most blocks a merge sorts in an array on the stack (a merge then
 * takes about 11 KiB of stack on a 64-bit target); more are sorted as a
 * list. */
#define MERGE_SPANS 512

static size_t table_bytes(size_t caplog)
{
    return sizeof(struct arena__reuse) + caplog * sizeof(struct arena__placement);
}

/* ---- Classes ----------------------------------------------------------------------- */

static unsigned lowest_bit(uint64_t w)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctzll(w);
#else
    unsigned i = 0;
    while (!(w & 1)) {
        w >>= 1;
        i++;
    }
    return i;
#endif
}

/* ---- Nodes -------------------------------------------------------------------------- */

static size_t node_bytes(void)
{
    return ARENA_CHECKED ? arena__hdr() : sizeof(struct arena__free_node);
}

ARENA__NO_ASAN static void node_store(char *s, size_t len, const char *next)
{
    if (ARENA__VALGRIND)
        VALGRIND_MAKE_MEM_UNDEFINED(s, node_bytes());
    if (ARENA_CHECKED) {
        arena__instr_node_store(s, len, arena__link((uintptr_t)next, len));
    } else {
        struct arena__free_node *nd = (struct arena__free_node *)(void *)s;
        nd->len = len;
        nd->link = arena__link((uintptr_t)next, len);
        if (arena__has_canary(len)) {
            uintptr_t c = arena__canary(s, nd->link);
            memcpy(s + ARENA__CANARY_AT, &c, sizeof c);
        }
    }
    if (ARENA__VALGRIND)
        VALGRIND_MAKE_MEM_NOACCESS(s, node_bytes());
}

/* The node at `s`: its length and successor; false when it does not decode
 * to a block (overwritten), with no length and no successor then. */
ARENA__NO_ASAN static bool node_load(const char *s, size_t *len, char **next)
{
    uintptr_t link, n;
    bool ok = true;
    if (ARENA__VALGRIND)
        VALGRIND_MAKE_MEM_DEFINED(s, node_bytes());
    if (ARENA_CHECKED) {
        ok = arena__instr_node_load(s, len, &link);
    } else {
        const struct arena__free_node *nd = (const struct arena__free_node *)(const void *)s;
        *len = nd->len;
        link = nd->link;
        if (arena__has_canary(*len) && arena__canary_readable(s)) {
            uintptr_t c;
            memcpy(&c, s + ARENA__CANARY_AT, sizeof c);
            ok = c == arena__canary(s, link);
        }
    }
    if (ARENA__VALGRIND)
        VALGRIND_MAKE_MEM_NOACCESS(s, node_bytes());
    if (!ok) { /* a checked build's node, or a canary, overwritten: no length, no successor */
        *len = 0;
        *next = NULL;
        return false;
    }
    n = arena__link(link, *len);
    *next = (char *)n;
    return *len >= arena__reuse_min() && (n & (ARENA_ALIGN - 1)) == 0;
}

static void corrupt(const arena *a, const char *s)
{
    arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_CORRUPT,
                  "arena: arena %p: the free block at %p was overwritten (a write after free, "
                  "or a block freed twice)",
                  (const void *)a, (const void *)s);
}

/* ---- The table ------------------------------------------------------------------------ */

static struct arena__reuse *table(arena *a)
{
    struct arena__cold *c = arena__cold(a);
    if (!c->reuse && !(c->flags & ARENA__FIXED)) {
        size_t cap = arena__instrumented() ? LOG_CAP : 0;
        c->reuse = (struct arena__reuse *)arena__take_backing(a, table_bytes(cap));
        if (c->reuse) {
            memset(c->reuse, 0, sizeof *c->reuse);
            c->reuse->caplog = cap;
            arena__note_holds(a);
        }
    }
    return c->reuse;
}

static bool lists_valid(const arena *a) { return (a->pending & ARENA__PENDING_REUSE) != 0; }

/* The epochs of every arena's lists: one process-wide count, so that no
 * epoch comes round again, in this arena or in another one that the same
 * memory later holds. */
static _Atomic uint64_t epochs;

/* Makes the lists valid again, empty (after a reset or a rewind forgot
 * them), in an epoch of their own: the pages start over too, but for the
 * list of live page headers, which only a reset or release erases. */
static void revive(arena *a, struct arena__reuse *t)
{
    char *newest = t->pages.newest;
    memset(t->map, 0, sizeof t->map);
    memset(&t->pages, 0, sizeof t->pages);
    t->pages.newest = newest;
    t->filed = t->merged = t->page_frees = t->page_kept = 0;
    t->page_miss = 0;
    t->epoch = atomic_fetch_add_explicit(&epochs, 1, memory_order_relaxed) + 1;
    a->pending |= ARENA__PENDING_REUSE;
}

struct arena__reuse *arena__reuse_live(arena *a)
{
    struct arena__reuse *t = table(a);
    if (t && !lists_valid(a))
        revive(a, t);
    return t;
}

struct arena__pages *arena__pages_of(arena *a)
{
    struct arena__reuse *t = arena__reuse_live(a);
    return t ? &t->pages : NULL;
}

/* Whether class `c`'s list holds a block (a head whose bit is clear is a
 * past batch's). */
static bool listed(const struct arena__reuse *t, unsigned c)
{
    return (t->map[c / 64] >> (c % 64) & 1) != 0;
}

static void set_head(struct arena__reuse *t, unsigned c, char *s)
{
    t->head[c] = s;
    if (s)
        t->map[c / 64] |= (uint64_t)1 << (c % 64);
    else
        t->map[c / 64] &= ~((uint64_t)1 << (c % 64));
}

/* Files [s, s + len) at the head of its class's list. */
static void put(struct arena__reuse *t, char *s, size_t len)
{
    unsigned c = arena__class_of(len);
    if (len >= ARENA__PAGE)
        t->page_puts++;
    node_store(s, len, listed(t, c) ? t->head[c] : NULL);
    set_head(t, c, s);
}

bool arena__reuse_file(arena *a, char *s, size_t len)
{
    struct arena__reuse *t = arena__reuse_live(a);
    if (!t)
        return false;
    put(t, s, len);
    t->filed++;
    return true;
}

/* The first block of class `c` that holds `need` bytes, among its first
 * `scan`, unlinked; NULL if none. */
static char *take_from(arena *a, struct arena__reuse *t, unsigned c, size_t need, unsigned scan,
                       size_t *len)
{
    char *prev = NULL, *s = t->head[c], *next;
    size_t n, plen = 0;

    while (s && scan-- > 0) {
        if (!node_load(s, &n, &next)) {
            corrupt(a, s);
            set_head(t, c, NULL);
            return NULL;
        }
        if (n >= need) {
            if (prev)
                node_store(prev, plen, next);
            else
                set_head(t, c, next);
            *len = n;
            return s;
        }
        prev = s;
        plen = n;
        s = next;
    }
    return NULL;
}

/* The head of the first non-empty class at or above `c`, unlinked; NULL if
 * none. */
static char *take_above(arena *a, struct arena__reuse *t, unsigned c, size_t *len)
{
    unsigned w;
    for (w = c / 64; c < ARENA__NCLASS && w < ARENA__MAP_WORDS; w++) {
        uint64_t bits = t->map[w];
        if (w == c / 64)
            bits &= ~(uint64_t)0 << (c % 64);
        if (bits)
            return take_from(a, t, w * 64 + lowest_bit(bits), 0, 1, len);
    }
    return NULL;
}

char *arena__reuse_take(arena *a, size_t need, size_t *len)
{
    struct arena__reuse *t = arena__cold(a)->reuse;
    unsigned up, down;

    if (!lists_valid(a) || !t)
        return NULL;
    /* The class whose every block fits. */
    up = arena__class_up(need);
    if (up < ARENA__NCLASS && listed(t, up))
        return take_from(a, t, up, 0, 1, len);
    /* The class below, whose blocks may fit: exact sizes freed by
     * arena_free(). */
    down = arena__class_of(need);
    if (down != up && listed(t, down)) {
        char *s = take_from(a, t, down, need, FIT_SCAN, len);
        if (s)
            return s;
    }
    /* The smallest larger class that holds a block, to be split. */
    return up + 1 < ARENA__NCLASS ? take_above(a, t, up + 1, len) : NULL;
}

/* ---- Merging ---------------------------------------------------------------------------- */

/* While a merge runs, each block starts with a plain link to the next and
 * its length (the blocks are at least node_bytes() >= 16 long); every block
 * gets its node again before the merge returns. */
struct raw {
    char *next;
    size_t len;
};

ARENA__NO_ASAN static struct raw raw_load(const char *s)
{
    struct raw r;
    if (ARENA__VALGRIND)
        VALGRIND_MAKE_MEM_DEFINED(s, sizeof r);
    r = *(const struct raw *)(const void *)s;
    if (ARENA__VALGRIND)
        VALGRIND_MAKE_MEM_NOACCESS(s, sizeof r);
    return r;
}

ARENA__NO_ASAN static void raw_store(char *s, char *next, size_t len)
{
    struct raw *r = (struct raw *)(void *)s;
    if (ARENA__VALGRIND)
        VALGRIND_MAKE_MEM_UNDEFINED(s, sizeof *r);
    r->next = next;
    r->len = len;
    if (ARENA__VALGRIND)
        VALGRIND_MAKE_MEM_NOACCESS(s, sizeof *r);
}

static void raw_link(char *s, char *next) { raw_store(s, next, raw_load(s).len); }

/* Two lists sorted by address, as one. */
static char *raw_merge(char *x, char *y)
{
    char *head = NULL, *tail = NULL, *pick;
    while (x && y) {
        if ((uintptr_t)x < (uintptr_t)y) {
            pick = x;
            x = raw_load(x).next;
        } else {
            pick = y;
            y = raw_load(y).next;
        }
        if (tail)
            raw_link(tail, pick);
        else
            head = pick;
        tail = pick;
    }
    if (tail)
        raw_link(tail, x ? x : y);
    else
        head = x ? x : y;
    return head;
}

/* The list sorted by address: bottom-up, bins[k] holding a sorted run of
 * 2^k blocks. */
static char *raw_sort(char *list)
{
    char *bins[64] = {NULL}, *s;
    unsigned k;
    while (list) {
        s = list;
        list = raw_load(s).next;
        raw_link(s, NULL);
        for (k = 0; k < 63 && bins[k]; k++) {
            s = raw_merge(bins[k], s);
            bins[k] = NULL;
        }
        bins[k] = raw_merge(bins[k], s);
    }
    for (s = NULL, k = 0; k < 64; k++)
        s = raw_merge(bins[k], s);
    return s;
}

/* The node of a block merged into the one before it becomes free bytes like
 * the rest: clobbered in the checked build (whose walks verify a free
 * block's bytes after its node), and a node still elsewhere, so that a free
 * of the value that was there again decodes as one (current.c). */
ARENA__NO_ASAN static void node_absorbed(char *s, size_t len)
{
    if (ARENA_CHECKED) {
        arena__open(s, node_bytes());
        memset(s, ARENA__CLOBBER, node_bytes());
        arena__close(s, node_bytes());
    } else {
        node_store(s, len, NULL);
    }
}

/* How many blocks the chunks in use could hold: more than any sound list
 * holds. */
static size_t most_blocks(const arena *a)
{
    size_t n = 0;
    uint32_t i;
    for (i = 0; i < a->nused; i++)
        n += a->chunks[i].cap / arena__reuse_min() + 1;
    return n;
}

/* Links class c's blocks into `*list` (raw) and empties the class; a list
 * that does not decode or has more blocks than the chunks could hold (a
 * loop) is reported and its blocks left out. */
static void gather(arena *a, struct arena__reuse *t, unsigned c, size_t bound, char **list)
{
    char *s, *next;
    size_t len, n = 0;
    for (s = t->head[c]; s; s = next) {
        if (!node_load(s, &len, &next) || ++n > bound) {
            corrupt(a, s);
            set_head(t, c, NULL);
            return;
        }
    }
    for (s = t->head[c]; s; s = next) {
        (void)node_load(s, &len, &next);
        raw_store(s, *list, len);
        *list = s;
    }
    set_head(t, c, NULL);
}

/* Merges and files again the blocks of `list` (sorted by address, all in
 * one chunk, which ends at `hi`); returns how many blocks it filed. */
static size_t merge_chunk(arena *a, struct arena__reuse *t, char *list, uintptr_t hi)
{
    const uintptr_t gap = arena__reuse_gap();
    char *s, *run = NULL;
    uintptr_t end = 0; /* where the run ends */
    size_t run_len = 0, kept = 0;

    for (s = list; s;) {
        struct raw r = raw_load(s);
        uintptr_t at = (uintptr_t)s;
        if (at < end || r.len > hi - at) { /* overlaps the run (a block filed twice), or the
                                              chunk's end */
            corrupt(a, s);
        } else if (run && at - end <= gap) {
            node_absorbed(s, r.len);
            run_len += (size_t)(at - end) + r.len;
            end = at + r.len;
        } else {
            if (run) {
                put(t, run, run_len);
                kept++;
            }
            run = s;
            run_len = r.len;
            end = at + r.len;
        }
        s = r.next;
    }
    if (run) {
        put(t, run, run_len);
        kept++;
    }
    return kept;
}

/* ---- Recycling pages ---------------------------------------------------------------------
 *
 * A page whose blocks are all given back serves its class only, until the
 * batch ends: values that move to other sizes (a phase of small values,
 * then large ones; a value grown by appends through every class) would
 * leave such pages behind, and a class's list, last in first out across
 * its pages, keeps values spread over all of them.  So before a merge each
 * class's list is ordered by page, the pages with the fewest free blocks
 * first: the next values fill those, and the others drain.  Every page
 * whose blocks are all on the list leaves the list and the chain of live
 * page headers, but for the class's current page, part of which was never
 * handed out.  Its header is erased, and it is filed as a free block, which
 * the merge joins to its neighbours; so are the pages of the current
 * region not carved yet.  A class's blocks are counted per page in a small
 * table, at most RECYCLE_SLOTS pages a merge; blocks of further pages keep
 * their place, after the others.  The order among pages of the same count
 * is the list's, so that a run is repeatable.  Pages of 8-byte blocks
 * (their free bits live in the page) are left as they are. */
#define RECYCLE_SLOTS 64

struct page_count {
    uintptr_t page;
    size_t n;    /* its free blocks on the list */
    size_t seen; /* the order in which the list first met it */
    char *head;  /* its blocks, chained while the list is rebuilt */
    char *tail;
};

/* The counter of `page` in the table (`*used` entries so far), or NULL when
 * the table is full. */
static struct page_count *count_of(struct page_count *tab, size_t *used, uintptr_t page)
{
    size_t i = (size_t)(page / ARENA__PAGE) % RECYCLE_SLOTS, probes;
    for (probes = 0; probes < RECYCLE_SLOTS; probes++, i = (i + 1) % RECYCLE_SLOTS) {
        if (tab[i].page == page)
            return &tab[i];
        if (!tab[i].page) {
            tab[i].page = page;
            tab[i].seen = (*used)++;
            return &tab[i];
        }
    }
    return NULL;
}

/* The next block of a page class's list after `b`; *ok false where the node
 * does not decode (the list is then left alone: a take reports it). */
static char *page_next(const char *b, size_t block, bool *ok)
{
    char *next = (char *)(arena__page_word(b, 0) ^ (uintptr_t)b ^ ARENA__PAGE_NODE);
    *ok = arena__page_is_freed(b, block) && ((uintptr_t)next & (ARENA__TINY - 1)) == 0;
    return *ok ? next : NULL;
}

static void link_block(char *b, const char *next)
{
    arena__page_set_word(b, 0, (uintptr_t)next ^ (uintptr_t)b ^ ARENA__PAGE_NODE);
}

/* Fewer free blocks first; then the list's order. */
static int by_count(const void *x, const void *y)
{
    const struct page_count *p = *(const struct page_count *const *)x;
    const struct page_count *q = *(const struct page_count *const *)y;
    if (p->n != q->n)
        return p->n < q->n ? -1 : 1;
    return p->seen < q->seen ? -1 : p->seen > q->seen;
}

/* Chains each block of a page class's list, from `b` on (of `block` bytes,
 * every node decoding), to its page's counter in `tab` (`*used` entries so
 * far), in the list's order; returns the blocks of the pages the table had
 * no room for, chained in that order too. */
static char *chain_blocks(struct page_count *tab, size_t *used, char *b, size_t block)
{
    char *next, *rest = NULL, *rest_tail = NULL;
    bool ok;

    for (; b; b = next) {
        struct page_count *pc = count_of(tab, used, (uintptr_t)b & ~ARENA__PAGE_MASK);
        next = page_next(b, block, &ok);
        link_block(b, NULL);
        if (!pc) {
            if (rest_tail)
                link_block(rest_tail, b);
            else
                rest = b;
            rest_tail = b;
            continue;
        }
        if (pc->tail)
            link_block(pc->tail, b);
        else
            pc->head = b;
        pc->tail = b;
        pc->n++;
    }
    return rest;
}

/* The table as it was, for the next class: only its `used` entries are
 * cleared. */
static void clear_counts(struct page_count *tab, size_t used)
{
    size_t i;
    for (i = 0; i < RECYCLE_SLOTS && used > 0; i++)
        if (tab[i].page) {
            memset(&tab[i], 0, sizeof tab[i]);
            used--;
        }
}

/* Orders class `c`'s list as above and takes its pages whose blocks are all
 * free off it; returns how many it put in `out` (at most `room`). */
static size_t sort_class(struct arena__pages *pg, unsigned c, struct page_count *tab,
                         struct page_count **order, char **out, size_t room)
{
    struct arena__page_class *k = &pg->cls[c];
    size_t block = arena__page_block(c), cap = (ARENA__PAGE - arena__page_first(block)) / block;
    uintptr_t carving = k->end ? ((uintptr_t)k->end - 1) & ~ARENA__PAGE_MASK : 0;
    char *b, *rest, *head = NULL, *tail = NULL;
    size_t used = 0, found = 0, i, j;
    bool ok = true;

    if (!k->free)
        return 0;
    for (b = k->free; b && ok; b = page_next(b, block, &ok))
        (void)count_of(tab, &used, (uintptr_t)b & ~ARENA__PAGE_MASK);
    if (!ok) {
        clear_counts(tab, used);
        return 0;
    }
    rest = chain_blocks(tab, &used, k->free, block);
    for (i = j = 0; i < RECYCLE_SLOTS; i++)
        if (tab[i].page)
            order[j++] = &tab[i];
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): the array sorted holds pointers */
    qsort(order, j, sizeof *order, by_count);
    for (i = 0; i < j; i++) {
        struct page_count *pc = order[i];
        if (pc->n == cap && pc->page != carving && found < room) {
            out[found++] = (char *)pc->page;
            continue;
        }
        if (tail)
            link_block(tail, pc->head);
        else
            head = pc->head;
        tail = pc->tail;
    }
    if (tail)
        link_block(tail, rest);
    else
        head = rest;
    k->free = head;
    clear_counts(tab, used);
    return found;
}

/* The free blocks of the pages' lists, but for the 8-byte class's. */
static size_t page_blocks_listed(const struct arena__pages *pg)
{
    size_t n = 0;
    unsigned c;
    for (c = 2; c < ARENA__PAGE_CLASSES; c++) { /* class 1 holds the 8-byte blocks */
        const char *b;
        bool ok = true;
        for (b = pg->cls[c].free; b && ok; b = page_next(b, arena__page_block(c), &ok))
            n++;
    }
    return n;
}

static bool recycle(arena *a, struct arena__reuse *t);

void arena__pages_tidy(arena *a)
{
    (void)arena__pages_recycle(a);
    (void)arena__reuse_merge(a);
}

bool arena__pages_recycle(arena *a)
{
    struct arena__reuse *t = arena__cold(a)->reuse;
    return arena__paging() && lists_valid(a) && t && t->page_frees >= MERGE_MIN &&
           t->page_frees >= t->page_kept && recycle(a, t);
}

static bool recycle(arena *a, struct arena__reuse *t)
{
    struct page_count tab[RECYCLE_SLOTS], *order[RECYCLE_SLOTS];
    char *full[RECYCLE_SLOTS], *page, *prev = NULL;
    size_t n = 0, i;
    unsigned c;

    (void)a;
    memset(tab, 0, sizeof tab);

    /* The pages of the current region not carved yet go back too: a class
     * that needs a page takes them from the lists again (pages.c). */
    if (t->pages.rnext != t->pages.rend) {
        put(t, t->pages.rnext, (size_t)(t->pages.rend - t->pages.rnext));
        t->pages.rnext = t->pages.rend = NULL;
    }
    for (c = 2; c < ARENA__PAGE_CLASSES; c++) /* not class 1, the 8-byte blocks' */
        n += sort_class(&t->pages, c, tab, order, full + n, RECYCLE_SLOTS - n);
    t->page_frees = 0;
    t->page_kept = page_blocks_listed(&t->pages);
    if (!n)
        return false;
    for (i = 0; i < n; i++)
        arena__page_set_word(full[i], 0, 0); /* no longer a page */
    /* Out of the chain of live headers (newest first), whose links they
     * still hold. */
    for (page = t->pages.newest; page;) {
        struct arena__page_header h;
        char *older;
        memcpy(&h, page, sizeof h);
        older = (char *)(h.link & ~ARENA__PAGE_MASK);
        if (h.check == 0) {
            if (prev) {
                struct arena__page_header ph;
                memcpy(&ph, prev, sizeof ph);
                ph.link = (uintptr_t)older | (ph.link & ARENA__PAGE_MASK);
                ph.check = arena__page_check((uintptr_t)prev, ph.owner, ph.link);
                memcpy(prev, &ph, sizeof ph);
            } else {
                t->pages.newest = older;
            }
        } else {
            prev = page;
        }
        page = older;
    }
    for (i = 0; i < n; i++)
        put(t, full[i], ARENA__PAGE);
    return true;
}

/* A merge gathers the blocks into an array on the stack where they fit
 * MERGE_SPANS, reading each once (its node), and sorts the array by
 * address.  It files each run of blocks that lie side by side in a chunk
 * again as one block, writing each block once: the run's node, or a node
 * clobbered where it joined the block before it.  Sorting in the array
 * chases no pointer through the blocks.  More blocks are linked into one list and
 * sorted as a list (merge_lists()). */
struct span {
    uintptr_t at;
    size_t len;
};

/* Gathers the blocks of the lists into v[0..*n), at most MERGE_SPANS;
 * false, with the lists as they were, when they hold more.  A list that
 * does not decode or holds more blocks than the chunks could (a loop) is
 * reported and left out, its class emptied. */
static bool gather_spans(arena *a, struct arena__reuse *t, size_t bound, struct span *v, size_t *n)
{
    unsigned c;
    *n = 0;
    for (c = 0; c < ARENA__NCLASS; c++) {
        size_t start = *n, k = 0, len;
        char *s, *next;
        if (!listed(t, c))
            continue;
        for (s = t->head[c]; s; s = next) {
            if (!node_load(s, &len, &next) || ++k > bound) {
                corrupt(a, s);
                set_head(t, c, NULL);
                *n = start;
                break;
            }
            if (*n == MERGE_SPANS)
                return false;
            v[*n].at = (uintptr_t)s;
            v[(*n)++].len = len;
        }
    }
    return true;
}

/* Orders v[0..n) by address into `order` (indexes of v; `tmp` as long): a
 * radix sort of the bits in which the addresses differ, eight at a time,
 * with no comparison to mispredict. */
static void sort_spans(const struct span *v, size_t n, uint16_t *order, uint16_t *tmp)
{
    uint16_t *const out = order;
    uintptr_t diff = 0;
    unsigned shift, high = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        diff |= v[i].at ^ v[0].at;
        order[i] = (uint16_t)i;
    }
    while (high < sizeof diff * 8 && diff >> high)
        high++;
    for (shift = diff ? (unsigned)lowest_bit(diff) : high; shift < high; shift += 8) {
        uint16_t count[256] = {0}, at = 0, *swap;
        for (i = 0; i < n; i++)
            count[(v[order[i]].at >> shift) & 255]++;
        for (i = 0; i < 256; i++) {
            uint16_t k = count[i];
            count[i] = at;
            at = (uint16_t)(at + k);
        }
        for (i = 0; i < n; i++)
            tmp[count[(v[order[i]].at >> shift) & 255]++] = order[i];
        swap = order;
        order = tmp;
        tmp = swap;
    }
    if (order != out)
        memcpy(out, order, n * sizeof *order);
}

/* Merges and files again the blocks v[order[0..n)] (in address order, all
 * in one chunk, which ends at `hi`); returns how many blocks it filed. */
static size_t merge_spans(arena *a, struct arena__reuse *t, const struct span *v,
                          const uint16_t *order, size_t n, uintptr_t hi)
{
    const uintptr_t gap = arena__reuse_gap();
    uintptr_t run = 0, end = 0; /* the run being built, and where it ends */
    size_t i, run_len = 0, kept = 0;

    for (i = 0; i < n; i++) {
        uintptr_t at = v[order[i]].at;
        size_t len = v[order[i]].len;
        if (at < end || len > hi - at) { /* overlaps the run (a block filed twice), or the
                                            chunk's end */
            corrupt(a, (const char *)at);
        } else if (run && at - end <= gap) {
            node_absorbed((char *)at, len);
            run_len += (size_t)(at - end) + len;
            end = at + len;
        } else {
            if (run) {
                put(t, (char *)run, run_len);
                kept++;
            }
            run = at;
            run_len = len;
            end = at + len;
        }
    }
    if (run) {
        put(t, (char *)run, run_len);
        kept++;
    }
    return kept;
}

/* The merge of the blocks gathered in v[0..n): sorted, each chunk's run of
 * them merged and filed again, chunk by chunk in the index's order (what
 * the lists hand out next follows the batch's own history, never where the
 * backing put the chunks). */
static size_t merge_gathered(arena *a, struct arena__reuse *t, const struct span *v, size_t n)
{
    uint16_t order[MERGE_SPANS], tmp[MERGE_SPANS], first[MERGE_CHUNKS], count[MERGE_CHUNKS];
    uintptr_t lo = 0, hi = 0; /* the chunk of the run being read */
    uint32_t k = 0, nused = a->nused;
    size_t i, kept = 0;
    unsigned c;

    for (c = 0; c < ARENA__NCLASS; c++)
        set_head(t, c, NULL);
    sort_spans(v, n, order, tmp);
    memset(count, 0, nused * sizeof count[0]);
    for (i = 0; i < n; i++) {
        uintptr_t at = v[order[i]].at;
        if (at < lo || at >= hi) {
            const struct arena__chunk *ck = arena__chunk_of(a, (const char *)at);
            if (!ck) { /* in no chunk in use */
                corrupt(a, (const char *)at);
                lo = hi = 0;
                continue;
            }
            k = (uint32_t)(ck - a->chunks);
            lo = (uintptr_t)ck->base;
            hi = lo + ck->cap;
            first[k] = (uint16_t)i;
        }
        count[k] = (uint16_t)(i + 1 - first[k]);
    }
    for (k = 0; k < nused; k++)
        if (count[k])
            kept += merge_spans(a, t, v, order + first[k], count[k],
                                (uintptr_t)a->chunks[k].base + a->chunks[k].cap);
    return kept;
}

/* The merge of lists longer than an array on the stack takes: linked into
 * one list (raw), sorted by address with a merge sort of the list in place,
 * each chunk's run of it merged and filed again, chunk by chunk in the
 * index's order. */
static ARENA__NOINLINE size_t merge_lists(arena *a, struct arena__reuse *t, size_t bound)
{
    char *group[MERGE_CHUNKS], *tail = NULL, *s, *next;
    const struct arena__chunk *k;
    uint32_t i, nused = a->nused;
    uintptr_t lo = 0, hi = 0; /* the chunk of the group being read */
    size_t kept = 0;
    unsigned c;
    char *list = NULL;

    for (c = 0; c < ARENA__NCLASS; c++)
        if (listed(t, c))
            gather(a, t, c, bound, &list);
    /* Sorted by address, the blocks of one chunk stand together: each run
     * of them becomes its chunk's group. */
    memset(group, 0, sizeof group);
    for (s = raw_sort(list); s; s = next) {
        uintptr_t at = (uintptr_t)s;
        next = raw_load(s).next;
        if (at < lo || at >= hi) {
            if (tail)
                raw_link(tail, NULL);
            tail = NULL;
            k = arena__chunk_of(a, s);
            if (!k) { /* in no chunk in use */
                lo = hi = 0;
                corrupt(a, s);
                continue;
            }
            lo = (uintptr_t)k->base;
            hi = lo + k->cap;
            group[k - a->chunks] = s;
        } else {
            raw_link(tail, s);
        }
        tail = s;
    }
    if (tail)
        raw_link(tail, NULL);
    for (i = 0; i < nused; i++)
        if (group[i])
            kept += merge_chunk(a, t, group[i], (uintptr_t)a->chunks[i].base + a->chunks[i].cap);
    return kept;
}

bool arena__reuse_merge(arena *a)
{
    struct arena__reuse *t = arena__cold(a)->reuse;
    struct span v[MERGE_SPANS];
    size_t bound, n;

    if (!lists_valid(a) || !t || t->filed < MERGE_MIN || t->filed < t->merged ||
        a->nused > MERGE_CHUNKS ||
        (arena__instrumented() && a->saves > a->expired)) /* a live mark */
        return false;
    /* Pages first, amortized: a run reads every free page block, so here it
     * waits for as many page blocks given back since the last one as that
     * one left (before a page is carved it runs sooner: pages.c). */
    if (arena__paging() && t->page_frees >= MERGE_MIN && t->page_frees >= t->page_kept)
        (void)recycle(a, t);
    bound = most_blocks(a);
    t->merged =
        gather_spans(a, t, bound, v, &n) ? merge_gathered(a, t, v, n) : merge_lists(a, t, bound);
    t->filed = 0;
    return true;
}

/* ---- Rewinds in instrumented builds ---------------------------------------------------- */

bool arena__reuse_log_room(arena *a)
{
    const struct arena__reuse *t = arena__cold(a)->reuse;
    return t && t->nlog < t->caplog;
}

void arena__reuse_log(arena *a, const char *base, char *from, char *to, char *p)
{
    struct arena__reuse *t = arena__cold(a)->reuse;
    t->log[t->nlog].base = base;
    t->log[t->nlog].from = from;
    t->log[t->nlog].to = to;
    t->log[t->nlog].p = p;
    t->log[t->nlog].saves = a->saves;
    t->nlog++;
}

void arena__reuse_log_trim(arena *a, const char *base, char *pos)
{
    struct arena__reuse *t = arena__cold(a)->reuse;
    size_t i;
    for (i = 0; t && i < t->nlog; i++) {
        struct arena__placement *pl = &t->log[i];
        if (pl->base == base && pl->to > pos)
            pl->to = pl->from > pos ? pl->from : pos;
    }
}

void arena__reuse_forget(arena *a, uint64_t serial)
{
    struct arena__reuse *t = arena__cold(a)->reuse;
    a->pending &= ~(uint32_t)ARENA__PENDING_REUSE;
    if (!t)
        return;
    if (t->pages.newest) {
        arena__pages_erase(&t->pages, serial);
        /* Pages from before the mark keep their headers, which a later
         * reset must erase: the library must see it. */
        if (t->pages.newest)
            revive(a, t);
    }
    if (serial == 0) { /* a reset: every chunk expires whole */
        t->nlog = 0;
        return;
    }
    /* Placements stored after the mark lie below its position, where the
     * rewind does not look: they expire here, newest first. */
    while (t->nlog > 0 && t->log[t->nlog - 1].saves >= serial) {
        const struct arena__placement *pl = &t->log[--t->nlog];
        arena__instr_unreused(pl->base, pl->from, pl->to, pl->p);
    }
}

void arena__reuse_release(arena *a)
{
    struct arena__cold *c = arena__cold(a);
    a->pending &= ~(uint32_t)ARENA__PENDING_REUSE;
    if (!c->reuse)
        return;
    arena__pages_erase(&c->reuse->pages, 0);
    arena__give_backing(a, c->reuse, table_bytes(c->reuse->caplog));
    c->reuse = NULL;
    arena__note_holds(a);
}
