/* SPDX-License-Identifier: MIT */
/*
 * Instrumentation: what makes the arena's values visible to the tools.
 *
 * When the library must see every allocation (ASan, Valgrind, the checked
 * build: see arena__instrumented()), each value is laid out as
 *
 *     [pad][header: checked build only][value][guard]
 *
 * The value starts GRANULE-aligned (ASan's shadow granularity: a poisoned byte
 * just past a value needs the value to own the start of its granule), and the
 * guard runs from its end to the next granule boundary plus one whole granule,
 * so the position stays GRANULE-aligned.  Guards, pads, headers and the unused
 * part of a chunk are closed (poisoned / no-access); the checked build also
 * fills them with ARENA__CLOBBER and verifies them at reset and rewind.
 *
 * The header (checked build) holds the value's size and a tag drawn from a
 * per-arena serial; a ref carries the same tag in bits its fields cannot use
 * (see arena__instr_tag_ref()), so resolving a ref whose value has expired
 * (and maybe been overwritten) is detected in O(1).
 *
 * A guard is cut short at the end of a chunk of the chunk size, so values
 * still fill such a chunk exactly.  In the checked build every chunk the
 * arena allocates has a header's worth of bytes on top of its capacity
 * (arena__chunk_extra()).  A value that fits the chunk size then still fits
 * a fresh chunk, and an oversized chunk has room for its value's guard too.
 * arena_retained() reports capacities exactly as documented.
 *
 * src/arena.c reaches this file only through the hooks of instrument.h,
 * which test a constant first.  None of it runs in a plain build, Valgrind
 * aside, which is decided once at load.
 */
#include <string.h>

#include "reuse.h"

#define GRANULE    ARENA__GRANULE
#define HDR        arena__hdr()
#define HDR_MAGIC  0x5A6C0000u /* top bits of a header's first word */
#define FREE_MAGIC 0x5A6DF000u /* the first word of a free block's node */
#define TAG_BITS   12u         /* of a value's tag, in its header (see arena__instr_tag_ref()) */

struct header {
    uint32_t word;  /* HDR_MAGIC | tag */
    uint32_t check; /* ~word ^ folded size */
    uint64_t size;
    uint64_t saves; /* the arena's count of marks taken when the value was placed */
    uint64_t seal;  /* ~saves: the bytes just before the value are checked too */
};

#if defined(ARENA_HAVE_VALGRIND) && ARENA_HAVE_VALGRIND
int arena__valgrind = -1;
int arena__inline_ok; /* 0 until asked: the inline paths call the library, which asks */

/* Decided once: the library never asks again.  Only memcheck answers its
 * client requests: under any other tool (callgrind, cachegrind, massif,
 * helgrind, DRD, none) they return 0, so that the state of every byte would
 * read as freed, and the library runs as it does natively.  A byte of the
 * stack is addressable and defined, which memcheck reports with 1. */
void arena__detect_valgrind(void)
{
    char probe = 0, vbits;
    arena__valgrind = RUNNING_ON_VALGRIND != 0 && VALGRIND_GET_VBITS(&probe, &vbits, 1) == 1;
    arena__inline_ok = !arena__instrumented();
}

/* Before main, so that a program whose constructors make no arena has the
 * answer before its first call. */
__attribute__((constructor)) static void detect_valgrind(void) { arena__ask_valgrind(); }
#else
int arena__inline_ok = !(ARENA__ASAN || ARENA_CHECKED);
#endif

#if ARENA_CHECKED
/* What a program compiled with the checked headers refers to (arena/version.h):
 * only a checked library defines it. */
ARENA_API const char arena__checked_library = 1;
#endif

/* ---- Headers, tags, clobbering, sentinels ------------------------------------------ */

/* The serial lives in the top bits of flags.  It is deterministic (refs stay
 * reproducible from run to run); a ref resolved against another arena is
 * caught when the two arenas' histories differ at that place. */
static uint32_t next_tag(arena *a)
{
    uint32_t serial = arena__cold(a)->flags >> 8;
    serial = (serial + 1) & 0xFFFFFFu;
    if (serial == 0)
        serial = 1;
    arena__cold(a)->flags = (arena__cold(a)->flags & 0xFFu) | (serial << 8);
    return serial & ((1u << TAG_BITS) - 1);
}

