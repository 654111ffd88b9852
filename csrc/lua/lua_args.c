/*
 * lua_args.c: arguments that the bindings hand to C as C strings (names,
 * paths, options). A Lua string may hold a NUL byte, which C would cut: a
 * name "saxpy\0x" would find "saxpy", an option "hit\0x" would read as "hit".
 * These checks refuse such strings, naming the argument, instead of letting
 * C see a shorter one. Used by every binding file (csrc/lua/lua_*.c).
 * pp_lua_checkoption's error also lists the valid names, so misuse says
 * what would have been right: "bad argument #2 to 'cache' (invalid option
 * 'maybe'; valid: hit, miss, disk_hit)".
 */
#include "pp_lua.h"

#include <string.h>

static int nul_error(lua_State *L, int arg) {
  return luaL_argerror(L, arg, "contains a NUL byte (names, paths and "
                               "options are C strings)");
}

const char *pp_lua_checkname(lua_State *L, int arg) {
  size_t len;
  if (lua_type(L, arg) != LUA_TSTRING)
    luaL_typeerror(L, arg, "string");
  const char *s = lua_tolstring(L, arg, &len);
  if (strlen(s) != len)
    nul_error(L, arg);
  return s;
}

const char *pp_lua_checkcstr(lua_State *L, int idx) {
  size_t len;
  const char *s = luaL_checklstring(L, idx, &len);
  if (strlen(s) != len) {
    if (idx > 0)
      nul_error(L, idx);
    luaL_error(L, "a name contains a NUL byte ('%s...')", s);
  }
  return s;
}

const char *pp_lua_optname(lua_State *L, int arg, const char *def) {
  return lua_isnoneornil(L, arg) ? def : pp_lua_checkname(L, arg);
}

int pp_lua_checkoption(lua_State *L, int arg, const char *def,
                       const char *const lst[]) {
  const char *name = def && lua_isnoneornil(L, arg) ? def
                                                     : pp_lua_checkname(L, arg);
  for (int i = 0; lst[i]; i++)
    if (strcmp(lst[i], name) == 0)
      return i;
  luaL_Buffer buf;
  luaL_buffinit(L, &buf);
  for (int i = 0; lst[i]; i++) {
    if (i)
      luaL_addstring(&buf, ", ");
    luaL_addstring(&buf, lst[i]);
  }
  luaL_pushresult(&buf);
  return luaL_argerror(L, arg, lua_pushfstring(L, "invalid option '%s'; valid: %s",
                                               name, lua_tostring(L, -1)));
}

const char *pp_lua_tocname(lua_State *L, int idx, const char *what) {
  size_t len;
  if (lua_type(L, idx) != LUA_TSTRING)
    return NULL;
  const char *s = lua_tolstring(L, idx, &len);
  if (strlen(s) != len)
    luaL_error(L, "%s: a name contains a NUL byte ('%s...')", what, s);
  return s;
}

const char *pp_lua_tokey(lua_State *L, int idx) {
  size_t len;
  if (lua_type(L, idx) != LUA_TSTRING)
    return NULL;
  const char *s = lua_tolstring(L, idx, &len);
  return strlen(s) == len ? s : NULL;
}

int pp_lua_hasnul(lua_State *L, int idx) {
  size_t len;
  if (lua_type(L, idx) != LUA_TSTRING)
    return 0;
  const char *s = lua_tolstring(L, idx, &len);
  return strlen(s) != len;
}

const char *pp_lua_fieldkey(lua_State *L, int idx) {
  const char *k = pp_lua_tokey(L, idx);
  return k ? k : "";
}

int pp_lua_optswitch(lua_State *L, int arg) {
  if (lua_isnone(L, arg))
    return 1;
  luaL_checktype(L, arg, LUA_TBOOLEAN);
  return lua_toboolean(L, arg);
}
