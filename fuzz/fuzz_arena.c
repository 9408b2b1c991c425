/*
 * libFuzzer target: the input is a sequence of operations on one arena (every
 * entry point, marks, refs, grow, a backing allocator that fails on demand),
 * each checked against a reference model: every live value keeps its bytes,
 * arena_size() is exact, arena_check() holds, misuse is reported exactly once,
 * and a failed allocation leaves the arena as it was.  In a checked build,
 * stale refs are resolved too and must be reported.
 *
 * Build: cmake -DARENA_FUZZ=ON -DCMAKE_C_COMPILER=clang (see fuzz/CMakeLists.txt).
 */
#include "fuzz_common.h"

#define MAX_VALUES 256
#define MAX_MARKS 16
#define MAX_STALE 32

typedef struct value {
    unsigned char *p;
    size_t n;       /* bytes checked (a string's NUL included) */
    size_t align;
    uint8_t seed;
    bool str;
    bool has_ref;
    arena_ref ref;
} value;

typedef struct model {
    arena a;
    fuzz_backing fb;
    arena_allocator al;
    value v[MAX_VALUES];
    size_t nv;
    struct { arena_mark m; size_t nv, size; } marks[MAX_MARKS];
    size_t nmarks;
    size_t size;      /* arena_size() expected */
    size_t floor;     /* values below it were stored before the newest mark */
    arena_mark old;   /* a mark from before the last reset or release */
    bool have_old;
    arena_ref stale[MAX_STALE];
    size_t nstale;
    int expected_errors;
    unsigned char buf[4096 + 16];
    unsigned char scratch[65536 + 16];
} model;

static unsigned char byte_of(uint8_t seed, size_t i) { return (unsigned char)(seed + i * 31u); }

static void fill(unsigned char *p, size_t n, uint8_t seed)
{
    size_t i;
    for (i = 0; i < n; i++)
        p[i] = byte_of(seed, i);
}

static void verify_value(const model *m, const value *v)
{
    size_t i, body = v->str ? v->n - 1 : v->n;
    for (i = 0; i < body; i++)
        CHECK(v->p[i] == byte_of(v->seed, i));
    if (v->str)
        CHECK(v->p[body] == '\0');
    if (v->has_ref) {
        CHECK(arena_ref_ptr(&m->a, v->ref) == v->p);
        CHECK(arena_ref_len(v->ref) == body);
    }
}

static void verify(model *m)
{
    size_t i;
    for (i = 0; i < m->nv; i++)
        verify_value(m, &m->v[i]);
    CHECK(arena_size(&m->a) == m->size);
    CHECK(arena_check(&m->a));
    CHECK(total_errors() == m->expected_errors);
}

static void forget_values(model *m, size_t from)
{
    size_t i;
    for (i = from; i < m->nv; i++)
        if (m->v[i].has_ref && m->nstale < MAX_STALE)
            m->stale[m->nstale++] = m->v[i].ref;
    m->nv = from;
    if (m->floor > from)
        m->floor = from;
}

static void add_value(model *m, void *p, size_t n, size_t align, uint8_t seed, bool str)
{
    value *v = &m->v[m->nv++];
    memset(v, 0, sizeof *v);
    v->p = (unsigned char *)p;
    v->n = n;
    v->align = align;
    v->seed = seed;
    v->str = str;
    if (!str)
        fill(v->p, n, seed);
    m->size += n;
}

/* A result of an allocation of `n` bytes: NULL must mean the arena did not
 * change; size 0 must not be NULL (unless the request was invalid). */
static bool accept(model *m, void *p, size_t n, size_t align, size_t retained_before)
{
    if (p && ((uintptr_t)p % (align ? align : ARENA_ALIGN)) != 0)
        CHECK(!"misaligned value");
    if (!p) {
        CHECK(arena_size(&m->a) == m->size);
        CHECK(arena_retained(&m->a) == retained_before);
        return false;
    }
    return n != 0;
}

static size_t take_align(input *in)
{
    static const size_t aligns[] = {0, 1, 2, 4, 8, 16, 32, 64, 4096, 3, 24, 1, 8, 16, 0, 2};
    return aligns[take8(in) & 15u];
}

static bool valid_align(size_t al) { return al == 0 || (al & (al - 1)) == 0; }

