/*
 * lua_host.c: a minimal Lua 5.4 interpreter, built with the sanitizer flags
 * of the build it belongs to, so that `make tsan` runs busted (and the Lua
 * children its specs start, through PHASEPROBE_LUA) in a process whose
 * sanitizer runtime is linked in rather than preloaded: the shells and
 * tools those specs start then run unsanitized.
 *
 *   lua_host script.lua [args...]      arg[0] = script, arg[-1] = lua_host
 *   lua_host -e 'chunk'
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <stdio.h>
#include <string.h>

static int traceback(lua_State *L) {
  luaL_traceback(L, L, luaL_tolstring(L, 1, NULL), 1);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "-e") == 0 && argc < 3)) {
    fprintf(stderr, "usage: lua_host script.lua [args...] | lua_host -e chunk\n");
    return 2;
  }
  lua_State *L = luaL_newstate();
  if (!L)
    return 1;
  luaL_openlibs(L);
  int chunk = strcmp(argv[1], "-e") == 0;
  int script = chunk ? 2 : 1;
  lua_createtable(L, argc, 2);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
  lua_pushcfunction(L, traceback);
  int rc = chunk ? luaL_loadstring(L, argv[2]) : luaL_loadfile(L, argv[1]);
  int nargs = 0;
  if (rc == LUA_OK && !chunk)
    for (int i = 2; i < argc; i++, nargs++)
      lua_pushstring(L, argv[i]);
  if (rc == LUA_OK)
    rc = lua_pcall(L, nargs, 0, 1);
  if (rc != LUA_OK)
    fprintf(stderr, "lua_host: %s\n", lua_tostring(L, -1));
  lua_close(L);
  return rc == LUA_OK ? 0 : 1;
}
