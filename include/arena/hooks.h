/* SPDX-License-Identifier: MIT */
/*
 * libarena: adapters for the allocator hooks of other libraries.
 *
 * A C library that lets its caller supply memory takes its hooks in one of
 * three shapes; each has ready functions here, out of line so that their
 * addresses can be taken:
 *
 *   - a context and a size, a context and a pointer: protobuf-c's
 *     ProtobufCAllocator, zlib's zalloc/zfree, upb, nghttp2...
 *     (arena_hook_alloc/free, arena_hook_zalloc; the context is the
 *     arena);
 *   - realloc with the old size: Lua's lua_Alloc (arena_hook_lua), yyjson's
 *     yyjson_alc (arena_hook_realloc);
 *   - global malloc/realloc/free with no context and no old size: cJSON,
 *     expat, jansson, libxml2, SQLite.  The arena_cur_* family takes its
 *     memory from the calling thread's "current arena" (arena_set_current),
 *     finds each block's size and owner from its address (a small block in
 *     a slab of its size class, any other with a header before it), and
 *     falls back to the C heap while no arena is current, so the hooks can
 *     be installed for the whole process.
 *
 * Values that come from an arena die with the arena's batch (its reset,
 * rewind or release), whatever the library does: a library's own free walk
 * may be skipped (drop the batch instead), but a block must not be used, or
 * freed through a hook, after its batch is gone (where it lies beyond what
 * the new batch has stored, arena_free() reports it: ARENA_ERR_LATE_FREE).
 * The hooks that free with a size, and the arena_cur_* family, give a block
 * back for reuse within the batch (see arena_free), so a library that frees
 * holds about what it uses.  The hooks told sizes follow arena_free()'s one
 * rule: a block holds the bytes asked, and any of them (and arena_free(),
 * arena_realloc()) may give back or resize a block that any of them, or
 * arena_alloc() and its kin, stored.
 *
 * Thread-safety: as for the arena itself.  The hooks with a context use that
 * arena, so one thread at a time per arena.  The current arena is per thread;
 * the arena_cur_* family never touches an arena other than the calling
 * thread's current one (see arena_cur_free).
 *
 * This header includes only arena.h and is usable from C++.
 */
#ifndef ARENA_HOOKS_H
#define ARENA_HOOKS_H

#include "arena/arena.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Hooks with a context: the context is an arena * --------------------------- */

/**
 * arena_alloc_reuse(arena_ctx, size) as a function: `size` uninitialised
 * bytes, ARENA_ALIGN-aligned, in the arena `arena_ctx` (an arena *): a bump
 * while the batch has given nothing back.  Size 0, as for arena_alloc,
 * stores nothing and returns a pointer not to be dereferenced.  NULL on
 * out-of-memory or overflow, arena unchanged.  Fits protobuf-c's
 * ProtobufCAllocator.alloc, and yyjson's alc.malloc beside
 * arena_hook_realloc().
 */
ARENA__NODISCARD ARENA__MALLOC ARENA__ALLOC_SIZE(2) ARENA_API
    void *arena_hook_alloc(void *arena_ctx, size_t size);

/** Does nothing: the value dies with the batch.  Fits ProtobufCAllocator.free
 *  (so protobuf_c_message_free_unpacked() may be called, or skipped) and
 *  zlib's zfree (zlib's state dies with the batch).  Thread-safe. */
ARENA_API void arena_hook_free(void *arena_ctx, void *ptr);

/**
 * zlib's zalloc: `items * size` uninitialised bytes, ARENA_ALIGN-aligned,
 * from the arena `arena_ctx`.  NULL (Z_NULL, arena unchanged) when the
 * product overflows size_t or memory runs out; zlib then reports
 * Z_MEM_ERROR.  Use with `strm.zfree = arena_hook_free` and
 * `strm.opaque = &arena`.
 */
ARENA__NODISCARD ARENA__MALLOC ARENA_API void *arena_hook_zalloc(void *arena_ctx, unsigned items,
                                                                 unsigned size);

