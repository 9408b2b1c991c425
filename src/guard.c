/* SPDX-License-Identifier: MIT */
/*
 * Guarded batches: the page layer, the quarantine and the fault reporter
 * (arena/guard.h).  The arena's side (which batch is guarded, which chunks
 * retire when) is in arena_guard.inc.c.
 *
 * Pages.  A guarded chunk is a mapping of its capacity, rounded up to whole
 * pages, and one page more, inaccessible: the chunk's end abuts that guard
 * page, so that a write past it faults.  When its batch ends the chunk's
 * pages are mapped again inaccessible over themselves (POSIX: one mmap with
 * MAP_FIXED, which both protects them and gives their memory back;
 * Windows: decommitted), and the range joins the quarantine.
 *
 * The quarantine.  A ring of at most RANGES records, the oldest first,
 * bounded by the bytes of address space its ranges span (`bound`): a new
 * range evicts the oldest ones (unmapped, their addresses free to be mapped
 * again) until it fits.  The library writes records under `lock`; the fault
 * handler reads them without it, which a record's sequence number makes
 * safe: odd while the record is written, and read again after its fields,
 * so a torn read is recognised and skipped.  O(1) per range retired (and
 * per range evicted); the handler's search is O(RANGES).
 *
 * Ghosts.  Addresses leave the quarantine (evicted, or never kept: a range
 * beyond the bound, or one the system would not protect) and may be mapped
 * again for a later guarded batch.  A stale pointer of the earlier batch
 * then faults in the later batch's range, whose record cannot tell the two
 * apart: the report must not blame the later batch.  So every range that
 * leaves joins a set of ghost spans: sorted, disjoint, at most GHOSTS.
 * When the set is full, the two closest spans join across their gap, whose
 * addresses then only "may" have been held.  The handler reads the ghosts
 * as it reads the records, under a sequence number.  A fault in a recorded
 * range that a ghost covers names the later batch as the last holder, and
 * says that an earlier one held the address too.  A fault in a ghost alone
 * says what is known: a guarded batch held it.  Memory the heap held before a guarded batch
 * mapped it is beyond what the mode sees.  O(GHOSTS) per range that leaves.
 *
 * Batches ago.  A record holds its arena's identity, the slot of the
 * arena's clock, and the batches the arena had ended then; the arena writes
 * its count to its clock at the end of each batch the library sees.  A
 * clock is one of CLOCKS slots, by identity: an arena whose slot another
 * has taken since (more than CLOCKS arenas with guarded batches) is
 * reported without the count.
 *
 * Sampling by count draws, for each sampled batch, the unguarded batches
 * before the next one uniformly from [0, 2(N - 1)]: each batch is guarded
 * with probability 1/N, and the draws cost a few instructions per sampled
 * batch (arena_guard.inc.c lets the inline resets run through the unguarded ones).
 * Sampling by time keeps the same countdown, of the batches before the
 * arena next looks at the clock: the first look, of any arena, an interval
 * or more after the last batch claimed (`claimed`), claims the batch
 * beginning then with a compare-and-swap (so at most one batch per
 * interval in the process), and each look arms the
 * countdown for the batches that the arena runs, at its rate since its last
 * look, in an eighth of an interval (or the time left to it), at most twice
 * the batches since then: O(1) a look, a clock read per thousands of
 * batches at high rates.
 */
#if defined(_WIN32)
#  define WIN32_LEAN_AND_MEAN
#  include <windows.h>
#else
#  define _DEFAULT_SOURCE  /* MAP_ANONYMOUS, SA_ONSTACK (glibc, musl) */
#  define _DARWIN_C_SOURCE /* MAP_ANON */
#  include <signal.h>
#  include <unistd.h>
#  if defined(__unix__) || defined(__APPLE__)
#    include <sys/mman.h>
#  endif
#endif
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena/guard.h"
#include "instrument.h"
#include "thread_state.h"

#if defined(_WIN32)
#  define GUARD_WINDOWS 1
#elif defined(MAP_ANONYMOUS) || defined(MAP_ANON)
#  define GUARD_POSIX 1
#  ifndef MAP_ANONYMOUS
#    define MAP_ANONYMOUS MAP_ANON
#  endif
#endif

#define RANGES    1024u /* records in the quarantine */
#define GHOSTS    256u  /* spans of addresses that left it */
#define CLOCKS    64u   /* arenas whose batches the reporter counts */
#define NAME_MAX_ 40u   /* bytes of a name kept, NUL included */
/* A chunk's alignment: the default backing's (backing.c), or more. */
#define LINE (ARENA_ALIGN > 64 ? ARENA_ALIGN : 64)

