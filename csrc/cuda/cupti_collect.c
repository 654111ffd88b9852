/*
 * cupti_collect.c: CUPTI collection on and off (pp_cupti.h). The first
 * pp_cupti_start hands CUPTI the probe clock, the activity buffers' and the
 * launch callbacks (cupti.c files what they bring in the spans), enables
 * kernel records and starts the flusher thread; the last pp_cupti_stop
 * stops the flusher, completes what waits and disables the records.
 *
 * The flusher: a round every flush_ms while any span waits, deferred while
 * a timed window is open (pp_cupti_window), so that a flush never lands in
 * a window's host time.
 *
 * Locking: `ctl_lock` guards start/stop and the flusher's life; it is taken
 * before cupti.c's tab_lock where both are held (cupti_internal.h).
 */
#define _GNU_SOURCE /* dladdr */
#include "cupti_internal.h"

#if defined(PP_HAVE_CUPTI_H) && defined(PP_HAVE_CUDA_H)

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ctl_cond = PTHREAD_COND_INITIALIZER; /* flusher wake  */
static unsigned starts;
static int registered, subscribed, flusher_on, flusher_stop;
static pthread_t flusher;
static CUpti_SubscriberHandle subscriber;
static int active_flag;
static unsigned flush_period_ms = 10;
static int wake_req; /* atomic: a span's start found the slots running short */
static int windows_open; /* timeline windows between open and collect */
#define DEFER_MAX_NS 100000000ull /* a flush waits for no window longer */

/* ---- the flusher ------------------------------------------------------------- */
/* Waits on ctl_cond (ctl_lock held) for at most ns. */
static void ctl_wait_ns(uint64_t ns) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t at = (uint64_t)ts.tv_nsec + ns;
  ts.tv_sec += (time_t)(at / 1000000000u);
  ts.tv_nsec = (long)(at % 1000000000u);
  pthread_cond_timedwait(&ctl_cond, &ctl_lock, &ts);
}

static void *flusher_main(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  pthread_mutex_lock(&ctl_lock);
  while (!flusher_stop) {
    /* A round every flush_ms while collection is on; a round flushes only
     * when a span waits, so a span closed now is flushed within flush_ms.
     * The dispatch path wakes this thread only when the span slots run
     * short (a system call, once per crossing: pp_cupti_wake_flusher); a
     * wake-up asked for while it was not waiting is seen here, under
     * ctl_lock, before it waits again. */
    if (!__atomic_exchange_n(&wake_req, 0, __ATOMIC_ACQ_REL))
      ctl_wait_ns((uint64_t)flush_period_ms * 1000000u);
    __atomic_store_n(&wake_req, 0, __ATOMIC_RELEASE);
    if (flusher_stop)
      continue;
    int crowded;
    if (!pp_cupti_waiting(&crowded))
      continue;
    /* A flush takes CUPTI's and the driver's locks for about 55 us (H200):
     * a thread inside a timed window would wait on them in its driver calls
     * and the window would read the flush as host time. So the flush waits
     * for a moment with no window open, polling each millisecond, at most
     * DEFER_MAX_NS, and no longer once the span slots run short: windows
     * back to back (open nearly all the time) would otherwise fill them
     * and the next ones would get no timeline at all. */
    uint64_t t0 = pp_now_ns();
    while (!flusher_stop && __atomic_load_n(&windows_open, __ATOMIC_ACQUIRE) > 0 &&
           pp_cupti_since(pp_now_ns(), t0) < DEFER_MAX_NS && !crowded) {
      ctl_wait_ns(1000000u);
      pp_cupti_waiting(&crowded);
    }
    if (flusher_stop)
      continue;
    pthread_mutex_unlock(&ctl_lock);
    pp_cupti_flush_round();
    pthread_mutex_lock(&ctl_lock);
  }
  pthread_mutex_unlock(&ctl_lock);
  return NULL;
}

static void at_exit(void);

/* ---- start / stop ---------------------------------------------------------------- */
static const CUpti_CallbackId launch_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
};

static void callbacks(const pp_cupti_api *api, int on) {
  for (size_t i = 0; i < sizeof launch_cbids / sizeof launch_cbids[0]; i++)
    api->EnableCallback(on ? 1u : 0u, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                        launch_cbids[i]);
}

/* CUPTI keeps pointers to this module's functions for the life of the
 * process (buffer and timestamp callbacks cannot be unregistered): the
 * module stays mapped once it has handed them over. */
