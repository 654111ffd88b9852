/*
 * fakecupti.c: a scripted stand-in for libcupti, for the non-GPU specs.
 *
 * Built as build/libfakecupti.so and selected with PHASEPROBE_LIBCUPTI. It
 * exports the CUPTI entry points the CUPTI source (csrc/cuda/cupti*.c)
 * resolves and imitates the parts of CUPTI it relies on: the launch
 * callback of the callback API (called on the launching thread, with a
 * correlation id), the activity API's buffer protocol, and the timestamp
 * callback (kernel times are read from it, as CUPTI converts device times
 * with it). "Launches" are made by the test through fakecupti_launch(). It
 * drives the logic of csrc/cuda/cupti*.c in CI and is never evidence that
 * CUPTI works on a GPU.
 *
 * Imitated behaviour: a plain flush withholds everything while any record is
 * incomplete; a forced flush delivers all, an incomplete kernel with end 0.
 * Environment: FAKECUPTI_FAIL_ENABLE=1 makes cuptiActivityEnable fail with
 * CUPTI_ERROR_NOT_INITIALIZED; FAKECUPTI_FAIL_SUBSCRIBE=1 makes
 * cuptiSubscribe fail as it does when another client holds the callbacks.
 */
#include <cupti.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define MAX_PENDING 65536

typedef struct {
  int complete;
  CUpti_ActivityKernel10 k;
} pending;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc req_fn;
static CUpti_BuffersCallbackCompleteFunc done_fn;
static CUpti_TimestampCallbackFunc ts_fn;
static CUpti_CallbackFunc api_fn;
static void *api_ud;
static int kernel_on, launch_cb_on;
static uint32_t next_corr = 1;
static pending *queue;
static size_t nqueue;
static int subscribers;

static int env_is(const char *name) {
  const char *v = getenv(name);
  return v && *v == '1';
}

FAKE_EXPORT CUptiResult cuptiGetVersion(uint32_t *v) {
  *v = 130001;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s) {
  *s = r == CUPTI_SUCCESS                 ? "CUPTI_SUCCESS"
       : r == CUPTI_ERROR_NOT_INITIALIZED ? "CUPTI_ERROR_NOT_INITIALIZED"
       : r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
           ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
           : "CUPTI_ERROR_UNKNOWN";
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
                               CUpti_BuffersCallbackCompleteFunc d) {
  req_fn = r;
  done_fn = d;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) {
  if (!f)
    return CUPTI_ERROR_INVALID_PARAMETER;
  ts_fn = f;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *h,
                                       CUpti_CallbackFunc f, void *ud) {
  if (env_is("FAKECUPTI_FAIL_SUBSCRIBE") || subscribers)
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  subscribers = 1;
  api_fn = f;
  api_ud = ud;
  *h = (CUpti_SubscriberHandle)&api_fn;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle h) {
  (void)h;
  subscribers = 0;
  api_fn = NULL;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiEnableCallback(uint32_t on,
                                            CUpti_SubscriberHandle h,
                                            CUpti_CallbackDomain d,
                                            CUpti_CallbackId id) {
  (void)h;
  if (d == CUPTI_CB_DOMAIN_DRIVER_API &&
      id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
    launch_cb_on = on != 0;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) {
  if (env_is("FAKECUPTI_FAIL_ENABLE"))
    return CUPTI_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&lock);
  if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
    kernel_on = 1;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind k) {
  pthread_mutex_lock(&lock);
  if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
    kernel_on = 0;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c,
                                                          uint32_t s,
                                                          size_t *n) {
  (void)c;
  (void)s;
  *n = 0;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid,
                                                   CUpti_Activity **rec) {
  uint8_t *p = *rec ? (uint8_t *)*rec + sizeof(CUpti_ActivityKernel10) : buf;
  if (p >= buf + valid)
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = (CUpti_Activity *)p;
  return CUPTI_SUCCESS;
}

/* Writes the queue (or nothing, see above) into buffers from the client.
 * The client's completion callback runs without this library's lock, as
 * CUPTI's does (it may call back in, or launch). */
FAKE_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  int forced = flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED;
  for (;;) {
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nqueue && !forced; i++)
      if (!queue[i].complete) {
        pthread_mutex_unlock(&lock);
        return CUPTI_SUCCESS;
      }
    if (!nqueue) {
      pthread_mutex_unlock(&lock);
      return CUPTI_SUCCESS;
    }
    uint8_t *buf = NULL;
    size_t size = 0, maxr = 0;
    req_fn(&buf, &size, &maxr);
    if (!buf) {
      pthread_mutex_unlock(&lock);
      return CUPTI_SUCCESS;
    }
    size_t used = 0, i = 0;
    for (; i < nqueue; i++) {
      pending *q = &queue[i];
      if (used + sizeof q->k > size)
        break;
      if (!q->complete)
        q->k.end = 0;
      memcpy(buf + used, &q->k, sizeof q->k);
      used += sizeof q->k;
    }
    memmove(queue, queue + i, (nqueue - i) * sizeof *queue);
    nqueue -= i;
    pthread_mutex_unlock(&lock);
    done_fn(NULL, 0, buf, size, used);
  }
}

