/*
 * fakecupti.c: a scripted stand-in for libcupti, for the non-GPU specs.
 *
 * Built as build/libfakecupti.so and selected with PHASEPROBE_LIBCUPTI. It
 * exports the CUPTI entry points csrc/cuda/cupti.c resolves and imitates the
 * activity API's buffer protocol; "launches" are made by the test through
 * fakecupti_launch(), which writes what CUPTI would: an external correlation
 * record per external kind with an id pushed (its innermost id, when that
 * activity kind is enabled) and a kernel record with the same correlation
 * id. It drives the matching logic of csrc/cuda/cupti.c in
 * CI and is never evidence that CUPTI works on a GPU.
 *
 * Imitated behaviour: a plain flush withholds everything while any record is
 * incomplete; a forced flush delivers all, an incomplete kernel with end 0.
 * Environment: FAKECUPTI_FAIL_ENABLE=1 makes cuptiActivityEnable fail with
 * CUPTI_ERROR_NOT_INITIALIZED.
 */
#include <cupti.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define MAX_PENDING 65536

typedef struct {
  int kernel;   /* 1: kernel record, 0: external correlation */
  int complete;
  CUpti_ActivityKernel10 k;
  CUpti_ActivityExternalCorrelation x;
} pending;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc req_fn;
static CUpti_BuffersCallbackCompleteFunc done_fn;
static int kernel_on, ext_on;
static uint32_t next_corr = 1;
static uint64_t clock_ns = 1000000;
static pending *queue;
static size_t nqueue;

static __thread struct {
  CUpti_ExternalCorrelationKind kind;
  uint64_t id;
} stack[32];
static __thread int depth;

FAKE_EXPORT CUptiResult cuptiGetVersion(uint32_t *v) {
  *v = 130001;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s) {
  *s = r == CUPTI_SUCCESS ? "CUPTI_SUCCESS"
       : r == CUPTI_ERROR_NOT_INITIALIZED ? "CUPTI_ERROR_NOT_INITIALIZED"
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

FAKE_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) {
  const char *f = getenv("FAKECUPTI_FAIL_ENABLE");
  if (f && *f == '1')
    return CUPTI_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&lock);
  if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
    kernel_on = 1;
  if (k == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)
    ext_on = 1;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind k) {
  pthread_mutex_lock(&lock);
  if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
    kernel_on = 0;
  if (k == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)
    ext_on = 0;
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

FAKE_EXPORT CUptiResult
cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind k,
                                       uint64_t id) {
  if (depth == 32)
    return CUPTI_ERROR_UNKNOWN;
  stack[depth].kind = k;
  stack[depth].id = id;
  depth++;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult
cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind k,
                                      uint64_t *last) {
  for (int i = depth - 1; i >= 0; i--)
    if (stack[i].kind == k) {
      if (last)
        *last = stack[i].id;
      memmove(&stack[i], &stack[i + 1], (size_t)(depth - i - 1) * sizeof stack[0]);
      depth--;
      return CUPTI_SUCCESS;
    }
  return CUPTI_ERROR_QUEUE_EMPTY;
}

static size_t rec_size(const CUpti_Activity *r) {
  return r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION
             ? sizeof(CUpti_ActivityExternalCorrelation)
             : sizeof(CUpti_ActivityKernel10);
}

FAKE_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid,
                                                   CUpti_Activity **rec) {
  uint8_t *p = *rec ? (uint8_t *)*rec + rec_size(*rec) : buf;
  if (p >= buf + valid)
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = (CUpti_Activity *)p;
  return CUPTI_SUCCESS;
}

/* Writes the queue (or nothing, see above) into buffers from the client. */
FAKE_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  pthread_mutex_lock(&lock);
  int forced = flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED;
  for (size_t i = 0; i < nqueue && !forced; i++)
    if (!queue[i].complete) {
      pthread_mutex_unlock(&lock);
      return CUPTI_SUCCESS;
    }
  size_t i = 0;
  while (i < nqueue) {
    uint8_t *buf = NULL;
    size_t size = 0, maxr = 0;
    req_fn(&buf, &size, &maxr);
    if (!buf)
      break;
    size_t used = 0;
    for (; i < nqueue; i++) {
      pending *q = &queue[i];
      size_t n = q->kernel ? sizeof q->k : sizeof q->x;
      if (used + n > size)
        break;
      if (q->kernel && !q->complete)
        q->k.end = 0;
      memcpy(buf + used, q->kernel ? (void *)&q->k : (void *)&q->x, n);
      used += n;
    }
    done_fn(NULL, 0, buf, size, used);
  }
  memmove(queue, queue + i, (nqueue - i) * sizeof *queue);
  nqueue -= i;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

static void put(const pending *p) {
  if (!queue)
    queue = calloc(MAX_PENDING, sizeof *queue);
  if (queue && nqueue < MAX_PENDING)
    queue[nqueue++] = *p;
}

/* ---- the test's side --------------------------------------------------------- */
/* One launch on this thread of a kernel lasting dur_ns. kernel_first: the
 * kernel record is queued before the correlation record. complete: 0 for a
 * record that stays incomplete until a forced flush. Returns the
 * correlation id. */
FAKE_EXPORT uint32_t fakecupti_launch(uint64_t dur_ns, int kernel_first,
                                      int complete) {
  pthread_mutex_lock(&lock);
  uint32_t corr = next_corr++;
  pending k = {.kernel = 1, .complete = complete};
  k.k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.k.correlationId = corr;
  k.k.start = clock_ns;
  k.k.end = clock_ns + dur_ns;
  clock_ns += dur_ns + 1000;
  if (kernel_first && kernel_on)
    put(&k);
  /* one record per kind that has an id pushed, with its innermost id */
  for (int i = depth - 1; ext_on && i >= 0; i--) {
    int inner = 1;
    for (int j = i + 1; j < depth; j++)
      inner &= stack[j].kind != stack[i].kind;
    if (!inner)
      continue;
    pending x = {.kernel = 0, .complete = 1};
    x.x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x.x.externalKind = stack[i].kind;
    x.x.externalId = stack[i].id;
    x.x.correlationId = corr;
    put(&x);
  }
  if (!kernel_first && kernel_on)
    put(&k);
  pthread_mutex_unlock(&lock);
  return corr;
}

/* Marks every queued record complete. */
FAKE_EXPORT void fakecupti_complete_all(void) {
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < nqueue; i++)
    queue[i].complete = 1;
  pthread_mutex_unlock(&lock);
}
