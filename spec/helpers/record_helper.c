/*
 * record_helper.c: the record's fidelity through the C API, for
 * spec/reference_spec.lua: the reference's calls alone (charges, then an
 * emit with the caller's wall, no pp_begin), pp_emit_args' presence mask
 * (seq = UINT64_MAX is a value, not "automatic"), explicit cache values, the
 * form of pp_emit_args older callers wrote, a tag that another thread's
 * schema made a field, and when the environment is read. Prints
 * "ok CASE" or "FAIL CASE: ..." per case and exits non-zero on a failure.
 *
 *   record_helper
 */
#include "phaseprobe.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static const char *cs;

static int check(int cond, const char *what) {
  if (!cond) {
    printf("FAIL %s: %s\n", cs, what);
    failures++;
  }
  return cond;
}

static uint64_t get(const pp_record *r, const char *f) {
  int found = 0;
  uint64_t v = pp_record_get(r, f, &found);
  if (!found) {
    printf("FAIL %s: no field %s\n", cs, f);
    failures++;
  }
  return v;
}

static int has(const pp_record *r, const char *text) {
  char line[8192];
  pp_format_line(r, line, sizeof line);
  return strstr(line, text) != NULL;
}

static void done(int ok) {
  if (ok)
    printf("ok %s\n", cs);
}

static void reference_calls(void) {
  cs = "charges then emit, no pp_begin";
  pp_record r;
  pp_add_ns(PP_PREPARE, 700);
  pp_add_ns(PP_LAUNCH, 300);
  pp_set_count(PP_COUNT_NODES, 12);
  pp_record_kernel_ns(55);
  int rc = pp_emit(&(pp_emit_args){.seq = 9, .wall_ns = 5000,
                                   .given = PP_GIVEN_SEQ | PP_GIVEN_WALL},
                   &r);
  done(check(rc == 0, "emitted") & check(get(&r, "prepare_ns") == 700, "prepare_ns") &
       check(get(&r, "named_host_ns") == 1000, "named") &
       check(get(&r, "unattributed_ns") == 4000, "unattributed") &
       check(get(&r, "wall_ns") == 5000, "wall") & check(get(&r, "nodes") == 12, "nodes") &
       check(get(&r, "kernel_ns") == 55, "kernel_ns") & check(get(&r, "seq") == 9, "seq"));

  cs = "an emit with nothing charged prints zeros";
  rc = pp_emit(&(pp_emit_args){.wall_ns = 0, .given = PP_GIVEN_WALL}, &r);
  done(check(rc == 0, "emitted") & check(get(&r, "named_host_ns") == 0, "named") &
       check(get(&r, "prepare_ns") == 0, "charges of the last record are gone") &
       check(has(&r, " wall_ns=0 "), "wall_ns=0 printed"));

  cs = "named above a caller's wall prints as the reference prints it";
  pp_add_ns(PP_PTX, 9000);
  rc = pp_emit(&(pp_emit_args){.wall_ns = 100, .given = PP_GIVEN_WALL}, &r);
  done(check(rc == 0, "emitted") & check(has(&r, " named_host_ns=9000 unattributed_ns=0 "), "saturated residue"));
}

