/*
 * lua_record.c: the record, as the Lua side sees it.
 *
 * One type, "phaseprobe.record", for every record in Lua: those pp.emit
 * returns and pp.store keeps (a copy of the C record: its schema, values and
 * tags), and the rows of a column store that record sets hand out
 * (set:record(i), cols:row(i): the store and a row number). Nothing is
 * built when a record is made; a field is read when it is asked for:
 *
 *   r.ptx_ns, r.shape      the value (nil when the record has no such field)
 *   tostring(r)            the record's line, byte for byte the C line
 *   r._prefix, r._fields   its prefix and its field names in line order (a
 *                          read-only list; for an emitted record, the
 *                          schema's fields: tags are not in it, and fields
 *                          its line leaves out read as nil)
 *   r:_table()             every field and tag as a plain table
 *   r:_text(name)          a value as the line prints it (exact)
 *   pairs(r)               fields in line order, then tags
 *
 * Records are read-only. Names starting with '_' are the record's own; the
 * parser and the store builder refuse those four as field names.
 *
 * Values: strings for tags and kernel_src, numbers otherwise. A u64 value
 * reaches Lua through pp_lua_push_u64 only: an integer up to 2^63-1, a float
 * above (math.type says which; such a float is the nearest double, so it
 * orders and adds right but is not exact: tostring(r) and r:_text(name)
 * give the exact digits).
 *
 * Stores also become record sets without going through lines: pp.parse.list
 * (lua_parse_list.c) appends records, plain tables and rows read from CSV
 * or JSON lines to a new store (csrc/parse/cols_build.c); a record's fields
 * come from pp_lua_record_fields, here.
 */
#include "pp_lua.h"
#include "pp_lua_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORD_MT "phaseprobe.record"


enum { REC_OWN = 0, REC_ROW = 1 };

typedef struct {
  uint8_t kind;
  uint8_t has_view; /* REC_ROW: only the columns listed in tail           */
  uint16_t ntags;   /* REC_OWN: bytes of tag text in tail, after values    */
  uint32_t nview;   /* REC_ROW with a view: column indices in tail         */
  union {
    const pp_schema *schema; /* REC_OWN                                    */
    size_t row;              /* REC_ROW (0-based); uservalue 1: the store  */
  } u;
  uint64_t tail[]; /* REC_OWN: nfields values, then the tags text (NUL
                      ended); REC_ROW: nview uint32 column indices          */
} lrec;

/* Registry keys: the metatable, the per-schema name -> position tables and
 * the per-schema field lists. */
static const char mt_key = 'm';
static const char index_key = 'i';
static const char fields_key = 'f';

/* ---- values --------------------------------------------------------------- */
void pp_lua_push_u64(lua_State *L, uint64_t v) {
  if (v <= (uint64_t)INT64_MAX)
    lua_pushinteger(L, (lua_Integer)v);
  else
    lua_pushnumber(L, (lua_Number)v);
}

void pp_lua_push_value(lua_State *L, const pp_value *v) {
  switch (v->kind) {
  case PP_VAL_INT:
    if (v->u64)
      pp_lua_push_u64(L, (uint64_t)v->i);
    else
      lua_pushinteger(L, (lua_Integer)v->i);
    break;
  case PP_VAL_NUM: lua_pushnumber(L, v->d); break;
  case PP_VAL_STR: lua_pushlstring(L, v->s, v->len); break;
  default: lua_pushnil(L);
  }
}

/* ---- the two kinds -------------------------------------------------------- */
static lrec *check_rec(lua_State *L, int i) {
  return pp_lua_checkudata(L, i, RECORD_MT);
}

static const char *own_tags(const lrec *r) {
  return (const char *)(r->tail + r->u.schema->nfields);
}

/* The store of a row record; raises when it was closed. */
static pp_cols *row_cols(lua_State *L, int i) {
  lua_getiuservalue(L, i, 1);
  pp_cols *c = pp_lua_test_cols(L, -1);
  lua_pop(L, 1); /* the record anchors it */
  if (!c)
    luaL_error(L, "phaseprobe.record: the record store it belongs to was "
                  "closed");
  return c;
}

static const uint32_t *row_view(const lrec *r) {
  return (const uint32_t *)r->tail;
}

