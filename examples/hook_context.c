/* SPDX-License-Identifier: MIT */
/* An arena behind a library hook that passes a context: zlib's zalloc and
 * zfree, with the request's arena as zlib's `opaque`.  deflateInit's quarter
 * megabyte of state comes from chunks the arena keeps from one request to the
 * next (no malloc, no page faults after the first request), and its frees
 * cost nothing.  protobuf-c's ProtobufCAllocator takes arena_hook_alloc and
 * arena_hook_free the same way: {arena_hook_alloc, arena_hook_free, &a}. */
#include <arena/hooks.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

/* Compresses `text` into the arena; NULL when memory runs out (Z_MEM_ERROR). */
static unsigned char *compress_text(arena *a, const char *text, size_t *len)
{
    size_t n = strlen(text);
    z_stream z;
    memset(&z, 0, sizeof z);
    z.zalloc = arena_hook_zalloc;
    z.zfree = arena_hook_free;
    z.opaque = a;
    if (deflateInit(&z, Z_BEST_COMPRESSION) != Z_OK)
        return NULL;
    uLong cap = deflateBound(&z, (uLong)n);
    unsigned char *out = (unsigned char *)arena_alloc(a, cap);
    if (out) {
        z.next_in = (unsigned char *)(uintptr_t)text;
        z.avail_in = (uInt)n;
        z.next_out = out;
        z.avail_out = (uInt)cap;
        if (deflate(&z, Z_FINISH) != Z_STREAM_END)
            out = NULL;
        *len = z.total_out;
    }
    deflateEnd(&z); /* calls zfree, which does nothing: the reset takes it all */
    return out;
}

int main(void)
{
    arena a;
    arena_init(&a, 1 << 20); /* 1 MiB chunks: zlib's state fits in one */
    for (int request = 1; request <= 3; request++) {
        char *text = arena_sprintf(&a, "request %d: %s %s %s", request,
                                   "the quick brown fox jumps over the lazy dog,",
                                   "the quick brown fox jumps over the lazy dog,",
                                   "the quick brown fox jumps over the lazy dog.");
        size_t len = 0;
        unsigned char *packed = text ? compress_text(&a, text, &len) : NULL;
        if (!packed)
            return 1;
        printf("request %d: %zu bytes -> %zu; the arena holds %zu bytes in %zu retained\n", request,
               strlen(text), len, arena_size(&a), arena_retained(&a));
        arena_reset(&a); /* the text, zlib's state and the output go at once */
    }
    arena_release(&a);
    return 0;
}
