/*
 * cuda_window.c: event pool, launches, and the timed dispatch window.
 *
 * The window brackets one dispatch on the device timeline with two event
 * pairs, the way the reference does: an outer pair (the dispatch window,
 * device_window_ns) and an inner pair recorded immediately around the launch
 * loop (kernel_ns). Host work between the outer start and the inner start
 * shows up as device_window_ns - kernel_ns. The launch loop runs entirely
 * here: nothing of the caller runs between the two inner events.
 */
#include "pp_internal.h"

#ifdef PP_HAVE_CUDA_H
#include "pp_cuda.h"
#include "pp_cuda_ksrc.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- event pool ---------------------------------------------------------- */
struct pp_cuda_event_pool {
  pthread_mutex_t lock;
  CUevent *idle;
  size_t nidle, cap;
  size_t created;
};

PP_EXPORT pp_cuda_event_pool *pp_cuda_event_pool_new(void) {
  pp_cuda_event_pool *p = calloc(1, sizeof *p);
  if (p)
    pthread_mutex_init(&p->lock, NULL);
  return p;
}

PP_EXPORT CUresult pp_cuda_event_get(pp_cuda_event_pool *p, CUevent *out) {
  const pp_cuda_api *cu = pp_cuda();
  if (!cu)
    return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&p->lock);
  if (p->nidle) {
    *out = p->idle[--p->nidle];
    pthread_mutex_unlock(&p->lock);
    return CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&p->lock);
  CUresult rc = cu->EventCreate(out, CU_EVENT_DEFAULT);
  if (rc == CUDA_SUCCESS) {
    pthread_mutex_lock(&p->lock);
    p->created++;
    pthread_mutex_unlock(&p->lock);
  }
  return rc;
}

PP_EXPORT void pp_cuda_event_put(pp_cuda_event_pool *p, CUevent ev) {
  if (!ev)
    return;
  pthread_mutex_lock(&p->lock);
  if (p->nidle == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 8;
    CUevent *grown = realloc(p->idle, cap * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&p->lock);
      const pp_cuda_api *cu = pp_cuda();
      if (cu)
        cu->EventDestroy(ev);
      return;
    }
    p->idle = grown;
    p->cap = cap;
  }
  p->idle[p->nidle++] = ev;
  pthread_mutex_unlock(&p->lock);
}

PP_EXPORT size_t pp_cuda_event_pool_created(const pp_cuda_event_pool *p) {
  return p->created;
}

PP_EXPORT size_t pp_cuda_event_pool_idle(const pp_cuda_event_pool *p) {
  return p->nidle;
}

PP_EXPORT void pp_cuda_event_pool_free(pp_cuda_event_pool *p) {
  if (!p)
    return;
  const pp_cuda_api *cu = pp_cuda();
  for (size_t i = 0; cu && i < p->nidle; i++)
    cu->EventDestroy(p->idle[i]);
  free(p->idle);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

/* ---- launches ------------------------------------------------------------ */
static inline CUresult launch_now(const pp_cuda_api *cu,
                                  const pp_cuda_launch_cfg *c, CUstream s) {
  if (c->cooperative)
    return cu->LaunchCooperativeKernel(c->fn, c->grid[0], c->grid[1],
                                       c->grid[2], c->block[0], c->block[1],
                                       c->block[2], c->shared, s, c->params);
  return cu->LaunchKernel(c->fn, c->grid[0], c->grid[1], c->grid[2],
                          c->block[0], c->block[1], c->block[2], c->shared, s,
                          c->params, NULL);
}

static const char *launch_call(const pp_cuda_launch_cfg *c) {
  return c->cooperative ? "cuLaunchCooperativeKernel" : "cuLaunchKernel";
}

PP_EXPORT CUresult pp_cuda_launch(const pp_cuda_launch_cfg *cfg,
                                  CUstream stream, const char **failed) {
  const pp_cuda_api *cu = pp_cuda();
  if (!cu)
    return CUDA_ERROR_NOT_INITIALIZED;
  CUresult rc = launch_now(cu, cfg, stream);
  if (rc != CUDA_SUCCESS && failed)
    *failed = launch_call(cfg);
  return rc;
}

static uint64_t mul3(const unsigned v[3]) {
  return (uint64_t)v[0] * (uint64_t)v[1] * (uint64_t)v[2];
}

PP_EXPORT CUresult pp_cuda_coop_fits(const pp_cuda_launch_cfg *cfg,
                                     int sm_count, int *fits,
                                     uint64_t *capacity, const char **failed) {
  const pp_cuda_api *cu = pp_cuda();
  if (!cu)
    return CUDA_ERROR_NOT_INITIALIZED;
  int per_sm = 0;
  uint64_t threads = mul3(cfg->block);
  CUresult rc = cu->OccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, cfg->fn, threads > 0x7fffffff ? 0x7fffffff : (int)threads,
      cfg->shared);
  if (rc != CUDA_SUCCESS) {
    if (failed)
      *failed = "cuOccupancyMaxActiveBlocksPerMultiprocessor";
    return rc;
  }
  uint64_t cap = (uint64_t)(per_sm > 0 ? per_sm : 0) *
                 (uint64_t)(sm_count > 0 ? sm_count : 0);
  if (capacity)
    *capacity = cap;
  *fits = mul3(cfg->grid) <= cap;
  return CUDA_SUCCESS;
}

