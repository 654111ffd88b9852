/* pp_lua.h: shared by the Lua binding files (csrc/lua_*.c); not installed. */
#ifndef PP_LUA_H
#define PP_LUA_H

#include <lauxlib.h>
#include <lua.h>

#include "pp_internal.h"
#include "pp_parse.h"

int luaopen_phaseprobe(lua_State *L);

/* Each binding area pushes its table; luaopen_phaseprobe stores it under
 * the name given in the comment. */
int pp_lua_open_ptx(lua_State *L);   /* pp.ptx     (lua_ptx.c)    */
int pp_lua_open_cuda(lua_State *L);  /* pp.cuda    (lua_cuda.c)   */
int pp_lua_open_parse(lua_State *L); /* pp.parse   (lua_parse.c)  */
/* With the module table on top: adds pp.cuda.cupti_* and sets pp.truth
 * (lua_truth.c). */
void pp_lua_open_truth(lua_State *L);

/* ---- records (lua_record.c) ------------------------------------------------
 * The one record type of the Lua side, "phaseprobe.record": a userdata whose
 * fields are read on access. */
/* Registers the record metatable (luaopen_phaseprobe, before any record). */
void pp_lua_open_record(lua_State *L);
/* A copy of a C record (pp.emit, pp.store). */
void pp_lua_push_record(lua_State *L, const pp_record *r);
/* Row `row` (0-based) of the columns userdata at cols_idx; view_idx, when
 * not none or nil, is a list of field names: the record shows only those. */
void pp_lua_push_row(lua_State *L, int cols_idx, size_t row, int view_idx);
/* How a u64 value reaches Lua, everywhere: an integer up to 2^63-1, the
 * nearest float above. */
void pp_lua_push_u64(lua_State *L, uint64_t v);
/* A store value: integers of an unsigned column through pp_lua_push_u64. */
void pp_lua_push_value(lua_State *L, const pp_value *v, int is_unsigned);
/* pp.parse.list(list [, opts]) -> columns: records and tables into a store. */
int pp_lua_parse_list(lua_State *L);

/* ---- column stores (lua_parse.c) ------------------------------------------ */
/* The "phaseprobe.columns" userdata; a record of a store keeps it alive. */
typedef struct {
  pp_cols *c;
  int closed;
} pp_lua_cols;
/* Pushes a columns userdata owning c. */
void pp_lua_push_cols(lua_State *L, pp_cols *c);

/* Reads the whole file at path into a string pushed on the stack and
 * returns 0; or pushes "WHAT: ..." (cannot OPEN_VERB it, a directory,
 * larger than cap bytes, more than memory holds) and returns -1. Never
 * raises for the file's sake (lua_ptx.c). */
int pp_lua_push_file(lua_State *L, const char *path, uint64_t cap,
                     const char *what, const char *open_verb);

/* luaL_checkoption whose error lists the valid names (lua_args.c). */
int pp_lua_checkoption(lua_State *L, int arg, const char *def,
                       const char *const names[]);

/* Gives the plain result table at idx a metatable that prints it as
 * "key  value" lines under `title` (lua_show.c), for the REPL. */
void pp_lua_show(lua_State *L, int idx, const char *title);

/* luaL_Stream-like release pattern shared by handle types: see lfs. */
#define PP_CHECK_OPEN(L, cond, kind) luaL_argcheck(L, (cond), 1, "closed " kind)

#endif
