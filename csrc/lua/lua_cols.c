/*
 * lua_cols.c: the column store (pp_cols, csrc/parse/cols.c) as a Lua
 * object, phaseprobe.columns, and its selections. pp.parse (lua_parse.c)
 * hands its results over as columns; the Lua record sets
 * (lua/phaseprobe/records.lua) are built on these methods.
 *
 *   local cols = pp.parse.file("run.log")
 *   #cols, cols:count()                    records
 *   cols:fields(), cols:kind(name)         field names, a field's kind
 *   cols:row(i [, names]), cols:get(name, i), cols:line(i),
 *   cols:values(name [, sel [, "text"]])
 *   cols:where(name, value), cols:range(name, lo, hi),
 *   cols:compare(name, op, text), cols:select(rows)
 *                                          -> selection (rows of this store)
 *   cols:summary(name [, sel]), cols:fit(x, y [, sel]),
 *   cols:fits({x...}, {y...} [, sel]), cols:lincomb({{name, coef}...} [, sel
 *     [, floor]])                          the tables of pp.numeric
 *                                          (lua_cols_stats.c)
 *   cols:group(name [, sel]), cols:distinct(name [, sel]), cols:prefixes(),
 *   cols:order(name [, sel]), cols:bytes(), cols:close()
 *
 * A selection (phaseprobe.selection) is a sorted list of rows that keeps
 * its store alive (user value 1) and is refused by any other store.
 */
#include "pp_lua_cols.h"

#include <stdlib.h>
#include <string.h>

#define COLS_MT "phaseprobe.columns"
#define SEL_MT "phaseprobe.selection"

typedef struct {
  pp_cols *c;
  int closed;
  int busy; /* methods of it running (see guard) */
} cols_ud;

typedef struct {
  size_t n;
  uint32_t rows[];
} sel_ud;

/* ---- columns userdata ---------------------------------------------------- */
void pp_lua_push_cols(lua_State *L, pp_cols *c) {
  cols_ud *u = pp_lua_newobj(L, sizeof *u, 1);
  u->c = c;
  u->closed = 0;
  u->busy = 0;
  pp_lua_setclass(L, COLS_MT);
  lua_newtable(L); /* layout -> field list of its records (lua_record.c) */
  lua_setiuservalue(L, -2, 1);
}

static pp_cols *check_cols(lua_State *L, int i) {
  cols_ud *u = pp_lua_checkudata(L, i, COLS_MT);
  PP_CHECK_OPEN(L, !u->closed, "columns");
  return u->c;
}

/* COLS_MT's one owner: other files reach a handle's store through these. */
pp_cols *pp_lua_check_cols(lua_State *L, int idx) { return check_cols(L, idx); }

pp_cols *pp_lua_test_cols(lua_State *L, int idx) {
  cols_ud *u = pp_lua_testudata(L, idx, COLS_MT);
  return u && !u->closed ? u->c : NULL;
}

/* ---- selections ---------------------------------------------------------- */
static sel_ud *push_sel(lua_State *L, int cols_idx, const uint32_t *rows,
                        size_t n) {
  cols_idx = lua_absindex(L, cols_idx);
  sel_ud *s = pp_lua_newobj(L, sizeof *s + n * sizeof(uint32_t), 1);
  s->n = n;
  if (n)
    memcpy(s->rows, rows, n * sizeof *rows);
  pp_lua_setclass(L, SEL_MT);
  lua_pushvalue(L, cols_idx);
  lua_setiuservalue(L, -2, 1);
  return s;
}

const uint32_t *pp_lua_cols_opt_sel(lua_State *L, int arg, int cols_idx,
                                    size_t *n) {
  *n = 0;
  if (lua_isnoneornil(L, arg))
    return NULL;
  sel_ud *s = pp_lua_checkudata(L, arg, SEL_MT);
  lua_getiuservalue(L, arg, 1);
  int same = lua_rawequal(L, -1, cols_idx);
  lua_pop(L, 1);
  luaL_argcheck(L, same, arg, "selection made from another record store");
  *n = s->n;
  return s->rows;
}

/* Room for the row indices a query picks out of the selection sel (nsel
 * rows; NULL: all of c's): a userdata left on the stack, so it goes with
 * the call; at least one slot. */
static uint32_t *sel_room(lua_State *L, const pp_cols *c, const uint32_t *sel,
                          size_t nsel) {
  size_t n = nrows(c, sel, nsel);
  return lua_newuserdatauv(L, (n ? n : 1) * sizeof(uint32_t), 0);
}

