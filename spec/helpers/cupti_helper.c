/*
 * cupti_helper.c: drives csrc/cuda/cupti.c (pp_cupti.h) against the scripted
 * fake CUPTI (build/libfakecupti.so, via PHASEPROBE_LIBCUPTI) for
 * spec/truth_spec.lua. Prints "ok <case>" or "FAIL <case>: <why>" per case
 * and exits 1 if any failed. Checks the matching logic only; the real
 * library is exercised by spec/truth_gpu_spec.lua on a GPU.
 *
 *   cupti_helper <path to libfakecupti.so> [case]
 */
#include "pp_cupti.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef uint32_t (*launch_fn)(uint64_t, int, int);
static launch_fn launch;
static void (*complete_all)(void);
static int failures;

#define CHECK(name, cond, ...)                                                 \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("FAIL %s: ", name);                                               \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
      failures++;                                                              \
      return;                                                                  \
    }                                                                          \
  } while (0)

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A span with n launches of dur_ns each, then its collection. */
static int span_of(uint64_t n, uint64_t dur, int kernel_first,
                   pp_cupti_result *r, char *why, size_t len) {
  uint64_t id = pp_cupti_span_begin();
  if (!id)
    return -2;
  for (uint64_t i = 0; i < n; i++)
    launch(dur, kernel_first, 1);
  if (pp_cupti_span_end(id) != 0)
    return -3;
  return pp_cupti_collect(id, n, 0, r, why, len);
}

static void case_basic(void) {
  const char *c = "sums a span's kernels";
  char why[256] = "";
  pp_cupti_result r;
  int rc = span_of(3, 1000, 0, &r, why, sizeof why);
  CHECK(c, rc == 0, "collect returned %d (%s)", rc, why);
  CHECK(c, r.kernels == 3 && r.sum_ns == 3000 && r.untimed == 0,
        "kernels %llu sum %llu untimed %llu", (unsigned long long)r.kernels,
        (unsigned long long)r.sum_ns, (unsigned long long)r.untimed);
  CHECK(c, r.correlations == 3, "correlations %llu",
        (unsigned long long)r.correlations);
  CHECK(c, r.last_end_ns - r.first_start_ns == 3000 + 2 * 1000,
        "first %llu last %llu", (unsigned long long)r.first_start_ns,
        (unsigned long long)r.last_end_ns);
  CHECK(c, r.flushes >= 1, "no flush");
  printf("ok %s\n", c);
}

static void case_kernel_first(void) {
  const char *c = "matches kernel records that arrive before their correlation";
  char why[256] = "";
  pp_cupti_result r;
  int rc = span_of(4, 2500, 1, &r, why, sizeof why);
  CHECK(c, rc == 0 && r.kernels == 4 && r.sum_ns == 10000,
        "rc %d kernels %llu sum %llu (%s)", rc, (unsigned long long)r.kernels,
        (unsigned long long)r.sum_ns, why);
  printf("ok %s\n", c);
}

static void case_outside(void) {
  const char *c = "ignores launches outside the span";
  char why[256] = "";
  launch(777, 0, 1);
  uint64_t id = pp_cupti_span_begin();
  launch(100, 0, 1);
  launch(200, 1, 1);
  pp_cupti_span_end(id);
  launch(999, 0, 1);
  pp_cupti_result r;
  int rc = pp_cupti_collect(id, 2, 0, &r, why, sizeof why);
  CHECK(c, rc == 0 && r.kernels == 2 && r.sum_ns == 300,
        "rc %d kernels %llu sum %llu (%s)", rc, (unsigned long long)r.kernels,
        (unsigned long long)r.sum_ns, why);
  printf("ok %s\n", c);
}

static void case_incomplete(void) {
  const char *c = "takes an incomplete record with a forced flush, as untimed";
  char why[256] = "";
  pp_cupti_stats before, after;
  pp_cupti_stats_get(&before);
  uint64_t id = pp_cupti_span_begin();
  launch(5000, 0, 0);
  pp_cupti_span_end(id);
  pp_cupti_result r;
  int rc = pp_cupti_collect(id, 1, 0, &r, why, sizeof why);
  pp_cupti_stats_get(&after);
  CHECK(c, rc == 0 && r.kernels == 1 && r.untimed == 1 && r.sum_ns == 0,
        "rc %d kernels %llu untimed %llu sum %llu (%s)", rc,
        (unsigned long long)r.kernels, (unsigned long long)r.untimed,
        (unsigned long long)r.sum_ns, why);
  CHECK(c, r.flushes == 11, "flushes %llu", (unsigned long long)r.flushes);
  CHECK(c, after.forced_flushes == before.forced_flushes + 1, "forced count");
  printf("ok %s\n", c);
}

static void case_missing(void) {
  const char *c = "gives up soon on a span CUPTI correlated nothing to";
  char why[256] = "";
  uint64_t id = pp_cupti_span_begin();
  pp_cupti_span_end(id);
  pp_cupti_result r;
  uint64_t t0 = mono_ns();
  int rc = pp_cupti_collect(id, 1, 0, &r, why, sizeof why);
  uint64_t took = mono_ns() - t0;
  CHECK(c, rc == 1 && r.kernels == 0, "rc %d kernels %llu", rc,
        (unsigned long long)r.kernels);
  CHECK(c, strstr(why, "correlated no launch") != NULL, "why: %s", why);
  CHECK(c, took < 100000000u, "took %llu ns (the timeout is 200 ms)",
        (unsigned long long)took);
  printf("ok %s\n", c);
}

