/*
 * cupti.c: CUPTI as a kernel-time source (see pp_cupti.h).
 *
 * Built with the CUPTI headers (PP_HAVE_CUPTI_H, which the Makefile sets
 * only beside PP_HAVE_CUDA_H); without them every entry point says why
 * CUPTI is absent. Global state: the loaded library, the start count, and
 * the two matching tables below, all set up once per process.
 *
 * Matching. CUPTI hands us records in buffers, in no promised order across
 * kinds: an external correlation record (our span id -> CUPTI correlation
 * id of one launch call) and a kernel record (correlation id -> start, end).
 * Correlation ids grow by one per traced API call, so a table indexed by the
 * id's low bits (CORR_SLOTS entries) holds whichever half arrived first
 * until its partner comes; a slot reused before that counts as lost. A
 * completed pair adds the kernel's duration to its span's slot (SPAN_SLOTS
 * spans, indexed by the span id's low bits; ids only grow).
 */
#define _GNU_SOURCE /* dlinfo */
#include "pp_internal.h"
#include "pp_cupti.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void why_put(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void why_put(char *why, size_t len, const char *fmt, ...) {
  if (!why || !len)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, len, fmt, ap);
  va_end(ap);
}

#if defined(PP_HAVE_CUPTI_H) && defined(PP_HAVE_CUDA_H)

#include <cupti.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "pp_cuda.h"

/* Oldest CUPTI API version whose kernel record has start, end and
 * correlationId where CUpti_ActivityKernel10 has them (CUDA 11.0, v13; the
 * prefix has not moved since CUpti_ActivityKernel4). */
#define PP_CUPTI_MIN_VERSION 13u
#define PP_CUPTI_EXT_KIND CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1
#define CORR_SLOTS (1u << 16)
#define SPAN_SLOTS 1024u
#define BUF_BYTES ((size_t)1 << 20)
#define BUF_KEEP 8

/* ---- the library ---------------------------------------------------------- */
/* X(field, "symbol", (parameter list), required); every entry returns
 * CUptiResult. */
#define PP_CUPTI_ENTRIES(X)                                                    \
  X(GetVersion, "cuptiGetVersion", (uint32_t *), 1)                            \
  X(GetResultString, "cuptiGetResultString", (CUptiResult, const char **), 1)  \
  X(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks",               \
    (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc), 1)  \
  X(ActivityEnable, "cuptiActivityEnable", (CUpti_ActivityKind), 1)            \
  X(ActivityDisable, "cuptiActivityDisable", (CUpti_ActivityKind), 1)          \
  X(ActivityFlushAll, "cuptiActivityFlushAll", (uint32_t), 1)                  \
  X(ActivityGetNextRecord, "cuptiActivityGetNextRecord",                       \
    (uint8_t *, size_t, CUpti_Activity **), 1)                                 \
  X(ActivityPushExternalCorrelationId,                                         \
    "cuptiActivityPushExternalCorrelationId",                                  \
    (CUpti_ExternalCorrelationKind, uint64_t), 1)                              \
  X(ActivityPopExternalCorrelationId, "cuptiActivityPopExternalCorrelationId", \
    (CUpti_ExternalCorrelationKind, uint64_t *), 1)                            \
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

static pp_cupti_api api;
static int api_ok;
static char api_why[512];
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void *open_lib(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return NULL;
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name)
    snprintf(api.path, sizeof api.path, "%s", lm->l_name);
  else
    snprintf(api.path, sizeof api.path, "%s", path);
  return h;
}

/* Tries the places listed in pp_cupti.h; the reason names them all. */
static void *find_lib(void) {
  const char *forced = getenv("PHASEPROBE_LIBCUPTI");
  if (forced && *forced) {
    void *h = open_lib(forced);
    if (!h)
      snprintf(api_why, sizeof api_why,
               "PHASEPROBE_LIBCUPTI=%s could not be loaded: %s", forced,
               dlerror());
    return h;
  }
  const char *home = getenv("CUDA_HOME");
  if (!home || !*home)
    home = "/usr/local/cuda";
  static const char *const rel[] = {
      "extras/CUPTI/lib64/libcupti.so", "extras/CUPTI/lib64/libcupti.so.13",
      "lib64/libcupti.so", "lib64/libcupti.so.13"};
  char path[512];
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", home, rel[i]);
    void *h = open_lib(path);
    if (h)
      return h;
  }
  static const char *const plain[] = {"libcupti.so.13", "libcupti.so"};
  for (size_t i = 0; i < 2; i++) {
    void *h = open_lib(plain[i]);
    if (h)
      return h;
  }
  snprintf(api_why, sizeof api_why,
           "libcupti not found (tried $PHASEPROBE_LIBCUPTI, "
           "%s/extras/CUPTI/lib64, %s/lib64, libcupti.so.13, libcupti.so): "
           "%s; set PHASEPROBE_LIBCUPTI=<path to libcupti.so>",
           home, home, dlerror());
  return NULL;
}