static uint32_t header_check(uint32_t word, uint64_t size)
{
    return ~word ^ (uint32_t)size ^ (uint32_t)(size >> 32);
}

ARENA__NO_ASAN static void header_store(char *p, uint32_t tag, size_t size, uint64_t saves)
{
    struct header *h = (struct header *)(void *)(p - HDR);
    if (ARENA__VALGRIND)
        VALGRIND_MAKE_MEM_UNDEFINED(h, sizeof *h);
    h->word = HDR_MAGIC | tag;
    h->size = size;
    h->check = header_check(h->word, h->size);
    h->saves = saves;
    h->seal = ~saves;
}

/* True when `h` is a header (of any tag); stores its tag and size. */
ARENA__NO_ASAN static bool header_load(const char *h, uint32_t *tag, uint64_t *size)
{
    const struct header *hd = (const struct header *)(const void *)h;
    uint32_t word = hd->word;
    uint64_t n = hd->size;
    if ((word & ~((1u << TAG_BITS) - 1)) != HDR_MAGIC || hd->check != header_check(word, n) ||
        hd->seal != ~hd->saves)
        return false;
    *tag = word & ((1u << TAG_BITS) - 1);
    *size = n;
    return true;
}

/* The count of marks taken when the value of header `h` (loaded) was placed:
 * a mark whose serial is at most that was taken before it. */
ARENA__NO_ASAN static uint64_t header_saves(const char *h)
{
    return ((const struct header *)(const void *)h)->saves;
}

/* ---- Free blocks (checked build) -----------------------------------------------------
 *
 * A free block (reuse.c) starts with a node shaped like a header: FREE_MAGIC,
 * the block's length as its size, the encoded link in `saves` (sealed like
 * a header's), and nothing but clobbered bytes after it.  The walks step
 * over it and verify those bytes, so a write after free is reported at the
 * next reset, rewind or arena_check(), and when the block is taken again. */

ARENA__NO_ASAN void arena__instr_node_store(char *s, size_t len, uintptr_t link)
{
    struct header *h = (struct header *)(void *)s;
    h->word = FREE_MAGIC;
    h->size = len;
    h->check = header_check(h->word, h->size);
    h->saves = link;
    h->seal = ~(uint64_t)link;
}

ARENA__NO_ASAN bool arena__instr_node_load(const char *s, size_t *len, uintptr_t *link)
{
    const struct header *h = (const struct header *)(const void *)s;
    if (h->word != FREE_MAGIC || h->check != header_check(h->word, h->size) || h->seal != ~h->saves)
        return false;
    *len = (size_t)h->size;
    *link = (uintptr_t)h->saves;
    return true;
}

/* The length of the free block whose node starts at `q`, when one lies
 * there within the `left` bytes from q on; 0 otherwise. */
static size_t free_block_at(const char *q, size_t left)
{
    uintptr_t link;
    size_t len;
    if (left < sizeof(struct header) || !arena__instr_node_load(q, &len, &link) ||
        len < sizeof(struct header) || len > left)
        return 0;
    return len;
}

/* The clobber pattern, a word of it. */
#define CLOBBER_WORD ((uint64_t)0x0101010101010101u * ARENA__CLOBBER)

/* The bytes in whole 64-byte blocks from `p` (GRANULE-aligned) on, up to
 * `n`, that hold the clobber pattern: eight independent words, one branch
 * per block (a word-by-word loop is a compare and a branch per word).  No
 * memcmp(): ASan's would check bytes that are poisoned here. */
ARENA__NO_ASAN static size_t clobbered_blocks(const char *p, size_t n)
{
    const uint64_t c = CLOBBER_WORD;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const uint64_t *w = (const uint64_t *)(const void *)(p + i);
        if (((w[0] ^ c) | (w[1] ^ c) | (w[2] ^ c) | (w[3] ^ c) | (w[4] ^ c) | (w[5] ^ c) |
             (w[6] ^ c) | (w[7] ^ c)) != 0)
            break;
    }
    return i;
}

