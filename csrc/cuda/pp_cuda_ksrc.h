/*
 * pp_cuda_ksrc.h: kernel-time sources of the timed window, and the
 * event-pair calibration (cuda_ksrc.c). Included by pp_cuda.h; needs the
 * CUDA headers.
 *
 * Sources. The inner event pair around the launch loop reads the loop's
 * device time plus a floor: the launch latency between the two records and
 * the event mechanics (microseconds, machine dependent). CUPTI's kernel
 * records (pp_cupti.h) read the kernels alone. A window uses CUPTI when its
 * `source` is PP_KSRC_CUPTI and collection is on (pp_cupti_start):
 *
 *     pp_cuda_window_open(&w, pool, stream);
 *     w.floor_ns = cal.floor_ns;         // from pp_cuda_calibrate_events
 *     w.source = PP_KSRC_CUPTI;          // or PP_KSRC_EVENT (the default)
 *     pp_cuda_window_launch_loop(&w, &cfg, n, NULL);
 *     pp_cuda_window_close(&w);
 *     pp_cuda_window_collect(&w, &window_ns, &kernel_ns);
 *     // kernel_ns: CUPTI's sum over the n kernels (w.kernel_src == CUPTI),
 *     // or, if CUPTI could not deliver, the pair's reading (w.kernel_src ==
 *     // EVENT, w.cupti_why says why). w.event_kernel_ns is always the pair's.
 *
 * The record gets kernel_ns with kernel_src and, for the event source,
 * kernel_floor_ns = w.floor_ns: calibrated kernel time = kernel_ns - floor.
 * CUPTI's span push/pop and its flush at collect are the probe's own host
 * cost and go to the open dispatch's probe_ns.
 */
#ifndef PP_CUDA_KSRC_H
#define PP_CUDA_KSRC_H

/* Hooks called by cuda_window.c around the launch loop and at collect. */
void pp_cuda_ksrc_loop_enter(pp_cuda_window *w);
void pp_cuda_ksrc_loop_leave(pp_cuda_window *w);
/* *kernel_ns holds the pair's reading; replaced by CUPTI's when the window's
 * source is CUPTI and it delivered every kernel of the loop. */
void pp_cuda_ksrc_collect(pp_cuda_window *w, uint64_t *kernel_ns,
                          pp_kernel_src *src, uint64_t *floor_ns);

/* Calibrated kernel time of an event-sourced reading: ns - floor, 0 below. */
static inline uint64_t pp_cuda_calibrated_ns(uint64_t ns, uint64_t floor_ns) {
  return ns > floor_ns ? ns - floor_ns : 0;
}

/* ---- event-pair calibration ----------------------------------------------- */
typedef enum {
  PP_CUDA_CAL_EVENT = 1, /* floor = median pair around one empty launch     */
  PP_CUDA_CAL_CUPTI = 2  /* floor = median of (pair - CUPTI) per launch     */
} pp_cuda_cal_method;

/* One kernel length of a CUPTI calibration: the pair's reading of spin
 * kernels that long, and what to subtract from such a reading. */
typedef struct {
  uint64_t kernel_ns;  /* the spin's length per CUPTI (median)               */
  uint64_t pair_ns;    /* the inner pair's reading (median)                  */
  uint64_t floor_ns;   /* median of pair - CUPTI: subtracted at this reading */
  uint64_t error_ns;   /* p95 of |pair - floor - CUPTI|: how far a           */
                       /* calibrated reading of this length can be off       */
  size_t samples;
} pp_cuda_cal_point;
#define PP_CUDA_CAL_POINTS 5

typedef struct pp_cuda_calibration {
  pp_cuda_cal_method method;
  size_t samples;          /* samples kept (after the warm-up)              */
  uint64_t floor_ns;       /* the floor to subtract                         */
  /* the inner pair around one launch of an empty kernel */
  uint64_t event_min_ns, event_median_ns, event_p90_ns, event_max_ns;
  /* CUPTI method only: the empty kernel's own duration, and pair - CUPTI */
  uint64_t cupti_median_ns;
  uint64_t diff_min_ns, diff_p90_ns, diff_max_ns;
  /* CUPTI method only: the floor and the error by kernel length (the empty
   * kernel, then spins of 10 us, 100 us, 1 ms and 10 ms): the pair's
   * latency grows after long kernels (7 us after an empty one, about 35 us
   * after 10 ms ones on an H200), so one floor does not fit every length. */
  size_t npoints;
  pp_cuda_cal_point points[PP_CUDA_CAL_POINTS];
  uint64_t host_ns;        /* host time the calibration took               */
  char why[200];           /* why CUPTI was not used although asked for    */
} pp_cuda_calibration;

/* The floor to subtract from an inner-pair reading of pair_ns, and in
 * *error_ns (may be NULL) how far the calibrated reading can be off: from
 * the calibration's points, linear between the two around pair_ns (the
 * nearest outside them); with no points, cal->floor_ns and 0. */
uint64_t pp_cuda_cal_floor(const pp_cuda_calibration *cal, uint64_t pair_ns,
                           uint64_t *error_ns);

/* Measures the event-pair floor on the current context: `samples` timed
 * windows (plus 3 warm-up ones) each with one launch of an empty kernel
 * (loaded from built-in PTX, unloaded after) on `stream`, read exactly the
 * way pp_cuda_window_collect reads a dispatch. With want_cupti and CUPTI
 * collection on, each sample is also read by CUPTI and the floor is the
 * median of pair minus CUPTI (method CUPTI); otherwise the floor is the
 * median pair (method EVENT), which also contains the empty kernel's own
 * device time (about a microsecond), so calibrated readings err low by that.
 * Calibrate under the conditions of use: CUPTI collection on or off changes
 * the floor. Refuses (CUDA_ERROR_INVALID_VALUE) while a dispatch is open on
 * this thread. *failed names the failing call. */
CUresult pp_cuda_calibrate_events(pp_cuda_event_pool *pool, CUstream stream,
                                  size_t samples, int want_cupti,
                                  pp_cuda_calibration *out,
                                  const char **failed);

#endif /* PP_CUDA_KSRC_H */
