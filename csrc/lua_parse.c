/* lua_parse.c: placeholder until the parse binding lands; pp.parse is an empty table. */
#include "pp_lua.h"

int pp_lua_open_parse(lua_State *L) {
  lua_newtable(L);
  return 1;
}
