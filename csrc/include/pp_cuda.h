/*
 * pp_cuda.h: phaseprobe's CUDA driver layer, public C API.
 *
 * The driver is loaded at run time: dlopen("libcuda.so.1") (or the path in
 * PHASEPROBE_LIBCUDA) and cuGetProcAddress_v2 for every entry point, each
 * requested at an explicit CUDA version. Nothing links -lcuda. Types come
 * from the toolkit's cuda.h / cudaTypedefs.h, so this header needs them.
 *
 * The timed dispatch window, from C:
 *
 *     const pp_cuda_api *cu = pp_cuda_load(why, sizeof why);   // once
 *     pp_cuda_event_pool *pool = pp_cuda_event_pool_new();     // per context
 *     pp_cuda_window w;
 *     pp_cuda_window_open(&w, pool, stream);       // outer start event
 *     ... host work inside the window ...
 *     pp_cuda_window_launch_loop(&w, &launch, n, &reset); // inner pair
 *     pp_cuda_window_fence(&w);                    // optional, in-window sync
 *     pp_cuda_window_close(&w);                    // outer end event
 *     pp_cuda_window_collect(&w, &window_ns, &kernel_ns); // also records
 *
 * Every function returning CUresult leaves the name of the driver call that
 * failed in w->failed (windows) or *failed (others); pp_cuda_format_error()
 * turns that into "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (invalid
 * argument)". The caller owns context currency: every call below expects the
 * context of its objects to be current on the calling thread.
 */
#ifndef PP_CUDA_H
#define PP_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "phaseprobe.h"
#include "pp_cupti.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Entry points are requested at this CUDA version (12.0): the ABI of every
 * function in the table below is the one of that version. */
#define PP_CUDA_API_VERSION 12000
/* cuFuncGetParamInfo exists from 12.4; requested only on such drivers. */
#define PP_CUDA_PARAMINFO_VERSION 12040

