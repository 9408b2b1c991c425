/* SPDX-License-Identifier: MIT */
/* An arena behind a hook that reallocs with the old size: Lua's lua_Alloc.
 * Each request runs a script in a new Lua state whose every byte is the
 * request's arena: growth is in place when the block is the most recent,
 * frees of the most recent block give it back, and after the request the
 * arena is reset with its chunks kept for the next one.  yyjson's
 * yyjson_alc takes arena_hook_alloc, arena_hook_realloc and arena_hook_free
 * the same way. */
#include <arena/hooks.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>

static const char script[] =
    "local n = ...\n"
    "local t = {}\n"
    "for i = 1, n do t[i] = string.format('item-%05d', (i * 7919) % n) end\n"
    "table.sort(t)\n"
    "return t[1] .. ' .. ' .. t[n]\n";

/* Runs protected, so that running out of memory is an error (LUA_ERRMEM),
 * not a panic. */
static int run(lua_State *L)
{
    lua_Integer n = lua_tointeger(L, 1);
    luaL_openlibs(L);
    if (luaL_loadstring(L, script) != LUA_OK)
        return lua_error(L);
    lua_pushinteger(L, n);
    lua_call(L, 1, 1);
    return 1;
}

int main(void)
{
    arena a;
    arena_init(&a, 0);
    for (int request = 1; request <= 3; request++) {
        lua_State *L = lua_newstate(arena_hook_lua, &a);
        if (!L)
            return 1;
        lua_pushcfunction(L, run);
        lua_pushinteger(L, 1000 * request);
        if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
            fprintf(stderr, "request %d: %s\n", request, lua_tostring(L, -1));
            return 1;
        }
        printf("request %d: %s; the arena holds %zu bytes\n", request, lua_tostring(L, -1),
               arena_size(&a));
        /* lua_close() runs finalizers (__gc) and frees every object through
         * the hook; without finalizers to run, the reset alone would do. */
        lua_close(L);
        arena_reset(&a);
    }
    arena_release(&a);
    return 0;
}
