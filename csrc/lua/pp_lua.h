/*
 * pp_lua.h: shared by the Lua binding files (csrc/lua/lua_*.c); not
 * installed. phaseprobe.so is these files over the C core: one binding file
 * per core area (the module: lua_module.c; the probe: lua_phaseprobe.c;
 * schemas: lua_schema.c; the store, sinks and notices: lua_sink.c; records:
 * lua_record.c; the parser and the column store: lua_parse.c, lua_cols.c;
 * statistics: lua_stats.c; PTX: lua_ptx.c; CUDA: lua_cuda*.c,
 * lua_cupti.c), their
 * classes made by one helper (lua_class.c), files read by one (lua_file.c).
 */
#ifndef PP_LUA_H
#define PP_LUA_H

#include <lauxlib.h>
#include <lua.h>

#include "pp_internal.h"
#include "pp_lua_class.h"
#include "pp_parse.h"
#include "pp_stats.h"

int luaopen_phaseprobe(lua_State *L);

/* With the module table on top, each adds its functions to it: the
 * probe's entry points, pp.enable to pp.emit (lua_phaseprobe.c); schema
 * handles, pp.schema, pp.use, pp.default_schema (lua_schema.c); pp.store,
 * pp.sink, pp.flush, pp.notices, pp.stats, pp.isatty (lua_sink.c). */
void pp_lua_open_probe(lua_State *L);
void pp_lua_open_schema(lua_State *L);
void pp_lua_open_sink(lua_State *L);
/* Each binding area pushes its table; luaopen_phaseprobe stores it under
 * the name given in the comment. */
int pp_lua_open_ptx(lua_State *L);   /* pp.ptx     (lua_ptx.c)    */
int pp_lua_open_cuda(lua_State *L);  /* pp.cuda    (lua_cuda.c)   */
int pp_lua_open_parse(lua_State *L); /* pp.parse   (lua_parse.c)  */
int pp_lua_open_numeric(lua_State *L); /* pp.numeric (lua_stats.c) */
int pp_lua_open_text(lua_State *L);    /* pp.text    (lua_text.c)   */
/* Registers the column store's classes (lua_cols.c); pp_lua_open_parse
 * calls it. */
void pp_lua_open_cols(lua_State *L);
/* Pushes a phaseprobe.columns object that owns c (lua_cols.c). */
void pp_lua_push_cols(lua_State *L, pp_cols *c);
/* With the module table on top: adds pp.cuda.cupti_* (lua_cupti.c). */
void pp_lua_open_cupti(lua_State *L);
/* Starts CUPTI collection (one more start, lua_cupti.c): 0, or nil and why
 * pushed and 2 returned, when CUPTI is not available here or does not
 * start. */
int pp_lua_cupti_start(lua_State *L);

/* ---- records (lua_record.c) ------------------------------------------------
 * The one record type of the Lua side, "phaseprobe.record": a userdata whose
 * fields are read on access. */
/* Registers the record metatable (luaopen_phaseprobe, before any record). */
void pp_lua_open_record(lua_State *L);
/* A copy of a C record (pp.emit, pp.store). */
void pp_lua_push_record(lua_State *L, const pp_record *r);
/* pp.emit{...} -> record (lua_emit.c). */
int pp_lua_emit(lua_State *L);
/* Row `row` (0-based) of the columns userdata at cols_idx; view_idx, when
 * not none or nil, is a list of field names: the record shows only those. */
void pp_lua_push_row(lua_State *L, int cols_idx, size_t row, int view_idx);
/* How a u64 value reaches Lua, everywhere: an integer up to 2^63-1, the
 * nearest float above. */
void pp_lua_push_u64(lua_State *L, uint64_t v);
/* A store value: integers of an unsigned column through pp_lua_push_u64. */
void pp_lua_push_value(lua_State *L, const pp_value *v);

/* ---- lists of records (lua_parse_list.c) ---------------------------------- */
/* pp.parse.list(list [, opts]) -> columns: records and tables into a store. */
int pp_lua_parse_list(lua_State *L);

