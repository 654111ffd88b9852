/*
 * truth_module.c: phaseprobe_truth, the helpers that the ground-truth
 * harness (tools/truth.lua) and its spec (spec/truth_spec.lua) need beside
 * the probe. Not part of phaseprobe.so and never installed: `make truth`
 * (and `make`, for the specs) builds build/phaseprobe_truth.so.
 *
 *   package.cpath = "./build/?.so;" .. package.cpath
 *   local truth = require "phaseprobe_truth"
 *   truth.monotonic_ns()     -> clock_gettime(CLOCK_MONOTONIC) in ns
 *   truth.clock_pair()       -> probe_ns, monotonic_ns, spread_ns
 *   truth.spin_ns(ns)        -- busy-waits on the probe clock
 *   truth.sleep_ns(ns)       -- sleeps (nanosleep, resumed after signals)
 *
 * The probe clock is the one of the phaseprobe.so this process loaded
 * (require "phaseprobe"), not a copy: a second copy would calibrate the
 * TSC again, and the harness would measure the drift of a clock the probe
 * does not use. Its functions are found by address: pp.now is a C function
 * of that module, dladdr names the file it lives in, and dlopen with
 * RTLD_NOLOAD gives the handle of the copy already loaded, where dlsym
 * finds the exported clock functions of phaseprobe.h.
 *
 * clock_pair reads the monotonic clock, the probe clock (pp.now) and the
 * monotonic clock again, keeps the tightest of a few such brackets and
 * returns the probe reading with the bracket's midpoint and width: the two
 * readings are simultaneous to within spread_ns / 2.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>
#include <time.h>

typedef uint64_t pp_ticks;

/* The loaded probe's clock (phaseprobe.h: pp_now, pp_ticks_to_ns,
 * pp_now_ns). */
static pp_ticks (*probe_now)(void);
static uint64_t (*probe_ticks_to_ns)(pp_ticks, pp_ticks);
static uint64_t (*probe_now_ns)(void);

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
    uint64_t f = probe_now_ns();
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

/* The probe's own busy-wait (pp_spin_ns): ticks read back to back, no
 * PAUSE (clock.c says why). */
static int l_spin_ns(lua_State *L) {
  lua_Integer ns = luaL_checkinteger(L, 1);
  luaL_argcheck(L, ns >= 0 && ns <= 60000000000LL, 1,
                "nanoseconds must be 0..60e9");
  pp_ticks t0 = probe_now();
  while (probe_ticks_to_ns(t0, probe_now()) < (uint64_t)ns) {
  }
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

/* Finds the clock functions of the loaded phaseprobe.so; raises when the
 * module is not there or lacks them. */
static void find_probe_clock(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "phaseprobe");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "now");
  lua_CFunction now = lua_tocfunction(L, -1);
  lua_pop(L, 2);
  Dl_info info;
  if (!now || !dladdr((void *)now, &info) || !info.dli_fname)
    luaL_error(L, "phaseprobe_truth: phaseprobe.now is not a C function of a "
                  "loaded module");
  void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!h)
    luaL_error(L, "phaseprobe_truth: %s is not loaded: %s", info.dli_fname,
               dlerror());
  *(void **)&probe_now = dlsym(h, "pp_now");
  *(void **)&probe_ticks_to_ns = dlsym(h, "pp_ticks_to_ns");
  *(void **)&probe_now_ns = dlsym(h, "pp_now_ns");
  dlclose(h); /* the reference RTLD_NOLOAD took; the module stays */
  if (!probe_now || !probe_ticks_to_ns || !probe_now_ns)
    luaL_error(L, "phaseprobe_truth: %s does not export the probe clock "
                  "(pp_now, pp_ticks_to_ns, pp_now_ns)",
               info.dli_fname);
}

static const luaL_Reg truth_fns[] = {{"monotonic_ns", l_monotonic_ns},
                                     {"clock_pair", l_clock_pair},
                                     {"spin_ns", l_spin_ns},
                                     {"sleep_ns", l_sleep_ns},
                                     {NULL, NULL}};

__attribute__((visibility("default"))) int
luaopen_phaseprobe_truth(lua_State *L);

int luaopen_phaseprobe_truth(lua_State *L) {
  find_probe_clock(L);
  luaL_newlib(L, truth_fns);
  return 1;
}
