/* SPDX-License-Identifier: MIT */
/*
 * Lua 5.4 through lua_Alloc (arena_hook_lua, and arena_hook_lua_align8 at
 * the 8 bytes of LUAI_MAXALIGN: realloc with the old size, free with the
 * size): a request (a new state, the standard libraries, a script
 * that builds, sorts and formats records, close) gives the output of Lua's
 * own allocator; the state may be dropped with the batch instead of closed;
 * and the arena's backing failing at each call ends in LUA_ERRMEM (or a
 * NULL state), never a crash or a leak.
 */
#include "client.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

/* Builds `n` records, sorts them (unique keys: the order is the same
 * whatever pivots the sort picks), and returns a digest made with
 * string.format, gsub, concat, closures and a coroutine. */
static const char script[] =
    "local n = ...\n"
    "local recs = {}\n"
    "for i = 1, n do\n"
    "  recs[i] = { id = i, score = (i * 7919) % 1009, name = string.format('user-%05d', i),\n"
    "              tags = { 'a' .. i % 7, 'b' .. i % 11 } }\n"
    "end\n"
    "table.sort(recs, function(x, y)\n"
    "  if x.score ~= y.score then return x.score < y.score end\n"
    "  return x.id < y.id end)\n"
    "local parts = {}\n"
    "for i, r in ipairs(recs) do\n"
    "  parts[#parts + 1] = r.name:gsub('user', 'u') .. ':' .. r.score .. ':' ..\n"
    "                      table.concat(r.tags, '+')\n"
    "end\n"
    "local gen = coroutine.wrap(function()\n"
    "  for i = 1, #parts, 97 do coroutine.yield(parts[i]) end end)\n"
    "local picked = {}\n"
    "for p in gen do picked[#picked + 1] = p end\n"
    "local sum = 0\n"
    "for _, r in ipairs(recs) do sum = sum + r.score * r.id end\n"
    "return table.concat(picked, ',') .. '|' .. sum .. '|' .. #table.concat(parts, '\\n')\n";

/* arena_hook_lua_align8() gives 8-byte alignment: what this Lua asks. */
struct lua_max_align {
    LUAI_MAXALIGN;
};
_Static_assert(_Alignof(struct lua_max_align) <= 8, "LUAI_MAXALIGN needs more than 8 bytes");

static lua_Integer records = 300;

/* Everything that allocates runs protected, so that out-of-memory comes
 * back as LUA_ERRMEM instead of a panic. */
static int request(lua_State *L)
{
    output *out = (output *)lua_touserdata(L, 1);
    size_t len;
    const char *s;
    luaL_openlibs(L);
    if (luaL_loadbuffer(L, script, sizeof script - 1, "request") != LUA_OK)
        return lua_error(L);
    lua_pushinteger(L, records);
    lua_call(L, 1, 1);
    s = lua_tolstring(L, -1, &len);
    out_add(out, s, len);
    return 0;
}

/* Runs the request in `L` (NULL: lua_newstate failed for want of memory). */
static int run_request(lua_State *L, output *out, bool close)
{
    int status;
    if (!L)
        return CLIENT_OOM;
    lua_pushcfunction(L, request);
    lua_pushlightuserdata(L, out);
    status = lua_pcall(L, 1, 0, 0);
    if (status != LUA_OK && status != LUA_ERRMEM)
        fail_msg("lua: status %d: %s", status, lua_tostring(L, -1));
    if (close)
        lua_close(L);
    return status == LUA_OK ? CLIENT_OK : CLIENT_OOM;
}

static int with_arena(arena *a, output *out)
{
    return run_request(lua_newstate(arena_hook_lua, a), out, true);
}

/* No lua_close: the batch takes the state (the standard libraries' only
 * finalizers are for files, and the request opens none). */
static int with_arena_dropped(arena *a, output *out)
{
    return run_request(lua_newstate(arena_hook_lua, a), out, false);
}

static int with_arena_align8(arena *a, output *out)
{
    return run_request(lua_newstate(arena_hook_lua_align8, a), out, true);
}

static int with_arena_align8_dropped(arena *a, output *out)
{
    return run_request(lua_newstate(arena_hook_lua_align8, a), out, false);
}

static output want;

static void reference(lua_Integer n)
{
    records = n;
    out_reset(&want);
    assert_int_equal(run_request(luaL_newstate(), &want, true), CLIENT_OK);
}

static void same_output_as_malloc(void **state)
{
    (void)state;
    reference(5000);
    assert_true(want.len > 500);
    client_same_output(with_arena, with_arena_dropped, 0, &want);
    client_same_output(with_arena_align8, with_arena_align8_dropped, 0, &want);
}

/* Lua's objects need LUAI_MAXALIGN, 8 bytes here: the hook at 8 holds
 * less than the one at ARENA_ALIGN for the same request where blocks pack
 * (a plain build), and no more elsewhere. */
static void align8_holds_less(void **state)
{
    static output o16, o8;
    arena a16, a8;
    arena_stats st16, st8;
    size_t peak16, peak8;
    (void)state;
    reference(2000);
    arena_init(&a16, 0);
    arena_init(&a8, 0);
    out_reset(&o16);
    out_reset(&o8);
    assert_int_equal(run_request(lua_newstate(arena_hook_lua, &a16), &o16, false), CLIENT_OK);
    assert_int_equal(run_request(lua_newstate(arena_hook_lua_align8, &a8), &o8, false), CLIENT_OK);
    assert_same_output(&o16, &want);
    assert_same_output(&o8, &want);
    arena_get_stats(&a16, &st16);
    arena_get_stats(&a8, &st8);
    peak16 = st16.peak_stored;
    peak8 = st8.peak_stored;
    print_message("lua request: %zu bytes stored at most by either hook; %zu retained with "
                  "arena_hook_lua_align8, %zu with arena_hook_lua\n",
                  peak8, arena_retained(&a8), arena_retained(&a16));
    /* The figures count the bytes asked, not the blocks: the same in both. */
    assert_int_equal(peak8, peak16);
    if (test_packed())
        assert_true(arena_retained(&a8) <= arena_retained(&a16));
    assert_true(arena_check(&a8));
    arena_release(&a16);
    arena_release(&a8);
}

static void out_of_memory_is_lua_errmem(void **state)
{
    (void)state;
    reference(30);
    client_sweep(with_arena, 256, &want);
    client_sweep(with_arena_dropped, 256, &want);
    client_sweep(with_arena_align8, 256, &want);
    client_sweep(with_arena_align8_dropped, 256, &want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_output_as_malloc),
        cmocka_unit_test(out_of_memory_is_lua_errmem),
        cmocka_unit_test(align8_holds_less),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
