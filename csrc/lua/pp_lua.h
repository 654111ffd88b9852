/* pp_lua.h: shared by the Lua binding files (csrc/lua_*.c); not installed. */
#ifndef PP_LUA_H
#define PP_LUA_H

#include <lauxlib.h>
#include <lua.h>

#include "pp_internal.h"

int luaopen_phaseprobe(lua_State *L);

/* Each binding area pushes its table; luaopen_phaseprobe stores it under
 * the name given in the comment. */
int pp_lua_open_ptx(lua_State *L);   /* pp.ptx     (lua_ptx.c)    */
int pp_lua_open_cuda(lua_State *L);  /* pp.cuda    (lua_cuda.c)   */
int pp_lua_open_parse(lua_State *L); /* pp.parse   (lua_parse.c)  */
/* With the module table on top: adds pp.cuda.cupti_* and sets pp.truth
 * (lua_truth.c). */
void pp_lua_open_truth(lua_State *L);

/* Records as Lua tables: name = value for every field (integers; strings for
 * kernel_src and tags), with a metatable whose __tostring prints the line.
 * The metatable also answers r._prefix and r._fields (field names in line
 * order, a read-only view). */
void pp_lua_push_record(lua_State *L, const pp_record *r);
/* Pushes the shared record metatable for this prefix and field order
 * (cached while some record holds it). */
void pp_lua_push_record_mt(lua_State *L, const char *prefix,
                           const char *const *fields, size_t nfields);

/* Reads the whole file at path into a string pushed on the stack and
 * returns 0; or pushes "WHAT: ..." (cannot OPEN_VERB it, a directory,
 * larger than cap bytes, more than memory holds) and returns -1. Never
 * raises for the file's sake (lua_ptx.c). */
int pp_lua_push_file(lua_State *L, const char *path, uint64_t cap,
                     const char *what, const char *open_verb);

/* C strings from Lua (lua_args.c): a name, path or option must not hold a
 * NUL byte, which C would cut. pp_lua_checkname: a string (numbers are not
 * converted) without NUL, or an argument error; pp_lua_optname: the same,
 * or def for none/nil; pp_lua_checkoption: luaL_checkoption with the NUL
 * check; pp_lua_tocname: the string
 * at stack index idx (a table key or value), NULL when it is not a string,
 * raising "WHAT: a name contains a NUL byte" when it holds one;
 * pp_lua_hasnul: whether the value at idx is a string holding a NUL. */
const char *pp_lua_checkname(lua_State *L, int arg);
const char *pp_lua_optname(lua_State *L, int arg, const char *def);
/* luaL_checkstring (numbers converted) with the NUL check, at an argument
 * or any stack index. */
const char *pp_lua_checkcstr(lua_State *L, int idx);
int pp_lua_checkoption(lua_State *L, int arg, const char *def,
                       const char *const lst[]);
const char *pp_lua_tocname(lua_State *L, int idx, const char *what);
int pp_lua_hasnul(lua_State *L, int idx);

/* luaL_Stream-like release pattern shared by handle types: see lfs. */
#define PP_CHECK_OPEN(L, cond, kind) luaL_argcheck(L, (cond), 1, "closed " kind)

#endif
