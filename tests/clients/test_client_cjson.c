/* SPDX-License-Identifier: MIT */
/*
 * cJSON through its global hooks (cJSON_InitHooks) and the arena_cur_*
 * family: parse, edit and print a document with the current arena, compared
 * with cJSON's own malloc; with cJSON_Delete and without it (the batch
 * dropped instead); with the hooks installed and no arena current (the C
 * heap: memcheck and LeakSanitizer see every block freed); heap blocks freed
 * while an arena is current; and the arena's backing failing at each call,
 * which cJSON must report as NULL.
 */
#include "client.h"

#include <cJSON.h>

static cJSON_Hooks arena_hooks = {arena_cur_malloc, arena_cur_free};

/* A deterministic document of `items` records: nested objects and arrays,
 * escapes, non-ASCII text, integers, fractions, booleans and nulls. */
static const char *document(size_t items)
{
    static char text[1 << 18];
    size_t len = 0, i;
    len += (size_t)snprintf(text + len, sizeof text - len, "{\"name\":\"batch\",\"items\":[");
    for (i = 0; i < items; i++) {
        assert_true(len < sizeof text - 512);
        len += (size_t)snprintf(
            text + len, sizeof text - len,
            "%s{\"id\":%zu,\"label\":\"item \\\"%zu\\\" caf\\u00e9 \xc3\xa9t\xc3\xa9\\n\","
            "\"score\":%zu.%03zu,\"tags\":[\"t%zu\",\"u%zu\",%zu],\"on\":%s,"
            "\"extra\":{\"none\":null,\"deep\":[[%zu],{\"k\":\"v\"}]}}",
            i ? "," : "", i, i * 31, (i * 7919) % 1000, i % 1000, i % 3, i % 5, i * i,
            i % 2 ? "true" : "false", i + 1);
    }
    len += (size_t)snprintf(text + len, sizeof text - len, "],\"count\":%zu}", items);
    return text;
}

static size_t doc_items = 20;

/* Parses, prints, edits (adds, replaces and deletes items: frees in the
 * middle of the batch), prints again.  `drop`: no cJSON_free or cJSON_Delete
 * at all, the batch takes everything. */
static int cjson_body(output *out, bool drop)
{
    cJSON *root, *items, *n;
    char *s;
    int r = CLIENT_OOM;

    root = cJSON_Parse(document(doc_items));
    if (!root)
        return CLIENT_OOM;
    s = cJSON_PrintUnformatted(root);
    if (!s)
        goto done;
    out_str(out, s);
    if (!drop)
        cJSON_free(s);
    items = cJSON_GetObjectItemCaseSensitive(root, "items");
    assert_true(cJSON_IsArray(items));
    cJSON_DeleteItemFromArray(items, 1);
    n = cJSON_CreateString("replacement \xe2\x82\xac");
    if (!n || !cJSON_ReplaceItemInObjectCaseSensitive(root, "name", n)) {
        cJSON_Delete(n);
        goto done;
    }
    /* cJSON 1.7.15 does not check its copy of the key here: out of memory
     * leaves the item in place with no key (a later cJSON checks it) */
    if (!n->string)
        goto done;
    if (!cJSON_AddNumberToObject(root, "pi", 3.14159265358979) ||
        !cJSON_AddArrayToObject(root, "empty") || !cJSON_AddNullToObject(root, "nothing"))
        goto done;
    s = cJSON_Print(root);
    if (!s)
        goto done;
    out_str(out, s);
    if (!drop)
        cJSON_free(s);
    r = CLIENT_OK;
done:
    if (!drop)
        cJSON_Delete(root);
    return r;
}

static int with_arena(arena *a, output *out)
{
    arena *prev = arena_set_current(a);
    int r = cjson_body(out, false);
    assert_ptr_equal(arena_set_current(prev), a);
    return r;
}

static int with_arena_dropped(arena *a, output *out)
{
    arena *prev = arena_set_current(a);
    int r = cjson_body(out, true);
    arena_set_current(prev);
    return r;
}

static output want;

static void reference(size_t items)
{
    doc_items = items;
    cJSON_InitHooks(NULL);
    out_reset(&want);
    assert_int_equal(cjson_body(&want, false), CLIENT_OK);
    cJSON_InitHooks(&arena_hooks);
}

static void same_output_as_malloc(void **state)
{
    (void)state;
    reference(800);
    assert_true(want.len > 100000);
    client_same_output(with_arena, with_arena_dropped, 256, &want);
}

/* The hooks stay installed with no arena current: everything is on the heap
 * and freed there (a leak or a bad free fails memcheck and ASan). */
static void heap_when_no_arena_is_current(void **state)
{
    output *got = &client_got;
    (void)state;
    reference(200);
    assert_null(arena_current());
    out_reset(got);
    assert_int_equal(cjson_body(got, false), CLIENT_OK);
    assert_same_output(got, &want);
}

/* A document made on the heap is edited and deleted while an arena is
 * current: its heap blocks are freed on the heap, the new ones come from
 * the arena and are given back or left to it. */
static void heap_document_in_an_arena_scope(void **state)
{
    arena a;
    cJSON *config, *fresh;
    char *s;
    arena *prev;
    (void)state;

    cJSON_InitHooks(&arena_hooks);
    config = cJSON_Parse("{\"threads\":4,\"name\":\"server\",\"paths\":[\"/a\",\"/b\"]}");
    assert_non_null(config);
    arena_init(&a, 0);
    prev = arena_set_current(&a);
    fresh = cJSON_Parse("{\"request\":1}");
    assert_non_null(fresh);
    s = cJSON_PrintUnformatted(config);
    assert_string_equal(s, "{\"threads\":4,\"name\":\"server\",\"paths\":[\"/a\",\"/b\"]}");
    cJSON_free(s);
    cJSON_DeleteItemFromObject(config, "paths"); /* heap blocks, freed on the heap */
    assert_true(arena_size(&a) > 0);
    cJSON_Delete(fresh);
    assert_int_equal(arena_size(&a), 0); /* every block of the arena given back */
    arena_set_current(prev);
    arena_release(&a);
    s = cJSON_PrintUnformatted(config); /* on the heap again */
    assert_string_equal(s, "{\"threads\":4,\"name\":\"server\"}");
    cJSON_free(s);
    cJSON_Delete(config);
}

static void out_of_memory_is_null(void **state)
{
    (void)state;
    reference(6);
    client_sweep(with_arena, 1, &want);
    client_sweep(with_arena_dropped, 1, &want);
}

static int teardown_hooks(void **state)
{
    (void)state;
    cJSON_InitHooks(NULL);
    arena_set_current(NULL);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(same_output_as_malloc, teardown_hooks),
        cmocka_unit_test_teardown(heap_when_no_arena_is_current, teardown_hooks),
        cmocka_unit_test_teardown(heap_document_in_an_arena_scope, teardown_hooks),
        cmocka_unit_test_teardown(out_of_memory_is_null, teardown_hooks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