/* ---- column stores (lua_cols.c) ------------------------------------------- */
/* The store of the open "phaseprobe.columns" handle at idx: NULL when the
 * value is none or its handle was closed (test), or raising then (check).
 * A record of a store keeps the handle alive. */
pp_cols *pp_lua_test_cols(lua_State *L, int idx);
pp_cols *pp_lua_check_cols(lua_State *L, int idx);

/* t[k] = v for the table on top of the stack. */
static inline void pp_lua_set_int(lua_State *L, const char *k, uint64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

static inline void pp_lua_set_num(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

/* Schema handles (phaseprobe.schema, owned by lua_schema.c): pushes one
 * for s; the schema of the handle at idx, or NULL when it is none. */
void pp_lua_push_schema(lua_State *L, const pp_schema *s);
const pp_schema *pp_lua_test_schema(lua_State *L, int idx);

/* A summary and a line fit as the Lua tables of pp.numeric (lua_stats.c);
 * with uns, an exact min and max are unsigned 64-bit values. */
void pp_lua_push_summary(lua_State *L, const pp_summary *s);
void pp_lua_push_fit(lua_State *L, const pp_fit *f);

/* Reads the file at path into a string pushed on the stack and returns 0;
 * or pushes "WHAT: ..." (cannot OPEN_VERB it, a directory, larger than cap
 * bytes, more than memory holds) and returns -1. Never raises for the
 * file's sake (lua_file.c). Reading stops at the first NUL byte of PTX
 * text, setting *cut: PP_FILE_PTX_TEXT keeps that byte (text for the
 * scanner, which reports it), PP_FILE_IMAGE ends the text before it (an
 * image for cuModuleLoadData, which reads PTX up to its first NUL; a cubin
 * or fatbin is read whole). */
enum { PP_FILE_PTX_TEXT, PP_FILE_IMAGE };
int pp_lua_push_file(lua_State *L, const char *path, uint64_t cap,
                     const char *what, const char *open_verb, int mode,
                     int *cut);

/* C strings from Lua (lua_args.c): a name, path or option must not hold a
 * NUL byte, which C would cut. pp_lua_checkname: a string (numbers are not
 * converted) without NUL, or an argument error; pp_lua_optname: the same,
 * or def for none/nil; pp_lua_checkoption: luaL_checkoption with the NUL
 * check; pp_lua_tocname: the string
 * at stack index idx (a table key or value), NULL when it is not a string,
 * raising "WHAT: a name contains a NUL byte" when it holds one;
 * pp_lua_tokey: the same, but NULL for a string holding a NUL too (an
 * options table's key that names no field; never raises);
 * pp_lua_hasnul: whether the value at idx is a string holding a NUL. */
const char *pp_lua_checkname(lua_State *L, int arg);
const char *pp_lua_optname(lua_State *L, int arg, const char *def);
/* luaL_checkstring (numbers converted) with the NUL check, at an argument
 * or any stack index. */
const char *pp_lua_checkcstr(lua_State *L, int idx);
int pp_lua_checkoption(lua_State *L, int arg, const char *def,
                       const char *const lst[]);
const char *pp_lua_tocname(lua_State *L, int idx, const char *what);
const char *pp_lua_tokey(lua_State *L, int idx);
int pp_lua_hasnul(lua_State *L, int idx);
/* pp_lua_tokey, or "" (which names no field) where that is NULL: for the
 * getters (__index for fields) and options compared with strcmp, so
 * obj["closed\0x"] finds no "closed". */
const char *pp_lua_fieldkey(lua_State *L, int idx);
/* An optional boolean switch (pp.enable(on), pp.store.enable(on)): none is
 * true; anything but a boolean is refused (0 and "no" are true in Lua). */
int pp_lua_optswitch(lua_State *L, int arg);

/* Gives the plain result table at idx a metatable that prints it as
 * "key  value" lines under `title` (lua_show.c), for the REPL. */
void pp_lua_show(lua_State *L, int idx, const char *title);

#endif
