/*
 * scopes_helper.c: the nesting rule through the C API (PP_MEASURE,
 * pp_scope_open/close), for spec/scopes_spec.lua. Each case spins known
 * times (measured on the probe clock around each spin) and checks every
 * phase's charge against what it ran, within the dispatch's own time outside
 * the spins (a double charge adds a whole spin). Prints "ok CASE" or
 * "FAIL CASE: ..." per case; exits non-zero on a failure.
 *
 *   scopes_helper
 */
#include "phaseprobe.h"
#include "check_cases.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;

static uint64_t spin(uint64_t ns) {
  uint64_t t0 = pp_now_ns(), t;
  while ((t = pp_now_ns()) - t0 < ns) {
  }
  return t - t0;
}

static uint64_t get(const pp_record *r, const char *f) {
  return pp_record_get(r, f, NULL);
}

/* A FAIL line unless got is within [want - 64, want + slack]. */
static void near(const char *cs, const char *what, uint64_t got, uint64_t want,
                 uint64_t slack) {
  if (got + 64 >= want && got <= want + slack)
    return;
  printf("FAIL %s: %s charged %llu ns, ran %llu ns (slack %llu ns)\n", cs, what,
         (unsigned long long)got, (unsigned long long)want,
         (unsigned long long)slack);
  failures++;
}

/* A FAIL line unless cond holds. */
static void check(const char *cs, int cond, const char *what) {
  if (!cond) {
    printf("FAIL %s: %s\n", cs, what);
    failures++;
  }
}

static uint64_t slack_of(const pp_record *r, uint64_t spun) {
  uint64_t w = get(r, "wall_ns");
  return w > spun ? w - spun : 0;
}

static void partition(const char *cs, const pp_record *r) {
  check(cs, get(r, "named_host_ns") <= get(r, "wall_ns"), "named_host_ns <= wall_ns");
  check(cs, get(r, "named_host_ns") + get(r, "unattributed_ns") == get(r, "wall_ns"),
        "named + unattributed == wall");
}

static void nested_measure(const char *cs) {
  uint64_t a = 0, b = 0, c = 0;
  pp_record r;
  pp_begin();
  PP_MEASURE(PP_PREPARE, {
    a = spin(300000);
    PP_MEASURE(PP_PTX, b = spin(400000));
    c = spin(200000);
  });
  pp_end();
  pp_emit(NULL, &r);
  uint64_t sl = slack_of(&r, a + b + c);
  near(cs, "prepare", get(&r, "prepare_ns"), a + c, sl);
  near(cs, "ptx", get(&r, "ptx_ns"), b, sl);
  partition(cs, &r);
}

static void out_of_order(const char *cs) {
  pp_record r;
  pp_begin();
  pp_scope s1 = pp_scope_open(PP_PREPARE);
  uint64_t a = spin(200000);
  pp_scope s2 = pp_scope_open(PP_PTX);
  uint64_t b = spin(300000);
  pp_scope_close(s1); /* below the running scope: removed, ptx runs on */
  uint64_t c = spin(250000);
  pp_scope_close(s2);
  pp_scope_close(s1); /* a second close of a closed scope: nothing */
  uint64_t d = spin(100000);
  pp_end();
  pp_emit(NULL, &r);
  uint64_t sl = slack_of(&r, a + b + c + d);
  near(cs, "prepare", get(&r, "prepare_ns"), a, sl);
  near(cs, "ptx", get(&r, "ptx_ns"), b + c, sl);
  check(cs, get(&r, "unattributed_ns") + 64 >= d, "unattributed holds the unscoped spin");
  partition(cs, &r);
}

static pp_scope other_scope;
static void *other_thread(void *p) {
  (void)p;
  pp_begin();
  other_scope = pp_scope_open(PP_STAGE);
  return NULL;
}