/* ---- probe clock helpers ------------------------------------------------- */
PP_EXPORT void pp_cuda_spin_ns(uint64_t ns) { pp_spin_ns(ns); }

PP_EXPORT uint64_t pp_cuda_ms_to_ns(float ms) {
  if (!(ms > 0.0f))
    return 0;
  double ns = (double)ms * 1e6;
  if (ns >= 1.8e19)
    return UINT64_MAX;
  return (uint64_t)llround(ns);
}

static CUresult fail(pp_cuda_window *w, const char *call, CUresult rc) {
  w->failed = call;
  return rc;
}

/* Takes an event from the pool and records it; the cost is the probe's.
 * `slot` (0..3: outer start, inner start, inner end, outer end) receives the
 * probe-clock time at which the record call was made. */
static CUresult record(pp_cuda_window *w, const pp_cuda_api *cu, CUevent *ev,
                       int slot) {
  pp_ticks t0 = pp_now_inline();
  w->host_ns[slot] = (uint64_t)(((unsigned __int128)t0 * pp_clk.mult) >> 32);
  CUresult rc = CUDA_SUCCESS;
  if (!*ev)
    rc = pp_cuda_event_get(w->pool, ev);
  if (rc != CUDA_SUCCESS) {
    pp_cuda_window_charge(w, t0);
    return fail(w, "cuEventCreate", rc);
  }
  rc = cu->EventRecord(*ev, w->stream);
  pp_cuda_window_charge(w, t0);
  return rc == CUDA_SUCCESS ? rc : fail(w, "cuEventRecord", rc);
}

/* ---- the window ---------------------------------------------------------- */
/* Event order. An event window records, on its stream: the outer start at
 * open, the inner start right before the first launch of the loop, the
 * inner end right after the last, and the outer end at close. Nothing of the
 * caller runs between the inner pair's two records, so kernel_ns (inner end
 * minus inner start) holds the kernels plus the device's launch latency;
 * device_window_ns (outer) also holds whatever the host did inside the
 * window before and after the loop, while the device waited. host_ns[]
 * keeps the probe-clock time of each record call, so the device's view of
 * an interval can be set beside the host's (tools/starvation_rate.lua). A
 * timeline window records no events: open and close are clock reads, and
 * CUPTI times the kernels on the same clock. */
static uint64_t host_now_ns(void) {
  return (uint64_t)(((unsigned __int128)pp_now_inline() * pp_clk.mult) >> 32);
}