static int resolve_all(void *h) {
  void *p;
#define PP_CUPTI_RESOLVE_(field, sym, args, req)                               \
  p = dlsym(h, sym);                                                           \
  if (!p && req) {                                                             \
    snprintf(api_why, sizeof api_why, "%s lacks %s: too old a CUPTI",          \
             api.path, sym);                                                   \
    return -1;                                                                 \
  }                                                                            \
  api.field = (pp_cupti_##field##_fn)p;
  PP_CUPTI_ENTRIES(PP_CUPTI_RESOLVE_)
#undef PP_CUPTI_RESOLVE_
  return 0;
}

static void load_once(void) {
  void *h = find_lib();
  if (!h)
    return;
  if (resolve_all(h) != 0) {
    dlclose(h);
    return;
  }
  uint32_t v = 0;
  if (api.GetVersion(&v) != CUPTI_SUCCESS || v < PP_CUPTI_MIN_VERSION) {
    snprintf(api_why, sizeof api_why,
             "%s reports CUPTI API version %u; phaseprobe reads kernel "
             "records of version %u (CUDA 11.0) or newer",
             api.path, v, PP_CUPTI_MIN_VERSION);
    dlclose(h);
    return;
  }
  api.version = v;
  api_ok = 1; /* the library stays loaded for the life of the process */
}

PP_EXPORT int pp_cupti_load(char *why, size_t whylen) {
  pthread_once(&api_once, load_once);
  if (api_ok)
    return 0;
  why_put(why, whylen, "%s", api_why);
  return -1;
}

PP_EXPORT const char *pp_cupti_path(void) { return api_ok ? api.path : ""; }
PP_EXPORT uint32_t pp_cupti_version(void) { return api_ok ? api.version : 0; }

/* "call: CUPTI_ERROR_NAME (message)" */
static void cupti_why(char *why, size_t len, const char *call,
                      CUptiResult rc) {
  const char *name = NULL, *msg = NULL;
  if (api.GetResultString(rc, &name) != CUPTI_SUCCESS || !name)
    name = "CUPTI_ERROR_UNKNOWN";
  if (api.GetErrorMessage && api.GetErrorMessage(rc, &msg) != CUPTI_SUCCESS)
    msg = NULL;
  if (msg && *msg && strcmp(msg, name) != 0)
    why_put(why, len, "%s: %s (%d, %s)", call, name, (int)rc, msg);
  else
    why_put(why, len, "%s: %s (%d)", call, name, (int)rc);
}

PP_EXPORT int pp_cupti_available(char *why, size_t whylen) {
  if (pp_cupti_load(why, whylen) != 0)
    return 0;
  char cwhy[384];
  if (!pp_cuda_load(cwhy, sizeof cwhy)) {
    why_put(why, whylen, "CUPTI (%s) needs the CUDA driver: %s", api.path,
            cwhy);
    return 0;
  }
  return 1;
}

/* ---- matching tables ------------------------------------------------------- */
typedef struct {
  uint32_t corr;
  uint8_t has_ext, has_kernel;
  uint64_t ext, start, end;
} corr_slot;

typedef struct {
  uint64_t id, kernels, untimed, sum, first, last;
  uint64_t corrs; /* launch calls correlated to the span so far */
} span_slot;

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static corr_slot *corr_tab;       /* CORR_SLOTS, allocated on first start */
static span_slot span_tab[SPAN_SLOTS];
static pp_cupti_stats stats;      /* under tab_lock (starts: ctl_lock)     */
static uint8_t *buf_free[BUF_KEEP];
static size_t nbuf_free;

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned starts;
static int registered;
static int active_flag;
static uint64_t next_span = 1;

/* Adds one kernel to its span (tab_lock held). */
static void attribute(uint64_t ext, uint64_t start, uint64_t end) {
  span_slot *s = &span_tab[ext & (SPAN_SLOTS - 1)];
  if (s->id != ext) {
    if (s->id > ext) { /* the span's slot went to a newer span */
      stats.lost++;
      return;
    }
    memset(s, 0, sizeof *s);
    s->id = ext;
  }
  stats.matched++;
  s->kernels++;
  if (start == 0 || end <= start) { /* no timestamps, or an incomplete one */
    s->untimed++;
    return;
  }
  s->sum = pp_sat_add(s->sum, end - start);
  if (!s->first || start < s->first)
    s->first = start;
  if (end > s->last)
    s->last = end;
}

static void on_kernel(uint32_t corr, uint64_t start, uint64_t end) {
  corr_slot *c = &corr_tab[corr & (CORR_SLOTS - 1)];
  stats.kernels++;
  if (c->corr == corr && c->has_ext) {
    attribute(c->ext, start, end);
    memset(c, 0, sizeof *c);
    return;
  }
  if (c->has_ext) /* a launch of a span whose kernel never came */
    stats.lost++;
  c->corr = corr;
  c->has_ext = 0;
  c->has_kernel = 1;
  c->start = start;
  c->end = end;
}

static void on_correlation(uint32_t corr, uint64_t ext) {
  corr_slot *c = &corr_tab[corr & (CORR_SLOTS - 1)];
  span_slot *s = &span_tab[ext & (SPAN_SLOTS - 1)];
  if (s->id == ext)
    s->corrs++;
  stats.correlations++;
  if (c->corr == corr && c->has_kernel) {
    attribute(ext, c->start, c->end);
    memset(c, 0, sizeof *c);
    return;
  }
  if (c->has_ext)
    stats.lost++;
  c->corr = corr;
  c->has_kernel = 0;
  c->has_ext = 1;
  c->ext = ext;
}

static void take_record(const CUpti_Activity *r) {
  stats.records++;
  switch (r->kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
    on_kernel(k->correlationId, k->start, k->end);
    break;
  }
  case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
    const CUpti_ActivityExternalCorrelation *x =
        (const CUpti_ActivityExternalCorrelation *)r;
    if (x->externalKind == PP_CUPTI_EXT_KIND)
      on_correlation(x->correlationId, x->externalId);
    break;
  }
  default:
    break;
  }
}

