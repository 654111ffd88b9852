/*
 * lua_module.c: luaopen_phaseprobe, the module assembled from the binding
 * files: the probe's entry points (lua_phaseprobe.c), schemas
 * (lua_schema.c), the store, sinks and notices (lua_sink.c), records
 * (lua_record.c), pp.ptx, pp.cuda, pp.parse, pp.numeric, pp.text; here
 * also the clock's entry points (pp.clock, pp.select_clock, pp.now,
 * pp.ticks_to_ns, pp.thread_id), the state's sentinel that stops the
 * sink's writer before the module is unloaded, and the Lua side
 * (pp.records, ...), reached lazily through package.path.
 */
#include "pp_lua.h"

#include <string.h>

/* ---- clock --------------------------------------------------------------- */
static int l_clock(lua_State *L) {
  const pp_clock_info *c = pp_clock();
  lua_createtable(L, 0, 6);
  lua_pushstring(L, c->name);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, c->reason);
  lua_setfield(L, -2, "reason");
  lua_pushboolean(L, c->tsc_invariant);
  lua_setfield(L, -2, "tsc_invariant");
  lua_pushnumber(L, c->tsc_ghz);
  lua_setfield(L, -2, "tsc_ghz");
  lua_pushstring(L, c->chosen_by);
  lua_setfield(L, -2, "chosen_by");
  lua_createtable(L, 0, 3);
  static const char *const names[] = {"tsc", "monotonic", "monotonic_raw"};
  for (int k = 0; k < 3; k++) {
    if (k == PP_CLOCK_TSC && c->tsc_ghz == 0.0)
      continue;
    lua_pushnumber(L, c->read_ns[k]);
    lua_setfield(L, -2, names[k]);
  }
  lua_setfield(L, -2, "read_ns");
  pp_lua_show(L, -1, "clock");
  return 1;
}

static int l_select_clock(lua_State *L) {
  static const char *const names[] = {"tsc", "monotonic", "monotonic_raw", NULL};
  int k = pp_lua_checkoption(L, 1, NULL, names);
  pp_acc *a = pp_acc_get();
  if (a && a->open && a->begin_ticks)
    return luaL_error(L, "phaseprobe.select_clock: a dispatch is open on this "
                         "thread (its start was read on the clock in use): "
                         "emit it first");
  if (a && a->depth)
    return luaL_error(L, "phaseprobe.select_clock: a scope is open on this "
                         "thread (its start was read on the clock in use): "
                         "close it first");
  if (pp_clock_select((pp_clock_kind)k) != 0) {
    luaL_pushfail(L);
    if (pp_clock_pinned())
      lua_pushfstring(L, "cannot switch the probe clock to '%s' while CUPTI "
                         "collection is on (CUPTI's timestamps are on it)",
                      names[k]);
    else
      lua_pushfstring(L, "clock '%s' is not usable here", names[k]);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int l_now(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)pp_now_ns());
  return 1;
}

/* ticks_to_ns(from, to): marks to ns, 0 backwards; a number no mark can
 * be (pp_start_check) is refused, as the charges refuse it. */
static int l_ticks_to_ns(lua_State *L) {
  pp_ticks t[2];
  pp_ticks now = pp_now_inline();
  for (int i = 0; i < 2; i++) {
    t[i] = (pp_ticks)luaL_checkinteger(L, i + 1);
    int why = pp_start_check(t[i], now);
    if (why != PP_START_OK)
      luaL_argerror(L, i + 1,
                    why == PP_START_EARLY
                        ? "not a mark from phaseprobe.mark(): earlier than the "
                          "probe clock's first reading (pp.now() is in ns)"
                        : "not a mark from phaseprobe.mark(): later than now");
  }
  lua_pushinteger(L, (lua_Integer)pp_ticks_to_ns(t[0], t[1]));
  return 1;
}

static int l_thread_id(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)pp_thread_id());
  return 1;
}

/* ---- the Lua side, reached lazily ----------------------------------------- */
/* pp.records -> require "phaseprobe.records": a Lua submodule reached from
 * the main table on first use, and kept there. It is found the way any
 * module is, through package.preload or the caller's package.path, which
 * the module never edits (from a checkout, bin/phaseprobe and tools/repl
 * put lua/ on it); where it is not found, the field is nil. An error
 * inside the submodule itself is raised, not hidden. */
