// SPDX-License-Identifier: MIT
/*
 * libarena for C++ (C++17, and C++20): a thin layer over the C API
 * of arena.h, pool.h, hooks.h and thread.h, in namespace `libarena` (the C
 * type `arena` keeps the global name).  Every call is inline and forwards to
 * the C function of the same job; nothing here adds state or a check that the
 * C API does not have, except where a comment says so.
 *
 *   libarena::arena          an owning, move-only arena: reset(), scope(), make<T>()
 *                            (destructors run when the batch ends)
 *   libarena::scope          an object that rewinds an arena when it goes out of scope
 *   libarena::scratch_scope  the same over one of this thread's scratch arenas
 *   libarena::current_scope  an object that makes an arena current (arena_cur_* hooks)
 *   libarena::pool<T>        the fixed-capacity pool, typed
 *   libarena::resource       a std::pmr::memory_resource over an arena
 *   libarena::monotonic_resource  the same without reuse: deallocation does nothing
 *   libarena::allocator<T>   an allocator over an arena, for non-pmr containers
 *
 * Contracts are the C API's: an arena, a pool or a resource is not
 * thread-safe; memory from an arena expires at the reset, release or rewind
 * that covers it; misuse goes to the error handler of arena.h.  Out of memory
 * is nullptr where the C API returns NULL (make<T>(), pool<T>::allocate()),
 * and std::bad_alloc where the C++ standard requires an exception
 * (memory_resource, allocator, and the constructors).
 *
 * Link with the library as for C (arena::arena in CMake, pkg-config arena).
 */
#ifndef ARENA_ARENA_HPP
#define ARENA_ARENA_HPP

#include "arena/arena.h"
#include "arena/hooks.h"
#include "arena/pool.h"
#include "arena/thread.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory_resource>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace libarena {

/* The cleanup that ends a value of make<T>() whose destructor matters. */
template <class T>
void arena__cxx_destroy(void *p) noexcept
{
    static_cast<T *>(p)->~T();
}

/** The bytes of an aligned request from an arena: arena_alloc() at the
 *  arena's own alignment, which is the fast inline path, else
 *  arena_alloc_aligned().  NULL on out-of-memory. */
inline void *arena__cxx_alloc(::arena *a, std::size_t size, std::size_t align) noexcept
{
    return align <= ARENA_ALIGN ? arena_alloc(a, size) : arena_alloc_aligned(a, size, align);
}

/** What the standard's allocators take: a block that may come from those
 *  given back in this batch (arena_free()), so that a growing vector or a
 *  map that erases and inserts holds about what it uses.  Above ARENA_ALIGN
 *  a block is never reused (arena_alloc_reuse() is at ARENA_ALIGN). */
inline void *arena__cxx_alloc_reuse(::arena *a, std::size_t size, std::size_t align) noexcept
{
    return align <= ARENA_ALIGN ? arena_alloc_reuse(a, size) : arena_alloc_aligned(a, size, align);
}

/**
 * Rewinds an arena when it goes out of scope: arena_scope_begin() at
 * construction, arena_scope_end() at destruction.  Scopes of one arena must
 * end in reverse order of their start, which C++ scopes give for free.  Not
 * copyable or movable; C++17's guaranteed copy elision lets a function
 * return one (`auto s = a.scope();`).
 */
class scope {
public:
    explicit scope(::arena *a) noexcept : s_(arena_scope_begin(a)) {}
    ~scope() { arena_scope_end(&s_); }
    scope(const scope &) = delete;
    scope &operator=(const scope &) = delete;

    /** The arena the scope rewinds. */
    ::arena *get() const noexcept { return s_.arena; }

protected:
    explicit scope(arena_scope s) noexcept : s_(s) {}
    arena_scope s_;
};

/**
 * A scope of one of this thread's scratch arenas that is none of the
 * `conflicts` (arena_scratch_begin()), ended at destruction, which also frees
 * that arena's spare chunks beyond 1 MiB.  get() is nullptr when it failed
 * (every scratch arena a conflict, or out of memory registering the thread):
 * test it.  Use it on the thread that made it.
 */