static void op_store(model *m, input *in, uint8_t op)
{
    size_t n = take_size(in), align = ARENA_ALIGN, retained = arena_retained(&m->a);
    uint8_t seed = take8(in);
    void *p = NULL;
    bool str = false;

    if (m->nv == MAX_VALUES)
        return;
    switch (op % 8) {
    case 0: p = arena_alloc(&m->a, n); break;
    case 1:
        align = take_align(in);
        p = arena_alloc_aligned(&m->a, n, align);
        if (!valid_align(align))
            CHECK(p == NULL);
        break;
    case 2: {
        size_t count = take8(in) & 15u;
        size_t total = count * (n & 4095u);
        p = arena_calloc(&m->a, count, n & 4095u);
        if (p) {
            size_t i;
            for (i = 0; i < total; i++)
                CHECK(((unsigned char *)p)[i] == 0);
        }
        n = total;
        break;
    }
    case 3:
        if (n > sizeof m->scratch)
            n = sizeof m->scratch;
        align = take_align(in);
        fill(m->scratch, n, seed);
        p = arena_copy(&m->a, m->scratch, n, align);
        if (!valid_align(align))
            CHECK(p == NULL);
        break;
    case 4:
    case 5:
        if (n >= sizeof m->scratch)
            n = sizeof m->scratch - 1;
        fill(m->scratch, n, seed);
        p = arena_strndup(&m->a, (const char *)m->scratch, n);
        if (p)
            CHECK(memcmp(p, m->scratch, n) == 0 && ((char *)p)[n] == '\0');
        n += 1;
        align = 1;
        str = true;
        break;
    case 6: {
        typedef struct { double d; int i; } pair;
        size_t count = n & 63u;
        p = ARENA_NEW_ARRAY(&m->a, pair, count);
        n = count * sizeof(pair);
        if (p) {
            size_t i;
            for (i = 0; i < n; i++)
                CHECK(((unsigned char *)p)[i] == 0);
        }
        align = _Alignof(pair);
        break;
    }
    default: {
        size_t count = n;
        p = ARENA_ALLOC_ARRAY(&m->a, uint32_t, count);
        if (count > SIZE_MAX / 4) {
            CHECK(p == NULL);
            n = 0;
        } else {
            n = count * 4;
        }
        align = 4;
        break;
    }
    }
    if (p && n == 0)
        return; /* size 0: nothing stored */
    if (accept(m, p, n, align && valid_align(align) ? align : ARENA_ALIGN, retained))
        add_value(m, p, n, align, seed, str);
}

static void op_ref(model *m, input *in, uint8_t op)
{
    size_t n = take_size(in), retained = arena_retained(&m->a);
    uint8_t seed = take8(in);
    arena_ref r;
    value *v;

    if (m->nv == MAX_VALUES)
        return;
    if (op & 1) {
        if (n > ARENA_REF_MAX) { /* refused before anything is read */
            r = arena_ref_copy(&m->a, m->scratch, n, 0);
            m->expected_errors++;
            CHECK(arena_ref_empty(r));
            CHECK(errors[ARENA_ERR_REF_TOO_LARGE] > 0);
            return;
        }
        if (n > sizeof m->scratch)
            n = sizeof m->scratch;
        fill(m->scratch, n, seed);
        r = arena_ref_copy(&m->a, m->scratch, n, take_align(in) & 63u);
    } else {
        if (n >= ARENA_REF_MAX) {
            r = arena_ref_strndup(&m->a, (const char *)m->scratch, n);
            m->expected_errors++;
            CHECK(arena_ref_empty(r));
            return;
        }
        if (n >= sizeof m->scratch)
            n = sizeof m->scratch - 1;
        fill(m->scratch, n, seed);
        r = arena_ref_strndup(&m->a, (const char *)m->scratch, n);
    }
    if (arena_ref_empty(r)) { /* size 0, an invalid alignment, or out of memory */
        CHECK(arena_size(&m->a) == m->size);
        CHECK(arena_retained(&m->a) == retained);
        return;
    }
    CHECK(arena_ref_len(r) == n);
    v = &m->v[m->nv++];
    memset(v, 0, sizeof *v);
    v->p = (unsigned char *)arena_ref_ptr(&m->a, r);
    v->n = (op & 1) ? n : n + 1;
    v->seed = seed;
    v->str = !(op & 1);
    v->align = 1;
    v->has_ref = true;
    v->ref = r;
    m->size += v->n;
}

