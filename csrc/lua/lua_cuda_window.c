/*
 * lua_cuda_window.c: streams and the timed dispatch window, the device side
 * of a dispatch as Lua sees it (over csrc/cuda/cuda_window.c).
 *
 *   local s = ctx:stream()            -- or ctx.stream, the default stream
 *   local w = s:window()              -- outer start event
 *   w:spin_us(100)                    -- optional injected host gap
 *   w:launch_loop{fn = fn, grid = 64, block = 256, args = {...},
 *                 iterations = 4, reset = {target = g, bytes = 4}}
 *   w:close()                         -- outer end event
 *   s:synchronize()
 *   local device_window_ns, kernel_ns = w:collect()
 *
 * A loop's description is read (lua_cuda_launch.c) before any event of it
 * is recorded; the loop then runs in C with no Lua between the inner
 * events.
 */
#include "pp_lua_cuda.h"

#ifdef PP_HAVE_CUDA_H

#include <string.h>

/* ---- streams ----------------------------------------------------------------- */
static lcu_stream *check_stream(lua_State *L, int idx) {
  return pp_lua_checkudata(L, idx, LCU_STREAM_MT);
}

/* A stream that is open, of a usable context; made current (use) or not
 * (a launch description's reading makes it current when it is done). */
static lcu_stream *open_stream(lua_State *L, int idx, const char *what,
                               int use) {
  lcu_stream *s = check_stream(L, idx);
  PP_CHECK_OPEN(L, !s->closed, "stream");
  if (use)
    lcu_use(L, s->c, what);
  else
    lcu_check_usable(L, s->c, what);
  return s;
}

static lcu_stream *check_open_stream(lua_State *L, int idx, const char *what) {
  return open_stream(L, idx, what, 1);
}

static lcu_stream *new_stream(lua_State *L, int ctx_idx, lcu_ctx *c) {
  lcu_stream *s = pp_lua_newobj(L, sizeof *s, 1);
  memset(s, 0, sizeof *s);
  s->c = c;
  pp_lua_setclass(L, LCU_STREAM_MT);
  lua_pushvalue(L, ctx_idx);
  lua_setiuservalue(L, -2, 1);
  return s;
}

void lcu_push_default_stream(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_getiuservalue(L, idx, 1) != LUA_TNIL)
    return;
  lua_pop(L, 1);
  new_stream(L, idx, lcu_check_ctx(L, idx));
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, idx, 1);
}

/* ctx:stream([{non_blocking = true}]) -> stream */
int lcu_ctx_stream(lua_State *L) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  PP_CHECK_OPEN(L, !c->closed, "context");
  unsigned flags = CU_STREAM_DEFAULT;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    if (lcu_opt_bool(L, 2, "non_blocking"))
      flags = CU_STREAM_NON_BLOCKING;
  }
  lcu_stream *s = new_stream(L, 1, c);
  s->closed = 1;
  lcu_use(L, c, "ctx:stream"); /* after the allocation (pp_lua_cuda.h) */
  CUresult rc = pp_cuda()->StreamCreate(&s->s, flags);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, c, "cuStreamCreate", rc, NULL);
  s->closed = 0;
  s->owned = 1;
  lcu_hold(c);
  return 1;
}

/* ctx.stream is the default stream, and ctx:stream(opts) calls it with the
 * context: a default stream called with its context creates a new stream. */
static int stream_call(lua_State *L) {
  lcu_stream *s = check_stream(L, 1);
  lcu_ctx *c = pp_lua_testudata(L, 2, LCU_CTX_MT);
  if (s->owned || c != s->c)
    return luaL_error(L, "a stream is not callable (use ctx:stream() to create "
                         "one)");
  lua_remove(L, 1);
  return lcu_ctx_stream(L);
}

static int stream_release(lcu_stream *s, CUresult *rc) {
  *rc = CUDA_SUCCESS;
  if (s->closed || !s->owned)
    return 0;
  s->closed = 1;
  if (pp_cuda()->CtxSetCurrent(s->c->ctx) == CUDA_SUCCESS)
    *rc = pp_cuda()->StreamDestroy(s->s);
  lcu_unhold(s->c);
  return 1;
}

/* The default stream is not owned: close leaves it usable. */
LCU_CHILD_CLOSE_GC(stream_close, stream_gc, lcu_stream, check_stream,
                   stream_release, "cuStreamDestroy")

