/*
 * pp_cupti.h: CUPTI as the device timeline of a dispatch, public C API (no
 * Lua).
 *
 * CUPTI's activity API reports, for every kernel, when it started and ended
 * on the device. phaseprobe asks CUPTI to put those times on the probe's own
 * clock (cuptiActivityRegisterTimestampCallback, before any activity kind is
 * enabled), so a kernel's start and end sit on the same axis as the host
 * phases, the launch calls and the dispatch's start_ns. From them a window
 * gets its kernel time (the sum of the kernels' durations), and the device's
 * idle time inside the window split into launch latency (a launch call was
 * in progress, or its kernel had not started) and host-caused gap (no call
 * in progress and no kernel pending: the host was busy elsewhere).
 *
 * The library is loaded at run time (dlopen; nothing links -lcupti). The
 * first of these that loads is used:
 *
 *     $PHASEPROBE_LIBCUPTI                       (an explicit path)
 *     $CUDA_HOME/extras/CUPTI/lib64/libcupti.so[.13]
 *     $CUDA_HOME/lib64/libcupti.so[.13]          (CUDA_HOME: /usr/local/cuda)
 *     libcupti.so.13, libcupti.so                (the linker's search path)
 *
 * What it costs, and why it is built this way (measured on an H200, driver
 * 580, tools/gpu_anatomy.c "cupti"; a tiny kernel and a stream synchronize
 * take 9.3 us): the kernel activity kind adds 0.3 us a dispatch, a driver
 * launch callback 0.2 us more; a cuptiActivityFlushAll(0) on the dispatch
 * thread 55 us and a forced one 280 us (after which the next launch call
 * takes 170 to 290 us, make truth part 2c; a forced flush also ends the
 * records of kernels still running without their times). So nothing here
 * flushes on the dispatch path, and nothing forces a flush before plain ones
 * had their chance: a launch callback notes each launch call's correlation
 * id and host times (entry and return), and a thread of this module flushes
 * CUPTI's buffers every 10 ms while a span waits for its kernels, deferred
 * while a timed window is open unless the span slots run short (the span
 * start that takes the 193rd of 256 wakes it). A dispatch whose kernel
 * records have not arrived when it is emitted is completed later: its record
 * reaches the line sink and the store when the records come (pp_flush waits
 * for them).
 *
 * Use, from C (the CUDA window does this for source "cupti"):
 *
 *     char why[256];
 *     if (pp_cupti_start(why, sizeof why) != 0) ... // why says why not
 *     uint64_t id = pp_cupti_span_begin();         // this thread's launches
 *     ... cuLaunchKernel x n ...                   //   now join the span
 *     pp_cupti_span_end(id);
 *     pp_cupti_span_close(id, open_ns, close_ns,   // the window's times;
 *                        PP_CUPTI_TO_DISPATCH);    // the open dispatch
 *                                                  // takes the timeline
 *     ... pp_emit() ...                            // completed when the
 *                                                  // kernels' records come
 *   or, to read the timeline now (tests, calibration):
 *     pp_cupti_timeline t;
 *     pp_cupti_span_wait(id, 0, &t, why, sizeof why);
 *     pp_cupti_stop();
 *
 * Thread safety: every function may be called from any thread; a span
 * collects the launches of the thread that began it, until it ends. At most
 * one CUPTI client may subscribe to callbacks in a process: with another
 * one attached (a profiler), pp_cupti_start says so.
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

/* Starts collection (reference counted). 0, or -1 with why. The first start
 * registers the probe clock as CUPTI's timestamp source, the buffer
 * callbacks and the launch callbacks, enables the concurrent-kernel activity
 * kind and starts the flusher thread. While collection is on, the probe
 * clock cannot be switched (pp_clock_select refuses). */
int pp_cupti_start(char *why, size_t whylen);
/* Ends one start; the last one completes what is pending (as
 * pp_cupti_drain, at most about a second), disables the activity kind and the callbacks,
 * and stops the flusher thread. Unmatched stops are ignored. */
void pp_cupti_stop(void);
/* Whether collection is on. */
int pp_cupti_active(void);
/* A timed window opens (+1) or is collected or dropped (-1): the flusher
 * holds its flushes while a window is open (at most 100 ms), so a flush's
 * locks never stretch a measured window. */
void pp_cupti_window(int delta);
/* Milliseconds between the flusher's rounds (1..1000, default 10): a
 * round flushes when spans wait, so a record is completed about this long
 * after its kernels end. Returns the value in force; 0 only reads it. */
unsigned pp_cupti_flush_ms(unsigned ms);

/* Opens a span on this thread: the kernels of the launches this thread
 * makes until pp_cupti_span_end belong to the returned id. 0 when collection
 * is off or every span slot is taken (pp_cupti_stats counts it). A span is
 * ended, closed and released (or dropped) by the thread that began it. */