struct record {
    _Atomic unsigned seq;     /* odd while written */
    _Atomic uintptr_t lo, hi; /* [lo, hi); hi 0: empty */
    _Atomic uint64_t id, ended;
    _Atomic unsigned clock;
    _Atomic int ending;
    _Atomic unsigned char name[NAME_MAX_]; /* read under `seq` (see find_record()) */
};
/* The records are a sequence lock without fences (which ThreadSanitizer
 * does not model): the writer makes `seq` odd, then stores every field with
 * release order, each of which orders the odd `seq` before it; the reader
 * loads every field with acquire order, which orders its second load of
 * `seq` after them. */

static struct record ring[RANGES];
static unsigned oldest, count; /* under `lock` */
static size_t bytes;           /* under `lock` */
static size_t bound = ARENA_GUARD_QUARANTINE;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* A span of addresses that guarded batches held and that left the
 * quarantine; `exact` 0: joined across a gap that none may have held. */
struct ghost {
    _Atomic uintptr_t lo, hi;
    _Atomic unsigned char exact;
};

static struct ghost ghosts[GHOSTS]; /* sorted; written under `lock` */
static _Atomic unsigned nghosts;    /* written under `lock` */
static _Atomic unsigned ghost_seq;  /* odd while the spans are written */

static struct {
    _Atomic uint64_t id, ended;
} clocks[CLOCKS];
static _Atomic uint64_t identities;

static _Atomic unsigned long long n_batches, n_ranges, n_evicted, n_failures, n_detections;
static _Atomic size_t n_quarantined, n_quarantined_ranges, n_mapped;
static _Atomic unsigned long fail_after;

/* ---- Pages ------------------------------------------------------------------------ */

size_t arena__guard_page(void)
{
#if GUARD_POSIX
    static _Atomic size_t page;
    size_t p = atomic_load_explicit(&page, memory_order_relaxed);
    if (!p) {
        long s = sysconf(_SC_PAGESIZE);
        p = s > 0 ? (size_t)s : 4096;
        atomic_store_explicit(&page, p, memory_order_relaxed);
    }
    return p;
#elif GUARD_WINDOWS
    static _Atomic size_t page;
    size_t p = atomic_load_explicit(&page, memory_order_relaxed);
    if (!p) {
        SYSTEM_INFO si;
        GetSystemInfo(&si);
        p = si.dwPageSize ? (size_t)si.dwPageSize : 4096;
        atomic_store_explicit(&page, p, memory_order_relaxed);
    }
    return p;
#else
    return 0;
#endif
}

/* cppcheck-suppress knownConditionTrueFalse ; false only where no platform maps pages */
bool arena_guard_available(void) { return arena__guard_page() != 0; }

void arena__guard_fail_map(unsigned long after) { atomic_store(&fail_after, after); }

/* True when the test hook fails this mapping. */
static bool injected_failure(void)
{
    unsigned long n = atomic_load_explicit(&fail_after, memory_order_relaxed);
    while (n) {
        if (atomic_compare_exchange_weak(&fail_after, &n, n - 1))
            return n == 1;
    }
    return false;
}

static void *map_pages(size_t n)
{
#if GUARD_POSIX
    char *p = (char *)mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == (char *)MAP_FAILED)
        return NULL;
    if (mprotect(p + n - arena__guard_page(), arena__guard_page(), PROT_NONE) != 0) {
        munmap(p, n);
        return NULL;
    }
    return p;
#elif GUARD_WINDOWS
    DWORD old;
    char *p = (char *)VirtualAlloc(NULL, n, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (!p)
        return NULL;
    if (!VirtualProtect(p + n - arena__guard_page(), arena__guard_page(), PAGE_NOACCESS, &old)) {
        VirtualFree(p, 0, MEM_RELEASE);
        return NULL;
    }
    return p;
#else
    (void)n;
    return NULL;
#endif
}

/* `p` rounded down (up) to the page. */
static uintptr_t page_down(uintptr_t p) { return p & ~(uintptr_t)(arena__guard_page() - 1); }
static uintptr_t page_up(uintptr_t p) { return page_down(p + arena__guard_page() - 1); }