static int stream_tostring(lua_State *L) {
  lcu_stream *s = check_stream(L, 1);
  lua_pushfstring(L, "phaseprobe.cuda.stream (%s%s)",
                  s->owned ? "created" : "default",
                  s->closed ? ", closed" : "");
  return 1;
}

static int stream_get(lua_State *L) {
  lcu_stream *s = check_stream(L, 1);
  const char *k = lcu_get_key(L, s->closed, "stream");
  if (!k)
    return 1;
  if (strcmp(k, "default") == 0)
    lua_pushboolean(L, !s->owned);
  else if (strcmp(k, "context") == 0)
    lua_getiuservalue(L, 1, 1);
  else
    return lcu_no_field(L, LCU_STREAM_MT);
  return 1;
}

static int stream_synchronize(lua_State *L) {
  lcu_stream *s = check_open_stream(L, 1, "stream:synchronize");
  CUresult rc = pp_cuda()->StreamSynchronize(s->s);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, s->c, "cuStreamSynchronize", rc, NULL);
  return 0;
}

/* ---- windows ----------------------------------------------------------------- */
static lcu_window *check_window(lua_State *L, int idx) {
  return pp_lua_checkudata(L, idx, LCU_WINDOW_MT);
}

static void window_release(lcu_window *w) {
  if (!w->holds)
    return;
  if (w->w.timeline)
    pp_cuda_window_discard(&w->w); /* no events: nothing of the driver's */
  else if (!w->c->released &&
           pp_cuda()->CtxSetCurrent(w->c->ctx) == CUDA_SUCCESS)
    pp_cuda_window_discard(&w->w);
  else if (w->w.held) { /* its events went with the context */
    w->w.held = 0;
    pp_cupti_window(-1);
  }
  w->holds = 0;
  lcu_unhold(w->c);
}

static int window_fail(lua_State *L, lcu_window *w, CUresult rc,
                       const char *what) {
  return lcu_raise(L, w->c, w->w.failed ? w->w.failed : "CUDA", rc, what);
}

/* A window that can take the next step (not collected or discarded). */
/* The window at 1, holding its events, on an open stream of a usable
 * context; made current (use: LIVE_USE, or LIVE_USE_EVENTS when it records
 * events, which a CUPTI window does not) or not (LIVE_CHECK). */
enum { LIVE_CHECK, LIVE_USE, LIVE_USE_EVENTS };
static lcu_window *live_window(lua_State *L, const char *what, int use) {
  lcu_window *w = check_window(L, 1);
  PP_CHECK_OPEN(L, w->holds, "window");
  PP_CHECK_OPEN(L, !w->s->closed, "stream");
  if (use == LIVE_USE || (use == LIVE_USE_EVENTS && !w->w.timeline))
    lcu_use(L, w->c, what);
  else
    lcu_check_usable(L, w->c, what);
  return w;
}

/* s:window([{source = "event" | "cupti"}]) -> w: records the outer start
 * event. The options are read and the handle made before the stream and
 * its context are checked and used (pp_lua_cuda.h). */
static int stream_window(lua_State *L) {
  lcu_stream *s = check_stream(L, 1);
  PP_CHECK_OPEN(L, !s->closed, "stream");
  /* With CUPTI as the context's source the window records no events: its
   * device side is CUPTI's timeline (s:window{source = "event"} keeps the
   * event pairs, and a loop may still ask CUPTI for its kernels). */
  pp_kernel_src src = PP_KSRC_NONE;
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "source");
    src = lcu_opt_ksrc(L, -1, "stream:window", PP_KSRC_NONE);
    lua_pop(L, 1);
  }
  lcu_window *w = pp_lua_newobj(L, sizeof *w, 1);
  memset(w, 0, sizeof *w);
  w->c = s->c;
  w->s = s;
  pp_lua_setclass(L, LCU_WINDOW_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  if (src == PP_KSRC_NONE)
    src = w->c->ksrc;
  /* A CUPTI window records no event: its opening, close and collect make
   * no driver call, and its loop makes the context current itself. */
  open_stream(L, 1, "stream:window", src != PP_KSRC_CUPTI);
  w->holds = 1;
  lcu_hold(w->c);
  lcu_check_ksrc(L, src, "stream:window");
  CUresult rc = src == PP_KSRC_CUPTI
                    ? pp_cuda_window_open_timeline(&w->w, w->c->pool, s->s)
                    : pp_cuda_window_open(&w->w, w->c->pool, s->s);
  w->w.floor_ns = w->c->floor_ns;
  w->w.cal = w->c->cal.npoints ? &w->c->cal : NULL;
  if (!w->w.timeline)
    w->w.source = PP_KSRC_EVENT;
  if (rc != CUDA_SUCCESS)
    return window_fail(L, w, rc, "stream:window");
  return 1;
}