PP_EXPORT CUresult pp_cuda_window_open_timeline(pp_cuda_window *w,
                                                pp_cuda_event_pool *pool,
                                                CUstream stream) {
  memset(w, 0, sizeof *w);
  w->pool = pool;
  w->stream = stream;
  w->timeline = 1;
  w->source = PP_KSRC_CUPTI;
  if (!pp_cuda())
    return fail(w, "cuInit", CUDA_ERROR_NOT_INITIALIZED);
  if (!pp_cupti_active())
    return fail(w, "timeline window (CUPTI collection is off: "
                   "pp_cupti_start first)",
                CUDA_ERROR_NOT_INITIALIZED);
  w->host_ns[0] = host_now_ns();
  w->stage = PP_CUDA_WINDOW_OPEN;
  w->held = 1;
  pp_cupti_window(1);
  return CUDA_SUCCESS;
}

PP_EXPORT CUresult pp_cuda_window_open(pp_cuda_window *w,
                                       pp_cuda_event_pool *pool,
                                       CUstream stream) {
  memset(w, 0, sizeof *w);
  w->pool = pool;
  w->stream = stream;
  const pp_cuda_api *cu = pp_cuda();
  if (!cu)
    return fail(w, "cuInit", CUDA_ERROR_NOT_INITIALIZED);
  CUresult rc = record(w, cu, &w->outer[0], 0);
  if (rc == CUDA_SUCCESS) {
    w->stage = PP_CUDA_WINDOW_OPEN;
    if (pp_cupti_active()) { /* no CUPTI flush inside it either */
      w->held = 1;
      pp_cupti_window(1);
    }
  }
  return rc;
}

static CUresult loop_body(const pp_cuda_api *cu, const pp_cuda_launch_cfg *c,
                          CUstream s, uint64_t n, const pp_cuda_reset *r,
                          const char **failed) {
  int do_reset = r && r->ptr && r->bytes;
  for (uint64_t i = 0; i < n; i++) {
    CUresult rc;
    if (do_reset) {
      rc = cu->MemsetD8Async(r->ptr, r->value, r->bytes, s);
      if (rc != CUDA_SUCCESS) {
        *failed = "cuMemsetD8Async";
        return rc;
      }
    }
    rc = launch_now(cu, c, s);
    if (rc != CUDA_SUCCESS) {
      *failed = launch_call(c);
      return rc;
    }
  }
  return CUDA_SUCCESS;
}

PP_EXPORT CUresult pp_cuda_window_launch_loop(pp_cuda_window *w,
                                              const pp_cuda_launch_cfg *cfg,
                                              uint64_t iterations,
                                              const pp_cuda_reset *reset) {
  const pp_cuda_api *cu = pp_cuda();
  if (!cu)
    return fail(w, "cuInit", CUDA_ERROR_NOT_INITIALIZED);
  if (w->stage != PP_CUDA_WINDOW_OPEN)
    return fail(w, "launch loop (window not open, or loop already ran)",
                CUDA_ERROR_INVALID_VALUE);
  if (w->timeline) {
    pp_cuda_ksrc_loop_enter(w);
    pp_ticks loop0 = pp_now_inline();
    w->host_ns[1] = host_now_ns();
    const char *failed = NULL;
    CUresult rc = loop_body(cu, cfg, w->stream, iterations, reset, &failed);
    w->host_ns[2] = host_now_ns();
    w->loop_host_ns = pp_ticks_delta_ns(loop0, pp_now_inline());
    pp_cuda_ksrc_loop_leave(w, rc);
    if (rc != CUDA_SUCCESS)
      return fail(w, failed, rc);
    w->iterations = iterations;
    w->looped = 1;
    w->stage = PP_CUDA_WINDOW_LOOPED;
    return CUDA_SUCCESS;
  }
  /* Events first, so the inner pair costs two records and nothing else;
   * a loop tried again after a failure has them already. */
  pp_ticks t0 = pp_now_inline();
  CUresult rc = CUDA_SUCCESS;
  for (int i = 0; i < 2 && rc == CUDA_SUCCESS; i++)
    if (!w->inner[i])
      rc = pp_cuda_event_get(w->pool, &w->inner[i]);
  pp_cuda_window_charge(w, t0);
  if (rc != CUDA_SUCCESS)
    return fail(w, "cuEventCreate", rc);
  pp_cuda_ksrc_loop_enter(w); /* CUPTI span, outside the inner pair */
  pp_ticks loop0 = pp_now_inline();
  rc = record(w, cu, &w->inner[0], 1);
  if (rc != CUDA_SUCCESS) {
    pp_cuda_ksrc_loop_leave(w, rc);
    return rc;
  }
  const char *failed = NULL;
  rc = loop_body(cu, cfg, w->stream, iterations, reset, &failed);
  if (rc != CUDA_SUCCESS) {
    w->loop_host_ns = pp_ticks_delta_ns(loop0, pp_now_inline());
    pp_cuda_ksrc_loop_leave(w, rc);
    return fail(w, failed, rc);
  }
  rc = record(w, cu, &w->inner[1], 2);
  w->loop_host_ns = pp_ticks_delta_ns(loop0, pp_now_inline());
  pp_cuda_ksrc_loop_leave(w, rc);
  if (rc != CUDA_SUCCESS)
    return rc;
  w->iterations = iterations;
  w->looped = 1;
  w->stage = PP_CUDA_WINDOW_LOOPED;
  return CUDA_SUCCESS;
}

