/*
 * lua_stats.c: pp.numeric, the Lua binding of the statistics
 * implementation (csrc/stats/numeric.c, pp_stats.h), and the tables that
 * every summary and fit is given to Lua as (the column store's
 * cols:summary, cols:fit, cols:fits and cols:lincomb use them too).
 *
 * Lua's analysis and reports (phaseprobe.analysis.fit, the HTML report, the
 * demo) take their medians, means and line fits from here, so one
 * implementation answers everywhere.
 *
 *   pp.numeric.summary(xs) -> {count=, min=, max=, sum=, mean=, median=,
 *                              p90=, p99= [, nan=]}
 *       xs: a sequence of numbers (read up to its raw length; __len is
 *       not consulted). Quantiles are type 7 (the median of an even count
 *       is the mean of the middle two). An empty sequence gives {count=0}.
 *       NaNs are no values: left out of every figure, count included, and
 *       counted in nan (present when there are any), so the order of the
 *       values never matters; infinities are ordinary values. A summary of
 *       integers (the column store's) also carries _raw: each figure as
 *       exact decimal text.
 *
 *   pp.numeric.fit(xs, ys) -> {n=, distinct_x=, ok=, xmin=, xmax=, ymedian=,
 *                              ls={intercept=, slope=, r2=},
 *                              ts={intercept=, slope=, r2=, quality=,
 *                                  pairs=, sampled=}}
 *       ys against xs (the same length). ls: least squares; ts: Theil-Sen
 *       (median of pairwise slopes over pairs of distinct x, a fixed-seed
 *       sample past 200,000 pairs; quality = 1 - MAD(residuals) / MAD(y)
 *       in [0, 1]). ok is false when fewer than 2 distinct x values leave
 *       no slope to tell (slopes 0, intercepts the mean and median of ys).
 *       With n == 0 only n, distinct_x and ok are set. A point with a NaN
 *       coordinate is no point: left out, and counted in nan (present when
 *       there are any).
 *
 * Not to be confused with pp.stats(), the probe's emission counters.
 * Misuse raises: a non-table argument, an element that is not a number
 * (naming its index), sequences of different lengths.
 */
#include "pp_lua.h"
#include "pp_stats.h"

#include <stdint.h>
#include <string.h>

/* An exact integer, or a float when it is a u64 above 2^63-1 (as every
 * u64 value reaches Lua: pp_lua_push_u64). */
static void set_exact(lua_State *L, const char *k, int64_t v, int u64) {
  if (u64)
    pp_lua_push_u64(L, (uint64_t)v);
  else
    lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

void pp_lua_push_summary(lua_State *L, const pp_summary *s) {
  lua_createtable(L, 0, 10);
  pp_lua_set_int(L, "count", s->count);
  if (s->nan)
    pp_lua_set_int(L, "nan", s->nan);
  if (s->count == 0)
    return;
  if (s->exact) {
    set_exact(L, "min", s->imin, s->imin_u64);
    set_exact(L, "max", s->imax, s->imax_u64);
    if (s->isum_fits)
      set_exact(L, "sum", s->isum, 0);
    else
      pp_lua_set_num(L, "sum", s->sum);
    /* every figure exactly, as decimal text (what --raw prints) */
    const struct {
      const char *k, *text;
    } raw[] = {{"min", s->text.min},       {"max", s->text.max},
               {"sum", s->text.sum},       {"mean", s->text.mean},
               {"median", s->text.median}, {"p90", s->text.p90},
               {"p99", s->text.p99}};
    lua_createtable(L, 0, 7);
    for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++) {
      lua_pushstring(L, raw[i].text);
      lua_setfield(L, -2, raw[i].k);
    }
    lua_setfield(L, -2, "_raw");
  } else {
    pp_lua_set_num(L, "min", s->min);
    pp_lua_set_num(L, "max", s->max);
    pp_lua_set_num(L, "sum", s->sum);
  }
  pp_lua_set_num(L, "mean", s->mean);
  pp_lua_set_num(L, "median", s->median);
  pp_lua_set_num(L, "p90", s->p90);
  pp_lua_set_num(L, "p99", s->p99);
}

void pp_lua_push_fit(lua_State *L, const pp_fit *f) {
  lua_createtable(L, 0, 10);
  pp_lua_set_int(L, "n", f->n);
  pp_lua_set_int(L, "distinct_x", f->distinct_x);
  lua_pushboolean(L, f->ok);
  lua_setfield(L, -2, "ok");
  if (f->nan)
    pp_lua_set_int(L, "nan", f->nan);
  if (f->n == 0)
    return;
  pp_lua_set_num(L, "xmin", f->xmin);
  pp_lua_set_num(L, "xmax", f->xmax);
  pp_lua_set_num(L, "ymedian", f->ymedian);
  lua_createtable(L, 0, 3);
  pp_lua_set_num(L, "intercept", f->ls_intercept);
  pp_lua_set_num(L, "slope", f->ls_slope);
  pp_lua_set_num(L, "r2", f->ls_r2);
  lua_setfield(L, -2, "ls");
  lua_createtable(L, 0, 6);
  pp_lua_set_num(L, "intercept", f->ts_intercept);
  pp_lua_set_num(L, "slope", f->ts_slope);
  pp_lua_set_num(L, "r2", f->ts_r2);
  pp_lua_set_num(L, "quality", f->ts_quality);
  pp_lua_set_int(L, "pairs", f->ts_pairs);
  lua_pushboolean(L, f->ts_sampled);
  lua_setfield(L, -2, "sampled");
  lua_setfield(L, -2, "ts");
}

/* The numbers of the sequence at arg, up to its raw length, in a userdata
 * left on the stack (collected with it, whatever raises later). */
static double *check_numbers(lua_State *L, int arg, size_t *n) {
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_Integer len = (lua_Integer)lua_rawlen(L, arg);
  luaL_argcheck(L, (lua_Unsigned)len <= SIZE_MAX / sizeof(double), arg,
                "too many numbers");
  double *a = lua_newuserdatauv(L, (size_t)(len ? len : 1) * sizeof *a, 0);
  for (lua_Integer i = 1; i <= len; i++) {
    lua_rawgeti(L, arg, i);
    int ok;
    a[i - 1] = lua_tonumberx(L, -1, &ok);
    if (!ok)
      luaL_argerror(L, arg, lua_pushfstring(L, "element %d is %s, not a number",
                                            (int)i, luaL_typename(L, -1)));
    lua_pop(L, 1);
  }
  *n = (size_t)len;
  return a;
}

/* pp.numeric.summary(xs) -> summary */
static int l_summary(lua_State *L) {
  size_t n;
  double *a = check_numbers(L, 1, &n);
  pp_summary s;
  pp_summarize(a, n, &s);
  pp_lua_push_summary(L, &s);
  return 1;
}

/* pp.numeric.fit(xs, ys) -> fit */
static int l_fit(lua_State *L) {
  size_t nx, ny;
  double *x = check_numbers(L, 1, &nx);
  double *y = check_numbers(L, 2, &ny);
  luaL_argcheck(L, nx == ny, 2, "xs and ys differ in length");
  pp_fit f;
  if (pp_fit_line(x, y, nx, &f) != 0)
    return luaL_error(L, "phaseprobe.numeric.fit: out of memory");
  pp_lua_push_fit(L, &f);
  return 1;
}

static const luaL_Reg numeric_fns[] = {
    {"summary", l_summary}, {"fit", l_fit}, {NULL, NULL}};

int pp_lua_open_numeric(lua_State *L) {
  luaL_newlib(L, numeric_fns);
  return 1;
}
