/*
 * cupti_internal.h: shared by the files of the CUPTI kernel-time source
 * (pp_cupti.h); not installed:
 *
 *   cupti_loader.c   libcupti, found and loaded at run time: its table
 *   cupti.c          spans: the tables CUPTI's records are filed in, the
 *                    timeline of each, the records that wait for one
 *   cupti_collect.c  collection on and off: CUPTI's callbacks registered,
 *                    the flusher thread, start and stop
 *
 * Locks: ctl_lock (cupti_collect.c: start/stop, the flusher's life) is
 * taken before tab_lock (cupti.c: the tables and the counters) where a
 * thread holds both; CUPTI is never called with tab_lock held.
 */
#ifndef PP_CUPTI_INTERNAL_H
#define PP_CUPTI_INTERNAL_H

#include "pp_internal.h"
#include "pp_cupti.h"

/* What every entry point says in a build without the CUPTI headers. */
#define PP_CUPTI_ABSENT_WHY                                                    \
  "phaseprobe was built without the CUPTI headers (cupti.h not found under "  \
  "$CUDA_HOME/extras/CUPTI/include or $CUDA_HOME/include at build time): "    \
  "the CUPTI kernel-time source is absent; rebuild with CUDA_HOME=<toolkit>"

#if defined(PP_HAVE_CUPTI_H) && defined(PP_HAVE_CUDA_H)

#include <cupti.h>

/* ---- the library (cupti_loader.c) ----------------------------------------- */
/* X(field, "symbol", (parameter list), required); every entry returns
 * CUptiResult. */
#define PP_CUPTI_ENTRIES(X)                                                    \
  X(GetVersion, "cuptiGetVersion", (uint32_t *), 1)                            \
  X(GetResultString, "cuptiGetResultString", (CUptiResult, const char **), 1)  \
  X(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks",               \
    (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc), 1)  \
  X(ActivityRegisterTimestampCallback,                                         \
    "cuptiActivityRegisterTimestampCallback", (CUpti_TimestampCallbackFunc), 1) \
  X(ActivityEnable, "cuptiActivityEnable", (CUpti_ActivityKind), 1)            \
  X(ActivityDisable, "cuptiActivityDisable", (CUpti_ActivityKind), 1)          \
  X(ActivityFlushAll, "cuptiActivityFlushAll", (uint32_t), 1)                  \
  X(ActivityGetNextRecord, "cuptiActivityGetNextRecord",                       \
    (uint8_t *, size_t, CUpti_Activity **), 1)                                 \
  X(Subscribe, "cuptiSubscribe",                                               \
    (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *), 1)                 \
  X(Unsubscribe, "cuptiUnsubscribe", (CUpti_SubscriberHandle), 1)              \
  X(EnableCallback, "cuptiEnableCallback",                                     \
    (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,                   \
     CUpti_CallbackId), 1)                                                     \
  X(ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords",         \
    (CUcontext, uint32_t, size_t *), 0)                                        \
  X(GetErrorMessage, "cuptiGetErrorMessage", (CUptiResult, const char **), 0)

