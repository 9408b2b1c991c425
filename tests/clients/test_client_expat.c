/* SPDX-License-Identifier: MIT */
/*
 * expat through XML_Memory_Handling_Suite (XML_ParserCreate_MM) and the
 * arena_cur_* family (malloc, realloc without the old size, free): the
 * events of a parse fed in small pieces, with namespaces, attributes,
 * entities and CDATA, are those of expat's own malloc, with the current
 * arena, with the parser dropped with the batch instead of freed, and with
 * no arena current (the C heap); the arena's backing failing at each call
 * ends in a NULL parser or XML_ERROR_NO_MEMORY.
 */
#include "client.h"

#include <expat.h>

static const XML_Memory_Handling_Suite arena_suite = {arena_cur_malloc, arena_cur_realloc,
                                                      arena_cur_free};

static char text[1 << 17];
static size_t text_len;

static void make_document(size_t items)
{
    size_t i;
    text_len = (size_t)snprintf(text, sizeof text,
                                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                                "<!DOCTYPE batch [<!ENTITY co \"Company &amp; Co\">]>\n"
                                "<batch xmlns=\"urn:a\" xmlns:b=\"urn:b\" name=\"&co;\">\n");
    for (i = 0; i < items; i++) {
        assert_true(text_len < sizeof text - 400);
        text_len +=
            (size_t)snprintf(text + text_len, sizeof text - text_len,
                             "  <b:item id=\"%zu\" b:score=\"%zu\" label=\"x&lt;%zu&gt;\">"
                             "caf\xc3\xa9 %zu &co; <![CDATA[<raw %zu>]]><!-- c --><empty/>"
                             "<long-element-name-%zu attr-%zu=\"%0*zu\"/></b:item>\n",
                             i, (i * 7919) % 1000, i, i, i, i % 13, i % 5, (int)(i % 60), i);
    }
    text_len += (size_t)snprintf(text + text_len, sizeof text - text_len, "</batch>\n");
    assert_true(text_len < sizeof text);
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    output *out = (output *)ud;
    out_str(out, "<");
    out_str(out, name);
    for (; attrs[0]; attrs += 2) {
        out_str(out, " ");
        out_str(out, attrs[0]);
        out_str(out, "=");
        out_str(out, attrs[1]);
    }
    out_str(out, ">");
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    output *out = (output *)ud;
    out_str(out, "</");
    out_str(out, name);
    out_str(out, ">");
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
    out_add((output *)ud, s, (size_t)len);
}

/* Parses the document fed in pieces of 61 bytes.  `suite` NULL: expat's
 * malloc; `free_parser` false: the batch takes the parser. */
static int parse(const XML_Memory_Handling_Suite *suite, output *out, bool free_parser)
{
    XML_Parser p = suite ? XML_ParserCreate_MM(NULL, suite, "|") : XML_ParserCreateNS(NULL, '|');
    size_t at;
    int r = CLIENT_OK;

    if (!p)
        return CLIENT_OOM;
    XML_SetUserData(p, out);
    XML_SetElementHandler(p, on_start, on_end);
    XML_SetCharacterDataHandler(p, on_text);
    for (at = 0; at < text_len; at += 61) {
        size_t n = text_len - at < 61 ? text_len - at : 61;
        if (XML_Parse(p, text + at, (int)n, at + n == text_len) != XML_STATUS_OK) {
            enum XML_Error e = XML_GetErrorCode(p);
            /* expat 2.5 does not check one lookup of an xmlns:prefix
             * attribute's prefix: that allocation failing (alone) shows
             * as an unbound prefix later.  Only ever after a failure. */
            if (e != XML_ERROR_NO_MEMORY &&
                !(e == XML_ERROR_UNBOUND_PREFIX && suite && client_tb.failed > 0))
                fail_msg("expat: %s at line %lu", XML_ErrorString(e),
                         (unsigned long)XML_GetCurrentLineNumber(p));
            r = CLIENT_OOM;
            break;
        }
    }
    if (free_parser)
        XML_ParserFree(p);
    return r;
}

static int with_arena(arena *a, output *out)
{
    arena *prev = arena_set_current(a);
    int r = parse(&arena_suite, out, true);
    arena_set_current(prev);
    return r;
}

static int with_arena_dropped(arena *a, output *out)
{
    arena *prev = arena_set_current(a);
    int r = parse(&arena_suite, out, false);
    arena_set_current(prev);
    return r;
}

static output want;

static void reference(size_t items)
{
    make_document(items);
    out_reset(&want);
    assert_int_equal(parse(NULL, &want, true), CLIENT_OK);
    assert_true(want.len < OUTPUT_MAX);
    want.bytes[want.len] = '\0'; /* for strstr */
}

static void same_output_as_malloc(void **state)
{
    (void)state;
    reference(600);
    assert_true(want.len > 50000);
    assert_non_null(strstr(want.bytes, "urn:b|item"));
    assert_non_null(strstr(want.bytes, "Company & Co"));
    client_same_output(with_arena, with_arena_dropped, 256, &want);
}

/* The suite installed with no arena current: the C heap, every block freed
 * (memcheck and LeakSanitizer would see one that is not). */
static void heap_when_no_arena_is_current(void **state)
{
    output *got = &client_got;
    (void)state;
    reference(100);
    assert_null(arena_current());
    out_reset(got);
    assert_int_equal(parse(&arena_suite, got, true), CLIENT_OK);
    assert_same_output(got, &want);
}

static void out_of_memory_is_no_memory(void **state)
{
    (void)state;
    reference(8);
    client_sweep(with_arena, 1, &want);
    client_sweep(with_arena_dropped, 1, &want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_output_as_malloc),
        cmocka_unit_test(heap_when_no_arena_is_current),
        cmocka_unit_test(out_of_memory_is_no_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