void *arena__guard_map(size_t n)
{
    size_t page = arena__guard_page(), len = 0;
    char *p = NULL;
    /* cppcheck-suppress knownConditionTrueFalse ; 0 only where no platform maps pages */
    if (page && n > 0 && n <= SIZE_MAX - 2 * page && !injected_failure()) {
        len = (size_t)page_up(n);
        p = (char *)map_pages(len + page);
    }
    /* cppcheck-suppress knownConditionTrueFalse ; (as above) */
    if (!p) {
        atomic_fetch_add(&n_failures, 1);
        return NULL;
    }
    atomic_fetch_add(&n_mapped, len + page);
    /* The chunk ends at the guard page, its start aligned as the heap's. */
    return p + ((len - n) & ~(uintptr_t)(LINE - 1));
}

/* Gives the range [p, p + n) back to the system.  Windows releases only a
 * whole allocation, from its start: a range that is its tail goes with it
 * (the tail, retired by a rewind before the chunk, leaves the ring first). */
static void unmap_range(char *p, size_t n)
{
#if GUARD_POSIX
    munmap(p, n);
#elif GUARD_WINDOWS
    MEMORY_BASIC_INFORMATION mi;
    (void)n;
    if (VirtualQuery(p, &mi, sizeof mi) && mi.AllocationBase == (void *)p)
        VirtualFree(p, 0, MEM_RELEASE);
#else
    (void)p;
    (void)n;
#endif
}

void arena__guard_unmap(void *p, size_t n)
{
    uintptr_t lo = page_down((uintptr_t)p), hi = page_up((uintptr_t)p + n) + arena__guard_page();
    atomic_fetch_sub(&n_mapped, (size_t)(hi - lo));
    unmap_range((char *)lo, (size_t)(hi - lo));
}

/* Makes [p, p + n) inaccessible and gives its memory back, the addresses
 * kept.  False when the system refused (the range is then unmapped). */
