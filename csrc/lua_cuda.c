/* lua_cuda.c: placeholder until the cuda binding lands; pp.cuda is an empty table. */
#include "pp_lua.h"

int pp_lua_open_cuda(lua_State *L) {
  lua_newtable(L);
  return 1;
}
