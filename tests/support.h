/* SPDX-License-Identifier: MIT */
/*
 * Test support shared by the cmocka suites and the fuzzers: a backing
 * allocator that records every chunk and can fail on the Nth call, an error
 * handler that records instead of aborting, and value patterns.
 *
 * A fuzzer defines TEST_NO_CMOCKA before including it: a failed check then
 * prints and aborts (libFuzzer keeps the input), where a suite fails its test.
 */
#ifndef ARENA_TEST_SUPPORT_H
#define ARENA_TEST_SUPPORT_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arena/arena.h>
#include <arena/guard.h>

#ifdef TEST_NO_CMOCKA
#  define TEST_FAIL(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr), abort())
#else
#  include <cmocka.h>
#  define TEST_FAIL(...) fail_msg(__VA_ARGS__)
#endif

/* A check that holds in every build, in suites and fuzzers alike. */
#define TEST_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      TEST_FAIL("%s:%d: check failed: %s", __FILE__, __LINE__, #cond);                             \
  } while (0)

#define TB_MAX_LIVE 16384
#define TB_PAGE     ((size_t)4096)

/* Requests above this many bytes are refused as out-of-memory without
 * calling malloc: tests of sizes near SIZE_MAX or ARENA_REF_MAX must not
 * allocate gigabytes, nor trip AddressSanitizer's allocation-size check. */
#define TB_HUGE ((size_t)256 << 20)

/* The byte a fresh block is filled with: backing memory is never assumed to
 * be zero. */
#define TB_DIRT 0xA5

/* Aligned heap blocks: Windows has _aligned_malloc/_aligned_free instead of
 * aligned_alloc (its free() cannot take such a block). */
#if defined(_WIN32)
#  include <malloc.h>
#  define test_aligned_alloc(align, n) _aligned_malloc((n), (align))
#  define test_aligned_free(p)         _aligned_free(p)
#else
#  define test_aligned_alloc(align, n) aligned_alloc((align), (n))
#  define test_aligned_free(p)         free(p)
#endif

/* A backing allocator that records what is live and fails the call numbered
 * `fail_at` (1-based; 0: never) or every call from `fail_from` on.  Fresh
 * blocks are filled with TB_DIRT.  Big: keep instances static. */
typedef struct test_backing {
    size_t calls;      /* alloc calls so far */
    size_t fail_at;    /* fail exactly this call */
    size_t fail_from;  /* fail this call and every later one (0: never) */
    size_t failed;     /* alloc calls that returned NULL */
    size_t live;       /* allocations not yet freed */
    size_t live_bytes; /* their bytes */
    size_t peak_bytes; /* the most live_bytes at once (set it to start again) */
    size_t frees;
    size_t max_request; /* the largest size asked */
    struct {
        void *p;
        size_t n;
    } blocks[TB_MAX_LIVE];
} test_backing;

static void *tb_alloc(void *ctx, size_t n)
{
    test_backing *tb = (test_backing *)ctx;
    size_t align;
    void *p;
    tb->calls++;
    if (n > tb->max_request)
        tb->max_request = n;
    if (tb->calls == tb->fail_at || (tb->fail_from && tb->calls >= tb->fail_from) || n > TB_HUGE) {
        tb->failed++;
        return NULL;
    }
    TEST_CHECK(tb->live < TB_MAX_LIVE);
    /* A block of n bytes is aligned to the largest power of two <= n (a page
     * at most): any value aligned up to a page that fits a block starts at
     * the same offset in it in every run, so a workload makes the same
     * backing calls each time (the failure sweeps, and a fuzzer replaying an
     * input, rely on it) whatever addresses malloc picks.  (Pages for small
     * blocks would fault in a fresh page per chunk of a fuzzer's tiny arenas.) */
    for (align = TB_PAGE; align > ARENA_ALIGN && align > n; align /= 2)
        ;
    p = test_aligned_alloc(align, (n + align - 1) / align * align + (n == 0) * align);
    if (!p) {
        tb->failed++;
        return NULL;
    }
    TEST_CHECK((uintptr_t)p % ARENA_ALIGN == 0);
    memset(p, TB_DIRT, n);
    tb->blocks[tb->live].p = p;
    tb->blocks[tb->live].n = n;
    tb->live++;
    tb->live_bytes += n;
    if (tb->live_bytes > tb->peak_bytes)
        tb->peak_bytes = tb->live_bytes;
    return p;
}

static void tb_free(void *ctx, void *p, size_t n)
{
    test_backing *tb = (test_backing *)ctx;
    size_t i;
    for (i = 0; i < tb->live; i++) {
        if (tb->blocks[i].p == p) {
            TEST_CHECK(tb->blocks[i].n == n); /* freed with the size asked */
            tb->live_bytes -= n;
            tb->blocks[i] = tb->blocks[--tb->live];
            tb->frees++;
            test_aligned_free(p);
            return;
        }
    }
    TEST_FAIL("backing free of %p (%zu bytes), which it never handed out", p, n);
}