static void mask(void) {
  cs = "seq = UINT64_MAX is a value";
  pp_record r;
  pp_begin();
  pp_emit(&(pp_emit_args){.seq = UINT64_MAX, .given = PP_GIVEN_SEQ}, &r);
  done(check(get(&r, "seq") == UINT64_MAX, "seq") &
       check(has(&r, " seq=18446744073709551615 "), "printed"));

  cs = "every field UINT64_MAX when given";
  pp_begin();
  pp_emit(&(pp_emit_args){.seq = UINT64_MAX, .wall_ns = UINT64_MAX, .enqueue_ns = UINT64_MAX,
                          .wait_ns = UINT64_MAX, .device_window_ns = UINT64_MAX,
                          .given = PP_GIVEN_SEQ | PP_GIVEN_WALL | PP_GIVEN_ENQUEUE |
                                   PP_GIVEN_WAIT | PP_GIVEN_WINDOW},
          &r);
  done(check(get(&r, "wall_ns") == UINT64_MAX, "wall") &
       check(get(&r, "enqueue_ns") == UINT64_MAX, "enqueue") &
       check(get(&r, "wait_ns") == UINT64_MAX, "wait") &
       check(get(&r, "device_window_ns") == UINT64_MAX, "window"));

  cs = "fields not given are the probe's";
  pp_begin();
  pp_record_device_window_ns(777);
  pp_end();
  pp_emit(&(pp_emit_args){.seq = 5, .wall_ns = 12345, .given = PP_GIVEN_SEQ}, &r);
  done(check(get(&r, "seq") == 5, "seq") & check(get(&r, "wall_ns") != 12345, "wall measured") &
       check(get(&r, "device_window_ns") == 777, "window recorded"));

  cs = "the older form: PP_AUTO marks automatic fields";
  pp_begin();
  pp_end();
  /* as a caller of 0.1.0 wrote it: positional, no `given` */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
  pp_emit(&(pp_emit_args){42, PP_AUTO, 0, 0, PP_AUTO}, &r);
#pragma GCC diagnostic pop
  done(check(get(&r, "seq") == 42, "seq") & check(get(&r, "enqueue_ns") == 0, "enqueue"));

  /* The example of the 0.1.0 header: only .seq named, the rest left zero by
   * the designated initializer. A zero is the probe's, not a value. */
  cs = "the older form: {.seq = n} after a measured dispatch keeps the measured wall";
  pp_begin();
  pp_ticks t0 = pp_now();
  while (pp_ticks_to_ns(t0, pp_now()) < 100000)
    ;
  pp_end();
  pp_emit(&(pp_emit_args){.seq = 7}, &r);
  done(check(get(&r, "seq") == 7, "seq") &
       check(get(&r, "wall_ns") >= 100000, "wall measured, not 0") &
       check(get(&r, "unattributed_ns") == get(&r, "wall_ns"), "unattributed is the wall"));

  cs = "the older form: {.seq = n} keeps a recorded device window";
  pp_begin();
  pp_record_device_window_ns(777);
  /* a known time, so the measured wall is told from the struct's 0 (with
   * nothing between begin and end it read 0 once in CI) */
  t0 = pp_now();
  while (pp_ticks_to_ns(t0, pp_now()) < 10000)
    ;
  pp_end();
  pp_emit(&(pp_emit_args){.seq = 8}, &r);
  done(check(get(&r, "seq") == 8, "seq") & check(get(&r, "device_window_ns") == 777, "window") &
       check(get(&r, "wall_ns") >= 10000, "wall measured"));

  cs = "the older form: a non-zero value is given, a zero seq is the counter's";
  pp_record r1;
  pp_begin();
  pp_record_device_window_ns(777);
  pp_emit(&(pp_emit_args){.wall_ns = 5000, .device_window_ns = 900, .enqueue_ns = 3}, &r1);
  pp_begin();
  pp_emit(&(pp_emit_args){.seq = 0, .wait_ns = 4}, &r);
  done(check(get(&r1, "wall_ns") == 5000, "wall given") &
       check(get(&r1, "device_window_ns") == 900, "window given") &
       check(get(&r1, "enqueue_ns") == 3, "enqueue given") &
       check(get(&r, "wait_ns") == 4, "wait given") &
       check(get(&r, "seq") == get(&r1, "seq") + 1, "seq from the counter"));
}