static int window_spin_us(lua_State *L) {
  lcu_window *w = check_window(L, 1);
  PP_CHECK_OPEN(L, w->holds, "window");
  lua_Number us = luaL_checknumber(L, 2);
  luaL_argcheck(L, us >= 0 && us < 1e9, 2, "microseconds out of range");
  pp_cuda_spin_ns((uint64_t)(us * 1000.0));
  return 0;
}

/* w:launch_loop{fn=, grid=, block=, shared=, args=, iterations=, reset=,
 * cooperative=, fence=, source=, spin_us=} -> host ns of the loop (inner
 * events included); or w:launch_loop(p), p a launch fn:prepare{...} read
 * once. spin_us: a host gap spun right before the loop (after the
 * description was read), for tests and the truth harness. source =
 * "event" | "cupti" overrides the context's kernel-time source for this
 * window (lua_cuda_ksrc.c). This runs between the window's opening and the
 * loop's first launch call, host time CUPTI's timeline counts as host gap:
 * the context is made current once, when the description has been read
 * (or the prepared launch checked). */
static int window_launch_loop(lua_State *L) {
  lcu_window *w = live_window(L, "window:launch_loop", LIVE_CHECK);
  if (w->w.stage != PP_CUDA_WINDOW_OPEN)
    return luaL_error(L, "window:launch_loop: %s",
                      w->w.looped ? "the loop already ran in this window"
                                  : "the window is closed");
  lcu_launch parsed;
  const lcu_launch *d = lcu_prepared_use(L, 2, "window:launch_loop");
  if (!d) {
    lcu_parse_launch(L, 2, 0, "window:launch_loop",
                     LCU_LAUNCH_FN | LCU_LAUNCH_LOOP | LCU_LAUNCH_SPIN, &parsed);
    d = &parsed;
  }
  if (d->c != w->c)
    return luaL_error(L, "window:launch_loop: the function belongs to "
                         "another context");
  /* reading the description may have run code that closed the window */
  if (d->ran_lua) {
    live_window(L, "window:launch_loop", LIVE_CHECK);
    if (w->w.stage != PP_CUDA_WINDOW_OPEN)
      return luaL_error(L, "window:launch_loop: the window is closed");
  }
  pp_kernel_src src = d->source != PP_KSRC_NONE ? d->source : w->w.source;
  if (w->w.timeline && src != PP_KSRC_CUPTI)
    return luaL_error(L, "window:launch_loop: this window records no events "
                         "(its context reads CUPTI): open it with "
                         "s:window{source = \"event\"} for the event pair");
  lcu_check_ksrc(L, src, "window:launch_loop");
  w->w.source = src;
  if (d->spin_us > 0) { /* a host gap injected right before the loop */
    w->gap_ns[0] = pp_now_ns();
    pp_cuda_spin_ns((uint64_t)(d->spin_us * 1000.0));
    w->gap_ns[1] = pp_now_ns();
  }
  CUresult rc = pp_cuda_window_launch_loop(&w->w, &d->cfg, d->iterations,
                                           &d->reset);
  if (rc == CUDA_SUCCESS && d->fence)
    rc = pp_cuda_window_fence(&w->w);
  if (rc != CUDA_SUCCESS)
    return window_fail(L, w, rc, lcu_launch_text(L, "window:launch_loop", d));
  lua_pushinteger(L, (lua_Integer)w->w.loop_host_ns);
  return 1;
}

static int window_fence(lua_State *L) {
  lcu_window *w = live_window(L, "window:fence", LIVE_USE);
  CUresult rc = pp_cuda_window_fence(&w->w);
  if (rc != CUDA_SUCCESS)
    return window_fail(L, w, rc, "window:fence");
  return 0;
}