/* Every row of the selection sel (NULL: all of c's) into out; returns how
 * many. */
static size_t every_row(const pp_cols *c, const uint32_t *sel, size_t nsel,
                        uint32_t *out) {
  size_t n = nrows(c, sel, nsel);
  for (size_t i = 0; i < n; i++)
    out[i] = (uint32_t)(sel ? sel[i] : i);
  return n;
}

static int sel_len(lua_State *L) {
  sel_ud *s = pp_lua_checkudata(L, 1, SEL_MT);
  lua_pushinteger(L, (lua_Integer)s->n);
  return 1;
}

/* sel:indices() -> {row, ...} (1-based) */
static int sel_indices(lua_State *L) {
  sel_ud *s = pp_lua_checkudata(L, 1, SEL_MT);
  lua_createtable(L, (int)s->n, 0);
  for (size_t i = 0; i < s->n; i++) {
    lua_pushinteger(L, (lua_Integer)s->rows[i] + 1);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* sel:get(i) -> row (1-based), nil past the end */
static int sel_get(lua_State *L) {
  sel_ud *s = pp_lua_checkudata(L, 1, SEL_MT);
  lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 1 || (size_t)i > s->n)
    return 0;
  lua_pushinteger(L, (lua_Integer)s->rows[i - 1] + 1);
  return 1;
}

static int sel_tostring(lua_State *L) {
  sel_ud *s = pp_lua_checkudata(L, 1, SEL_MT);
  lua_pushfstring(L, "phaseprobe.selection (%d records)", (int)s->n);
  return 1;
}

/* ---- column methods ------------------------------------------------------ */
static int cols_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)pp_cols_count(check_cols(L, 1)));
  return 1;
}

static int cols_fields(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  size_t n = pp_cols_nfields(c);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, pp_cols_name(c, pp_cols_field_column(c, i)));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static int cols_kind(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  int col = col_of(L, c, 2);
  static const char *const names[] = {"none", "integer", "number", "string"};
  if (col < 0)
    return 0;
  lua_pushstring(L, names[pp_cols_kind(c, (size_t)col)]);
  return 1;
}

static size_t check_row(lua_State *L, const pp_cols *c, int arg) {
  lua_Integer i = luaL_checkinteger(L, arg);
  luaL_argcheck(L, i >= 1 && (size_t)i <= pp_cols_count(c), arg,
                "record index out of range");
  return (size_t)i - 1;
}

static int cols_row(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  size_t row = check_row(L, c, 2);
  pp_lua_push_row(L, 1, row, 3);
  return 1;
}

/* cols:get(i, name) -> value or nil ("@file", "@line" too) */
static int cols_get(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  size_t row = check_row(L, c, 2);
  int col = col_of(L, c, 3);
  if (col < 0)
    return 0;
  pp_value v;
  pp_cols_get(c, (size_t)col, row, &v);
  pp_lua_push_value(L, &v);
  return 1;
}

/* cols:line(i) -> the record's line */
static int cols_line(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  size_t row = check_row(L, c, 2);
  char small[1024];
  size_t n = pp_cols_format(c, row, small, sizeof small);
  if (n < sizeof small) {
    lua_pushlstring(L, small, n);
    return 1;
  }
  luaL_Buffer b;
  char *big = luaL_buffinitsize(L, &b, n + 1);
  pp_cols_format(c, row, big, n + 1);
  luaL_pushresultsize(&b, n);
  return 1;
}

/* The arguments (columns, name [, sel]) of most queries. */
cols_query pp_lua_cols_query(lua_State *L) {
  cols_query q;
  q.c = check_cols(L, 1);
  q.col = col_of(L, q.c, 2);
  q.sel = pp_lua_cols_opt_sel(L, 3, 1, &q.nsel);
  return q;
}

/* The arguments (columns [, sel]) of a query over whole records. */
static cols_query records_args(lua_State *L) {
  cols_query q;
  q.c = check_cols(L, 1);
  q.col = -1;
  q.sel = pp_lua_cols_opt_sel(L, 2, 1, &q.nsel);
  return q;
}

/* cols:values(name [, sel [, "value" | "text"]]) -> {present values, in
 * row order}: as Lua values (a u64 above 2^63-1 as the nearest float), or
 * as the exact texts the record lines print */
