/*
 * cupti_timeline.c: a span's device timeline (pp_cupti_timeline), computed
 * once its window has closed and its kernels have come: the kernels' sum,
 * the window, and the device's idle time in it split into launch latency
 * and host gap; and a dispatch's record completed from it. cupti.c files
 * what the launch callback and CUPTI's records bring into the span (under
 * its table lock, which the callers here hold); nothing here locks or calls
 * CUPTI.
 */
#include "cupti_internal.h"

#if defined(PP_HAVE_CUPTI_H) && defined(PP_HAVE_CUDA_H)

#include <string.h>

void pp_cupti_timeline_of(const pp_cupti_span *s, pp_cupti_timeline *t) {
  memset(t, 0, sizeof *t);
  t->launches = s->nlaunch;
  t->kernels = s->received;
  t->untimed = s->untimed;
  t->sum_ns = s->sum;
  t->first_launch_ns = s->nlaunch ? s->launch[0] : 0;
  t->first_start_ns = s->first_start;
  t->last_end_ns = s->last_end;
  t->open_ns = s->open_ns;
  t->close_ns = s->close_ns;
  uint64_t end = s->close_ns > s->last_end ? s->close_ns : s->last_end;
  t->window_ns = end > s->open_ns ? end - s->open_ns : 0;
  /* The device's idle time in the window (before each kernel from the end
   * of the ones before, and after the last until the close), split by what
   * the host was doing. Launch latency: a launch call was in progress, or
   * its kernel had not started yet, from the call's entry to the later of
   * its return and its kernel's end (a call that returns after its kernel
   * ended, as after a long idle, keeps the device waiting on the launch
   * path). Host gap: the rest, no launch call in progress and no kernel
   * pending: the host's own code. */
  uint64_t n = s->nlaunch < SPAN_LAUNCHES ? s->nlaunch : SPAN_LAUNCHES;
  uint64_t prev = s->open_ns, covered = s->open_ns, idle = 0, gap = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (!s->start[i] || s->end[i] <= s->start[i])
      continue; /* untimed: its share of the split is unknown */
    if (s->start[i] > prev)
      idle += s->start[i] - prev;
    prev = s->end[i] > prev ? s->end[i] : prev;
    uint64_t l = s->launch[i], busy = s->ret[i] > s->end[i] ? s->ret[i] : s->end[i];
    if (l > covered)
      gap += l - covered;
    covered = busy > covered ? busy : covered;
  }
  if (s->close_ns > prev)
    idle += s->close_ns - prev;
  if (s->close_ns > covered)
    gap += s->close_ns - covered;
  if (gap > idle) /* a launch made before the window opened */
    gap = idle;
  t->launch_latency_ns = idle - gap;
  t->host_gap_ns = gap;
  t->split_partial = s->nlaunch > SPAN_LAUNCHES;
}

void pp_cupti_device_timeline(const pp_cupti_timeline *t,
                              pp_device_timeline *d) {
  memset(d, 0, sizeof *d);
  d->kernels = t->kernels;
  d->kernel_ns = t->sum_ns;
  d->first_launch_ns = t->first_launch_ns;
  d->first_start_ns = t->first_start_ns;
  d->last_end_ns = t->last_end_ns;
  d->window_ns = t->window_ns;
  d->launch_latency_ns = t->launch_latency_ns;
  d->host_gap_ns = t->host_gap_ns;
}

/* The record of a dispatch, completed from its span's timeline. Every
 * launch's kernel came and was timed: the device fields are CUPTI's; else
 * the record says it has no kernel time (kernel_src=none). */
void pp_cupti_fill_record(pp_record *r, const pp_cupti_timeline *t,
                          int keep_window) {
  int whole = t->launches && t->kernels >= t->launches && !t->untimed;
  if (!whole) {
    pp_record_fill_timeline(r, NULL, keep_window);
    return;
  }
  pp_device_timeline d;
  pp_cupti_device_timeline(t, &d);
  pp_record_fill_timeline(r, &d, keep_window);
}

#endif /* PP_HAVE_CUPTI_H && PP_HAVE_CUDA_H */