/* X(field, "symbol", type, version, required) */
#define PP_CUDA_ENTRIES(X)                                                     \
  X(GetErrorName, "cuGetErrorName", PFN_cuGetErrorName_v6000, 12000, 1)        \
  X(GetErrorString, "cuGetErrorString", PFN_cuGetErrorString_v6000, 12000, 1)  \
  X(Init, "cuInit", PFN_cuInit_v2000, 12000, 1)                                \
  X(DriverGetVersion, "cuDriverGetVersion", PFN_cuDriverGetVersion_v2020,      \
    12000, 1)                                                                  \
  X(DeviceGetCount, "cuDeviceGetCount", PFN_cuDeviceGetCount_v2000, 12000, 1)  \
  X(DeviceGet, "cuDeviceGet", PFN_cuDeviceGet_v2000, 12000, 1)                 \
  X(DeviceGetName, "cuDeviceGetName", PFN_cuDeviceGetName_v2000, 12000, 1)     \
  X(DeviceGetAttribute, "cuDeviceGetAttribute",                                \
    PFN_cuDeviceGetAttribute_v2000, 12000, 1)                                  \
  X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",                        \
    PFN_cuDevicePrimaryCtxRetain_v7000, 12000, 1)                              \
  X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease",                      \
    PFN_cuDevicePrimaryCtxRelease_v11000, 12000, 1)                            \
  X(CtxSetCurrent, "cuCtxSetCurrent", PFN_cuCtxSetCurrent_v4000, 12000, 1)     \
  X(CtxSynchronize, "cuCtxSynchronize", PFN_cuCtxSynchronize_v2000, 12000, 1)  \
  X(ModuleLoadDataEx, "cuModuleLoadDataEx", PFN_cuModuleLoadDataEx_v2010,      \
    12000, 1)                                                                  \
  X(ModuleUnload, "cuModuleUnload", PFN_cuModuleUnload_v2000, 12000, 1)        \
  X(ModuleGetFunction, "cuModuleGetFunction", PFN_cuModuleGetFunction_v2000,   \
    12000, 1)                                                                  \
  X(ModuleGetGlobal, "cuModuleGetGlobal", PFN_cuModuleGetGlobal_v3020, 12000,  \
    1)                                                                         \
  X(FuncGetAttribute, "cuFuncGetAttribute", PFN_cuFuncGetAttribute_v2020,      \
    12000, 1)                                                                  \
  X(FuncGetParamInfo, "cuFuncGetParamInfo", PFN_cuFuncGetParamInfo_v12040,     \
    12040, 0)                                                                  \
  X(MemAlloc, "cuMemAlloc", PFN_cuMemAlloc_v3020, 12000, 1)                    \
  X(MemFree, "cuMemFree", PFN_cuMemFree_v3020, 12000, 1)                       \
  X(MemGetInfo, "cuMemGetInfo", PFN_cuMemGetInfo_v3020, 12000, 1)              \
  X(MemcpyHtoD, "cuMemcpyHtoD", PFN_cuMemcpyHtoD_v3020, 12000, 1)              \
  X(MemcpyDtoH, "cuMemcpyDtoH", PFN_cuMemcpyDtoH_v3020, 12000, 1)              \
  X(MemsetD8, "cuMemsetD8", PFN_cuMemsetD8_v3020, 12000, 1)                    \
  X(MemsetD8Async, "cuMemsetD8Async", PFN_cuMemsetD8Async_v3020, 12000, 1)     \
  X(StreamCreate, "cuStreamCreate", PFN_cuStreamCreate_v2000, 12000, 1)        \
  X(StreamDestroy, "cuStreamDestroy", PFN_cuStreamDestroy_v4000, 12000, 1)     \
  X(StreamSynchronize, "cuStreamSynchronize", PFN_cuStreamSynchronize_v2000,   \
    12000, 1)                                                                  \
  X(EventCreate, "cuEventCreate", PFN_cuEventCreate_v2000, 12000, 1)           \
  X(EventDestroy, "cuEventDestroy", PFN_cuEventDestroy_v4000, 12000, 1)        \
  X(EventRecord, "cuEventRecord", PFN_cuEventRecord_v2000, 12000, 1)           \
  X(EventQuery, "cuEventQuery", PFN_cuEventQuery_v2000, 12000, 1)              \
  X(EventSynchronize, "cuEventSynchronize", PFN_cuEventSynchronize_v2000,      \
    12000, 1)                                                                  \
  X(EventElapsedTime, "cuEventElapsedTime", PFN_cuEventElapsedTime_v2000,      \
    12000, 1)                                                                  \
  X(LaunchKernel, "cuLaunchKernel", PFN_cuLaunchKernel_v4000, 12000, 1)        \
  X(LaunchCooperativeKernel, "cuLaunchCooperativeKernel",                      \
    PFN_cuLaunchCooperativeKernel_v9000, 12000, 1)                             \
  X(OccupancyMaxActiveBlocksPerMultiprocessor,                                 \
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",                             \
    PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050, 12000, 1)

/* The function table: NULL members only for optional entry points the
 * driver lacks (FuncGetParamInfo before 12.4). */
typedef struct pp_cuda_api {
#define PP_CUDA_FIELD_(field, sym, type, ver, req) type field;
  PP_CUDA_ENTRIES(PP_CUDA_FIELD_)
#undef PP_CUDA_FIELD_
  int driver_version; /* cuDriverGetVersion, e.g. 13000                     */
  char path[256];     /* the library that was loaded                        */
} pp_cuda_api;

/* ---- loading ------------------------------------------------------------- */
/* Loads the driver and calls cuInit(0), once per process (thread-safe). The
 * table, or NULL with the reason written to why (which may be NULL). Later
 * calls return the first outcome. */
const pp_cuda_api *pp_cuda_load(char *why, size_t whylen);
/* The loaded table, or NULL when pp_cuda_load has not succeeded. */
const pp_cuda_api *pp_cuda(void);

/* ---- errors -------------------------------------------------------------- */
/* "call: CUDA_ERROR_NAME (description)" plus, for errors that leave the
 * device unusable in this process, "; the device is unusable in this
 * process after this error (even a new context fails); restart the
 * process" (seen on driver 580: after an illegal address even
 * cuDevicePrimaryCtxRetain returns the error). Returns the length (output truncated to cap-1, NUL-terminated). */
size_t pp_cuda_format_error(char *buf, size_t cap, const char *call,
                            CUresult rc);
/* The CUresult's name ("CUDA_ERROR_INVALID_VALUE"), "CUDA_ERROR_<n>" when
 * the driver does not know it. Static storage or buf. */
const char *pp_cuda_error_name(CUresult rc, char *buf, size_t cap);
/* Whether rc is one of the errors after which the context (in practice the
 * process) cannot be used any more: illegal address, launch failure, ... */
int pp_cuda_error_is_sticky(CUresult rc);

/* ---- events -------------------------------------------------------------- */
/* A pool of timing events of one context (created on demand, reused).
 * Thread-safe. Destroying the pool needs its context current. */
typedef struct pp_cuda_event_pool pp_cuda_event_pool;
pp_cuda_event_pool *pp_cuda_event_pool_new(void);
CUresult pp_cuda_event_get(pp_cuda_event_pool *p, CUevent *out);
void pp_cuda_event_put(pp_cuda_event_pool *p, CUevent ev);
/* Events created so far, and how many are in the pool now. */
size_t pp_cuda_event_pool_created(const pp_cuda_event_pool *p);
size_t pp_cuda_event_pool_idle(const pp_cuda_event_pool *p);
void pp_cuda_event_pool_free(pp_cuda_event_pool *p);

/* ---- launches ------------------------------------------------------------ */
typedef struct {
  CUfunction fn;
  unsigned grid[3], block[3];
  unsigned shared;   /* dynamic shared memory, bytes                       */
  void **params;     /* kernelParams: one pointer per parameter            */
  int cooperative;   /* cuLaunchCooperativeKernel instead of cuLaunchKernel */
} pp_cuda_launch_cfg;

/* One launch on `stream`; *failed names the driver call on error. */
CUresult pp_cuda_launch(const pp_cuda_launch_cfg *cfg, CUstream stream,
                        const char **failed);

/* Residency check for a cooperative launch: the grid must not exceed
 * max-active-blocks-per-SM (for this block size and shared memory) x SMs.
 * Returns CUDA_SUCCESS and *fits; *capacity receives the co-resident block
 * count. */
CUresult pp_cuda_coop_fits(const pp_cuda_launch_cfg *cfg, int sm_count,
                           int *fits, uint64_t *capacity, const char **failed);

/* Per-iteration reset of a device range before each launch of a loop (the
 * reference's fixpoint replay clears its barrier counter this way). */
typedef struct {
  CUdeviceptr ptr;     /* 0: no reset */
  size_t bytes;
  unsigned char value;
} pp_cuda_reset;

/* ---- the timed dispatch window ------------------------------------------ */
enum {
  PP_CUDA_WINDOW_IDLE = 0,  /* not opened, or collected                    */
  PP_CUDA_WINDOW_OPEN,      /* outer start recorded                        */
  PP_CUDA_WINDOW_LOOPED,    /* inner pair recorded around the launch loop  */
  PP_CUDA_WINDOW_CLOSED     /* outer end recorded                          */
};

typedef struct {
  pp_cuda_event_pool *pool;
  CUstream stream;
  CUevent outer[2], inner[2];
  int stage;            /* PP_CUDA_WINDOW_*                                  */
  int looped;           /* the inner pair was recorded                        */
  uint64_t iterations;  /* launches in the loop                               */
  uint64_t loop_host_ns;/* host time of the launch loop (inner pair incl.)    */
  uint64_t probe_ns;    /* host time spent on events and elapsed queries      */
  uint64_t floor_ns;    /* event-pair floor reported with kernel_ns; set it   */
                        /* after pp_cuda_window_open (0: not calibrated)      */
  uint64_t error_ns;    /* the calibrated pair's p95 error against CUPTI,     */
                        /* reported as kernel_error_ns (0: not measured)      */
  const struct pp_cuda_calibration *cal;   /* when set (a CUPTI calibration   */
                        /* by kernel length), floor and error come from it   */
  const char *failed;   /* the driver call that failed, or NULL               */
  uint64_t host_ns[4];  /* probe-clock ns when each event was recorded:      */
                        /* outer start, inner start, inner end, outer end    */
  uint64_t lead_ns;     /* device: outer start to inner start (at collect)   */
  /* Kernel-time source (cuda_ksrc.c). A window opened with
   * pp_cuda_window_open_timeline records no events: CUPTI's kernel records
   * are its whole device side (source PP_KSRC_CUPTI). A window opened with
   * pp_cuda_window_open records the two event pairs; set `source` to
   * PP_KSRC_CUPTI after open, before the loop, to read CUPTI as well (the
   * record then takes CUPTI's figures). */
  pp_kernel_src source;
  int timeline;             /* opened without events (CUPTI's timeline)     */
  int held;                 /* counted open for the CUPTI flusher           */
  uint64_t cupti_span;      /* CUPTI span of the loop's launches (0: none)  */
  pp_kernel_src kernel_src; /* what filled kernel_ns at collect             */
  uint64_t event_kernel_ns; /* the inner pair's reading, at collect         */
  uint64_t cupti_kernel_ns; /* CUPTI's sum over the loop's kernels          */
  uint64_t cupti_kernels;   /* kernel records CUPTI attributed to the loop  */
  pp_cupti_timeline tl;     /* CUPTI's timeline, after pp_cuda_window_wait  */
  char cupti_why[200];      /* why CUPTI did not fill kernel_ns, or ""      */
} pp_cuda_window;

/* Takes two or four events from the pool and records the outer start on
 * `stream`. The window's host costs are charged to the open dispatch's
 * probe overhead (pp_add_probe_ns) as they happen. */
CUresult pp_cuda_window_open(pp_cuda_window *w, pp_cuda_event_pool *pool,
                             CUstream stream);
/* Opens a window that records no events: its device side is CUPTI's
 * timeline of the launch loop's kernels, on the probe clock (pp_cupti.h;
 * collection must be on). Costs a clock read at open and close and a CUPTI
 * span around the loop; at collect nothing waits: the open dispatch's
 * record is completed when the kernels' records come (or at
 * pp_cuda_window_wait). */
CUresult pp_cuda_window_open_timeline(pp_cuda_window *w,
                                      pp_cuda_event_pool *pool,
                                      CUstream stream);
/* Inner start; `iterations` x (reset, when reset->ptr; launch); inner end.
 * No callback into the caller between the two inner events. One loop per
 * window. */
CUresult pp_cuda_window_launch_loop(pp_cuda_window *w,
                                    const pp_cuda_launch_cfg *cfg,
                                    uint64_t iterations,
                                    const pp_cuda_reset *reset);
/* cuStreamSynchronize inside the window (the reference's post-launch
 * fence); may be called after the loop, before close. */
CUresult pp_cuda_window_fence(pp_cuda_window *w);
/* Records the outer end event. */
CUresult pp_cuda_window_close(pp_cuda_window *w);
/* Waits for the outer end event, reads both elapsed times and, when a
 * dispatch is open on this thread, records them: device_window_ns and
 * kernel_ns (source "event", with floor_ns). *kernel_ns is UINT64_MAX when
 * no loop ran. Returns the events to the pool. */
CUresult pp_cuda_window_collect(pp_cuda_window *w, uint64_t *window_ns,
                                uint64_t *kernel_ns);
/* Returns the window's events to the pool without reading them. */
void pp_cuda_window_discard(pp_cuda_window *w);
/* The end of a window whose steps so far returned rc: after a success,
 * pp_cuda_window_close and pp_cuda_window_collect; after a failure (theirs
 * or the steps'), pp_cuda_window_discard. Returns the first failure, or
 * CUDA_SUCCESS. */
CUresult pp_cuda_window_finish(pp_cuda_window *w, CUresult rc,
                               uint64_t *window_ns, uint64_t *kernel_ns);
/* After collect, for a window read by CUPTI: waits (forcing CUPTI to flush,
 * at most timeout_ns, 0: 1 s) for the loop's kernel records and fills
 * w->tl, w->cupti_kernel_ns and w->kernel_src; a dispatch still open on this
 * thread takes the timeline at once. 0, 1 when not every kernel came
 * (w->cupti_why says what did), -1 when the window has no CUPTI span. */
int pp_cuda_window_wait(pp_cuda_window *w, uint64_t timeout_ns);

/* Busy-waits `ns` nanoseconds on the probe clock (no sleep, no syscall, no
 * PAUSE: see pp_spin_ns in clock.c). */
void pp_cuda_spin_ns(uint64_t ns);

/* Device time of `samples` back-to-back event pairs on `stream` (each
 * synchronized), written to out[] in ns; the median is a sensible floor.
 * *failed names the failing call. */
CUresult pp_cuda_event_pairs(pp_cuda_event_pool *pool, CUstream stream,
                             uint64_t *out, size_t samples,
                             const char **failed);
/* Milliseconds from cuEventElapsedTime to integer ns (rounded, clamped). */
uint64_t pp_cuda_ms_to_ns(float ms);

/* ---- PTX entry parameters ------------------------------------------------ */
typedef enum {
  PP_CUDA_PARAM_UNKNOWN = 0, /* size known, type not (driver layout only) */
  PP_CUDA_PARAM_UINT,        /* .u8 .u16 .u32 .u64                         */
  PP_CUDA_PARAM_SINT,        /* .s8 .s16 .s32 .s64                         */
  PP_CUDA_PARAM_FLOAT,       /* .f32 .f64                                  */
  PP_CUDA_PARAM_BITS,        /* .b8 .b16 .b32 .b64 (untyped)               */
  PP_CUDA_PARAM_HALF,        /* .f16 .bf16 .f16x2 .bf16x2: raw bytes only  */
  PP_CUDA_PARAM_BYTES        /* an array (.b8 name[N]): raw bytes only     */
} pp_cuda_param_kind;

typedef struct {
  size_t offset, size, align;
  pp_cuda_param_kind kind;
  char type[8];   /* "f32", "u64", ... ("" when unknown)                    */
  char name[48];  /* the PTX parameter name (truncated), "" when unknown    */
} pp_cuda_param;

/* Parses the parameter list of `.entry <entry>` in PTX text (comments
 * skipped) into out[0..max). Returns the number of parameters, -1 when the
 * entry is not found, -2 on a parameter list it cannot read (err says
 * where), -3 when there are more than max parameters. */
int pp_cuda_ptx_params(const char *ptx, size_t len, const char *entry,
                       pp_cuda_param *out, size_t max, char *err,
                       size_t errlen);

/* ---- kernel-time sources and the event-pair calibration (cuda_ksrc.c) -----
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

#ifdef __cplusplus
}
#endif
#endif /* PP_CUDA_H */
