/*
 * rounds.h: what the C benchmarks in bench/ share: variants run in
 * alternating rounds (round r starts at variant r mod n, so no variant
 * always runs first or right after another), each round timed as a whole
 * with clock_gettime(CLOCK_MONOTONIC), and min/median/max of the per-round
 * figures; a note naming the probe clock, with a warning when it is not the
 * TSC (every probe clock read then costs a system clock call).
 */
#ifndef PP_BENCH_ROUNDS_H
#define PP_BENCH_ROUNDS_H

#include "phaseprobe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_MAX_ROUNDS 64

typedef struct {
  const char *name;
  void (*setup)(void);  /* untimed, before each round of this variant */
  void (*run)(long n);  /* timed: n iterations                        */
  void (*after)(void);  /* untimed, after each round                  */
  double per[BENCH_MAX_ROUNDS]; /* ns per iteration, each round        */
  double min, median, max;
} bench_variant;

static inline uint64_t bench_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* min, median and max of each variant's per-round figures. */
static inline void bench_summarize(bench_variant *v, int nv, int rounds) {
  for (int k = 0; k < nv; k++) {
    double s[BENCH_MAX_ROUNDS];
    memcpy(s, v[k].per, sizeof(double) * (size_t)rounds);
    qsort(s, (size_t)rounds, sizeof(double), bench_cmp_double);
    v[k].min = s[0];
    v[k].max = s[rounds - 1];
    v[k].median = rounds % 2 ? s[rounds / 2]
                             : (s[rounds / 2 - 1] + s[rounds / 2]) / 2;
  }
}

static inline void bench_rounds(bench_variant *v, int nv, int rounds, long n) {
  if (rounds > BENCH_MAX_ROUNDS)
    rounds = BENCH_MAX_ROUNDS;
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < nv; k++) {
      bench_variant *x = &v[(k + r) % nv];
      if (x->setup)
        x->setup();
      uint64_t t0 = bench_mono_ns();
      x->run(n);
      uint64_t el = bench_mono_ns() - t0;
      if (x->after)
        x->after();
      x->per[r] = (double)el / (double)n;
    }
  bench_summarize(v, nv, rounds);
}

/* Prints which clock the probe uses, and a warning when it is not the TSC. */
static inline void bench_clock_note(void) {
  pp_clock_init();
  const pp_clock_info *c = pp_clock();
  printf("probe clock: %s, %.1f ns a read (%s); rounds timed with "
         "clock_gettime(CLOCK_MONOTONIC)\n",
         c->name, c->read_ns[c->kind], c->reason);
  if (c->kind != PP_CLOCK_TSC)
    printf("WARNING: the probe clock is not the TSC on this machine: every "
           "probe clock read is a clock_gettime call, and figures that "
           "include clock reads are not comparable with a TSC machine's\n");
}

#endif