static int cols_values(lua_State *L) {
  static const char *const as_names[] = {"value", "text", NULL};
  cols_query q = pp_lua_cols_query(L);
  int as_text = pp_lua_checkoption(L, 4, "value", as_names) == 1;
  size_t n = nrows(q.c, q.sel, q.nsel);
  lua_createtable(L, q.col < 0 ? 0 : (int)n, 0);
  if (q.col < 0)
    return 1;
  lua_Integer out = 1;
  pp_value v;
  char small[64];
  for (size_t i = 0; i < n; i++) {
    size_t row = q.sel ? q.sel[i] : i;
    pp_cols_get(q.c, (size_t)q.col, row, &v);
    if (v.kind == PP_VAL_NONE)
      continue;
    if (!as_text) {
      pp_lua_push_value(L, &v);
    } else if (v.kind == PP_VAL_STR) {
      lua_pushlstring(L, v.s, v.len);
    } else {
      size_t len = pp_cols_text(q.c, (size_t)q.col, row, small, sizeof small);
      if (len < sizeof small) {
        lua_pushlstring(L, small, len);
      } else {
        luaL_Buffer b;
        char *dst = luaL_buffinitsize(L, &b, len + 1);
        pp_cols_text(q.c, (size_t)q.col, row, dst, len + 1);
        luaL_pushresultsize(&b, len);
      }
    }
    lua_rawseti(L, -2, out++);
  }
  return 1;
}

/* A number argument as a value: an integer stays one (compared exactly),
 * else a float. Raises when it is no number. */
static void number_value(lua_State *L, int arg, pp_value *v) {
  if (lua_isinteger(L, arg)) {
    v->kind = PP_VAL_INT;
    v->i = (int64_t)lua_tointeger(L, arg);
  } else {
    v->kind = PP_VAL_NUM;
    v->d = luaL_checknumber(L, arg);
  }
}

static void check_value(lua_State *L, int arg, pp_value *v) {
  memset(v, 0, sizeof *v);
  switch (lua_type(L, arg)) {
  case LUA_TNIL:
  case LUA_TNONE:
    v->kind = PP_VAL_NONE;
    break;
  case LUA_TNUMBER:
    number_value(L, arg, v);
    break;
  case LUA_TSTRING:
    v->kind = PP_VAL_STR;
    v->s = lua_tolstring(L, arg, &v->len);
    break;
  default:
    luaL_argerror(L, arg, lua_pushfstring(L, "a value is a number, a string or "
                                             "nil, not %s",
                                          luaL_typename(L, arg)));
  }
}

/* cols:where(name, value [, sel]) -> selection (value nil: records lacking
 * the field) */
static int cols_where(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  int col = col_of(L, c, 2);
  pp_value v;
  check_value(L, 3, &v);
  size_t nsel;
  const uint32_t *sel = pp_lua_cols_opt_sel(L, 4, 1, &nsel);
  uint32_t *out = sel_room(L, c, sel, nsel);
  size_t m = 0;
  if (col >= 0)
    m = pp_cols_where_eq(c, (size_t)col, &v, sel, nsel, out);
  else if (v.kind == PP_VAL_NONE)
    m = every_row(c, sel, nsel, out);
  push_sel(L, 1, out, m);
  return 1;
}

/* A bound of cols:range: nil (none), an integer or a float. */
static const pp_value *opt_bound(lua_State *L, int arg, pp_value *v) {
  memset(v, 0, sizeof *v);
  if (lua_isnoneornil(L, arg))
    return NULL;
  number_value(L, arg, v);
  return v;
}

/* cols:range(name, lo, hi [, sel]) -> selection of lo <= value <= hi,
 * compared exactly (an integer bound with a u64 or a double value) */
static int cols_range(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  int col = col_of(L, c, 2);
  pp_value a, b;
  const pp_value *lo = opt_bound(L, 3, &a), *hi = opt_bound(L, 4, &b);
  size_t nsel;
  const uint32_t *sel = pp_lua_cols_opt_sel(L, 5, 1, &nsel);
  uint32_t *out = sel_room(L, c, sel, nsel);
  size_t m = col >= 0 ? pp_cols_where_between(c, (size_t)col, lo, hi, sel, nsel, out) : 0;
  push_sel(L, 1, out, m);
  return 1;
}

/* cols:compare(name, op, text [, sel]) -> selection of the records whose
 * value meets `name op text` (op: "=", "!=", "<", "<=", ">", ">="; the
 * text a number's, compared exactly, or for = and != any text:
 * pp_cols_where_cmp) */