static bool protect_range(char *p, size_t n)
{
#if GUARD_POSIX
    void *q = mmap(p, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    return q == (void *)p;
#elif GUARD_WINDOWS
    return VirtualFree(p, n, MEM_DECOMMIT) != 0;
#else
    (void)p;
    (void)n;
    return false;
#endif
}

/* ---- The quarantine --------------------------------------------------------------------- */

/* A plain copy of a ghost span. */
struct span {
    uintptr_t lo, hi;
    bool exact;
};

/* Joins span i + 1 into span i of `v` (n spans). */
static void join(struct span *v, unsigned *n, unsigned i, bool exact)
{
    if (v[i + 1].hi > v[i].hi)
        v[i].hi = v[i + 1].hi;
    v[i].exact = exact && v[i].exact && v[i + 1].exact;
    memmove(&v[i + 1], &v[i + 2], (*n - i - 2) * sizeof *v);
    --*n;
}

/* Adds [lo, hi) to the ghosts: merged with the spans it touches, and the
 * two closest joined while they number more than GHOSTS.  Under `lock`. */
static void haunt(uintptr_t lo, uintptr_t hi)
{
    struct span v[GHOSTS + 1];
    unsigned n = atomic_load_explicit(&nghosts, memory_order_relaxed), i, k;
    unsigned seq = atomic_load_explicit(&ghost_seq, memory_order_relaxed);

    for (i = 0, k = 0; i < n; i++, k++) {
        if (k == i && lo < atomic_load_explicit(&ghosts[i].lo, memory_order_relaxed)) {
            v[k++] = (struct span){lo, hi, true};
        }
        v[k].lo = atomic_load_explicit(&ghosts[i].lo, memory_order_relaxed);
        v[k].hi = atomic_load_explicit(&ghosts[i].hi, memory_order_relaxed);
        v[k].exact = atomic_load_explicit(&ghosts[i].exact, memory_order_relaxed) != 0;
    }
    if (k == n)
        v[k++] = (struct span){lo, hi, true};
    n = k;
    for (i = 0; i + 1 < n;) {
        if (v[i + 1].lo <= v[i].hi)
            join(v, &n, i, true);
        else
            i++;
    }
    while (n > GHOSTS) {
        unsigned best = 0;
        for (i = 1; i + 1 < n; i++)
            if (v[i + 1].lo - v[i].hi < v[best + 1].lo - v[best].hi)
                best = i;
        join(v, &n, best, false);
    }
    atomic_store_explicit(&ghost_seq, seq + 1, memory_order_relaxed);
    for (i = 0; i < n; i++) {
        atomic_store_explicit(&ghosts[i].lo, v[i].lo, memory_order_release);
        atomic_store_explicit(&ghosts[i].hi, v[i].hi, memory_order_release);
        atomic_store_explicit(&ghosts[i].exact, v[i].exact, memory_order_release);
    }
    atomic_store_explicit(&nghosts, n, memory_order_release);
    atomic_store_explicit(&ghost_seq, seq + 2, memory_order_release);
}

/* Empties the oldest record, its range unmapped.  Under `lock`. */
static void evict_oldest(void)
{
    struct record *r = &ring[oldest];
    uintptr_t lo = atomic_load_explicit(&r->lo, memory_order_relaxed);
    uintptr_t hi = atomic_load_explicit(&r->hi, memory_order_relaxed);
    unsigned seq = atomic_load_explicit(&r->seq, memory_order_relaxed);

    atomic_store_explicit(&r->seq, seq + 1, memory_order_relaxed);
    atomic_store_explicit(&r->hi, 0, memory_order_release);
    atomic_store_explicit(&r->seq, seq + 2, memory_order_release);
    /* Open to the tools, as a mapping made there later expects. */
    arena__open((void *)lo, (size_t)(hi - lo));
    unmap_range((char *)lo, (size_t)(hi - lo));
    haunt(lo, hi);
    bytes -= (size_t)(hi - lo);
    oldest = (oldest + 1) % RANGES;
    count--;
    atomic_fetch_add(&n_evicted, 1);
}

/* Evicts the oldest records until `n` more bytes fit.  Under `lock`. */
static void make_room(size_t n)
{
    while (count > 0 && (count == RANGES || bytes > bound || n > bound - bytes))
        evict_oldest();
    atomic_store(&n_quarantined, bytes);
    atomic_store(&n_quarantined_ranges, (size_t)count);
}

static void write_record(struct record *r, uintptr_t lo, uintptr_t hi,
                         const struct arena__guard_why *why)
{
    unsigned seq = atomic_load_explicit(&r->seq, memory_order_relaxed);
    size_t len = why->name ? strlen(why->name) : 0;

    size_t k;

    atomic_store_explicit(&r->seq, seq + 1, memory_order_relaxed);
    atomic_store_explicit(&r->lo, lo, memory_order_release);
    atomic_store_explicit(&r->hi, hi, memory_order_release);
    atomic_store_explicit(&r->id, why->id, memory_order_release);
    atomic_store_explicit(&r->ended, why->ended, memory_order_release);
    atomic_store_explicit(&r->clock, why->clock, memory_order_release);
    atomic_store_explicit(&r->ending, why->ending, memory_order_release);
    if (len >= NAME_MAX_)
        len = NAME_MAX_ - 1;
    for (k = 0; k <= len; k++)
        atomic_store_explicit(&r->name[k], k < len ? (unsigned char)why->name[k] : 0,
                              memory_order_release);
    atomic_store_explicit(&r->seq, seq + 2, memory_order_release);
}

void arena__guard_retire(char *p, size_t n, bool guard, const struct arena__guard_why *why)
{
    uintptr_t lo = page_down((uintptr_t)p);
    uintptr_t hi = page_up((uintptr_t)p + n) + (guard ? arena__guard_page() : 0);
    bool ok;

    p = (char *)lo;
    n = (size_t)(hi - lo);
    arena__fork_ready();
    ok = protect_range(p, n);
    atomic_fetch_sub(&n_mapped, n);
    pthread_mutex_lock(&lock);
    if (!ok || n > bound) {
        /* Kept by nothing: its addresses go back at once. */
        arena__open(p, n);
        unmap_range(p, n);
        haunt(lo, hi);
    } else {
        make_room(n);
        write_record(&ring[(oldest + count) % RANGES], (uintptr_t)p, (uintptr_t)p + n, why);
        count++;
        bytes += n;
        atomic_fetch_add(&n_ranges, 1);
    }
    atomic_store(&n_quarantined, bytes);
    atomic_store(&n_quarantined_ranges, (size_t)count);
    pthread_mutex_unlock(&lock);
}

void arena_guard_set_quarantine(size_t n)
{
    arena__fork_ready();
    pthread_mutex_lock(&lock);
    bound = n;
    make_room(0);
    pthread_mutex_unlock(&lock);
}

/* ---- Sampling ------------------------------------------------------------------------- */

/* At most one of `every` and `interval` is nonzero: the sampling in force.
 * `generation` moves at each change, so that an arena's countdown, drawn
 * under the old setting, is drawn anew at its next decision. */
static _Atomic unsigned long every;
static _Atomic uint64_t interval; /* nanoseconds */
static _Atomic unsigned generation = 1;
static _Atomic uint64_t claimed; /* the clock at the last batch sampled by time; 0: none */
static _Atomic int every_read;   /* 0: ARENA_GUARD not read yet */

/* The units of an interval in ARENA_GUARD, in nanoseconds. */
static const struct {
    char name[3];
    uint64_t ns;
} units[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};

/* ARENA_GUARD's value: decimal digits, alone (a count, at most ULONG_MAX)
 * or followed by one unit of `units` (an interval, at most UINT64_MAX
 * nanoseconds).  Anything else is the mode off: a sign, blanks, an empty
 * value, a fraction, another unit, or a number too large, which strtoul()
 * would have taken as some other number. */
static void parse_every(const char *s, unsigned long *n, uint64_t *ns)
{
    uint64_t v = 0;
    const char *digits = s;
    size_t i;

    *n = 0;
    *ns = 0;
    if (!s)
        return;
    for (; *s >= '0' && *s <= '9'; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return;
        v = v * 10 + d;
    }
    if (s == digits)
        return; /* empty, or no number first */
    if (!*s) {
        if (v <= ULONG_MAX)
            *n = (unsigned long)v;
        return;
    }
    for (i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(s, units[i].name) == 0) {
            if (v <= UINT64_MAX / units[i].ns)
                *ns = v * units[i].ns;
            return;
        }
    }
}