/* ---- the test's side --------------------------------------------------------- */
static void queue_kernel(uint32_t corr, uint64_t start, uint64_t end,
                         int complete);

static void launch_callback(CUpti_CallbackFunc fn, CUpti_ApiCallbackSite site,
                            uint32_t corr) {
  if (!fn)
    return;
  CUpti_CallbackData cb;
  memset(&cb, 0, sizeof cb);
  cb.callbackSite = site;
  cb.functionName = "cuLaunchKernel";
  cb.correlationId = corr;
  fn(api_ud, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
     &cb);
}

/* One launch on this thread: the launch callback runs (entry), a kernel
 * record is queued that starts latency_ns after the launch and lasts dur_ns
 * (times from the registered timestamp callback), and the call returns
 * (the callback's exit) return_ns after the launch, as a real call that
 * is slow after an idle returns after its kernel ended. complete: 0 for a
 * record that stays incomplete until a forced flush; -1 for a launch whose
 * kernel record never comes. Returns the correlation id. */
FAKE_EXPORT uint32_t fakecupti_launch_returning(uint64_t dur_ns,
                                                uint64_t latency_ns,
                                                int complete,
                                                uint64_t return_ns) {
  pthread_mutex_lock(&lock);
  uint32_t corr = next_corr++;
  CUpti_CallbackFunc fn = launch_cb_on ? api_fn : NULL;
  int on = kernel_on;
  pthread_mutex_unlock(&lock);
  launch_callback(fn, CUPTI_API_ENTER, corr);
  uint64_t now = ts_fn ? ts_fn() : 0;
  if (on && complete >= 0)
    queue_kernel(corr, now + latency_ns, now + latency_ns + dur_ns, complete);
  while (return_ns && ts_fn && ts_fn() - now < return_ns)
    ;
  launch_callback(fn, CUPTI_API_EXIT, corr);
  return corr;
}

FAKE_EXPORT uint32_t fakecupti_launch(uint64_t dur_ns, uint64_t latency_ns,
                                      int complete) {
  return fakecupti_launch_returning(dur_ns, latency_ns, complete, 0);
}

static void queue_kernel(uint32_t corr, uint64_t start, uint64_t end,
                         int complete) {
  pending k;
  memset(&k, 0, sizeof k);
  k.complete = complete;
  k.k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.k.correlationId = corr;
  k.k.start = start;
  k.k.end = end;
  pthread_mutex_lock(&lock);
  if (!queue)
    queue = calloc(MAX_PENDING, sizeof *queue);
  if (queue && nqueue < MAX_PENDING)
    queue[nqueue++] = k;
  pthread_mutex_unlock(&lock);
}

/* Marks every queued record complete. */
FAKE_EXPORT void fakecupti_complete_all(void) {
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < nqueue; i++)
    queue[i].complete = 1;
  pthread_mutex_unlock(&lock);
}
