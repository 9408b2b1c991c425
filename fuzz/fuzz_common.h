/*
 * Shared by the libFuzzer targets: an input reader, a backing allocator that
 * fails on demand and checks that every block comes back with its size, and a
 * recording error handler.  A failed check aborts (libFuzzer keeps the input).
 */
#ifndef ARENA_FUZZ_COMMON_H
#define ARENA_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arena/arena.h>

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                  \
        }                                                                             \
    } while (0)

/* ---- Input ---------------------------------------------------------------------- */

typedef struct input {
    const uint8_t *p;
    size_t n;
} input;

static inline uint8_t take8(input *in)
{
    uint8_t v = 0;
    if (in->n) {
        v = *in->p++;
        in->n--;
    }
    return v;
}

static inline uint32_t take16(input *in)
{
    uint32_t lo = take8(in);
    return lo | (uint32_t)take8(in) << 8;
}

/* A size: mostly small, sometimes around a chunk, rarely huge. */
static inline size_t take_size(input *in)
{
    uint8_t kind = take8(in);
    switch (kind >> 5) {
    case 0: case 1: case 2: return kind & 31u;
    case 3: case 4: return take16(in) & 1023u;
    case 5: return take16(in) & 16383u;
    case 6: return (size_t)take16(in) * 4 + (kind & 3u);
    default: return SIZE_MAX - (kind & 31u);
    }
}

/* ---- Backing allocator ------------------------------------------------------------- */

#define FB_MAX 4096

typedef struct fuzz_backing {
    size_t calls, fail_at, live, bytes;
    struct { void *p; size_t n; } blocks[FB_MAX];
} fuzz_backing;

static void *fb_alloc(void *ctx, size_t n)
{
    fuzz_backing *fb = (fuzz_backing *)ctx;
    void *p;
    fb->calls++;
    if (fb->calls == fb->fail_at || fb->live == FB_MAX || n > (64u << 20))
        return NULL;
    p = malloc(n);
    if (!p)
        return NULL;
    CHECK((uintptr_t)p % ARENA_ALIGN == 0);
    fb->blocks[fb->live].p = p;
    fb->blocks[fb->live].n = n;
    fb->live++;
    fb->bytes += n;
    return p;
}

static void fb_free(void *ctx, void *p, size_t n)
{
    fuzz_backing *fb = (fuzz_backing *)ctx;
    size_t i;
    for (i = 0; i < fb->live; i++) {
        if (fb->blocks[i].p == p) {
            CHECK(fb->blocks[i].n == n);
            fb->bytes -= n;
            fb->blocks[i] = fb->blocks[--fb->live];
            free(p);
            return;
        }
    }
    CHECK(!"free of a block the backing never handed out");
}

/* ---- Errors ------------------------------------------------------------------------- */

static int errors[16];

static void record(arena_error code, const char *message, void *ctx)
{
    static int verbose = -1;
    (void)ctx;
    if (verbose < 0)
        verbose = getenv("ARENA_FUZZ_VERBOSE") != NULL;
    if (verbose)
        fprintf(stderr, "reported: %s: %s\n", arena_error_name(code), message);
    CHECK((int)code > 0 && (int)code < 16);
    errors[code]++;
}

static inline int total_errors(void)
{
    int i, n = 0;
    for (i = 0; i < 16; i++)
        n += errors[i];
    return n;
}

/* The start of every input: no errors recorded, the recording handler
 * installed, and `al` wired to a fresh recording backing `fb`. */
static inline void fuzz_begin(fuzz_backing *fb, arena_allocator *al)
{
    memset(errors, 0, sizeof errors);
    arena_set_error_handler(record, NULL);
    memset(fb, 0, sizeof *fb);
    al->alloc = fb_alloc;
    al->free = fb_free;
    al->ctx = fb;
}

#endif /* ARENA_FUZZ_COMMON_H */
