/*
 * clock.c: the probe's monotonic nanosecond clock.
 *
 * Candidates: the invariant TSC (rdtsc, calibrated against
 * CLOCK_MONOTONIC_RAW), clock_gettime(CLOCK_MONOTONIC) and
 * clock_gettime(CLOCK_MONOTONIC_RAW). Each candidate's read cost is measured
 * at start; the TSC is used only where CPUID says it is invariant (constant
 * rate, keeps ticking in deep C-states) and the kernel does not distrust it,
 * and only when it is the cheapest. Otherwise the cheaper clock_gettime wins.
 * PHASEPROBE_CLOCK=tsc|monotonic|monotonic_raw forces a choice (the TSC
 * only where invariant).
 *
 * The choice (about 25 ms: the read costs, the TSC's rate over 20 ms) is
 * made once, when the probe is enabled or the clock is first read or asked
 * about, whichever comes first: never when the module is loaded, and never
 * inside a dispatch, which only an enabled probe opens.
 */
#include "pp_internal.h"

#include <errno.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
/* __rdtsc alone: <x86gprintrin.h>, not <x86intrin.h> (64,000 lines of
 * vector intrinsics a file, half the time of a build). */
#if defined(__has_include) && __has_include(<x86gprintrin.h>)
#include <x86gprintrin.h>
#else
#include <x86intrin.h>
#endif
#define PP_HAVE_TSC 1
#else
#define PP_HAVE_TSC 0
#endif

pp_clock_state pp_clk = {.kind = PP_CLOCK_UNCHOSEN, .mult = 1ull << 32};

static pp_clock_info info;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;
static char reason_buf[160];
static const char *choose_why; /* the first caller's reason (atomic) */

static uint64_t gettime_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if PP_HAVE_TSC
static int tsc_is_invariant(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
    return 0;
  __get_cpuid(0x80000007u, &a, &b, &c, &d);
  return (d >> 8) & 1u;
}

/* The kernel demotes the TSC from its clocksource list when it sees it
 * misbehave (unsynchronised across sockets, halting). If it is listed as
 * unstable in the kernel log we cannot see that, but a TSC that the kernel
 * still offers as a clocksource has passed its checks. */
static int kernel_offers_tsc(void) {
  FILE *f = fopen(
      "/sys/devices/system/clocksource/clocksource0/available_clocksource", "r");
  if (!f)
    return 1; /* no sysfs (container without it): rely on CPUID alone */
  char buf[256] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return strstr(buf, "tsc") != NULL;
}

/* Pairs a TSC read with a CLOCK_MONOTONIC_RAW read, keeping the pair with the
 * tightest bracketing so the error of each calibration point is small. */
static void paired_read(uint64_t *tsc, uint64_t *ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 16; i++) {
    uint64_t t0 = __rdtsc();
    uint64_t n = gettime_ns(CLOCK_MONOTONIC_RAW);
    uint64_t t1 = __rdtsc();
    if (t1 - t0 < best) {
      best = t1 - t0;
      *tsc = t0 + (t1 - t0) / 2;
      *ns = n;
    }
  }
}

static double calibrate_tsc(uint64_t *mult_out) {
  uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0; /* paired_read sets them */
  paired_read(&t0, &n0);
  uint64_t until = n0 + 20000000ull; /* 20 ms */
  while (gettime_ns(CLOCK_MONOTONIC_RAW) < until) {
  }
  paired_read(&t1, &n1);
  double ghz = (double)(t1 - t0) / (double)(n1 - n0);
  /* ns = ticks * mult >> 32 */
  *mult_out = (uint64_t)((double)(1ull << 32) / ghz + 0.5);
  return ghz;
}
#endif

static double cost_ns(pp_clock_kind kind) {
  enum { N = 20000 };
  uint64_t sink = 0;
  uint64_t best = UINT64_MAX;
  for (int rep = 0; rep < 5; rep++) {
    uint64_t start = gettime_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < N; i++) {
      switch (kind) {
#if PP_HAVE_TSC
      case PP_CLOCK_TSC: sink += __rdtsc(); break;
#else
      case PP_CLOCK_TSC: break;
#endif
      case PP_CLOCK_MONOTONIC: sink += gettime_ns(CLOCK_MONOTONIC); break;
      case PP_CLOCK_MONOTONIC_RAW: sink += gettime_ns(CLOCK_MONOTONIC_RAW); break;
      }
    }
    uint64_t el = gettime_ns(CLOCK_MONOTONIC) - start;
    if (el < best)
      best = el;
  }
  __asm__ volatile("" ::"r"(sink));
  return (double)best / N;
}

