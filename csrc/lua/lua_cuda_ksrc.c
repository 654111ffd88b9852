/*
 * lua_cuda_ksrc.c: kernel-time sources and event-pair calibration, for Lua.
 *
 *   ctx:kernel_source("cupti")          -- its windows read CUPTI (starts
 *                                       -- collection; nil, why if absent)
 *   ctx:kernel_source("event")          -- back to the inner event pair
 *   ctx:kernel_source()                 -> "event" | "cupti"
 *   local floor, cal = ctx:calibrate_events{samples = 200}
 *                                       -- windows then report this floor
 *   w:launch_loop{..., source = "cupti"}-- per window
 *   w:collect()                         -> device_window_ns, kernel_ns
 *                                          (nil, nil for a window without
 *                                          events: CUPTI completes the record)
 *   w:wait([ms])                        -> CUPTI's window_ns, kernel_ns
 *   w.kernel_src, w.event_kernel_ns, w.kernel_calibrated_ns, w.floor_ns,
 *   w.cupti_kernel_ns, w.cupti_kernels, w.cupti_why   (after collect)
 *   w.timeline                          -- after w:wait(): kernels,
 *                                          kernel_ns, window_ns, launch_at_ns,
 *                                          kernel_first_ns, kernel_last_ns,
 *                                          close_ns (from the window's
 *                                          open), launch_latency_ns,
 *                                          host_gap_ns
 */
#include "pp_lua_cuda.h"

#ifdef PP_HAVE_CUDA_H

#include "pp_cupti.h"

#include <string.h>

pp_kernel_src lcu_opt_ksrc(lua_State *L, int idx, const char *what,
                           pp_kernel_src def) {
  if (lua_isnoneornil(L, idx))
    return def;
  const char *s = pp_lua_fieldkey(L, idx);
  if (strcmp(s, "event") == 0)
    return PP_KSRC_EVENT;
  if (strcmp(s, "cupti") == 0)
    return PP_KSRC_CUPTI;
  int nul = pp_lua_hasnul(L, idx);
  return (pp_kernel_src)luaL_error(
      L, "%s: field 'source' must be \"event\" or \"cupti\", got %s%s", what,
      luaL_tolstring(L, idx, NULL), nul ? " (it contains a NUL byte)" : "");
}

void lcu_check_ksrc(lua_State *L, pp_kernel_src src, const char *what) {
  if (src != PP_KSRC_CUPTI || pp_cupti_active())
    return;
  char why[512];
  if (!pp_cupti_available(why, sizeof why))
    luaL_error(L, "%s: source 'cupti' is not available here: %s", what, why);
  luaL_error(L, "%s: source 'cupti' needs CUPTI collection on: call "
                "ctx:kernel_source(\"cupti\") or pp.cuda.cupti_start() first",
             what);
}

void lcu_ctx_release_ksrc(lcu_ctx *c) {
  if (c->cupti_held) {
    c->cupti_held = 0;
    pp_cupti_stop();
  }
  c->ksrc = PP_KSRC_EVENT;
}

/* ctx:kernel_source([name]) -> name | nil, why */
int lcu_ctx_kernel_source(lua_State *L) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  PP_CHECK_OPEN(L, !c->closed, "context");
  if (lua_isnoneornil(L, 2)) {
    lua_pushstring(L, pp_kernel_src_name(c->ksrc ? c->ksrc : PP_KSRC_EVENT));
    return 1;
  }
  static const char *const names[] = {"event", "cupti", NULL};
  int want = pp_lua_checkoption(L, 2, NULL, names);
  if (want == 0) {
    lcu_ctx_release_ksrc(c);
  } else if (!c->cupti_held) {
    if (pp_lua_cupti_start(L))
      return 2;
    c->cupti_held = 1;
    c->ksrc = PP_KSRC_CUPTI;
  }
  lua_pushstring(L, pp_kernel_src_name(c->ksrc ? c->ksrc : PP_KSRC_EVENT));
  return 1;
}

#define CAL_FIELD(name, kind) LCU_FIELD(pp_cuda_calibration, #name, kind, name)
/* A calibration's figures, those of the CUPTI method, and of each point. */
static const lcu_field cal_fields[] = {
    CAL_FIELD(samples, LCU_SIZE),          CAL_FIELD(floor_ns, LCU_U64),
    CAL_FIELD(event_min_ns, LCU_U64),      CAL_FIELD(event_median_ns, LCU_U64),
    CAL_FIELD(event_p90_ns, LCU_U64),      CAL_FIELD(event_max_ns, LCU_U64),
    CAL_FIELD(host_ns, LCU_U64),           {NULL, LCU_INT, 0}};