#define PP_CUPTI_TYPEDEF_(field, sym, args, req)                               \
  typedef CUptiResult(CUPTIAPI *pp_cupti_##field##_fn) args;
PP_CUPTI_ENTRIES(PP_CUPTI_TYPEDEF_)
#undef PP_CUPTI_TYPEDEF_

typedef struct {
#define PP_CUPTI_FIELD_(field, sym, args, req) pp_cupti_##field##_fn field;
  PP_CUPTI_ENTRIES(PP_CUPTI_FIELD_)
#undef PP_CUPTI_FIELD_
  uint32_t version;
  char path[256];
} pp_cupti_api;

/* The loaded library's table; NULL until pp_cupti_load has succeeded (the
 * library then stays loaded for the life of the process). */
const pp_cupti_api *pp_cupti_lib(void);
/* "call: CUPTI_ERROR_NAME (message)" into why. */
void pp_cupti_why(char *why, size_t len, const char *call, CUptiResult rc);

/* ---- spans (cupti.c) and their timeline (cupti_timeline.c) ------------------ */
#define SPAN_BITS 8
#define SPAN_SLOTS (1u << SPAN_BITS) /* spans waiting at once              */
#define SPAN_LAUNCHES PP_CUPTI_SPAN_LAUNCHES

enum { SPAN_FREE = 0, SPAN_OPEN, SPAN_CLOSED };

/* A window's launches and what CUPTI brought for them; cupti.c's table
 * holds SPAN_SLOTS of them, under its tab_lock. */
typedef struct {
  uint64_t id;         /* (sequence << SPAN_BITS) | slot; 0 when free       */
  int state;           /* SPAN_*                                            */
  int mode;            /* PP_CUPTI_RELEASE, _TO_DISPATCH or _KEEP           */
  int has_record;      /* its record waits here for the timeline             */
  int keep_window;     /* the record's device_window_ns was given by emit    */
  uint64_t nlaunch, received, untimed, sum, first_start, last_end;
  uint64_t open_ns, close_ns, closed_at;
  int forced;          /* a forced flush was made for it                     */
  /* per launch call: its entry and return (0: not seen) on the host, its
   * kernel's start and end on the device (0: untimed) */
  uint64_t launch[SPAN_LAUNCHES], ret[SPAN_LAUNCHES];
  uint64_t start[SPAN_LAUNCHES], end[SPAN_LAUNCHES];
  pp_record rec;
} pp_cupti_span;

/* The span's timeline: its kernels, window and idle time split. */
void pp_cupti_timeline_of(const pp_cupti_span *s, pp_cupti_timeline *t);
/* The fields of a timeline that a record carries. */
void pp_cupti_device_timeline(const pp_cupti_timeline *t,
                              pp_device_timeline *d);
/* Completes a dispatch's record from its span's timeline. */
void pp_cupti_fill_record(pp_record *r, const pp_cupti_timeline *t,
                          int keep_window);

/* The correlation and span tables, allocated at the first start. */
int pp_cupti_tables_init(char *why, size_t whylen);
/* CUPTI's activity buffers (cuptiActivityRegisterCallbacks) and its driver
 * launch callback (cuptiSubscribe): what they bring is filed in the spans. */
void CUPTIAPI pp_cupti_buffer_requested(uint8_t **buffer, size_t *size,
                                        size_t *max_records);
void CUPTIAPI pp_cupti_buffer_completed(CUcontext ctx, uint32_t stream,
                                        uint8_t *buffer, size_t size,
                                        size_t valid);
void CUPTIAPI pp_cupti_on_launch(void *ud, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void *data);
/* The probe's hooks (pp_set_device_hooks): a dispatch's record waits in its
 * span for the timeline. */
const pp_device_hooks *pp_cupti_device_hooks(void);
/* Spans not free (waiting for kernels, or for someone to read them), and
 * in *crowded whether three quarters of the slots are taken: the flusher
 * flushes then even inside a timed window, or the next windows would get
 * none. */
uint64_t pp_cupti_waiting(int *crowded);
/* The flusher's round: a flush of CUPTI's buffers, then the sweep that
 * gives up on spans waiting too long. */
void pp_cupti_flush_round(void);

/* ---- collection (cupti_collect.c) ------------------------------------------- */
/* pp_cupti_start calls not yet stopped. */
unsigned pp_cupti_starts(void);
/* Wakes the flusher for a round now (one system call when it sleeps): a
 * span's start makes it when the slots run short, once per crossing. */
void pp_cupti_wake_flusher(void);

/* t - origin, 0 when t is earlier. */
static inline uint64_t pp_cupti_since(uint64_t t, uint64_t origin) {
  return t > origin ? t - origin : 0;
}

#endif /* PP_HAVE_CUPTI_H && PP_HAVE_CUDA_H */
#endif