ARENA__NO_ASAN static bool all_clobbered(const char *p, size_t n)
{
    size_t i = 0;
    /* Blocks, then a word at a time, where p is GRANULE-aligned (it is, but
     * for a tail). */
    if (((uintptr_t)p & (GRANULE - 1)) == 0) {
        i = clobbered_blocks(p, n);
        for (; i + 8 <= n; i += 8)
            if (*(const uint64_t *)(const void *)(p + i) != CLOBBER_WORD)
                return false;
    }
    for (; i < n; i++)
        if ((unsigned char)p[i] != ARENA__CLOBBER)
            return false;
    return true;
}

/* The bytes, in whole granules from `p` towards `to`, that hold the clobber
 * pattern: the run of free bytes a walk skips in one go (a word at a time,
 * where p is GRANULE-aligned, as it is but for a tail). */
ARENA__NO_ASAN static size_t clobbered_prefix(const char *p, const char *to)
{
    const char *q = p;
    if ((uintptr_t)p & (GRANULE - 1))
        return (size_t)(to - p) >= GRANULE && all_clobbered(p, GRANULE) ? GRANULE : 0;
    q += clobbered_blocks(q, (size_t)(to - q));
    while ((size_t)(to - q) >= GRANULE && *(const uint64_t *)(const void *)q == CLOBBER_WORD)
        q += GRANULE;
    return (size_t)(q - p);
}

/* Checked build, outside Valgrind: writes the guard of the value of `n`
 * bytes at `p` (up to `end`), whatever the bytes held before (a rewind may
 * have left a grown value's old bytes there), and leaves it closed.  It is
 * opened for the write: a byte loop here is a memset to the compiler (gcc
 * -O2 makes it one), and ASan's memset checks the bytes whatever the
 * attributes of the function that calls it. */
static void write_guard(char *p, size_t n, const char *end)
{
    size_t len;
    if (!ARENA_CHECKED || ARENA__VALGRIND || p + n >= end)
        return;
    len = (size_t)(end - (p + n));
    arena__open(p + n, len);
    memset(p + n, ARENA__CLOBBER, len);
    arena__close(p + n, len);
}

/* Chunk `i` holds headers, values and clobbered bytes in [from, to), both
 * GRANULE-aligned: see arena__verify(). */
ARENA__NO_ASAN bool arena__instr_verify(const arena *a, uint32_t i, const char *from,
                                        const char *to)
{
    const char *q = from, *end;
    uint32_t tag;
    uint64_t n;

    while (q < to) {
        size_t left = (size_t)(to - q), skip;
        if (left < GRANULE) {
            if (!all_clobbered(q, left))
                break;
            q = to;
            continue;
        }
        skip = clobbered_prefix(q, to);
        if (skip) {
            q += skip;
            continue;
        }
        skip = free_block_at(q, left);
        if (skip) {
            if (!all_clobbered(q + sizeof(struct header), skip - sizeof(struct header)))
                return arena__corrupt(ARENA__ABOUT_ARENA(a),
                                      "arena: arena %p: the free block at %p (chunk %u) was "
                                      "written after it was freed",
                                      (const void *)a, (const void *)q, (unsigned)i);
            q += skip;
            continue;
        }
        /* cppcheck-suppress unsignedLessThanZero ; HDR is 0 only where this never runs */
        if (left < HDR || !header_load(q, &tag, &n) || n > left - HDR)
            break;
        q += HDR;
        end = q + arena__guarded_len(q, (size_t)n, to);
        if (!all_clobbered(q + n, (size_t)(end - q) - (size_t)n))
            return arena__corrupt(ARENA__ABOUT_ARENA(a),
                                  "arena: arena %p: the %llu-byte value at %p (chunk %u) wrote "
                                  "past its end",
                                  (const void *)a, (unsigned long long)n, (const void *)q,
                                  (unsigned)i);
        q = end;
    }
    if (q < to)
        return arena__corrupt(ARENA__ABOUT_ARENA(a),
                              "arena: arena %p: chunk %u is corrupt at %p (a write before the "
                              "start of a value, or outside any value)",
                              (const void *)a, (unsigned)i, (const void *)q);
    return true;
}

