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

/* Host time of the probe's own work, to the window and the open dispatch. */
static void charge(pp_cuda_window *w, pp_ticks t0) {
  uint64_t ns = pp_ticks_delta_ns(t0, pp_now_inline());
  w->probe_ns = pp_sat_add(w->probe_ns, ns);
  if (pp_is_open())
    pp_add_probe_ns(ns);
}

PP_EXPORT void pp_cuda_ksrc_loop_enter(pp_cuda_window *w) {
  w->cupti_span = 0;
  if (w->source != PP_KSRC_CUPTI)
    return;
  pp_ticks t0 = pp_now_inline();
  w->cupti_span = pp_cupti_span_begin();
  charge(w, t0);
}

PP_EXPORT void pp_cuda_ksrc_loop_leave(pp_cuda_window *w) {
  if (!w->cupti_span)
    return;
  pp_ticks t0 = pp_now_inline();
  pp_cupti_span_end(w->cupti_span);
  charge(w, t0);
}

PP_EXPORT void pp_cuda_ksrc_collect(pp_cuda_window *w, uint64_t *kernel_ns,
                                    pp_kernel_src *src, uint64_t *floor_ns) {
  w->event_kernel_ns = *kernel_ns;
  w->kernel_src = PP_KSRC_EVENT;
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
               "CUPTI refused the span (cuptiActivityPushExternalCorrelationId)");
    return;
  }
  pp_ticks t0 = pp_now_inline();
  pp_cupti_result r;
  int rc = pp_cupti_collect(w->cupti_span, w->iterations, 0, &r, w->cupti_why,
                            sizeof w->cupti_why);
  charge(w, t0);
  w->cupti_kernels = r.kernels;
  if (rc != 0)
    return; /* the pair's reading stays, and says so (kernel_src=event) */
  if (r.untimed) {
    snprintf(w->cupti_why, sizeof w->cupti_why,
             "CUPTI could not time %llu of %llu kernels",
             (unsigned long long)r.untimed, (unsigned long long)r.kernels);
    return;
  }
  w->cupti_kernel_ns = r.sum_ns;
  w->kernel_src = PP_KSRC_CUPTI;
  *kernel_ns = r.sum_ns;
  *src = PP_KSRC_CUPTI;
  *floor_ns = 0;
}

/* ---- calibration ------------------------------------------------------------ */
/* An entry with no parameters that returns at once; PTX ISA 6.0 / sm_50 so
 * any driver of CUDA 12 or newer JIT-compiles it for its device. */
static const char empty_ptx[] = ".version 6.0\n"
                                ".target sm_50\n"
                                ".address_size 64\n"
                                ".visible .entry pp_empty()\n"
                                "{\n"
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

/* One sample: a window around one launch, collected as a dispatch's is. */
static CUresult one_sample(pp_cuda_event_pool *pool, CUstream stream,
                           const pp_cuda_launch_cfg *cfg, int cupti,
                           uint64_t *ev, uint64_t *cu_ns, char *why,
                           size_t whylen, const char **failed) {
  pp_cuda_window w;
  uint64_t win = 0, ker = 0;
  CUresult rc = pp_cuda_window_open(&w, pool, stream);
  w.source = cupti ? PP_KSRC_CUPTI : PP_KSRC_EVENT;
  if (rc == CUDA_SUCCESS)
    rc = pp_cuda_window_launch_loop(&w, cfg, 1, NULL);
  if (rc == CUDA_SUCCESS)
    rc = pp_cuda_window_close(&w);
  if (rc == CUDA_SUCCESS)
    rc = pp_cuda_window_collect(&w, &win, &ker);
  if (rc != CUDA_SUCCESS) {
    *failed = w.failed ? w.failed : "CUDA";
    pp_cuda_window_discard(&w);
    return rc;
  }
  *ev = w.event_kernel_ns;
  *cu_ns = w.kernel_src == PP_KSRC_CUPTI ? w.cupti_kernel_ns : UINT64_MAX;
  if (cupti && *cu_ns == UINT64_MAX && why[0] == 0)
    snprintf(why, whylen, "%s", w.cupti_why);
  return CUDA_SUCCESS;
}

static void summarize(pp_cuda_calibration *out, uint64_t *ev, uint64_t *cu,
                      uint64_t *diff, size_t n, int cupti) {
  out->samples = n;
  out->event_min_ns = quantile(ev, n, 0.0);
  out->event_median_ns = quantile(ev, n, 0.5);
  out->event_p90_ns = quantile(ev, n, 0.9);
  out->event_max_ns = quantile(ev, n, 1.0);
  out->method = cupti ? PP_CUDA_CAL_CUPTI : PP_CUDA_CAL_EVENT;
  out->floor_ns = out->event_median_ns;
  if (!cupti)
    return;
  out->cupti_median_ns = quantile(cu, n, 0.5);
  out->diff_min_ns = quantile(diff, n, 0.0);
  out->floor_ns = quantile(diff, n, 0.5);
  out->diff_p90_ns = quantile(diff, n, 0.9);
  out->diff_max_ns = quantile(diff, n, 1.0);
}

static CUresult run_samples(pp_cuda_event_pool *pool, CUstream stream,
                            const pp_cuda_launch_cfg *cfg, size_t samples,
                            int want_cupti, pp_cuda_calibration *out,
                            uint64_t *ev, uint64_t *cu, uint64_t *diff,
                            const char **failed) {
  int cupti = want_cupti;
  if (cupti && !pp_cupti_active()) {
    snprintf(out->why, sizeof out->why,
             "CUPTI collection is off (pp_cupti_start / ctx:kernel_source"
             "('cupti') first)");
    cupti = 0;
  }
  for (size_t i = 0; i < samples + CAL_WARMUP; i++) {
    uint64_t e = 0, c = UINT64_MAX;
    CUresult rc = one_sample(pool, stream, cfg, cupti, &e, &c, out->why,
                             sizeof out->why, failed);
    if (rc != CUDA_SUCCESS)
      return rc;
    if (cupti && c == UINT64_MAX)
      cupti = 0; /* CUPTI failed to deliver: the event method, and why */
    if (i < CAL_WARMUP)
      continue;
    size_t k = i - CAL_WARMUP;
    ev[k] = e;
    cu[k] = c;
    diff[k] = e > c ? e - c : 0;
  }
  summarize(out, ev, cu, diff, samples, cupti);
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
  pp_ticks t0 = pp_now_inline();
  CUmodule mod = NULL;
  pp_cuda_launch_cfg cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
  *failed = "cuModuleLoadDataEx (built-in empty kernel)";
  CUresult rc = cu->ModuleLoadDataEx(&mod, empty_ptx, 0, NULL, NULL);
  if (rc != CUDA_SUCCESS)
    return rc;
  *failed = "cuModuleGetFunction (pp_empty)";
  rc = cu->ModuleGetFunction(&cfg.fn, mod, "pp_empty");
  uint64_t *buf = malloc(3 * samples * sizeof *buf);
  if (rc == CUDA_SUCCESS && !buf) {
    *failed = "event calibration (out of host memory)";
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (rc == CUDA_SUCCESS) {
    *failed = NULL;
    rc = run_samples(pool, stream, &cfg, samples, want_cupti, out, buf,
                     buf + samples, buf + 2 * samples, failed);
  }
  free(buf);
  cu->ModuleUnload(mod);
  out->host_ns = pp_ticks_delta_ns(t0, pp_now_inline());
  return rc;
}

#else
typedef int pp_cuda_ksrc_absent_;
#endif
