/*
 * lua_record.c: records as Lua tables, and how they print.
 *
 * Every record in Lua (emitted, stored, parsed from a log) is a plain table
 * of name = value, so analysis code reads r.ptx_ns whatever the record came
 * from. Its metatable belongs to its layout (prefix and field order): it
 * answers r._prefix and r._fields and prints the record as its line, the
 * known fields in order, then any other fields (tags, unknown fields)
 * sorted by name.
 *
 * What the metatable prints from is private to it (upvalues of its
 * __tostring); r._fields is a read-only view of the same list, so no record
 * can change how another prints. Metatables are shared through a cache
 * whose entries go once no record holds them.
 */
#include "pp_lua.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---- the line, into a buffer that lives in a stack slot ------------------ */
/* luaL_Buffer wants nothing pushed above it while it grows; the printing
 * below keeps keys and values on the stack while it writes them, so it
 * uses its own buffer: a userdata at a fixed slot, replaced when it grows. */
typedef struct {
  char *p;
  size_t n, cap;
  int slot;
} linebuf;

static void lb_init(lua_State *L, linebuf *b, size_t cap) {
  b->p = lua_newuserdatauv(L, cap, 0);
  b->n = 0;
  b->cap = cap;
  b->slot = lua_gettop(L);
}

static void lb_add(lua_State *L, linebuf *b, const char *s, size_t len) {
  if (len > b->cap - b->n) {
    size_t cap = b->cap;
    while (len > cap - b->n) {
      if (cap > ((size_t)-1) / 2)
        luaL_error(L, "phaseprobe.record: line too long");
      cap *= 2;
    }
    char *np = lua_newuserdatauv(L, cap, 0);
    memcpy(np, b->p, b->n);
    lua_replace(L, b->slot);
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, len);
  b->n += len;
}

/* Appends the value at idx as a field value: integers as the u64 they
 * carry (values above INT64_MAX come through as negative integers), floats
 * as Lua prints them, strings as they are, anything else by its type name.
 * Calls no metamethod. */
static void lb_value(lua_State *L, linebuf *b, int idx) {
  char tmp[64];
  int n;
  switch (lua_type(L, idx)) {
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      n = snprintf(tmp, sizeof tmp, "%llu",
                   (unsigned long long)lua_tointeger(L, idx));
    } else {
      lua_Number x = lua_tonumber(L, idx);
      n = snprintf(tmp, sizeof tmp, LUA_NUMBER_FMT, (LUAI_UACNUMBER)x);
      if (isfinite(x) && n > 0 && (size_t)n < sizeof tmp - 2 &&
          strspn(tmp, "-0123456789") == (size_t)n) {
        tmp[n++] = '.'; /* looks like an int: as Lua prints it */
        tmp[n++] = '0';
        tmp[n] = 0;
      }
    }
    lb_add(L, b, tmp, n > 0 ? (size_t)n : 0);
    return;
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    lb_add(L, b, s, len);
    return;
  }
  case LUA_TBOOLEAN:
    lb_add(L, b, lua_toboolean(L, idx) ? "true" : "false",
           lua_toboolean(L, idx) ? 4 : 5);
    return;
  default: {
    const char *t = luaL_typename(L, idx);
    lb_add(L, b, t, strlen(t));
  }
  }
}

/* " name=value" with the name at stack index ni and the value at vi. */
static void lb_field(lua_State *L, linebuf *b, int ni, int vi) {
  size_t len;
  const char *name = lua_tolstring(L, ni, &len);
  lb_add(L, b, " ", 1);
  lb_add(L, b, name, len);
  lb_add(L, b, "=", 1);
  lb_value(L, b, vi);
}

typedef struct {
  const char *s;
  size_t len;
} strref;