static const char *const names[] = {"tsc", "monotonic", "monotonic_raw"};

/* Each clock's first reading once it is in use, less 1 ms (for a reading
 * of another CPU's TSC): no mark of it is earlier. */
static pp_ticks origins[3];

static pp_ticks read_kind(pp_clock_kind kind) {
  switch (kind) {
#if PP_HAVE_TSC
  case PP_CLOCK_TSC: return __rdtsc();
#endif
  case PP_CLOCK_MONOTONIC_RAW: return gettime_ns(CLOCK_MONOTONIC_RAW);
  default: return gettime_ns(CLOCK_MONOTONIC);
  }
}

static void apply(pp_clock_kind kind) {
  info.kind = kind;
  info.name = names[kind];
  if (!origins[kind]) {
    pp_ticks t = read_kind(kind);
    uint64_t slack = kind == PP_CLOCK_TSC
                         ? (uint64_t)(info.tsc_ghz * PP_START_SLACK_NS)
                         : PP_START_SLACK_NS;
    origins[kind] = t > slack ? t - slack : 1;
  }
  __atomic_store_n(&pp_clk.origin, origins[kind], __ATOMIC_RELAXED);
  __atomic_store_n(&pp_clk.mult, kind == PP_CLOCK_TSC ? info.mult : 1ull << 32,
                   __ATOMIC_RELAXED);
  __atomic_store_n(&pp_clk.kind, (int)kind, __ATOMIC_RELEASE);
}

static void choose(void) {
  memset(&info, 0, sizeof info);
  info.read_ns[PP_CLOCK_MONOTONIC] = cost_ns(PP_CLOCK_MONOTONIC);
  info.read_ns[PP_CLOCK_MONOTONIC_RAW] = cost_ns(PP_CLOCK_MONOTONIC_RAW);
  int tsc_ok = 0;
#if PP_HAVE_TSC
  info.tsc_invariant = tsc_is_invariant();
  tsc_ok = info.tsc_invariant && kernel_offers_tsc();
  if (tsc_ok) {
    info.read_ns[PP_CLOCK_TSC] = cost_ns(PP_CLOCK_TSC);
    info.tsc_ghz = calibrate_tsc(&info.mult);
  }
#endif
  pp_clock_kind gt = info.read_ns[PP_CLOCK_MONOTONIC_RAW] <
                             info.read_ns[PP_CLOCK_MONOTONIC]
                         ? PP_CLOCK_MONOTONIC_RAW
                         : PP_CLOCK_MONOTONIC;
  pp_clock_kind pick = gt;
  if (tsc_ok && info.read_ns[PP_CLOCK_TSC] < info.read_ns[gt]) {
    pick = PP_CLOCK_TSC;
    snprintf(reason_buf, sizeof reason_buf,
             "invariant TSC, %.1f ns a read against %.1f ns for %s",
             info.read_ns[PP_CLOCK_TSC], info.read_ns[gt], names[gt]);
  } else if (tsc_ok) {
    snprintf(reason_buf, sizeof reason_buf,
             "cheapest read: %.1f ns (TSC %.1f ns)", info.read_ns[gt],
             info.read_ns[PP_CLOCK_TSC]);
  } else {
    snprintf(reason_buf, sizeof reason_buf,
             "TSC not usable (%s); cheapest clock_gettime: %.1f ns",
             PP_HAVE_TSC ? (info.tsc_invariant ? "not offered by the kernel"
                                               : "not invariant")
                         : "not x86",
             info.read_ns[gt]);
  }
  const char *force = getenv("PHASEPROBE_CLOCK");
  if (force && *force) {
    for (int k = 0; k < 3; k++) {
      if (strcmp(force, names[k]) == 0 && (k != PP_CLOCK_TSC || tsc_ok)) {
        pick = (pp_clock_kind)k;
        snprintf(reason_buf, sizeof reason_buf, "forced by PHASEPROBE_CLOCK=%s",
                 force);
      }
    }
  }
  info.reason = reason_buf;
  info.chosen_by = __atomic_load_n(&choose_why, __ATOMIC_ACQUIRE);
  if (!info.chosen_by)
    info.chosen_by = "pp_clock_init";
  apply(pick);
}