static int cols_compare(lua_State *L) {
  static const char *const ops[] = {"=", "!=", "<", "<=", ">", ">=", NULL};
  static const pp_cmp_op codes[] = {PP_CMP_EQ, PP_CMP_NE, PP_CMP_LT,
                                    PP_CMP_LE, PP_CMP_GT, PP_CMP_GE};
  pp_cols *c = check_cols(L, 1);
  int col = col_of(L, c, 2);
  pp_cmp_op op = codes[luaL_checkoption(L, 3, NULL, ops)];
  size_t len;
  const char *text = luaL_checklstring(L, 4, &len);
  size_t nsel;
  const uint32_t *sel = pp_lua_cols_opt_sel(L, 5, 1, &nsel);
  uint32_t *out = sel_room(L, c, sel, nsel);
  size_t m = 0;
  if (col >= 0) {
    if (pp_cols_where_cmp(c, (size_t)col, op, text, len, sel, nsel, out, &m) != 0)
      return luaL_argerror(L, 4, lua_pushfstring(L, "%s compares numbers; '%s' is not one",
                                                 ops[op], text));
  } else if (op == PP_CMP_NE) { /* no record has it: none equals the text */
    m = every_row(c, sel, nsel, out);
  }
  push_sel(L, 1, out, m);
  return 1;
}

/* cols:select({row, ...}) -> selection of those rows (1-based; sorted,
 * duplicates removed) */
static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static int cols_select(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  if (lua_isnoneornil(L, 2)) { /* every record */
    size_t n = pp_cols_count(c);
    sel_ud *s =
        pp_lua_newobj(L, sizeof *s + n * sizeof(uint32_t), 1);
    s->n = n;
    for (size_t i = 0; i < n; i++)
      s->rows[i] = (uint32_t)i;
    pp_lua_setclass(L, SEL_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    return 1;
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer m = (lua_Integer)lua_rawlen(L, 2);
  uint32_t *rows = lua_newuserdatauv(L, (size_t)(m ? m : 1) * sizeof *rows, 0);
  size_t k = 0;
  for (lua_Integer i = 1; i <= m; i++) {
    lua_rawgeti(L, 2, i);
    lua_Integer r = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (r < 1 || (size_t)r > pp_cols_count(c))
      return luaL_argerror(L, 2,
                           lua_pushfstring(L,
                                           "row %I out of range "
                                           "(1..%I)",
                                           r, (lua_Integer)pp_cols_count(c)));
    rows[k++] = (uint32_t)(r - 1);
  }
  qsort(rows, k, sizeof *rows, cmp_u32);
  size_t u = 0;
  for (size_t i = 0; i < k; i++)
    if (u == 0 || rows[u - 1] != rows[i])
      rows[u++] = rows[i];
  push_sel(L, 1, rows, u);
  return 1;
}

#define GROUPS_MT "phaseprobe.groups_guard"
typedef struct {
  pp_group *g;
  size_t n;
} groups_guard;

static int groups_gc(lua_State *L) {
  groups_guard *gg = pp_lua_checkudata(L, 1, GROUPS_MT);
  pp_groups_free(gg->g, gg->n);
  gg->g = NULL;
  gg->n = 0;
  return 0;
}

/* With the group's selection on top and the list of groups below it: sets
 * list[i] = {key = key | missing = true, n = n, sel = <the selection>}
 * (key NULL or of kind PP_VAL_NONE: records lacking the field). */
static void add_group(lua_State *L, const pp_value *key, size_t n,
                      lua_Integer i) {
  lua_createtable(L, 0, 4);
  lua_insert(L, -2);
  lua_setfield(L, -2, "sel");
  if (!key || key->kind == PP_VAL_NONE) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "missing");
  } else {
    pp_lua_push_value(L, key);
    lua_setfield(L, -2, "key");
  }
  pp_lua_set_int(L, "n", n);
  lua_rawseti(L, -2, i);
}

/* cols:group(name [, sel]) -> { {key=, n=, sel=}, ... } in order of first
 * appearance; records lacking the field form a group with key nil and
 * missing = true */
