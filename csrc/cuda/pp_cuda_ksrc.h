/*
 * pp_cuda_ksrc.h: the timed window's hooks into its kernel-time sources
 * (cuda_ksrc.c), called by cuda_window.c; not installed. The sources and the
 * event-pair calibration are public, in pp_cuda.h. Needs the CUDA headers.
 */
#ifndef PP_CUDA_KSRC_H
#define PP_CUDA_KSRC_H

#include "pp_cuda.h"

/* Hooks called by cuda_window.c around the launch loop and at collect. */
void pp_cuda_ksrc_loop_enter(pp_cuda_window *w);
void pp_cuda_ksrc_loop_leave(pp_cuda_window *w);
/* *kernel_ns holds the pair's reading; replaced by CUPTI's when the window's
 * source is CUPTI and it delivered every kernel of the loop. */
void pp_cuda_ksrc_collect(pp_cuda_window *w, uint64_t *kernel_ns,
                          pp_kernel_src *src, uint64_t *floor_ns);

#endif /* PP_CUDA_KSRC_H */