/* Reads ARENA_GUARD once, unless arena_guard_sample() or
 * arena_guard_sample_interval() came first. */
static void settle(void)
{
    if (ARENA__UNLIKELY(!atomic_load_explicit(&every_read, memory_order_acquire))) {
        unsigned long n;
        uint64_t ns;
        int expected = 0;
        arena__fork_ready(); /* a fork amid the read would leave it unfinished */
        parse_every(getenv("ARENA_GUARD"), &n, &ns);
        /* A racing arena_guard_sample() wins: its value stays. */
        if (atomic_compare_exchange_strong(&every_read, &expected, 2)) {
            atomic_store(&every, n);
            atomic_store(&interval, ns);
            atomic_store_explicit(&every_read, 1, memory_order_release);
        }
        while (atomic_load_explicit(&every_read, memory_order_acquire) != 1)
            ;
    }
}

unsigned long arena__guard_every(void)
{
    settle();
    return atomic_load_explicit(&every, memory_order_relaxed) |
           (atomic_load_explicit(&interval, memory_order_relaxed) != 0);
}

/* Replaces the sampling in force: a count `n`, or an interval `ns`. */
static void set_sampling(unsigned long n, uint64_t ns)
{
    settle();
    atomic_store(&every, n);
    atomic_store(&interval, ns);
    atomic_fetch_add(&generation, 1);
}

void arena_guard_sample(unsigned long n) { set_sampling(n, 0); }

unsigned long arena_guard_sampling(void)
{
    settle();
    return atomic_load_explicit(&every, memory_order_relaxed);
}

void arena_guard_sample_interval(uint64_t ns) { set_sampling(0, ns); }

uint64_t arena_guard_sampling_interval(void)
{
    settle();
    return atomic_load_explicit(&interval, memory_order_relaxed);
}

void arena__guard_fork(bool hold)
{
    if (!hold) {
        pthread_mutex_unlock(&lock);
        return;
    }
    /* A thread amid the first read of the rate finishes it before the fork
     * (in the child, no thread would, and every arena would wait). */
    while (atomic_load_explicit(&every_read, memory_order_acquire) == 2)
        ;
    pthread_mutex_lock(&lock);
}

static ARENA__TLS uint64_t draws; /* xorshift64* state; 0: not seeded */

/* The unguarded batches before the next sampled one at 1 in `n`: uniform
 * in [0, 2(n - 1)], so that each batch is guarded with probability 1/n. */
static uint64_t draw_gap(unsigned long n)
{
    uint64_t x = draws, span;
    if (n <= 1)
        return 0;
    if (!x) {
        x = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&draws ^
            atomic_fetch_add(&identities, 0) * 0x9E3779B97F4A7C15u;
        x |= 1;
    }
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    draws = x;
    span = (uint64_t)n - 1 > UINT64_MAX / 4 ? UINT64_MAX / 2 : 2 * ((uint64_t)n - 1) + 1;
    return (x * 0x2545F4914F6CDD1Du >> 11) % span;
}

/* A monotonic clock in nanoseconds, the same in every thread. */
static uint64_t clock_ns(void)
{
#if GUARD_POSIX
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#elif GUARD_WINDOWS
    LARGE_INTEGER c, f;
    uint64_t t, hz;
    QueryPerformanceCounter(&c);
    QueryPerformanceFrequency(&f);
    t = (uint64_t)c.QuadPart;
    hz = (uint64_t)f.QuadPart ? (uint64_t)f.QuadPart : 1;
    return t / hz * 1000000000u + t % hz * 1000000000u / hz;
#else
    return 0;
#endif
}

