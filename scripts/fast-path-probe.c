/* SPDX-License-Identifier: MIT */
/* The inline fast paths, one function each, for scripts/fast-path-diff.sh. */
#include "arena/arena.h"
#include "arena/pool.h"
void *p_alloc(arena *a, size_t n) { return arena_alloc(a, n); }
void *p_alloc16(arena *a) { return arena_alloc(a, 16); }
void *p_node(arena *a) { return arena_alloc_aligned(a, 24, 8); }
char *p_strdup(arena *a, const char *s) { return arena_strdup(a, s); }
arena_ref p_ref(arena *a, const char *s, size_t n) { return arena_ref_strndup(a, s, n); }
void *p_refptr(const arena *a, arena_ref r) { return arena_ref_ptr(a, r); }
void p_reset(arena *a) { arena_reset(a); }
void p_release(arena *a) { arena_release(a); }
arena_mark p_save(arena *a) { return arena_save(a); }
void p_rewind(arena *a, arena_mark m) { arena_rewind(a, m); }
void p_scope_end(arena_scope *s) { arena_scope_end(s); }
size_t p_size(const arena *a) { return arena_size(a); }
int p_stack(const char *s)
{
    char buf[256];
    arena a;
    arena_init_buffer(&a, buf, sizeof buf, NULL);
    char *p = arena_strdup(&a, s);
    int r = p ? p[0] : -1;
    arena_release(&a);
    return r;
}
void *p_pool_alloc(arena_pool *p) { return arena_pool_alloc(p); }
void p_pool_free(arena_pool *p, void *x) { arena_pool_free(p, x); }
