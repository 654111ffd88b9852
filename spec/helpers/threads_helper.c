/*
 * threads_helper.c: N threads charge at once through the C API; each thread
 * charges values derived from its own index, so a record holding another
 * thread's charge, or a lost/duplicated record, is detected exactly.
 *
 *   threads_helper THREADS DISPATCHES [STORE_CAPACITY] [first|last]
 * With "last" the store keeps the last records: each thread's stored
 * records must then be the end of its own sequence, contiguous. Prints "ok threads=.. records=.. stored=.. dropped=.. emitted=.." or
 * "FAIL ..." and exits non-zero.
 */
#include "phaseprobe.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int index;
  long dispatches;
  long bad;
  uint64_t tid;
} worker;

static void *run(void *p) {
  worker *w = p;
  w->tid = pp_thread_id();
  for (long d = 0; d < w->dispatches; d++) {
    pp_begin();
    uint64_t base = (uint64_t)w->index * 1000;
    for (int ph = 0; ph < 9; ph++)
      pp_add_ns(ph, base + (uint64_t)ph);
    pp_add_nested_ns(PP_SUB_PTX_DIGEST, base + 100);
    pp_set_count(PP_COUNT_NODES, (uint64_t)w->index);
    pp_set_count(PP_COUNT_GRID_BLOCKS, (uint64_t)d);
    pp_record r;
    pp_emit(&(pp_emit_args){.seq = (uint64_t)d, .wall_ns = base * 20,
                            .given = PP_GIVEN_SEQ | PP_GIVEN_WALL | PP_GIVEN_ENQUEUE |
                                     PP_GIVEN_WAIT | PP_GIVEN_WINDOW},
            &r);
    int ok = pp_record_get(&r, "nodes", NULL) == (uint64_t)w->index &&
             pp_record_get(&r, "grid_blocks", NULL) == (uint64_t)d &&
             pp_record_get(&r, "prepare_ns", NULL) == base &&
             pp_record_get(&r, "readback_ns", NULL) == base + 8 &&
             pp_record_get(&r, "sub_ptx_digest_ns", NULL) == base + 100 &&
             pp_record_get(&r, "named_host_ns", NULL) == 9 * base + 36 &&
             pp_record_get(&r, "tid", NULL) == w->tid;
    if (!ok)
      w->bad++;
  }
  return NULL;
}

int main(int argc, char **argv) {
  int nthreads = argc > 1 ? atoi(argv[1]) : 8;
  long dispatches = argc > 2 ? atol(argv[2]) : 1000;
  size_t cap = argc > 3 ? strtoull(argv[3], NULL, 10) : 100000;
  int last = argc > 4 && strcmp(argv[4], "last") == 0;
  pp_set_enabled(1);
  pp_sink_fd(-1);
  pp_store_set_capacity(cap);
  pp_store_set_keep(last ? PP_KEEP_LAST : PP_KEEP_FIRST);
  pthread_t th[64];
  worker w[64];
  if (nthreads > 64)
    nthreads = 64;
  for (int i = 0; i < nthreads; i++) {
    w[i] = (worker){.index = i + 1, .dispatches = dispatches};
    pthread_create(&th[i], NULL, run, &w[i]);
  }
  long bad = 0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(th[i], NULL);
    bad += w[i].bad;
  }
  /* every stored record must belong to a thread and be that thread's */
  long per[65] = {0};
  long next_d[65]; /* "last": the dispatch number each thread must show next */
  for (int i = 0; i < 65; i++)
    next_d[i] = -1;
  pp_record r;
  size_t n = pp_store_count();
  for (size_t i = 0; i < n; i++) {
    pp_store_get(i, &r);
    uint64_t idx = pp_record_get(&r, "nodes", NULL);
    uint64_t base = idx * 1000;
    if (idx < 1 || idx > (uint64_t)nthreads ||
        pp_record_get(&r, "tid", NULL) != w[idx - 1].tid ||
        pp_record_get(&r, "launch_ns", NULL) != base + 6) {
      bad++;
      continue;
    }
    per[idx]++;
    long d = (long)pp_record_get(&r, "grid_blocks", NULL);
    if (last && next_d[idx] >= 0 && d != next_d[idx])
      bad++;
    next_d[idx] = d + 1;
  }
  if (last)
    for (int i = 1; i <= nthreads; i++)
      if (per[i] && next_d[i] != dispatches)
        bad++; /* a thread's kept records must end with its last one */
  pp_stats_t st;
  pp_stats(&st);
  uint64_t expect = (uint64_t)nthreads * (uint64_t)dispatches;
  int fail = bad != 0 || st.emitted != expect ||
             st.stored + st.dropped != st.emitted;
  if (cap >= expect)
    for (int i = 1; i <= nthreads; i++)
      if (per[i] != dispatches)
        fail = 1;
  printf("%s threads=%d records=%llu stored=%llu dropped=%llu emitted=%llu "
         "bad=%ld\n",
         fail ? "FAIL" : "ok", nthreads, (unsigned long long)expect,
         (unsigned long long)st.stored, (unsigned long long)st.dropped,
         (unsigned long long)st.emitted, bad);
  return fail;
}
