/*
 * lua_args.c: argument checks the bindings share. A choice among names
 * (luaL_checkoption) whose error lists the valid names, so misuse says
 * what would have been right: "bad argument #2 to 'cache' (invalid option
 * 'maybe'; valid: hit, miss, disk_hit)".
 */
#include "pp_lua.h"

#include <string.h>

int pp_lua_checkoption(lua_State *L, int arg, const char *def,
                       const char *const names[]) {
  const char *name = def ? luaL_optstring(L, arg, def) : luaL_checkstring(L, arg);
  for (int i = 0; names[i]; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 0; names[i]; i++) {
    if (i)
      luaL_addstring(&b, ", ");
    luaL_addstring(&b, names[i]);
  }
  luaL_pushresult(&b);
  return luaL_argerror(L, arg, lua_pushfstring(L, "invalid option '%s'; valid: %s", name,
                                               lua_tostring(L, -1)));
}