/**
 * Lua's lua_Alloc: `lua_newstate(arena_hook_lua, &arena)`.
 *   - new_size 0: gives `ptr` (old_size bytes; NULL is fine) back with
 *     arena_free, for the next block of its size to reuse, and returns NULL;
 *   - ptr NULL: a new block of new_size bytes (old_size is then Lua's type
 *     tag and is ignored), placed as arena_alloc_reuse() places one once a
 *     batch gives values back;
 *   - otherwise arena_realloc(arena_ctx, ptr, old_size, new_size): in place when
 *     it is the most recent value and its chunk has room, else a copy (the
 *     old block given back).
 * ARENA_ALIGN-aligned.  NULL on out-of-memory (the block unchanged), which Lua
 * turns into an emergency collection and then LUA_ERRMEM.  Shrinking never
 * fails.  Requires old_size to be the block's size, as Lua guarantees.
 * lua_close() walks every object to free it; dropping the arena's batch
 * without lua_close() is allowed when no finalizer (__gc) needs to run.
 */
ARENA_API void *arena_hook_lua(void *arena_ctx, void *ptr, size_t old_size, size_t new_size);

/**
 * arena_hook_lua() for a client whose values need 8-byte alignment only:
 * `lua_newstate(arena_hook_lua_align8, &arena)` where Lua's LUAI_MAXALIGN
 * asks for at most 8 bytes, as luaconf.h's default does (lua_Number,
 * double, void *, lua_Integer, long) on every ABI that libarena's CI
 * builds: x86-64, i386, AArch64, armhf, s390x, Windows.  A block of at most
 * 256 bytes takes the next multiple of 8 bytes (a table of 56 bytes takes
 * 56, not 64) and is 8-aligned, not ARENA_ALIGN-aligned; a larger one is
 * ARENA_ALIGN-aligned as with arena_hook_lua().  Everything else is
 * arena_hook_lua()'s, and the blocks follow the one rule: arena_free(),
 * arena_realloc() and every hook told a size may give back or resize them.
 * Any library whose hook has this shape (realloc with the old size, a new
 * size of 0 frees) and whose objects need at most 8-byte alignment may use
 * it; not one that stores long double, __int128 or vector types in them.
 * The instrumented builds (checked, ASan, Valgrind) place every block at
 * ARENA_ALIGN, with its bounds checked, as arena_hook_lua() does.
 */
ARENA_API void *arena_hook_lua_align8(void *arena_ctx, void *ptr, size_t old_size, size_t new_size);

/**
 * Realloc with the old size (yyjson_alc.realloc): arena_realloc(), except
 * for a shrink.  ptr NULL allocates new_size bytes.  A shrink (new_size <=
 * old_size) never fails and keeps the first new_size bytes: the most recent
 * value shrinks in place, giving its tail back; any other moves where a
 * smaller block serves it (one of a slab's smaller size class, or of a slab
 * for a value past 256 bytes that falls below), its own going back whole,
 * and otherwise shrinks in place, its tail given back where the arena knows
 * its block (see arena_free()), as Lua's hook does; new_size 0 returns ptr,
 * a block of no bytes (not NULL).  NULL on out-of-memory, block and arena
 * unchanged.
 * ARENA_ALIGN-aligned.
 */
ARENA__NODISCARD
ARENA_API void *arena_hook_realloc(void *arena_ctx, void *ptr, size_t old_size, size_t new_size);

/**
 * The arena `a` as an arena_allocator: alloc stores a value in `a` (with
 * ARENA_ALIGN bytes before the block, so that a nested arena's chunk never
 * starts where one of `a`'s does, as Valgrind's description of chunks needs),
 * free gives it back when it is `a`'s most recent value (arena_free), which is
 * how a nested arena's last chunk returns to `a`.  Lets an arena
 * back a pool (arena_pool_init), another arena (arena_init_with) or anything
 * else that takes an arena_allocator.  Everything allocated through it dies
 * with `a`'s batch: release the pool or the inner arena before `a` is reset.
 * Give `a` a chunk size larger than the inner arena's chunks (or each of
 * them takes an oversized chunk of its own).  Never fails.
 */
