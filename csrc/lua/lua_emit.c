/*
 * lua_emit.c: pp.emit, the dispatch's record from Lua.
 *
 *   local rec = pp.emit{ seq = 1, ptx_cache_hits = 3 }
 *
 * The fields a caller gives (the reference's emit takes them from its
 * dispatch's own telemetry) are read from the table and checked, each
 * unknown or wrong one raising with what is valid; pp_emit (record.c) then
 * builds the record from the thread's accumulator, hands it to the sinks
 * and the store, and the light record object (lua_record.c) is returned.
 * Registered by lua_phaseprobe.c beside the probe's other entry points.
 */
#include "pp_lua.h"

#include <string.h>

/* emit{seq=, wall_ns=, enqueue_ns=, wait_ns=, device_window_ns=,
 * <cache>_cache_hits=, <cache>_cache_misses=, <cache>_cache_disk_hits=}
 * -> record. Every field is optional; one given overrides what the probe
 * has (cache values: the dispatch's cache events). Unknown fields raise. */
static const char *const emit_fields[] = {"seq", "wall_ns", "enqueue_ns",
                                          "wait_ns", "device_window_ns", NULL};

/* Raises for the key on top of the stack: its text first (luaL_tolstring
 * pushes it), then the valid fields, so each argument names what it should. */
static int emit_unknown(lua_State *L, const pp_schema *s) {
  int nul = pp_lua_hasnul(L, -1);
  const char *key = luaL_tolstring(L, -1, NULL);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "seq, wall_ns, enqueue_ns, wait_ns, device_window_ns");
  for (size_t i = 0; i < s->ncaches; i++) {
    lua_pushfstring(L, ", %s_cache_hits, %s_cache_misses, %s_cache_disk_hits",
                    s->cache[i], s->cache[i], s->cache[i]);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  return luaL_error(L, "phaseprobe.emit: unknown field '%s'%s (valid: %s)",
                    key, nul ? " (it contains a NUL byte)" : "",
                    lua_tostring(L, -1));
}

/* The value at the top of the stack, for field `name`. */
static uint64_t emit_value(lua_State *L, const char *name) {
  lua_Integer i = lua_tointeger(L, -1);
  if (!lua_isinteger(L, -1) || i < 0)
    luaL_error(L, "phaseprobe.emit: field '%s' must be a non-negative "
                  "integer, got %s",
               name, luaL_tolstring(L, -1, NULL));
  return (uint64_t)i;
}

static void emit_args(lua_State *L, int t, const pp_schema *s,
                      pp_emit_args *a) {
  uint64_t *plain[] = {&a->seq, &a->wall_ns, &a->enqueue_ns, &a->wait_ns,
                       &a->device_window_ns};
  lua_pushnil(L);
  while (lua_next(L, t)) {
    const char *k = pp_lua_tokey(L, -2);
    int done = 0;
    for (int i = 0; k && !done && emit_fields[i]; i++)
      if (strcmp(k, emit_fields[i]) == 0) {
        *plain[i] = emit_value(L, k);
        a->given |= 1u << i;
        done = 1;
      }
    for (size_t c = 0; k && !done && c < s->ncaches; c++) {
      size_t n = strlen(s->cache[c]);
      if (strncmp(k, s->cache[c], n) != 0)
        continue;
      const char *rest = k + n;
      if (strcmp(rest, "_cache_hits") == 0) {
        a->cache_hits[c] = emit_value(L, k);
        a->given |= PP_GIVEN_HITS(c);
        done = 1;
      } else if (strcmp(rest, "_cache_misses") == 0) {
        a->cache_misses[c] = emit_value(L, k);
        a->given |= PP_GIVEN_MISSES(c);
        done = 1;
      } else if (strcmp(rest, "_cache_disk_hits") == 0) {
        a->cache_disk_hits[c] = emit_value(L, k);
        a->given |= PP_GIVEN_DISK_HITS(c);
        done = 1;
      }
    }
    if (!done) {
      lua_pop(L, 1);
      emit_unknown(L, s);
    }
    lua_pop(L, 1);
  }
}

int pp_lua_emit(lua_State *L) {
  if (!pp_enabled())
    return 0;
  pp_emit_args a;
  memset(&a, 0, sizeof a);
  if (!lua_isnoneornil(L, 1)) {
    luaL_checktype(L, 1, LUA_TTABLE);
    const pp_schema *s = pp_open_schema(); /* the open dispatch's, or the */
    emit_args(L, 1, s ? s : pp_schema_current(), &a); /* thread's */
  }
  pp_acc *acc = pp_acc_peek();
  if (!(acc && acc->open && acc->begin_ticks) && !(a.given & PP_GIVEN_WALL))
    /* No pp.begin: the probe measured no wall, so the caller gives it, as
     * the reference's caller does. */
    return luaL_error(L, "phaseprobe.emit: no wall time: no dispatch was "
                         "begun on this thread (phaseprobe.begin) and no "
                         "wall_ns was given");
  /* A mask with no bit set would be read as the 0.1.0 form. */
  if (!a.given) {
    a = PP_EMIT_ARGS_AUTO;
  }
  pp_record r;
  if (pp_emit(&a, &r) != 0)
    return 0;
  pp_lua_push_record(L, &r);
  return 1;
}