static const lcu_field cal_cupti_fields[] = {
    CAL_FIELD(cupti_median_ns, LCU_U64), CAL_FIELD(diff_min_ns, LCU_U64),
    CAL_FIELD(diff_p90_ns, LCU_U64),     CAL_FIELD(diff_max_ns, LCU_U64),
    {NULL, LCU_INT, 0}};
#undef CAL_FIELD
#define POINT_FIELD(name, kind) LCU_FIELD(pp_cuda_cal_point, #name, kind, name)
static const lcu_field point_fields[] = {
    POINT_FIELD(kernel_ns, LCU_U64), POINT_FIELD(pair_ns, LCU_U64),
    POINT_FIELD(floor_ns, LCU_U64),  POINT_FIELD(error_ns, LCU_U64),
    POINT_FIELD(samples, LCU_SIZE),  {NULL, LCU_INT, 0}};
#undef POINT_FIELD

static void push_calibration(lua_State *L, const pp_cuda_calibration *cal) {
  lua_createtable(L, 0, 14);
  lua_pushstring(L, cal->method == PP_CUDA_CAL_CUPTI ? "cupti" : "event");
  lua_setfield(L, -2, "method");
  lcu_set_fields(L, cal, cal_fields);
  if (cal->method == PP_CUDA_CAL_CUPTI)
    lcu_set_fields(L, cal, cal_cupti_fields);
  if (cal->npoints) {
    lua_createtable(L, (int)cal->npoints, 0);
    for (size_t i = 0; i < cal->npoints; i++) {
      lua_createtable(L, 0, 5);
      lcu_set_fields(L, &cal->points[i], point_fields);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "points");
  }
  if (cal->why[0]) {
    lua_pushstring(L, cal->why);
    lua_setfield(L, -2, "why");
  }
}

/* Reads {samples=, source=} at idx. */
static void calibrate_opts(lua_State *L, int idx, lua_Integer *samples,
                           int *source) {
  *samples = 200;
  *source = 0; /* auto */
  if (lua_isnoneornil(L, idx))
    return;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const char *k = pp_lua_tokey(L, -2);
    if (!k || (strcmp(k, "samples") != 0 && strcmp(k, "source") != 0)) {
      lua_pop(L, 1);
      luaL_error(L, "ctx:calibrate_events: unknown field '%s' (fields: "
                    "samples, source)",
                 luaL_tolstring(L, -1, NULL));
    }
    lua_pop(L, 1);
  }
  if (lua_getfield(L, idx, "samples") != LUA_TNIL) {
    int ok = 0;
    *samples = lua_tointegerx(L, -1, &ok);
    if (!ok || *samples < 1 || *samples > 100000)
      luaL_error(L, "ctx:calibrate_events: field 'samples' must be an integer "
                    "in 1..100000, got %s",
                 luaL_tolstring(L, -1, NULL));
  }
  lua_pop(L, 1);
  if (lua_getfield(L, idx, "source") != LUA_TNIL) {
    const char *s = pp_lua_fieldkey(L, -1); /* "" for "cupti\0x" */
    if (strcmp(s, "auto") == 0)
      *source = 0;
    else if (strcmp(s, "event") == 0)
      *source = PP_KSRC_EVENT;
    else if (strcmp(s, "cupti") == 0)
      *source = PP_KSRC_CUPTI;
    else {
      int nul = pp_lua_hasnul(L, -1);
      luaL_error(L, "ctx:calibrate_events: field 'source' must be \"auto\", "
                    "\"event\" or \"cupti\", got %s%s",
                 luaL_tolstring(L, -1, NULL),
                 nul ? " (it contains a NUL byte)" : "");
    }
  }
  lua_pop(L, 1);
}

/* ctx:calibrate_events{samples = 200, source = "auto"} -> floor_ns, details
 * source "auto": CUPTI when collection is on; "cupti": CUPTI, started for
 * the calibration when off (nil, why when unavailable); "event": pair only.
 * The floor becomes the one this context's windows report. */