/* ---- buffer callbacks (any thread) ---------------------------------------- */
static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
                                      size_t *max_records) {
  uint8_t *b = NULL;
  pthread_mutex_lock(&tab_lock);
  if (nbuf_free)
    b = buf_free[--nbuf_free];
  pthread_mutex_unlock(&tab_lock);
  if (!b)
    b = aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, BUF_BYTES);
  *buffer = b;
  *size = b ? BUF_BYTES : 0;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
                                      uint8_t *buffer, size_t size,
                                      size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  if (!buffer)
    return;
  size_t dropped = 0;
  if (api.ActivityGetNumDroppedRecords &&
      api.ActivityGetNumDroppedRecords(NULL, 0, &dropped) != CUPTI_SUCCESS)
    dropped = 0;
  pthread_mutex_lock(&tab_lock);
  stats.buffers++;
  stats.buffer_bytes += valid;
  stats.dropped += dropped;
  CUpti_Activity *r = NULL;
  while (valid && corr_tab &&
         api.ActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS)
    take_record(r);
  if (nbuf_free < BUF_KEEP) {
    buf_free[nbuf_free++] = buffer;
    buffer = NULL;
  }
  pthread_mutex_unlock(&tab_lock);
  free(buffer);
}

/* ---- start / stop ---------------------------------------------------------- */
/* Driver-API records are enabled because CUPTI emits the external
 * correlation records that tie kernels to our spans only alongside them.
 * Selecting just the launch calls (cuptiActivityEnableDriverApi) was tried:
 * on driver 580 with CUPTI 13.0 it gave kernel records but no external
 * correlation records, so no launch could be matched. */