static void case_nesting(void) {
  const char *c = "ends only the innermost span, which gets the launches";
  uint64_t a = pp_cupti_span_begin();
  uint64_t b = pp_cupti_span_begin();
  CHECK(c, a && b && b > a, "ids %llu %llu", (unsigned long long)a,
        (unsigned long long)b);
  CHECK(c, pp_cupti_span_end(a) == -1, "ended the outer span first");
  launch(50, 0, 1); /* CUPTI correlates it to the innermost id */
  CHECK(c, pp_cupti_span_end(b) == 0 && pp_cupti_span_end(a) == 0,
        "could not end in order");
  CHECK(c, pp_cupti_span_end(a) == -1, "ended a closed span");
  char why[256] = "";
  pp_cupti_result ra, rb;
  CHECK(c, pp_cupti_collect(b, 1, 0, &rb, why, sizeof why) == 0 &&
               pp_cupti_collect(a, 0, 0, &ra, why, sizeof why) == 0,
        "collect: %s", why);
  CHECK(c, ra.kernels == 0 && rb.kernels == 1 && rb.sum_ns == 50,
        "outer %llu kernels, inner %llu kernels %llu ns",
        (unsigned long long)ra.kernels, (unsigned long long)rb.kernels,
        (unsigned long long)rb.sum_ns);
  printf("ok %s\n", c);
}

static void case_many(void) {
  const char *c = "keeps up with more spans than its span table";
  char why[256] = "";
  for (int i = 0; i < 3000; i++) {
    pp_cupti_result r;
    int rc = span_of(1, (uint64_t)i + 1, i & 1, &r, why, sizeof why);
    CHECK(c, rc == 0 && r.sum_ns == (uint64_t)i + 1, "span %d: rc %d (%s)", i,
          rc, why);
  }
  pp_cupti_stats st;
  pp_cupti_stats_get(&st);
  CHECK(c, st.lost == 0, "lost %llu", (unsigned long long)st.lost);
  printf("ok %s\n", c);
}

static void *thread_body(void *arg) {
  uint64_t dur = (uint64_t)(uintptr_t)arg;
  char why[256];
  for (int i = 0; i < 200; i++) {
    pp_cupti_result r;
    if (span_of(2, dur, i & 1, &r, why, sizeof why) != 0 || r.sum_ns != 2 * dur)
      return (void *)1;
  }
  return NULL;
}

static void case_threads(void) {
  const char *c = "attributes spans of concurrent threads apart";
  pthread_t t[4];
  for (uintptr_t i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, thread_body, (void *)(i * 1000 + 10));
  int bad = 0;
  for (int i = 0; i < 4; i++) {
    void *rv = NULL;
    pthread_join(t[i], &rv);
    bad += rv != NULL;
  }
  CHECK(c, bad == 0, "%d threads saw wrong sums", bad);
  printf("ok %s\n", c);
}

static void case_refcount(void) {
  const char *c = "counts starts and stops";
  char why[256] = "";
  CHECK(c, pp_cupti_start(why, sizeof why) == 0, "second start: %s", why);
  pp_cupti_stop();
  CHECK(c, pp_cupti_active(), "one stop of two starts stopped collection");
  pp_cupti_stop();
  CHECK(c, !pp_cupti_active(), "still active after the last stop");
  CHECK(c, pp_cupti_span_begin() == 0, "a span began with collection off");
  pp_cupti_result r;
  CHECK(c, pp_cupti_collect(1, 1, 0, &r, why, sizeof why) == -1 &&
               strstr(why, "collection is off"),
        "collect while off: %s", why);
  pp_cupti_stop(); /* unmatched: ignored */
  CHECK(c, pp_cupti_start(why, sizeof why) == 0 && pp_cupti_active(),
        "restart: %s", why);
  pp_cupti_result r2;
  int rc = span_of(1, 42, 0, &r2, why, sizeof why);
  CHECK(c, rc == 0 && r2.sum_ns == 42, "after restart rc %d (%s)", rc, why);
  printf("ok %s\n", c);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cupti_helper <libfakecupti.so> [fail_enable]\n");
    return 2;
  }
  setenv("PHASEPROBE_LIBCUPTI", argv[1], 1);
  char why[512] = "";
  if (argc > 2 && strcmp(argv[2], "fail_enable") == 0) {
    setenv("FAKECUPTI_FAIL_ENABLE", "1", 1);
    int rc = pp_cupti_start(why, sizeof why);
    printf("start=%d active=%d why=%s\n", rc, pp_cupti_active(), why);
    return 0;
  }
  if (pp_cupti_load(why, sizeof why) != 0) {
    printf("FAIL load: %s\n", why);
    return 1;
  }
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
  launch = h ? (launch_fn)dlsym(h, "fakecupti_launch") : NULL;
  complete_all = h ? (void (*)(void))dlsym(h, "fakecupti_complete_all") : NULL;
  if (!launch || !complete_all) {
    printf("FAIL fake: %s is not the fake CUPTI\n", argv[1]);
    return 1;
  }
  if (pp_cupti_start(why, sizeof why) != 0) {
    printf("FAIL start: %s\n", why);
    return 1;
  }
  case_basic();
  case_kernel_first();
  case_outside();
  case_incomplete();
  case_missing();
  case_nesting();
  case_many();
  case_threads();
  case_refcount();
  pp_cupti_stop();
  return failures ? 1 : 0;
}