static void pin_module(void) {
  Dl_info info;
  if (dladdr((void *)&pin_module, &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static uint64_t CUPTIAPI probe_clock(void) { return pp_now_ns(); }

static int first_start(char *why, size_t whylen) {
  const pp_cupti_api *api = pp_cupti_lib();
  if (pp_cupti_tables_init(why, whylen) != 0)
    return -1;
  CUptiResult rc;
  if (!registered) {
    pin_module();
    /* The probe clock first: CUPTI converts device timestamps with it only
     * when it is registered before any activity kind is enabled. */
    pp_clock_init();
    rc = api->ActivityRegisterTimestampCallback(probe_clock);
    if (rc != CUPTI_SUCCESS) {
      pp_cupti_why(why, whylen, "cuptiActivityRegisterTimestampCallback", rc);
      return -1;
    }
    rc = api->ActivityRegisterCallbacks(pp_cupti_buffer_requested,
                                        pp_cupti_buffer_completed);
    if (rc != CUPTI_SUCCESS) {
      pp_cupti_why(why, whylen, "cuptiActivityRegisterCallbacks", rc);
      return -1;
    }
    registered = 1;
  }
  if (!subscribed) {
    rc = api->Subscribe(&subscriber, pp_cupti_on_launch, NULL);
    if (rc != CUPTI_SUCCESS) {
      pp_cupti_why(why, whylen, "cuptiSubscribe", rc);
      if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
        pp_fail(why, whylen,
                "cuptiSubscribe: another CUPTI client (a profiler such as "
                "Nsight Systems?) holds the callback API; phaseprobe's CUPTI "
                "source cannot run beside it");
      return -1;
    }
    subscribed = 1;
  }
  callbacks(api, 1);
  rc = api->ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (rc != CUPTI_SUCCESS) {
    pp_cupti_why(why, whylen,
                 "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)",
                 rc);
    callbacks(api, 0);
    return -1;
  }
  flusher_stop = 0;
  if (pthread_create(&flusher, NULL, flusher_main, NULL) != 0) {
    pp_fail(why, whylen, "CUPTI: cannot start the flusher thread");
    api->ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    callbacks(api, 0);
    return -1;
  }
  flusher_on = 1;
  pp_set_device_hooks(pp_cupti_device_hooks());
  static int exit_hooked;
  if (!exit_hooked) {
    /* Registered after CUPTI and the driver set up theirs, so it runs
     * before they tear down (atexit runs in reverse order): a program that
     * exits with collection on (os.exit without closing its Lua state, or
     * exit() from C) completes what waits and stops the flusher while
     * CUPTI still works. The module stays mapped (pin_module), so the
     * handler never outlives its code. */
    exit_hooked = atexit(at_exit) == 0;
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
    if (starts++ == 0)
      pp_clock_pin(1);
    __atomic_store_n(&active_flag, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&ctl_lock);
  return rc;
}

/* With ctl_lock held: the last stop, or unload. */
static void shut_down(void) {
  __atomic_store_n(&active_flag, 0, __ATOMIC_RELEASE);
  flusher_stop = 1;
  pthread_cond_broadcast(&ctl_cond);
  int join = flusher_on;
  flusher_on = 0;
  pthread_mutex_unlock(&ctl_lock);
  if (join)
    pthread_join(flusher, NULL);
  pp_cupti_drain(1000000000u);
  pthread_mutex_lock(&ctl_lock);
  const pp_cupti_api *api = pp_cupti_lib();
  api->ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  callbacks(api, 0);
  pp_clock_pin(-1);
}

PP_EXPORT void pp_cupti_stop(void) {
  pthread_mutex_lock(&ctl_lock);
  if (starts > 0 && --starts == 0)
    shut_down();
  pthread_mutex_unlock(&ctl_lock);
}

unsigned pp_cupti_starts(void) {
  pthread_mutex_lock(&ctl_lock);
  unsigned n = starts;
  pthread_mutex_unlock(&ctl_lock);
  return n;
}

void pp_cupti_wake_flusher(void) {
  __atomic_store_n(&wake_req, 1, __ATOMIC_RELEASE);
  /* Signalled under ctl_lock, so the flusher is either waiting (and wakes)
   * or will see the flag before it waits; when the lock is held, the
   * flusher is awake and sees the flag, and the dispatch path goes on. */
  if (pthread_mutex_trylock(&ctl_lock) == 0) {
    pthread_cond_signal(&ctl_cond);
    pthread_mutex_unlock(&ctl_lock);
  }
}

PP_EXPORT void pp_cupti_window(int delta) {
  __atomic_add_fetch(&windows_open, delta, __ATOMIC_RELEASE);
}

PP_EXPORT int pp_cupti_active(void) {
  return __atomic_load_n(&active_flag, __ATOMIC_ACQUIRE);
}

PP_EXPORT unsigned pp_cupti_flush_ms(unsigned ms) {
  pthread_mutex_lock(&ctl_lock);
  if (ms)
    flush_period_ms = ms < 1 ? 1 : ms > 1000 ? 1000 : ms;
  unsigned v = flush_period_ms;
  pthread_mutex_unlock(&ctl_lock);
  return v;
}

/* At process exit with collection on (see first_start): stopped, and what
 * waits delivered, while CUPTI and the driver are still there. */
static void at_exit(void) {
  pthread_mutex_lock(&ctl_lock);
  if (starts > 0) {
    starts = 0;
    shut_down();
  }
  pthread_mutex_unlock(&ctl_lock);
}

#else /* no CUPTI headers at build time */

PP_EXPORT int pp_cupti_start(char *why, size_t whylen) {
  return pp_fail(why, whylen, "%s", PP_CUPTI_ABSENT_WHY);
}
PP_EXPORT void pp_cupti_stop(void) {}
PP_EXPORT int pp_cupti_active(void) { return 0; }
PP_EXPORT unsigned pp_cupti_flush_ms(unsigned ms) {
  (void)ms;
  return 0;
}
PP_EXPORT void pp_cupti_window(int delta) { (void)delta; }

#endif