static void disable_all(int kernel, int ext, int launches) {
  if (launches)
    api.ActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
  if (ext)
    api.ActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  if (kernel)
    api.ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

static int first_start(char *why, size_t whylen) {
  if (!corr_tab) {
    corr_slot *t = calloc(CORR_SLOTS, sizeof *t);
    if (!t) {
      why_put(why, whylen, "CUPTI: out of host memory for the match table");
      return -1;
    }
    pthread_mutex_lock(&tab_lock);
    corr_tab = t;
    pthread_mutex_unlock(&tab_lock);
  }
  CUptiResult rc;
  if (!registered) {
    rc = api.ActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (rc != CUPTI_SUCCESS) {
      cupti_why(why, whylen, "cuptiActivityRegisterCallbacks", rc);
      return -1;
    }
    registered = 1;
  }
  rc = api.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (rc != CUPTI_SUCCESS) {
    cupti_why(why, whylen,
              "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)", rc);
    return -1;
  }
  rc = api.ActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  if (rc != CUPTI_SUCCESS) {
    cupti_why(why, whylen,
              "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)",
              rc);
    disable_all(1, 0, 0);
    return -1;
  }
  rc = api.ActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
  if (rc != CUPTI_SUCCESS) {
    cupti_why(why, whylen, "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER)", rc);
    disable_all(1, 1, 0);
    return -1;
  }
  return 0;
}

PP_EXPORT int pp_cupti_start(char *why, size_t whylen) {
  if (pp_cupti_load(why, whylen) != 0)
    return -1;
  pthread_mutex_lock(&ctl_lock);
  int rc = 0;
  if (starts == 0)
    rc = first_start(why, whylen);
  if (rc == 0) {
    starts++;
    __atomic_store_n(&active_flag, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&ctl_lock);
  return rc;
}

PP_EXPORT void pp_cupti_stop(void) {
  pthread_mutex_lock(&ctl_lock);
  if (starts > 0 && --starts == 0) {
    __atomic_store_n(&active_flag, 0, __ATOMIC_RELEASE);
    disable_all(1, 1, 1);
    api.ActivityFlushAll(0);
  }
  pthread_mutex_unlock(&ctl_lock);
}

PP_EXPORT int pp_cupti_active(void) {
  return __atomic_load_n(&active_flag, __ATOMIC_ACQUIRE);
}

/* On unload: collection still on is stopped (CUPTI must not call back
 * into unmapped code), then the match table and the kept buffers go with
 * the library instead of staying behind, unreachable. */
__attribute__((destructor)) static void cupti_fini(void) {
  pthread_mutex_lock(&ctl_lock);
  if (starts > 0) {
    starts = 0;
    __atomic_store_n(&active_flag, 0, __ATOMIC_RELEASE);
    disable_all(1, 1, 1);
    api.ActivityFlushAll(0);
  }
  pthread_mutex_lock(&tab_lock);
  free(corr_tab);
  corr_tab = NULL;
  while (nbuf_free > 0)
    free(buf_free[--nbuf_free]);
  pthread_mutex_unlock(&tab_lock);
  pthread_mutex_unlock(&ctl_lock);
}

/* ---- spans ----------------------------------------------------------------- */
PP_EXPORT uint64_t pp_cupti_span_begin(void) {
  if (!pp_cupti_active())
    return 0;
  uint64_t id = __atomic_fetch_add(&next_span, 1, __ATOMIC_RELAXED);
  pthread_mutex_lock(&tab_lock);
  span_slot *s = &span_tab[id & (SPAN_SLOTS - 1)];
  memset(s, 0, sizeof *s);
  s->id = id;
  stats.spans++;
  pthread_mutex_unlock(&tab_lock);
  if (api.ActivityPushExternalCorrelationId(PP_CUPTI_EXT_KIND, id) !=
      CUPTI_SUCCESS)
    return 0;
  return id;
}

PP_EXPORT int pp_cupti_span_end(uint64_t id) {
  if (!id || !api_ok)
    return -1;
  uint64_t last = 0;
  if (api.ActivityPopExternalCorrelationId(PP_CUPTI_EXT_KIND, &last) !=
      CUPTI_SUCCESS)
    return -1;
  if (last != id) { /* not the innermost: put it back */
    api.ActivityPushExternalCorrelationId(PP_CUPTI_EXT_KIND, last);
    return -1;
  }
  return 0;
}

/* ---- collection ------------------------------------------------------------ */
static void read_span(uint64_t id, pp_cupti_result *out) {
  pthread_mutex_lock(&tab_lock);
  const span_slot *s = &span_tab[id & (SPAN_SLOTS - 1)];
  if (s->id == id) {
    out->kernels = s->kernels;
    out->untimed = s->untimed;
    out->sum_ns = s->sum;
    out->first_start_ns = s->first;
    out->last_end_ns = s->last;
    out->correlations = s->corrs;
  }
  pthread_mutex_unlock(&tab_lock);
}

static CUptiResult flush(pp_cupti_result *out, uint32_t flag) {
  pp_ticks t0 = pp_now_inline();
  CUptiResult rc = api.ActivityFlushAll(flag);
  out->flush_ns = pp_sat_add(out->flush_ns,
                             pp_ticks_delta_ns(t0, pp_now_inline()));
  out->flushes++;
  return rc;
}

static void forced_flush_note(void) {
  pthread_mutex_lock(&tab_lock);
  stats.forced_flushes++;
  pthread_mutex_unlock(&tab_lock);
}

static void pause_us(unsigned us) {
  struct timespec ts = {0, (long)us * 1000L};
  nanosleep(&ts, NULL);
}

PP_EXPORT int pp_cupti_collect(uint64_t id, uint64_t expected,
                               uint64_t timeout_ns, pp_cupti_result *out,
                               char *why, size_t whylen) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&tab_lock);
  stats.collects++;
  pthread_mutex_unlock(&tab_lock);
  if (!pp_cupti_active()) {
    why_put(why, whylen, "CUPTI collection is off (pp_cupti_start first)");
    return -1;
  }
  if (!id) {
    why_put(why, whylen, "no CUPTI span (span id 0)");
    return -1;
  }
  if (!timeout_ns)
    timeout_ns = 200000000u;
  pp_ticks t0 = pp_now_inline();
  for (unsigned tries = 0;; tries++) {
    /* A plain flush withholds a buffer that holds any incomplete record
     * (someone else's running kernel, say); after about 200 us of trying,
     * one forced flush takes it anyway. */
    uint32_t flag = tries == 10 ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0;
    CUptiResult rc = flush(out, flag);
    if (rc != CUPTI_SUCCESS) {
      cupti_why(why, whylen, "cuptiActivityFlushAll", rc);
      return -1;
    }
    if (flag)
      forced_flush_note();
    read_span(id, out);
    if (out->kernels >= expected)
      return 0;
    if (flag && out->correlations == 0) {
      /* Correlation records are complete when written: after a forced
       * flush, none means none will come; waiting longer would not help. */
      why_put(why, whylen,
              "CUPTI correlated no launch to span %llu (no external "
              "correlation records after a forced flush; another CUPTI "
              "client, or launches not made on this thread?)",
              (unsigned long long)id);
      return 1;
    }
    if (pp_ticks_delta_ns(t0, pp_now_inline()) >= timeout_ns)
      break;
    pause_us(tries < 10 ? 20 : 200);
  }
  why_put(why, whylen,
          "CUPTI delivered %llu of %llu kernel records for span %llu within "
          "%llu ms",
          (unsigned long long)out->kernels, (unsigned long long)expected,
          (unsigned long long)id, (unsigned long long)(timeout_ns / 1000000));
  return 1;
}