/* How often an arena reads the clock while it waits for the next interval:
 * about CHECKS times an interval, so that the first batch it sees after the
 * interval ends begins at most about an eighth of an interval late. */
#define CHECKS 8u

/* Sampling by time, at a batch whose countdown ended: the batch is guarded
 * when an interval has passed since the process's last such batch, or none
 * was (and this arena, of those that see it so, is the one that claims
 * it); then the countdown is armed for
 * the batches this arena runs in the time to its next look, at the rate it
 * ran them since its last (at most twice as many as then: a rate measured
 * over a few fast batches does not put the next look far off). */
static bool draw_timed(struct arena__guard_state *g, uint64_t ns, bool fresh)
{
    uint64_t now = clock_ns(), last = atomic_load(&claimed), left, span, most, gap;
    uint64_t ran = fresh ? 0 : (uint32_t)((uint32_t)g->ended - g->seen);
    bool on = false;

    for (;;) {
        /* (A claim of another thread may postdate this thread's `now`.) */
        if (last && (now < last || now - last < ns)) {
            left = now < last ? ns : ns - (now - last);
            break;
        }
        if (atomic_compare_exchange_weak(&claimed, &last, now ? now : 1)) {
            on = true;
            left = ns;
            break;
        }
    }
    span = left < ns / CHECKS ? left : ns / CHECKS;
    most = 2 * ran + 1;
    if (fresh || now <= g->look || (ran && span > UINT64_MAX / ran))
        gap = most;
    else
        gap = ran * span / (now - g->look);
    g->gap = gap < most ? gap : most;
    g->look = now;
    g->seen = (uint32_t)g->ended;
    return on;
}

bool arena__guard_pass(struct arena__guard_state *g)
{
    if (g->gap == 0 || g->gen != atomic_load_explicit(&generation, memory_order_relaxed))
        return false;
    g->gap--;
    return true;
}

bool arena__guard_draw(struct arena__guard_state *g)
{
    unsigned gen = atomic_load_explicit(&generation, memory_order_relaxed);
    unsigned long n = atomic_load_explicit(&every, memory_order_relaxed);
    uint64_t ns = atomic_load_explicit(&interval, memory_order_relaxed);
    bool fresh = g->gen != gen, on = false;

    if (fresh) {
        g->gen = gen;
        g->gap = ns ? 0 : draw_gap(n);
    }
    if (g->gap == 0) {
        if (ns) {
            on = draw_timed(g, ns, fresh);
        } else {
            on = n != 0;
            g->gap = draw_gap(n);
        }
    } else {
        g->gap--;
    }
    if (!on && g->gap < ARENA__INLINE_RESETS)
        g->cut = ARENA__INLINE_RESETS - (uint32_t)g->gap;
    return on;
}

void arena__guard_began(void) { atomic_fetch_add_explicit(&n_batches, 1, memory_order_relaxed); }

uint64_t arena__guard_identity(uint32_t *clock)
{
    uint64_t id = atomic_fetch_add(&identities, 1) + 1;
    *clock = (uint32_t)(id % CLOCKS);
    atomic_store(&clocks[*clock].id, id);
    return id;
}

void arena__guard_tick(uint64_t id, uint32_t clock, uint64_t ended)
{
    if (clock < CLOCKS && atomic_load_explicit(&clocks[clock].id, memory_order_relaxed) == id)
        atomic_store_explicit(&clocks[clock].ended, ended, memory_order_relaxed);
}

static ARENA__TLS int cause;

void arena__guard_cause(int ending) { cause = ending; }

int arena__guard_caused(void) { return cause; }

void arena_guard_get_stats(arena_guard_stats *out)
{
    memset(out, 0, sizeof *out);
    out->batches = atomic_load(&n_batches);
    out->ranges = atomic_load(&n_ranges);
    out->evicted = atomic_load(&n_evicted);
    out->map_failures = atomic_load(&n_failures);
    out->detections = atomic_load(&n_detections);
    out->quarantined = atomic_load(&n_quarantined);
    out->quarantined_ranges = atomic_load(&n_quarantined_ranges);
    out->mapped = atomic_load(&n_mapped);
}

/* ---- The reporter (async-signal-safe from here on) ---------------------------------- */

