/*
 * lua_cols_stats.c: statistics over a column store, the methods of
 * phaseprobe.columns that answer with the tables of pp.numeric
 * (lua_stats.c pushes them): cols:summary(name [, sel]), cols:fit(x, y
 * [, sel]), cols:fits({x...}, {y...} [, sel]) and cols:lincomb(terms [,
 * sel [, floor]]). The store computes them (csrc/parse/cols_query.c, one
 * implementation in csrc/stats/); lua_cols.c registers these methods and
 * runs each through its guard.
 */
#include "pp_lua_cols.h"

#include <stdlib.h>
#include <string.h>

/* cols:summary(name [, sel]) -> {count, min, median, mean, p90, p99, max, sum}
 */
int pp_lua_cols_summary(lua_State *L) {
  cols_query q = pp_lua_cols_query(L);
  pp_summary s;
  memset(&s, 0, sizeof s);
  if (q.col >= 0 && pp_cols_summary(q.c, (size_t)q.col, q.sel, q.nsel, &s) != 0)
    return luaL_error(L, "phaseprobe.columns: out of memory");
  pp_lua_push_summary(L, &s);
  return 1;
}

/* cols:fit(xname, yname [, sel]) -> fit table */
int pp_lua_cols_fit(lua_State *L) {
  pp_cols *c = pp_lua_check_cols(L, 1);
  int xc = col_of(L, c, 2), yc = col_of(L, c, 3);
  size_t nsel;
  const uint32_t *sel = pp_lua_cols_opt_sel(L, 4, 1, &nsel);
  pp_fit f;
  memset(&f, 0, sizeof f);
  if (xc >= 0 && yc >= 0 &&
      pp_cols_fit(c, (size_t)xc, (size_t)yc, sel, nsel, &f) != 0)
    return luaL_error(L, "phaseprobe.columns: out of memory");
  pp_lua_push_fit(L, &f);
  return 1;
}

/* Reads a list of field names into column indices (-1: absent). */
static size_t read_cols(lua_State *L, const pp_cols *c, int arg, int *out,
                        size_t max) {
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_Integer n = (lua_Integer)lua_rawlen(L, arg);
  luaL_argcheck(L, n >= 0 && (size_t)n <= max, arg, "too many names");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, arg, i);
    out[i - 1] = pp_cols_find(c, pp_lua_checkcstr(L, -1));
    lua_pop(L, 1);
  }
  return (size_t)n;
}

/* cols:fits({x...}, {y...} [, sel]) -> {[y] = {[x] = fit}}: every y against
 * every x, reading each column once */
int pp_lua_cols_fits(lua_State *L) {
  pp_cols *c = pp_lua_check_cols(L, 1);
  int xi[256], yi[256];
  size_t nx = read_cols(L, c, 2, xi, 256), ny = read_cols(L, c, 3, yi, 256);
  size_t nsel;
  const uint32_t *sel = pp_lua_cols_opt_sel(L, 4, 1, &nsel);
  size_t xc[256], yc[256], kx = 0, ky = 0;
  for (size_t a = 0; a < nx; a++)
    if (xi[a] >= 0)
      xc[kx++] = (size_t)xi[a];
  for (size_t b = 0; b < ny; b++)
    if (yi[b] >= 0)
      yc[ky++] = (size_t)yi[b];
  size_t nf = kx * ky > 0 ? kx * ky : 1;
  pp_fit *f = lua_newuserdatauv(L, nf * sizeof *f, 0);
  memset(f, 0, nf * sizeof *f);
  if (kx && ky && pp_cols_fit_many(c, xc, kx, yc, ky, sel, nsel, f) != 0)
    return luaL_error(L, "phaseprobe.columns: out of memory");
  pp_fit empty;
  memset(&empty, 0, sizeof empty);
  lua_createtable(L, 0, (int)ny);
  for (size_t b = 0, jb = 0; b < ny; b++) {
    lua_createtable(L, 0, (int)nx);
    for (size_t a = 0, ja = 0; a < nx; a++) {
      if (yi[b] >= 0 && xi[a] >= 0)
        pp_lua_push_fit(L, &f[jb * kx + ja]);
      else
        pp_lua_push_fit(L, &empty);
      lua_rawgeti(L, 2, (lua_Integer)a + 1);
      lua_insert(L, -2);
      lua_rawset(L, -3);
      if (xi[a] >= 0)
        ja++;
    }
    lua_rawgeti(L, 3, (lua_Integer)b + 1);
    lua_insert(L, -2);
    lua_rawset(L, -3);
    if (yi[b] >= 0)
      jb++;
  }
  return 1;
}

/* cols:lincomb({{name, coef}, ...} [, sel [, floor]]) -> summary of the
 * per-record sums (records lacking a term are left out; with floor, sums
 * below it count as floor) */
int pp_lua_cols_lincomb(lua_State *L) {
  pp_cols *c = pp_lua_check_cols(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  size_t nsel;
  const uint32_t *sel = pp_lua_cols_opt_sel(L, 3, 1, &nsel);
  int clamp = !lua_isnoneornil(L, 4);
  double floor = clamp ? luaL_checknumber(L, 4) : 0;
  lua_Integer nt = (lua_Integer)lua_rawlen(L, 2);
  luaL_argcheck(L, nt >= 1 && nt <= 256, 2, "1 to 256 terms");
  size_t cols[256];
  double coef[256];
  int missing = 0;
  for (lua_Integer i = 1; i <= nt; i++) {
    lua_rawgeti(L, 2, i);
    luaL_argcheck(L, lua_istable(L, -1), 2, "each term is {name, coefficient}");
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    int col = pp_cols_find(c, pp_lua_checkcstr(L, -2));
    coef[i - 1] = luaL_checknumber(L, -1);
    if (col < 0)
      missing = 1;
    else
      cols[i - 1] = (size_t)col;
    lua_pop(L, 3);
  }
  pp_summary s;
  memset(&s, 0, sizeof s);
  if (!missing) {
    size_t n = nrows(c, sel, nsel);
    double *out = malloc((n ? n : 1) * sizeof *out);
    if (!out)
      return luaL_error(L, "phaseprobe.columns: out of memory");
    size_t m = pp_cols_lincomb(c, cols, coef, (size_t)nt, sel, nsel, clamp,
                               floor, out);
    pp_summarize(out, m, &s);
    free(out);
  }
  pp_lua_push_summary(L, &s);
  return 1;
}
