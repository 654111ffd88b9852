/*
 * gpu_anatomy.c: measurements that take the device side of a dispatch apart,
 * one segment at a time, on one host time axis. A diagnostic for the GPU
 * machine, not part of the module (it links libcuda and libcupti directly).
 *
 *   make build/gpu_anatomy && build/gpu_anatomy window [reps]
 *   build/gpu_anatomy factors [reps]
 *   build/gpu_anatomy cupti [dispatches]
 *
 * Host axis: CLOCK_MONOTONIC. CUPTI is given the same clock through
 * cuptiActivityRegisterTimestampCallback before any activity kind is enabled,
 * so its kernel start and end are on that axis too.
 *
 * "window": for host gaps S, the shape of the reference's timed window
 *   E0 | host spin S | E1, launch K, E2 | E3     (K: a 200 us globaltimer spin)
 * and three controls: the bare pair (E0 | S | E1), the bare pair followed by
 * a launch (E0 | S | E1, K) and the window without a kernel. Each event
 * interval is compared with the host interval between the calls that
 * recorded its events, the kernel-only pair with CUPTI's kernel duration and
 * with the kernel's own %globaltimer readings, and CUPTI's kernel start with
 * the host launch call (launch latency). Medians over `reps` per S.
 *
 * "factors": the same window shape under one change at a time (the probe
 * clock's spin, a 20 us kernel of 32 threads, a blocking stream, the
 * module's own window code), to find which one the module's larger error
 * comes from; and the kernel-only pair against CUPTI and the kernel's own
 * %globaltimer for kernels of 10 us to 10 ms.
 *
 * "cupti": what each step of CUPTI kernel-time collection costs a tiny
 * dispatch (launch + stream synchronize), modes interleaved in blocks:
 * no CUPTI; the kernel activity kind alone; plus a driver launch callback
 * that notes correlation ids; plus the DRIVER kind and external correlation
 * push/pop (the module's current recipe); plus a plain flush per dispatch;
 * plus a forced flush; and the kernel kind with a background thread that
 * flushes every 10 ms (nothing on the dispatch path). It also reports how
 * long after the stream synchronize a kernel's record reaches the buffer
 * callback, for the per-dispatch plain flush and the background flusher.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pp_cuda.h"

/* Exits with the call, where it stands and the error's name unless the
 * call returns ok (CK: the driver, CP: CUPTI). */
#define CHECK_RC(T, ok, name_of, call, text)                                   \
  do {                                                                         \
    T rc_ = (call);                                                            \
    if (rc_ != (ok)) {                                                         \
      const char *n_ = "?";                                                    \
      name_of(rc_, &n_);                                                       \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, text, n_);        \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)
#define CK(call) CHECK_RC(CUresult, CUDA_SUCCESS, cuGetErrorName, call, #call)
#define CP(call)                                                               \
  CHECK_RC(CUptiResult, CUPTI_SUCCESS, cuptiGetResultString, call, #call)

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static uint64_t CUPTIAPI cupti_clock(void) { return now_ns(); }

static void spin_until(uint64_t t) {
  while (now_ns() < t)
    __builtin_ia32_pause();
}

/* stamp(ns, out): spins `ns` of %globaltimer; out[0], out[1] = first and
 * last reading (when out is not null). */
static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry stamp(.param .u64 p_ns, .param .u64 p_out) {\n"
    "  .reg .u64 %rd<8>;\n  .reg .pred %p<3>;\n"
    "  ld.param.u64 %rd1, [p_ns];\n  ld.param.u64 %rd2, [p_out];\n"
    "  mov.u64 %rd3, %globaltimer;\n"
    "LOOP:\n  mov.u64 %rd4, %globaltimer;\n  sub.u64 %rd5, %rd4, %rd3;\n"
    "  setp.lt.u64 %p1, %rd5, %rd1;\n  @%p1 bra LOOP;\n"
    "  setp.eq.u64 %p2, %rd2, 0;\n  @%p2 bra DONE;\n"
    "  cvta.to.global.u64 %rd6, %rd2;\n"
    "  st.global.u64 [%rd6], %rd3;\n  st.global.u64 [%rd6+8], %rd4;\n"
    "DONE:\n  ret;\n}\n";

static CUfunction fn;
static CUstream stream;
static CUdeviceptr dout;

static void launch(uint64_t ns, int with_out) {
  uint64_t p_ns = ns;
  CUdeviceptr p_out = with_out ? dout : 0;
  void *args[] = {&p_ns, &p_out};
  CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL));
}