/* w:close(): records the outer end event (once; later calls do nothing) */
static int window_close(lua_State *L) {
  lcu_window *w = check_window(L, 1);
  if (!w->holds || (w->w.stage != PP_CUDA_WINDOW_OPEN &&
                    w->w.stage != PP_CUDA_WINDOW_LOOPED))
    return 0;
  int unwinding = !lua_isnoneornil(L, 2); /* __close with an error */
  if (w->c->closed || w->c->sticky != CUDA_SUCCESS || w->s->closed) {
    if (unwinding)
      return 0;
    PP_CHECK_OPEN(L, !w->s->closed, "stream");
    lcu_use(L, w->c, "window:close");
  }
  if (!w->w.timeline && /* no event to record otherwise */
      pp_cuda()->CtxSetCurrent(w->c->ctx) != CUDA_SUCCESS && unwinding)
    return 0;
  CUresult rc = pp_cuda_window_close(&w->w);
  if (rc != CUDA_SUCCESS && !unwinding)
    return window_fail(L, w, rc, "window:close");
  return 0;
}

/* w:collect() -> device_window_ns, kernel_ns (nil without a launch loop) */
static int window_collect(lua_State *L) {
  lcu_window *w = live_window(L, "window:collect", LIVE_USE_EVENTS);
  if (w->w.stage != PP_CUDA_WINDOW_CLOSED)
    return luaL_error(L, "window:collect: close the window first (w:close())");
  uint64_t win = 0, ker = 0;
  CUresult rc = pp_cuda_window_collect(&w->w, &win, &ker);
  if (rc != CUDA_SUCCESS)
    return window_fail(L, w, rc, "window:collect");
  w->collected = 1;
  window_release(w);
  /* a window without events has nothing to read yet: CUPTI completes the
   * dispatch's record when the kernels' records come (w:wait() reads now) */
  if (win == UINT64_MAX)
    lua_pushnil(L);
  else
    lua_pushinteger(L, (lua_Integer)win);
  if (ker == UINT64_MAX)
    lua_pushnil(L);
  else
    lua_pushinteger(L, (lua_Integer)ker);
  return 2;
}

/* w:wait([timeout_ms = 1000]) -> device_window_ns, kernel_ns | nil, why:
 * after collect, for a window read by CUPTI, waits for the loop's kernel
 * records (one forced flush: about 200 us of extra latency for the next
 * kernel on an H200, so read a batch of windows after the batch). An open
 * dispatch takes the timeline at once. */
static int window_wait(lua_State *L) {
  lcu_window *w = check_window(L, 1);
  lua_Integer ms = luaL_optinteger(L, 2, 1000);
  luaL_argcheck(L, ms >= 1 && ms <= 600000, 2, "timeout must be 1..600000 ms");
  luaL_argcheck(L, w->collected, 1, "collect the window first (w:collect())");
  if (w->w.cupti_span == 0 && w->w.kernel_src != PP_KSRC_CUPTI) {
    luaL_pushfail(L);
    lua_pushstring(L, w->w.cupti_why[0] ? w->w.cupti_why
                                        : "the window was not read by CUPTI");
    return 2;
  }
  if (w->w.cupti_span &&
      pp_cuda_window_wait(&w->w, (uint64_t)ms * 1000000u) != 0) {
    luaL_pushfail(L);
    lua_pushstring(L, w->w.cupti_why);
    return 2;
  }
  lua_pushinteger(L, (lua_Integer)w->w.tl.window_ns);
  lua_pushinteger(L, (lua_Integer)w->w.tl.sum_ns);
  return 2;
}

/* w:discard(): gives the events back without reading them */
static int window_discard(lua_State *L) {
  window_release(check_window(L, 1));
  return 0;
}

static int window_gc(lua_State *L) {
  lcu_window *w = check_window(L, 1);
  window_release(w);
  if (w->w.cupti_span) { /* never waited for: released when its kernels come */
    pp_cupti_span_release(w->w.cupti_span);
    w->w.cupti_span = 0;
  }
  return 0;
}

static const char *stage_name(const lcu_window *w) {
  if (!w->holds)
    return w->collected ? "collected" : "discarded";
  switch (w->w.stage) {
  case PP_CUDA_WINDOW_OPEN: return "open";
  case PP_CUDA_WINDOW_LOOPED: return "looped";
  case PP_CUDA_WINDOW_CLOSED: return "closed";
  default: return "failed";
  }
}

