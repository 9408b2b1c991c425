/* SPDX-License-Identifier: MIT */
/*
 * The backing allocator: every byte the library holds (arena chunks and
 * bookkeeping, pool storage, cache and shared-arena structs) comes from an
 * arena_allocator, or from the C library's heap when it has none.
 */
#if defined(__linux__)
#  define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MADV_HUGEPAGE */
#endif
#include <stdlib.h>
#if defined(_WIN32)
#  include <malloc.h>
#endif
#if defined(__linux__)
#  include <fcntl.h>
#  include <string.h>
#  include <sys/mman.h>
#  include <unistd.h>
#endif

#include "internal.h"
#include "instrument.h"

/* ---- Huge pages ------------------------------------------------------------------ */

/* A block of ARENA__HUGE bytes or more of the default backing is a mapping of
 * its own, aligned to ARENA__HUGE and advised for transparent huge pages,
 * where Linux offers them ("always" or "madvise" in
 * /sys/kernel/mm/transparent_hugepage/enabled): a batch of hundreds of MiB
 * then faults in 2 MiB at a time and walks the TLB at that granularity.  The
 * mapping ends at the block's last page, so a block that is not a multiple
 * of ARENA__HUGE puts no huge page past its end.  Off elsewhere, where the
 * environment says ARENA_HUGE_PAGES=0, and where LeakSanitizer is linked in:
 * it does not look for pointers in mappings of their own, and would report
 * what a chunk's values point to as leaked. */
#if defined(__linux__) && defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE) && !ARENA__ASAN
#  define HUGE_PAGES 1
#  if defined(__GNUC__) || defined(__clang__)
extern void __lsan_do_leak_check(void) __attribute__((weak));
#    define LSAN_LINKED (&__lsan_do_leak_check != NULL)
#  else
#    define LSAN_LINKED 0
#  endif
#else
#  define HUGE_PAGES 0
#endif

#if HUGE_PAGES
static _Atomic int huge_state; /* 0: not read yet; 1: off; 2: on */

/* True when the kernel's setting, read from `path`, is "always" or
 * "madvise" (the word in brackets). */
static bool thp_offered(const char *path)
{
    char buf[128];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return false;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    return strstr(buf, "[always]") || strstr(buf, "[madvise]");
}

bool arena__huge_pages(void)
{
    int s = atomic_load_explicit(&huge_state, memory_order_relaxed);

    if (ARENA__UNLIKELY(!s)) {
        const char *env = getenv("ARENA_HUGE_PAGES");
        bool on = !(env && env[0] == '0' && !env[1]) && !LSAN_LINKED &&
                  thp_offered("/sys/kernel/mm/transparent_hugepage/enabled");
        /* Every thread reads the same: the first store stands. */
        int expected = 0;
        atomic_compare_exchange_strong(&huge_state, &expected, on ? 2 : 1);
        s = atomic_load_explicit(&huge_state, memory_order_relaxed);
    }
    return s == 2;
}

static size_t page_round(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (n + page - 1) & ~(page - 1);
}

/* `n` bytes (at least ARENA__HUGE) at an ARENA__HUGE boundary, advised. */
static void *huge_map(size_t n)
{
    size_t len = page_round(n);
    char *p, *start;

    if (len < n || len > SIZE_MAX - ARENA__HUGE)
        return NULL;
    p = mmap(NULL, len + ARENA__HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    start = p + arena__pad((uintptr_t)p, ARENA__HUGE);
    if (start > p)
        munmap(p, (size_t)(start - p));
    if (start + len < p + len + ARENA__HUGE)
        munmap(start + len, (size_t)(p + len + ARENA__HUGE - (start + len)));
    (void)madvise(start, len, MADV_HUGEPAGE); /* a hint: refused, the pages are small */
    return start;
}

#  define HUGE_BLOCK(n) ((n) >= ARENA__HUGE && arena__huge_pages())
#else
bool arena__huge_pages(void) { return false; }
#  define HUGE_BLOCK(n) ((void)(n), 0)
#endif

/* The default backing: the C library's heap, with every block aligned to a
 * cache line (64 bytes) instead of malloc's 16.  A value at the start of a
 * chunk (the scratch block of an arena reset per scope, the first row of a
 * batch) then never straddles a line more than it must, which a wide memset
 * pays for (docs/fast-path.md).  Windows' C library has no aligned_alloc
 * (its free() cannot take such a block): it has _aligned_malloc, whose blocks
 * go back through _aligned_free. */
static void *heap_alloc(size_t n)
{
#if HUGE_PAGES
    if (HUGE_BLOCK(n))
        return huge_map(n);
#endif
    if (n > SIZE_MAX - 63)
        return NULL;
    n = (n + 63) & ~(size_t)63;
#if defined(_WIN32)
    return _aligned_malloc(n, 64);
#else
    return aligned_alloc(64, n);
#endif
}

static void heap_free(void *p, size_t n)
{
#if HUGE_PAGES
    if (HUGE_BLOCK(n)) {
        munmap(p, page_round(n));
        return;
    }
#endif
    (void)n;
#if defined(_WIN32)
    _aligned_free(p);
#else
    free(p);
#endif
}

void *arena__back_alloc(const arena_allocator *b, size_t n)
{
    return b->alloc ? b->alloc(b->ctx, n) : heap_alloc(n);
}

void arena__back_free(const arena_allocator *b, void *p, size_t n)
{
    if (b->alloc)
        b->free(b->ctx, p, n);
    else
        heap_free(p, n);
}