static const char *const endings[ARENA__END_KINDS] = {"?",
                                                      "arena_reset",
                                                      "arena_reset_to",
                                                      "a rewind (arena_rewind, arena_scope_end)",
                                                      "arena_release",
                                                      "arena_cache_recycle",
                                                      "the end of a scratch scope",
                                                      "arena_shared_reset"};

/* What the handler found: a copy of a record, read whole. */
struct found {
    uintptr_t lo, hi;
    uint64_t id, ended;
    unsigned clock;
    int ending;
    char name[NAME_MAX_];
    int ghost; /* GHOST_*: what the ghosts say of the address */
};

/* Copies the record that holds `addr`; false when none does. */
static bool find_record(uintptr_t addr, struct found *f)
{
    unsigned i, k;
    for (i = 0; i < RANGES; i++) {
        const struct record *r = &ring[i];
        unsigned seq = atomic_load_explicit(&r->seq, memory_order_acquire);
        if (seq & 1)
            continue;
        f->lo = atomic_load_explicit(&r->lo, memory_order_acquire);
        f->hi = atomic_load_explicit(&r->hi, memory_order_acquire);
        if (addr < f->lo || addr >= f->hi)
            continue;
        f->id = atomic_load_explicit(&r->id, memory_order_acquire);
        f->ended = atomic_load_explicit(&r->ended, memory_order_acquire);
        f->clock = atomic_load_explicit(&r->clock, memory_order_acquire);
        f->ending = atomic_load_explicit(&r->ending, memory_order_acquire);
        for (k = 0; k < NAME_MAX_; k++)
            f->name[k] = (char)atomic_load_explicit(&r->name[k], memory_order_acquire);
        f->name[NAME_MAX_ - 1] = '\0';
        if (atomic_load_explicit(&r->seq, memory_order_relaxed) == seq)
            return true;
    }
    return false;
}

bool arena__guard_retired_by(const void *addr, uint64_t id)
{
    struct found f;
    return id != 0 && find_record((uintptr_t)addr, &f) && f.id == id;
}

/* A bounded text buffer that the handler fills without the C library. */
struct line {
    char buf[512];
    size_t len;
};

static void put(struct line *l, const char *s)
{
    while (*s && l->len < sizeof l->buf - 1)
        l->buf[l->len++] = *s++;
}

static void put_number(struct line *l, uint64_t v, unsigned base)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v && n < (int)sizeof digits);
    if (base == 16)
        put(l, "0x");
    while (n-- > 0 && l->len < sizeof l->buf - 1)
        l->buf[l->len++] = digits[n];
}

/* What the ghosts say of `addr` (see the file's comment). */
enum { GHOST_NONE, GHOST_MAYBE, GHOST_HELD };

/* Whether a ghost span covers `addr`: exactly (GHOST_HELD), or across a
 * joined gap (GHOST_MAYBE, which is also the answer when the spans were
 * being written at every try). */
static int ghost_at(uintptr_t addr)
{
    int tries;
    for (tries = 0; tries < 4; tries++) {
        unsigned seq = atomic_load_explicit(&ghost_seq, memory_order_acquire);
        unsigned n = atomic_load_explicit(&nghosts, memory_order_acquire), i;
        int found = GHOST_NONE;
        if (seq & 1)
            continue;
        for (i = 0; i < n && i < GHOSTS; i++) {
            uintptr_t lo = atomic_load_explicit(&ghosts[i].lo, memory_order_acquire);
            uintptr_t hi = atomic_load_explicit(&ghosts[i].hi, memory_order_acquire);
            bool exact = atomic_load_explicit(&ghosts[i].exact, memory_order_acquire) != 0;
            if (addr >= lo && addr < hi) {
                found = exact ? GHOST_HELD : GHOST_MAYBE;
                break;
            }
        }
        if (atomic_load_explicit(&ghost_seq, memory_order_relaxed) == seq)
            return found;
    }
    return GHOST_MAYBE;
}

/* The arena of `f`, its ending and the batches since. */
static void put_batch(struct line *l, const struct found *f)
{
    if (f->name[0]) {
        put(l, "\"");
        put(l, f->name);
        put(l, "\"");
    } else {
        put(l, "(unnamed)");
    }
    put(l, f->ghost == GHOST_NONE ? ", expired by " : " held last, expired by ");
    put(l, endings[f->ending > 0 && f->ending < ARENA__END_KINDS ? f->ending : 0]);
    if (f->clock < CLOCKS &&
        atomic_load_explicit(&clocks[f->clock].id, memory_order_relaxed) == f->id) {
        uint64_t now = atomic_load_explicit(&clocks[f->clock].ended, memory_order_relaxed);
        if (now > f->ended) {
            put(l, ", ");
            put_number(l, now - f->ended, 10);
            put(l, now - f->ended == 1 ? " batch ago" : " batches ago");
        } else {
            put(l, " in the batch in progress");
        }
    } else {
        put(l, " (batches since: not counted, the arena's clock was reused)");
    }
}