/* ---- Values grown in place after a mark ------------------------------------------------ *
 *
 * A value stored before a mark is the most recent one again once nothing
 * stored after the mark remains, and may then be resized in place; the
 * rewind to the mark gives it back the size it had there.  The arena notes
 * (arena__sizes, cold.h) the serial `calm` above which no value was resized
 * in place, and at the first resize after a mark (a serial above `calm`) the
 * size that the value had at every mark since `calm`: its size as the tools
 * see it (the checked build's header; under ASan, where its guard begins),
 * which may exceed what the caller counts.  A second value resized before
 * the next mark leaves the sizes at that mark unknown.  A rewind to a mark
 * of a noted serial cuts the value back to the size noted; any other rewind
 * cuts a value that grew across the mark's position to end a granule before
 * it (the checked build, and arena__instr_dropped() for ASan and Valgrind).
 * A rewind resizes no value as the tools see it but the one it cuts (a
 * value shrunk after the mark stays shrunk to them), so it leaves `calm`
 * and the note as they are: the note still tells the sizes at its marks. */

/* Valgrind: true when the byte at p is addressable (part of a value). */
static bool vg_addressable(const char *p)
{
    char v;
    return VALGRIND_GET_VBITS(p, &v, 1) == 1;
}

/* Valgrind: how many bytes from `p` on, up to `n`, are addressable. */
static size_t vg_run(const char *p, size_t n)
{
    char bits[64];
    size_t i = 0;
    while (n - i >= sizeof bits && VALGRIND_GET_VBITS(p + i, bits, sizeof bits) == 1)
        i += sizeof bits;
    while (i < n && vg_addressable(p + i))
        i++;
    return i;
}

/* The size of the most recent value `p`, of at least `old_size` bytes, as
 * the tools see it (it reaches past `old_size` where its caller counted
 * less); SIZE_MAX when they cannot tell. */
ARENA__NO_ASAN static size_t tool_size(const arena *a, const char *p, size_t old_size)
{
    const char *pos;
    if (ARENA_CHECKED) {
        uint32_t tag;
        uint64_t n;
        return header_load(p - HDR, &tag, &n) ? (size_t)n : SIZE_MAX;
    }
    pos = a->ptr ? a->ptr : a->pos;
    if (pos < p || (size_t)(pos - p) < old_size)
        return SIZE_MAX;
#if ARENA__ASAN
    {
        const char *q = (const char *)__asan_region_is_poisoned((void *)(uintptr_t)(p + old_size),
                                                                (size_t)(pos - p) - old_size);
        return (size_t)((q ? q : pos) - p);
    }
#endif
    if (ARENA__VALGRIND)
        return old_size + vg_run(p + old_size, (size_t)(pos - p) - old_size);
    return SIZE_MAX;
}

void arena__instr_resizing(arena *a, char *p, size_t old_size)
{
    struct arena__sizes *z = &arena__cold(a)->sizes;
    if (z->calm < a->saves) {
        z->size = tool_size(a, p, old_size);
        z->at = z->size == SIZE_MAX ? NULL : p;
        z->from = z->calm;
        z->to = z->calm = a->saves;
    } else if (z->at != p) {
        z->at = NULL;
    }
}

/* The value of chunk [base, end) whose size at the mark of serial `serial`
 * at `pos` was noted (its size in arena__cold(a)->sizes), or NULL. */
static char *noted(const arena *a, const char *base, const char *pos, const char *end,
                   uint64_t serial)
{
    const struct arena__sizes *z = &arena__cold(a)->sizes;
    char *at = z->at;
    /* (A value at the chunk's end has no guard, and cannot grow.) */
    if (!at || serial <= z->from || serial > z->to || at < base || at >= pos || pos >= end ||
        arena__guarded_len(at, z->size, end) != (size_t)(pos - at))
        return NULL;
    return at;
}

