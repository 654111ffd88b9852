/*
 * cuda_ksrc.c: the timed window's kernel-time sources (event pair, CUPTI)
 * and the event-pair calibration. See pp_cuda_ksrc.h.
 */
#include "pp_internal.h"

#ifdef PP_HAVE_CUDA_H
#include "pp_cuda.h"
#include "pp_cuda_ksrc.h"
#include "pp_cupti.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

PP_EXPORT void pp_cuda_ksrc_loop_enter(pp_cuda_window *w) {
  if (w->cupti_span) /* a loop tried before failed: its span goes */
    pp_cupti_span_release(w->cupti_span);
  w->cupti_span = 0;
  if (w->source != PP_KSRC_CUPTI)
    return;
  pp_ticks t0 = pp_now_inline();
  w->cupti_span = pp_cupti_span_begin();
  pp_cuda_window_charge(w, t0);
}

PP_EXPORT void pp_cuda_ksrc_loop_leave(pp_cuda_window *w, CUresult rc) {
  if (!w->cupti_span)
    return;
  pp_ticks t0 = pp_now_inline();
  pp_cupti_span_end(w->cupti_span);
  if (rc != CUDA_SUCCESS) {
    /* Nobody will close or read it: released now, it frees its slot when
     * the kernels already launched have come. */
    pp_cupti_span_release(w->cupti_span);
    w->cupti_span = 0;
  }
  pp_cuda_window_charge(w, t0);
}

PP_EXPORT void pp_cuda_ksrc_collect(pp_cuda_window *w, uint64_t *kernel_ns,
                                    pp_kernel_src *src, uint64_t *floor_ns) {
  (void)floor_ns;
  w->event_kernel_ns = w->timeline ? UINT64_MAX : *kernel_ns;
  w->kernel_src = w->timeline ? PP_KSRC_NONE : PP_KSRC_EVENT;
  w->cupti_kernel_ns = UINT64_MAX;
  w->cupti_kernels = 0;
  w->cupti_why[0] = 0;
  if (w->source != PP_KSRC_CUPTI)
    return;
  if (!w->cupti_span) {
    if (!pp_cupti_active())
      snprintf(w->cupti_why, sizeof w->cupti_why,
               "CUPTI collection was off during the launch loop");
    else
      snprintf(w->cupti_why, sizeof w->cupti_why,
               "no CUPTI span was free for the launch loop (too many "
               "dispatches wait for their kernel records)");
    return;
  }
  /* Nothing waits here: the span is closed with the window's times and,
   * with a dispatch open, that dispatch's record takes CUPTI's timeline when
   * the kernels' records come (pp_emit, or later). */
  pp_ticks t0 = pp_now_inline();
  uint64_t open_ns = w->host_ns[0], close_ns = w->host_ns[3];
  if (pp_cupti_span_close(w->cupti_span, open_ns, close_ns,
                          PP_CUPTI_TO_DISPATCH) != 0)
    snprintf(w->cupti_why, sizeof w->cupti_why,
             "the CUPTI span of the launch loop was already given up on");
  else
    w->kernel_src = PP_KSRC_PENDING;
  pp_cuda_window_charge(w, t0);
  if (w->timeline)
    *src = PP_KSRC_PENDING;
}

PP_EXPORT int pp_cuda_window_wait(pp_cuda_window *w, uint64_t timeout_ns) {
  if (!w->cupti_span) {
    if (!w->cupti_why[0])
      snprintf(w->cupti_why, sizeof w->cupti_why,
               "the window's launch loop was not read by CUPTI");
    return -1;
  }
  pp_ticks t0 = pp_now_inline();
  int rc = pp_cupti_span_wait(w->cupti_span, timeout_ns, &w->tl, w->cupti_why,
                              sizeof w->cupti_why);
  pp_cuda_window_charge(w, t0);
  w->cupti_span = 0;
  w->cupti_kernels = w->tl.kernels;
  if (rc != 0)
    return rc;
  w->cupti_kernel_ns = w->tl.sum_ns;
  w->kernel_src = PP_KSRC_CUPTI;
  return 0;
}

/* ---- calibration ------------------------------------------------------------ */
/* Two entries: one with no parameters that returns at once, and one that
 * spins `ns` nanoseconds of %globaltimer on one thread. PTX ISA 6.0 /
 * sm_50, so any driver of CUDA 12 or newer JIT-compiles them. */
