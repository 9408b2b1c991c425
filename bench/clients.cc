// SPDX-License-Identifier: MIT
// See clients.h.  The inputs' generators, the four clients' operations, and
// the loop that warms a row up and counts its page faults.
#include "clients.h"

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

#include "harness.h"

#if HAVE_CJSON
#  include <cJSON.h>
#endif
#if HAVE_LUA
#  include <lauxlib.h>
#  include <lua.h>
#  include <lualib.h>
#endif
#if HAVE_PROTOBUF_C
#  include "client.pb-c.h"
#endif
#if HAVE_EXPAT
#  include <expat.h>
#endif

namespace bench {
namespace {

using benchmark::State;

// ---- Deterministic inputs ------------------------------------------------------------

// Every document is about this size.
constexpr size_t kDocBytes = size_t(2) << 20;
// Orders per protobuf-c batch (about 1.3 MiB packed).
constexpr size_t kOrders = 2000;

struct Rng {
    uint64_t s;
    uint64_t next()
    {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    unsigned below(unsigned n) { return static_cast<unsigned>(next() % n); }
    double unit() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
    bool chance(unsigned percent) { return below(100) < percent; }
};

const char *const kFirst[] = {"Ada", "Brian", "Carla", "Dmitri", "Elena", "Farid", "Grace",
                              "Hiro", "Ines", "Jonas", "Kemal", "Lena", "Marta", "Nils"};
const char *const kLast[] = {"Martin", "Okafor", "Nakamura", "Schmidt", "Rossi", "Kowalski",
                             "Haddad", "Larsen", "Moreau", "Silva", "Novak", "Chen"};
const char *const kWords[] = {
    "the",     "order",    "arrived", "late",    "but",      "packaging", "was",    "intact",
    "and",     "support",  "replied", "within",  "an",       "hour",      "great",  "value",
    "would",   "buy",      "again",   "colour",  "differs",  "from",      "photo",  "size",
    "runs",    "small",    "battery", "lasts",   "two",      "days",      "screen", "bright",
    "delivery", "courier", "left",    "it",      "at",       "neighbour", "door",   "refund",
    "quick",   "quality",  "feels",   "cheap",   "solid",    "recommend", "to",     "friends"};
// Fragments that make cJSON and expat take their escape paths.
const char *const kJsonEscapes[] = {"\\\"quoted\\\"", "back\\\\slash", "tab\\tstop",
                                    "line\\nbreak",   "caf\\u00e9",    "\\u4e2d\\u6587",
                                    "na\\u00efve",    "\\/path"};
const char *const kXmlEscapes[] = {"&amp;", "&lt;b&gt;", "&quot;x&quot;", "&#233;", "&apos;"};
const char *const kCities[] = {"Lyon", "Porto", "Gdansk", "Osaka", "Leeds", "Graz", "Turku",
                               "Bilbao", "Brno", "Utrecht"};
const char *const kCountries[] = {"FR", "PT", "PL", "JP", "GB", "AT", "FI", "ES", "CZ", "NL"};
const char *const kCategories[] = {"garden", "kitchen", "tools", "toys", "books", "audio",
                                   "office", "sports"};

template <size_t N> const char *pick(Rng &r, const char *const (&a)[N]) { return a[r.below(N)]; }

void put(std::string &s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void put(std::string &s, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || static_cast<size_t>(n) >= sizeof buf)
        std::abort();
    s.append(buf, static_cast<size_t>(n));
}

// `words` words of text, with an escape every few words when `escapes`.
template <size_t N>
void text(std::string &s, Rng &r, unsigned words, const char *const (&escapes)[N])
{
    for (unsigned w = 0; w < words; w++) {
        if (w)
            s += ' ';
        s += r.chance(12) ? pick(r, escapes) : pick(r, kWords);
    }
}

// Numbers-heavy: a GeoJSON FeatureCollection of polygons whose coordinates
// are printed with full precision (the shape of map data).
std::string json_numbers()
{
    Rng r{0x243f6a8885a308d3ull};
    std::string s = "{\"type\":\"FeatureCollection\",\"features\":[";
    for (unsigned f = 0; s.size() < kDocBytes; f++) {
        put(s, "%s{\"type\":\"Feature\",\"properties\":{\"name\":\"region %u\",\"code\":%u},"
               "\"geometry\":{\"type\":\"Polygon\",\"coordinates\":[",
            f ? "," : "", f, r.below(100000));
        unsigned rings = 1 + r.below(3);
        for (unsigned g = 0; g < rings; g++) {
            double lon = -141.0 + 89.0 * r.unit(), lat = 41.0 + 42.0 * r.unit();
            s += g ? ",[" : "[";
            unsigned points = 20 + r.below(300);
            for (unsigned p = 0; p < points; p++) {
                lon += (r.unit() - 0.5) * 0.01;
                lat += (r.unit() - 0.5) * 0.01;
                put(s, "%s[%.15g,%.15g]", p ? "," : "", lon, lat);
            }
            s += ']';
        }
        s += "]}}";
    }
    s += "]}";
    return s;
}

// Object-heavy: an array of records with many short keys, small integers,
// booleans, nulls and nested objects (the shape of an API's listing), of
// about `bytes` bytes or `records` records, whichever comes first.  Every
// size is a prefix of the same records.
std::string json_records(size_t bytes, size_t records)
{
    Rng r{0x13198a2e03707344ull};
    std::string s = "[";
    for (unsigned i = 0; s.size() < bytes && i < records; i++) {
        put(s, "%s{\"id\":%u,\"login\":\"%s%u\",\"active\":%s,\"score\":%u,\"ratio\":%.2f,"
               "\"flags\":[%u,%u,%u],\"owner\":{\"id\":%u,\"name\":\"team-%u\",\"admin\":%s},"
               "\"geo\":{\"lat\":%.3f,\"lon\":%.3f},\"seen\":%s,"
               "\"counts\":{\"views\":%u,\"likes\":%u,\"shares\":%u},\"lang\":\"%s\"}",
            i ? "," : "", 100000 + i, pick(r, kFirst), r.below(10000),
            r.chance(70) ? "true" : "false", r.below(100), r.unit(), r.below(4), r.below(4),
            r.below(4), r.below(500), r.below(64), r.chance(10) ? "true" : "false",
            -90.0 + 180.0 * r.unit(), -180.0 + 360.0 * r.unit(),
            r.chance(30) ? "null" : "\"2026-11-30\"", r.below(100000), r.below(1000),
            r.below(50), pick(r, kCountries));
    }
    s += "]";
    return s;
}

std::string json_objects() { return json_records(kDocBytes, SIZE_MAX); }

// String-heavy: posts with long text holding escapes and \u sequences.
std::string json_strings()
{
    Rng r{0xa4093822299f31d0ull};
    std::string s = "[";
    for (unsigned i = 0; s.size() < kDocBytes; i++) {
        put(s, "%s{\"id\":\"post-%06u\",\"author\":\"%s %s\",\"title\":\"", i ? "," : "", i,
            pick(r, kFirst), pick(r, kLast));
        text(s, r, 4 + r.below(8), kJsonEscapes);
        s += "\",\"body\":\"";
        text(s, r, 40 + r.below(200), kJsonEscapes);
        s += "\",\"comments\":[";
        unsigned comments = r.below(4);
        for (unsigned c = 0; c < comments; c++) {
            put(s, "%s{\"by\":\"%s\",\"text\":\"", c ? "," : "", pick(r, kFirst));
            text(s, r, 5 + r.below(30), kJsonEscapes);
            s += "\"}";
        }
        s += "]}";
    }
    s += "]";
    return s;
}

// A product catalog: nested elements, attributes, entities, CDATA.
std::string xml_catalog()
{
    Rng r{0x082efa98ec4e6c89ull};
    std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                    "<catalog xmlns=\"urn:example:catalog\" generated=\"2026-11-30\">\n";
    for (unsigned i = 0; s.size() < kDocBytes; i++) {
        put(s, "<product id=\"p%06u\" sku=\"SKU-%08u\" currency=\"EUR\" stock=\"%u\">\n<name>",
            i, r.below(100000000), r.below(500));
        text(s, r, 2 + r.below(5), kXmlEscapes);
        s += "</name>\n<description>";
        text(s, r, 20 + r.below(80), kXmlEscapes);
        if (r.chance(20))
            s += "<![CDATA[<p>care instructions</p>]]>";
        put(s, "</description>\n<price>%u.%02u</price>\n<categories>", 1 + r.below(500),
            r.below(100));
        unsigned cats = 1 + r.below(3);
        for (unsigned c = 0; c < cats; c++)
            put(s, "<category ref=\"c%u\">%s</category>", r.below(64), pick(r, kCategories));
        s += "</categories>\n<attributes>";
        unsigned attrs = r.below(6);
        for (unsigned a = 0; a < attrs; a++)
            put(s, "<attr key=\"k%u\" value=\"%s\"/>", r.below(20), pick(r, kWords));
        s += "</attributes>\n</product>\n";
    }
    s += "</catalog>\n";
    return s;
}

// A service's log as XML, one <entry> element per line: a block of about
// kLogBlockBytes of whole entries, which the streaming row feeds again and
// again (a long log, without holding it in memory).
constexpr size_t kLogBlockBytes = size_t(1) << 20;
const char *const kLevels[] = {"DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR"};

std::string xml_log_block()
{
    Rng r{0x452821e638d01377ull};
    std::string s;
    unsigned long long t = 1764460800000ull; // ms
    while (s.size() < kLogBlockBytes) {
        t += r.below(50);
        put(s, "<entry ts=\"2026-11-30T%02llu:%02llu:%02llu.%03lluZ\" level=\"%s\" "
               "svc=\"%s\" host=\"web-%03u\"><path>/api/v%u/%s/%u</path>"
               "<latency unit=\"us\">%u</latency><msg>",
            (t / 3600000) % 24, (t / 60000) % 60, (t / 1000) % 60, t % 1000, pick(r, kLevels),
            pick(r, kCategories), r.below(64), 1 + r.below(3), pick(r, kCities),
            r.below(1000000), r.below(2000000));
        text(s, r, 3 + r.below(12), kXmlEscapes);
        s += "</msg></entry>\n";
    }
    return s;
}

// Each input is made on first use, so that a process running other rows
// (and its peak RSS) never holds them.
template <std::string (*Make)()> const std::string &input()
{
    static const std::string s = Make();
    return s;
}

// ---- The rows --------------------------------------------------------------------

// One row's state, kept across the calls Google Benchmark makes to its body
// (one per iteration-count estimate): the warm-up runs once per process.
struct RowState {
    std::unique_ptr<ClientAlloc> alloc;
    bool warmed = false;
    uint64_t expect = 0; // the first operation's checksum: every later one must match
    // The process's resident set when the row started, before its input was
    // made: what the harness binary itself holds (its libraries and
    // registrations differ from one binary to the next by a few MiB).
    long start_kib = -1;
};

int warmup_ops()
{
    const char *e = std::getenv("BENCH_CLIENT_WARMUP");
    int n = e && *e ? std::atoi(e) : kClientWarmup;
    return n > 0 ? n : 1;
}

// How a row differs from the plain one-document rows.
struct RowOpts {
    // The row's operations come in a cycle of this many (the warm-up runs
    // whole cycles, and so does every timed repetition); 1: every operation
    // is the same.
    int cycle = 1;
    // Timed operations per repetition (0: as Google Benchmark chooses); a
    // multiple of `cycle`.
    int64_t iterations = 0;
    // The size of the operation (batch length, rounds, MiB), as counters that
    // bench/run.py writes into the case's name.
    std::vector<std::pair<std::string, double>> sizes;
};

// Runs `op(ctx)` (a non-zero checksum, 0 on failure) once per iteration,
// between the allocator's begin() and end(), after warmup_ops() untimed ones
// (rounded up to whole cycles of opts.cycle).
template <class Op>
void run_client(State &st, const ClientImpl &im, RowState &rs, const RowOpts &opts, Op op)
{
    const int cycle = opts.cycle > 0 ? opts.cycle : 1;
    const int warmup = (warmup_ops() + cycle - 1) / cycle * cycle;
    if (!rs.alloc)
        rs.alloc = im.make();
    auto once = [&]() -> uint64_t {
        void *ctx = rs.alloc->begin();
        uint64_t check = op(ctx);
        rs.alloc->end();
        return check;
    };
    if (!rs.warmed) {
        rs.expect = once();
        for (int i = 1; i < warmup && rs.expect; i++)
            if (once() != rs.expect)
                rs.expect = 0;
        rs.warmed = true;
    }
    if (!rs.expect)
        return st.SkipWithError("the client failed (out of memory, or a wrong result)");
    bool ok = true;
    long faults = minor_faults();
    for (auto _ : st)
        ok &= once() == rs.expect;
    faults = minor_faults() - faults;
    if (!ok)
        return st.SkipWithError("the client's result changed between operations");
    st.counters["faults/op"] = per_iteration(static_cast<double>(faults));
    st.counters["peak_RSS"] = bytes_counter(1024.0 * static_cast<double>(peak_rss_kib()));
    st.counters["start_RSS"] = bytes_counter(1024.0 * static_cast<double>(rs.start_kib));
    st.counters["warmup"] = warmup;
    for (const auto &kv : opts.sizes)
        st.counters[kv.first] = kv.second;
}

// Registers one row: `op(impl, ctx)` runs one operation, `input()` returns
// the bytes of input an operation reads (making it on the first call),
// `prepare(impl)` and `finish()` bracket the row's body (global hooks).
template <class Input, class Prepare, class Op, class Finish>
void client_row(const std::string &name, const ClientImpl &im, Input input, Prepare prepare,
                Op op, Finish finish, const RowOpts &opts = RowOpts())
{
    auto rs = std::make_shared<RowState>();
    Row row = add(name, im.label, 1, [im, rs, input, prepare, op, finish, opts](State &st) {
        if (rs->start_kib < 0)
            rs->start_kib = rss_kib();
        size_t bytes = input();
        prepare(im);
        run_client(st, im, *rs, opts, [&](void *ctx) { return op(im, ctx); });
        finish();
        st.SetBytesProcessed(static_cast<int64_t>(bytes) * st.iterations());
    });
    if (opts.iterations > 0)
        row->Iterations(opts.iterations);
}

// The churn rows (a batch that allocates and frees as it goes, the arena
// reset between batches) are long in full mode and short in quick mode.
size_t full_or_quick(size_t full, size_t quick) { return quick_mode() ? quick : full; }

// ---- cJSON ------------------------------------------------------------------------

#if HAVE_CJSON
void cjson_hooks(const ClientImpl &im)
{
    cJSON_Hooks h = {im.hooks.malloc_fn, im.hooks.free_fn};
    cJSON_InitHooks(im.hooks.malloc_fn ? &h : nullptr);
}

void register_cjson(const ClientImpl &im)
{
    struct Doc {
        const char *name;
        const std::string &(*doc)();
    };
    for (Doc d : {Doc{"numbers", input<json_numbers>}, Doc{"objects", input<json_objects>},
                  Doc{"strings", input<json_strings>}}) {
        client_row(
            std::string("client/cjson/") + d.name + "/" + im.name, im,
            [d] { return d.doc().size(); }, cjson_hooks,
            [d](const ClientImpl &impl, void *) -> uint64_t {
                const std::string &doc = d.doc();
                cJSON *root = cJSON_ParseWithLength(doc.data(), doc.size());
                if (!root)
                    return 0;
                const cJSON *top = cJSON_IsArray(root)
                                       ? root
                                       : cJSON_GetObjectItemCaseSensitive(root, "features");
                uint64_t n = static_cast<uint64_t>(cJSON_GetArraySize(top)) + 1;
                if (impl.walk)
                    cJSON_Delete(root);
                return n;
            },
            [] { cJSON_InitHooks(nullptr); });
    }
}

// The print/parse loop: a parsed document printed, its DOM deleted, the
// text parsed again and freed, `rounds` times over; everything a round
// drops is freed through the hooks within the operation.
uint64_t cjson_roundtrip(const ClientImpl &impl, const std::string &doc, size_t rounds)
{
    cJSON *root = cJSON_ParseWithLength(doc.data(), doc.size());
    size_t printed = 0;
    for (size_t r = 0; root && r < rounds; r++) {
        char *text = cJSON_PrintUnformatted(root);
        if (!text)
            break;
        printed = std::strlen(text);
        cJSON_Delete(root);
        root = cJSON_ParseWithLength(text, printed);
        cJSON_free(text);
    }
    if (!root || !printed)
        return 0; // the malloc rows leak what a failed operation left
    uint64_t n = static_cast<uint64_t>(cJSON_GetArraySize(root)) * 1000003 + printed;
    if (impl.walk)
        cJSON_Delete(root);
    return n;
}

// Objects of the round-trip's document, and its rounds.
size_t roundtrip_objects() { return full_or_quick(2000, 400); }
size_t roundtrip_rounds() { return full_or_quick(50, 3); }

const std::string &roundtrip_doc()
{
    static const std::string s = json_records(SIZE_MAX, roundtrip_objects());
    return s;
}

// The mixed-size row: three documents of the same records, of very
// different sizes, one per operation in a cycle of kMixedCycle where the
// large one comes last and once.
constexpr int kMixedCycle = 12;
constexpr size_t kMixedSmall = size_t(4) << 10, kMixedMedium = size_t(128) << 10;

const std::string &mixed_doc(int kind)
{
    static const std::string small = json_records(kMixedSmall, SIZE_MAX);
    static const std::string medium = json_records(kMixedMedium, SIZE_MAX);
    return kind == 0 ? small : kind == 1 ? medium : input<json_objects>();
}

// Operation k of a cycle: small and medium in turn, the large one last.
int mixed_kind(size_t k)
{
    k %= kMixedCycle;
    return k + 1 == kMixedCycle ? 2 : static_cast<int>(k & 1);
}

void register_cjson_churn(const ClientImpl &im)
{
    RowOpts rt;
    rt.sizes = {{"objects", double(roundtrip_objects())}, {"rounds", double(roundtrip_rounds())}};
    client_row(
        "client/cjson/roundtrip/" + im.name, im, [] { return roundtrip_doc().size(); },
        cjson_hooks,
        [](const ClientImpl &impl, void *) {
            return cjson_roundtrip(impl, roundtrip_doc(), roundtrip_rounds());
        },
        [] { cJSON_InitHooks(nullptr); }, rt);

    // Which operation of the cycle comes next, and each document's count
    // (its first parse's): every operation checks its own document.
    struct Mixed {
        size_t next = 0;
        std::array<uint64_t, 3> expect{};
    };
    auto m = std::make_shared<Mixed>();
    RowOpts mx;
    mx.cycle = kMixedCycle;
    // Google Benchmark writes the count into the row's name, which
    // bench/run.py takes out again (and lists the rows in the mode it runs).
    mx.iterations = kMixedCycle * static_cast<int64_t>(full_or_quick(4, 2));
    client_row(
        "client/cjson/mixed/" + im.name, im,
        [] { // the mean bytes per operation
            size_t total = 0;
            for (int k = 0; k < kMixedCycle; k++)
                total += mixed_doc(mixed_kind(k)).size();
            return total / kMixedCycle;
        },
        cjson_hooks,
        [m](const ClientImpl &impl, void *) -> uint64_t {
            int kind = mixed_kind(m->next++);
            const std::string &doc = mixed_doc(kind);
            cJSON *root = cJSON_ParseWithLength(doc.data(), doc.size());
            if (!root)
                return 0;
            uint64_t n = static_cast<uint64_t>(cJSON_GetArraySize(root)) + 1;
            if (impl.walk)
                cJSON_Delete(root);
            if (!m->expect[kind])
                m->expect[kind] = n;
            return n == m->expect[kind] ? 1 : 0;
        },
        [] { cJSON_InitHooks(nullptr); }, mx);
}
#endif

// ---- Lua -----------------------------------------------------------------------------

#if HAVE_LUA
// The request's script: 20k records built, sorted on two keys, summarised.
const char kLuaScript[] = R"lua(
local N = 20000
local first = { "ada", "brian", "carla", "dmitri", "elena", "farid", "grace", "hiro" }
local recs = {}
for i = 1, N do
  local k = (i * 7919) % 100003
  recs[i] = {
    id = k,
    name = first[k % #first + 1] .. "-" .. tostring(k),
    score = (k * 37) % 1000 + (k % 7) / 8,
    tags = { "t" .. (k % 13), "g" .. (k % 29) },
  }
end
table.sort(recs, function(a, b)
  if a.score ~= b.score then return a.score < b.score end
  return a.id < b.id
end)
local out = {}
for i = 1, N, 100 do out[#out + 1] = recs[i].name .. ":" .. recs[i].tags[1] end
local s = table.concat(out, ",")
return #s * 1000003 + recs[1].id + recs[N].id
)lua";

// libarena's rows give Lua arena_hook_lua_align8(), whose blocks are 8-aligned:
// what Lua asks of its allocator is LUAI_MAXALIGN's alignment.
struct LuaMaxAlign {
    LUAI_MAXALIGN;
};
static_assert(alignof(LuaMaxAlign) <= 8, "this Lua needs more than arena_hook_lua_align8 gives");

// luaL_newstate()'s allocator, for the malloc rows.
void *lua_malloc(void *, void *ptr, size_t, size_t nsize)
{
    if (nsize == 0) {
        std::free(ptr);
        return nullptr;
    }
    return std::realloc(ptr, nsize);
}

// The churn scripts: a batch that allocates and drops as it goes, Lua's
// collector freeing through the hook.  `...` is the batch's length.
const char kLuaStrings[] = R"lua(
local N = ...
local s = ''
for i = 1, N do s = string.sub(s .. 'abcdefghij' .. i, -2000) end
return #s * 1000003 + s:byte(1) * 1009 + s:byte(-1)
)lua";

const char kLuaTables[] = R"lua(
local N, K = ...
local recs, arrays, sum = {}, {}, 0
for i = 1, N do
  local j = i % K + 1
  local r = { id = i, name = "u" .. i, score = i % 97 }
  local a = { i, i + 1, i + 2 }
  recs[j], arrays[j] = r, a
  sum = sum + r.score + a[3]
end
return sum
)lua";

// A new state, its standard libraries, `script` run with the integer
// arguments `args`; the state closed when the row walks.
uint64_t lua_run(const ClientImpl &impl, void *ctx, const char *script, size_t len,
                 const char *chunk, std::initializer_list<lua_Integer> args)
{
    lua_State *L = lua_newstate(impl.hooks.lua_fn ? impl.hooks.lua_fn : lua_malloc, ctx);
    if (!L)
        return 0;
    luaL_openlibs(L);
    uint64_t check = 0;
    if (luaL_loadbufferx(L, script, len, chunk, "t") == LUA_OK) {
        for (lua_Integer a : args)
            lua_pushinteger(L, a);
        if (lua_pcall(L, static_cast<int>(args.size()), 1, 0) == LUA_OK && lua_isinteger(L, -1))
            check = static_cast<uint64_t>(lua_tointeger(L, -1));
    }
    if (impl.walk)
        lua_close(L);
    return check;
}

size_t lua_appends() { return full_or_quick(200000, 5000); }
size_t lua_records() { return full_or_quick(200000, 10000); }
constexpr size_t kLuaRing = 1000;

void register_lua_churn(const ClientImpl &im)
{
    RowOpts so;
    so.sizes = {{"appends", double(lua_appends())}};
    client_row(
        "client/lua/strings/" + im.name, im, [] { return sizeof kLuaStrings - 1; },
        [](const ClientImpl &) {},
        [](const ClientImpl &impl, void *ctx) {
            return lua_run(impl, ctx, kLuaStrings, sizeof kLuaStrings - 1, "=strings",
                           {static_cast<lua_Integer>(lua_appends())});
        },
        [] {}, so);
    RowOpts tb;
    tb.sizes = {{"records", double(lua_records())}};
    client_row(
        "client/lua/tables/" + im.name, im, [] { return sizeof kLuaTables - 1; },
        [](const ClientImpl &) {},
        [](const ClientImpl &impl, void *ctx) {
            return lua_run(impl, ctx, kLuaTables, sizeof kLuaTables - 1, "=tables",
                           {static_cast<lua_Integer>(lua_records()),
                            static_cast<lua_Integer>(kLuaRing)});
        },
        [] {}, tb);
}

void register_lua(const ClientImpl &im)
{
    client_row(
        "client/lua/request/" + im.name, im, [] { return sizeof kLuaScript - 1; },
        [](const ClientImpl &) {},
        [](const ClientImpl &impl, void *ctx) {
            return lua_run(impl, ctx, kLuaScript, sizeof kLuaScript - 1, "=request", {});
        },
        [] {});
}
#endif

// ---- protobuf-c ----------------------------------------------------------------------

#if HAVE_PROTOBUF_C
// kOrders packed orders, one after the other, and where each starts.
struct PackedBatch {
    std::vector<uint8_t> bytes;
    std::vector<size_t> start; // kOrders + 1 offsets
};

PackedBatch make_orders()
{
    Rng r{0xbe5466cf34e90c6cull};
    PackedBatch b;
    std::deque<std::string> strs; // the order's strings (a deque never moves them)
    for (size_t i = 0; i < kOrders; i++) {
        strs.clear();
        auto str = [&](std::string v) { return const_cast<char *>(strs.emplace_back(v).c_str()); };
        Benchclient__Address addr[2] = {BENCHCLIENT__ADDRESS__INIT, BENCHCLIENT__ADDRESS__INIT};
        for (auto &a : addr) {
            a.street = str(std::to_string(1 + r.below(200)) + " " + pick(r, kLast) + " street");
            a.city = str(pick(r, kCities));
            a.postcode = str(std::to_string(10000 + r.below(90000)));
            a.country = str(pick(r, kCountries));
        }
        Benchclient__Order o = BENCHCLIENT__ORDER__INIT;
        o.id = 1000000 + i;
        o.customer = str(std::string(pick(r, kFirst)) + " " + pick(r, kLast));
        o.email = str(std::string("user") + std::to_string(r.below(1000000)) + "@example.org");
        o.created_ms = 1764460800000ll + r.below(86400000);
        o.shipping = &addr[0];
        o.billing = r.chance(70) ? &addr[1] : nullptr;
        std::vector<Benchclient__LineItem> items(1 + r.below(12));
        std::vector<Benchclient__LineItem *> item_ptrs;
        std::vector<std::vector<char *>> attrs(items.size());
        for (size_t k = 0; k < items.size(); k++) {
            Benchclient__LineItem &it = items[k];
            benchclient__line_item__init(&it);
            it.sku = str("SKU-" + std::to_string(r.below(100000000)));
            std::string title;
            text(title, r, 2 + r.below(6), kWords);
            it.title = str(title);
            it.quantity = 1 + r.below(5);
            it.price_cents = 99 + r.below(50000);
            for (unsigned a = r.below(4); a > 0; a--)
                attrs[k].push_back(str(std::string(pick(r, kWords)) + "=" + pick(r, kWords)));
            it.n_attributes = attrs[k].size();
            it.attributes = attrs[k].data();
            item_ptrs.push_back(&it);
        }
        o.n_items = item_ptrs.size();
        o.items = item_ptrs.data();
        std::vector<char *> tags;
        for (unsigned t = r.below(5); t > 0; t--)
            tags.push_back(str(pick(r, kCategories)));
        o.n_tags = tags.size();
        o.tags = tags.data();
        std::string note;
        if (r.chance(40))
            text(note, r, 3 + r.below(30), kWords);
        o.note.len = note.size();
        o.note.data = reinterpret_cast<uint8_t *>(note.data());
        o.total = r.unit() * 1000.0;
        o.status = static_cast<Benchclient__Order__Status>(r.below(4));
        size_t at = b.bytes.size();
        b.start.push_back(at);
        b.bytes.resize(at + benchclient__order__get_packed_size(&o));
        benchclient__order__pack(&o, b.bytes.data() + at);
    }
    b.start.push_back(b.bytes.size());
    return b;
}

const PackedBatch &orders()
{
    static const PackedBatch b = make_orders();
    return b;
}

void register_protobuf(const ClientImpl &im)
{
    client_row(
        "client/protobuf/batch/" + im.name, im, [] { return orders().bytes.size(); },
        [](const ClientImpl &) {},
        [](const ClientImpl &impl, void *ctx) -> uint64_t {
            static std::vector<Benchclient__Order *> live(kOrders);
            const PackedBatch &batch = orders();
            ProtobufCAllocator a = {impl.hooks.pb_alloc, impl.hooks.pb_free, ctx};
            ProtobufCAllocator *pa = impl.hooks.pb_alloc ? &a : nullptr;
            uint64_t check = 1;
            for (size_t i = 0; i < kOrders; i++) {
                const uint8_t *p = batch.bytes.data() + batch.start[i];
                live[i] = benchclient__order__unpack(pa, batch.start[i + 1] - batch.start[i], p);
                if (!live[i])
                    return 0; // an arena drops the rest at end(); malloc leaks them
                check += live[i]->n_items + live[i]->items[0]->quantity;
            }
            touch(live.data());
            if (impl.walk)
                for (Benchclient__Order *o : live)
                    benchclient__order__free_unpacked(o, pa);
            return check;
        },
        [] {});
}
#endif

// ---- expat ---------------------------------------------------------------------------

#if HAVE_EXPAT
struct XmlCounts {
    uint64_t elements = 0, attributes = 0, text = 0;
};

void XMLCALL xml_start(void *ud, const XML_Char *, const XML_Char **attrs)
{
    auto *c = static_cast<XmlCounts *>(ud);
    c->elements++;
    for (; *attrs; attrs += 2)
        c->attributes++;
}

void XMLCALL xml_end(void *, const XML_Char *) {}

void XMLCALL xml_text(void *ud, const XML_Char *, int len)
{
    static_cast<XmlCounts *>(ud)->text += static_cast<uint64_t>(len);
}

void register_expat(const ClientImpl &im)
{
    client_row(
        "client/expat/catalog/" + im.name, im, [] { return input<xml_catalog>().size(); },
        [](const ClientImpl &) {},
        [](const ClientImpl &impl, void *) -> uint64_t {
            const std::string &doc = input<xml_catalog>();
            XML_Memory_Handling_Suite ms = {impl.hooks.malloc_fn, impl.hooks.realloc_fn,
                                            impl.hooks.free_fn};
            XML_Parser p = XML_ParserCreate_MM(nullptr, impl.hooks.malloc_fn ? &ms : nullptr,
                                               nullptr);
            if (!p)
                return 0;
            XmlCounts c;
            XML_SetUserData(p, &c);
            XML_SetElementHandler(p, xml_start, xml_end);
            XML_SetCharacterDataHandler(p, xml_text);
            bool ok = XML_Parse(p, doc.data(), static_cast<int>(doc.size()), 1) == XML_STATUS_OK;
            if (impl.walk)
                XML_ParserFree(p);
            return ok ? c.elements * 1000003 + c.attributes * 1009 + c.text : 0;
        },
        [] {});
}

// The streaming row: a log of `blocks` copies of xml_log_block() inside one
// root element, fed as a program reading a file feeds it, kStreamChunk bytes
// at a time into the parser's own buffer (XML_GetBuffer, allocated through
// the hooks).
constexpr size_t kStreamChunk = size_t(64) << 10;
const char kLogHead[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<log>\n";
const char kLogTail[] = "</log>\n";

size_t stream_blocks() { return full_or_quick(40, 1); }

uint64_t expat_stream(const ClientImpl &impl, size_t blocks)
{
    const std::string &block = input<xml_log_block>();
    XML_Memory_Handling_Suite ms = {impl.hooks.malloc_fn, impl.hooks.realloc_fn,
                                    impl.hooks.free_fn};
    XML_Parser p = XML_ParserCreate_MM(nullptr, impl.hooks.malloc_fn ? &ms : nullptr, nullptr);
    if (!p)
        return 0;
    XmlCounts c;
    XML_SetUserData(p, &c);
    XML_SetElementHandler(p, xml_start, xml_end);
    XML_SetCharacterDataHandler(p, xml_text);
    auto feed = [p](const char *data, size_t n, bool last) {
        while (n) {
            size_t k = std::min(n, kStreamChunk);
            void *buf = XML_GetBuffer(p, static_cast<int>(k));
            if (!buf)
                return false;
            std::memcpy(buf, data, k);
            data += k;
            n -= k;
            if (XML_ParseBuffer(p, static_cast<int>(k), last && !n) != XML_STATUS_OK)
                return false;
        }
        return true;
    };
    bool ok = feed(kLogHead, sizeof kLogHead - 1, false);
    for (size_t b = 0; ok && b < blocks; b++)
        ok = feed(block.data(), block.size(), false);
    ok = ok && feed(kLogTail, sizeof kLogTail - 1, true);
    if (impl.walk)
        XML_ParserFree(p);
    return ok ? c.elements * 1000003 + c.attributes * 1009 + c.text : 0;
}

void register_expat_stream(const ClientImpl &im)
{
    RowOpts o;
    o.sizes = {{"MiB", double(stream_blocks() * kLogBlockBytes >> 20)}};
    client_row(
        "client/expat/stream/" + im.name, im,
        [] { return stream_blocks() * input<xml_log_block>().size(); },
        [](const ClientImpl &) {},
        [](const ClientImpl &impl, void *) { return expat_stream(impl, stream_blocks()); },
        [] {}, o);
}
#endif

// Rows that report "not installed" for the space-separated `cases` in
// im.clients.
void absent_rows(const char *cases, const ClientImpl &im)
{
    std::string all = cases;
    for (size_t at = 0, next; at < all.size(); at = next + 1) {
        next = all.find(' ', at);
        if (next == std::string::npos)
            next = all.size();
        std::string c = all.substr(at, next - at);
        unsigned bit = c.rfind("cjson", 0) == 0 ? kCjson
                       : c.rfind("lua", 0) == 0 ? kLua
                       : c.rfind("protobuf", 0) == 0 ? kProtobuf
                                                       : kExpat;
        if (im.clients & bit)
            absent("client/" + c + "/" + im.name, im.label, "not installed");
    }
}

} // namespace

void register_clients(const ClientImpl &im)
{
    if (!im.make) {
        absent_rows("cjson/numbers cjson/objects cjson/strings cjson/roundtrip cjson/mixed "
                    "lua/request lua/strings lua/tables protobuf/batch expat/catalog "
                    "expat/stream",
                    im);
        return;
    }
    if (im.clients & kCjson) {
#if HAVE_CJSON
        register_cjson(im);
        register_cjson_churn(im);
#else
        absent_rows("cjson/numbers cjson/objects cjson/strings cjson/roundtrip cjson/mixed", im);
#endif
    }
    if (im.clients & kLua) {
#if HAVE_LUA
        register_lua(im);
        register_lua_churn(im);
#else
        absent_rows("lua/request lua/strings lua/tables", im);
#endif
    }
    if (im.clients & kProtobuf) {
#if HAVE_PROTOBUF_C
        register_protobuf(im);
#else
        absent_rows("protobuf/batch", im);
#endif
    }
    if (im.clients & kExpat) {
#if HAVE_EXPAT
        register_expat(im);
        register_expat_stream(im);
#else
        absent_rows("expat/catalog expat/stream", im);
#endif
    }
}

} // namespace bench