ARENA_API arena_allocator arena_allocator_of(arena *a);

/* ---- The current arena and the global malloc family ------------------------------- */

/**
 * Makes `a` the calling thread's current arena (NULL: none) and returns the
 * previous one, so that scopes nest:
 *
 *     arena *prev = arena_set_current(&request);
 *     doc = cJSON_Parse(text);      // every block from `request`
 *     ...
 *     arena_set_current(prev);
 *
 * The current arena is thread-local: each thread has its own, NULL at start.
 * The arena must stay valid while it is current; do not make one arena
 * current in two threads at once (an arena is not thread-safe).  Never fails.
 */
ARENA_API arena *arena_set_current(arena *a);

/** The calling thread's current arena, NULL when none. */
ARENA_API arena *arena_current(void);

/**
 * A stretch of code in which `a` is the calling thread's current arena, as a
 * pair: arena_current_begin(a) makes `a` current (NULL: none) and returns the
 * previous one, which the matching arena_current_end(prev) makes current
 * again.  Pairs nest; each must be ended on every path out of its stretch,
 * innermost first (ARENA_CURRENT_SCOPE does it for gcc and clang).  The
 * arena must stay valid until the end.  Never fails.
 */
ARENA_API arena *arena_current_begin(arena *a);

/** Ends a stretch begun by arena_current_begin(): `prev`, what it returned,
 *  is current again.  Never fails. */
ARENA_API void arena_current_end(arena *prev);

/* ARENA_CURRENT_SCOPE's cleanup: arena_current_end(*prev).  Internal. */
ARENA_API void arena__current_restore(arena **prev);

#if ARENA_HAVE_SCOPE
/**
 * ARENA_CURRENT_SCOPE(a);  as a statement between braces: `a` is the
 * calling thread's current arena (for the arena_cur_* family) from here to
 * the closing brace, and the previous one is current again however the
 * braces are left (their end, return, break, goto out of them), through the
 * cleanup attribute of gcc and clang (ARENA_HAVE_SCOPE; elsewhere use
 * arena_current_begin() and arena_current_end() on every path).  Not
 * longjmp, and not C++ exceptions in C code.  Nests; at most one per line.
 * Adopting libarena around a library call that uses global hooks:
 *
 *     { ARENA_CURRENT_SCOPE(&request); doc = cJSON_Parse(text); }
 */
#  define ARENA_CURRENT_SCOPE(a)                                                                   \
    arena *ARENA__CAT(arena__current_, __LINE__)                                                   \
        __attribute__((cleanup(arena__current_restore), unused)) = arena_current_begin(a)
#endif

/**
 * malloc for libraries with global hooks (cJSON_InitHooks, expat's
 * XML_Memory_Handling_Suite, json_set_alloc_funcs, xmlMemSetup,
 * sqlite3_mem_methods).  `size` bytes from the current arena, or from the C
 * heap (malloc) when the thread has none: the hooks are safe to install for
 * the whole process.  Aligned as malloc's: ARENA_ALIGN, or 8 for a block of
 * at most 8 bytes (no object that small needs more; C23's rule).
 *
 * Layout.  In a plain build, a block of at most 256 bytes from an arena has
 * no header: it lies in a slab (4 KiB, aligned to 4 KiB) of blocks of its
 * size class (8 bytes, then 16-byte steps), which the arena stores, and it
 * takes its class's size (arena_size() counts that; a cJSON node of 64 bytes
 * takes 64).  The slab's first 32 bytes name its arena and class; free,
 * realloc and size find them from the block's address (they read the first
 * word of the slab the pointer would lie in, whatever the pointer is).  Any
 * other block (larger, from the heap, or in a build with ASan, Valgrind or
 * the checked build, which poison, mark and check each block's bounds)
 * carries a header before it, holding its size and where it came from: the
 * smallest multiple of ARENA_ALIGN that holds two words, three in a checked
 * build (16 and 32 bytes on x86-64).  Size 0 returns a unique block of no bytes.  NULL on
 * out-of-memory or overflow: an arena that cannot grow returns NULL; it
 * never falls back to the heap (that would change the block's lifetime).
 * Thread-safe in the sense above (it uses the calling thread's arena).
 */
