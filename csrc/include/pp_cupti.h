/*
 * pp_cupti.h: CUPTI as a kernel-time source, public C API (no Lua).
 *
 * CUPTI's activity API reports, for every kernel, the device timestamps of
 * its start and end. phaseprobe uses it as a second source for kernel_ns,
 * beside the inner CUDA event pair: the event pair also prices the launch
 * latency between the two records (a floor of microseconds), CUPTI does not.
 *
 * The library is loaded at run time (dlopen; nothing links -lcupti). The
 * first of these that loads is used:
 *
 *     $PHASEPROBE_LIBCUPTI                       (an explicit path)
 *     $CUDA_HOME/extras/CUPTI/lib64/libcupti.so[.13]
 *     $CUDA_HOME/lib64/libcupti.so[.13]          (CUDA_HOME: /usr/local/cuda)
 *     libcupti.so.13, libcupti.so                (the linker's search path)
 *
 * Use, from C (the CUDA window does this for source "cupti"):
 *
 *     char why[256];
 *     if (pp_cupti_start(why, sizeof why) != 0) ... // why says why not
 *     uint64_t id = pp_cupti_span_begin();         // this thread's launches
 *     ... cuLaunchKernel x n ...                   //   now carry `id`
 *     pp_cupti_span_end(id);
 *     ... synchronize the stream ...
 *     pp_cupti_result r;
 *     pp_cupti_collect(id, n, 0, &r, why, sizeof why); // r.sum_ns
 *     pp_cupti_stop();
 *
 * How launches are matched: a span pushes an external correlation id
 * (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1) on the calling thread; CUPTI
 * then writes, for each launch call made inside the span, an external
 * correlation record (our id -> CUPTI's correlation id of that call), and
 * later the kernel record with the same correlation id. Activity records of
 * the launch calls themselves are enabled only for the launch entry points
 * (cuptiActivityEnableDriverApi; the whole DRIVER kind where that call is
 * missing), since CUPTI writes external correlation records only beside API
 * records. Kernels of launches outside any span are ignored.
 *
 * Thread safety: every function may be called from any thread. Spans are
 * per thread (CUPTI's external ids are a per-thread stack); a span must end
 * on the thread that began it. CUPTI delivers buffers on the thread that
 * flushes or on its own worker thread; the tables they fill are guarded by
 * one mutex, never held while CUPTI is called. Collection is process-wide:
 * start/stop are reference counted and CUPTI stays registered for the life
 * of the process once started (its buffer callbacks cannot be unregistered).
 *
 * Without the CUPTI headers at build time, or without the library, a driver
 * or a device at run time, every function reports why and nothing else
 * changes: the event pair remains the kernel-time source.
 */
#ifndef PP_CUPTI_H
#define PP_CUPTI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Loads libcupti and resolves its entry points, once per process. 0, or -1
 * with the reason in why (may be NULL). Does not touch the driver. */
int pp_cupti_load(char *why, size_t whylen);
/* Whether CUPTI can be the kernel-time source: the library loads, its API
 * version has the record layout read here, and the CUDA driver loads
 * (pp_cuda_load). Starts nothing. 1, or 0 with why. */
int pp_cupti_available(char *why, size_t whylen);
/* The library that was loaded ("" before pp_cupti_load succeeded) and its
 * API version (cuptiGetVersion, e.g. 130001; 0 when not loaded). */
const char *pp_cupti_path(void);
uint32_t pp_cupti_version(void);

/* Starts kernel activity collection (reference counted). 0, or -1 with why.
 * The first start in a process also registers the buffer callbacks. */
int pp_cupti_start(char *why, size_t whylen);
/* Ends one start; the last one disables the activity kinds and delivers
 * what is pending. Unmatched stops are ignored. */
void pp_cupti_stop(void);
/* Whether collection is on. */
int pp_cupti_active(void);

/* Opens a span on this thread: kernels of launches this thread makes until
 * pp_cupti_span_end are attributed to the returned id (to the innermost
 * span, when spans nest: CUPTI correlates a launch with the innermost id).
 * 0 when collection is off or CUPTI refused. */
uint64_t pp_cupti_span_begin(void);
/* Closes the span `id` (the innermost open one on this thread). 0, or -1
 * when it was not the innermost or CUPTI refused. */
int pp_cupti_span_end(uint64_t id);

typedef struct {
  uint64_t kernels;        /* kernel records attributed to the span        */
  uint64_t correlations;   /* launch calls CUPTI correlated to the span    */
  uint64_t untimed;        /* of those, records CUPTI could not time       */
  uint64_t sum_ns;         /* sum of end - start over the timed ones       */
  uint64_t first_start_ns; /* earliest start, CUPTI timestamp (0: none)    */
  uint64_t last_end_ns;    /* latest end                                   */
  uint64_t flushes;        /* cuptiActivityFlushAll calls made here        */
  uint64_t flush_ns;       /* host time of those flushes (the source's own */
                           /* cost, buffer handling on this thread incl.)  */
} pp_cupti_result;

/* Delivers pending records and reads span `id`, flushing again (pausing
 * 20 us, later 200 us, between tries; the 11th try is a forced flush) until
 * `expected` kernels are attributed or `timeout_ns` passes (0: 200 ms);
 * it gives up after the forced flush when no launch of the span was
 * correlated at all (about 0.3 ms, not the whole timeout). The
 * caller has synchronized the work. A kernel whose record has no or an
 * incomplete timestamp counts in `untimed`, not in sum_ns.
 * Returns 0 when the expected count (or more) was found, 1 when fewer were
 * (out holds what arrived; why says how many), -1 when collection is off or
 * CUPTI failed (why). */
int pp_cupti_collect(uint64_t id, uint64_t expected, uint64_t timeout_ns,
                     pp_cupti_result *out, char *why, size_t whylen);

typedef struct {
  uint64_t records;      /* activity records read                          */
  uint64_t kernels;      /* kernel records read                            */
  uint64_t correlations; /* external correlation records of our kind       */
  uint64_t matched;      /* kernels attributed to a span                   */
  uint64_t lost;         /* matches dropped: a table slot was reused first */
  uint64_t dropped;      /* records CUPTI reported as dropped              */
  uint64_t buffers;      /* buffers delivered                              */
  uint64_t buffer_bytes; /* bytes of records delivered                     */
  uint64_t spans;        /* spans begun                                    */
  uint64_t collects;     /* pp_cupti_collect calls                         */
  uint64_t forced_flushes; /* forced flushes a collect needed              */
  uint64_t starts;       /* current start count                            */
} pp_cupti_stats;
void pp_cupti_stats_get(pp_cupti_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* PP_CUPTI_H */
