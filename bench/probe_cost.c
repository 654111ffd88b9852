/*
 * probe_cost.c: host cost of one measured phase through the C API, against
 * a bare call and the reference's design (two clock reads per phase), all
 * measured in this run, in alternating rounds (bench/rounds.h). Prints one
 * row per variant: min/median/max ns per iteration over the rounds, the
 * median's ns added over the bare call's median, and the baseline's added
 * cost over this one's.
 *
 *   build/bench_probe_cost [rounds]        (default 9)
 */
#include "phaseprobe.h"
#include "rounds.h"

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

static void v_bare(long n) {
  (void)n;
  for (long i = 0; i < N; i++)
    work();
}
static void v_disabled(long n) {
  (void)n;
  for (long i = 0; i < N; i++)
    PP_MEASURE(PP_PREPARE, work());
}
static void v_measure(long n) {
  (void)n;
  for (long i = 0; i < N; i++)
    PP_MEASURE(PP_PREPARE, work());
}
static void v_lap(long n) {
  (void)n;
  pp_ticks t = pp_mark();
  for (long i = 0; i < N; i++) {
    work();
    t = pp_lap(PP_PREPARE, t);
  }
}
static void v_gettime_pair(long n) {
  (void)n;
  uint64_t acc = 0;
  for (long i = 0; i < N; i++) {
    uint64_t a = mono();
    work();
    acc += mono() - a;
  }
  sink = acc;
}

/* Each round: the flag set as the variant wants, a dispatch open around
 * it (emitted afterwards, untimed, to no sink). */
static void open_enabled(void) {
  pp_set_enabled(1);
  pp_begin();
}
static void open_disabled(void) {
  pp_set_enabled(1);
  pp_begin();
  pp_set_enabled(0);
}
static void close_dispatch(void) {
  pp_set_enabled(1);
  pp_emit(NULL, NULL);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 9;
  if (rounds < 3 || rounds > BENCH_MAX_ROUNDS)
    rounds = 9;
  pp_set_enabled(1);
  pp_sink_fd(-1);
  pp_store_enable(0);
  bench_clock_note();
  bench_variant v[] = {
      {"bare call", open_disabled, v_bare, close_dispatch, {0}, 0, 0, 0},
      {"bare call, again (noise)", open_disabled, v_bare, close_dispatch, {0}, 0, 0, 0},
      {"disabled (PP_MEASURE, flag clear)", open_disabled, v_disabled, close_dispatch, {0}, 0, 0, 0},
      {"enabled PP_MEASURE (two reads)", open_enabled, v_measure, close_dispatch, {0}, 0, 0, 0},
      {"enabled pp_lap (one read per boundary)", open_enabled, v_lap, close_dispatch, {0}, 0, 0, 0},
      {"baseline: two clock_gettime(MONOTONIC)", open_disabled, v_gettime_pair, close_dispatch, {0}, 0, 0, 0},
  };
  bench_rounds(v, 6, rounds, N);
  double bare = v[0].median;
  double pair_add = v[5].median - bare;
  printf("%ld iterations a round, %d alternating rounds; min/median/max of rounds\n", N, rounds);
  printf("%-42s %8s %8s %8s %9s %11s\n", "C, ns per phase", "min", "median", "max", "added", "pair/added");
  for (int k = 0; k < 6; k++) {
    double add = v[k].median - bare;
    char ratio[16] = "-";
    if (k >= 3 && k <= 4 && add > 0)
      snprintf(ratio, sizeof ratio, "%.2f", pair_add / add);
    if (k == 5)
      snprintf(ratio, sizeof ratio, "1.00");
    printf("%-42s %8.2f %8.2f %8.2f %9.2f %11s\n", v[k].name, v[k].min, v[k].median,
           v[k].max, k ? add : 0.0, ratio);
  }
  return 0;
}