static int window_tostring(lua_State *L) {
  lcu_window *w = check_window(L, 1);
  lua_pushfstring(L, "phaseprobe.cuda.window (%s)", stage_name(w));
  return 1;
}

static int window_get(lua_State *L) {
  lcu_window *w = check_window(L, 1);
  const char *k = pp_lua_fieldkey(L, 2);
  static const lcu_field fields[] = {
      LCU_FIELD(lcu_window, "probe_ns", LCU_U64, w.probe_ns),
      LCU_FIELD(lcu_window, "loop_host_ns", LCU_U64, w.loop_host_ns),
      LCU_FIELD(lcu_window, "iterations", LCU_U64, w.iterations),
      LCU_FIELD(lcu_window, "floor_ns", LCU_U64, w.floor_ns),
      LCU_FIELD(lcu_window, "lead_ns", LCU_U64, w.lead_ns),
      {NULL, LCU_INT, 0}};
  if (lcu_push_field(L, w, fields, k))
    return 1;
  if (strcmp(k, "stage") == 0)
    lua_pushstring(L, stage_name(w));
  else if (strcmp(k, "host_ns") == 0) {
    /* open, loop start, loop end, close; then a spun gap's start and end */
    lua_createtable(L, 6, 0);
    for (int i = 0; i < 4; i++) {
      lua_pushinteger(L, (lua_Integer)w->w.host_ns[i]);
      lua_rawseti(L, -2, i + 1);
    }
    for (int i = 0; i < 2 && w->gap_ns[0]; i++) {
      lua_pushinteger(L, (lua_Integer)w->gap_ns[i]);
      lua_rawseti(L, -2, i + 5);
    }
  }
  else if (strcmp(k, "stream") == 0)
    lua_getiuservalue(L, 1, 1);
  else if (!lcu_window_ksrc_field(L, w, k))
    return lcu_no_field(L, LCU_WINDOW_MT);
  return 1;
}

/* s:timed{fn=, grid=, block=, shared=, args=, iterations=, reset=,
 * cooperative=, fence=, spin_us=, source=} -> device_window_ns, kernel_ns
 * [, timeline]: the whole window (open, optional spin, loop, optional fence,
 * close, collect) in C. Read by CUPTI it waits for the kernels' records (a
 * forced flush, after which the next launch call takes 170 to 290 us on an
 * H200, whether 2 ms pass in between or not: make truth, part 2c) and
 * adds the timeline table (as w.timeline) with the host's stamps in it
 * (host_ns, as w.host_ns). */
static int stream_timed(lua_State *L) {
  lcu_stream *s = open_stream(L, 1, "stream:timed", 0);
  lcu_launch d;
  lcu_parse_launch(L, 2, 0, "stream:timed", LCU_LAUNCH_FN | LCU_LAUNCH_LOOP | LCU_LAUNCH_SPIN, &d);
  if (d.c != s->c)
    return luaL_error(L, "stream:timed: the function belongs to another "
                         "context");
  if (d.ran_lua) /* closed while being read? */
    open_stream(L, 1, "stream:timed", 0);
  pp_cuda_window w;
  uint64_t win = 0, ker = 0;
  pp_kernel_src src = d.source != PP_KSRC_NONE ? d.source : s->c->ksrc;
  lcu_check_ksrc(L, src, "stream:timed");
  CUresult rc = src == PP_KSRC_CUPTI
                    ? pp_cuda_window_open_timeline(&w, s->c->pool, s->s)
                    : pp_cuda_window_open(&w, s->c->pool, s->s);
  w.floor_ns = s->c->floor_ns;
  w.cal = s->c->cal.npoints ? &s->c->cal : NULL;
  w.source = src;
  uint64_t gap_ns[2] = {0, 0};
  if (rc == CUDA_SUCCESS) {
    if (d.spin_us > 0) {
      gap_ns[0] = pp_now_ns();
      pp_cuda_spin_ns((uint64_t)(d.spin_us * 1000.0));
      gap_ns[1] = pp_now_ns();
    }
    rc = pp_cuda_window_launch_loop(&w, &d.cfg, d.iterations, &d.reset);
  }
  if (rc == CUDA_SUCCESS && d.fence)
    rc = pp_cuda_window_fence(&w);
  rc = pp_cuda_window_finish(&w, rc, &win, &ker);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, s->c, w.failed ? w.failed : "CUDA", rc,
                     lcu_launch_text(L, "stream:timed", &d));
  if (w.timeline) { /* CUPTI's reading, waited for */
    if (pp_cuda_window_wait(&w, 0) != 0) {
      luaL_pushfail(L);
      lua_pushstring(L, w.cupti_why);
      return 2;
    }
    win = w.tl.window_ns;
    ker = w.tl.sum_ns;
  }
  lua_pushinteger(L, (lua_Integer)win);
  lua_pushinteger(L, (lua_Integer)ker);
  if (!w.timeline)
    return 2;
  lcu_push_timeline(L, &w.tl);
  /* the host's own stamps, as w.host_ns: open, loop start, loop end, close,
   * then a spun gap's start and end */
  lua_createtable(L, 6, 0);
  for (int i = 0; i < 6 && (i < 4 || gap_ns[0]); i++) {
    lua_pushinteger(L, (lua_Integer)(i < 4 ? w.host_ns[i] : gap_ns[i - 4]));
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "host_ns");
  return 3;
}

