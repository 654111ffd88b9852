/*
 * cupti_helper.c: drives csrc/cuda/cupti*.c (pp_cupti.h) and the probe's
 * completion of records by it, against the scripted fake CUPTI
 * (build/libfakecupti.so, via PHASEPROBE_LIBCUPTI), for spec/truth_spec.lua.
 * Prints "ok <case>" or "FAIL <case>: <why>" per case and exits 1 if any
 * failed. Checks the logic only; the real library is exercised by
 * spec/truth_gpu_spec.lua on a GPU.
 *
 *   cupti_helper <path to libfakecupti.so> [fail_enable | fail_subscribe | faults]
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include "phaseprobe.h"
#include "pp_cupti.h"
#include "check_cases.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef uint32_t (*launch_fn)(uint64_t dur, uint64_t latency, int complete);
static launch_fn launch;
static uint32_t (*launch_returning)(uint64_t dur, uint64_t latency,
                                    int complete, uint64_t return_ns);
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
#define U(x) ((unsigned long long)(x))

static void sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* A span of n launches of dur_ns, latency lat_ns each, closed in mode;
 * complete as the fake takes it (1: the kernel's record comes complete, 0:
 * it stays incomplete until a forced flush, -1: it never comes). */
static uint64_t span_of(uint64_t n, uint64_t dur, uint64_t lat, int complete,
                        int mode) {
  uint64_t open = pp_now_ns();
  uint64_t id = pp_cupti_span_begin();
  if (!id)
    return 0;
  for (uint64_t i = 0; i < n; i++)
    launch(dur, lat, complete);
  pp_cupti_span_end(id);
  pp_cupti_span_close(id, open, pp_now_ns(), mode);
  return id;
}

/* A window of finished kernels. */
static uint64_t window(uint64_t n, uint64_t dur, uint64_t lat, int mode) {
  return span_of(n, dur, lat, 1, mode);
}

/* The span table's pages are faulted in when collection starts, not at
 * the first use of each slot: a span starts on the dispatch's path. Runs
 * alone (cupti_helper LIB faults), on slots no case has used. The faults
 * counted are the calling thread's: the buffer thread's, which may run at
 * the same time, are not the span start's. */