static const char cal_ptx[] =
    ".version 6.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry pp_empty()\n"
    "{\n"
    "\tret;\n"
    "}\n"
    ".visible .entry pp_spin(.param .u64 pp_spin_ns)\n"
    "{\n"
    "\t.reg .u64 %rd<5>;\n"
    "\t.reg .pred %p1;\n"
    "\tld.param.u64 %rd1, [pp_spin_ns];\n"
    "\tmov.u64 %rd2, %globaltimer;\n"
    "SPIN:\n"
    "\tmov.u64 %rd3, %globaltimer;\n"
    "\tsub.u64 %rd4, %rd3, %rd2;\n"
    "\tsetp.lt.u64 %p1, %rd4, %rd1;\n"
    "\t@%p1 bra SPIN;\n"
    "\tret;\n"
    "}\n";

#define CAL_WARMUP 3

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v[0..n) and returns the value at quantile q (nearest rank). */
static uint64_t quantile(uint64_t *v, size_t n, double q) {
  qsort(v, n, sizeof *v, cmp_u64);
  size_t i = (size_t)(q * (double)(n - 1) + 0.5);
  return v[i < n ? i : n - 1];
}

/* One batch of windows around single launches of cfg: the pair's readings
 * in ev[], and with CUPTI, its readings in cu[] (UINT64_MAX where none).
 * CUPTI is read after the whole batch: a forced flush between windows
 * would delay the next launch by about 200 us and skew the pair. */
static CUresult run_batch(pp_cuda_event_pool *pool, CUstream stream,
                          const pp_cuda_launch_cfg *cfg, size_t n, int cupti,
                          uint64_t *ev, uint64_t *cu, uint64_t *spans,
                          char *why, size_t whylen, const char **failed) {
  for (size_t i = 0; i < n + CAL_WARMUP; i++) {
    pp_cuda_window w;
    uint64_t win = 0, ker = 0;
    CUresult rc = pp_cuda_window_open(&w, pool, stream);
    w.source = cupti ? PP_KSRC_CUPTI : PP_KSRC_EVENT;
    if (rc == CUDA_SUCCESS)
      rc = pp_cuda_window_launch_loop(&w, cfg, 1, NULL);
    rc = pp_cuda_window_finish(&w, rc, &win, &ker);
    if (rc != CUDA_SUCCESS) {
      *failed = w.failed ? w.failed : "CUDA";
      return rc;
    }
    size_t k = i < CAL_WARMUP ? n : i - CAL_WARMUP; /* warm-ups: slot n */
    ev[k] = w.event_kernel_ns;
    spans[k] = w.cupti_span;
    if (cupti && !w.cupti_span && why[0] == 0)
      snprintf(why, whylen, "%s", w.cupti_why);
    if (i < CAL_WARMUP && w.cupti_span) { /* not kept: released unread */
      pp_cupti_timeline t;
      char ignored[8];
      pp_cupti_span_wait(w.cupti_span, 1000000u, &t, ignored, sizeof ignored);
    }
  }
  for (size_t k = 0; k < n; k++) {
    cu[k] = UINT64_MAX;
    if (!spans[k])
      continue;
    pp_cupti_timeline t;
    char w_why[200] = "";
    if (pp_cupti_span_wait(spans[k], 0, &t, w_why, sizeof w_why) == 0 &&
        t.kernels == 1)
      cu[k] = t.sum_ns;
    else if (why[0] == 0)
      snprintf(why, whylen, "%s", w_why);
  }
  return CUDA_SUCCESS;
}

static uint64_t absdiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

/* The floor and error at one kernel length, from a batch with CUPTI. 0 when
 * CUPTI read too few of the batch's launches. */
