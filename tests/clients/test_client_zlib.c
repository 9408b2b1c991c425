/* SPDX-License-Identifier: MIT */
/*
 * zlib through zalloc/zfree (arena_hook_zalloc/arena_hook_free, opaque = the arena):
 * deflate and inflate give the bytes zlib's own allocator gives, for zlib,
 * gzip and raw streams at several window and memory levels; the arena's
 * backing failing at each call surfaces as Z_MEM_ERROR from deflateInit2,
 * inflateInit2 or inflate (which allocates its window late), never a crash or
 * a leak.
 */
#include "client.h"

#include <zlib.h>

#define INPUT_MAX ((size_t)1 << 17)

static unsigned char input[INPUT_MAX];
static size_t input_len;

/* Text-like data with repeats near and far, and a stretch of noise. */
static void make_input(size_t len)
{
    uint64_t x = 0x2545F4914F6CDD1Dull;
    size_t i = 0;
    assert_true(len <= INPUT_MAX);
    while (i < len) {
        int n = snprintf((char *)input + i, len - i, "line %zu: value=%zu name=item-%zu;\n", i / 40,
                         (i * 2654435761u) % 100000, i % 977);
        if (n < 0 || (size_t)n >= len - i)
            break;
        i += (size_t)n;
        if (i % 7 == 0) {
            size_t k;
            for (k = 0; k < 64 && i < len; k++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                input[i++] = (unsigned char)x;
            }
        }
    }
    while (i < len)
        input[i++] = '.';
    input_len = len;
}

struct settings {
    int level, window_bits, mem_level;
};

static const struct settings settings[] = {
    {Z_DEFAULT_COMPRESSION, 15, 8}, /* zlib format, the defaults */
    {9, 31, 9},                     /* gzip, the most memory */
    {1, -9, 1},                     /* raw, the least */
};

/* Compresses `input` with `s`, then inflates the result, into `out` (the
 * compressed bytes, then the inflated ones).  `a` NULL: zlib's allocator. */
static int round_trip(arena *a, const struct settings *s, output *out)
{
    static unsigned char packed[INPUT_MAX + 1024], unpacked[INPUT_MAX];
    z_stream z;
    int rc;
    size_t packed_len;

    memset(&z, 0, sizeof z);
    if (a) {
        z.zalloc = arena_hook_zalloc;
        z.zfree = arena_hook_free;
        z.opaque = a;
    }
    rc = deflateInit2(&z, s->level, Z_DEFLATED, s->window_bits, s->mem_level, Z_DEFAULT_STRATEGY);
    if (rc == Z_MEM_ERROR)
        return CLIENT_OOM;
    assert_int_equal(rc, Z_OK);
    z.next_in = input;
    z.avail_in = (uInt)input_len;
    z.next_out = packed;
    z.avail_out = (uInt)sizeof packed;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    packed_len = z.total_out;
    assert_int_equal(deflateEnd(&z), Z_OK);
    out_add(out, packed, packed_len);

    memset(&z, 0, sizeof z);
    if (a) {
        z.zalloc = arena_hook_zalloc;
        z.zfree = arena_hook_free;
        z.opaque = a;
    }
    rc = inflateInit2(&z, s->window_bits);
    if (rc == Z_MEM_ERROR)
        return CLIENT_OOM;
    assert_int_equal(rc, Z_OK);
    z.next_in = packed;
    z.avail_in = (uInt)packed_len;
    /* in small steps, so that inflate keeps a window (its late allocation) */
    do {
        z.next_out = unpacked + z.total_out;
        z.avail_out =
            (uInt)(sizeof unpacked - z.total_out < 4096 ? sizeof unpacked - z.total_out : 4096);
        rc = inflate(&z, Z_NO_FLUSH);
    } while (rc == Z_OK);
    if (rc == Z_MEM_ERROR) {
        inflateEnd(&z);
        return CLIENT_OOM;
    }
    assert_int_equal(rc, Z_STREAM_END);
    out_add(out, unpacked, z.total_out);
    assert_int_equal(inflateEnd(&z), Z_OK);
    return CLIENT_OK;
}

static const struct settings *current_settings;

static int with_arena(arena *a, output *out) { return round_trip(a, current_settings, out); }

static output want;

static void reference(const struct settings *s)
{
    current_settings = s;
    out_reset(&want);
    assert_int_equal(round_trip(NULL, s, &want), CLIENT_OK);
    assert_int_equal(want.len > input_len, true);
    assert_memory_equal(want.bytes + want.len - input_len, input, input_len);
}

static void same_output_as_malloc(void **state)
{
    size_t i;
    (void)state;
    make_input(INPUT_MAX);
    for (i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        reference(&settings[i]);
        client_same_output(with_arena, NULL, 4096, &want);
    }
}

/* Every block zlib asks for comes from the arena, aligned for any type. */
static size_t zalloc_calls;

static voidpf checking_zalloc(voidpf opaque, uInt items, uInt size)
{
    void *p = arena_hook_zalloc(opaque, items, size);
    assert_non_null(p);
    assert_true(is_aligned(p, ARENA_ALIGN));
    zalloc_calls++;
    return p;
}

static void zalloc_blocks(void **state)
{
    arena a;
    z_stream z;
    (void)state;
    arena_init(&a, 0);
    memset(&z, 0, sizeof z);
    z.zalloc = checking_zalloc;
    z.zfree = arena_hook_free;
    z.opaque = &a;
    assert_int_equal(deflateInit(&z, 6), Z_OK);
    assert_int_equal(zalloc_calls, 5); /* state, window, prev, head, pending */
    assert_true(arena_size(&a) > 4 * 65536);
    assert_int_equal(deflateEnd(&z), Z_OK);
    arena_release(&a);
}

static void out_of_memory_is_z_mem_error(void **state)
{
    size_t i;
    (void)state;
    make_input(20000);
    for (i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        reference(&settings[i]);
        client_sweep(with_arena, 1, &want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_output_as_malloc),
        cmocka_unit_test(zalloc_blocks),
        cmocka_unit_test(out_of_memory_is_z_mem_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