PP_EXPORT void pp_cupti_stats_get(pp_cupti_stats *out) {
  pthread_mutex_lock(&tab_lock);
  *out = stats;
  pthread_mutex_unlock(&tab_lock);
  pthread_mutex_lock(&ctl_lock);
  out->starts = starts;
  pthread_mutex_unlock(&ctl_lock);
}

#else /* no CUPTI headers at build time */

static const char absent_why[] =
    "phaseprobe was built without the CUPTI headers (cupti.h not found under "
    "$CUDA_HOME/extras/CUPTI/include or $CUDA_HOME/include at build time): "
    "the CUPTI kernel-time source is absent; rebuild with CUDA_HOME=<toolkit>";

PP_EXPORT int pp_cupti_load(char *why, size_t whylen) {
  why_put(why, whylen, "%s", absent_why);
  return -1;
}
PP_EXPORT int pp_cupti_available(char *why, size_t whylen) {
  why_put(why, whylen, "%s", absent_why);
  return 0;
}
PP_EXPORT const char *pp_cupti_path(void) { return ""; }
PP_EXPORT uint32_t pp_cupti_version(void) { return 0; }
PP_EXPORT int pp_cupti_start(char *why, size_t whylen) {
  why_put(why, whylen, "%s", absent_why);
  return -1;
}
PP_EXPORT void pp_cupti_stop(void) {}
PP_EXPORT int pp_cupti_active(void) { return 0; }
PP_EXPORT uint64_t pp_cupti_span_begin(void) { return 0; }
PP_EXPORT int pp_cupti_span_end(uint64_t id) {
  (void)id;
  return -1;
}
PP_EXPORT int pp_cupti_collect(uint64_t id, uint64_t expected,
                               uint64_t timeout_ns, pp_cupti_result *out,
                               char *why, size_t whylen) {
  (void)id;
  (void)expected;
  (void)timeout_ns;
  memset(out, 0, sizeof *out);
  why_put(why, whylen, "%s", absent_why);
  return -1;
}
PP_EXPORT void pp_cupti_stats_get(pp_cupti_stats *out) {
  memset(out, 0, sizeof *out);
}

#endif