static int point_of(pp_cuda_cal_point *p, uint64_t *ev, uint64_t *cu,
                    uint64_t *tmp, size_t n) {
  size_t m = 0;
  for (size_t k = 0; k < n; k++)
    if (cu[k] != UINT64_MAX) {
      ev[m] = ev[k];
      cu[m] = cu[k];
      m++;
    }
  if (m < 3 || m * 2 < n)
    return 0;
  for (size_t k = 0; k < m; k++)
    tmp[k] = ev[k] > cu[k] ? ev[k] - cu[k] : 0;
  p->floor_ns = quantile(tmp, m, 0.5);
  for (size_t k = 0; k < m; k++)
    tmp[k] = absdiff(ev[k] > p->floor_ns ? ev[k] - p->floor_ns : 0, cu[k]);
  p->error_ns = quantile(tmp, m, 0.95);
  memcpy(tmp, cu, m * sizeof *tmp);
  p->kernel_ns = quantile(tmp, m, 0.5);
  memcpy(tmp, ev, m * sizeof *tmp);
  p->pair_ns = quantile(tmp, m, 0.5);
  p->samples = m;
  return 1;
}

PP_EXPORT uint64_t pp_cuda_cal_floor(const pp_cuda_calibration *cal,
                                     uint64_t pair_ns, uint64_t *error_ns) {
  if (error_ns)
    *error_ns = 0;
  if (!cal)
    return 0;
  size_t n = cal->npoints;
  if (n == 0)
    return cal->floor_ns;
  const pp_cuda_cal_point *p = cal->points;
  size_t i = 0;
  while (i + 1 < n && p[i + 1].pair_ns <= pair_ns)
    i++;
  if (pair_ns <= p[0].pair_ns || i + 1 >= n) {
    const pp_cuda_cal_point *q = pair_ns <= p[0].pair_ns ? &p[0] : &p[n - 1];
    if (error_ns)
      *error_ns = q->error_ns;
    return q->floor_ns;
  }
  /* linear between points i and i + 1 */
  double f = (double)(pair_ns - p[i].pair_ns) /
             (double)(p[i + 1].pair_ns - p[i].pair_ns);
  double floor = (double)p[i].floor_ns +
                 f * ((double)p[i + 1].floor_ns - (double)p[i].floor_ns);
  double err = (double)p[i].error_ns +
               f * ((double)p[i + 1].error_ns - (double)p[i].error_ns);
  if (error_ns)
    *error_ns = (uint64_t)(err + 0.5);
  return (uint64_t)(floor + 0.5);
}

static void summarize_empty(pp_cuda_calibration *out, uint64_t *ev,
                            uint64_t *cu, uint64_t *tmp, size_t n, int cupti) {
  out->samples = n;
  memcpy(tmp, ev, n * sizeof *tmp);
  out->event_min_ns = quantile(tmp, n, 0.0);
  out->event_median_ns = quantile(tmp, n, 0.5);
  out->event_p90_ns = quantile(tmp, n, 0.9);
  out->event_max_ns = quantile(tmp, n, 1.0);
  out->method = PP_CUDA_CAL_EVENT;
  out->floor_ns = out->event_median_ns;
  if (!cupti)
    return;
  size_t m = 0;
  for (size_t k = 0; k < n; k++)
    if (cu[k] != UINT64_MAX) {
      tmp[m] = ev[k] > cu[k] ? ev[k] - cu[k] : 0;
      m++;
    }
  if (m < 3 || m * 2 < n)
    return;
  out->method = PP_CUDA_CAL_CUPTI;
  out->diff_min_ns = quantile(tmp, m, 0.0);
  out->floor_ns = quantile(tmp, m, 0.5);
  out->diff_p90_ns = quantile(tmp, m, 0.9);
  out->diff_max_ns = quantile(tmp, m, 1.0);
  m = 0;
  for (size_t k = 0; k < n; k++)
    if (cu[k] != UINT64_MAX)
      tmp[m++] = cu[k];
  out->cupti_median_ns = quantile(tmp, m, 0.5);
}