static int cols_group(lua_State *L) {
  cols_query q = pp_lua_cols_query(L);
  if (q.col < 0) {
    size_t n = nrows(q.c, q.sel, q.nsel);
    lua_createtable(L, 1, 0);
    if (n == 0)
      return 1;
    if (q.sel) {
      push_sel(L, 1, q.sel, q.nsel);
    } else {
      lua_pushcfunction(L, cols_select);
      lua_pushvalue(L, 1);
      lua_call(L, 1, 1);
    }
    add_group(L, NULL, n, 1);
    return 1;
  }
  /* the groups are freed by their guard's __gc if building the tables
   * raises (out of memory), else right here */
  groups_guard *gg = pp_lua_newobj(L, sizeof *gg, 0);
  gg->g = NULL;
  gg->n = 0;
  pp_lua_setclass(L, GROUPS_MT);
  if (pp_cols_group(q.c, (size_t)q.col, q.sel, q.nsel, &gg->g, &gg->n) != 0)
    return luaL_error(L, "phaseprobe.columns: out of memory");
  pp_group *g = gg->g;
  size_t ng = gg->n;
  lua_createtable(L, (int)ng, 0);
  for (size_t i = 0; i < ng; i++) {
    push_sel(L, 1, g[i].rows, g[i].n);
    add_group(L, &g[i].key, g[i].n, (lua_Integer)i + 1);
  }
  pp_groups_free(g, ng);
  gg->g = NULL;
  gg->n = 0;
  return 1;
}

/* cols:distinct(name [, sel [, limit]]) -> count (up to limit, default 1000) */
static int cols_distinct(lua_State *L) {
  cols_query q = pp_lua_cols_query(L);
  lua_Integer limit = luaL_optinteger(L, 4, 1000);
  luaL_argcheck(L, limit >= 1, 4, "limit must be positive");
  lua_pushinteger(
      L, q.col < 0 ? 0
                   : (lua_Integer)pp_cols_distinct(q.c, (size_t)q.col, q.sel,
                                                   q.nsel, (size_t)limit));
  return 1;
}

/* cols:prefixes([sel]) -> { {prefix=, n=}, ... } */
static int cols_prefixes(lua_State *L) {
  cols_query q = records_args(L);
  size_t nl = pp_cols_nlayouts(q.c), n = nrows(q.c, q.sel, q.nsel);
  size_t *per = lua_newuserdatauv(L, (nl ? nl : 1) * sizeof *per, 0);
  memset(per, 0, (nl ? nl : 1) * sizeof *per);
  for (size_t i = 0; i < n; i++)
    per[pp_cols_layout(q.c, q.sel ? q.sel[i] : i)]++;
  lua_newtable(L); /* prefix -> position in the result */
  lua_newtable(L); /* result */
  lua_Integer k = 0;
  for (size_t l = 0; l < nl; l++) {
    if (!per[l])
      continue;
    const char *pre = pp_cols_layout_prefix(q.c, l);
    if (lua_getfield(L, -2, pre) == LUA_TNIL) {
      lua_pop(L, 1);
      lua_createtable(L, 0, 2);
      lua_pushstring(L, pre);
      lua_setfield(L, -2, "prefix");
      lua_pushinteger(L, 0);
      lua_setfield(L, -2, "n");
      lua_pushvalue(L, -1);
      lua_rawseti(L, -3, ++k);
      lua_pushvalue(L, -1);
      lua_setfield(L, -4, pre);
    }
    lua_getfield(L, -1, "n");
    lua_Integer cur = lua_tointeger(L, -1);
    lua_pop(L, 1);
    lua_pushinteger(L, cur + (lua_Integer)per[l]);
    lua_setfield(L, -2, "n");
    lua_pop(L, 1);
  }
  lua_remove(L, -2);
  return 1;
}

/* cols:order([sel]) -> field names in line order, merged over the
 * layouts of the selected records (first layout first) */
static int cols_order(lua_State *L) {
  cols_query q = records_args(L);
  size_t nl = pp_cols_nlayouts(q.c), n = nrows(q.c, q.sel, q.nsel);
  unsigned char *used = lua_newuserdatauv(L, nl ? nl : 1, 0);
  memset(used, 0, nl ? nl : 1);
  if (!q.sel) /* every layout belongs to some record */
    memset(used, 1, nl);
  for (size_t i = 0; q.sel && i < n; i++)
    used[pp_cols_layout(q.c, q.sel[i])] = 1;
  lua_newtable(L); /* seen */
  lua_newtable(L); /* result */
  lua_Integer k = 0;
  for (size_t l = 0; l < nl; l++) {
    if (!used[l])
      continue;
    for (size_t i = 0; i < pp_cols_layout_nfields(q.c, l); i++) {
      const char *name = pp_cols_name(q.c, pp_cols_layout_column(q.c, l, i));
      if (lua_getfield(L, -2, name) == LUA_TNIL) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -4, name);
        lua_pushstring(L, name);
        lua_rawseti(L, -3, ++k);
      }
      lua_pop(L, 1);
    }
  }
  lua_remove(L, -2);
  return 1;
}