class scratch_scope : public scope {
public:
    scratch_scope() noexcept : scope(arena_scratch_begin(nullptr, 0)) {}
    explicit scratch_scope(::arena *conflict) noexcept : scope(arena_scratch_begin(&conflict, 1)) {}
    scratch_scope(std::initializer_list<::arena *> conflicts) noexcept
        : scope(arena_scratch_begin(conflicts.begin(), conflicts.size()))
    {
    }
    explicit operator bool() const noexcept { return s_.arena != nullptr; }
};

/**
 * Makes `a` the calling thread's current arena (arena_set_current(), the one
 * the arena_cur_* hooks of hooks.h allocate from) and restores the previous
 * one at destruction; nullptr makes none current (the C heap).  They nest as
 * C++ scopes do.  The arena must outlive the object.
 */
class current_scope {
public:
    explicit current_scope(::arena *a) noexcept : prev_(arena_set_current(a)) {}
    ~current_scope() { arena_set_current(prev_); }
    current_scope(const current_scope &) = delete;
    current_scope &operator=(const current_scope &) = delete;

    /** The arena that was current before, and will be again. */
    ::arena *previous() const noexcept { return prev_; }

private:
    ::arena *prev_;
};

/**
 * An owning arena: arena_release() at destruction, move-only.
 *
 * The C struct points into itself (its first chunk index lives inside it), so
 * it may not be copied or moved once used; this class keeps it at a fixed
 * address in one heap block of its own, which a move hands over.  The price
 * is a pointer load per call, which a compiler hoists out of a loop.  A
 * moved-from arena holds none: get() is nullptr, and only destruction and
 * assignment are allowed.
 */
class arena {
public:
    /** arena_init(chunk_bytes) (0: ARENA_DEFAULT_CHUNK).  Throws
     *  std::bad_alloc when the struct itself cannot be allocated. */
    explicit arena(std::size_t chunk_bytes = 0) : a_(make_struct())
    {
        arena_init(a_, chunk_bytes);
    }
    /** arena_init_with(): every chunk from `backing` (NULL: malloc). */
    arena(std::size_t chunk_bytes, const arena_allocator *backing) : a_(make_struct())
    {
        arena_init_with(a_, chunk_bytes, backing);
    }
    /** arena_init_buffer(): `buf` is the first chunk; with no backing the
     *  arena never touches the heap for values (the struct is on the heap). */
    arena(void *buf, std::size_t len, const arena_allocator *backing = nullptr)
        : a_(make_struct())
    {
        arena_init_buffer(a_, buf, len, backing);
    }
    ~arena() { drop(); }

    arena(arena &&o) noexcept : a_(std::exchange(o.a_, nullptr)) {}
    arena &operator=(arena &&o) noexcept
    {
        if (this != &o) {
            drop();
            a_ = std::exchange(o.a_, nullptr);
        }
        return *this;
    }
    arena(const arena &) = delete;
    arena &operator=(const arena &) = delete;

    /** The C arena, for the C API and for resource / allocator. */
    ::arena *get() const noexcept { return a_; }
    operator ::arena *() const noexcept { return a_; }

    /** arena_reset(): drop the batch, keep the chunks. */
    void reset() noexcept { arena_reset(a_); }
    /** arena_reset_to() and arena_trim(). */
    void reset_to(std::size_t retain_limit) noexcept { arena_reset_to(a_, retain_limit); }
    void trim(std::size_t max_retained) noexcept { arena_trim(a_, max_retained); }
    /** arena_size(), arena_retained(). */
    std::size_t size() const noexcept { return arena_size(a_); }
    std::size_t retained() const noexcept { return arena_retained(a_); }

    /** An object that forgets, when it is destroyed, everything stored after
     *  this call. */
    libarena::scope scope() noexcept { return libarena::scope(a_); }

    /** arena_alloc_aligned() (align <= ARENA_ALIGN takes arena_alloc()'s
     *  inline path).  nullptr on out-of-memory. */
    void *allocate(std::size_t size, std::size_t align = ARENA_ALIGN) noexcept
    {
        return arena__cxx_alloc(a_, size, align);
    }
    /** arena_free(): give back a value before its batch ends. */
    void deallocate(void *p, std::size_t size) noexcept { arena_free(a_, p, size); }

