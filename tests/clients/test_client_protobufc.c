/* SPDX-License-Identifier: MIT */
/*
 * protobuf-c through ProtobufCAllocator (arena_hook_alloc/free, the arena as
 * allocator_data): a batch message (strings, bytes, packed and repeated
 * fields, nested messages) unpacked into the arena packs back to the same
 * bytes as one unpacked with protobuf-c's malloc, freed with
 * free_unpacked or dropped with the batch; the arena's backing failing at
 * each call makes unpack return NULL, never crash or leak.
 */
#include "client.h"

#include "client.pb-c.h"

#define ITEMS_MAX 400

static uint8_t wire[1 << 17];
static size_t wire_len;

/* Packs a batch of `n` items built in static storage (packing allocates
 * nothing). */
static void make_wire(size_t n)
{
    static Item items[ITEMS_MAX], *item_ptrs[ITEMS_MAX];
    static int64_t values[ITEMS_MAX][8];
    static char names[ITEMS_MAX][32], tag_text[ITEMS_MAX][3][16];
    static char *tags[ITEMS_MAX][3];
    static uint8_t blob[ITEMS_MAX][40];
    static uint32_t ids[ITEMS_MAX];
    Batch b = BATCH__INIT;
    size_t i, k;

    assert_true(n <= ITEMS_MAX);
    for (i = 0; i < n; i++) {
        Item init = ITEM__INIT;
        items[i] = init;
        items[i].id = (uint32_t)(i * 2654435761u);
        snprintf(names[i], sizeof names[i], "item-%zu-\xc3\xa9", i);
        items[i].name = names[i];
        for (k = 0; k < 8; k++)
            values[i][k] = (int64_t)((i + 1) * (k + 3) * 1000003) * (k % 2 ? -1 : 1);
        items[i].n_values = i % 9;
        items[i].values = values[i];
        for (k = 0; k < sizeof blob[i]; k++)
            blob[i][k] = (uint8_t)(i * 31 + k);
        items[i].has_blob = i % 3 != 0;
        items[i].blob.len = i % sizeof blob[i];
        items[i].blob.data = blob[i];
        for (k = 0; k < 3; k++) {
            snprintf(tag_text[i][k], sizeof tag_text[i][k], "t%zu.%zu", i % 17, k);
            tags[i][k] = tag_text[i][k];
        }
        items[i].n_tags = i % 4;
        items[i].tags = tags[i];
        items[i].has_score = true;
        items[i].score = (double)i / 7.0;
        item_ptrs[i] = &items[i];
        ids[i] = (uint32_t)(i ^ 0xA5A5u);
    }
    b.label = "batch \xe2\x82\xac";
    b.n_items = n;
    b.items = item_ptrs;
    b.head = n ? &items[0] : NULL;
    b.n_ids = n;
    b.ids = ids;
    wire_len = batch__get_packed_size(&b);
    assert_true(wire_len <= sizeof wire);
    assert_int_equal(batch__pack(&b, wire), wire_len);
}

/* Unpacks `wire` with `al` (NULL: malloc) and writes the message packed
 * again, and a digest of its fields walked, into `out`. */
static int unpack(ProtobufCAllocator *al, output *out, bool free_it)
{
    static uint8_t again[sizeof wire];
    Batch *m = batch__unpack(al, wire_len, wire);
    size_t i, k;
    int64_t sum = 0;
    char digest[64];

    if (!m)
        return CLIENT_OOM;
    assert_int_equal(batch__pack(m, again), wire_len);
    out_add(out, again, wire_len);
    for (i = 0; i < m->n_items; i++) {
        for (k = 0; k < m->items[i]->n_values; k++)
            sum += m->items[i]->values[k];
        sum += (int64_t)strlen(m->items[i]->name) + (int64_t)m->items[i]->blob.len;
    }
    snprintf(digest, sizeof digest, "|%zu|%lld|%s", m->n_items, (long long)sum, m->label);
    out_str(out, digest);
    if (free_it)
        batch__free_unpacked(m, al);
    return CLIENT_OK;
}

static int with_arena(arena *a, output *out)
{
    ProtobufCAllocator al = {arena_hook_alloc, arena_hook_free, a};
    return unpack(&al, out, true);
}

static int with_arena_dropped(arena *a, output *out)
{
    ProtobufCAllocator al = {arena_hook_alloc, arena_hook_free, a};
    return unpack(&al, out, false);
}

static output want;

static void reference(size_t n)
{
    make_wire(n);
    out_reset(&want);
    assert_int_equal(unpack(NULL, &want, true), CLIENT_OK);
    assert_memory_equal(want.bytes, wire, wire_len);
}

static void same_output_as_malloc(void **state)
{
    (void)state;
    reference(ITEMS_MAX);
    assert_true(wire_len > 20000);
    client_same_output(with_arena, with_arena_dropped, 256, &want);
}

static void out_of_memory_is_null(void **state)
{
    (void)state;
    reference(12);
    client_sweep(with_arena, 1, &want);
    client_sweep(with_arena_dropped, 1, &want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_output_as_malloc),
        cmocka_unit_test(out_of_memory_is_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
