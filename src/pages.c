/* SPDX-License-Identifier: MIT */
/*
 * Pages of small blocks without a header: carving them from regions of the
 * arena, and erasing their headers when their batch ends (see pages.h).
 */
#include "reuse.h"

/* Pages of the largest region carved at once (256 KiB). */
#define REGION_PAGES 64

const char arena__secret_anchor;

/* A region of whole pages from a free block of the lists that holds one,
 * at most `most` pages; what the block has before and after it is filed
 * again.  The pages' count in *got; NULL when no free block holds a page.
 * A miss is remembered until a block of a page or more is filed: a small
 * class whose pages are full asks at each value it places after a head,
 * and a churn of varied sizes asked (and took, and filed again, a block of
 * a page or two unaligned) at half its steps (churn/pareto 1.2x the time). */
static char *region_of_lists(arena *a, size_t most, size_t *got)
{
    struct arena__reuse *t = arena__cold(a)->reuse;
    size_t len, n;
    char *s, *r, *end;

    if (t->page_miss == t->page_puts + 1)
        return NULL;
    /* A page recycled whole first (an aligned block of one page), else any
     * block large enough to hold an aligned page wherever it starts. */
    s = arena__reuse_take(a, ARENA__PAGE, &len);
    if (s &&
        (uintptr_t)arena__align_up((uintptr_t)s, ARENA__PAGE) + ARENA__PAGE > (uintptr_t)s + len) {
        (void)arena__reuse_file(a, s, len);
        s = arena__reuse_take(a, 2 * ARENA__PAGE, &len);
    }
    if (!s) {
        t->page_miss = t->page_puts + 1; /* after the block filed again above */
        return NULL;
    }
    r = (char *)arena__align_up((uintptr_t)s, ARENA__PAGE);
    n = (size_t)(s + len - r) / ARENA__PAGE;
    if (n > most)
        n = most;
    end = r + n * ARENA__PAGE;
    if (r > s && (size_t)(r - s) >= arena__reuse_min())
        (void)arena__reuse_file(a, s, (size_t)(r - s));
    if (s + len > end && (size_t)(s + len - end) >= arena__reuse_min())
        (void)arena__reuse_file(a, end, (size_t)(s + len - end));
    *got = n;
    return r;
}

/* A page for class `c`, its header written: the class's current page.  A
 * new region comes from the lists' free blocks first (the memory a phase of
 * other sizes gave back), else, where `grow`, from the arena. */
static bool carve(arena *a, struct arena__pages *pg, unsigned c, bool grow)
{
    struct arena__page_header h;
    struct arena__page_class *k = &pg->cls[c];
    size_t block = arena__page_block(c);
    char *page;
    if (pg->rnext == pg->rend) {
        size_t n = pg->rpages ? 2 * pg->rpages : 1, got;
        char *r;
        if (n > REGION_PAGES)
            n = REGION_PAGES;
        if ((r = region_of_lists(a, n, &got)) != NULL) {
            pg->rnext = r;
            pg->rend = r + got * ARENA__PAGE;
            goto region;
        }
        if (!grow)
            return false;
        r = arena__alloc_pages(a, n * ARENA__PAGE);
        if (!r && n > 1) {
            n = 1;
            r = arena__alloc_pages(a, ARENA__PAGE);
        }
        if (!r)
            return false;
        pg->rnext = r;
        pg->rend = r + n * ARENA__PAGE;
        pg->rpages = n;
    }
region:
    page = pg->rnext;
    pg->rnext += ARENA__PAGE;
    h.owner = a;
    h.link = (uintptr_t)pg->newest | c;
    h.saves = a->saves;
    h.check = arena__page_check((uintptr_t)page, a, h.link);
    memcpy(page, &h, sizeof h);
    if (block == ARENA__TINY)
        memset(page + ARENA__PAGE_HDR, 0, ARENA__TINY_BITMAP);
    pg->newest = page;
    k->next = page + arena__page_first(block);
    k->end = k->next + (ARENA__PAGE - arena__page_first(block)) / block * block;
    return true;
}

bool arena__page_refill(arena *a, struct arena__pages *pg, unsigned c, bool grow, const char *fn)
{
    struct arena__page_class *k = &pg->cls[c];
    if (k->free) { /* arena__page_take() could not decode its head */
        arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_CORRUPT,
                      "%s: arena %p: the free block at %p was overwritten (a write after free)", fn,
                      (void *)a, (void *)k->free);
        k->free = NULL;
    }
    return k->next != k->end || carve(a, pg, c, grow);
}

void arena__pages_erase(struct arena__pages *pg, uint64_t serial)
{
    char *page = pg->newest;
    while (page) {
        struct arena__page_header h;
        memcpy(&h, page, sizeof h);
        if (serial != 0 && h.saves < serial)
            break;
        arena__page_set_word(page, 0, 0);
        page = (char *)(h.link & ~ARENA__PAGE_MASK);
    }
    pg->newest = page;
}
