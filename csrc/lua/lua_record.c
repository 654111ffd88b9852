/*
 * lua_record.c: records as Lua tables, and how they print.
 *
 * Every record in Lua (emitted, stored, parsed from a log) is a plain table
 * of name = value, so analysis code reads r.ptx_ns whatever the record came
 * from. The metatable is shared per (prefix, field order) and prints the
 * record as its line: the known fields in order, then any other fields
 * (tags, unknown fields) sorted by name.
 */
#include "pp_lua.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ksrc_names[] = {"none", "event", "cupti", "user"};

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void add_value(luaL_Buffer *b, lua_State *L, int idx) {
  if (lua_type(L, idx) == LUA_TNUMBER && lua_isinteger(L, idx)) {
    lua_Integer v = lua_tointeger(L, idx);
    /* u64 values above INT64_MAX come through as negative integers */
    char tmp[24];
    snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    luaL_addstring(b, tmp);
  } else {
    lua_pushvalue(L, idx);
    luaL_addvalue(b);
  }
}

/* __tostring(record): the line. */
static int record_tostring(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_getfield(L, lua_upvalueindex(1), "_prefix");
  luaL_addvalue(&b);
  lua_getfield(L, lua_upvalueindex(1), "_fields");
  int fields = lua_gettop(L);
  lua_Integer n = luaL_len(L, fields);
  /* known fields in order */
  lua_newtable(L); /* set of known names */
  int known = lua_gettop(L);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, fields, i);
    const char *name = lua_tostring(L, -1);
    lua_pushboolean(L, 1);
    lua_setfield(L, known, name);
    lua_rawget(L, 1);
    if (!lua_isnil(L, -1)) {
      luaL_addchar(&b, ' ');
      luaL_addstring(&b, name);
      luaL_addchar(&b, '=');
      add_value(&b, L, lua_gettop(L));
    }
    lua_pop(L, 1);
  }
  /* the rest, sorted */
  size_t cap = 16, m = 0;
  const char **extra = malloc(cap * sizeof *extra);
  lua_pushnil(L);
  while (extra && lua_next(L, 1)) {
    if (lua_type(L, -2) == LUA_TSTRING) {
      lua_pushvalue(L, -2);
      lua_rawget(L, known);
      int is_known = lua_toboolean(L, -1);
      lua_pop(L, 1);
      if (!is_known) {
        if (m == cap) {
          const char **ne = realloc(extra, 2 * cap * sizeof *ne);
          if (!ne)
            break;
          extra = ne;
          cap *= 2;
        }
        extra[m++] = lua_tostring(L, -2); /* key stays alive in the table */
      }
    }
    lua_pop(L, 1);
  }
  if (extra) {
    qsort(extra, m, sizeof *extra, cmp_str);
    for (size_t i = 0; i < m; i++) {
      lua_getfield(L, 1, extra[i]);
      luaL_addchar(&b, ' ');
      luaL_addstring(&b, extra[i]);
      luaL_addchar(&b, '=');
      add_value(&b, L, lua_gettop(L));
      lua_pop(L, 1);
    }
    free(extra);
  }
  lua_pop(L, 2); /* known, fields */
  luaL_pushresult(&b);
  return 1;
}

void pp_lua_push_record_mt(lua_State *L, const char *prefix,
                           const char *const *fields, size_t nfields) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "phaseprobe.record:");
  luaL_addstring(&b, prefix);
  for (size_t i = 0; i < nfields; i++) {
    luaL_addchar(&b, ' ');
    luaL_addstring(&b, fields[i]);
  }
  luaL_pushresult(&b);
  lua_pushvalue(L, -1);
  if (lua_rawget(L, LUA_REGISTRYINDEX) != LUA_TNIL) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  lua_createtable(L, 0, 4); /* metatable */
  lua_createtable(L, 0, 2); /* __index */
  lua_pushstring(L, prefix);
  lua_setfield(L, -2, "_prefix");
  lua_createtable(L, (int)nfields, 0);
  for (size_t i = 0; i < nfields; i++) {
    lua_pushstring(L, fields[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "_fields");
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, record_tostring, 1);
  lua_setfield(L, -3, "__tostring");
  lua_setfield(L, -2, "__index");
  lua_pushliteral(L, "phaseprobe.record");
  lua_setfield(L, -2, "__name");
  /* registry[key] = mt */
  lua_pushvalue(L, -2);
  lua_pushvalue(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
  lua_remove(L, -2);
}

/* Registry key of the table schema -> record metatable. */
static const char schema_mt_key = 'm';

/* Pushes the metatable of this schema's records (cached per schema). */
static void push_schema_mt(lua_State *L, const pp_schema *s) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &schema_mt_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
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
  push_schema_mt(L, s);
  int mt = lua_gettop(L);
  lua_getfield(L, mt, "__index");
  lua_getfield(L, -1, "_fields"); /* interned names: no rehashing per record */
  int fields = lua_gettop(L);
  lua_createtable(L, 0, (int)s->nfields + 2);
  for (size_t i = 0; i < s->nfields; i++) {
    lua_rawgeti(L, fields, (lua_Integer)i + 1);
    if (s->kind[i] == PP_FIELD_KERNEL_SRC)
      lua_pushstring(L, r->values[i] < 4 ? ksrc_names[r->values[i]] : "none");
    else
      lua_pushinteger(L, (lua_Integer)r->values[i]);
    lua_rawset(L, -3);
  }
  /* tags: " k=v k2=v2" */
  const char *p = r->tags;
  while (*p == ' ') {
    const char *k = p + 1, *eq = strchr(k, '=');
    if (!eq)
      break;
    const char *end = strchr(eq, ' ');
    if (!end)
      end = eq + strlen(eq);
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