/* Checked build: see arena__instr_cut().  Returns where the values stored
 * after the mark begin, which is `pos` unless a value stored before the mark
 * was freed or shrunk below pos after it (it was the most recent value
 * then): those stored since lie below pos, from the first header that
 * counts `serial` marks or more on (values lie in the order they were
 * placed).  Outside Valgrind, whose pools the expiry trims, it also cuts a
 * value stored before the mark that grew in place after it.  The value goes
 * back to its size at the mark where that was noted (`at`, of `keep`
 * bytes), else, if it grew across pos, it ends one granule before pos.
 * Its guard is verified, then its header cut and the rest of it clobbered,
 * so that the walks still find a header, a value and a guard, then
 * clobbered bytes. */
ARENA__NO_ASAN static char *checked_cut(arena *a, uint32_t i, char *pos, uint64_t serial,
                                        const char *at, size_t keep)
{
    char *q = a->chunks[i].base;
    const char *end = q + a->chunks[i].cap;
    uint32_t tag;
    uint64_t n;
    size_t reach;

    while (q < pos) {
        if (all_clobbered(q, GRANULE)) {
            q += GRANULE;
            continue;
        }
        /* A free block: stepped over, unless it reaches past pos (it then
         * goes whole: nothing live lies in it). */
        reach = free_block_at(q, (size_t)(end - q));
        if (reach) {
            if (q + reach > pos)
                return q;
            q += reach;
            continue;
        }
        /* cppcheck-suppress unsignedLessThanZero ; HDR is 0 only where this never runs */
        if ((size_t)(end - q) < HDR || !header_load(q, &tag, &n) || n > (size_t)(end - q) - HDR)
            return pos; /* corrupt: the walk at the rewind reports it */
        if (header_saves(q) >= serial)
            return q;
        if (q + HDR >= pos) { /* stored after the mark: the whole value goes */
            reach = HDR + arena__guarded_len(q + HDR, (size_t)n, end);
            if (!ARENA__VALGRIND) {
                arena__open(q, reach);
                memset(q, ARENA__CLOBBER, reach);
                arena__close(q, reach);
            }
            return pos;
        }
        q += HDR;
        reach = arena__guarded_len(q, (size_t)n, end);
        if (q + reach > pos || (q == at && n > keep)) {
            if (ARENA__VALGRIND)
                return pos;
            if (!all_clobbered(q + n, reach - (size_t)n))
                arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_CORRUPT,
                              "arena: arena %p: the %llu-byte value at %p (chunk %u) wrote past "
                              "its end",
                              (const void *)a, (unsigned long long)n, (const void *)q, (unsigned)i);
            /* (Else both on granules, a value's end before.) */
            n = q == at ? keep : (size_t)(pos - q) - GRANULE;
            header_store(q, tag, (size_t)n, header_saves(q - HDR));
            arena__open(q + n, reach - (size_t)n);
            memset(q + n, ARENA__CLOBBER, reach - (size_t)n);
            arena__close(q + n, reach - (size_t)n);
            return pos;
        }
        q += reach;
    }
    return pos;
}

char *arena__instr_cut(arena *a, uint32_t i, char *pos, uint64_t serial)
{
    struct arena__sizes *z = &arena__cold(a)->sizes;
    char *base = a->chunks[i].base, *from = pos;
    char *at = noted(a, base, pos, base + a->chunks[i].cap, serial);

    if (ARENA_CHECKED)
        from = checked_cut(a, i, pos, serial, at, at ? z->size : SIZE_MAX);
    else if (at) /* ASan: its guard at the mark, closed again */
        arena__poison(at + z->size, (size_t)(pos - at) - z->size);
    /* Valgrind: the block, where it grew past that size, cut back to it. */
    if (ARENA__VALGRIND && at && vg_run(at, z->size + 1) == z->size + 1) {
        VALGRIND_MEMPOOL_CHANGE(base, at, at, z->size);
        VALGRIND_MAKE_MEM_NOACCESS(at + z->size, (size_t)(pos - at) - z->size);
    }
    return from;
}

void arena__instr_chunk_made(char *base, size_t cap)
{
    if (ARENA__VALGRIND)
        VALGRIND_CREATE_MEMPOOL(base, 0, 0);
    if (ARENA_CHECKED)
        memset(base, ARENA__CLOBBER, cap);
    arena__close(base, cap);
}