ARENA__NODISCARD ARENA__MALLOC ARENA__ALLOC_SIZE(1) ARENA_API void *arena_cur_malloc(size_t size);

/** arena_cur_malloc(count * size), zeroed; NULL when the product overflows. */
ARENA__NODISCARD ARENA__MALLOC ARENA_API void *arena_cur_calloc(size_t count, size_t size);

/**
 * realloc for a block of this family (the header has its size):
 *   - ptr NULL: arena_cur_malloc(size);
 *   - a block from the C heap stays on the C heap (realloc()), whatever
 *     arena is current: it was made to outlive any batch;
 *   - a block of the current arena with a header grows or shrinks in place
 *     when it is the most recent value and its chunk has room, else it is
 *     copied within the arena and its old place given back; a block in a
 *     slab stays while the new size is of its class, else moves (a shrink
 *     that finds no room stays: a shrink never fails);
 *   - a block of an arena that is not current (an outer scope's while an
 *     inner one is current, another thread's, or any arena while none is
 *     current) is copied to the C heap, the one place whose blocks outlive
 *     every batch, so that it cannot dangle; its arena is never touched.  The
 *     copy is an ordinary heap block: arena_cur_free frees it.
 * size 0 returns a block of no bytes, not NULL: the BSD and musl behaviour
 * rather than glibc's (which frees ptr and returns NULL); as for any size,
 * ptr is dead if the result is another block.  NULL on out-of-memory or
 * overflow, with the block unchanged.
 * Misuse: a pointer that is not from this family, or whose header was
 * overwritten, is reported (ARENA_ERR_FOREIGN_POINTER) when the header shows
 * it: a cheap test in every build catches most such headers, the checked
 * build's check word all but a forged one; a pointer inside a slab's block
 * rather than at its start is always reported.  Under ASan the header is
 * poisoned, so the write that overwrites it is reported itself.  A block
 * freed already is reported (ARENA_ERR_DOUBLE_FREE) in every build.  If the
 * handler returns, NULL and nothing changes.
 */
ARENA__NODISCARD
ARENA_API void *arena_cur_realloc(void *ptr, size_t size);

/**
 * free for a block of this family.  NULL: nothing.  A block from the C heap
 * is freed (whatever arena is current).  A block of the current arena is
 * given back: the next block of its size class reuses it (the most recent
 * value goes back to the position).  A block of an arena that is not
 * current stays until that arena's batch ends, marked freed in its own
 * bytes (so that a second free is reported; a slab's block of 8 bytes has
 * no room for the mark); that arena's state is not touched (it may be
 * another thread's).  Under ASan the block is poisoned, so a use after this
 * call is reported.  Misuse as for arena_cur_realloc (then nothing happens).
 */
ARENA_API void arena_cur_free(void *ptr);

/** The usable size of a block of this family, 0 for NULL: what was asked
 *  for a block with a header, its class's size (8, or a multiple of 16 up
 *  to 256) for a block in a slab, which the program may use whole, as
 *  malloc_usable_size() allows.  SQLite's xSize.  Misuse as for
 *  arena_cur_realloc (then 0). */
ARENA_API size_t arena_cur_size(const void *ptr);

/** strdup through arena_cur_malloc (libxml2's xmlStrdupFunc).  NULL on
 *  out-of-memory. */
ARENA__NODISCARD ARENA__MALLOC ARENA_API char *arena_cur_strdup(const char *s);

#ifdef __cplusplus
}
#endif

#endif /* ARENA_HOOKS_H */