static uint64_t ev_ns(CUevent a, CUevent b) {
  float ms = 0;
  CK(cuEventElapsedTime(&ms, a, b));
  return (uint64_t)((double)ms * 1e6 + 0.5);
}

/* ---- CUPTI ------------------------------------------------------------------ */
#define MAXK 65536
typedef struct {
  uint32_t corr;
  uint64_t start, end, delivered;
} krec;
static pthread_mutex_t klock = PTHREAD_MUTEX_INITIALIZER;
static krec kr[MAXK];
static size_t nk;
static uint64_t ext_records;

static void CUPTIAPI buf_req(uint8_t **b, size_t *size, size_t *max) {
  *b = aligned_alloc(8, 1 << 20);
  *size = 1 << 20;
  *max = 0;
}
static void CUPTIAPI buf_done(CUcontext c, uint32_t s, uint8_t *b, size_t size,
                              size_t valid) {
  (void)c, (void)s, (void)size;
  uint64_t t = now_ns();
  CUpti_Activity *r = NULL;
  pthread_mutex_lock(&klock);
  while (valid && cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
      if (nk < MAXK)
        kr[nk++] = (krec){k->correlationId, k->start, k->end, t};
    } else if (r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      ext_records++;
    }
  }
  pthread_mutex_unlock(&klock);
  free(b);
}

static __thread uint32_t last_corr;
static __thread uint64_t last_launch_enter;
static void CUPTIAPI on_api(void *ud, CUpti_CallbackDomain dom,
                           CUpti_CallbackId cbid, const void *data) {
  (void)ud, (void)dom, (void)cbid;
  const CUpti_CallbackData *cb = data;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    last_corr = cb->correlationId;
    last_launch_enter = now_ns();
  }
}

/* Finds the record of correlation id `corr` (0: none yet). */
static int find_kernel(uint32_t corr, krec *out) {
  int found = 0;
  pthread_mutex_lock(&klock);
  for (size_t i = nk; i-- > 0;)
    if (kr[i].corr == corr) {
      *out = kr[i];
      found = 1;
      break;
    }
  pthread_mutex_unlock(&klock);
  return found;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}
static int64_t pct(int64_t *v, size_t n, double p) {
  qsort(v, n, sizeof *v, cmp_i64);
  size_t i = (size_t)(p * (double)(n - 1) + 0.5);
  return v[i];
}