/* Valgrind, before trimming chunk `base` to [base, pos): memcheck 3.19 marks
 * bytes outside the pool no-access when it trims a block that straddles the
 * cut (its size arithmetic mixes the pool's with the block's), so the one
 * value that can cross `pos` (stored before a mark and grown in place after
 * it, or stored after a shrink below it) is cut first, by hand.  Guards keep
 * values apart, so addressable bytes on both sides of pos mean one value
 * (with its header, in the checked build). */
static void vg_unstraddle(const char *base, char *pos, const char *end)
{
    char *v = pos - 1;
    if (pos >= end || !vg_addressable(v) || !vg_addressable(pos))
        return;
    while (v > base && vg_addressable(v - 1))
        v--;
    if (ARENA_CHECKED) { /* its header is addressable too: the value follows it */
        uint32_t tag;
        uint64_t n;
        if (!header_load(v, &tag, &n))
            return;
        v += HDR;
    }
    if (pos - v > (ptrdiff_t)GRANULE) {
        VALGRIND_MEMPOOL_CHANGE(base, v, v, (size_t)(pos - v) - GRANULE);
        VALGRIND_MAKE_MEM_NOACCESS(pos - GRANULE, GRANULE);
    } else {
        VALGRIND_MEMPOOL_FREE(base, v);
    }
}

#if ARENA__ASAN
/* ASan, at a rewind to the mark at `pos` (before the expiry closes [pos,
 * end)): the one value that can reach across pos or into the granule before
 * it (stored before the mark and grown in place after it, or stored after
 * it below pos) is cut to end one granule before pos, which becomes its
 * guard, as the checked build's arena__instr_cut() and Valgrind's
 * vg_unstraddle() cut it.  At the mark that granule was the guard of the
 * value before it (guards keep values apart), so an addressable byte there
 * is such a value's.  A position at the chunk's end may follow a value with
 * no guard (cut short there): nothing can grow past it. */
static void asan_unstraddle(const char *base, char *pos, const char *end)
{
    if ((size_t)(pos - base) >= GRANULE && pos < end && !__asan_address_is_poisoned(pos - GRANULE))
        arena__poison(pos - GRANULE, GRANULE);
}
#endif

void arena__instr_dropped(arena *a, uint32_t i, char *from)
{
    char *base = a->chunks[i].base;
    char *end = base + a->chunks[i].cap;

#if ARENA__ASAN
    asan_unstraddle(base, from, end);
#endif
    arena__verify(a, i, from, end);
    if (ARENA_CHECKED) {
        arena__open(from, (size_t)(end - from));
        memset(from, ARENA__CLOBBER, (size_t)(end - from));
    }
    if (ARENA__VALGRIND) {
        if (from == base) {
            VALGRIND_DESTROY_MEMPOOL(base);
            VALGRIND_CREATE_MEMPOOL(base, 0, 0);
        } else {
            vg_unstraddle(base, from, end);
            VALGRIND_MEMPOOL_TRIM(base, base, (size_t)(from - base));
        }
    }
    arena__close(from, (size_t)(end - from));
}

void arena__instr_chunk_freed(char *base, size_t cap)
{
    if (ARENA__VALGRIND)
        VALGRIND_DESTROY_MEMPOOL(base);
    arena__open(base, cap);
}

void arena__instr_buffer_released(arena *a, size_t cap)
{
    if (ARENA__VALGRIND)
        VALGRIND_DESTROY_MEMPOOL(a->buf);
    arena__open(a->buf, cap);
    arena__cold(a)->flags |= ARENA__BUF_OPEN;
}

size_t arena__instr_placing(arena *a, size_t align)
{
    arena__buffer_reused(a);
    return align < GRANULE ? GRANULE : align;
}

void arena__instr_placed(arena *a, const struct arena__chunk *c, char *p, size_t size)
{
    if (ARENA_CHECKED) {
        header_store(p, next_tag(a), size, a->saves);
        write_guard(p, size, p + arena__guarded_len(p, size, c->base + c->cap));
    }
    if (ARENA__VALGRIND)
        VALGRIND_MEMPOOL_ALLOC(c->base, p, size);
    arena__unpoison(p, size);
}

