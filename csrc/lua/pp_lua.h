/*
 * pp_lua.h: shared by the Lua binding files (csrc/lua/lua_*.c); not
 * installed. phaseprobe.so is these files over the C core: one binding file
 * per core area (the probe: lua_phaseprobe.c; records: lua_record.c; the
 * parser and the column store: lua_parse.c, lua_cols.c; statistics:
 * lua_stats.c; PTX: lua_ptx.c; CUDA: lua_cuda*.c, lua_cupti.c), their
 * classes made by one helper (lua_class.c), files read by one (lua_file.c).
 */
#ifndef PP_LUA_H
#define PP_LUA_H

#include <lauxlib.h>
#include <lua.h>

#include "pp_internal.h"
#include "pp_lua_class.h"
#include "pp_stats.h"

int luaopen_phaseprobe(lua_State *L);

/* Each binding area pushes its table; luaopen_phaseprobe stores it under
 * the name given in the comment. */
int pp_lua_open_ptx(lua_State *L);   /* pp.ptx     (lua_ptx.c)    */
int pp_lua_open_cuda(lua_State *L);  /* pp.cuda    (lua_cuda.c)   */
int pp_lua_open_parse(lua_State *L); /* pp.parse   (lua_parse.c)  */
int pp_lua_open_numeric(lua_State *L); /* pp.numeric (lua_stats.c) */
/* Registers the column store's classes (lua_cols.c); pp_lua_open_parse
 * calls it. */
void pp_lua_open_cols(lua_State *L);
/* Pushes a phaseprobe.columns object that owns c (lua_cols.c). */
struct pp_cols;
void pp_lua_push_cols(lua_State *L, struct pp_cols *c);
/* With the module table on top: adds pp.cuda.cupti_* (lua_cupti.c). */
void pp_lua_open_cupti(lua_State *L);

/* Records as Lua tables: name = value for every field (integers; strings for
 * kernel_src and tags), with a metatable whose __tostring prints the line.
 * The metatable also answers r._prefix and r._fields (field names in line
 * order, a read-only view). */
void pp_lua_push_record(lua_State *L, const pp_record *r);
/* Pushes the shared record metatable for this prefix and field order
 * (cached while some record holds it). */
void pp_lua_push_record_mt(lua_State *L, const char *prefix,
                           const char *const *fields, size_t nfields);

/* t[k] = v for the table on top of the stack. */
static inline void pp_lua_set_int(lua_State *L, const char *k, uint64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

static inline void pp_lua_set_num(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

/* Schema handles (phaseprobe.schema, owned by lua_phaseprobe.c): pushes one
 * for s; the schema of the handle at idx, or NULL when it is none. */
void pp_lua_push_schema(lua_State *L, const pp_schema *s);
const pp_schema *pp_lua_test_schema(lua_State *L, int idx);

/* A summary and a line fit as the Lua tables of pp.numeric (lua_stats.c);
 * with uns, an exact min and max are unsigned 64-bit values. */
void pp_lua_push_summary(lua_State *L, const pp_summary *s, int uns);
void pp_lua_push_fit(lua_State *L, const pp_fit *f);

/* Reads the whole file at path into a string pushed on the stack and
 * returns 0; or pushes "WHAT: ..." (cannot OPEN_VERB it, a directory,
 * larger than cap bytes, more than memory holds) and returns -1. Never
 * raises for the file's sake (lua_file.c). */
int pp_lua_push_file(lua_State *L, const char *path, uint64_t cap,
                     const char *what, const char *open_verb);


#endif