PP_EXPORT CUresult pp_cuda_window_fence(pp_cuda_window *w) {
  const pp_cuda_api *cu = pp_cuda();
  if (!cu)
    return fail(w, "cuInit", CUDA_ERROR_NOT_INITIALIZED);
  CUresult rc = cu->StreamSynchronize(w->stream);
  return rc == CUDA_SUCCESS ? rc : fail(w, "cuStreamSynchronize", rc);
}

PP_EXPORT CUresult pp_cuda_window_close(pp_cuda_window *w) {
  const pp_cuda_api *cu = pp_cuda();
  if (!cu)
    return fail(w, "cuInit", CUDA_ERROR_NOT_INITIALIZED);
  if (w->stage != PP_CUDA_WINDOW_OPEN && w->stage != PP_CUDA_WINDOW_LOOPED)
    return fail(w, "window close (window not open)", CUDA_ERROR_INVALID_VALUE);
  if (w->timeline) {
    w->host_ns[3] = host_now_ns();
    w->stage = PP_CUDA_WINDOW_CLOSED;
    return CUDA_SUCCESS;
  }
  CUresult rc = record(w, cu, &w->outer[1], 3);
  if (rc == CUDA_SUCCESS)
    w->stage = PP_CUDA_WINDOW_CLOSED;
  return rc;
}

static CUresult elapsed(pp_cuda_window *w, const pp_cuda_api *cu, CUevent a,
                        CUevent b, uint64_t *out) {
  float ms = 0.0f;
  pp_ticks t0 = pp_now_inline();
  CUresult rc = cu->EventElapsedTime(&ms, a, b);
  pp_cuda_window_charge(w, t0);
  if (rc != CUDA_SUCCESS)
    return fail(w, "cuEventElapsedTime", rc);
  *out = pp_cuda_ms_to_ns(ms);
  return CUDA_SUCCESS;
}

