/*
 * lua_schema.c: schema handles, "phaseprobe.schema" (this file is the
 * metatable's one owner), and pp.schema, pp.use, pp.default_schema.
 *
 *   local s = pp.schema{ prefix = "myrt", phases = {"plan", "run"},
 *                        nested = {"plan_hash"}, counts = {"ops"} }
 *   pp.use(pp.default_schema())
 *
 * A schema (csrc/probe/schema.c) says what a record holds: its line prefix,
 * phases, nested regions, counts and caches. The probe charges against the
 * calling thread's schema (lua_phaseprobe.c), records carry theirs
 * (lua_record.c), and the other binding files reach handles through
 * pp_lua_push_schema and pp_lua_test_schema (pp_lua.h).
 */
#include "pp_lua.h"

#include <stddef.h>
#include <string.h>

#define SCHEMA_MT "phaseprobe.schema"

/* ---- handles ------------------------------------------------------------ */
typedef struct {
  const pp_schema *s;
} schema_ud;

/* How every binding file pushes and reads schema handles (pp_lua.h). */
void pp_lua_push_schema(lua_State *L, const pp_schema *s) {
  schema_ud *u = pp_lua_newobj(L, sizeof *u, 0);
  u->s = s;
  pp_lua_setclass(L, SCHEMA_MT);
}

const pp_schema *pp_lua_test_schema(lua_State *L, int idx) {
  schema_ud *u = pp_lua_testudata(L, idx, SCHEMA_MT);
  return u ? u->s : NULL;
}

static const pp_schema *check_schema(lua_State *L, int i) {
  return ((schema_ud *)pp_lua_checkudata(L, i, SCHEMA_MT))->s;
}

/* The name lists a schema handle answers: s.phases, s.phase_labels
 * ("prepare_ns"), s.nested, s.nested_labels ("sub_ptx_digest_ns"),
 * s.counts, s.caches and s.fields (every field of its line, in order). */
static const struct {
  const char *key;
  size_t count; /* offsetof the list's length in pp_schema */
  const char *(*name)(const pp_schema *, size_t);
} lists[] = {
    {"phases", offsetof(pp_schema, nphases), pp_schema_phase_name},
    {"phase_labels", offsetof(pp_schema, nphases), pp_schema_phase_label},
    {"nested", offsetof(pp_schema, nnested), pp_schema_nested_name},
    {"nested_labels", offsetof(pp_schema, nnested), pp_schema_nested_label},
    {"counts", offsetof(pp_schema, ncounts), pp_schema_count_name},
    {"caches", offsetof(pp_schema, ncaches), pp_schema_cache_name},
    {"fields", offsetof(pp_schema, nfields), pp_schema_field_name},
};

static int schema_index(lua_State *L) {
  const pp_schema *s = check_schema(L, 1);
  const char *k = pp_lua_fieldkey(L, 2); /* s["prefix\0x"] is not s.prefix */
  if (strcmp(k, "prefix") == 0) {
    lua_pushstring(L, s->prefix);
    return 1;
  }
  if (strcmp(k, "id") == 0) {
    lua_pushinteger(L, s->id);
    return 1;
  }
  for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
    if (strcmp(k, lists[l].key) != 0)
      continue;
    size_t n;
    memcpy(&n, (const char *)s + lists[l].count, sizeof n);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
      lua_pushstring(L, lists[l].name(s, i));
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
  }
  lua_pushnil(L);
  return 1;
}

static int schema_tostring(lua_State *L) {
  const pp_schema *s = check_schema(L, 1);
  lua_pushfstring(L, "phaseprobe.schema '%s' (%d phases, %d nested, %d counts)",
                  s->prefix, (int)s->nphases, (int)s->nnested, (int)s->ncounts);
  return 1;
}

static int schema_eq(lua_State *L) {
  lua_pushboolean(L, check_schema(L, 1) == check_schema(L, 2));
  return 1;
}

/* Reads list field `name` of the definition table into names[] (by its
 * raw length). The list stays on the stack, keeping its strings alive until
 * the schema is declared (a later field's __index may drop it from the
 * definition): call with room for it. */