static void op_grow(model *m, input *in)
{
    size_t new_size = take_size(in) & 0x3FFFFu, retained = arena_retained(&m->a);
    uint8_t seed = take8(in);
    size_t pick = take8(in);
    unsigned char *q;
    value *v;

    if (m->nv == MAX_VALUES)
        return;
    if (m->nv <= m->floor || (pick & 128u)) {
        q = (unsigned char *)arena_grow(&m->a, NULL, 0, new_size);
        if (new_size && accept(m, q, new_size, ARENA_ALIGN, retained))
            add_value(m, q, new_size, ARENA_ALIGN, seed, false);
        return;
    }
    v = &m->v[m->floor + pick % (m->nv - m->floor)];
    if (v->align > ARENA_ALIGN || v->has_ref || v->str)
        return;
    q = (unsigned char *)arena_grow(&m->a, v->p, v->n, new_size);
    if (!q) {
        CHECK(new_size > v->n);
        CHECK(arena_size(&m->a) == m->size && arena_retained(&m->a) == retained);
        return;
    }
    if (q == v->p) {
        size_t now = arena_size(&m->a);
        if (new_size <= v->n)
            CHECK(now == m->size || now == m->size - (v->n - new_size));
        else
            CHECK(now == m->size + (new_size - v->n));
        m->size = now;
        v->n = new_size;
        fill(v->p, new_size, v->seed);
        return;
    }
    CHECK(new_size > v->n);
    CHECK(memcmp(q, v->p, v->n) == 0);
    add_value(m, q, new_size, ARENA_ALIGN, seed, false);
}

static void op_mark(model *m, input *in, uint8_t op)
{
    size_t k;
    if (op & 1) {
        if (m->nmarks == MAX_MARKS)
            return;
        m->marks[m->nmarks].m = arena_save(&m->a);
        m->marks[m->nmarks].nv = m->nv;
        m->marks[m->nmarks].size = m->size;
        m->nmarks++;
        m->floor = m->nv;
        return;
    }
    if (m->nmarks == 0) {
        if (m->have_old) { /* expired by a reset or release: reported, no effect */
            size_t retained = arena_retained(&m->a);
            arena_rewind(&m->a, m->old);
            m->expected_errors++;
            CHECK(errors[ARENA_ERR_BAD_MARK] > 0);
            CHECK(arena_retained(&m->a) == retained);
        }
        return;
    }
    k = take8(in) % m->nmarks;
    arena_rewind(&m->a, m->marks[k].m);
    forget_values(m, m->marks[k].nv);
    m->size = m->marks[k].size;
    m->nmarks = k + 1;
    m->floor = m->nv;
}

static void expire_all(model *m)
{
    forget_values(m, 0);
    if (m->nmarks) {
        m->old = m->marks[0].m;
        m->have_old = true;
    }
    m->nmarks = 0;
    m->floor = 0;
    m->size = 0;
}

static void op_stale(model *m, input *in)
{
    arena_ref r;
    if (!ARENA_CHECKED || m->nstale == 0)
        return;
    r = m->stale[take8(in) % m->nstale];
    CHECK(arena_ref_ptr(&m->a, r) == NULL);
    m->expected_errors++;
    CHECK(errors[ARENA_ERR_STALE_REF] > 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static model m;
    input in = {data, size};
    uint8_t setup = take8(&in);
    size_t budget = (size_t)(take16(&in) & 4095u) * 4; /* small chunks: more of them */

    fuzz_begin(&m.fb, &m.al);
    m.nv = m.nmarks = m.size = m.floor = m.nstale = 0;
    m.have_old = false;
    m.expected_errors = 0;
    switch (setup & 3u) {
    case 0: arena_init_with(&m.a, budget, &m.al); break;
    case 1: arena_init_buffer(&m.a, m.buf + (setup >> 2 & 15u), budget % 4096, &m.al); break;
    case 2: arena_init_buffer(&m.a, m.buf, budget % 4096, NULL); break;
    default: arena_init_with(&m.a, setup >> 2, &m.al); break;
    }

    while (in.n) {
        uint8_t op = take8(&in);
        switch (op >> 4) {
        case 0: case 1: case 2: case 3: case 4: case 5:
            op_store(&m, &in, op);
            break;
        case 6: case 7: op_ref(&m, &in, op); break;
        case 8: case 9: op_grow(&m, &in); break;
        case 10: case 11: op_mark(&m, &in, op); break;
        case 12:
            arena_reset(&m.a);
            expire_all(&m);
            break;
        case 13:
            if (op & 1) {
                arena_release(&m.a);
                expire_all(&m);
                CHECK(m.fb.live == 0);
                CHECK(arena_retained(&m.a) <= ((setup & 3u) == 1 || (setup & 3u) == 2 ? 4096 : 0));
            } else {
                op_stale(&m, &in);
            }
            break;
        case 14: m.fb.fail_at = m.fb.calls + 1 + (op & 3u); break;
        default: break;
        }
        verify(&m);
    }
    arena_release(&m.a);
    CHECK(m.fb.live == 0);
    CHECK(arena_retained(&m.a) <= ((setup & 3u) == 1 || (setup & 3u) == 2 ? 4096 : 0));
    arena_set_error_handler(NULL, NULL);
    return 0;
}