    /**
     * Constructs a T in the arena from `args`; nullptr on out-of-memory.  If
     * the constructor throws, its bytes are given back and the exception
     * propagates.  A T that is not trivially destructible gets a cleanup
     * (arena_cleanup_push()) that runs its destructor when its values die:
     * at the reset, release or rewind that ends them, latest first, as
     * every cleanup; one that cannot be registered (out of memory) makes
     * make() return nullptr with nothing constructed.  A trivially
     * destructible T costs no cleanup.
     */
    template <class T, class... Args>
    T *make(Args &&...args) noexcept(std::is_nothrow_constructible_v<T, Args...>)
    {
        void *p = arena__cxx_alloc(a_, sizeof(T), alignof(T));
        arena_cleanup *c = nullptr;
        if (!p)
            return nullptr;
        if constexpr (!std::is_trivially_destructible_v<T>) {
            c = arena_cleanup_push(a_, &arena__cxx_destroy<T>, p);
            if (!c) {
                arena_free(a_, p, sizeof(T));
                return nullptr;
            }
        }
        if constexpr (std::is_nothrow_constructible_v<T, Args...>) {
            (void)c;
            return ::new (p) T(std::forward<Args>(args)...);
        } else {
            try {
                return ::new (p) T(std::forward<Args>(args)...);
            } catch (...) {
                if (c)
                    arena_cleanup_cancel(a_, c);
                arena_free(a_, p, sizeof(T));
                throw;
            }
        }
    }

private:
    static ::arena *make_struct() { return new ::arena(); }
    void drop() noexcept
    {
        if (a_) {
            arena_release(a_);
            delete a_;
        }
    }

    ::arena *a_;
};

/**
 * A pool of `capacity` slots for T: arena_pool of pool.h, typed.
 * allocate() and deallocate() are the inline C paths; no constructor or
 * destructor of T runs (construct in the slot with placement new).  A slot's
 * address never changes.  Deallocating nullptr, a pointer that is not one of
 * the pool's slots, or a slot already free is detected in every build and
 * reported through the error handler (ARENA_ERR_NULL_FREE,
 * ARENA_ERR_FOREIGN_POINTER, ARENA_ERR_DOUBLE_FREE), which aborts by default;
 * if a handler returns, nothing happens.  Not copyable or movable (slots
 * point into the storage the pool owns, and the pool's bookkeeping is
 * its own).  Not thread-safe.
 */
template <class T>
class pool {
    static_assert(std::is_object_v<T> && !std::is_array_v<T>,
                  "libarena::pool<T>: T must be a complete object type, not an array");

public:
    /** Reserves every slot at once.  capacity 0 is the empty pool (allocate()
     *  returns nullptr); above UINT32_MAX throws std::length_error; out of
     *  memory throws std::bad_alloc. */
    explicit pool(std::size_t capacity) : p_()
    {
        if (capacity == 0)
            return;
        if (capacity > UINT32_MAX)
            throw std::length_error("libarena::pool: capacity above UINT32_MAX");
        if (!arena_pool_init(&p_, sizeof(T), alignof(T), capacity, nullptr))
            throw std::bad_alloc();
    }
    ~pool() { arena_pool_destroy(&p_); }
    pool(const pool &) = delete;
    pool &operator=(const pool &) = delete;

    /** A free slot (uninitialised), nullptr when every slot is taken. */
    T *allocate() noexcept { return static_cast<T *>(arena_pool_alloc(&p_)); }
    /** Gives slot `p` back; bad frees are reported (see above). */
    void deallocate(T *p) noexcept { arena_pool_free(&p_, p); }

    std::size_t capacity() const noexcept { return arena_pool_capacity(&p_); }
    /** Slots handed out and not given back. */
    std::size_t used() const noexcept { return arena_pool_used(&p_); }
    /** No slot is handed out. */
    bool empty() const noexcept { return arena_pool_used(&p_) == 0; }
    /** Every slot is handed out: allocate() returns nullptr. */
    bool full() const noexcept { return arena_pool_available(&p_) == 0; }

private:
    arena_pool p_;
};

