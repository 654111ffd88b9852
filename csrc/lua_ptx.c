/* lua_ptx.c: placeholder until the ptx binding lands; pp.ptx is an empty table. */
#include "pp_lua.h"

int pp_lua_open_ptx(lua_State *L) {
  lua_newtable(L);
  return 1;
}
