/*
 * Temporary stand-in for <arena/hooks.h> (the adapters), with the same names
 * and shapes, built on the public API, so that the real-client rows build
 * before the adapters land.  Included by clients_arena.cc only when the real
 * header is absent; deleted once it is in the tree.
 */
#ifndef BENCH_ARENA_HOOKS_SHIM_H
#define BENCH_ARENA_HOOKS_SHIM_H

#include <arena/arena.h>

#include <cstdint>
#include <cstring>

namespace {

thread_local arena *shim_current = nullptr;

// The size header of the global family: ARENA_ALIGN bytes, so the block
// after it keeps the arena's alignment.
constexpr size_t kShimHeader = ARENA_ALIGN;

[[maybe_unused]] arena *arena_set_current(arena *a)
{
    arena *prev = shim_current;
    shim_current = a;
    return prev;
}

[[maybe_unused]] arena *arena_current() { return shim_current; }

[[maybe_unused]] void *arena_hook_alloc(void *ctx, size_t size)
{
    return arena_alloc(static_cast<arena *>(ctx), size);
}

[[maybe_unused]] void arena_hook_free(void *, void *) {}

[[maybe_unused]] void *arena_hook_lua(void *ctx, void *ptr, size_t old_size, size_t new_size)
{
    if (new_size == 0)
        return nullptr;
    if (!ptr)
        return arena_alloc(static_cast<arena *>(ctx), new_size);
    return arena_grow(static_cast<arena *>(ctx), ptr, old_size, new_size);
}

[[maybe_unused]] void *arena_cur_malloc(size_t size)
{
    if (!shim_current || size > SIZE_MAX - kShimHeader)
        return nullptr;
    char *p = static_cast<char *>(arena_alloc(shim_current, size + kShimHeader));
    if (!p)
        return nullptr;
    std::memcpy(p, &size, sizeof size);
    return p + kShimHeader;
}

[[maybe_unused]] void *arena_cur_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return nullptr;
    void *p = arena_cur_malloc(count * size);
    return p ? std::memset(p, 0, count * size) : p;
}

[[maybe_unused]] void *arena_cur_realloc(void *ptr, size_t size)
{
    if (!ptr)
        return arena_cur_malloc(size);
    if (!shim_current || size > SIZE_MAX - kShimHeader)
        return nullptr;
    char *h = static_cast<char *>(ptr) - kShimHeader;
    size_t old;
    std::memcpy(&old, h, sizeof old);
    char *p = static_cast<char *>(
        arena_grow(shim_current, h, old + kShimHeader, size + kShimHeader));
    if (!p)
        return nullptr;
    std::memcpy(p, &size, sizeof size);
    return p + kShimHeader;
}

[[maybe_unused]] void arena_cur_free(void *) {}

} // namespace

#endif