static long minor_faults(void) {
  struct rusage u;
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

/* The page faults of n span starts (each span then closed and waited for). */
static long span_start_faults(const char *c, int n, int *ok) {
  char why[256] = "";
  long faults = 0;
  *ok = 0;
  for (int i = 0; i < n; i++) {
    uint64_t open = pp_now_ns();
    long f0 = minor_faults();
    uint64_t id = pp_cupti_span_begin();
    faults += minor_faults() - f0;
    if (!id) {
      printf("FAIL %s: no span at %d\n", c, i);
      return faults;
    }
    launch(1000, 1000, 1);
    pp_cupti_span_end(id);
    pp_cupti_span_close(id, open, pp_now_ns(), PP_CUPTI_KEEP);
    pp_cupti_timeline t;
    if (pp_cupti_span_wait(id, 0, &t, why, sizeof why) != 0) {
      printf("FAIL %s: wait: %s\n", c, why);
      return faults;
    }
  }
  *ok = 1;
  return faults;
}

static void case_no_faults(const char *c) {
  int ok;
  long fresh = span_start_faults(c, 256, &ok); /* every slot's first use */
  if (!ok) {
    failures++;
    return;
  }
  long used = span_start_faults(c, 256, &ok); /* every slot used before */
  if (!ok) {
    failures++;
    return;
  }
  /* a few faults of the process's own (a sanitizer's or valgrind's
   * bookkeeping) may fall in either pass; a page a slot would be 256 */
  CHECK(c, fresh <= used + 4, "%ld page faults in 256 span starts on fresh slots, "
        "%ld on used ones", fresh, used);
}

static void case_basic(const char *c) {
  char why[256] = "";
  uint64_t call0 = pp_now_ns();
  uint64_t id = window(3, 1000, 5000, PP_CUPTI_KEEP);
  uint64_t call1 = pp_now_ns();
  CHECK(c, id, "no span");
  pp_cupti_timeline t;
  int rc = pp_cupti_span_wait(id, 0, &t, why, sizeof why);
  CHECK(c, rc == 0, "wait returned %d (%s)", rc, why);
  CHECK(c, t.launches == 3 && t.kernels == 3 && t.sum_ns == 3000 &&
               t.untimed == 0,
        "launches %llu kernels %llu sum %llu untimed %llu", U(t.launches),
        U(t.kernels), U(t.sum_ns), U(t.untimed));
  /* each kernel starts 5 us after its launch call (the fake reads its
   * clock just after the launch callback's): the latency is at least 5 us
   * for the first and some of the 5 us for the others, which may queue
   * behind the kernel before them */
  CHECK(c, t.first_launch_ns >= t.open_ns && t.first_start_ns > t.first_launch_ns,
        "open %llu first launch %llu first start %llu", U(t.open_ns),
        U(t.first_launch_ns), U(t.first_start_ns));
  CHECK(c, t.launch_latency_ns >= 5000 &&
               t.launch_latency_ns <= call1 - call0 + 3 * 5000,
        "launch latency %llu, the window %llu ns", U(t.launch_latency_ns),
        U(call1 - call0));
  CHECK(c, t.window_ns >= t.sum_ns,
        "window %llu shorter than the kernels %llu", U(t.window_ns), U(t.sum_ns));
}

/* A kept span of one launch (dur_ns, lat_ns, its call returning return_ns
 * after it), `idle_ms` after the span's opening; the host's stamps of the
 * opening, around the launch call and of the close, and the timeline read
 * back. Returns pp_cupti_span_wait's result. */
typedef struct {
  uint64_t open, call0, call1, close;
  pp_cupti_timeline t;
  char why[256];
} one_launch;

static int span_of_one(one_launch *o, unsigned idle_ms, uint64_t dur,
                       uint64_t lat, uint64_t return_ns) {
  o->why[0] = 0;
  o->open = pp_now_ns();
  uint64_t id = pp_cupti_span_begin();
  if (idle_ms)
    sleep_ms(idle_ms);
  o->call0 = pp_now_ns();
  launch_returning(dur, lat, 1, return_ns);
  o->call1 = pp_now_ns();
  pp_cupti_span_end(id);
  o->close = pp_now_ns();
  pp_cupti_span_close(id, o->open, o->close, PP_CUPTI_KEEP);
  return pp_cupti_span_wait(id, 0, &o->t, o->why, sizeof o->why);
}

static void case_split(const char *c) {
  one_launch o;
  /* the host makes the device wait 3 ms before the launch */
  int rc = span_of_one(&o, 3, 20000, 7000, 0);
  uint64_t open = o.open, call0 = o.call0, call1 = o.call1, close = o.close;
  const pp_cupti_timeline t = o.t;
  CHECK(c, rc == 0, "wait %d (%s)", rc, o.why);
  uint64_t gap_before = t.first_launch_ns - open;
  CHECK(c, gap_before >= 3000000, "first launch %llu ns after the open",
        U(gap_before));
  /* 7 us after the fake's own clock reading, which follows the callback's;
   * both lie inside the launch call, however long a loaded machine makes it */
  CHECK(c, t.launch_latency_ns >= 7000 &&
               t.launch_latency_ns <= call1 - call0 + 7000,
        "launch latency %llu, the launch call %llu ns", U(t.launch_latency_ns),
        U(call1 - call0));
  /* host gap: before the launch, plus after the kernel until the close if
   * the close came later (it did not: the kernel ends after the close) */
  uint64_t tail = close > t.last_end_ns ? close - t.last_end_ns : 0;
  CHECK(c, t.host_gap_ns == gap_before + tail,
        "host gap %llu, expected %llu + %llu", U(t.host_gap_ns), U(gap_before),
        U(tail));
  uint64_t end = close > t.last_end_ns ? close : t.last_end_ns;
  CHECK(c, t.window_ns == end - open, "window %llu", U(t.window_ns));
  CHECK(c, t.window_ns - t.sum_ns == t.host_gap_ns + t.launch_latency_ns,
        "idle %llu != gap %llu + latency %llu", U(t.window_ns - t.sum_ns),
        U(t.host_gap_ns), U(t.launch_latency_ns));
}

/* A launch call that returns 3 ms after its 1 us kernel ended, as the
 * driver's does after a long idle: the device waits on the launch path
 * then, not on the host's own code, so that time is launch latency; the
 * host gap is what lies before the call and after its return. */
static void case_return_late(const char *c) {
  one_launch o;
  int rc = span_of_one(&o, 0, 1000, 0, 3000000);
  uint64_t open = o.open, call0 = o.call0, call1 = o.call1, close = o.close;
  const pp_cupti_timeline t = o.t;
  CHECK(c, rc == 0 && t.kernels == 1 && t.sum_ns == 1000,
        "rc %d kernels %llu sum %llu (%s)", rc, U(t.kernels), U(t.sum_ns), o.why);
  CHECK(c, t.last_end_ns < call0 + 3000000,
        "the kernel ended at %llu, after the call's 3 ms", U(t.last_end_ns - call0));
  uint64_t before = t.first_launch_ns - open;
  CHECK(c, t.host_gap_ns >= before + (close - call1) &&
               t.host_gap_ns <= before + (close - call0 - 3000000),
        "host gap %llu, expected %llu plus %llu to %llu after the call",
        U(t.host_gap_ns), U(before), U(close - call1),
        U(close - call0 - 3000000));
  CHECK(c, t.launch_latency_ns >= 3000000 - 1000,
        "launch latency %llu, the call took %llu", U(t.launch_latency_ns),
        U(call1 - call0));
  CHECK(c, t.window_ns - t.sum_ns == t.host_gap_ns + t.launch_latency_ns,
        "idle %llu != gap %llu + latency %llu", U(t.window_ns - t.sum_ns),
        U(t.host_gap_ns), U(t.launch_latency_ns));
}

static void case_outside(const char *c) {
  char why[256] = "";
  launch(777, 0, 1);
  uint64_t open = pp_now_ns();
  uint64_t id = pp_cupti_span_begin();
  launch(100, 0, 1);
  launch(200, 0, 1);
  pp_cupti_span_end(id);
  launch(999, 0, 1);
  pp_cupti_span_close(id, open, pp_now_ns(), PP_CUPTI_KEEP);
  pp_cupti_timeline t;
  int rc = pp_cupti_span_wait(id, 0, &t, why, sizeof why);
  CHECK(c, rc == 0 && t.kernels == 2 && t.sum_ns == 300,
        "rc %d kernels %llu sum %llu (%s)", rc, U(t.kernels), U(t.sum_ns), why);
}

/* A wait for a kept span of one 5 us kernel whose record stays incomplete
 * (wait_incomplete), while `meanwhile` (when given) runs on another thread. */
typedef struct {
  int rc;          /* pp_cupti_span_wait's; -2: no thread for `meanwhile` */
  pp_cupti_timeline t;
  uint64_t forced; /* the forced flushes the wait took                     */
  char why[256];
} waited;

static void wait_incomplete(uint64_t timeout_ns, void *(*meanwhile)(void *),
                            waited *w) {
  pp_cupti_stats before, after;
  w->why[0] = 0;
  pp_cupti_stats_get(&before);
  uint64_t id = span_of(1, 5000, 0, 0, PP_CUPTI_KEEP);
  pthread_t th;
  if (meanwhile && pthread_create(&th, NULL, meanwhile, NULL) != 0) {
    w->rc = -2;
    return;
  }
  w->rc = pp_cupti_span_wait(id, timeout_ns, &w->t, w->why, sizeof w->why);
  if (meanwhile)
    pthread_join(th, NULL);
  pp_cupti_stats_get(&after);
  w->forced = after.forced_flushes - before.forced_flushes;
}

/* Whether the wait returned rc with its one kernel, untimed of it and
 * sum_ns; a FAIL line when not. */
static int waited_as(const char *c, const waited *w, int rc, uint64_t untimed,
                     uint64_t sum_ns) {
  const pp_cupti_timeline *t = &w->t;
  if (w->rc == rc && t->kernels == 1 && t->untimed == untimed &&
      t->sum_ns == sum_ns)
    return 1;
  printf("FAIL %s: rc %d kernels %llu untimed %llu sum %llu (%s)\n", c, w->rc,
         U(t->kernels), U(t->untimed), U(t->sum_ns), w->why);
  failures++;
  return 0;
}

static void case_incomplete(const char *c) {
  waited w;
  wait_incomplete(50000000u, NULL, &w);
  if (!waited_as(c, &w, 1, 1, 0))
    return;
  CHECK(c, strstr(w.why, "1 untimed") != NULL, "why: %s", w.why);
  CHECK(c, w.forced > 0, "no forced flush");
}

/* The kernel ends 5 ms into the wait (another thread marks its record
 * complete, as the device would): the wait takes it with its times. */
static void *complete_later(void *arg) {
  (void)arg;
  sleep_ms(5);
  complete_all();
  return NULL;
}

static void case_running(const char *c) {
  waited w;
  wait_incomplete(1000000000u, complete_later, &w);
  CHECK(c, w.rc != -2, "thread");
  if (!waited_as(c, &w, 0, 0, 5000))
    return;
  CHECK(c, w.forced == 0, "a forced flush while the kernel ran");
}

static void case_missing(const char *c) {
  char why[256] = "";
  uint64_t id = span_of(1, 100, 0, -1, PP_CUPTI_KEEP);
  pp_cupti_timeline t;
  int rc = pp_cupti_span_wait(id, 20000000u, &t, why, sizeof why);
  CHECK(c, rc == 1 && t.launches == 1 && t.kernels == 0, "rc %d kernels %llu",
        rc, U(t.kernels));
  CHECK(c, strstr(why, "0 of 1") != NULL, "why: %s", why);
  CHECK(c, pp_cupti_span_wait(id, 0, &t, why, sizeof why) == -1,
        "a span read twice");
}

/* The line of record r, formatted into `line` (the last one formatted). */
static char line[4096];
static const char *line_of(const pp_record *r) {
  pp_format_line(r, line, sizeof line);
  return line;
}

/* The probe's side: a dispatch's record completed by CUPTI. */
static int stored_last(pp_record *r) {
  size_t n = pp_store_count();
  return n ? pp_store_get(n - 1, r) : -1;
}

static void case_deferred(const char *c) {
  pp_store_clear();
  pp_begin();
  uint64_t id = window(2, 3000, 1000, PP_CUPTI_TO_DISPATCH);
  pp_end();
  pp_record out;
  CHECK(c, pp_emit(NULL, &out) == 0, "emit failed");
  int found = 0;
  uint64_t ksrc = pp_record_get(&out, "kernel_src", &found);
  /* the flusher may have been quicker than this thread: pending or done */
  CHECK(c, ksrc == PP_KSRC_PENDING || ksrc == PP_KSRC_CUPTI,
        "returned copy says kernel_src %llu", U(ksrc));
  CHECK(c, pp_flush(2000) == 0, "flush");
  pp_record r;
  CHECK(c, stored_last(&r) == 0, "no stored record (span %llu)", U(id));
  CHECK(c, pp_record_get(&r, "kernel_src", &found) == PP_KSRC_CUPTI,
        "stored kernel_src %llu", U(pp_record_get(&r, "kernel_src", &found)));
  CHECK(c, pp_record_get(&r, "kernel_ns", &found) == 6000, "kernel_ns %llu",
        U(pp_record_get(&r, "kernel_ns", &found)));
  CHECK(c, pp_record_get(&r, "kernels", &found) == 2 && found, "kernels");
  uint64_t at = pp_record_get(&r, "launch_at_ns", &found);
  uint64_t first = pp_record_get(&r, "kernel_first_ns", &found);
  uint64_t last = pp_record_get(&r, "kernel_last_ns", &found);
  CHECK(c, at < first && first < last, "launch at %llu first %llu last %llu",
        U(at), U(first), U(last));
  CHECK(c, strstr(line_of(&r), " kernel_src=cupti kernel_floor_ns=0 kernels=2 "),
        "line: %s", line);
}

static void case_complete_first(const char *c) {
  pp_begin();
  window(1, 4000, 100, PP_CUPTI_TO_DISPATCH);
  pp_cupti_stats st;
  for (int i = 0; i < 400; i++) { /* the flusher delivers within ~5 ms */
    sleep_ms(1);
    pp_cupti_stats_get(&st);
    if (st.matched && !st.pending)
      break;
  }
  pp_record out;
  pp_emit(NULL, &out);
  int found = 0;
  CHECK(c, pp_record_get(&out, "kernel_src", &found) == PP_KSRC_CUPTI,
        "kernel_src %llu", U(pp_record_get(&out, "kernel_src", &found)));
  CHECK(c, pp_record_get(&out, "kernel_ns", &found) == 4000, "kernel_ns %llu",
        U(pp_record_get(&out, "kernel_ns", &found)));
}

static void case_event_fields_absent(const char *c) {
  pp_begin();
  pp_record_kernel(5000, PP_KSRC_EVENT, 1200);
  pp_record out;
  pp_emit(NULL, &out);
  line_of(&out);
  CHECK(c, !strstr(line, "kernels=") && !strstr(line, "launch_latency_ns") &&
               !strstr(line, "kernel_error_ns"),
        "line: %s", line);
  pp_begin();
  pp_record_kernel(5000, PP_KSRC_EVENT, 1200);
  pp_record_kernel_error(2500);
  pp_emit(NULL, &out);
  CHECK(c, strstr(line_of(&out), " kernel_floor_ns=1200 kernel_error_ns=2500"),
        "line: %s", line);
}

static void case_orphan(const char *c) {
  pp_begin();
  window(1, 100, 0, PP_CUPTI_TO_DISPATCH);
  pp_begin(); /* the first dispatch is dropped */
  pp_emit(NULL, NULL);
  pp_flush(2000);
  pp_cupti_stats st;
  pp_cupti_stats_get(&st);
  CHECK(c, st.pending == 0, "%llu spans still pending", U(st.pending));
}

static void case_drain_gives_up(const char *c) {
  pp_store_clear();
  pp_begin();
  span_of(1, 100, 0, -1, PP_CUPTI_TO_DISPATCH);
  pp_emit(NULL, NULL);
  pp_flush(100);
  pp_record r;
  int found = 0;
  CHECK(c, stored_last(&r) == 0, "nothing stored");
  CHECK(c, pp_record_get(&r, "kernel_src", &found) == PP_KSRC_NONE &&
               pp_record_get(&r, "kernel_ns", &found) == 0,
        "kernel_src %llu", U(pp_record_get(&r, "kernel_src", &found)));
  pp_cupti_stats st;
  pp_cupti_stats_get(&st);
  CHECK(c, st.incomplete >= 1 && st.pending == 0, "incomplete %llu pending %llu",
        U(st.incomplete), U(st.pending));
}

static void case_many(const char *c) {
  char why[256] = "";
  for (int i = 0; i < 3000; i++) {
    uint64_t id = window(1, (uint64_t)i + 1, 0, PP_CUPTI_KEEP);
    pp_cupti_timeline t;
    int rc = pp_cupti_span_wait(id, 0, &t, why, sizeof why);
    CHECK(c, rc == 0 && t.sum_ns == (uint64_t)i + 1, "span %d: rc %d (%s)", i,
          rc, why);
  }
  pp_cupti_stats st;
  pp_cupti_stats_get(&st);
  CHECK(c, st.lost == 0 && st.pending == 0, "lost %llu pending %llu",
        U(st.lost), U(st.pending));
}

static void case_full(const char *c) {
  uint64_t ids[300];
  int n = 0;
  pp_cupti_stats before, after;
  pp_cupti_stats_get(&before);
  for (; n < 300; n++) {
    ids[n] = pp_cupti_span_begin();
    if (!ids[n])
      break;
    pp_cupti_span_end(ids[n]);
  }
  pp_cupti_stats_get(&after);
  CHECK(c, n == 256 && after.spans_refused == before.spans_refused + 1,
        "%d spans, refused %llu", n, U(after.spans_refused - before.spans_refused));
  char why[256];
  for (int i = 0; i < n; i++) {
    pp_cupti_timeline t;
    pp_cupti_span_wait(ids[i], 1000000u, &t, why, sizeof why);
  }
  pp_cupti_stats_get(&after);
  CHECK(c, after.pending == 0, "pending %llu", U(after.pending));
}

/* Spans completed while a timed window stays open and the flusher's period
 * is 1 s: its rounds wait, but the span that takes the 193rd slot wakes it
 * and it flushes at once, inside the window. */
static void case_crowded(const char *c) {
  unsigned was = pp_cupti_flush_ms(1000);
  sleep_ms(30); /* the flusher's round of the old period ends: it now waits 1 s */
  pp_cupti_window(1);
  for (int i = 0; i < 200; i++)
    span_of(1, 1000, 0, 1, PP_CUPTI_RELEASE);
  pp_cupti_stats st;
  uint64_t t0 = pp_now_ns();
  do {
    sleep_ms(5);
    pp_cupti_stats_get(&st);
  } while (st.pending > 64 && pp_now_ns() - t0 < 300000000u);
  uint64_t took = pp_now_ns() - t0;
  pp_cupti_window(-1);
  pp_cupti_flush_ms(was);
  CHECK(c, st.pending <= 64, "pending %llu after %llu ms", U(st.pending),
        U(took / 1000000u));
}

static void *thread_body(void *arg) {
  uint64_t dur = (uint64_t)(uintptr_t)arg;
  char why[256];
  for (int i = 0; i < 200; i++) {
    uint64_t id = window(2, dur, 0, PP_CUPTI_KEEP);
    pp_cupti_timeline t;
    if (!id || pp_cupti_span_wait(id, 0, &t, why, sizeof why) != 0 ||
        t.sum_ns != 2 * dur)
      return (void *)1;
  }
  return NULL;
}

static void case_threads(const char *c) {
  pthread_t t[4];
  pp_cupti_stats before, after;
  pp_cupti_stats_get(&before);
  for (uintptr_t i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, thread_body, (void *)(i * 1000 + 10));
  int bad = 0;
  for (int i = 0; i < 4; i++) {
    void *rv = NULL;
    pthread_join(t[i], &rv);
    bad += rv != NULL;
  }
  CHECK(c, bad == 0, "%d threads saw wrong sums", bad);
  /* the dispatch paths' waits for the table lock: at most one per span
   * start and launch call, and a time exactly when there was a wait */
  pp_cupti_stats_get(&after);
  uint64_t waits = after.lock_waits - before.lock_waits;
  uint64_t wait_ns = after.lock_wait_ns - before.lock_wait_ns;
  uint64_t entries = (after.spans - before.spans) + (after.launches - before.launches);
  CHECK(c, waits <= entries && (waits == 0) == (wait_ns == 0),
        "%llu waits (%llu ns) in %llu span starts and launch calls", U(waits),
        U(wait_ns), U(entries));
}

static void case_refcount(const char *c) {
  char why[256] = "";
  CHECK(c, pp_clock_select(PP_CLOCK_MONOTONIC) == -1,
        "the probe clock switched while CUPTI converts with it");
  CHECK(c, pp_cupti_start(why, sizeof why) == 0, "second start: %s", why);
  pp_cupti_stop();
  CHECK(c, pp_cupti_active(), "one stop of two starts stopped collection");
  pp_cupti_stop();
  CHECK(c, !pp_cupti_active(), "still active after the last stop");
  CHECK(c, pp_cupti_span_begin() == 0, "a span began with collection off");
  pp_cupti_stop(); /* unmatched: ignored */
  CHECK(c, pp_clock_select(pp_clock()->kind) == 0, "clock still pinned");
  CHECK(c, pp_cupti_start(why, sizeof why) == 0 && pp_cupti_active(),
        "restart: %s", why);
  uint64_t id = window(1, 42, 0, PP_CUPTI_KEEP);
  pp_cupti_timeline t;
  int rc = pp_cupti_span_wait(id, 0, &t, why, sizeof why);
  CHECK(c, rc == 0 && t.sum_ns == 42, "after restart rc %d (%s)", rc, why);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cupti_helper <libfakecupti.so> [fail_enable | "
                    "fail_subscribe]\n");
    return 2;
  }
  setenv("PHASEPROBE_LIBCUPTI", argv[1], 1);
  char why[512] = "";
  if (argc > 2 && strcmp(argv[2], "fail_enable") == 0)
    setenv("FAKECUPTI_FAIL_ENABLE", "1", 1);
  if (argc > 2 && strcmp(argv[2], "fail_subscribe") == 0)
    setenv("FAKECUPTI_FAIL_SUBSCRIBE", "1", 1);
  int faults_only = argc > 2 && strcmp(argv[2], "faults") == 0;
  if (argc > 2 && !faults_only) {
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
  if (h)
    *(void **)&launch_returning = dlsym(h, "fakecupti_launch_returning");
  if (!launch || !launch_returning || !complete_all) {
    printf("FAIL fake: %s is not the fake CUPTI\n", argv[1]);
    return 1;
  }
  pp_set_enabled(1);
  pp_sink_fd(-1);
  pp_notices_fd(-1); /* case_orphan drops a dispatch on purpose: its notice
                        is not one of the cases' lines */
  if (pp_cupti_start(why, sizeof why) != 0) {
    printf("FAIL start: %s\n", why);
    return 1;
  }
  if (faults_only) { /* alone, on a fresh span table (not under valgrind,
                        whose own page faults it would count) */
    static const check_case fault_case[] = {
        {case_no_faults, "starts spans without a page fault, fresh slots too"},
    };
    CHECK_CASES_RUN(fault_case, failures);
    pp_cupti_stop();
    return failures ? 1 : 0;
  }
  static const check_case cases[] = {
      {case_basic, "times a span's kernels on the probe clock"},
      {case_split, "splits device idle into host gap and launch latency"},
      {case_return_late,
       "counts a launch call's return after its kernel as launch latency"},
      {case_outside, "ignores launches outside the span"},
      {case_incomplete,
       "takes an incomplete record with a forced flush, as untimed"},
      {case_running, "waits for a kernel still running, and keeps its times"},
      {case_missing, "gives up on a kernel whose record never comes"},
      {case_deferred, "completes a dispatch's record after its emit"},
      {case_complete_first,
       "fills the record at emit when the kernels came first"},
      {case_event_fields_absent,
       "prints no device-timeline field without CUPTI's"},
      {case_orphan, "releases the span of a dispatch dropped before its emit"},
      {case_drain_gives_up,
       "a flush delivers a record whose kernel never came, without kernel time"},
      {case_many, "keeps up with more spans than its span table"},
      {case_full, "refuses a span when every slot waits, and counts it"},
      {case_crowded,
       "wakes the flusher inside a window when the span slots run short"},
      {case_threads, "attributes spans of concurrent threads apart"},
      {case_refcount,
       "counts starts and stops, and pins the probe clock meanwhile"},
  };
  CHECK_CASES_RUN(cases, failures);
  pp_cupti_stop();
  return failures ? 1 : 0;
}
