/* SPDX-License-Identifier: MIT */
/*
 * Lua 5.4 through lua_Alloc (arena_hook_lua: realloc with the old size, free
 * as free-last): a request (a new state, the standard libraries, a script
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
}

static void out_of_memory_is_lua_errmem(void **state)
{
    (void)state;
    reference(30);
    client_sweep(with_arena, 256, &want);
    client_sweep(with_arena_dropped, 256, &want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_output_as_malloc),
        cmocka_unit_test(out_of_memory_is_lua_errmem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