static size_t read_list(lua_State *L, int def, const char *name,
                        const char **out, size_t max) {
  lua_getfield(L, def, name);
  size_t n = 0;
  if (lua_isnil(L, -1))
    return 0;
  if (!lua_istable(L, -1))
    luaL_error(L, "phaseprobe.schema: field '%s' must be a list of names", name);
  lua_Integer len = (lua_Integer)lua_rawlen(L, -1);
  if (len > (lua_Integer)max)
    luaL_error(L, "phaseprobe.schema: %s: %I given, at most %d", name, len,
               (int)max);
  for (lua_Integer i = 1; i <= len; i++) {
    lua_rawgeti(L, -1, i);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "phaseprobe.schema: %s[%d] must be a string, got %s", name,
                 (int)i, luaL_typename(L, -1));
    if (pp_lua_hasnul(L, -1))
      luaL_error(L, "phaseprobe.schema: %s[%d] contains a NUL byte", name,
                 (int)i);
    out[n++] = lua_tostring(L, -1); /* kept alive by the list, on the stack */
    lua_pop(L, 1);
  }
  return n;
}

/* schema() -> current; schema{prefix=, phases=, nested=, counts=, caches=} ->
 * a new (validated) schema, made current unless use=false. */
static int l_schema(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    pp_lua_push_schema(L, pp_schema_current());
    return 1;
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  /* A misspelt field would otherwise be left out silently. */
  static const char *const known[] = {"prefix", "phases", "nested", "counts",
                                      "caches", "use", NULL};
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    lua_pop(L, 1);
    int ok = 0;
    const char *k = pp_lua_tokey(L, -1);
    for (int i = 0; k && known[i]; i++)
      ok |= strcmp(k, known[i]) == 0;
    if (!ok) {
      int nul = pp_lua_hasnul(L, -1);
      luaL_error(L, "phaseprobe.schema: unknown field '%s'%s (valid: prefix, "
                    "phases, nested, counts, caches, use)",
                 luaL_tolstring(L, -1, NULL),
                 nul ? " (it contains a NUL byte)" : "");
    }
  }
  const char *phases[PP_MAX_PHASES + 1], *nested[PP_MAX_NESTED + 1],
      *counts[PP_MAX_COUNTS + 1], *caches[PP_MAX_CACHES + 1];
  pp_schema_def d;
  /* Every value read stays on the stack until the schema is declared. */
  lua_getfield(L, 1, "prefix");
  if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
    luaL_error(L, "phaseprobe.schema: field 'prefix' must be a string, got %s",
               luaL_typename(L, -1));
  if (pp_lua_hasnul(L, -1))
    luaL_error(L, "phaseprobe.schema: field 'prefix' contains a NUL byte");
  d.prefix = lua_tostring(L, -1);
  if (!d.prefix)
    d.prefix = "phaseprobe";
  d.phases = phases;
  d.nphases = read_list(L, 1, "phases", phases, PP_MAX_PHASES + 1);
  d.nested = nested;
  d.nnested = read_list(L, 1, "nested", nested, PP_MAX_NESTED + 1);
  d.counts = counts;
  d.ncounts = read_list(L, 1, "counts", counts, PP_MAX_COUNTS + 1);
  d.caches = caches;
  d.ncaches = read_list(L, 1, "caches", caches, PP_MAX_CACHES + 1);
  if (lua_isnil(L, -1)) {
    caches[0] = "ptx";
    d.ncaches = 1;
  }
  char err[256];
  const pp_schema *s = pp_schema_declare(&d, err, sizeof err);
  if (!s)
    return luaL_error(L, "phaseprobe.schema: %s", err);
  lua_getfield(L, 1, "use");
  if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
    luaL_error(L, "phaseprobe.schema: field 'use' must be a boolean, got %s",
               luaL_typename(L, -1));
  int use = lua_isnil(L, -1) || lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (use)
    pp_schema_use(s);
  pp_lua_push_schema(L, s);
  return 1;
}

static int l_use(lua_State *L) {
  pp_schema_use(check_schema(L, 1));
  return 0;
}

static int l_default_schema(lua_State *L) {
  pp_lua_push_schema(L, pp_schema_default());
  return 1;
}

/* Registers the class; with the module table on top, adds pp.schema,
 * pp.use and pp.default_schema. */
void pp_lua_open_schema(lua_State *L) {
  pp_lua_class_new(L, &(pp_lua_class){.name = SCHEMA_MT, .get = schema_index,
                                      .tostring = schema_tostring,
                                      .eq = schema_eq});
  static const luaL_Reg fns[] = {{"schema", l_schema},
                                 {"use", l_use},
                                 {"default_schema", l_default_schema},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