static CUresult run_calibration(pp_cuda_event_pool *pool, CUstream stream,
                                CUmodule mod, size_t samples, int cupti,
                                pp_cuda_calibration *out, uint64_t *buf,
                                const char **failed) {
  const pp_cuda_api *cu = pp_cuda();
  uint64_t *ev = buf, *cv = buf + samples + 1, *spans = buf + 2 * (samples + 1),
           *tmp = buf + 3 * (samples + 1);
  pp_cuda_launch_cfg cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
  *failed = "cuModuleGetFunction (pp_empty)";
  CUresult rc = cu->ModuleGetFunction(&cfg.fn, mod, "pp_empty");
  if (rc != CUDA_SUCCESS)
    return rc;
  *failed = NULL;
  rc = run_batch(pool, stream, &cfg, samples, cupti, ev, cv, spans, out->why,
                 sizeof out->why, failed);
  if (rc != CUDA_SUCCESS)
    return rc;
  if (cupti) {
    /* the empty kernel's point, before summarize_empty sorts ev */
    pp_cuda_cal_point p = {0};
    uint64_t *e2 = malloc(2 * samples * sizeof *e2);
    if (e2) {
      memcpy(e2, ev, samples * sizeof *e2);
      memcpy(e2 + samples, cv, samples * sizeof *e2);
      if (point_of(&p, e2, e2 + samples, tmp, samples))
        out->points[out->npoints++] = p;
      free(e2);
    }
  }
  summarize_empty(out, ev, cv, tmp, samples, cupti);
  if (out->method != PP_CUDA_CAL_CUPTI) {
    out->npoints = 0;
    return CUDA_SUCCESS;
  }
  /* spins of 10 us to 10 ms, fewer samples for the long ones */
  static const uint64_t lengths[] = {10000, 100000, 1000000, 10000000};
  *failed = "cuModuleGetFunction (pp_spin)";
  rc = cu->ModuleGetFunction(&cfg.fn, mod, "pp_spin");
  if (rc != CUDA_SUCCESS)
    return rc;
  *failed = NULL;
  for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
    uint64_t ns = lengths[i];
    void *params[] = {&ns};
    cfg.params = params;
    size_t n = samples < 40 ? samples : 40;
    if (ns >= 10000000) /* 20 at 10 ms: a p95 of fewer is their maximum */
      n = n < 20 ? n : 20;
    char why[200] = "";
    rc = run_batch(pool, stream, &cfg, n, 1, ev, cv, spans, why, sizeof why,
                   failed);
    if (rc != CUDA_SUCCESS)
      return rc;
    pp_cuda_cal_point p = {0};
    if (point_of(&p, ev, cv, tmp, n) && out->npoints < PP_CUDA_CAL_POINTS)
      out->points[out->npoints++] = p;
  }
  /* points in order of the pair's reading, as pp_cuda_cal_floor needs */
  for (size_t i = 1; i < out->npoints; i++)
    for (size_t j = i; j > 0 && out->points[j].pair_ns < out->points[j - 1].pair_ns; j--) {
      pp_cuda_cal_point t = out->points[j];
      out->points[j] = out->points[j - 1];
      out->points[j - 1] = t;
    }
  return CUDA_SUCCESS;
}

PP_EXPORT CUresult pp_cuda_calibrate_events(pp_cuda_event_pool *pool,
                                            CUstream stream, size_t samples,
                                            int want_cupti,
                                            pp_cuda_calibration *out,
                                            const char **failed) {
  memset(out, 0, sizeof *out);
  const pp_cuda_api *cu = pp_cuda();
  *failed = "cuInit";
  if (!cu)
    return CUDA_ERROR_NOT_INITIALIZED;
  *failed = "event calibration (a dispatch is open on this thread: "
            "calibrate outside dispatches)";
  if (pp_is_open())
    return CUDA_ERROR_INVALID_VALUE;
  *failed = "event calibration (samples must be 1..100000)";
  if (samples < 1 || samples > 100000)
    return CUDA_ERROR_INVALID_VALUE;
  int cupti = want_cupti;
  if (cupti && !pp_cupti_active()) {
    snprintf(out->why, sizeof out->why,
             "CUPTI collection is off (pp_cupti_start / ctx:kernel_source"
             "('cupti') first)");
    cupti = 0;
  }
  pp_ticks t0 = pp_now_inline();
  CUmodule mod = NULL;
  *failed = "cuModuleLoadDataEx (built-in calibration kernels)";
  CUresult rc = cu->ModuleLoadDataEx(&mod, cal_ptx, 0, NULL, NULL);
  if (rc != CUDA_SUCCESS)
    return rc;
  uint64_t *buf = malloc(4 * (samples + 1) * sizeof *buf);
  if (!buf) {
    *failed = "event calibration (out of host memory)";
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  } else {
    rc = run_calibration(pool, stream, mod, samples, cupti, out, buf, failed);
  }
  free(buf);
  cu->ModuleUnload(mod);
  out->host_ns = pp_ticks_delta_ns(t0, pp_now_inline());
  return rc;
}

#else
typedef int pp_cuda_ksrc_absent_;
#endif