/* Whether column `col` is one of this row record's fields. */
static int row_has(const pp_cols *c, const lrec *r, size_t col) {
  if (pp_cols_hidden(c, col))
    return 0;
  if (!r->has_view)
    return 1;
  for (uint32_t i = 0; i < r->nview; i++)
    if (row_view(r)[i] == col)
      return 1;
  return 0;
}

/* The columns of a row record in line order: its view, or its layout. */
static size_t row_ncols(const pp_cols *c, const lrec *r) {
  return r->has_view ? r->nview
                     : pp_cols_layout_nfields(c, pp_cols_layout(c, r->u.row));
}
static size_t row_col(const pp_cols *c, const lrec *r, size_t i) {
  return r->has_view ? row_view(r)[i]
                     : pp_cols_layout_column(c, pp_cols_layout(c, r->u.row), i);
}

/* A tag of an own record: its value's span, or NULL. */
static const char *own_tag(const lrec *r, const char *k, size_t klen,
                           size_t *vlen) {
  const char *p = own_tags(r), *end = p + r->ntags;
  while (p < end && *p == ' ') {
    const char *name = p + 1;
    const char *eq = memchr(name, '=', (size_t)(end - name));
    if (!eq)
      return NULL;
    const char *stop = memchr(eq, ' ', (size_t)(end - eq));
    if (!stop)
      stop = end;
    if ((size_t)(eq - name) == klen && memcmp(name, k, klen) == 0) {
      *vlen = (size_t)(stop - eq - 1);
      return eq + 1;
    }
    p = stop;
  }
  return NULL;
}

/* Pushes the schema's name -> 1-based position table (built once per
 * schema and Lua state). */
static void push_own_index(lua_State *L, const pp_schema *s) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &index_key);
  if (lua_rawgetp(L, -1, s) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, (int)s->nfields);
    for (size_t i = 0; i < s->nfields; i++) {
      lua_pushinteger(L, (lua_Integer)i + 1);
      lua_setfield(L, -2, s->field[i]);
    }
    lua_pushvalue(L, -1);
    lua_rawsetp(L, -3, s);
  }
  lua_remove(L, -2);
}

/* Position of field `k` (stack index) in an own record's schema, or -1
 * (also for a field the record's line leaves out: device-timeline fields
 * without CUPTI, an unmeasured kernel_error_ns). */
static int own_field(lua_State *L, const lrec *r, int k) {
  push_own_index(L, r->u.schema);
  lua_pushvalue(L, k);
  lua_Integer i = lua_rawget(L, -2) == LUA_TNUMBER ? lua_tointeger(L, -1) : 0;
  lua_pop(L, 2);
  if (i > 0 && !pp_field_present(r->u.schema, r->tail, (size_t)i - 1))
    return -1;
  return (int)i - 1;
}

static void push_own_field(lua_State *L, const lrec *r, int i) {
  if (r->u.schema->kind[i] == PP_FIELD_KERNEL_SRC)
    lua_pushstring(L, pp_ksrc_name(r->tail[i]));
  else
    pp_lua_push_u64(L, r->tail[i]);
}

/* Pushes the value of field `k` (stack index) or nil. */
static void push_field(lua_State *L, int ri, const lrec *r, int k) {
  size_t klen;
  const char *key = lua_tolstring(L, k, &klen);
  if (r->kind == REC_OWN) {
    int i = own_field(L, r, k);
    if (i >= 0) {
      push_own_field(L, r, i);
      return;
    }
    size_t vlen;
    const char *v = own_tag(r, key, klen, &vlen);
    if (v)
      lua_pushlstring(L, v, vlen);
    else
      lua_pushnil(L);
    return;
  }
  pp_cols *c = row_cols(L, ri);
  int col = pp_cols_lookup(c, key, klen);
  if (col < 0 || !row_has(c, r, (size_t)col)) {
    lua_pushnil(L);
    return;
  }
  pp_value v;
  pp_cols_get(c, (size_t)col, r->u.row, &v);
  pp_lua_push_value(L, &v);
}

/* ---- the read-only view of a field list ------------------------------------ */
static int fields_readonly(lua_State *L) {
  return luaL_error(L, "phaseprobe.record: the field list (r._fields) is "
                       "read-only");
}

static int fields_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)lua_rawlen(L, lua_upvalueindex(1)));
  return 1;
}

static int fields_next(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  if (lua_next(L, 1))
    return 2;
  lua_pushnil(L);
  return 1;
}