PP_EXPORT CUresult pp_cuda_window_collect(pp_cuda_window *w,
                                          uint64_t *window_ns,
                                          uint64_t *kernel_ns) {
  const pp_cuda_api *cu = pp_cuda();
  if (!cu)
    return fail(w, "cuInit", CUDA_ERROR_NOT_INITIALIZED);
  if (w->stage != PP_CUDA_WINDOW_CLOSED)
    return fail(w, "window collect (window not closed)",
                CUDA_ERROR_INVALID_VALUE);
  if (w->timeline) {
    /* Nothing to wait for: CUPTI completes the record when the kernels'
     * records come. */
    uint64_t ker = UINT64_MAX;
    pp_kernel_src src = PP_KSRC_CUPTI;
    uint64_t floor = 0;
    pp_cuda_ksrc_collect(w, &ker, &src, &floor);
    *window_ns = UINT64_MAX;
    *kernel_ns = UINT64_MAX;
    pp_cuda_window_discard(w);
    return CUDA_SUCCESS;
  }
  /* Waiting for the device is not the probe's cost; the query after is. */
  CUresult rc = cu->EventSynchronize(w->outer[1]);
  if (rc != CUDA_SUCCESS)
    return fail(w, "cuEventSynchronize", rc);
  uint64_t win = 0, ker = UINT64_MAX;
  rc = elapsed(w, cu, w->outer[0], w->outer[1], &win);
  if (rc == CUDA_SUCCESS && w->looped)
    rc = elapsed(w, cu, w->inner[0], w->inner[1], &ker);
  /* The window's idle device time before the loop (outer start to inner
   * start); the rest of device_window_ns - kernel_ns lies after it. */
  if (rc == CUDA_SUCCESS && w->looped)
    rc = elapsed(w, cu, w->outer[0], w->inner[0], &w->lead_ns);
  if (rc != CUDA_SUCCESS)
    return rc;
  pp_kernel_src src = PP_KSRC_EVENT;
  uint64_t floor = w->floor_ns, err = w->error_ns;
  if (w->looped && w->cal) /* the floor and error for this reading */
    w->floor_ns = floor = pp_cuda_cal_floor(w->cal, ker, &err);
  if (w->looped) /* CUPTI's reading, when asked for, completes the record */
    pp_cuda_ksrc_collect(w, &ker, &src, &floor);
  if (pp_is_open()) {
    pp_record_device_window_ns(win);
    if (w->looped) {
      pp_record_kernel(ker, src, floor);
      if (err)
        pp_record_kernel_error(err);
    }
  }
  *window_ns = win;
  *kernel_ns = ker;
  pp_cuda_window_discard(w);
  return CUDA_SUCCESS;
}

PP_EXPORT void pp_cuda_window_discard(pp_cuda_window *w) {
  if (w->held) { /* counted open for the CUPTI flusher: no longer */
    w->held = 0;
    pp_cupti_window(-1);
  }
  if (!w->pool || w->timeline) {
    w->stage = PP_CUDA_WINDOW_IDLE;
    return;
  }
  CUevent *evs[4] = {&w->outer[0], &w->outer[1], &w->inner[0], &w->inner[1]};
  for (int i = 0; i < 4; i++) {
    pp_cuda_event_put(w->pool, *evs[i]);
    *evs[i] = NULL;
  }
  w->stage = PP_CUDA_WINDOW_IDLE;
}

PP_EXPORT CUresult pp_cuda_window_finish(pp_cuda_window *w, CUresult rc,
                                         uint64_t *window_ns,
                                         uint64_t *kernel_ns) {
  if (rc == CUDA_SUCCESS)
    rc = pp_cuda_window_close(w);
  if (rc == CUDA_SUCCESS)
    rc = pp_cuda_window_collect(w, window_ns, kernel_ns);
  if (rc != CUDA_SUCCESS)
    pp_cuda_window_discard(w);
  return rc;
}

/* ---- calibration ---------------------------------------------------------- */
PP_EXPORT CUresult pp_cuda_event_pairs(pp_cuda_event_pool *pool,
                                       CUstream stream, uint64_t *out,
                                       size_t samples, const char **failed) {
  const pp_cuda_api *cu = pp_cuda();
  if (!cu)
    return CUDA_ERROR_NOT_INITIALIZED;
  CUevent a = NULL, b = NULL;
  CUresult rc = pp_cuda_event_get(pool, &a);
  if (rc == CUDA_SUCCESS)
    rc = pp_cuda_event_get(pool, &b);
  const char *call = "cuEventCreate";
  for (size_t i = 0; rc == CUDA_SUCCESS && i < samples; i++) {
    float ms = 0.0f;
    call = "cuEventRecord";
    rc = cu->EventRecord(a, stream);
    if (rc == CUDA_SUCCESS)
      rc = cu->EventRecord(b, stream);
    if (rc == CUDA_SUCCESS) {
      call = "cuEventSynchronize";
      rc = cu->EventSynchronize(b);
    }
    if (rc == CUDA_SUCCESS) {
      call = "cuEventElapsedTime";
      rc = cu->EventElapsedTime(&ms, a, b);
    }
    out[i] = pp_cuda_ms_to_ns(ms);
  }
  pp_cuda_event_put(pool, a);
  pp_cuda_event_put(pool, b);
  if (rc != CUDA_SUCCESS && failed)
    *failed = call;
  return rc;
}

#else
typedef int pp_cuda_window_absent_;
#endif
