/* pp_lua_cols.h: shared by the column store's binding files (lua_cols.c:
 * the phaseprobe.columns handle, its reads, selections and queries;
 * lua_cols_stats.c: its statistics); not installed. */
#ifndef PP_LUA_COLS_H
#define PP_LUA_COLS_H

#include "pp_lua.h"
#include "pp_parse.h"

#include <stddef.h>
#include <stdint.h>

/* The column of the field named by argument arg; -1 when no record has
 * it. */
static inline int col_of(lua_State *L, const pp_cols *c, int arg) {
  return pp_cols_find(c, pp_lua_checkcstr(L, arg));
}

/* The rows of the selection sel (nsel rows; NULL: all of c's). */
static inline size_t nrows(const pp_cols *c, const uint32_t *sel,
                           size_t nsel) {
  return sel ? nsel : pp_cols_count(c);
}

/* The optional selection argument at arg, made from the store at cols_idx
 * (another store's raises): NULL for all rows. */
const uint32_t *pp_lua_cols_opt_sel(lua_State *L, int arg, int cols_idx,
                                    size_t *n);

/* The arguments of most queries, (columns, name [, sel]), checked in
 * that order. */
typedef struct {
  pp_cols *c;
  int col;             /* -1: no record has that field */
  const uint32_t *sel; /* NULL: every record */
  size_t nsel;
} cols_query;
cols_query pp_lua_cols_query(lua_State *L);

/* The statistics methods (lua_cols_stats.c): cols:summary, cols:fit,
 * cols:fits, cols:lincomb; registered, and guarded, by lua_cols.c. */
int pp_lua_cols_summary(lua_State *L);
int pp_lua_cols_fit(lua_State *L);
int pp_lua_cols_fits(lua_State *L);
int pp_lua_cols_lincomb(lua_State *L);

#endif
