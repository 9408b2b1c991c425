/* SPDX-License-Identifier: MIT */
/*
 * Real clients (workload 10): third-party C libraries driven through their
 * allocator hooks, one operation per iteration:
 *
 *   client/cjson/numbers    cJSON parses a 2 MiB document and drops it:
 *   client/cjson/objects    numbers-heavy (polygons of coordinates),
 *   client/cjson/strings    object-heavy (records of short keys and small
 *                           values), string-heavy (posts with long escaped
 *                           text);
 *   client/lua/request      a Lua 5.4 request: a new state, its standard
 *                           libraries, a script that builds and sorts 20k
 *                           records, then the state is closed;
 *   client/protobuf/batch   protobuf-c unpacks a batch of 2000 orders (kept
 *                           live until the batch is dropped);
 *   client/expat/catalog    expat parses a 2 MiB XML catalog (a SAX parser:
 *                           few allocations; the row shows the allocator
 *                           costs nothing where it has little to do).
 *
 * Churn rows: one operation is a batch that allocates and frees as it goes
 * (the library's own frees, through the hooks), so that memory freed early
 * in the batch can serve what comes later; a bulk-drop allocator drops the
 * rest at end(), a malloc frees it (the library's free walk):
 *
 *   client/lua/strings      Lua 5.4: s = string.sub(s .. 'abcdefghij' .. i,
 *                           -2000), 200k times (a 2000-byte window);
 *   client/lua/tables       Lua 5.4: 200k records of 3 fields and 3-element
 *                           arrays, the last 1000 of each kept in a ring;
 *   client/cjson/roundtrip  cJSON: a 2000-object array parsed, then printed,
 *                           its DOM deleted and the text re-parsed and freed,
 *                           50 times;
 *   client/expat/stream     expat streams a 40 MiB XML log, 64 KiB at a time,
 *                           through its own buffer (XML_GetBuffer).
 * Quick mode (BENCH_QUICK=1) runs shorter batches; each row reports its
 * sizes as counters, which bench/run.py writes into the case's name.
 * yyjson, whose yyjson_alc would take arena_hook_realloc, is not packaged in
 * Debian 12 and has no row.
 *
 *   client/cjson/mixed      one process parses documents of very different
 *                           sizes, one per operation (4 KiB and 128 KiB in
 *                           turn, the 2 MiB one every 12th operation), as a
 *                           server meets its requests: the warm-up and every
 *                           timed repetition run whole cycles, so that the
 *                           faults per operation show whether the large
 *                           document's memory is kept (or faulted back in).
 *
 * Every input is generated in memory by a seeded generator (clients.cc), the
 * same bytes in every process.  Each row first runs kClientWarmup operations
 * (untimed), then reports the operations and input bytes per second of CPU
 * time, the minor page faults per operation of the timed ones (getrusage),
 * the process's peak RSS and its RSS when the row started (the harness
 * binaries differ by a few MiB before any row runs: bench/targets.py compares
 * the peaks net of it): bench/run.py runs each row in a process of its own.
 *
 * The rows differ only in a ClientImpl: hooks in the shapes the libraries
 * take, and an allocator whose begin()/end() bracket each operation.  Null
 * hooks are the library's default, the process's malloc (malloc_family.cc,
 * which also has the mallocs with a bulk drop: mimalloc's heaps and
 * jemalloc's explicit arenas); libarena, talloc, APR and the limit proxy are
 * in clients_arena.cc.
 */
#ifndef BENCH_CLIENTS_H
#define BENCH_CLIENTS_H

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace bench {

// Untimed operations before the measured ones: what "steady state" means in
// the fault counts.  BENCH_CLIENT_WARMUP overrides it (bench/run.py's quick
// mode runs fewer).
constexpr int kClientWarmup = 8;

// The hook shapes.  Null: the library's own default (malloc).
struct ClientHooks {
    // Global hooks without a context (cJSON: malloc and free; expat: all
    // three), called while begin()'s context is the current one.
    void *(*malloc_fn)(size_t) = nullptr;
    void *(*realloc_fn)(void *, size_t) = nullptr;
    void (*free_fn)(void *) = nullptr;
    // lua_Alloc, with begin()'s context as its ud.
    void *(*lua_fn)(void *ud, void *ptr, size_t osize, size_t nsize) = nullptr;
    // protobuf-c's ProtobufCAllocator, with begin()'s context as its data.
    void *(*pb_alloc)(void *ctx, size_t size) = nullptr;
    void (*pb_free)(void *ctx, void *ptr) = nullptr;
};

// One row's allocator.  begin() starts an operation and returns the context
// the hooks get (making it current for the global ones); end() drops what the
// operation left.
class ClientAlloc {
public:
    virtual ~ClientAlloc() = default;
    virtual void *begin() = 0;
    virtual void end() = 0;
};

enum : unsigned { kCjson = 1, kLua = 2, kProtobuf = 4, kExpat = 8, kAllClients = 15 };

struct ClientImpl {
    std::string name;  // the row's last component
    std::string label; // its display name
    ClientHooks hooks; // all null: malloc
    // Whether the operation calls the library's own free walk (cJSON_Delete,
    // lua_close, the unpacked messages' free, XML_ParserFree) before end().
    bool walk = true;
    unsigned clients = kAllClients; // the clients whose hook shape it fits
    // Makes the row's allocator (once per process); empty: the allocator is
    // not installed, and the rows say so.
    std::function<std::unique_ptr<ClientAlloc>()> make;
};

// Registers client/<case>/<impl.name> for each client in impl.clients; a
// library that was not found at build time gives rows that say so.
void register_clients(const ClientImpl &impl);

// bench_arena's rows: libarena, the limit proxy, talloc, APR (clients_arena.cc).
void register_clients_arena();

// An allocator that does nothing around an operation (the malloc rows).
class NoClientAlloc : public ClientAlloc {
public:
    void *begin() override { return nullptr; }
    void end() override {}
};

} // namespace bench

#endif