/**
 * A std::pmr::memory_resource over an arena that it does not own, so that
 * std::pmr containers (vector, string, map, unordered_map...) live in the
 * arena's batch, and what they give back is used again in the batch.
 *
 * The pmr contract hands do_deallocate the size and alignment that
 * do_allocate was asked, so a small value (at most 256 bytes, at
 * ARENA_ALIGN or less) needs no header: it takes a block of its size class
 * (ARENA_ALIGN steps), and given back, the block goes to the head of its
 * class's list in the resource, which the next value of the class takes,
 * inline, before it bumps (arena_alloc()'s inline path).  A class's blocks
 * serve that class only, as a pool's do, until the batch ends.  The lists
 * hold blocks of the arena's current batch or scope only: the resource ties
 * them to it with a cleanup (arena_cleanup_push()), pushed at its first
 * value after each reset or mark, that empties the lists when the batch or
 * scope ends; so a resource makes the arena's reset, rewind and release
 * calls into the library.  Larger values take a block given back before
 * they bump (arena_alloc_reuse(); arena_alloc_aligned() above ARENA_ALIGN),
 * and go back by arena_free().  arena_size() counts a small value as its
 * class's bytes, and drops by them when it is given back.  The resource's
 * destructor gives its lists' blocks to the arena (arena_free()).
 * do_allocate throws std::bad_alloc on out-of-memory.
 *
 * A reset of the arena drops everything at once: destroy (or forget, when
 * their elements' destructors do nothing that matters) the containers
 * first.  A container destroyed after the reset gives its block back into
 * the next batch: reported (ARENA_ERR_LATE_FREE) where the new batch has
 * not stored over it yet, undetectable where it has.  The shape that gets the order right by
 * construction declares the scope first, so that it ends after the
 * containers declared after it:
 *
 *     for (auto &req : requests) {
 *         auto batch = a.scope();                 // ends last: drops the batch
 *         std::pmr::vector<std::pmr::string> v(&res);
 *         ...
 *     }                                           // v, then batch
 *
 * Where the arena is instrumented (ASan, Valgrind, the checked build) the
 * resource keeps no lists: every value goes through arena_alloc_reuse() and
 * arena_free(), which report misuse as they do for C.  In a plain build a
 * small value given back twice is given back once, and a list whose link a
 * write after free overwrote is dropped (its blocks wait for the batch's
 * end), not followed.  Not thread-safe.  Not copyable or movable (the
 * cleanup names the resource).  Two resources are equal only when they are
 * the same object.
 */
class resource : public std::pmr::memory_resource {
public:
    explicit resource(::arena *a) noexcept : a_(a) {}
    explicit resource(libarena::arena &a) noexcept : a_(a.get()) {}
    ~resource() override { untie(); }
    resource(const resource &) = delete;
    resource &operator=(const resource &) = delete;

    ::arena *get() const noexcept { return a_; }

protected:
    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        if (ARENA__LIKELY(listed(bytes, align) && tied())) {
            void *p = take(klass(bytes));
            if (ARENA__LIKELY(p != nullptr))
                return p;
        }
        return allocate_general(bytes, align);
    }
    void do_deallocate(void *p, std::size_t bytes, std::size_t align) override
    {
        if (ARENA__LIKELY(listed(bytes, align) && tied() && p &&
                          stored_now(static_cast<char *>(p), block(klass(bytes))))) {
            give(static_cast<char *>(p), klass(bytes));
            return;
        }
        deallocate_general(p, bytes, align);
    }
    bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override
    {
        return this == &o;
    }

