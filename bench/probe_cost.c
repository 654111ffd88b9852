/*
 * probe_cost.c: host cost of one measured phase through the C API, against
 * a bare call and the reference's design (two clock reads per phase), all
 * measured in this run. Prints one row per variant: ns per iteration, ns
 * added over the bare call, and the baseline's added cost over this one's.
 */
#include "phaseprobe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) static void work(void) { __asm__ volatile(""); }

static uint64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define N 5000000L
#define REPS 7

typedef void (*variant)(void);

static void v_bare(void) {
  for (long i = 0; i < N; i++)
    work();
}
static void v_disabled(void) {
  for (long i = 0; i < N; i++)
    PP_MEASURE(PP_PREPARE, work());
}
static void v_measure(void) {
  for (long i = 0; i < N; i++)
    PP_MEASURE(PP_PREPARE, work());
}
static void v_lap(void) {
  pp_ticks t = pp_mark();
  for (long i = 0; i < N; i++) {
    work();
    t = pp_lap(PP_PREPARE, t);
  }
}
static void v_gettime_pair(void) {
  uint64_t acc = 0;
  for (long i = 0; i < N; i++) {
    uint64_t a = mono();
    work();
    acc += mono() - a;
  }
  sink = acc;
}

static double best_ns(variant v, int enabled) {
  double best = 1e30;
  for (int r = 0; r < REPS; r++) {
    pp_set_enabled(enabled);
    pp_begin();
    uint64_t t0 = mono();
    v();
    uint64_t el = mono() - t0;
    pp_set_enabled(1);
    pp_emit(NULL, NULL);
    double per = (double)el / N;
    if (per < best)
      best = per;
  }
  return best;
}

int main(void) {
  pp_set_enabled(1);
  pp_sink_fd(-1);
  pp_store_enable(0);
  const pp_clock_info *c = pp_clock();
  double bare = best_ns(v_bare, 0);
  double bare2 = best_ns(v_bare, 0); /* run-to-run spread: the noise */
  if (bare2 < bare) {
    double t = bare;
    bare = bare2;
    bare2 = t;
  }
  double dis = best_ns(v_disabled, 0);
  double mea = best_ns(v_measure, 1);
  double lap = best_ns(v_lap, 1);
  double pair = best_ns(v_gettime_pair, 0);
  double pair_add = pair - bare;
  printf("clock: %s (%s)\n", c->name, c->reason);
  printf("%-44s %9s %9s %12s\n", "C, per phase", "ns/iter", "added", "pair/added");
  printf("%-44s %9.2f %9s %12s\n", "bare call", bare, "-", "-");
  printf("%-44s %9.2f %9.2f %12s\n", "bare call, again (noise)", bare2, bare2 - bare, "-");
  printf("%-44s %9.2f %9.2f %12s\n", "disabled (PP_MEASURE, flag clear)", dis, dis - bare, "-");
  printf("%-44s %9.2f %9.2f %12.2f\n", "enabled PP_MEASURE (two reads)", mea, mea - bare, pair_add / (mea - bare));
  printf("%-44s %9.2f %9.2f %12.2f\n", "enabled pp_lap (one read per boundary)", lap, lap - bare, pair_add / (lap - bare));
  printf("%-44s %9.2f %9.2f %12.2f\n", "baseline: two clock_gettime(MONOTONIC)", pair, pair_add, 1.0);
  return 0;
}