static int fields_pairs(lua_State *L) {
  lua_pushcfunction(L, fields_next);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushnil(L);
  return 3;
}

/* Replaces the list on top with an empty table reading through to it:
 * indexing, #, ipairs and pairs see the list, assignments raise,
 * getmetatable says nothing. */
static void to_fields_view(lua_State *L) {
  int list = lua_gettop(L);
  pp_lua_view_open(L, list, 5);
  lua_pushcfunction(L, fields_readonly);
  lua_setfield(L, -2, "__newindex");
  lua_pushvalue(L, list);
  lua_pushcclosure(L, fields_len, 1);
  lua_setfield(L, -2, "__len");
  lua_pushvalue(L, list);
  lua_pushcclosure(L, fields_pairs, 1);
  lua_setfield(L, -2, "__pairs");
  lua_setmetatable(L, -2);
  lua_replace(L, list);
}

static void push_fields(lua_State *L, int ri, const lrec *r) {
  if (r->kind == REC_OWN) {
    const pp_schema *s = r->u.schema;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &fields_key);
    if (lua_rawgetp(L, -1, s) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_createtable(L, (int)s->nfields, 0);
      for (size_t i = 0; i < s->nfields; i++) {
        lua_pushstring(L, s->field[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
      }
      to_fields_view(L);
      lua_pushvalue(L, -1);
      lua_rawsetp(L, -3, s);
    }
    lua_remove(L, -2);
    return;
  }
  pp_cols *c = row_cols(L, ri);
  size_t layout = pp_cols_layout(c, r->u.row);
  if (!r->has_view) { /* one list per layout, kept on the store */
    lua_getiuservalue(L, ri, 1);
    lua_getiuservalue(L, -1, 1);
    lua_remove(L, -2);
    if (lua_rawgeti(L, -1, (lua_Integer)layout + 1) == LUA_TTABLE) {
      lua_remove(L, -2);
      return;
    }
    lua_pop(L, 1);
  }
  size_t n = row_ncols(c, r);
  lua_createtable(L, (int)n, 0);
  lua_Integer out = 0;
  for (size_t i = 0; i < n; i++) {
    size_t col = row_col(c, r, i);
    pp_value v;
    pp_cols_get(c, col, r->u.row, &v);
    if (v.kind == PP_VAL_NONE)
      continue;
    lua_pushstring(L, pp_cols_name(c, col));
    lua_rawseti(L, -2, ++out);
  }
  to_fields_view(L);
  if (!r->has_view) {
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, (lua_Integer)layout + 1);
    lua_remove(L, -2);
  }
}

static void push_prefix(lua_State *L, int ri, const lrec *r) {
  if (r->kind == REC_OWN) {
    lua_pushstring(L, r->u.schema->prefix);
  } else {
    pp_cols *c = row_cols(L, ri);
    lua_pushstring(L, pp_cols_layout_prefix(c, pp_cols_layout(c, r->u.row)));
  }
}

/* ---- metamethods and methods ----------------------------------------------- */
/* __index(r, k): upvalue 1 is the methods table. */
static int rec_index(lua_State *L) {
  lrec *r = check_rec(L, 1);
  if (lua_type(L, 2) != LUA_TSTRING)
    return 0;
  size_t klen;
  const char *k = lua_tolstring(L, 2, &klen);
  if (k[0] == '_') {
    if (klen == 7 && memcmp(k, "_prefix", 7) == 0) {
      push_prefix(L, 1, r);
      return 1;
    }
    if (klen == 7 && memcmp(k, "_fields", 7) == 0) {
      push_fields(L, 1, r);
      return 1;
    }
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL)
      return 1;
    lua_pop(L, 1);
  }
  push_field(L, 1, r, 2);
  return 1;
}

static int rec_newindex(lua_State *L) {
  check_rec(L, 1);
  return luaL_error(L, "phaseprobe.record: records are read-only "
                       "(r:_table() gives a table of its fields)");
}

/* A line into a luaL_Buffer: the own record rebuilt as a C record and
 * formatted by the probe's formatter; the row by the store's. */