private:
    /* A class's blocks: ARENA_ALIGN steps, and room for a free block's two
     * words (its link, and the mark that tells a second free). */
    static constexpr std::size_t kStep =
        ARENA_ALIGN > 2 * sizeof(std::uintptr_t) ? ARENA_ALIGN : 2 * sizeof(std::uintptr_t);
    static constexpr std::size_t kLargest = 256;
    static constexpr std::size_t kClasses = kLargest / kStep;

    static bool listed(std::size_t bytes, std::size_t align) noexcept
    {
        return bytes - 1 < kLargest && align <= ARENA_ALIGN; /* size 0 wraps: not listed */
    }
    static std::size_t klass(std::size_t bytes) noexcept { return (bytes - 1) / kStep; }
    static std::size_t block(std::size_t c) noexcept { return (c + 1) * kStep; }

    /* Whether `b`, of `n` bytes, lies below the position of the arena's
     * current chunk: stored in this batch, or by a batch it has stored
     * over (nothing tells the two apart).  Out of line, arena__stored_now()
     * asks the same of the other chunks in use; a block anywhere else goes
     * back through arena_free(), which reports one given back after its
     * batch ended (ARENA_ERR_LATE_FREE), so that no list ever holds one. */
    bool stored_now(const char *b, std::size_t n) const noexcept
    {
        const char *pos = a_->ptr ? a_->ptr : a_->pos;
        return a_->nused != 0 && pos && b >= a_->chunks[a_->cur].base && b < pos &&
               n <= static_cast<std::size_t>(pos - b);
    }

    /* The lists hold blocks while the cleanup pushed at the arena's latest
     * mark has not run: a mark taken since (`saves` moved) calls for a new
     * one, so that its scope's end empties them. */
    bool tied() const noexcept { return tie_ && a_->saves == serial_; }

    static std::uintptr_t word(const char *b, int i) noexcept
    {
        std::uintptr_t w;
        std::memcpy(&w, b + i * sizeof w, sizeof w);
        return w;
    }
    static void set_word(char *b, int i, std::uintptr_t w) noexcept
    {
        std::memcpy(b + i * sizeof w, &w, sizeof w);
    }
    /* A free block's link to the next (XORed with its own address and the
     * resource's key) and its mark. */
    std::uintptr_t link(const char *b, std::uintptr_t x) const noexcept
    {
        return x ^ reinterpret_cast<std::uintptr_t>(b) ^ key_;
    }
    std::uintptr_t mark(const char *b) const noexcept
    {
        return reinterpret_cast<std::uintptr_t>(b) ^ ~key_;
    }

    /* A block of class `c`: the head of its list, else bumped; nullptr when
     * the arena has no room. */
    void *take(std::size_t c) noexcept
    {
        char *b = heads_[c];
        if (b) {
            std::uintptr_t next = link(b, word(b, 0));
            if (ARENA__LIKELY((next & (kStep - 1)) == 0)) {
                heads_[c] = reinterpret_cast<char *>(next);
                set_word(b, 1, 0);
                a_->size += block(c);
                return b;
            }
            heads_[c] = nullptr; /* overwritten after its free: not followed */
        }
        return arena_alloc(a_, block(c));
    }
    void give(char *b, std::size_t c) noexcept
    {
        if (ARENA__UNLIKELY(word(b, 1) == mark(b)))
            return; /* given back already */
        arena__note_high(a_);
        a_->size -= block(c);
        set_word(b, 0, link(b, reinterpret_cast<std::uintptr_t>(heads_[c])));
        set_word(b, 1, mark(b));
        heads_[c] = b;
    }

    /* Ties the lists to the arena's latest mark (or its batch): true when
     * they are.  Never where the arena is instrumented, or where the
     * cleanup cannot be pushed (out of memory: the values then go through
     * the library). */
    ARENA__NOINLINE bool tie() noexcept
    {
        if (!ARENA__INLINE_WINDOW || !arena__inline_ok)
            return false;
        if (tie_) {
            if (a_->saves == serial_)
                return true;
            arena_cleanup_cancel(a_, tie_);
        }
        tie_ = arena_cleanup_push(a_, &resource::untied, this);
        serial_ = a_->saves;
        return tie_ != nullptr;
    }
    /* The cleanup: the batch or scope ends, and the blocks with it. */
    static void untied(void *self) noexcept
    {
        resource *r = static_cast<resource *>(self);
        r->tie_ = nullptr;
        for (char *&h : r->heads_)
            h = nullptr;
    }
    /* At destruction: the cleanup cancelled, the blocks given to the arena. */
    void untie() noexcept
    {
        if (!tie_)
            return;
        arena_cleanup_cancel(a_, tie_);
        tie_ = nullptr;
        for (std::size_t c = 0; c < kClasses; c++) {
            for (char *b = heads_[c]; b;) {
                std::uintptr_t next = link(b, word(b, 0));
                set_word(b, 1, 0);
                a_->size += block(c);
                arena_free(a_, b, block(c));
                b = (next & (kStep - 1)) == 0 ? reinterpret_cast<char *>(next) : nullptr;
            }
            heads_[c] = nullptr;
        }
    }

    ARENA__NOINLINE void *allocate_general(std::size_t bytes, std::size_t align)
    {
        void *p;
        if (!listed(bytes, align))
            p = arena__cxx_alloc_reuse(a_, bytes, align);
        else if (tie())
            p = take(klass(bytes));
        else
            p = arena_alloc_reuse(a_, block(klass(bytes)));
        if (!p)
            throw std::bad_alloc();
        return p;
    }
    ARENA__NOINLINE void deallocate_general(void *p, std::size_t bytes, std::size_t align) noexcept
    {
        if (!listed(bytes, align))
            arena_free(a_, p, bytes);
        else if (p && tie_ && tie() &&
                 (stored_now(static_cast<char *>(p), block(klass(bytes))) ||
                  arena__stored_now(a_, p, block(klass(bytes)))))
            give(static_cast<char *>(p), klass(bytes));
        else
            arena_free(a_, p, block(klass(bytes))); /* a late free is reported there */
    }

    ::arena *a_;
    arena_cleanup *tie_ = nullptr;
    std::uint64_t serial_ = 0;
    std::uintptr_t key_ = (reinterpret_cast<std::uintptr_t>(this) ^
                           reinterpret_cast<std::uintptr_t>(&arena__inline_ok)) *
                          static_cast<std::uintptr_t>(UINT64_C(0x9E3779B97F4A7C15));
    char *heads_[kClasses] = {};
};