/* Clears `tb`'s counters and settings (the block table is read only up to
 * `live`: a fuzzer need not clear its 256 KiB at every input). */
static inline void tb_reset(test_backing *tb) { memset(tb, 0, offsetof(test_backing, blocks)); }

/* An allocator over `tb` as it stands. */
static inline arena_allocator tb_use(test_backing *tb)
{
    arena_allocator al;
    al.alloc = tb_alloc;
    al.free = tb_free;
    al.ctx = tb;
    return al;
}

/* An allocator over `tb`, reset. */
static inline arena_allocator tb_allocator(test_backing *tb)
{
    tb_reset(tb);
    return tb_use(tb);
}

/* An error handler that records instead of aborting. */
#define TEST_ERROR_CODES 16

typedef struct test_errors {
    int count;
    int expected; /* misuse made on purpose and seen reported (test_misuse_reported()) */
    arena_error last;
    int of_code[TEST_ERROR_CODES]; /* count per code (0: codes out of range) */
    char message[256];
} test_errors;

static test_errors recorded_errors;

static void record_error(arena_error code, const char *message, void *ctx)
{
    (void)ctx;
    recorded_errors.count++;
    recorded_errors.last = code;
    recorded_errors.of_code[(unsigned)code < TEST_ERROR_CODES ? (unsigned)code : 0]++;
    strncpy(recorded_errors.message, message, sizeof recorded_errors.message - 1);
}

/* A shadow of one of arena_get_stats()'s peaks: *peak becomes `now` where
 * that is larger, compared signed, as the library compares sizes (a size
 * that wrapped below zero is no peak). */
static inline void test_note_peak(size_t *peak, size_t now)
{
    if ((ptrdiff_t)now > (ptrdiff_t)*peak)
        *peak = now;
}

/* After a misuse made on purpose, with `before` the count taken just before
 * it: true when it was reported exactly once, with `code`.  It then counts as
 * expected, so that `count == expected` later says nothing else was reported. */
static inline bool test_misuse_reported(int before, arena_error code)
{
    if (recorded_errors.count != before + 1 || recorded_errors.last != code)
        return false;
    recorded_errors.expected++;
    return true;
}

static inline void record_errors(void)
{
    memset(&recorded_errors, 0, sizeof recorded_errors);
    arena_set_error_handler(record_error, NULL);
}

static inline void restore_errors(void) { arena_set_error_handler(NULL, NULL); }

/* cmocka setup/teardown that install and remove the recording handler. */
static inline int setup_record_errors(void **state)
{
    (void)state;
    record_errors();
    return 0;
}

static inline int teardown_record_errors(void **state)
{
    (void)state;
    restore_errors();
    return 0;
}

/* ---- Build flavours ------------------------------------------------------------ */

#if defined(__SANITIZE_ADDRESS__)
#  define TEST_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define TEST_ASAN 1
#  endif
#endif
#ifndef TEST_ASAN
#  define TEST_ASAN 0
#endif

#if TEST_ASAN
/* Sizes near SIZE_MAX reach malloc in some tests (the default backing): they
 * must come back NULL, not stop the process.  A fuzzer also keeps 64 MiB of
 * freed memory in quarantine instead of 256: far more than one input frees,
 * so a use after free in an input is still caught, and memory is reused
 * while it is still mapped (the page faults were a fifth of the run time). */
#  ifdef TEST_NO_CMOCKA
#    define TEST_ASAN_OPTIONS "allocator_may_return_null=1:quarantine_size_mb=64"
#  else
#    define TEST_ASAN_OPTIONS "allocator_may_return_null=1"
#  endif
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return TEST_ASAN_OPTIONS; }
#endif

/* Release builds pack values exactly as arena.h describes (no guard bytes), so
 * tests may assert exact placement there and only there.  Under Valgrind the
 * library guards values too (decided at run time): test_packed() says. */
#define TEST_PACKED (!TEST_ASAN && !ARENA_CHECKED)

/* Reading memory the arena has marked undefined (under Valgrind) on purpose. */
#if defined(__has_include)
#  if __has_include(<valgrind/memcheck.h>)
#    include <valgrind/memcheck.h>
#    define TEST_MAKE_DEFINED(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#  endif
#endif
#ifndef TEST_MAKE_DEFINED
#  define TEST_MAKE_DEFINED(p, n) ((void)(p), (void)(n))
#endif

/* Bytes the checked build keeps before each value (its header): the first
 * value of a chunk starts that far from the chunk's start. */
#define TEST_LEAD ((size_t)(ARENA_CHECKED ? (ARENA_ALIGN > 32 ? ARENA_ALIGN : 32) : 0))