int lcu_ctx_calibrate_events(lua_State *L) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  PP_CHECK_OPEN(L, !c->closed, "context");
  lua_Integer samples;
  int source;
  calibrate_opts(L, 2, &samples, &source);
  if (pp_is_open())
    return luaL_error(L, "ctx:calibrate_events: a dispatch is open on this "
                         "thread (calibrate outside begin/emit)");
  lcu_use(L, c, "ctx:calibrate_events");
  int started = 0;
  if (source == PP_KSRC_CUPTI && !pp_cupti_active()) {
    if (pp_lua_cupti_start(L))
      return 2;
    started = 1;
  }
  int want = source == PP_KSRC_CUPTI || (source == 0 && pp_cupti_active());
  pp_cuda_calibration cal;
  const char *failed = NULL;
  CUresult rc = pp_cuda_calibrate_events(c->pool, NULL, (size_t)samples, want,
                                         &cal, &failed);
  if (started)
    pp_cupti_stop();
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, c, failed ? failed : "CUDA", rc,
                     "ctx:calibrate_events");
  c->floor_ns = cal.floor_ns;
  c->floor_method = (int)cal.method;
  c->cal = cal;
  lua_pushinteger(L, (lua_Integer)cal.floor_ns);
  push_calibration(L, &cal);
  return 2;
}

/* ---- window fields ------------------------------------------------------------ */
/* CUPTI's timeline of a window as a table, times from the window's opening. */
void lcu_push_timeline(lua_State *L, const pp_cupti_timeline *t) {
  uint64_t o = t->open_ns;
#define PP_REL_(x) ((x) > o ? (x) - o : 0)
  lua_createtable(L, 0, 9);
  lua_pushinteger(L, (lua_Integer)t->kernels);
  lua_setfield(L, -2, "kernels");
  lua_pushinteger(L, (lua_Integer)t->sum_ns);
  lua_setfield(L, -2, "kernel_ns");
  lua_pushinteger(L, (lua_Integer)t->window_ns);
  lua_setfield(L, -2, "window_ns");
  lua_pushinteger(L, (lua_Integer)PP_REL_(t->first_launch_ns));
  lua_setfield(L, -2, "launch_at_ns");
  lua_pushinteger(L, (lua_Integer)PP_REL_(t->first_start_ns));
  lua_setfield(L, -2, "kernel_first_ns");
  lua_pushinteger(L, (lua_Integer)PP_REL_(t->last_end_ns));
  lua_setfield(L, -2, "kernel_last_ns");
  lua_pushinteger(L, (lua_Integer)PP_REL_(t->close_ns));
  lua_setfield(L, -2, "close_ns");
  lua_pushinteger(L, (lua_Integer)t->launch_latency_ns);
  lua_setfield(L, -2, "launch_latency_ns");
  lua_pushinteger(L, (lua_Integer)t->host_gap_ns);
  lua_setfield(L, -2, "host_gap_ns");
#undef PP_REL_
}

int lcu_window_ksrc_field(lua_State *L, const lcu_window *lw, const char *k) {
  const pp_cuda_window *w = &lw->w;
  int done = lw->collected;
  if (strcmp(k, "source") == 0) {
    lua_pushstring(L, pp_kernel_src_name(w->source ? w->source : PP_KSRC_EVENT));
  } else if (strcmp(k, "kernel_src") == 0) {
    if (done && w->looped)
      lua_pushstring(L, pp_kernel_src_name(w->kernel_src));
    else
      lua_pushnil(L);
  } else if (strcmp(k, "event_kernel_ns") == 0) {
    if (done && w->looped)
      lua_pushinteger(L, (lua_Integer)w->event_kernel_ns);
    else
      lua_pushnil(L);
  } else if (strcmp(k, "kernel_calibrated_ns") == 0) {
    if (done && w->looped)
      lua_pushinteger(L, (lua_Integer)pp_cuda_calibrated_ns(
                             w->event_kernel_ns, w->floor_ns));
    else
      lua_pushnil(L);
  } else if (strcmp(k, "cupti_kernel_ns") == 0) {
    if (done && w->kernel_src == PP_KSRC_CUPTI)
      lua_pushinteger(L, (lua_Integer)w->cupti_kernel_ns);
    else
      lua_pushnil(L);
  } else if (strcmp(k, "cupti_kernels") == 0) {
    lua_pushinteger(L, (lua_Integer)w->cupti_kernels);
  } else if (strcmp(k, "timeline") == 0) {
    /* CUPTI's timeline after w:wait(), times from the window's opening */
    if (!(done && w->kernel_src == PP_KSRC_CUPTI)) {
      lua_pushnil(L);
      return 1;
    }
    lcu_push_timeline(L, &w->tl);
  } else if (strcmp(k, "cupti_why") == 0) {
    if (w->cupti_why[0])
      lua_pushstring(L, w->cupti_why);
    else
      lua_pushnil(L);
  } else {
    return 0;
  }
  return 1;
}

#else
typedef int pp_lua_cuda_ksrc_absent_;
#endif
