/* SPDX-License-Identifier: MIT */
/* One request, three kinds of resource, one arena_reset: a file (closed by
 * a cleanup registered on the request's arena), zlib's state (through the
 * context hooks) and a cJSON document (through the global hooks, made
 * current for one call by ARENA_CURRENT_SCOPE).  The JSON is parsed in a
 * child arena of the request's: the document and cJSON's temporaries live
 * there, the fields the request keeps are copied into the request's arena,
 * and the child's chunks go back to the request's arena for the next
 * parse.  Nothing is freed by hand, and nothing leaks on any path. */
#include <arena/hooks.h>
#include <cJSON.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

static int files_closed;

static void close_file(void *ctx)
{
    fclose((FILE *)ctx);
    files_closed++;
}

/* A scratch file the batch owns: closed by whatever ends the batch. */
static FILE *batch_file(arena *a)
{
    FILE *f = tmpfile();
    if (f && !arena_cleanup_push(a, close_file, f)) {
        fclose(f); /* out of memory: nothing was registered */
        return NULL;
    }
    return f;
}

/* The request's name, parsed from `json` in a child of `a`, kept in `a`. */
static const char *parse_name(arena *a, const char *json)
{
    arena tmp;
    const char *name = NULL;
    cJSON *doc, *item;

    arena_init_child(&tmp, a, 0);
    {
#if ARENA_HAVE_SCOPE
        ARENA_CURRENT_SCOPE(&tmp); /* cJSON's blocks come from the child */
        doc = cJSON_Parse(json);
#else
        arena *prev = arena_current_begin(&tmp);
        doc = cJSON_Parse(json);
        arena_current_end(prev);
#endif
    }
    item = doc ? cJSON_GetObjectItem(doc, "name") : NULL;
    if (cJSON_IsString(item))
        name = arena_strdup(a, item->valuestring);
    arena_release(&tmp); /* no cJSON_Delete: the document goes with the child */
    return name;
}

/* Compresses `n` bytes of `text` into `f`, zlib's state in the arena. */
static int deflate_to(arena *a, FILE *f, const char *text, size_t n)
{
    unsigned char out[512];
    z_stream z;
    int rc;
    memset(&z, 0, sizeof z);
    z.zalloc = arena_hook_zalloc;
    z.zfree = arena_hook_free;
    z.opaque = a;
    if (deflateInit(&z, Z_DEFAULT_COMPRESSION) != Z_OK)
        return -1;
    z.next_in = (unsigned char *)(uintptr_t)text;
    z.avail_in = (uInt)n;
    do {
        z.next_out = out;
        z.avail_out = sizeof out;
        rc = deflate(&z, Z_FINISH);
        fwrite(out, 1, sizeof out - z.avail_out, f);
    } while (rc == Z_OK);
    /* No deflateEnd: zlib's state dies with the batch. */
    return rc == Z_STREAM_END ? (int)z.total_out : -1;
}

int main(void)
{
    static const char *requests[] = {"{\"name\":\"ada\",\"body\":\"aaaaaaaaaaaaaaaaaaaaaaaa\"}",
                                     "{\"name\":\"grace\",\"body\":\"bbbbbbbbbbbbbbbbbbbbbbb\"}",
                                     "{\"name\":\"edsger\",\"body\":\"cccccccccccccccccccc\"}"};
    cJSON_Hooks hooks = {arena_cur_malloc, arena_cur_free};
    arena request;
    int i;

    cJSON_InitHooks(&hooks);
    arena_init(&request, 1 << 20); /* zlib's state fits in one chunk */
    for (i = 0; i < 3; i++) {
        FILE *f = batch_file(&request);
        const char *name = parse_name(&request, requests[i]);
        int packed = f ? deflate_to(&request, f, requests[i], strlen(requests[i])) : -1;
        if (!name || packed < 0)
            return 1;
        printf("%s: %zu bytes of JSON, %d deflated, %zu bytes of arena\n", name,
               strlen(requests[i]), packed, arena_size(&request));
        arena_reset(&request); /* closes the file, drops zlib's state and the name */
        if (files_closed != i + 1)
            return 1;
    }
    arena_release(&request);
    return 0;
}