static int rec_tostring(lua_State *L) {
  lrec *r = check_rec(L, 1);
  luaL_Buffer b;
  if (r->kind == REC_OWN) {
    pp_record *cr = lua_newuserdatauv(L, sizeof *cr, 0);
    const pp_schema *s = r->u.schema;
    cr->schema = s;
    memcpy(cr->values, r->tail, s->nfields * sizeof(uint64_t));
    memcpy(cr->tags, own_tags(r), (size_t)r->ntags + 1);
    char small[2048];
    size_t n = pp_format_line(cr, small, sizeof small);
    if (n < sizeof small) {
      lua_pushlstring(L, small, n);
      return 1;
    }
    char *big = luaL_buffinitsize(L, &b, n + 1);
    pp_format_line(cr, big, n + 1);
    luaL_pushresultsize(&b, n);
    return 1;
  }
  lua_getiuservalue(L, 1, 1);
  pp_cols *c = pp_lua_test_cols(L, -1);
  lua_pop(L, 1);
  if (!c) {
    lua_pushliteral(L, "phaseprobe.record (its record store was closed)");
    return 1;
  }
  if (!r->has_view) {
    char small[2048];
    size_t n = pp_cols_format(c, r->u.row, small, sizeof small);
    if (n < sizeof small) {
      lua_pushlstring(L, small, n);
      return 1;
    }
    char *big = luaL_buffinitsize(L, &b, n + 1);
    pp_cols_format(c, r->u.row, big, n + 1);
    luaL_pushresultsize(&b, n);
    return 1;
  }
  luaL_buffinit(L, &b);
  luaL_addstring(&b, pp_cols_layout_prefix(c, pp_cols_layout(c, r->u.row)));
  for (uint32_t i = 0; i < r->nview; i++) {
    size_t col = row_view(r)[i];
    pp_value v;
    pp_cols_get(c, col, r->u.row, &v);
    if (v.kind == PP_VAL_NONE)
      continue;
    luaL_addchar(&b, ' ');
    luaL_addstring(&b, pp_cols_name(c, col));
    luaL_addchar(&b, '=');
    size_t n = pp_cols_text(c, col, r->u.row, NULL, 0);
    char *dst = luaL_prepbuffsize(&b, n + 1);
    pp_cols_text(c, col, r->u.row, dst, n + 1);
    luaL_addsize(&b, n);
  }
  luaL_pushresult(&b);
  return 1;
}

/* r:_text(name) -> the value as the line prints it, or nil */
static int rec_text(lua_State *L) {
  lrec *r = check_rec(L, 1);
  size_t klen;
  const char *k = luaL_checklstring(L, 2, &klen);
  if (r->kind == REC_OWN) {
    int i = own_field(L, r, 2);
    if (i >= 0) {
      if (r->u.schema->kind[i] == PP_FIELD_KERNEL_SRC) {
        push_own_field(L, r, i);
      } else {
        char buf[24];
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)r->tail[i]);
        lua_pushstring(L, buf);
      }
      return 1;
    }
    size_t vlen;
    const char *v = own_tag(r, k, klen, &vlen);
    if (!v)
      return 0;
    lua_pushlstring(L, v, vlen);
    return 1;
  }
  pp_cols *c = row_cols(L, 1);
  int col = pp_cols_lookup(c, k, klen);
  if (col < 0 || !row_has(c, r, (size_t)col))
    return 0;
  pp_value v;
  pp_cols_get(c, (size_t)col, r->u.row, &v);
  if (v.kind == PP_VAL_NONE)
    return 0;
  size_t n = pp_cols_text(c, (size_t)col, r->u.row, NULL, 0);
  luaL_Buffer b;
  char *dst = luaL_buffinitsize(L, &b, n + 1);
  pp_cols_text(c, (size_t)col, r->u.row, dst, n + 1);
  luaL_pushresultsize(&b, n);
  return 1;
}

/* Field i of a record in pairs order (fields in line order, then the tags
 * of an own record): pushes name and value and returns 1, or 0 past the
 * end. *pos is a cursor: field index, then for own records nfields + byte
 * offset into the tags. */