void arena__instr_resized(const struct arena__chunk *c, char *p, size_t old_size, size_t new_size)
{
    const char *lim = c->base + c->cap;
    char *old_end = p + arena__guarded_len(p, old_size, lim);

    if (ARENA_CHECKED) {
        uint32_t tag = 0;
        uint64_t n, saves = 0;
        if (header_load(p - HDR, &tag, &n))
            saves = header_saves(p - HDR);
        header_store(p, tag, new_size, saves);
        write_guard(p, new_size, p + arena__guarded_len(p, new_size, lim));
        if (new_size < old_size) {
            arena__open(p + new_size, (size_t)(old_end - p) - new_size);
            memset(p + new_size, ARENA__CLOBBER, (size_t)(old_end - p) - new_size);
        }
    }
    if (ARENA__VALGRIND)
        VALGRIND_MEMPOOL_CHANGE(c->base, p, p, new_size);
    if (new_size < old_size) {
        arena__close(p + new_size, (size_t)(old_end - p) - new_size);
    } else {
        arena__unpoison(p, new_size);
        if (ARENA__VALGRIND)
            VALGRIND_MAKE_MEM_UNDEFINED(p + old_size, new_size - old_size);
    }
}

/* ---- Reuse ----------------------------------------------------------------------------- */

/* Whether the value `p` of `n` bytes in chunk `c` may be freed: 0 when it is
 * live (its size, the header's in the checked build, in *size), 1 when it
 * was freed already, 2 when it is not a value (checked build; elsewhere a
 * pointer into the chunk is taken for one). */
int arena__instr_free_state(const arena *a, const struct arena__chunk *c, const char *p, size_t n,
                            uint64_t *size)
{
    (void)a;
    *size = n;
    if (ARENA_CHECKED) {
        const char *end = c->base + c->cap;
        uintptr_t node = arena__align_up((uintptr_t)p - HDR, ARENA_ALIGN);
        if (arena__instr_value_size(c, end, p, size))
            return 0;
        /* (Compared as integers: p may lie anywhere in the chunk.) */
        if (node < (uintptr_t)c->base || node >= (uintptr_t)end)
            return 2;
        return free_block_at((const char *)node, (size_t)((uintptr_t)end - node)) ? 1 : 2;
    }
    if (ARENA__VALGRIND)
        return n && !vg_addressable(p) ? 1 : 0;
#if ARENA__ASAN
    if (n && __asan_address_is_poisoned(p))
        return 1;
#endif
    return 0;
}

/* The value `p` of `n` bytes, whose header and guard span [from, to) in
 * chunk `c`, is freed: its guard verified (checked build, outside Valgrind),
 * the span clobbered and closed, and Valgrind told. */
bool arena__instr_freed(const arena *a, const struct arena__chunk *c, char *from, char *p, size_t n,
                        const char *to)
{
    bool intact = true;
    if (ARENA_CHECKED && !ARENA__VALGRIND && !all_clobbered(p + n, (size_t)(to - p) - n)) {
        arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_CORRUPT,
                      "arena: arena %p: the %zu-byte value at %p wrote past its end (seen as it "
                      "was freed)",
                      (const void *)a, n, (const void *)p);
        intact = false;
    }
    if (ARENA__VALGRIND)
        VALGRIND_MEMPOOL_FREE(c->base, p);
    if (ARENA_CHECKED) {
        arena__open(from, (size_t)(to - from));
        memset(from, ARENA__CLOBBER, (size_t)(to - from));
    }
    arena__close(from, (size_t)(to - from));
    return intact;
}

/* The free block [from, from + len) of chunk `c` is taken for the value `p`
 * of `n` bytes, which with its header and guard spans [from, to): checked
 * that nothing wrote into the block since it was freed (checked build,
 * outside Valgrind), then placed as arena__instr_placed() places a value. */
void arena__instr_reused(arena *a, const struct arena__chunk *c, char *from, char *p, size_t n,
                         char *to, size_t len)
{
    if (ARENA_CHECKED && !ARENA__VALGRIND && !all_clobbered(from + HDR, len - HDR))
        arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_CORRUPT,
                      "arena: arena %p: the free block at %p was written after it was freed "
                      "(seen as it was reused)",
                      (const void *)a, (const void *)from);
    if (ARENA_CHECKED) {
        header_store(p, next_tag(a), n, a->saves);
        write_guard(p, n, to);
    }
    if (ARENA__VALGRIND)
        VALGRIND_MEMPOOL_ALLOC(c->base, p, n);
    arena__unpoison(p, n);
}