static int cmp_ref(const void *a, const void *b) {
  const strref *x = a, *y = b;
  int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* __tostring(record): the line. Upvalues: 1 prefix, 2 field names (a
 * private list), 3 name -> position (the same names as a set). */
static int record_tostring(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  luaL_checkstack(L, 8, "phaseprobe.record");
  linebuf b;
  lb_init(L, &b, 256); /* slot 2 */
  size_t plen;
  const char *prefix = lua_tolstring(L, lua_upvalueindex(1), &plen);
  if (prefix)
    lb_add(L, &b, prefix, plen);
  /* known fields, in order */
  lua_Integer n = (lua_Integer)lua_rawlen(L, lua_upvalueindex(2));
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_rawgeti(L, lua_upvalueindex(2), i) == LUA_TSTRING) {
      lua_pushvalue(L, -1);
      if (lua_rawget(L, 1) != LUA_TNIL)
        lb_field(L, &b, -2, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  /* the rest: string keys that are not fields, anchored in a list (slot 3)
   * while they are sorted and printed */
  lua_newtable(L);
  int extra = lua_gettop(L);
  lua_Integer m = 0;
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      lua_pushvalue(L, -1);
      if (lua_rawget(L, lua_upvalueindex(3)) == LUA_TNIL) {
        lua_pushvalue(L, -2);
        lua_rawseti(L, extra, ++m);
      }
      lua_pop(L, 1);
    }
  }
  if (m > 0) {
    strref *ref = lua_newuserdatauv(L, (size_t)m * sizeof *ref, 0);
    for (lua_Integer i = 1; i <= m; i++) {
      lua_rawgeti(L, extra, i);
      ref[i - 1].s = lua_tolstring(L, -1, &ref[i - 1].len); /* in `extra` */
      lua_pop(L, 1);
    }
    qsort(ref, (size_t)m, sizeof *ref, cmp_ref);
    for (lua_Integer i = 0; i < m; i++) {
      lua_pushlstring(L, ref[i].s, ref[i].len);
      lua_pushvalue(L, -1);
      lua_rawget(L, 1);
      lb_field(L, &b, -2, -1);
      lua_pop(L, 2);
    }
  }
  lua_pushlstring(L, b.p, b.n);
  return 1;
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

/* Pushes an empty table reading through to the list at idx: indexing, #,
 * ipairs and pairs see the list, assignments raise, getmetatable says
 * nothing. */
static void push_fields_view(lua_State *L, int list) {
  list = lua_absindex(L, list);
  lua_newtable(L);
  lua_createtable(L, 0, 5);
  lua_pushvalue(L, list);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, fields_readonly);
  lua_setfield(L, -2, "__newindex");
  lua_pushvalue(L, list);
  lua_pushcclosure(L, fields_len, 1);
  lua_setfield(L, -2, "__len");
  lua_pushvalue(L, list);
  lua_pushcclosure(L, fields_pairs, 1);
  lua_setfield(L, -2, "__pairs");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
}

/* ---- metatables ------------------------------------------------------------- */
/* Registry key of the cache: layout key -> metatable, weak values. */
static const char mt_cache_key = 'c';

/* Pushes a new record metatable from the prefix at `prefix` and the list
 * of field names at `list` (which it keeps privately). */
static void new_record_mt(lua_State *L, int prefix, int list) {
  prefix = lua_absindex(L, prefix);
  list = lua_absindex(L, list);
  lua_Integer n = (lua_Integer)lua_rawlen(L, list);
  lua_createtable(L, 0, 4); /* metatable */
  lua_createtable(L, 0, 2); /* __index */
  lua_pushvalue(L, prefix);
  lua_setfield(L, -2, "_prefix");
  push_fields_view(L, list);
  lua_setfield(L, -2, "_fields");
  lua_setfield(L, -2, "__index");
  lua_pushvalue(L, prefix);
  lua_pushvalue(L, list);
  lua_createtable(L, 0, (int)n); /* name -> position */
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    lua_pushinteger(L, i);
    lua_rawset(L, -3);
  }
  lua_pushcclosure(L, record_tostring, 3);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "phaseprobe.record");
  lua_setfield(L, -2, "__name");
}

static void push_cache(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &mt_cache_key) == LUA_TTABLE)
    return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "v");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &mt_cache_key);
}