/* ctx:event_costs([samples]) -> {record = {ns...}, pair = {ns...}}: host
 * cost of single cuEventRecord calls, and device time of back-to-back
 * event pairs. For bench/cuda_costs.lua. */
int lcu_ctx_event_costs(lua_State *L) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  PP_CHECK_OPEN(L, !c->closed, "context");
  lua_Integer n = luaL_optinteger(L, 2, 1000);
  luaL_argcheck(L, n >= 1 && n <= 1000000, 2, "samples must be 1..1000000");
  /* both series measured before any result is made (pp_lua_cuda.h) */
  uint64_t *t = lua_newuserdatauv(L, 2 * (size_t)n * sizeof *t, 0);
  uint64_t *pair = t + n;
  lcu_use(L, c, "ctx:event_costs");
  CUevent ev = NULL;
  CUresult rc = pp_cuda_event_get(c->pool, &ev);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, c, "cuEventCreate", rc, NULL);
  for (lua_Integer i = 0; i < n && rc == CUDA_SUCCESS; i++) {
    if (i % 256 == 0)
      rc = pp_cuda()->CtxSynchronize();
    pp_ticks t0 = pp_now();
    if (rc == CUDA_SUCCESS)
      rc = pp_cuda()->EventRecord(ev, NULL);
    t[i] = pp_ticks_to_ns(t0, pp_now());
  }
  pp_cuda_event_put(c->pool, ev);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, c, "cuEventRecord", rc, NULL);
  const char *failed = NULL;
  rc = pp_cuda_event_pairs(c->pool, NULL, pair, (size_t)n, &failed);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, c, failed, rc, NULL);
  lua_createtable(L, 0, 2);
  const uint64_t *series[2] = {t, pair};
  static const char *const names[2] = {"record", "pair"};
  for (int k = 0; k < 2; k++) {
    lua_createtable(L, (int)n, 0);
    for (lua_Integer i = 0; i < n; i++) {
      lua_pushinteger(L, (lua_Integer)series[k][i]);
      lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, names[k]);
  }
  return 1;
}

void lcu_open_window(lua_State *L) {
  static const luaL_Reg stream_methods[] = {
      {"synchronize", stream_synchronize},
      {"window", stream_window},
      {"timed", stream_timed},
      {"close", stream_close},
      {NULL, NULL}};
  static const luaL_Reg window_methods[] = {
      {"spin_us", window_spin_us}, {"launch_loop", window_launch_loop},
      {"fence", window_fence},     {"close", window_close},
      {"collect", window_collect}, {"discard", window_discard},
      {"wait", window_wait},       {NULL, NULL}};
  pp_lua_class_new(L, &(pp_lua_class){
      .name = LCU_STREAM_MT, .methods = stream_methods, .get = stream_get,
      .gc = stream_gc, .close = stream_close, .tostring = stream_tostring,
      .call = stream_call});
  pp_lua_class_new(L, &(pp_lua_class){
      .name = LCU_WINDOW_MT, .methods = window_methods, .get = window_get,
      .gc = window_gc, .close = window_close, .tostring = window_tostring});
}

#else
typedef int pp_lua_cuda_window_absent_;
#endif