static int push_nth(lua_State *L, int ri, const lrec *r, size_t *pos) {
  if (r->kind == REC_OWN) {
    const pp_schema *s = r->u.schema;
    while (*pos < s->nfields && !pp_field_present(s, r->tail, *pos))
      (*pos)++;
    if (*pos < s->nfields) {
      lua_pushstring(L, s->field[*pos]);
      push_own_field(L, r, (int)*pos);
      (*pos)++;
      return 1;
    }
    size_t off = *pos - s->nfields;
    const char *t = own_tags(r), *end = t + r->ntags, *p = t + off;
    if (p >= end || *p != ' ')
      return 0;
    const char *name = p + 1;
    const char *eq = memchr(name, '=', (size_t)(end - name));
    if (!eq)
      return 0;
    const char *stop = memchr(eq, ' ', (size_t)(end - eq));
    if (!stop)
      stop = end;
    lua_pushlstring(L, name, (size_t)(eq - name));
    lua_pushlstring(L, eq + 1, (size_t)(stop - eq - 1));
    *pos = s->nfields + (size_t)(stop - t);
    return 1;
  }
  pp_cols *c = row_cols(L, ri);
  size_t n = row_ncols(c, r);
  while (*pos < n) {
    size_t col = row_col(c, r, *pos);
    (*pos)++;
    pp_value v;
    pp_cols_get(c, col, r->u.row, &v);
    if (v.kind == PP_VAL_NONE)
      continue;
    lua_pushstring(L, pp_cols_name(c, col));
    pp_lua_push_value(L, &v);
    return 1;
  }
  return 0;
}

/* the iterator pairs(r) returns: upvalue 1 is the cursor */
static int rec_next(lua_State *L) {
  lrec *r = check_rec(L, 1);
  size_t pos = (size_t)lua_tointeger(L, lua_upvalueindex(1));
  if (!push_nth(L, 1, r, &pos))
    return 0;
  lua_pushinteger(L, (lua_Integer)pos);
  lua_replace(L, lua_upvalueindex(1));
  return 2;
}

static int rec_pairs(lua_State *L) {
  check_rec(L, 1);
  lua_pushinteger(L, 0);
  lua_pushcclosure(L, rec_next, 1);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

/* r:_table() -> {name = value, ...}: every field and tag */
static int rec_table(lua_State *L) {
  lrec *r = check_rec(L, 1);
  lua_settop(L, 1);
  lua_createtable(L, 0, 40);
  size_t pos = 0;
  while (push_nth(L, 1, r, &pos))
    lua_rawset(L, 2);
  return 1;
}

/* ---- making records --------------------------------------------------------- */
static void set_record_mt(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &mt_key);
  lua_setmetatable(L, -2);
  pp_lua_settag(L, -1, RECORD_MT);
}

void pp_lua_push_record(lua_State *L, const pp_record *cr) {
  const pp_schema *s = cr->schema;
  size_t ntags = strnlen(cr->tags, sizeof cr->tags);
  lrec *r =
      pp_lua_newobj(L, sizeof *r + s->nfields * sizeof(uint64_t) + ntags + 1, 0);
  r->kind = REC_OWN;
  r->has_view = 0;
  r->ntags = (uint16_t)ntags;
  r->nview = 0;
  r->u.schema = s;
  memcpy(r->tail, cr->values, s->nfields * sizeof(uint64_t));
  char *t = (char *)(r->tail + s->nfields);
  memcpy(t, cr->tags, ntags);
  t[ntags] = 0;
  set_record_mt(L);
}

void pp_lua_push_row(lua_State *L, int cols_idx, size_t row, int view_idx) {
  cols_idx = lua_absindex(L, cols_idx);
  pp_cols *c = pp_lua_check_cols(L, cols_idx);
  lua_Integer m = 0;
  if (!lua_isnoneornil(L, view_idx)) {
    luaL_checktype(L, view_idx, LUA_TTABLE);
    m = (lua_Integer)lua_rawlen(L, view_idx);
    luaL_argcheck(L, m <= PP_PARSE_MAX_COLUMNS, view_idx,
                  "more names than a store has columns");
  }
  int has_view = !lua_isnoneornil(L, view_idx);
  lrec *r = pp_lua_newobj(L, sizeof *r + (size_t)m * sizeof(uint32_t), 1);
  r->kind = REC_ROW;
  r->has_view = (uint8_t)has_view;
  r->ntags = 0;
  r->nview = 0;
  r->u.row = row;
  for (lua_Integer i = 1; i <= m; i++) {
    lua_rawgeti(L, view_idx, i);
    size_t len;
    const char *name = lua_tolstring(L, -1, &len);
    if (!name || lua_type(L, -1) != LUA_TSTRING)
      luaL_argerror(L, view_idx,
                    lua_pushfstring(L, "name %d is %s, not a string", (int)i,
                                    luaL_typename(L, -1)));
    int col = pp_cols_lookup(c, name, len);
    lua_pop(L, 1);
    if (col >= 0 && !pp_cols_hidden(c, (size_t)col))
      ((uint32_t *)r->tail)[r->nview++] = (uint32_t)col;
  }
  lua_pushvalue(L, cols_idx);
  lua_setiuservalue(L, -2, 1);
  set_record_mt(L);
}

