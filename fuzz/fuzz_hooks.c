/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the adapters of arena/hooks.h and the reuse of freed
 * blocks, over two arenas, checked against a model of what the headers
 * promise.  The input draws a sequence of operations:
 *   - the global family: arena_set_current() (either arena or none),
 *     arena_cur_malloc/calloc/strdup/realloc/free/size;
 *   - Lua's protocol (arena_hook_lua, and arena_hook_lua_align8 at 8 bytes:
 *     alloc with a type tag, resize, free, free of NULL), arena_hook_realloc,
 *     arena_hook_alloc/zalloc/free;
 *   - arena_alloc_reuse, arena_alloc(_aligned), arena_realloc, arena_free;
 *   - arena_allocator_of()'s alloc and free;
 *   - marks (arena_save/arena_rewind, scopes), resets, trims, releases, a
 *     backing that fails on demand, sizes no allocation can get, and misuse
 *     the library reports (foreign pointers to the global family; in a
 *     checked build, arena_free/arena_realloc of a pointer inside a value
 *     and an old size too large).
 *
 * The model follows every live block: its family (the calls that may take
 * it), where it came from (which arena, or the C heap for the global
 * family), its size and a pattern written over it.  Every call told a size
 * follows one rule: a value holds the bytes it was asked for, so any of
 * them (arena_free, arena_realloc, Lua's hook, arena_hook_realloc) may take
 * any value of its arena, whichever call stored it, packed values (stored
 * at an alignment below ARENA_ALIGN, strings) included.  After every operation
 * every live block still holds its pattern (no overlap: reuse never hands
 * out live memory), and every block of the global family tells its size
 * (after each call that wrote its header, and every 16 steps); each
 * result is ARENA_ALIGN-aligned (arena_hook_lua_align8's of at most 256
 * bytes, 8-aligned; arena_cur_*'s of at most 8, too), a resize keeps the prefix, a failure
 * happens only when the backing refused a request (or the arena is a fixed
 * buffer, or the size is beyond any allocation) and changes nothing.
 * Lifetimes: a reset or a release ends the arena's blocks, a rewind those
 * placed or resized after its mark (arena_rewind() cuts a value grown past
 * the mark's position back); blocks on the C heap outlive every batch, and
 * are freed at the end of the input (a leak is reported by LeakSanitizer, a
 * block the model thinks on the heap but is an arena's is clobbered by the
 * checked build's reset).
 *
 * Build: cmake --preset fuzz (see fuzz/CMakeLists.txt).
 */
#define TEST_NO_CMOCKA 1
#include "support.h"
#include "fuzz_input.h"

#include <limits.h>

#include <arena/hooks.h>

#define ARENAS      2
#define HEAP        (-1) /* owner of a global-family block on the C heap */
#define MAX_BLOCKS  48
#define MAX_MARKS   8
#define MAX_OPS     128 /* per input: longer inputs add time, not paths */
#define SIZE_CHECKS 16  /* every block's arena_cur_size() every this many steps */

enum family {
    CUR,   /* arena_cur_*: found by its address alone */
    SIZED, /* a value, whichever call stored it: given back or resized told its size */
    BACK   /* arena_allocator_of()'s alloc */
};

typedef struct block {
    unsigned char *p;
    size_t size;  /* bytes that hold its pattern */
    size_t grown; /* SIZED: the size it was stored or last grown with */
    uint64_t id;  /* its pattern */
    uint64_t t;   /* the clock when it was placed or last resized */
    int owner;    /* its arena, or HEAP */
    int fam;
    size_t align; /* the alignment it was stored or last moved at */
} block;

typedef struct mark {
    arena_mark m;
    arena_scope s;
    bool scope;
    uint64_t t;
    size_t size; /* arena_size() then */
} mark;

typedef struct slot {
    arena a;
    test_backing tb;
    bool fixed; /* a caller's buffer, no backing: full means NULL */
    size_t budget;
    mark marks[MAX_MARKS];
    size_t nmarks;
    arena_allocator of;      /* arena_allocator_of(&a) */
    size_t peak, peak_batch; /* the largest arena_size() after a step, since
                                init and since the batch began */
    bool ended;              /* a reset or release in this step */
} slot;

static fuzz_input in;
static slot arenas[ARENAS];
static _Alignas(64) unsigned char bufs[ARENAS][4096];
static block blocks[MAX_BLOCKS];
static size_t nblocks;
static int current = HEAP; /* the current arena: HEAP for none */
static uint64_t clock_, next_id;

static size_t below(size_t n) { return fuzz_below(&in, n); }

/* -DFUZZ_TRACE: each operation printed, to read a finding. */
#ifdef FUZZ_TRACE
#  define TRACE(...) fprintf(stderr, __VA_ARGS__)
#else
#  define TRACE(...) ((void)0)
#endif

static arena *arena_of(int owner) { return owner == HEAP ? NULL : &arenas[owner].a; }

/* ---- Checks ----------------------------------------------------------------------- */

#define HUGES 4
static const size_t huge[HUGES] = {SIZE_MAX, SIZE_MAX - 31, (size_t)PTRDIFF_MAX - 8,
                                   (size_t)PTRDIFF_MAX + 1};

/* arena_cur_size() of a block of `size` bytes from `owner`: what was asked,
 * or, for a block of at most 256 bytes in an arena's page (a plain build:
 * hooks.h), its class's size; a block that shrank within its class, or
 * could not move from it, keeps the class's. */
static bool cur_size_ok(const void *p, size_t size, int owner)
{
    size_t got = arena_cur_size(p);
    if (got == size)
        return true;
    return !TEST_ASAN && !ARENA_CHECKED && owner != HEAP && got <= 256 && got >= size &&
           (got == 8 || got % 16 == 0);
}

/* Whether the call being made is arena_hook_lua_align8(). */
static bool align8_call;

/* The alignment of a block of `size` bytes of family `fam`: ARENA_ALIGN;
 * for arena_cur_*, any object's of that size (8 for at most 8 bytes); for
 * arena_hook_lua_align8(), 8 up to 256 bytes. */
static size_t alignment(size_t size, int fam)
{
    if (ARENA_ALIGN > 8 && ((fam == CUR && size <= 8) || (align8_call && size <= 256)))
        return 8;
    return ARENA_ALIGN;
}

/* Whether the value is stored above ARENA_ALIGN: it must never be grown. */
static bool overaligned(const block *b) { return b->align > ARENA_ALIGN; }

static void check_block(const block *b)
{
    TEST_CHECK(has_pattern(b->p, b->size, b->id));
    if (b->fam == CUR)
        TEST_CHECK(cur_size_ok(b->p, b->size, b->owner));
}

/* The shadow of arena_get_stats()'s peaks: arena_size() after a call,
 * into the largest since init and since the batch began. */
static void sample_peaks(slot *s)
{
    size_t now = arena_size(&s->a);
    if (s->ended)
        s->peak_batch = 0;
    s->ended = false;
    test_note_peak(&s->peak, now);
    test_note_peak(&s->peak_batch, now);
}

/* Each arena's peaks are exactly the shadow's: sampled after every step
 * (a step makes one call on an arena, or samples between its calls). */
static void check_peaks(void)
{
    int i;
    for (i = 0; i < ARENAS; i++) {
        slot *s = &arenas[i];
        arena_stats st;
        sample_peaks(s);
        arena_get_stats(&s->a, &st);
        TEST_CHECK(st.peak_stored == s->peak);
        TEST_CHECK(st.peak_stored_batch == s->peak_batch);
    }
}

/* Every block's pattern; with `sizes`, every header's size too (a header
 * is poisoned under ASan, so a stray write into it is reported as it
 * happens: its size is read only every SIZE_CHECKS steps, and after each
 * call that wrote it). */
static void check_all(bool sizes)
{
    size_t i;
    for (i = 0; i < nblocks; i++) {
        if (sizes)
            check_block(&blocks[i]);
        else
            TEST_CHECK(has_pattern(blocks[i].p, blocks[i].size, blocks[i].id));
    }
    if (recorded_errors.count != recorded_errors.expected)
        TRACE("unexpected report: %s\n", recorded_errors.message);
    TEST_CHECK(recorded_errors.count == recorded_errors.expected);
    TEST_CHECK(arena_current() == arena_of(current));
}

/* What a call that allocates in arena `owner` must have done when it
 * returned NULL: failed for a reason (the backing refused, the buffer is
 * full, no allocation gets that size) and changed nothing. */
typedef struct before {
    size_t failed, size;
} before;

static before take_before(int owner)
{
    before b = {0, 0};
    if (owner != HEAP) {
        b.failed = arenas[owner].tb.failed;
        b.size = arena_size(&arenas[owner].a);
    }
    return b;
}

static void check_failed(int owner, before b, bool huge_size)
{
    if (owner == HEAP) {
        TEST_CHECK(huge_size);
        return;
    }
    TEST_CHECK(huge_size || arenas[owner].fixed || arenas[owner].tb.failed > b.failed);
    TEST_CHECK(arena_size(&arenas[owner].a) == b.size);
}

/* The outcome of a call that may return NULL: a NULL checked against the
 * model (check_failed()), a block against the size asked (one that no
 * allocation gets must fail).  True for a block. */
static bool returned(const void *q, int owner, before b, bool huge_size)
{
    if (!q) {
        check_failed(owner, b, huge_size);
        return false;
    }
    TEST_CHECK(!huge_size);
    return true;
}

/* ---- The model's blocks -------------------------------------------------------------- */

static bool is_unique(const unsigned char *p)
{
    size_t i;
    for (i = 0; i < nblocks; i++)
        if (blocks[i].p == p && blocks[i].fam == CUR)
            return false;
    return true;
}

/* A new block at p, stored at alignment `align` (checked, filled with a
 * fresh pattern); the caller has made sure the model has room. */
static void add_at(unsigned char *p, size_t size, int owner, int fam, size_t align)
{
    block *b = &blocks[nblocks++];
    TEST_CHECK(p != NULL);
    TEST_CHECK(is_aligned(p, align));
    b->p = p;
    b->size = size;
    b->grown = size;
    b->id = next_id++;
    b->t = ++clock_;
    b->owner = owner;
    b->fam = fam;
    b->align = align;
    fill_pattern(p, size, b->id);
}

static void add(unsigned char *p, size_t size, int owner, int fam)
{
    add_at(p, size, owner, fam, alignment(size, fam));
}

static void drop(size_t k) { blocks[k] = blocks[--nblocks]; }

/* A resize that succeeded: the prefix is kept; the block gets a new
 * pattern over its new size. */
static void resized(size_t k, unsigned char *q, size_t size, int owner)
{
    block *b = &blocks[k];
    size_t kept = b->size < size ? b->size : size;
    TEST_CHECK(q != NULL);
    if (q != b->p) /* moved: a new value at ARENA_ALIGN */
        b->align = alignment(size, b->fam);
    TEST_CHECK(is_aligned(q, b->align));
    TEST_CHECK(has_pattern(q, kept, b->id));
    /* Moved or grown, it holds its new size; a shrink to nothing gives the
     * value back: a block of no bytes. */
    if (size > b->size || q != b->p || size == 0)
        b->grown = size;
    b->p = q;
    b->size = size;
    b->id = next_id++;
    b->t = ++clock_;
    b->owner = owner;
    fill_pattern(q, size, b->id);
}

/* A live block of family `fam` (and of arena `owner` unless ANY), or -1. */
#define ANY (-2)
static long pick(int fam, int owner)
{
    size_t i, n = 0, k;
    for (i = 0; i < nblocks; i++)
        n += blocks[i].fam == fam && (owner == ANY || blocks[i].owner == owner);
    if (n == 0)
        return -1;
    k = below(n);
    for (i = 0; i < nblocks; i++)
        if (blocks[i].fam == fam && (owner == ANY || blocks[i].owner == owner) && k-- == 0)
            return (long)i;
    return -1;
}

/* The blocks of arena `i` that a reset, a release or a rewind to a mark
 * taken at `t` ends. */
static void end_blocks(int i, uint64_t t)
{
    size_t k = 0;
    while (k < nblocks) {
        if (blocks[k].owner == i && blocks[k].t > t)
            drop(k);
        else
            k++;
    }
}

/* ---- Sizes ------------------------------------------------------------------------- */

/* Mostly small; around a quarter of the budget; past the budget (a chunk of
 * its own); 0; one time in 64, a size no allocation gets. */
static size_t draw_size(int owner, bool *is_huge)
{
    size_t b = owner == HEAP ? 1024 : arenas[owner].budget;
    *is_huge = false;
    switch (below(16)) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6: return 1 + below(48);
    case 7:
    case 8:
    case 9: return below(b / 2 + 1);
    case 10:
    case 11: return 16 * (1 + below(32)); /* class bounds */
    case 12: return b + below(b);
    case 13: return 0;
    case 14:
        if (below(4) == 0) {
            *is_huge = true;
            return huge[below(HUGES)];
        }
        return 200 + below(400);
    default: return 1 + below(300);
    }
}

/* ---- The arenas ---------------------------------------------------------------------- */

static void start_arena(int i)
{
    static const size_t budgets[] = {128, 256, 512, 1024, 4096};
    slot *s = &arenas[i];
    arena_allocator al = tb_allocator(&s->tb);
    unsigned kind = (unsigned)below(8);

    s->fixed = false;
    s->nmarks = 0;
    s->peak = s->peak_batch = 0;
    s->ended = false;
    if (kind < 6) {
        s->budget = budgets[below(5)];
        arena_init_with(&s->a, s->budget, &al);
    } else {
        size_t len = 256 + below(sizeof bufs[i] - 255);
        s->fixed = kind == 7;
        arena_init_buffer(&s->a, bufs[i], len, s->fixed ? NULL : &al);
        /* sizes drawn against the buffer: beyond it, a backing's chunks are
         * ARENA_DEFAULT_CHUNK (values of that size cost time, not paths) */
        s->budget = len;
    }
    s->of = arena_allocator_of(&s->a);
}

static void end_arena(int i)
{
    slot *s = &arenas[i];
    TEST_CHECK(arena_check(&s->a));
    arena_release(&s->a);
    TEST_CHECK(s->tb.live == 0);
}

/* ---- The global family ------------------------------------------------------------------ */

static void cur_alloc(void)
{
    bool is_huge;
    size_t size = draw_size(current, &is_huge);
    before b = take_before(current);
    unsigned how = (unsigned)below(3);
    unsigned char *p;
    char text[64];

    if (nblocks == MAX_BLOCKS)
        return;
    if (how == 0) {
        p = (unsigned char *)arena_cur_malloc(size);
    } else if (how == 1) {
        size_t count = 1 + below(4);
        if (!is_huge)
            size = (size + count - 1) / count * count;
        p = (unsigned char *)arena_cur_calloc(count, is_huge ? size : size / count);
        if (p)
            TEST_CHECK(all_zero(p, size));
    } else {
        size_t n = below(sizeof text);
        memset(text, 'a' + (int)below(26), n);
        text[n] = '\0';
        size = n + 1;
        is_huge = false;
        p = (unsigned char *)arena_cur_strdup(text);
        if (p)
            TEST_CHECK(memcmp(p, text, n + 1) == 0);
    }
    TRACE("cur_alloc(%u) %zu in %d: %p\n", how, size, current, (void *)p);
    if (!p) {
        check_failed(current, b, is_huge);
        return;
    }
    TEST_CHECK(!is_huge);
    TEST_CHECK(is_unique(p)); /* size 0 included */
    add(p, size, current, CUR);
    TEST_CHECK(cur_size_ok(p, size, current));
}

static void cur_realloc(void)
{
    long k = pick(CUR, ANY);
    bool is_huge;
    size_t size = draw_size(current, &is_huge);
    int owner;
    before b;
    unsigned char *q;

    if (k < 0)
        return;
    /* The heap keeps its own; the current arena resizes its own; any other
     * arena's block moves to the heap. */
    owner = blocks[k].owner == HEAP || blocks[k].owner == current ? blocks[k].owner : HEAP;
    b = take_before(owner);
    q = (unsigned char *)arena_cur_realloc(blocks[k].p, size);
    TRACE("cur_realloc %p %zu (owner %d) -> %zu (current %d): %p\n", (void *)blocks[k].p,
          blocks[k].size, blocks[k].owner, size, current, (void *)q);
    if (!q) {
        check_failed(owner, b, is_huge);
        return;
    }
    TEST_CHECK(!is_huge);
    resized((size_t)k, q, size, owner);
    TEST_CHECK(cur_size_ok(q, size, owner));
}

static void cur_free(void)
{
    long k = pick(CUR, ANY);
    if (k < 0)
        return;
    check_block(&blocks[k]);
    TRACE("cur_free %p %zu (owner %d, current %d)\n", (void *)blocks[k].p, blocks[k].size,
          blocks[k].owner, current);
    arena_cur_free(blocks[k].p);
    drop((size_t)k);
}

static void set_current(void)
{
    int next = (int)below(ARENAS + 1) - 1; /* HEAP: none */
    TEST_CHECK(arena_set_current(arena_of(next)) == arena_of(current));
    current = next;
    TRACE("current %d\n", next);
}

/* ---- The hooks with a context ------------------------------------------------------------ */

static void *lua_hook(bool align8, void *ctx, void *ptr, size_t old_size, size_t new_size)
{
    return align8 ? arena_hook_lua_align8(ctx, ptr, old_size, new_size)
                  : arena_hook_lua(ctx, ptr, old_size, new_size);
}

static void lua_op_as(int i, bool align8)
{
    arena *a = &arenas[i].a;
    bool is_huge;
    size_t size = draw_size(i, &is_huge);
    before b = take_before(i);
    long k = pick(SIZED, i);
    unsigned char *q;

    align8_call = align8;
    switch (below(4)) {
    case 0: /* free of NULL */ TEST_CHECK(lua_hook(align8, a, NULL, below(9), 0) == NULL); return;
    case 1: /* a new block: old_size is Lua's type tag */
        if (size == 0 || nblocks == MAX_BLOCKS)
            return;
        q = (unsigned char *)lua_hook(align8, a, NULL, below(9), size);
        TRACE("lua%s %d new %zu: %p\n", align8 ? "8" : "", i, size, (void *)q);
        if (returned(q, i, b, is_huge))
            add(q, size, i, SIZED);
        return;
    case 2: /* a free */
        if (k < 0)
            return;
        check_block(&blocks[k]);
        TRACE("lua%s %d free %p %zu\n", align8 ? "8" : "", i, (void *)blocks[k].p, blocks[k].size);
        TEST_CHECK(lua_hook(align8, a, blocks[k].p, blocks[k].size, 0) == NULL);
        drop((size_t)k);
        return;
    default: /* a resize */
        if (k < 0 || size == 0 || (overaligned(&blocks[k]) && size > blocks[k].size))
            return;
        q = (unsigned char *)lua_hook(align8, a, blocks[k].p, blocks[k].size, size);
        TRACE("lua%s %d resize %p %zu -> %zu: %p\n", align8 ? "8" : "", i, (void *)blocks[k].p,
              blocks[k].size, size, (void *)q);
        TEST_CHECK(q || size > blocks[k].size); /* shrinking never fails */
        if (!returned(q, i, b, is_huge))
            return;
        resized((size_t)k, q, size, i);
        return;
    }
}

/* align8_call holds for the model's checks of this call only. */
static void lua_op(int i, bool align8)
{
    lua_op_as(i, align8);
    align8_call = false;
}

static void hook_realloc_op(int i)
{
    arena *a = &arenas[i].a;
    bool is_huge;
    size_t size = draw_size(i, &is_huge);
    before b = take_before(i);
    long k = below(4) ? pick(SIZED, i) : -1;
    unsigned char *q;

    if (k < 0) {
        if (nblocks == MAX_BLOCKS)
            return;
        q = (unsigned char *)arena_hook_realloc(a, NULL, below(64), size);
        TRACE("hook_realloc %d new %zu: %p\n", i, size, (void *)q);
        if (returned(q, i, b, is_huge))
            add(q, size, i, SIZED);
        return;
    }
    if (overaligned(&blocks[k]) && size > blocks[k].size)
        return; /* values above ARENA_ALIGN must not be grown */
    q = (unsigned char *)arena_hook_realloc(a, blocks[k].p, blocks[k].size, size);
    TRACE("hook_realloc %d %p %zu -> %zu: %p\n", i, (void *)blocks[k].p, blocks[k].size, size,
          (void *)q);
    TEST_CHECK(q || size > blocks[k].size); /* a shrink returns the block */
    if (!returned(q, i, b, is_huge))
        return;
    if (size == 0) /* a block of no bytes, in place */
        TEST_CHECK(q == blocks[k].p);
    resized((size_t)k, q, size, i);
}

/* arena_hook_alloc, arena_hook_zalloc, arena_alloc_reuse, arena_alloc,
 * arena_alloc_aligned, arena_strndup: a value of the arena.  Values stored
 * below ARENA_ALIGN (and strings, at 1) pack against the value before
 * them, in what would otherwise be its padding: a call that gave back more
 * than a value's own bytes would hand them out. */
static void plain_alloc(int i)
{
    static const size_t aligns[] = {1, 2, 8, 16, 32, 64, 256};
    static const char text[] = "the quick brown fox jumps over the lazy dog, twice over";
    arena *a = &arenas[i].a;
    bool is_huge;
    size_t size = draw_size(i, &is_huge), align = ARENA_ALIGN;
    before b = take_before(i);
    unsigned how = (unsigned)below(7);
    unsigned char *p;

    if (nblocks == MAX_BLOCKS)
        return;
    switch (how) {
    case 0: p = (unsigned char *)arena_hook_alloc(a, size); break;
    case 1: {
        unsigned items = (unsigned)(1 + below(4)), each;
        if (is_huge) {
            items = each = UINT_MAX;
            size = (size_t)items * each;
            is_huge = size > (size_t)PTRDIFF_MAX || sizeof(size_t) < 8;
        } else {
            each = (unsigned)((size + items - 1) / items);
            size = (size_t)items * each;
        }
        p = (unsigned char *)arena_hook_zalloc(a, items, each);
        break;
    }
    case 2:
    case 3: p = (unsigned char *)arena_alloc_reuse(a, size); break;
    case 4: p = (unsigned char *)arena_alloc(a, size); break;
    case 5:
        align = aligns[below(sizeof aligns / sizeof aligns[0])];
        p = (unsigned char *)arena_alloc_aligned(a, size, align);
        break;
    default: /* a string of up to 48 bytes, its NUL counted */
        is_huge = false;
        size = 1 + below(48);
        align = 1;
        p = (unsigned char *)arena_strndup(a, text, size - 1);
        if (p)
            TEST_CHECK(memcmp(p, text, size - 1) == 0 && p[size - 1] == '\0');
        break;
    }
    TRACE("plain_alloc(%u) %d %zu at %zu: %p\n", how, i, size, align, (void *)p);
    if (!returned(p, i, b, is_huge))
        return;
    TEST_CHECK(is_aligned(p, align));
    TEST_CHECK(arena_size(a) == b.size + size);
    if (size == 0)
        return; /* not a value: not to be dereferenced, freed or grown */
    add_at(p, size, i, SIZED, align);
}

static void plain_realloc(int i)
{
    arena *a = &arenas[i].a;
    bool is_huge;
    size_t size = draw_size(i, &is_huge);
    before b = take_before(i);
    long k = pick(SIZED, i);
    unsigned char *q;

    if (k < 0)
        return;
    if (overaligned(&blocks[k]) && size > blocks[k].size)
        return; /* values above ARENA_ALIGN must not be grown */
    q = (unsigned char *)arena_realloc(a, blocks[k].p, blocks[k].size, size);
    TRACE("arena_realloc %d %p %zu -> %zu: %p\n", i, (void *)blocks[k].p, blocks[k].size, size,
          (void *)q);
    TEST_CHECK(q || size > blocks[k].size); /* a shrink returns the block */
    if (!returned(q, i, b, is_huge))
        return;
    if (size <= blocks[k].size)
        TEST_CHECK(q == blocks[k].p);
    if (size == 0) { /* the shrink to nothing: arena_free() drops it */
        TEST_CHECK(has_pattern(q, 0, blocks[k].id));
        drop((size_t)k);
        return;
    }
    resized((size_t)k, q, size, i);
}

static void plain_free(int i)
{
    arena *a = &arenas[i].a;
    long k = pick(SIZED, i);
    size_t size;

    if (k < 0)
        return;
    check_block(&blocks[k]);
    size = arena_size(a);
    TRACE("arena_free %d %p %zu\n", i, (void *)blocks[k].p, blocks[k].size);
    arena_free(a, blocks[k].p, blocks[k].size);
    TEST_CHECK(arena_size(a) == size - blocks[k].size);
    drop((size_t)k);
}

static void back_op(int i)
{
    slot *s = &arenas[i];
    bool is_huge;
    size_t size = draw_size(i, &is_huge);
    before b = take_before(i);
    long k = pick(BACK, i);
    unsigned char *p;

    if (k >= 0 && below(2)) {
        check_block(&blocks[k]);
        TRACE("back_free %d %p %zu\n", i, (void *)blocks[k].p, blocks[k].size);
        s->of.free(s->of.ctx, blocks[k].p, blocks[k].size);
        drop((size_t)k);
        return;
    }
    if (size == 0 || nblocks == MAX_BLOCKS)
        return;
    p = (unsigned char *)s->of.alloc(s->of.ctx, size);
    TRACE("back_alloc %d %zu: %p\n", i, size, (void *)p);
    if (returned(p, i, b, is_huge))
        add(p, size, i, BACK);
}

/* ---- Marks, resets -------------------------------------------------------------------- */

static void save(int i)
{
    slot *s = &arenas[i];
    mark *m;
    if (s->nmarks == MAX_MARKS)
        return;
    m = &s->marks[s->nmarks++];
    m->scope = below(2) != 0;
    if (m->scope) {
        m->s = arena_scope_begin(&s->a);
        m->m = m->s.mark;
    } else {
        m->m = arena_save(&s->a);
    }
    m->t = clock_;
    m->size = arena_size(&s->a);
    TRACE("save %d (%s) #%zu\n", i, m->scope ? "scope" : "mark", s->nmarks - 1);
}

static void rewind_to(int i)
{
    slot *s = &arenas[i];
    size_t k;
    mark *m;
    if (s->nmarks == 0)
        return;
    k = below(s->nmarks);
    m = &s->marks[k];
    TRACE("rewind %d to #%zu\n", i, k);
    if (m->scope)
        arena_scope_end(&m->s);
    else
        arena_rewind(&s->a, m->m);
    TEST_CHECK(arena_size(&s->a) == m->size);
    end_blocks(i, m->t);
    s->nmarks = k + (m->scope ? 0 : 1); /* a scope ended; a mark stays valid */
}

static void reset(int i)
{
    slot *s = &arenas[i];
    TRACE("reset %d\n", i);
    switch (below(5)) {
    case 0: arena_reset(&s->a); break;
    case 1: arena_reset_to(&s->a, below(3) * s->budget); break;
    case 2: arena_release(&s->a); break;
    default: /* a trim ends nothing */ arena_trim(&s->a, below(3) * s->budget); return;
    }
    s->ended = true;
    TEST_CHECK(arena_size(&s->a) == 0);
    end_blocks(i, 0);
    s->nmarks = 0;
}

/* ---- Misuse ------------------------------------------------------------------------------ */

static void misuse(void)
{
    static _Alignas(64) unsigned char zeroes[64];
    int count = recorded_errors.count;
    void *fake = zeroes + 32;
    long k;

    switch (below(4)) {
    case 0:
        arena_cur_free(fake);
        TEST_CHECK(test_misuse_reported(count, ARENA_ERR_FOREIGN_POINTER));
        TEST_CHECK(arena_cur_realloc(fake, 10) == NULL);
        TEST_CHECK(test_misuse_reported(count + 1, ARENA_ERR_FOREIGN_POINTER));
        TEST_CHECK(arena_cur_size(fake) == 0);
        TEST_CHECK(test_misuse_reported(count + 2, ARENA_ERR_FOREIGN_POINTER));
        TEST_CHECK(all_zero(zeroes, sizeof zeroes));
        break;
#if ARENA_CHECKED
    case 1: /* inside a block of the family: its header is pattern bytes,
               which the checked build's check word rejects */
        k = pick(CUR, ANY);
        if (k >= 0 && blocks[k].size >= 2 * 32) {
            unsigned char *inner = blocks[k].p + 32 + ARENA_ALIGN * below(2);
            arena_cur_free(inner);
            TEST_CHECK(test_misuse_reported(count, ARENA_ERR_FOREIGN_POINTER));
        }
        break;
    case 2: /* inside a value */
        k = pick(SIZED, ANY);
        if (k >= 0 && blocks[k].size > ARENA_ALIGN) {
            arena_free(&arenas[blocks[k].owner].a, blocks[k].p + ARENA_ALIGN,
                       blocks[k].size - ARENA_ALIGN);
            TEST_CHECK(test_misuse_reported(count, ARENA_ERR_FOREIGN_POINTER));
        }
        break;
    default: /* an old size beyond what the value was stored or grown with */
        k = pick(SIZED, ANY);
        if (k >= 0 && !overaligned(&blocks[k]) && blocks[k].grown > 0) { /* a value */
            TEST_CHECK(arena_realloc(&arenas[blocks[k].owner].a, blocks[k].p, blocks[k].grown + 1,
                                     blocks[k].size + below(64)) == NULL);
            TEST_CHECK(test_misuse_reported(count, ARENA_ERR_BAD_SIZE));
        }
        break;
#else
    default: (void)k; break;
#endif
    }
}

/* ---- The input ---------------------------------------------------------------------------- */

static void step(void)
{
    int i = (int)below(ARENAS);
    switch (below(32)) {
    case 0:
    case 1:
    case 2: cur_alloc(); break;
    case 3:
    case 4: cur_realloc(); break;
    case 5:
    case 6: cur_free(); break;
    case 7: set_current(); break;
    case 8:
    case 9: lua_op(i, false); break;
    case 10:
    case 11: lua_op(i, true); break;
    case 12:
    case 13: hook_realloc_op(i); break;
    case 14:
    case 15:
    case 16: plain_alloc(i); break;
    case 17:
    case 18: plain_realloc(i); break;
    case 19:
    case 20: plain_free(i); break;
    case 21: back_op(i); break;
    case 22:
    case 23: save(i); break;
    case 24:
    case 25: rewind_to(i); break;
    case 26: reset(i); break;
    case 27:
        TRACE("fail %d\n", i);
        arenas[i].tb.fail_at = arenas[i].tb.calls + 1 + below(3);
        break;
    case 28: { /* does nothing: the block stays live */
        long k = pick(SIZED, i);
        if (k >= 0)
            arena_hook_free(&arenas[i].a, blocks[k].p);
        break;
    }
    case 29:
        TRACE("misuse\n");
        misuse();
        break;
    default: cur_alloc(); break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t ops, k;
    int i;

    in.p = data;
    in.n = size;
    record_errors();
    nblocks = 0;
    for (i = 0; i < ARENAS; i++)
        start_arena(i);
    current = HEAP;
    for (ops = 0; in.n && ops < MAX_OPS; ops++) {
        step();
        check_peaks();
        check_all(ops % SIZE_CHECKS == SIZE_CHECKS - 1);
    }
    /* The heap's blocks outlive the arenas; every arena's value is checked
     * before it goes. */
    check_all(true);
    arena_set_current(NULL);
    current = HEAP;
    for (k = 0; k < nblocks; k++)
        if (blocks[k].owner == HEAP)
            arena_cur_free(blocks[k].p);
    nblocks = 0;
    for (i = 0; i < ARENAS; i++)
        end_arena(i);
    TEST_CHECK(recorded_errors.count == recorded_errors.expected);
    restore_errors();
    return 0;
}
