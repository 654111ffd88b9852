/*
 * pp_cuda_ksrc.h: the timed window's hooks into its kernel-time sources
 * (cuda_ksrc.c), called by cuda_window.c; not installed. The sources and the
 * event-pair calibration are public, in pp_cuda.h. Needs the CUDA headers.
 */
#ifndef PP_CUDA_KSRC_H
#define PP_CUDA_KSRC_H

#include "pp_internal.h"
#include "pp_cuda.h"

/* Host time the probe itself spent since t0, charged to the window and to
 * the open dispatch (only an open one: the window never opens a dispatch
 * implicitly). Inline: it runs inside the timed window. */
static inline void pp_cuda_window_charge(pp_cuda_window *w, pp_ticks t0) {
  uint64_t ns = pp_ticks_delta_ns(t0, pp_now_inline());
  w->probe_ns = pp_sat_add(w->probe_ns, ns);
  if (pp_is_open())
    pp_add_probe_ns(ns);
}

/* Hooks called by cuda_window.c around the launch loop and at collect. */
void pp_cuda_ksrc_loop_enter(pp_cuda_window *w);
void pp_cuda_ksrc_loop_leave(pp_cuda_window *w, CUresult rc);
/* *kernel_ns holds the pair's reading; replaced by CUPTI's when the window's
 * source is CUPTI and it delivered every kernel of the loop. */
void pp_cuda_ksrc_collect(pp_cuda_window *w, uint64_t *kernel_ns,
                          pp_kernel_src *src, uint64_t *floor_ns);

#endif /* PP_CUDA_KSRC_H */
