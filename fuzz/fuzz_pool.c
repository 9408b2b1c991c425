/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: operations on one pool, checked against a model.  Every
 * live object keeps its bytes, counters are exact, slots are recycled LIFO,
 * arena_pool_owns() is exact, arena_pool_check() holds, and misuse (NULL,
 * foreign and interior pointers, double frees) is reported exactly once with
 * the pool unchanged.  The pool comes from a failing-on-demand backing or
 * from a caller's buffer.
 *
 * A step checks the counters and the objects it touches; every object, its
 * ownership and arena_pool_check() at the end of the input.
 */
#define TEST_NO_CMOCKA 1
#include "support.h"

#include <arena/pool.h>

#define MAX_CAP 256

typedef struct pmodel {
    arena_pool p;
    test_backing tb;
    size_t obj_size, cap;
    unsigned char *live[MAX_CAP]; /* live objects, in no order */
    uint64_t id[MAX_CAP];         /* the pattern of each */
    size_t nlive;
    unsigned char *freed[MAX_CAP]; /* freed slots, most recent last */
    size_t nfreed;
    uint64_t next_id;
} pmodel;

static pmodel m;
static _Alignas(64) unsigned char pool_buf[1 << 17];

typedef struct input {
    const uint8_t *p;
    size_t n;
} input;

static uint8_t take8(input *in)
{
    uint8_t v = 0;
    if (in->n) {
        v = *in->p++;
        in->n--;
    }
    return v;
}

static uint32_t take16(input *in)
{
    uint32_t lo = take8(in);
    return lo | (uint32_t)take8(in) << 8;
}

static void check_counters(void)
{
    TEST_CHECK(arena_pool_used(&m.p) == m.nlive);
    TEST_CHECK(arena_pool_available(&m.p) == m.cap - m.nlive);
    TEST_CHECK(arena_pool_capacity(&m.p) == m.cap);
    TEST_CHECK(recorded_errors.count == recorded_errors.expected);
}

static void check_object(size_t k)
{
    TEST_CHECK(has_pattern(m.live[k], m.obj_size, m.id[k]));
    TEST_CHECK(arena_pool_owns(&m.p, m.live[k]));
}

static void check_all(void)
{
    size_t k;
    for (k = 0; k < m.nlive; k++)
        check_object(k);
    check_counters();
    TEST_CHECK(arena_pool_check(&m.p));
}

static void misuse(void *ptr, arena_error code)
{
    int before = recorded_errors.count;
    arena_pool_free(&m.p, ptr);
    TEST_CHECK(test_misuse_reported(before, code));
}

static void take_one(size_t align)
{
    unsigned char *o = (unsigned char *)arena_pool_alloc(&m.p);
    if (m.nlive == m.cap) {
        TEST_CHECK(o == NULL);
        return;
    }
    TEST_CHECK(o != NULL);
    TEST_CHECK((uintptr_t)o % align == 0);
    TEST_CHECK(arena_pool_owns(&m.p, o));
    if (m.nfreed) /* LIFO */
        TEST_CHECK(o == m.freed[--m.nfreed]);
    m.live[m.nlive] = o;
    m.id[m.nlive] = m.next_id++;
    fill_pattern(o, m.obj_size, m.id[m.nlive]);
    m.nlive++;
}

static void give_back(size_t k)
{
    check_object(k);
    arena_pool_free(&m.p, m.live[k]);
    if (m.nfreed < MAX_CAP)
        m.freed[m.nfreed++] = m.live[k];
    m.live[k] = m.live[--m.nlive];
    m.id[k] = m.id[m.nlive];
}

static void misuse_op(input *in, uint8_t op)
{
    switch (op & 3u) {
    case 0: misuse(NULL, ARENA_ERR_NULL_FREE); break;
    case 1:
        if (m.nfreed)
            misuse(m.freed[m.nfreed - 1], ARENA_ERR_DOUBLE_FREE);
        break;
    case 2:
        if (m.nlive && m.obj_size > 1) {
            unsigned char *inner = m.live[0] + 1 + take8(in) % (m.obj_size - 1);
            TEST_CHECK(!arena_pool_owns(&m.p, inner));
            misuse(inner, ARENA_ERR_FOREIGN_POINTER);
        }
        break;
    default: {
        static char outside[8];
        TEST_CHECK(!arena_pool_owns(&m.p, outside));
        misuse(outside, ARENA_ERR_FOREIGN_POINTER);
        break;
    }
    }
}

/* A pool from the input's first bytes; false when init refused it, as it
 * must have. */
static bool start(input *in, size_t *obj_align)
{
    uint8_t setup = take8(in);
    size_t obj_size = take16(in) % 300, align = (size_t)1 << (take8(in) % 7);
    size_t cap = 1 + take16(in) % MAX_CAP;
    arena_allocator al = tb_allocator(&m.tb);
    bool ok;

    m.nlive = m.nfreed = 0;
    if (setup & 1) {
        size_t need = arena_pool_buffer_size(obj_size, align, cap);
        if (need > 1) /* one byte short: refused */
            TEST_CHECK(!arena_pool_init_buffer(&m.p, pool_buf, need - 1, obj_size, align, cap));
        ok = need && need <= sizeof pool_buf &&
             arena_pool_init_buffer(&m.p, pool_buf, need, obj_size, align, cap);
        if (need && need <= sizeof pool_buf)
            TEST_CHECK(ok);
    } else {
        m.tb.fail_at = (setup >> 1) & 3u; /* 0: never; else the Nth call fails */
        ok = arena_pool_init(&m.p, obj_size, align, cap, &al);
        if (!ok)
            TEST_CHECK(m.tb.live == 0 && m.tb.failed == 1);
    }
    m.obj_size = obj_size;
    m.cap = cap;
    *obj_align = align;
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = {data, size};
    size_t align;

    record_errors();
    if (!start(&in, &align)) {
        restore_errors();
        return 0;
    }
    check_all();

    while (in.n) {
        uint8_t op = take8(&in);
        switch (op >> 5) {
        case 0:
        case 1:
        case 2: take_one(align); break;
        case 3:
        case 4:
            if (m.nlive)
                give_back(take8(&in) % m.nlive);
            break;
        case 5: misuse_op(&in, op); break;
        case 6: /* everything back, most recent first */
            while (m.nlive)
                give_back(m.nlive - 1);
            break;
        default: TEST_CHECK(!arena_pool_owns(&m.p, NULL)); break;
        }
        check_counters();
    }
    check_all();
    arena_pool_destroy(&m.p);
    TEST_CHECK(m.tb.live == 0);
    restore_errors();
    return 0;
}