uint64_t pp_cupti_span_begin(void);
/* Ends the launches of span `id` (this thread's current one). */
void pp_cupti_span_end(uint64_t id);
/* What becomes of a closed span (pp_cupti_span_close):
 *   PP_CUPTI_TO_DISPATCH  the dispatch open on this thread takes the
 *                         timeline: its record's device fields are filled
 *                         when the kernels' records have come, at pp_emit
 *                         or later (the record is then delivered to the
 *                         sinks from the thread that completes it);
 *                         without an open dispatch this is PP_CUPTI_KEEP
 *   PP_CUPTI_KEEP         kept for pp_cupti_span_wait (released unread
 *                         2 s after it closed)
 *   PP_CUPTI_RELEASE      released as soon as its kernels have come */
enum { PP_CUPTI_RELEASE = 0, PP_CUPTI_TO_DISPATCH = 1, PP_CUPTI_KEEP = 2 };

/* The window of span `id` is over: open_ns and close_ns are the probe-clock
 * times (pp_now_ns) at which it was opened and closed; `mode` is one of
 * the above. 0, or -1 when `id` is not a live span. */
int pp_cupti_span_close(uint64_t id, uint64_t open_ns, uint64_t close_ns,
                        int mode);

/* Nobody will read span `id` (a window dropped without a wait): released as
 * soon as its kernels have come. A dispatch it was given to keeps it. */
void pp_cupti_span_release(uint64_t id);

/* The device timeline of a span, on the probe clock (ns). */
typedef struct {
  uint64_t launches;          /* launch calls made in the span             */
  uint64_t kernels;           /* kernel records that came for them         */
  uint64_t untimed;           /* of those, records without a complete time */
  uint64_t sum_ns;            /* sum of the kernels' durations             */
  uint64_t first_launch_ns;   /* host time of the first launch call        */
  uint64_t first_start_ns;    /* start of the first kernel (0: none)       */
  uint64_t last_end_ns;       /* end of the last kernel                    */
  uint64_t open_ns, close_ns; /* the window                                */
  uint64_t window_ns;         /* max(close, last end) - open               */
  uint64_t launch_latency_ns; /* idle: a launch call in progress, or its  */
                              /* kernel not started                        */
  uint64_t host_gap_ns;       /* idle: no call in progress, no kernel      */
                              /* pending (before, between and after the    */
                              /* calls, until the window closed)           */
  int split_partial;          /* more launches than the split follows one  */
                              /* by one (PP_CUPTI_SPAN_LAUNCHES): the split */
                              /* covers the first ones                     */
} pp_cupti_timeline;
#define PP_CUPTI_SPAN_LAUNCHES 128

/* Waits for span `id` (closed or not: an open one is closed with open_ns =
 * its first launch and close_ns = now) to have all its kernels, for at most
 * timeout_ns (0: 1 s): plain flushes, and one forced flush once half the
 * timeout has passed (it ends a record still running without its times);
 * fills *out and releases the span (a dispatch still open that was to take
 * it takes the timeline now). Each flush costs about 55 us on the H200: to
 * read many spans, close them all (PP_CUPTI_KEEP) and wait afterwards. 0
 * when every kernel came, 1 when not all did (out holds what came; why says
 * how many), -1 when `id` is not a live span (why). */
int pp_cupti_span_wait(uint64_t id, uint64_t timeout_ns, pp_cupti_timeline *out,
                       char *why, size_t whylen);

/* Completes every span that waits for kernel records (flushes as
 * pp_cupti_span_wait does, for at most timeout_ns, 0: 1 s) and delivers
 * their records. Returns the
 * number still waiting (their records are then delivered without the
 * device timeline, kernel_src=none). pp_flush calls it. */
size_t pp_cupti_drain(uint64_t timeout_ns);

typedef struct {
  uint64_t records;      /* activity records read                          */
  uint64_t kernels;      /* kernel records read                            */
  uint64_t launches;     /* launch calls seen in spans                     */
  uint64_t matched;      /* kernels attributed to a span                   */
  uint64_t lost;         /* kernels whose span slot was reused first       */
  uint64_t dropped;      /* records CUPTI reported as dropped              */
  uint64_t buffers;      /* buffers delivered                              */
  uint64_t buffer_bytes; /* bytes of records delivered                     */
  uint64_t spans;        /* spans begun                                    */
  uint64_t spans_refused;/* span_begin found no free slot                  */
  uint64_t deferred;     /* records delivered after their emit             */
  uint64_t incomplete;   /* spans given up on (kernels never came)         */
  uint64_t unclaimed;    /* complete spans nobody read, released          */
  uint64_t flushes;      /* flushes by the flusher thread                  */
  uint64_t forced_flushes; /* forced flushes (wait, drain, stop)           */
  uint64_t lock_waits;   /* a span's start or a launch call found the
                            source's table lock held                       */
  uint64_t lock_wait_ns; /* how long they waited, in all                   */
  uint64_t pending;      /* spans waiting now                              */
  uint64_t starts;       /* current start count                            */
} pp_cupti_stats;
void pp_cupti_stats_get(pp_cupti_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* PP_CUPTI_H */