/* Whether a chunk of ARENA_REF_MAX bytes plus the checked build's header and
 * guard stays within PTRDIFF_MAX, the most one object may span.  Not on a
 * 32-bit target (PTRDIFF_MAX == ARENA_REF_MAX): there a checked arena refuses
 * that chunk without asking its backing, and reports out-of-memory. */
#define TEST_REF_MAX_CHUNK_ASKED (!ARENA_CHECKED || (size_t)PTRDIFF_MAX - ARENA_REF_MAX >= 4096)

/* The chunk index a ref names (a checked build keeps a tag in bits 20-30 of
 * chunks below 2^20, and sets the top bit to say so). */
static inline uint32_t test_ref_chunk(arena_ref r)
{
    return ARENA_CHECKED && (r.chunk & 0x80000000u) ? r.chunk & 0xFFFFFu : r.chunk;
}

/* Whether memcheck watches (the library then tells it about every value);
 * any other Valgrind tool leaves the library as it is natively. */
static inline bool test_on_valgrind(void)
{
#ifdef RUNNING_ON_VALGRIND
    char probe = 0, vbits;
    return RUNNING_ON_VALGRIND != 0 && VALGRIND_GET_VBITS(&probe, &vbits, 1) == 1;
#else
    return false;
#endif
}

static inline bool test_packed(void) { return TEST_PACKED && !test_on_valgrind(); }

/* Whether `q`, the value placed after a rewind to a mark taken before `p`
 * was placed, is where the contract puts it: at `p`; in a guarded batch
 * (arena/guard.h), whose rewind retires the pages past the mark's, at `p`
 * when p lay in the mark's page, else outside p's page (4 KiB: no page is
 * smaller, so this holds for larger ones). */
static inline bool test_rewound_to(bool guarded, const void *p, const void *q)
{
    if (!guarded || p == q)
        return p == q;
    return ((uintptr_t)p >> 12) != ((uintptr_t)q >> 12);
}

/* ---- Patterns ------------------------------------------------------------------ */

/* The bytes of the value numbered id: a window, chosen by id, into one
 * buffer of random bytes (NULs included), so that filling and checking are
 * a memcpy and a memcmp. */
#define PATTERN_SPAN    ((size_t)1 << 18)
#define PATTERN_OFFSETS 4093u

static unsigned char pattern_src[PATTERN_SPAN + PATTERN_OFFSETS];

static inline const unsigned char *pattern_of(uint64_t id, size_t n)
{
    static bool ready;
    if (!ready) {
        uint64_t x = 0x243F6A8885A308D3ull;
        size_t i;
        for (i = 0; i < sizeof pattern_src; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            pattern_src[i] = (unsigned char)(x >> 24);
        }
        ready = true;
    }
    TEST_CHECK(n <= PATTERN_SPAN);
    return pattern_src + (size_t)(((id + 1) * 0x9E3779B97F4A7C15ull) >> 33) % PATTERN_OFFSETS;
}

static inline void fill_pattern(void *p, size_t n, uint64_t id)
{
    if (n)
        memcpy(p, pattern_of(id, n), n);
}

/* Index of the first byte that differs from the pattern, or n. */
static inline size_t pattern_mismatch(const void *p, size_t n, uint64_t id)
{
    const unsigned char *want = pattern_of(id, n);
    size_t i;
    if (n == 0 || memcmp(p, want, n) == 0)
        return n;
    for (i = 0; ((const unsigned char *)p)[i] == want[i]; i++)
        ;
    return i;
}

static inline bool has_pattern(const void *p, size_t n, uint64_t id)
{
    return pattern_mismatch(p, n, id) == n;
}

/* (Every byte zero: the first, and each equal to the one before it; a
 * memcmp, not a loop, which a fuzzer would trace byte by byte.) */
static inline bool all_zero(const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    return n == 0 || (b[0] == 0 && memcmp(b, b + 1, n - 1) == 0);
}

/* n, hidden from the optimizer (so that it does not warn about a huge size
 * passed with a small buffer on purpose). */
static inline size_t opaque_size(size_t n)
{
    volatile size_t v = n;
    return v;
}

static inline bool is_aligned(const void *p, size_t align)
{
    return ((uintptr_t)p & (uintptr_t)(align - 1)) == 0;
}

/* The padding an oversized value's own chunk holds beyond the value: chunks
 * start ARENA_ALIGN-aligned (16 on x86-64, 8 on s390x and armhf), so a larger
 * alignment may need up to align - ARENA_ALIGN more bytes. */
static inline size_t over_align(size_t align)
{
    return align > ARENA_ALIGN ? align - ARENA_ALIGN : 0;
}

#endif /* ARENA_TEST_SUPPORT_H */