static int lazy_index(lua_State *L) {
  const char *k = pp_lua_fieldkey(L, 2); /* "" for "records\0x" */
  if (!*k || strlen(k) > 64)
    return 0;
  for (const char *p = k; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || *p == '_'))
      return 0;
  const char *name = lua_pushfstring(L, "phaseprobe.%s", k); /* 3 */
  lua_getglobal(L, "package");                               /* 4 */
  if (!lua_istable(L, 4))
    return 0;
  int found = 0;
  if (lua_getfield(L, 4, "loaded") == LUA_TTABLE &&
      lua_getfield(L, -1, name) != LUA_TNIL && lua_toboolean(L, -1))
    found = 1;
  lua_settop(L, 4);
  if (!found && lua_getfield(L, 4, "preload") == LUA_TTABLE &&
      lua_getfield(L, -1, name) != LUA_TNIL)
    found = 1;
  lua_settop(L, 4);
  if (!found && lua_getfield(L, 4, "searchpath") == LUA_TFUNCTION) {
    lua_pushvalue(L, 3);
    lua_getfield(L, 4, "path");
    if (lua_isstring(L, -1)) {
      lua_call(L, 2, 1);
      found = !lua_isnil(L, -1);
    }
  }
  if (!found)
    return 0;
  lua_getglobal(L, "require");
  lua_pushvalue(L, 3);
  lua_call(L, 1, 1);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, -2);
  lua_rawset(L, 1);
  return 1;
}

static const luaL_Reg clock_fns[] = {
    {"clock", l_clock},
    {"select_clock", l_select_clock},
    {"now", l_now},
    {"ticks_to_ns", l_ticks_to_ns},
    {"thread_id", l_thread_id},
    {NULL, NULL}};

/* The state's sentinel: collected when the state closes, before the
 * package library dlcloses the module (finalizers run in the reverse order
 * of their marking, and this one is marked after the package library's).
 * It flushes the state's lines and, for the last state, stops the sink's
 * writer thread while its code is still mapped. */
static int sentinel_gc(lua_State *L) {
  int *open = lua_touserdata(L, 1);
  if (open && *open) {
    *open = 0;
    pp_sink_state_close();
  }
  return 0;
}

static void add_sentinel(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, "phaseprobe.sentinel") != LUA_TNIL) {
    lua_pop(L, 1); /* loaded again in the same state: one is enough */
    return;
  }
  lua_pop(L, 1);
  int *open = lua_newuserdatauv(L, sizeof *open, 0);
  *open = 1;
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, sentinel_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushliteral(L, "phaseprobe.sentinel");
  lua_setfield(L, -2, "__name");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, "phaseprobe.sentinel");
  pp_sink_state_open();
}

PP_EXPORT int luaopen_phaseprobe(lua_State *L) {
  pp_schema_default();
  add_sentinel(L);

  lua_newtable(L); /* the module */
  pp_lua_open_probe(L);
  luaL_setfuncs(L, clock_fns, 0);
  pp_lua_open_schema(L); /* pp.schema, pp.use, pp.default_schema */
  pp_lua_open_sink(L);   /* pp.store, pp.sink, pp.flush, pp.notices, ... */
  pp_lua_open_record(L);
  pp_lua_open_ptx(L);
  lua_setfield(L, -2, "ptx");
  pp_lua_open_cuda(L);
  lua_setfield(L, -2, "cuda");
  pp_lua_open_parse(L);
  lua_setfield(L, -2, "parse");
  pp_lua_open_numeric(L);
  lua_setfield(L, -2, "numeric");
  pp_lua_open_text(L);
  lua_setfield(L, -2, "text");
  pp_lua_open_cupti(L); /* pp.cuda.cupti_* */

  lua_pushliteral(L, PP_VERSION);
  lua_setfield(L, -2, "version");

  lua_newtable(L);
  lua_pushcfunction(L, lazy_index);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  return 1;
}