static void other_threads_scope(const char *cs) {
  pthread_t t;
  pthread_create(&t, NULL, other_thread, NULL);
  pthread_join(t, NULL);
  pp_record r;
  pp_begin();
  pp_scope s = pp_scope_open(PP_LEASE);
  uint64_t a = spin(200000);
  pp_scope_close(other_scope); /* not this thread's: ignored */
  uint64_t b = spin(200000);
  pp_scope_close(s);
  pp_end();
  pp_emit(NULL, &r);
  check(cs, other_scope != 0 && other_scope != s, "scopes of two threads differ");
  near(cs, "lease", get(&r, "lease_ns"), a + b, slack_of(&r, a + b));
  check(cs, get(&r, "stage_ns") == 0, "stage_ns == 0");
}

static void end_settles(const char *cs) {
  pp_record r;
  pp_begin();
  pp_scope s = pp_scope_open(PP_RELEASE);
  uint64_t a = spin(200000);
  pp_end();
  uint64_t b = spin(200000);
  pp_scope late = pp_scope_open(PP_READBACK);
  spin(100000);
  pp_scope_close(late);
  pp_scope_close(s);
  pp_emit(NULL, &r);
  near(cs, "release", get(&r, "release_ns"), a, slack_of(&r, a));
  check(cs, late == 0, "no scope opens after pp_end");
  check(cs, get(&r, "readback_ns") == 0, "readback_ns == 0");
  check(cs, get(&r, "wall_ns") < a + b, "wall_ns ends at pp_end");
  partition(cs, &r);
}

static void emit_settles(const char *cs) {
  pp_record r, r2;
  pp_begin();
  pp_scope s = pp_scope_open(PP_MODKEY);
  uint64_t a = spin(200000);
  pp_emit(NULL, &r);
  pp_begin();
  uint64_t b = spin(100000);
  pp_scope_close(s); /* its dispatch is gone: charges nothing */
  pp_end();
  pp_emit(NULL, &r2);
  near(cs, "modkey", get(&r, "modkey_ns"), a, slack_of(&r, a));
  check(cs, get(&r2, "modkey_ns") == 0, "the next record has no modkey");
  check(cs, get(&r2, "wall_ns") + 64 >= b, "the next record's wall");
  partition(cs, &r);
}

static void depth_limit(const char *cs) {
  pp_scope s[PP_SCOPE_DEPTH + 1];
  pp_record r;
  pp_begin();
  for (int i = 0; i < PP_SCOPE_DEPTH - 1; i++)
    s[i] = pp_scope_open(PP_PREPARE);
  s[PP_SCOPE_DEPTH - 1] = pp_scope_open(PP_PTX);
  s[PP_SCOPE_DEPTH] = pp_scope_open(PP_STAGE); /* one too many */
  uint64_t a = spin(200000);
  for (int i = PP_SCOPE_DEPTH; i >= 0; i--)
    pp_scope_close(s[i]);
  pp_end();
  pp_emit(NULL, &r);
  check(cs, s[PP_SCOPE_DEPTH] == 0, "the extra scope is 0");
  near(cs, "ptx", get(&r, "ptx_ns"), a, slack_of(&r, a));
  check(cs, get(&r, "stage_ns") == 0, "stage_ns == 0");
  partition(cs, &r);
}

static void disabled_between(const char *cs) {
  pp_record r;
  pp_begin();
  pp_scope s1 = pp_scope_open(PP_PREPARE);
  pp_scope s2 = pp_scope_open(PP_PTX);
  pp_set_enabled(0);
  pp_scope_close(s2); /* still leaves the stack */
  pp_set_enabled(1);
  uint64_t a = spin(200000);
  pp_scope_close(s1);
  pp_end();
  pp_emit(NULL, &r);
  near(cs, "prepare", get(&r, "prepare_ns"), a, slack_of(&r, a));
}

int main(void) {
  pp_set_enabled(1);
  pp_sink_fd(-1);
  pp_store_enable(0);
  static const check_case cases[] = {
      {nested_measure, "nested PP_MEASURE"},
      {out_of_order, "out-of-order close"},
      {other_threads_scope, "another thread's scope"},
      {end_settles, "pp_end closes open scopes"},
      {emit_settles, "pp_emit closes open scopes"},
      {depth_limit, "more scopes than PP_SCOPE_DEPTH"},
      {disabled_between, "disabled between open and close"},
  };
  CHECK_CASES_RUN(cases, failures);
  return failures ? 1 : 0;
}