/* A rewind expires the value `p` placed in [from, to) of the chunk at `base`
 * through reuse after its mark (or the block, if the value was freed since). */
void arena__instr_unreused(const char *base, char *from, const char *to, char *p)
{
    if (ARENA__VALGRIND && vg_addressable(p))
        VALGRIND_MEMPOOL_FREE(base, p);
    if (ARENA_CHECKED) {
        arena__open(from, (size_t)(to - from));
        memset(from, ARENA__CLOBBER, (size_t)(to - from));
    }
    arena__close(from, (size_t)(to - from));
}

/* ---- Tagged refs --------------------------------------------------------------------
 *
 * The checked build carries the value's tag in bits of the ref that its
 * fields cannot use, without limiting what the ref can name.  Bit 0 is the
 * top bit of len (a length is <= ARENA_REF_MAX).  While the chunk index is
 * below SHORT_INDEX (arenas of up to a million chunks), the other 11 are in
 * the chunk field, whose top bit then says so:
 *
 *     chunk = 1 | tag bits 1-11 | index (20 bits)     index < 2^20: 12 tag bits
 *     chunk = 0 | index (31 bits)                     index >= 2^20: 1 tag bit
 *
 * An index is below 2^31 (the arena's add_chunk()), so every chunk has a
 * name, and a ref into one of the first 2^20 chunks is always in the short
 * form.  The long form degrades the detection of a ref to a value
 * overwritten at the same offset (the bounds and the header are still
 * checked), never the arena's capacity. */
#define SHORT_INDEX ((uint32_t)1 << 20)
#define SHORT_FORM  0x80000000u

arena_ref arena__instr_tag_ref(const arena *a, arena_ref r)
{
    uint32_t tag = (arena__cold(a)->flags >> 8) & ((1u << TAG_BITS) - 1);
    r.len |= (tag & 1u) << 31;
    if (r.chunk < SHORT_INDEX)
        r.chunk = SHORT_FORM | (tag >> 1) << 20 | r.chunk;
    return r;
}

uint32_t arena__instr_untag_ref(arena_ref r, uint32_t *tag, uint32_t *mask)
{
    *tag = r.len >> 31;
    *mask = 1;
    if (r.chunk & SHORT_FORM) {
        *tag |= (r.chunk & ~SHORT_FORM) >> 20 << 1;
        *mask = (1u << TAG_BITS) - 1;
        return r.chunk & (SHORT_INDEX - 1);
    }
    return r.chunk < SHORT_INDEX ? UINT32_MAX : r.chunk; /* no tagged ref is long and short */
}

/* The value starts on a granule after a header (checked before the header
 * is loaded: a garbage ref causes no misaligned read); a string's header
 * counts its NUL (and a grown value's, more). */
bool arena__instr_header_matches(const char *base, uint32_t off, uint32_t len, uint32_t tag,
                                 uint32_t mask)
{
    uint32_t htag;
    uint64_t n;
    /* cppcheck-suppress unsignedPositive ; HDR is 0 only where this never runs */
    return off >= HDR && (off & (GRANULE - 1)) == 0 && header_load(base + off - HDR, &htag, &n) &&
           ((htag ^ tag) & mask) == 0 && n >= len;
}

/* Nothing is loaded unless p lies on a granule past a header's room before
 * `end` in chunk `c`. */
bool arena__instr_value_size(const struct arena__chunk *c, const char *end, const char *p,
                             uint64_t *size)
{
    uint32_t tag;
    /* cppcheck-suppress unsignedLessThanZero ; HDR is 0 only where this never runs */
    if ((size_t)(p - c->base) < HDR || ((uintptr_t)p & (GRANULE - 1)) || p >= end)
        return false;
    return header_load(p - HDR, &tag, size) && *size <= (size_t)(end - p);
}