/* The report of a fault at `addr`; false when the mode knows nothing of it.
 * A range quarantined now names its arena, unless an earlier guarded batch
 * held (or may have held) the address too: then the pointer may be that
 * one's, and the report says both.  An address that left the quarantine is
 * reported only where a guarded batch held it, and without a name: none is
 * known. */
static bool describe(struct line *l, uintptr_t addr)
{
    struct found f;
    bool recorded = find_record(addr, &f);

    f.ghost = ghost_at(addr);
    if (!recorded && f.ghost != GHOST_HELD)
        return false;
    put(l, "arena: guarded memory accessed after its batch ended: address ");
    put_number(l, addr, 16);
    if (!recorded) {
        put(l, " lies in memory that a guarded batch held; the range left the quarantine, "
               "and its arena and ending are no longer recorded\n");
        return true;
    }
    put(l, " in [");
    put_number(l, f.lo, 16);
    put(l, ", ");
    put_number(l, f.hi, 16);
    put(l, f.ghost == GHOST_NONE ? ") of arena " : "), which arena ");
    put_batch(l, &f);
    if (f.ghost == GHOST_HELD)
        put(l, "; an earlier guarded batch, no longer recorded, held it before");
    else if (f.ghost == GHOST_MAYBE)
        put(l, "; an earlier guarded batch, no longer recorded, may have held it before");
    if (f.ghost != GHOST_NONE)
        put(l, ": the pointer may be from either");
    put(l, "\n");
    return true;
}

size_t arena__guard_describe(const void *addr, char *buf, size_t len)
{
    struct line l;
    l.len = 0;
    if (!describe(&l, (uintptr_t)addr))
        return 0;
    if (len) {
        size_t n = l.len < len - 1 ? l.len : len - 1;
        memcpy(buf, l.buf, n);
        buf[n] = '\0';
    }
    return l.len;
}

static _Atomic int reporting; /* 1: installed */

#if GUARD_POSIX
static struct sigaction previous[2]; /* SIGSEGV's, SIGBUS's */

static void on_fault(int sig, siginfo_t *si, void *context)
{
    struct sigaction *prev = &previous[sig == SIGBUS];
    struct line l;
    l.len = 0;
    if (si && describe(&l, (uintptr_t)si->si_addr)) {
        atomic_fetch_add(&n_detections, 1);
        (void)!write(STDERR_FILENO, l.buf, l.len);
        /* The fault happens again on return, under the previous handler. */
        sigaction(sig, prev, NULL);
        return;
    }
    if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction) {
        prev->sa_sigaction(sig, si, context);
    } else if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
        prev->sa_handler(sig);
    } else {
        sigaction(sig, prev, NULL);
    }
}

static bool install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &previous[0]) != 0)
        return false;
    if (sigaction(SIGBUS, &sa, &previous[1]) != 0) {
        sigaction(SIGSEGV, &previous[0], NULL);
        return false;
    }
    return true;
}
#elif GUARD_WINDOWS
static LONG CALLBACK on_exception(EXCEPTION_POINTERS *e)
{
    const EXCEPTION_RECORD *r = e->ExceptionRecord;
    struct line l;
    l.len = 0;
    if (r->ExceptionCode == EXCEPTION_ACCESS_VIOLATION && r->NumberParameters >= 2 &&
        describe(&l, (uintptr_t)r->ExceptionInformation[1])) {
        DWORD done;
        atomic_fetch_add(&n_detections, 1);
        WriteFile(GetStdHandle(STD_ERROR_HANDLE), l.buf, (DWORD)l.len, &done, NULL);
    }
    return EXCEPTION_CONTINUE_SEARCH;
}

static bool install(void) { return AddVectoredExceptionHandler(1, on_exception) != NULL; }
#else
static bool install(void) { return false; }
#endif

bool arena_guard_report_faults(void)
{
    bool ok = true;
    /* cppcheck-suppress knownConditionTrueFalse ; (see arena_guard_available()) */
    if (!arena_guard_available())
        return false;
    arena__fork_ready();
    pthread_mutex_lock(&lock);
    if (!atomic_load(&reporting)) {
        ok = install();
        atomic_store(&reporting, ok);
    }
    pthread_mutex_unlock(&lock);
    return ok;
}