/* ---- a record's fields, for a store ------------------------------------------ */
/* The fields of an own record. */
static size_t own_fields(const lrec *r, pp_cols_field *f) {
  const pp_schema *s = r->u.schema;
  size_t n = 0;
  for (size_t i = 0; i < s->nfields; i++) {
    if (!pp_field_present(s, r->tail, i))
      continue;
    pp_cols_field *x = &f[n++];
    memset(x, 0, sizeof *x);
    x->name = s->field[i];
    x->nlen = strlen(s->field[i]);
    if (s->kind[i] == PP_FIELD_KERNEL_SRC) {
      const char *k = pp_ksrc_name(r->tail[i]);
      x->v.kind = PP_VAL_STR;
      x->v.s = k;
      x->v.len = strlen(k);
    } else {
      x->v.kind = PP_VAL_INT;
      x->v.i = (int64_t)r->tail[i];
    }
  }
  const char *p = own_tags(r), *end = p + r->ntags;
  while (p < end && *p == ' ' && n < PP_PARSE_MAX_TOKENS) {
    const char *name = p + 1;
    const char *eq = memchr(name, '=', (size_t)(end - name));
    if (!eq)
      break;
    const char *stop = memchr(eq, ' ', (size_t)(end - eq));
    if (!stop)
      stop = end;
    pp_cols_field *x = &f[n++];
    memset(x, 0, sizeof *x);
    x->name = name;
    x->nlen = (size_t)(eq - name);
    x->v.kind = PP_VAL_STR;
    x->v.s = eq + 1;
    x->v.len = (size_t)(stop - eq - 1);
    p = stop;
  }
  return n;
}

/* The fields of a row record (its store must be open: the caller checked). */
static size_t row_fields(const pp_cols *c, const lrec *r, pp_cols_field *f) {
  size_t n = 0, m = row_ncols(c, r);
  for (size_t i = 0; i < m && n < PP_PARSE_MAX_TOKENS; i++) {
    size_t col = row_col(c, r, i);
    pp_value v;
    pp_cols_get(c, col, r->u.row, &v);
    if (v.kind == PP_VAL_NONE)
      continue;
    pp_cols_field *x = &f[n++];
    x->name = pp_cols_name(c, col);
    x->nlen = strlen(x->name);
    x->v = v;
    x->neg = v.kind == PP_VAL_INT && v.i < 0 && !v.u64;
    x->text = v.kind == PP_VAL_NUM
                  ? pp_cols_alt_text(c, col, r->u.row, &x->tlen)
                  : NULL;
  }
  return n;
}

int pp_lua_record_fields(lua_State *L, int idx, pp_cols_field *f, size_t *nf,
                         const char **prefix) {
  lrec *r = pp_lua_testudata(L, idx, RECORD_MT);
  if (!r)
    return 0;
  if (r->kind == REC_OWN) {
    *prefix = r->u.schema->prefix;
    *nf = own_fields(r, f);
  } else {
    pp_cols *src = row_cols(L, idx);
    *prefix = pp_cols_layout_prefix(src, pp_cols_layout(src, r->u.row));
    *nf = row_fields(src, r, f);
  }
  return 1;
}

/* ---- registration -------------------------------------------------------------- */
static const luaL_Reg methods[] = {
    {"_table", rec_table}, {"_text", rec_text}, {NULL, NULL}};

void pp_lua_open_record(lua_State *L) {
  lua_newtable(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &index_key);
  lua_newtable(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &fields_key);
  pp_lua_class_new(L, &(pp_lua_class){.name = RECORD_MT,
                                      .tostring = rec_tostring,
                                      .newindex = rec_newindex,
                                      .pairs = rec_pairs});
  luaL_getmetatable(L, RECORD_MT);
  luaL_newlib(L, methods); /* the "_" names rec_index finds besides fields */
  lua_pushcclosure(L, rec_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &mt_key);
  lua_pop(L, 1);
}