static int cols_bytes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)pp_cols_bytes(check_cols(L, 1)));
  return 1;
}

static void cols_free(cols_ud *u) {
  pp_cols_free(u->c);
  u->c = NULL;
}

/* close() and __close: the store goes now, or, when a method of this
 * handle is running (a finalizer called close during one of its
 * allocations), when that method returns; __gc frees it at once. */
PP_LUA_BUSY_CLOSE_GC(cols_close, cols_gc, cols_ud, COLS_MT, cols_free)

/* Every method that reads the store across an allocation runs through
 * guard: any allocation may run pending finalizers, and one of them may
 * close this very handle; the store then stays until the method is done.
 * A method that raises (a bad argument, no memory) leaves busy set: the
 * store then goes when the handle is collected rather than at close(). */
static int guard(lua_State *L, lua_CFunction method) {
  cols_ud *u = pp_lua_checkudata(L, 1, COLS_MT);
  PP_CHECK_OPEN(L, !u->closed, "columns");
  u->busy++;
  int n = method(L);
  if (--u->busy == 0 && u->closed)
    cols_free(u);
  return n;
}

/* The methods run through guard, in one list: the wrapper of each and its
 * entry in cols_methods are made from it. */
#define GUARDED_METHODS(X)                                                     \
  X("fields", cols_fields)                                                     \
  X("kind", cols_kind)                                                         \
  X("row", cols_row)                                                           \
  X("get", cols_get)                                                           \
  X("line", cols_line)                                                         \
  X("values", cols_values)                                                     \
  X("summary", pp_lua_cols_summary)                                            \
  X("fit", pp_lua_cols_fit)                                                    \
  X("fits", pp_lua_cols_fits)                                                  \
  X("lincomb", pp_lua_cols_lincomb)                                            \
  X("where", cols_where)                                                       \
  X("range", cols_range)                                                       \
  X("compare", cols_compare)                                                   \
  X("select", cols_select)                                                     \
  X("group", cols_group)                                                       \
  X("distinct", cols_distinct)                                                 \
  X("prefixes", cols_prefixes)                                                 \
  X("order", cols_order)

#define GUARDED_WRAPPER(name, f)                                               \
  static int f##_guarded(lua_State *L) { return guard(L, f); }
GUARDED_METHODS(GUARDED_WRAPPER)
#undef GUARDED_WRAPPER

static int cols_tostring(lua_State *L) {
  cols_ud *u = pp_lua_checkudata(L, 1, COLS_MT);
  if (u->closed)
    lua_pushliteral(L, "phaseprobe.columns (closed)");
  else
    lua_pushfstring(L, "phaseprobe.columns (%I records, %I fields)",
                    (lua_Integer)pp_cols_count(u->c),
                    (lua_Integer)pp_cols_nfields(u->c));
  return 1;
}

/* ---- registration -------------------------------------------------------- */
/* count, bytes and close read nothing across an allocation: unguarded. */
static const luaL_Reg cols_methods[] = {
    {"count", cols_count},
#define GUARDED_ENTRY(name, f) {name, f##_guarded},
    GUARDED_METHODS(GUARDED_ENTRY)
#undef GUARDED_ENTRY
    {"bytes", cols_bytes},
    {"close", cols_close},
    {NULL, NULL}};

static const luaL_Reg sel_methods[] = {
    {"indices", sel_indices}, {"get", sel_get}, {NULL, NULL}};

void pp_lua_open_cols(lua_State *L) {
  pp_lua_class_new(L, &(pp_lua_class){.name = GROUPS_MT, .gc = groups_gc});
  pp_lua_class_new(L, &(pp_lua_class){
      .name = COLS_MT, .methods = cols_methods, .gc = cols_gc,
      .close = cols_close, .tostring = cols_tostring, .len = cols_count});
  pp_lua_class_new(L, &(pp_lua_class){.name = SEL_MT, .methods = sel_methods,
                                      .tostring = sel_tostring,
                                      .len = sel_len});
}
