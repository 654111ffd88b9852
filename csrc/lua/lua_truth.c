/*
 * lua_truth.c: the CUPTI source's Lua entry points (in pp.cuda) and
 * pp.truth, the helpers the ground-truth harness needs.
 *
 *   pp.cuda.cupti_available()   -> true | false, why
 *   pp.cuda.cupti_start()       -> true | nil, why   (process-wide, counted)
 *   pp.cuda.cupti_stop()
 *   pp.cuda.cupti_info()        -> {available=, why=, path=, version=,
 *                                   active=, records=, kernels=, ...}
 *   pp.cuda.built_with_cupti    -- the CUPTI headers were there at build
 *
 *   pp.truth.monotonic_ns()     -> clock_gettime(CLOCK_MONOTONIC) in ns
 *   pp.truth.clock_pair()       -> fast_ns, monotonic_ns, spread_ns
 *   pp.truth.spin_ns(ns)        -- busy-waits on the probe clock
 *   pp.truth.sleep_ns(ns)       -- sleeps (nanosleep, resumed after signals)
 *
 * clock_pair reads the monotonic clock, the probe's clock (pp.now) and the
 * monotonic clock again, keeps the tightest of a few such brackets and
 * returns the probe reading with the bracket's midpoint and width: the two
 * readings are simultaneous to within spread_ns / 2.
 */
#include "pp_lua.h"
#include "pp_cupti.h"

#include <errno.h>
#include <string.h>
#include <time.h>

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

static int l_cupti_start(lua_State *L) {
  char why[512];
  if (pp_cupti_available(why, sizeof why) &&
      pp_cupti_start(why, sizeof why) == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  luaL_pushfail(L);
  lua_pushstring(L, why);
  return 2;
}

static int l_cupti_stop(lua_State *L) {
  (void)L;
  pp_cupti_stop();
  return 0;
}

static void set_int(lua_State *L, const char *k, uint64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
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
  set_int(L, "version", pp_cupti_version());
  lua_pushboolean(L, pp_cupti_active());
  lua_setfield(L, -2, "active");
  set_int(L, "starts", st.starts);
  set_int(L, "records", st.records);
  set_int(L, "kernels", st.kernels);
  set_int(L, "launches", st.launches);
  set_int(L, "matched", st.matched);
  set_int(L, "lost", st.lost);
  set_int(L, "dropped", st.dropped);
  set_int(L, "buffers", st.buffers);
  set_int(L, "buffer_bytes", st.buffer_bytes);
  set_int(L, "spans", st.spans);
  set_int(L, "spans_refused", st.spans_refused);
  set_int(L, "deferred", st.deferred);
  set_int(L, "incomplete", st.incomplete);
  set_int(L, "unclaimed", st.unclaimed);
  set_int(L, "flushes", st.flushes);
  set_int(L, "forced_flushes", st.forced_flushes);
  set_int(L, "pending", st.pending);
  lua_pushinteger(L, (lua_Integer)pp_cupti_flush_ms(0));
  lua_setfield(L, -2, "flush_ms");
  return 1;
}

static const luaL_Reg cupti_fns[] = {{"cupti_available", l_cupti_available},
                                     {"cupti_start", l_cupti_start},
                                     {"cupti_stop", l_cupti_stop},
                                     {"cupti_info", l_cupti_info},
                                     {NULL, NULL}};

/* ---- pp.truth ---------------------------------------------------------------- */
static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int l_monotonic_ns(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)mono_ns());
  return 1;
}

static int l_clock_pair(lua_State *L) {
  uint64_t best_fast = 0, best_mid = 0, best_spread = UINT64_MAX;
  for (int i = 0; i < 7; i++) {
    uint64_t m0 = mono_ns();
    uint64_t f = pp_now_ns();
    uint64_t m1 = mono_ns();
    if (m1 - m0 < best_spread) {
      best_spread = m1 - m0;
      best_fast = f;
      best_mid = m0 + (m1 - m0) / 2;
    }
  }
  lua_pushinteger(L, (lua_Integer)best_fast);
  lua_pushinteger(L, (lua_Integer)best_mid);
  lua_pushinteger(L, (lua_Integer)best_spread);
  return 3;
}

static int l_spin_ns(lua_State *L) {
  lua_Integer ns = luaL_checkinteger(L, 1);
  luaL_argcheck(L, ns >= 0 && ns <= 60000000000LL, 1,
                "nanoseconds must be 0..60e9");
  pp_spin_ns((uint64_t)ns);
  return 0;
}

static int l_sleep_ns(lua_State *L) {
  lua_Integer ns = luaL_checkinteger(L, 1);
  luaL_argcheck(L, ns >= 0 && ns <= 3600000000000LL, 1,
                "nanoseconds must be 0..3600e9");
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  return 0;
}

static const luaL_Reg truth_fns[] = {{"monotonic_ns", l_monotonic_ns},
                                     {"clock_pair", l_clock_pair},
                                     {"spin_ns", l_spin_ns},
                                     {"sleep_ns", l_sleep_ns},
                                     {NULL, NULL}};

/* With the module table on top: adds the cupti_* functions to its 'cuda'
 * table and sets its 'truth' table. */
void pp_lua_open_truth(lua_State *L) {
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
  luaL_newlib(L, truth_fns);
  lua_setfield(L, -2, "truth");
}