static void caches(void) {
  cs = "explicit cache values override the dispatch's events";
  pp_record r;
  pp_begin();
  pp_cache_event(PP_CACHE_PTX, PP_CACHE_HIT);
  pp_cache_event(PP_CACHE_PTX, PP_CACHE_MISS);
  pp_cache_event(PP_CACHE_PTX, PP_CACHE_DISK_HIT);
  pp_emit_args a = {.given = PP_GIVEN_HITS(PP_CACHE_PTX) | PP_GIVEN_MISSES(PP_CACHE_PTX)};
  a.cache_hits[PP_CACHE_PTX] = 5;
  a.cache_misses[PP_CACHE_PTX] = UINT64_MAX;
  pp_emit(&a, &r);
  done(check(get(&r, "ptx_cache_hits") == 5, "hits") &
       check(get(&r, "ptx_cache_misses") == UINT64_MAX, "misses") &
       check(get(&r, "ptx_cache_disk_hits") == 1, "disk hits from the events"));

  cs = "a cache not given keeps its events";
  pp_begin();
  pp_cache_event(PP_CACHE_PTX, PP_CACHE_HIT);
  pp_cache_event(PP_CACHE_PTX, PP_CACHE_HIT);
  a = (pp_emit_args){.given = PP_GIVEN_MISSES(PP_CACHE_PTX) | PP_GIVEN_DISK_HITS(PP_CACHE_PTX)};
  a.cache_misses[PP_CACHE_PTX] = 3;
  a.cache_disk_hits[PP_CACHE_PTX] = 0;
  pp_emit(&a, &r);
  done(check(get(&r, "ptx_cache_hits") == 2, "hits") &
       check(get(&r, "ptx_cache_misses") == 3, "misses") &
       check(get(&r, "ptx_cache_disk_hits") == 0, "disk hits"));
}

/* A thread tags itself "widgets" under the default schema; another thread
 * then declares a schema with a count "widgets"; the first thread switches
 * to it: its records must not carry the name twice. */
static const pp_schema *widget_schema;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;

static void *declarer(void *p) {
  (void)p;
  pthread_mutex_lock(&mu);
  while (stage < 1)
    pthread_cond_wait(&cv, &mu);
  static const char *const phases[] = {"assemble"};
  static const char *const counts[] = {"widgets"};
  char err[256];
  widget_schema = pp_schema_declare(
      &(pp_schema_def){.prefix = "widget-dispatch", .phases = phases, .nphases = 1,
                       .counts = counts, .ncounts = 1},
      err, sizeof err);
  stage = 2;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  return NULL;
}

static void tag_race(void) {
  cs = "a tag that another thread's schema made a field";
  pthread_t t;
  pthread_create(&t, NULL, declarer, NULL);
  int tagged = pp_tag("widgets", "7") == 0 && pp_tag("shape", "cjk") == 0;
  pthread_mutex_lock(&mu);
  stage = 1;
  pthread_cond_broadcast(&cv);
  while (stage < 2)
    pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  pthread_join(t, NULL);
  pp_record r;
  int ok = check(tagged, "tags set") & check(widget_schema != NULL, "schema declared") &
           check(pp_tag("widgets", "8") != 0, "the key is refused from now on");
  if (widget_schema) {
    pp_schema_use(widget_schema);
    pp_begin();
    pp_set_count(0, 3);
    pp_emit(NULL, &r);
    char line[8192];
    pp_format_line(&r, line, sizeof line);
    const char *first = strstr(line, " widgets=");
    ok &= check(first && !strstr(first + 1, " widgets="), "the name once") &
          check(strstr(line, " widgets=3 ") != NULL, "the count kept") &
          check(strstr(line, " shape=cjk") != NULL, "the other tag kept");
    pp_schema_use(NULL);
  }
  pp_tag("shape", NULL);
  done(ok);
}