/**
 * resource without reuse, for containers that live as long as the batch:
 * do_allocate bumps (arena_alloc()'s inline path, arena_alloc_aligned()
 * above ARENA_ALIGN), do_deallocate does nothing, as
 * std::pmr::monotonic_buffer_resource, and the arena's reset drops it all.
 * Cheaper per call than resource when the containers are dropped with the
 * batch; a container that grows or erases leaves what it gave back unused
 * until the reset.  Equality as resource's.
 */
class monotonic_resource : public std::pmr::memory_resource {
public:
    explicit monotonic_resource(::arena *a) noexcept : a_(a) {}
    explicit monotonic_resource(libarena::arena &a) noexcept : a_(a.get()) {}
    monotonic_resource(const monotonic_resource &) = delete;
    monotonic_resource &operator=(const monotonic_resource &) = delete;

    ::arena *get() const noexcept { return a_; }

protected:
    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        void *p = arena__cxx_alloc(a_, bytes, align);
        if (!p)
            throw std::bad_alloc();
        return p;
    }
    void do_deallocate(void *, std::size_t, std::size_t) override {}
    bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override
    {
        return this == &o;
    }

private:
    ::arena *a_;
};

/**
 * An allocator over an arena it does not own, for the standard containers
 * that take an allocator type (std::vector<T, libarena::allocator<T>>).
 * Allocation and deallocation as resource's, late frees included (declare
 * a scope before the containers: see resource).  Two allocators are equal when
 * they use the same arena.  A container moved or swapped takes its
 * allocator along (its memory is in that arena); one copy-assigned keeps its
 * own arena (select_on_container_copy_construction copies it).  No default
 * constructor: an allocator needs its arena.
 */
template <class T>
class allocator {
public:
    using value_type = T;
    using propagate_on_container_copy_assignment = std::false_type;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;
    using is_always_equal = std::false_type;

    explicit allocator(::arena *a) noexcept : a_(a) {}
    explicit allocator(libarena::arena &a) noexcept : a_(a.get()) {}
    template <class U>
    allocator(const allocator<U> &o) noexcept : a_(o.get())
    {
    }

    ::arena *get() const noexcept { return a_; }

    T *allocate(std::size_t n)
    {
        if (n > std::numeric_limits<std::size_t>::max() / sizeof(T))
            throw std::bad_array_new_length();
        void *p = arena__cxx_alloc_reuse(a_, n * sizeof(T), alignof(T));
        if (!p)
            throw std::bad_alloc();
        return static_cast<T *>(p);
    }
    void deallocate(T *p, std::size_t n) noexcept { arena_free(a_, p, n * sizeof(T)); }

private:
    ::arena *a_;
};

template <class T, class U>
bool operator==(const allocator<T> &x, const allocator<U> &y) noexcept
{
    return x.get() == y.get();
}
template <class T, class U>
bool operator!=(const allocator<T> &x, const allocator<U> &y) noexcept
{
    return x.get() != y.get();
}

} // namespace libarena

#endif /* ARENA_ARENA_HPP */