void pp_lua_push_record_mt(lua_State *L, const char *prefix,
                           const char *const *fields, size_t nfields) {
  luaL_checkstack(L, 8, "phaseprobe.record");
  push_cache(L);
  int cache = lua_gettop(L);
  /* the layout's key: prefix and names, each ended by a NUL */
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, prefix);
  luaL_addchar(&b, '\0');
  for (size_t i = 0; i < nfields; i++) {
    luaL_addstring(&b, fields[i]);
    luaL_addchar(&b, '\0');
  }
  luaL_pushresult(&b);
  lua_pushvalue(L, -1);
  if (lua_rawget(L, cache) == LUA_TTABLE) {
    lua_replace(L, cache);
    lua_settop(L, cache);
    return;
  }
  lua_pop(L, 1);
  int key = lua_gettop(L);
  lua_pushstring(L, prefix);
  lua_createtable(L, (int)nfields, 0);
  for (size_t i = 0; i < nfields; i++) {
    lua_pushstring(L, fields[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  new_record_mt(L, -2, -1);
  lua_pushvalue(L, key);
  lua_pushvalue(L, -2);
  lua_rawset(L, cache);
  lua_replace(L, cache);
  lua_settop(L, cache);
}

/* The field names of a schema's records, interned once per schema (at most
 * PP_MAX_SCHEMAS per process): registry[&names_key][schema] = list. */
static const char names_key = 'n';

static void push_schema_names(lua_State *L, const pp_schema *s) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &names_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &names_key);
  }
  if (lua_rawgetp(L, -1, s) == LUA_TTABLE) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  lua_createtable(L, (int)s->nfields, 0);
  for (size_t i = 0; i < s->nfields; i++) {
    lua_pushstring(L, s->field[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_pushvalue(L, -1);
  lua_rawsetp(L, -3, s);
  lua_remove(L, -2);
}

/* The metatable of a schema's records: looked up by schema first (weak
 * values, like the layout cache behind it). */
static const char schema_mt_key = 'm';

static void push_schema_mt(lua_State *L, const pp_schema *s) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &schema_mt_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &schema_mt_key);
  }
  if (lua_rawgetp(L, -1, s) == LUA_TTABLE) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  const char *names[PP_MAX_FIELDS];
  for (size_t i = 0; i < s->nfields; i++)
    names[i] = s->field[i];
  pp_lua_push_record_mt(L, s->prefix, names, s->nfields);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, -3, s);
  lua_remove(L, -2);
}

void pp_lua_push_record(lua_State *L, const pp_record *r) {
  const pp_schema *s = r->schema;
  luaL_checkstack(L, 8, "phaseprobe.record");
  push_schema_mt(L, s);
  int mt = lua_gettop(L);
  push_schema_names(L, s); /* interned names: no rehashing per record */
  int fields = lua_gettop(L);
  lua_createtable(L, 0, (int)s->nfields + 2);
  for (size_t i = 0; i < s->nfields; i++) {
    if (!pp_record_field_present(r, i))
      continue; /* not in the line: absent here too */
    lua_rawgeti(L, fields, (lua_Integer)i + 1);
    if (s->kind[i] == PP_FIELD_KERNEL_SRC)
      lua_pushstring(L, pp_kernel_src_name((pp_kernel_src)r->values[i]));
    else
      lua_pushinteger(L, (lua_Integer)r->values[i]);
    lua_rawset(L, -3);
  }
  /* tags: " k=v k2=v2" */
  const char *p = r->tags;
  const char *end_tags = r->tags + strnlen(r->tags, sizeof r->tags);
  while (p < end_tags && *p == ' ') {
    const char *k = p + 1, *eq = memchr(k, '=', (size_t)(end_tags - k));
    if (!eq)
      break;
    const char *end = memchr(eq, ' ', (size_t)(end_tags - eq));
    if (!end)
      end = end_tags;
    lua_pushlstring(L, k, (size_t)(eq - k));
    lua_pushlstring(L, eq + 1, (size_t)(end - eq - 1));
    lua_rawset(L, -3);
    p = end;
  }
  lua_pushvalue(L, mt);
  lua_setmetatable(L, -2);
  lua_replace(L, mt);
  lua_settop(L, mt);
}
