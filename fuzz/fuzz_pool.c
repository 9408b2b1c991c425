/*
 * libFuzzer target: operations on one pool, checked against a model.  Every
 * live object keeps its bytes, counters are exact, slots are recycled LIFO,
 * arena_pool_owns() is exact, arena_pool_check() holds, and misuse (NULL,
 * foreign and interior pointers, double frees) is reported exactly once with
 * the pool unchanged.  The pool comes from a failing-on-demand backing or
 * from a caller's buffer.
 */
#include <arena/pool.h>

#include "fuzz_common.h"

#define MAX_CAP 512

typedef struct pmodel {
    arena_pool p;
    fuzz_backing fb;
    arena_allocator al;
    size_t obj_size, cap;
    unsigned char *live[MAX_CAP]; /* live objects, in no order */
    uint8_t seed[MAX_CAP];
    size_t nlive;
    unsigned char *freed[MAX_CAP]; /* freed slots, most recent last */
    size_t nfreed;
    int expected_errors;
} pmodel;

static _Alignas(64) unsigned char pool_buf[1 << 17];

static void pfill(unsigned char *p, size_t n, uint8_t seed)
{
    size_t i;
    for (i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 7u);
}

static void pverify(pmodel *m)
{
    size_t i, j;
    for (i = 0; i < m->nlive; i++) {
        for (j = 0; j < m->obj_size; j++)
            CHECK(m->live[i][j] == (unsigned char)(m->seed[i] + j * 7u));
        CHECK(arena_pool_owns(&m->p, m->live[i]));
    }
    CHECK(arena_pool_used(&m->p) == m->nlive);
    CHECK(arena_pool_available(&m->p) == m->cap - m->nlive);
    CHECK(arena_pool_capacity(&m->p) == m->cap);
    CHECK(arena_pool_check(&m->p));
    CHECK(total_errors() == m->expected_errors);
}

static void misuse(pmodel *m, void *ptr, arena_error code)
{
    int before = errors[code];
    arena_pool_free(&m->p, ptr);
    m->expected_errors++;
    CHECK(errors[code] == before + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static pmodel m;
    input in = {data, size};
    uint8_t setup = take8(&in);
    size_t obj_size = take16(&in) % 300, align = (size_t)1 << (take8(&in) % 7);
    size_t cap = 1 + take16(&in) % MAX_CAP;
    bool ok;

    fuzz_begin(&m.fb, &m.al);
    m.nlive = m.nfreed = 0;
    m.expected_errors = 0;
    if (setup & 1) {
        size_t need = arena_pool_buffer_size(obj_size, align, cap);
        if (need > 1) /* one byte short: refused */
            CHECK(!arena_pool_init_buffer(&m.p, pool_buf, need - 1, obj_size, align, cap));
        ok = need && need <= sizeof pool_buf &&
             arena_pool_init_buffer(&m.p, pool_buf, need, obj_size, align, cap);
        if (need && need <= sizeof pool_buf)
            CHECK(ok);
    } else {
        m.fb.fail_at = (setup >> 1) & 3u; /* 0: never; else the Nth call fails */
        ok = arena_pool_init(&m.p, obj_size, align, cap, &m.al);
        if (!ok)
            CHECK(m.fb.live == 0);
    }
    if (!ok) {
        arena_set_error_handler(NULL, NULL);
        return 0;
    }
    m.obj_size = obj_size;
    m.cap = cap;
    pverify(&m);

    while (in.n) {
        uint8_t op = take8(&in);
        switch (op >> 5) {
        case 0: case 1: case 2: { /* take one */
            unsigned char *o = (unsigned char *)arena_pool_alloc(&m.p);
            if (m.nlive == m.cap) {
                CHECK(o == NULL);
                break;
            }
            CHECK(o != NULL);
            CHECK((uintptr_t)o % align == 0);
            if (m.nfreed) /* LIFO */
                CHECK(o == m.freed[--m.nfreed]);
            m.live[m.nlive] = o;
            m.seed[m.nlive] = take8(&in);
            pfill(o, m.obj_size, m.seed[m.nlive]);
            m.nlive++;
            break;
        }
        case 3: case 4: { /* give one back */
            size_t k;
            if (m.nlive == 0)
                break;
            k = take8(&in) % m.nlive;
            arena_pool_free(&m.p, m.live[k]);
            if (m.nfreed < MAX_CAP)
                m.freed[m.nfreed++] = m.live[k];
            m.live[k] = m.live[--m.nlive];
            m.seed[k] = m.seed[m.nlive];
            break;
        }
        case 5: /* misuse */
            switch (op & 3u) {
            case 0: misuse(&m, NULL, ARENA_ERR_NULL_FREE); break;
            case 1:
                if (m.nfreed)
                    misuse(&m, m.freed[m.nfreed - 1], ARENA_ERR_DOUBLE_FREE);
                break;
            case 2:
                if (m.nlive && m.obj_size > 1) {
                    unsigned char *inner = m.live[0] + 1 + take8(&in) % (m.obj_size - 1);
                    CHECK(!arena_pool_owns(&m.p, inner));
                    misuse(&m, inner, ARENA_ERR_FOREIGN_POINTER);
                }
                break;
            default: {
                static char outside[8];
                CHECK(!arena_pool_owns(&m.p, outside));
                misuse(&m, outside, ARENA_ERR_FOREIGN_POINTER);
                break;
            }
            }
            break;
        case 6: /* give everything back, most recent first */
            while (m.nlive) {
                arena_pool_free(&m.p, m.live[--m.nlive]);
                if (m.nfreed < MAX_CAP)
                    m.freed[m.nfreed++] = m.live[m.nlive];
            }
            break;
        default:
            CHECK(!arena_pool_owns(&m.p, NULL));
            break;
        }
        pverify(&m);
    }
    arena_pool_destroy(&m.p);
    CHECK(m.fb.live == 0);
    arena_set_error_handler(NULL, NULL);
    return 0;
}