static void environment(void) {
  cs = "the environment is read at load, and again by pp_enable_from_env";
  int at_load = pp_enabled();
  unsetenv("PHASEPROBE");
  setenv("VYRE_CUDA_DISPATCH_PHASE_PROBE", "0", 1);
  int after_setenv = pp_enabled();
  pp_enable_from_env();
  int reread = pp_enabled();
  setenv("PHASEPROBE", "0", 1);
  pp_enable_from_env();
  int ours_off = pp_enabled();
  setenv("PHASEPROBE", "", 1);
  pp_enable_from_env();
  int ours_empty = pp_enabled();
  unsetenv("PHASEPROBE");
  unsetenv("VYRE_CUDA_DISPATCH_PHASE_PROBE");
  pp_set_enabled(1);
  done(check(!at_load, "off at load (neither variable set)") &
       check(!after_setenv, "a variable set after load changes nothing") &
       check(reread, "the reference's variable enables on its presence, even =0") &
       check(!ours_off, "PHASEPROBE=0 overrides it") &
       check(!ours_empty, "PHASEPROBE= (empty) overrides it"));
}

/* A start that pp_mark cannot have given: counted, nothing charged, and a
 * lap still returns a start for the next phase. */
static void bad_starts(void) {
  cs = "a start that is not a mark is counted and charges nothing";
  pp_stats_t s0, s1;
  pp_record r;
  pp_stats(&s0);
  pp_begin();
  pp_ticks t = pp_lap(PP_PREPARE, 1);             /* before the clock's start */
  pp_charge(PP_PTX, pp_now() + 1000000000000ull); /* minutes ahead */
  pp_charge_since(PP_PTX, 2);
  pp_charge_nested(PP_SUB_PTX_DIGEST, 3);
  pp_charge_remainder(PP_STAGE, 4, PP_PTX);
  pp_ticks u = pp_lap(PP_LAUNCH, t); /* the first lap's return is a start */
  pp_stats(&s1);
  pp_emit(NULL, &r);
  uint64_t counted = s1.bad_starts - s0.bad_starts;
  /* pp_now_ns is nanoseconds: on the TSC, which counts ticks, no start */
  int tsc = pp_clock()->kind == PP_CLOCK_TSC;
  uint64_t ns_counted = 1;
  if (tsc) {
    pp_stats(&s0);
    pp_begin();
    pp_lap(PP_PTX, pp_now_ns());
    pp_stats(&s1);
    pp_emit(NULL, NULL);
    ns_counted = s1.bad_starts - s0.bad_starts;
  }
  done(check(t != 0 && u > t, "laps return starts") &
       check(counted == 5, "five counted") &
       check(get(&r, "prepare_ns") == 0 && get(&r, "ptx_ns") == 0 &&
                 get(&r, "stage_ns") == 0 && get(&r, "sub_ptx_digest_ns") == 0,
             "nothing charged") &
       check(get(&r, "launch_ns") == pp_ticks_to_ns(t, u), "a good start charges") &
       check(ns_counted == 1, "pp_now_ns() refused on the TSC"));
}

static void clock_busy(void) {
  cs = "pp_clock_select refuses while this thread has a dispatch or a scope open";
  pp_clock_kind home = pp_clock()->kind;
  pp_begin();
  errno = 0;
  int rc1 = pp_clock_select(PP_CLOCK_MONOTONIC);
  int e1 = errno;
  pp_emit(NULL, NULL);
  pp_scope sc = pp_scope_open(PP_PTX);
  int rc2 = pp_clock_select(PP_CLOCK_MONOTONIC);
  pp_scope_close(sc);
  pp_emit(&(pp_emit_args){.given = PP_GIVEN_WALL}, NULL);
  int rc3 = pp_clock_select(PP_CLOCK_MONOTONIC);
  pp_clock_select(home);
  done(check(rc1 == -1 && e1 == EBUSY, "refused with EBUSY while a dispatch is open") &
       check(rc2 == -1, "refused while a scope is open") &
       check(rc3 == 0, "accepted once both are gone"));
}

int main(void) {
  environment(); /* first: run with neither variable set */
  pp_set_enabled(1);
  pp_sink_fd(-1);
  pp_store_enable(0);
  reference_calls();
  mask();
  caches();
  tag_race();
  bad_starts();
  clock_busy();
  return failures ? 1 : 0;
}