/* ---- window ----------------------------------------------------------------- */
enum { REPS_MAX = 200 };
static void window_mode(int reps) {
  CUpti_SubscriberHandle sub;
  CP(cuptiSubscribe(&sub, on_api, NULL));
  CP(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
                         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  CUevent e[4];
  for (int i = 0; i < 4; i++)
    CK(cuEventCreate(&e[i], CU_EVENT_DEFAULT));
  static const unsigned gaps_us[] = {0, 25, 100, 500, 1000, 2000, 5000, 20000};
  const uint64_t K = 200000;
  printf("# window anatomy: medians (p10..p90) over %d reps, ns; host axis "
         "CLOCK_MONOTONIC\n",
         reps);
  printf("# A: E0 | S | E1, K, E2 | E3   B: E0 | S | E1   C: E0 | S | E1, K   "
         "D: E0 | S | E1, E2 | E3\n");
  printf("%7s | %-26s | %-22s | %-22s | %-22s | %-22s | %-22s | %-20s | "
         "%-20s | %-20s\n",
         "S_us", "A: dw-k-S", "A: E1-E0 - host", "A: E3-E2",
         "A: (E2-E1) - cupti", "A: gt - cupti", "A: latency", "B: E1-E0 - host",
         "C: E1-E0 - host", "D: dw-k-S");
  for (size_t g = 0; g < sizeof gaps_us / sizeof gaps_us[0]; g++) {
    uint64_t S = (uint64_t)gaps_us[g] * 1000;
    int64_t a_err[REPS_MAX], a_01[REPS_MAX], a_23[REPS_MAX], a_kc[REPS_MAX],
        a_gc[REPS_MAX], a_lat[REPS_MAX], b_01[REPS_MAX], c_01[REPS_MAX],
        d_err[REPS_MAX];
    int n = 0;
    for (int r = 0; r < reps + 1; r++) {
      /* A */
      uint64_t h0 = now_ns();
      CK(cuEventRecord(e[0], stream));
      uint64_t h1 = now_ns();
      spin_until(h1 + S);
      uint64_t h2 = now_ns();
      CK(cuEventRecord(e[1], stream));
      launch(K, 1);
      uint32_t corr = last_corr;
      uint64_t hl = last_launch_enter;
      CK(cuEventRecord(e[2], stream));
      CK(cuEventRecord(e[3], stream));
      CK(cuStreamSynchronize(stream));
      uint64_t gt[2];
      CK(cuMemcpyDtoH(gt, dout, sizeof gt));
      uint64_t e01 = ev_ns(e[0], e[1]), e12 = ev_ns(e[1], e[2]),
               e23 = ev_ns(e[2], e[3]), e03 = ev_ns(e[0], e[3]);
      CP(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
      krec k = {0};
      int have = find_kernel(corr, &k);
      /* B */
      uint64_t b0 = now_ns();
      CK(cuEventRecord(e[0], stream));
      spin_until(now_ns() + S);
      uint64_t b2 = now_ns();
      CK(cuEventRecord(e[1], stream));
      CK(cuStreamSynchronize(stream));
      uint64_t be01 = ev_ns(e[0], e[1]);
      /* C */
      uint64_t c0 = now_ns();
      CK(cuEventRecord(e[0], stream));
      spin_until(now_ns() + S);
      uint64_t c2 = now_ns();
      CK(cuEventRecord(e[1], stream));
      launch(20000, 0);
      CK(cuStreamSynchronize(stream));
      uint64_t ce01 = ev_ns(e[0], e[1]);
      /* D */
      CK(cuEventRecord(e[0], stream));
      spin_until(now_ns() + S);
      CK(cuEventRecord(e[1], stream));
      CK(cuEventRecord(e[2], stream));
      CK(cuEventRecord(e[3], stream));
      CK(cuStreamSynchronize(stream));
      int64_t derr = (int64_t)(ev_ns(e[0], e[3]) - ev_ns(e[1], e[2])) - (int64_t)S;
      if (r == 0 || !have)
        continue; /* warm-up */
      a_err[n] = (int64_t)(e03 - e12) - (int64_t)S;
      a_01[n] = (int64_t)e01 - (int64_t)(h2 - h0);
      a_23[n] = (int64_t)e23;
      a_kc[n] = (int64_t)e12 - (int64_t)(k.end - k.start);
      a_gc[n] = (int64_t)(gt[1] - gt[0]) - (int64_t)(k.end - k.start);
      a_lat[n] = (int64_t)k.start - (int64_t)hl;
      b_01[n] = (int64_t)be01 - (int64_t)(b2 - b0);
      c_01[n] = (int64_t)ce01 - (int64_t)(c2 - c0);
      d_err[n] = derr;
      n++;
    }
#define COL(v) pct(v, (size_t)n, .5), pct(v, (size_t)n, .1), pct(v, (size_t)n, .9)
    printf("%7u | %8ld (%7ld..%7ld) | %6ld (%6ld..%6ld) | %6ld (%6ld..%6ld) | "
           "%6ld (%6ld..%6ld) | %6ld (%6ld..%6ld) | %6ld (%6ld..%6ld) | "
           "%6ld (%5ld..%5ld) | %6ld (%5ld..%5ld) | %6ld (%5ld..%5ld)\n",
           gaps_us[g], COL(a_err), COL(a_01), COL(a_23), COL(a_kc), COL(a_gc),
           COL(a_lat), COL(b_01), COL(c_01), COL(d_err));
    fflush(stdout);
  }
  CP(cuptiUnsubscribe(sub));
}

/* ---- cupti -------------------------------------------------------------------- */
enum { M_NONE, M_KERNEL, M_CB, M_DRIVER_EXT, M_CB_FLUSH, M_CB_FORCED, M_CB_BG,
       M_CURRENT, NMODES };
static const char *const mode_name[NMODES] = {
    "no CUPTI", "CONCURRENT_KERNEL", "+ launch callback",
    "kernel + DRIVER + ext push/pop", "+ callback, plain flush each",
    "+ callback, forced flush each", "+ callback, 10 ms background flush",
    "module's collect loop (DRIVER+ext, flush until seen)"};

static volatile int bg_run;
static void *bg_flusher(void *arg) {
  (void)arg;
  while (bg_run) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
    cuptiActivityFlushAll(0);
  }
  return NULL;
}

static CUpti_SubscriberHandle sub;
static int subscribed;
static void set_mode(int m, pthread_t *bg) {
  int kernel = m != M_NONE;
  int cb = m == M_CB || m == M_CB_FLUSH || m == M_CB_FORCED || m == M_CB_BG ||
           m == M_CURRENT;
  int drv = m == M_DRIVER_EXT || m == M_CURRENT;
  if (kernel)
    CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  else
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (drv) {
    CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
  } else {
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  }
  if (cb && !subscribed) {
    CP(cuptiSubscribe(&sub, on_api, NULL));
    CP(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
                           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
    subscribed = 1;
  } else if (!cb && subscribed) {
    CP(cuptiUnsubscribe(sub));
    subscribed = 0;
  }
  if (m == M_CB_BG) {
    bg_run = 1;
    pthread_create(bg, NULL, bg_flusher, NULL);
  }
}
static void end_mode(int m, pthread_t bg) {
  if (m == M_CB_BG) {
    bg_run = 0;
    pthread_join(bg, NULL);
  }
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

static void cupti_mode(int total) {
  enum { BLOCK = 100 };
  int per = total / NMODES / BLOCK * BLOCK;
  if (per < 2 * BLOCK)
    per = 2 * BLOCK;
  size_t cap = (size_t)per;
  int64_t *wall[NMODES], *lat_flush = calloc(cap, 8), *lat_bg = calloc(cap, 8),
                         *tries = calloc(cap, 8);
  uint32_t *bg_corr = calloc(cap, 4);
  uint64_t *bg_sync = calloc(cap, 8);
  int nw[NMODES] = {0}, nlf = 0, nbg = 0, ntries = 0;
  for (int m = 0; m < NMODES; m++)
    wall[m] = calloc(cap, 8);
  /* warm-up */
  for (int i = 0; i < 200; i++) {
    launch(0, 0);
    CK(cuStreamSynchronize(stream));
  }
  uint64_t ext_id = 1;
  for (int round = 0; round < per / BLOCK; round++) {
    for (int k = 0; k < NMODES; k++) {
      int m = round % 2 ? NMODES - 1 - k : k; /* ABC..CBA */
      pthread_t bg = 0;
      set_mode(m, &bg);
      for (int i = 0; i < BLOCK; i++) {
        uint64_t t0 = now_ns();
        if (m == M_DRIVER_EXT || m == M_CURRENT)
          cuptiActivityPushExternalCorrelationId(
              CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, ext_id++);
        launch(0, 0);
        uint32_t corr = last_corr;
        if (m == M_DRIVER_EXT || m == M_CURRENT) {
          uint64_t last;
          cuptiActivityPopExternalCorrelationId(
              CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, &last);
        }
        CK(cuStreamSynchronize(stream));
        uint64_t ts = now_ns();
        krec kk;
        if (m == M_CB_FLUSH) {
          cuptiActivityFlushAll(0);
        } else if (m == M_CB_FORCED) {
          cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        } else if (m == M_CURRENT) {
          int t;
          for (t = 0; t < 60; t++) {
            cuptiActivityFlushAll(t == 10 ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
            if (find_kernel(corr, &kk))
              break;
            struct timespec p = {0, (t < 10 ? 20 : 200) * 1000L};
            nanosleep(&p, NULL);
          }
          if (ntries < (int)cap)
            tries[ntries++] = t;
        }
        uint64_t t1 = now_ns();
        if (nw[m] < (int)cap)
          wall[m][nw[m]++] = (int64_t)(t1 - t0);
        if (m == M_CB_FLUSH && find_kernel(corr, &kk) && nlf < (int)cap)
          lat_flush[nlf++] = (int64_t)(kk.delivered - ts);
        if (m == M_CB_BG && nbg < (int)cap) {
          bg_corr[nbg] = corr;
          bg_sync[nbg++] = ts;
        }
      }
      end_mode(m, bg);
    }
  }
  int nlb = 0;
  for (int i = 0; i < nbg; i++) {
    krec kk;
    if (find_kernel(bg_corr[i], &kk))
      lat_bg[nlb++] = (int64_t)(kk.delivered - bg_sync[i]);
  }
  int64_t base = pct(wall[M_NONE], (size_t)nw[M_NONE], .5);
  printf("# CUPTI collection cost: tiny kernel launch + cuStreamSynchronize, "
         "%d dispatches per mode in blocks of %d, ABC..CBA\n",
         per, BLOCK);
  printf("%-52s %10s %10s %10s %10s\n", "mode", "median ns", "p10", "p90",
         "vs none");
  for (int m = 0; m < NMODES; m++) {
    int64_t med = pct(wall[m], (size_t)nw[m], .5);
    printf("%-52s %10ld %10ld %10ld %+10ld\n", mode_name[m], med,
           pct(wall[m], (size_t)nw[m], .1), pct(wall[m], (size_t)nw[m], .9),
           med - base);
  }
  if (nlf)
    printf("record delivered after sync, plain flush each: median %ld ns, p90 "
           "%ld, max %ld (%d of %d seen right after the flush)\n",
           pct(lat_flush, (size_t)nlf, .5), pct(lat_flush, (size_t)nlf, .9),
           pct(lat_flush, (size_t)nlf, 1), nlf, nw[M_CB_FLUSH]);
  if (nlb)
    printf("record delivered after sync, 10 ms background flush: median %ld "
           "ns, p90 %ld, max %ld (%d of %d delivered)\n",
           pct(lat_bg, (size_t)nlb, .5), pct(lat_bg, (size_t)nlb, .9),
           pct(lat_bg, (size_t)nlb, 1), nlb, nbg);
  if (ntries)
    printf("module's collect loop: flush tries median %ld, p90 %ld, max %ld\n",
           pct(tries, (size_t)ntries, .5), pct(tries, (size_t)ntries, .9),
           pct(tries, (size_t)ntries, 1));
  printf("external correlation records seen: %lu; kernel records: %zu\n",
         (unsigned long)ext_records, nk);
}

/* ---- factors ------------------------------------------------------------------ */
/* Which difference between the raw window above and the module's makes the
 * starvation error: the same window shape under each change alone. */
enum { F_RAW, F_PPSPIN, F_K20, F_BLOCKING, F_MODULE, F_MODULE_LUA_LIKE, NF };
static const char *const f_name[NF] = {
    "raw, mono spin, 200us K, non-blocking", "raw, pp_cuda_spin_ns",
    "raw, 20 us kernel, 32 threads", "raw, blocking stream",
    "module window (pp_cuda_window_*)",
    "module window, pp spin, 20us/32thr, blocking"};

static int64_t one_window(int f, uint64_t S, CUstream sb, CUevent *e,
                          pp_cuda_event_pool *pool) {
  CUstream st = (f == F_BLOCKING || f == F_MODULE_LUA_LIKE) ? sb : stream;
  uint64_t K = (f == F_K20 || f == F_MODULE_LUA_LIKE) ? 20000 : 200000;
  unsigned thr = (f == F_K20 || f == F_MODULE_LUA_LIKE) ? 32 : 1;
  uint64_t p_ns = K;
  CUdeviceptr p_out = dout;
  void *args[] = {&p_ns, &p_out};
  if (f == F_MODULE || f == F_MODULE_LUA_LIKE) {
    pp_cuda_window w;
    if (pp_cuda_window_open(&w, pool, st) != CUDA_SUCCESS)
      exit(3);
    if (f == F_MODULE_LUA_LIKE)
      pp_cuda_spin_ns(S);
    else
      spin_until(now_ns() + S);
    pp_cuda_launch_cfg cfg = {fn, {1, 1, 1}, {thr, 1, 1}, 0, args, 0};
    if (pp_cuda_window_launch_loop(&w, &cfg, 1, NULL) != CUDA_SUCCESS ||
        pp_cuda_window_close(&w) != CUDA_SUCCESS)
      exit(3);
    CK(cuStreamSynchronize(st));
    uint64_t dw, k;
    if (pp_cuda_window_collect(&w, &dw, &k) != CUDA_SUCCESS)
      exit(3);
    return (int64_t)(dw - k) - (int64_t)S;
  }
  CK(cuEventRecord(e[0], st));
  if (f == F_PPSPIN)
    pp_cuda_spin_ns(S);
  else
    spin_until(now_ns() + S);
  CK(cuEventRecord(e[1], st));
  CK(cuLaunchKernel(fn, 1, 1, 1, thr, 1, 1, 0, st, args, NULL));
  CK(cuEventRecord(e[2], st));
  CK(cuEventRecord(e[3], st));
  CK(cuStreamSynchronize(st));
  return (int64_t)(ev_ns(e[0], e[3]) - ev_ns(e[1], e[2])) - (int64_t)S;
}

static void factors_mode(int reps) {
  char why[256];
  if (!pp_cuda_load(why, sizeof why)) {
    fprintf(stderr, "pp_cuda_load: %s\n", why);
    exit(1);
  }
  pp_clock_init();
  printf("# probe clock: %s (%s), TSC %.6f GHz\n", pp_clock()->name,
         pp_clock()->reason, pp_clock()->tsc_ghz);
  CUstream sb;
  CK(cuStreamCreate(&sb, CU_STREAM_DEFAULT));
  pp_cuda_event_pool *pool = pp_cuda_event_pool_new();
  CUevent e[4];
  for (int i = 0; i < 4; i++)
    CK(cuEventCreate(&e[i], CU_EVENT_DEFAULT));
  static const unsigned gaps_us[] = {25, 500, 2000, 5000};
  printf("# starvation error dw-k-S, median (p10..p90) ns over %d reps; "
         "variants alternate within each rep\n%-48s", reps, "variant \\ S_us");
  for (size_t g = 0; g < 4; g++)
    printf(" | %22u", gaps_us[g]);
  printf("\n");
  int64_t v[NF][4][REPS_MAX];
  for (size_t g = 0; g < 4; g++)
    for (int r = 0; r <= reps; r++)
      for (int k = 0; k < NF; k++) {
        int f = (r % 2) ? NF - 1 - k : k;
        int64_t x = one_window(f, (uint64_t)gaps_us[g] * 1000, sb, e, pool);
        if (r > 0)
          v[f][g][r - 1] = x;
      }
  for (int f = 0; f < NF; f++) {
    printf("%-48s", f_name[f]);
    for (size_t g = 0; g < 4; g++)
      printf(" | %7ld (%6ld..%6ld)", pct(v[f][g], (size_t)reps, .5),
             pct(v[f][g], (size_t)reps, .1), pct(v[f][g], (size_t)reps, .9));
    printf("\n");
  }
  /* kernel length: the raw pair against CUPTI and the kernel's own timer.
   * CUPTI is flushed once after each batch: a forced flush delays the next
   * launch by about 200 us, which would be read as launch latency. */
  static const unsigned ks_us[] = {10, 100, 1000, 10000};
  printf("# kernel-only pair vs CUPTI, back-to-back (no gap), median (p10..p90) ns\n");
  printf("%8s | %-24s | %-24s | %-24s | %-24s\n", "K_us", "pair - cupti",
         "gt - cupti", "cupti start - launch call", "pair - gt");
  for (size_t i = 0; i < 4; i++) {
    int64_t a[REPS_MAX], b[REPS_MAX], c[REPS_MAX], d[REPS_MAX];
    uint32_t corr[REPS_MAX + 1];
    uint64_t hl[REPS_MAX + 1], pair[REPS_MAX + 1], gtd[REPS_MAX + 1];
    for (int r = 0; r <= reps; r++) {
      uint64_t p_ns = (uint64_t)ks_us[i] * 1000;
      CUdeviceptr p_out = dout;
      void *args[] = {&p_ns, &p_out};
      CK(cuEventRecord(e[1], stream));
      CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL));
      corr[r] = last_corr;
      hl[r] = last_launch_enter;
      CK(cuEventRecord(e[2], stream));
      CK(cuStreamSynchronize(stream));
      uint64_t gt[2];
      CK(cuMemcpyDtoH(gt, dout, sizeof gt));
      pair[r] = ev_ns(e[1], e[2]);
      gtd[r] = gt[1] - gt[0];
    }
    CP(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    int n = 0;
    for (int r = 1; r <= reps; r++) {
      krec k;
      if (!find_kernel(corr[r], &k))
        continue;
      a[n] = (int64_t)pair[r] - (int64_t)(k.end - k.start);
      b[n] = (int64_t)gtd[r] - (int64_t)(k.end - k.start);
      c[n] = (int64_t)k.start - (int64_t)hl[r];
      d[n] = (int64_t)pair[r] - (int64_t)gtd[r];
      n++;
    }
    if (!n)
      continue;
    printf("%8u | %7ld (%6ld..%6ld) | %7ld (%6ld..%6ld) | %7ld (%6ld..%6ld) | "
           "%7ld (%6ld..%6ld)\n",
           ks_us[i], COL(a), COL(b), COL(c), COL(d));
  }
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "window";
  int n = argc > 2 ? atoi(argv[2]) : 0;
  CP(cuptiActivityRegisterTimestampCallback(cupti_clock));
  CP(cuptiActivityRegisterCallbacks(buf_req, buf_done));
  CK(cuInit(0));
  CUdevice dev;
  CUcontext ctx;
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CUmodule mod;
  CK(cuModuleLoadData(&mod, ptx));
  CK(cuModuleGetFunction(&fn, mod, "stamp"));
  CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CK(cuMemAlloc(&dout, 16));
  if (strcmp(what, "window") == 0) {
    CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    window_mode(n > 0 && n <= REPS_MAX ? n : 15);
  } else if (strcmp(what, "factors") == 0) {
    CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CUpti_SubscriberHandle s2;
    CP(cuptiSubscribe(&s2, on_api, NULL));
    CP(cuptiEnableCallback(1, s2, CUPTI_CB_DOMAIN_DRIVER_API,
                           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
    factors_mode(n > 0 && n <= REPS_MAX ? n : 15);
  } else if (strcmp(what, "cupti") == 0) {
    cupti_mode(n > 0 ? n : 6400);
  } else {
    fprintf(stderr, "usage: gpu_anatomy window|factors [reps] | cupti [dispatches]\n");
    return 2;
  }
  return 0;
}