void pp_clock_choose(const char *why) {
  if (__atomic_load_n(&pp_clk.kind, __ATOMIC_ACQUIRE) != PP_CLOCK_UNCHOSEN)
    return;
  const char *none = NULL;
  __atomic_compare_exchange_n(&choose_why, &none, why, 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
  pthread_once(&clock_once, choose);
}

PP_EXPORT void pp_clock_init(void) { pp_clock_choose("pp_clock_init"); }

PP_EXPORT const pp_clock_info *pp_clock(void) {
  pp_clock_choose("clock query");
  return &info;
}

static int clock_pins;

void pp_clock_pin(int delta) { __atomic_add_fetch(&clock_pins, delta, __ATOMIC_SEQ_CST); }

int pp_clock_pinned(void) { return __atomic_load_n(&clock_pins, __ATOMIC_SEQ_CST) > 0; }

PP_EXPORT int pp_clock_select(pp_clock_kind kind) {
  pp_clock_choose("select");
  /* This thread's open dispatch or scopes read their starts on the clock
   * in use: switching now would make their times wrong. */
  pp_acc *a = pp_acc_peek();
  if (a && ((a->open && a->begin_ticks) || a->depth)) {
    errno = EBUSY;
    return -1;
  }
  if (__atomic_load_n(&clock_pins, __ATOMIC_SEQ_CST) > 0)
    return -1; /* CUPTI converts its timestamps with this clock */
  if ((int)kind < 0 || kind > PP_CLOCK_MONOTONIC_RAW)
    return -1;
  if (kind == PP_CLOCK_TSC && info.tsc_ghz == 0.0)
    return -1;
  apply(kind);
  snprintf(reason_buf, sizeof reason_buf, "selected by pp_clock_select");
  return 0;
}

/* The first read of the clock chooses it (about 25 ms with the TSC's
 * calibration): whoever reads it first, the module's load never does. */
pp_ticks pp_now_slow(void) {
  switch (__atomic_load_n(&pp_clk.kind, __ATOMIC_ACQUIRE)) {
#if PP_HAVE_TSC
  case PP_CLOCK_TSC: return __rdtsc();
#endif
  case PP_CLOCK_MONOTONIC_RAW: return gettime_ns(CLOCK_MONOTONIC_RAW);
  case PP_CLOCK_MONOTONIC: return gettime_ns(CLOCK_MONOTONIC);
  default: pp_clock_choose("first read"); return pp_now_inline();
  }
}

PP_EXPORT pp_ticks pp_now(void) { return pp_now_inline(); }

PP_EXPORT uint64_t pp_ticks_to_ns(pp_ticks from, pp_ticks to) {
  return pp_ticks_delta_ns(from, to);
}

PP_EXPORT uint64_t pp_now_ns(void) {
  pp_clock_choose("first read");
  pp_ticks t = pp_now_inline();
  return (uint64_t)(((unsigned __int128)t * pp_clk.mult) >> 32);
}

/* Busy-waits `ns` on the probe clock: no sleep, no syscall, and no PAUSE
 * instruction. Under a hypervisor a PAUSE loop invites pause-loop exits; on
 * the H200 machines (KVM guests) a gap injected with rdtsc + PAUSE came out
 * 5 to 15 us longer than asked at 2 ms, and the device idled after it for
 * longer too, against 2 to 3 us for the same loop without PAUSE
 * (tools/starvation_rate.lua, "host" column, with and without luaspin). */
void pp_spin_ns(uint64_t ns) {
  pp_clock_choose("first read");
  pp_ticks t0 = pp_now_inline();
  while (pp_ticks_delta_ns(t0, pp_now_inline()) < ns) {
  }
}

