/*
 * lua_cupti.c: the Lua entry points of the CUPTI kernel-time source
 * (csrc/cuda/cupti.c), in pp.cuda beside the driver's.
 *
 *   pp.cuda.cupti_available()   -> true | false, why
 *   pp.cuda.cupti_start()       -> true | nil, why   (process-wide, counted)
 *   pp.cuda.cupti_stop()
 *   pp.cuda.cupti_info()        -> {available=, why=, path=, version=,
 *                                   active=, records=, kernels=, ...}
 *   pp.cuda.cupti_flush_ms([ms]) -> ms  (how often records are collected)
 *   pp.cuda.built_with_cupti    -- the CUPTI headers were there at build
 */
#include "pp_lua.h"
#include "pp_cupti.h"

#include <string.h>

/* ---- pp.cuda.cupti_* --------------------------------------------------------- */
static int l_cupti_available(lua_State *L) {
  char why[512];
  if (pp_cupti_available(why, sizeof why)) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  lua_pushstring(L, why);
  return 2;
}

int pp_lua_cupti_start(lua_State *L) {
  char why[512];
  if (pp_cupti_available(why, sizeof why) &&
      pp_cupti_start(why, sizeof why) == 0)
    return 0;
  luaL_pushfail(L);
  lua_pushstring(L, why);
  return 2;
}

static int l_cupti_start(lua_State *L) {
  if (pp_lua_cupti_start(L))
    return 2;
  lua_pushboolean(L, 1);
  return 1;
}

static int l_cupti_stop(lua_State *L) {
  (void)L;
  pp_cupti_stop();
  return 0;
}

static int l_cupti_info(lua_State *L) {
  char why[512] = "";
  int ok = pp_cupti_available(why, sizeof why);
  pp_cupti_stats st;
  pp_cupti_stats_get(&st);
  lua_createtable(L, 0, 16);
  lua_pushboolean(L, ok);
  lua_setfield(L, -2, "available");
  if (!ok) {
    lua_pushstring(L, why);
    lua_setfield(L, -2, "why");
  }
  lua_pushstring(L, pp_cupti_path());
  lua_setfield(L, -2, "path");
  pp_lua_set_int(L, "version", pp_cupti_version());
  lua_pushboolean(L, pp_cupti_active());
  lua_setfield(L, -2, "active");
  pp_lua_set_int(L, "starts", st.starts);
  pp_lua_set_int(L, "records", st.records);
  pp_lua_set_int(L, "kernels", st.kernels);
  pp_lua_set_int(L, "launches", st.launches);
  pp_lua_set_int(L, "matched", st.matched);
  pp_lua_set_int(L, "lost", st.lost);
  pp_lua_set_int(L, "dropped", st.dropped);
  pp_lua_set_int(L, "buffers", st.buffers);
  pp_lua_set_int(L, "buffer_bytes", st.buffer_bytes);
  pp_lua_set_int(L, "spans", st.spans);
  pp_lua_set_int(L, "spans_refused", st.spans_refused);
  pp_lua_set_int(L, "deferred", st.deferred);
  pp_lua_set_int(L, "incomplete", st.incomplete);
  pp_lua_set_int(L, "unclaimed", st.unclaimed);
  pp_lua_set_int(L, "flushes", st.flushes);
  pp_lua_set_int(L, "forced_flushes", st.forced_flushes);
  pp_lua_set_int(L, "lock_waits", st.lock_waits);
  pp_lua_set_int(L, "lock_wait_ns", st.lock_wait_ns);
  pp_lua_set_int(L, "pending", st.pending);
  pp_lua_set_int(L, "flush_ms", pp_cupti_flush_ms(0));
  return 1;
}

/* How often the flusher collects CUPTI's records while a window waits for
 * them (1..1000 ms; default 10): a longer period costs the dispatches less
 * (each flush holds the driver's locks for about 55 us on an H200) and
 * completes their records later. */
static int l_cupti_flush_ms(lua_State *L) {
  if (!lua_isnoneornil(L, 1)) {
    lua_Integer ms = luaL_checkinteger(L, 1);
    luaL_argcheck(L, ms >= 1 && ms <= 1000, 1, "milliseconds must be 1..1000");
    pp_cupti_flush_ms((unsigned)ms);
  }
  lua_pushinteger(L, (lua_Integer)pp_cupti_flush_ms(0));
  return 1;
}

static const luaL_Reg cupti_fns[] = {{"cupti_available", l_cupti_available},
                                     {"cupti_flush_ms", l_cupti_flush_ms},
                                     {"cupti_start", l_cupti_start},
                                     {"cupti_stop", l_cupti_stop},
                                     {"cupti_info", l_cupti_info},
                                     {NULL, NULL}};

/* With the module table on top: adds the cupti_* functions to its 'cuda'
 * table. */
void pp_lua_open_cupti(lua_State *L) {
  if (lua_getfield(L, -1, "cuda") == LUA_TTABLE) {
    luaL_setfuncs(L, cupti_fns, 0);
#if defined(PP_HAVE_CUPTI_H) && defined(PP_HAVE_CUDA_H)
    lua_pushboolean(L, 1);
#else
    lua_pushboolean(L, 0);
#endif
    lua_setfield(L, -2, "built_with_cupti");
  }
  lua_pop(L, 1);
}
