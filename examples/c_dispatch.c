/*
 * c_dispatch.c: a native runtime's dispatch loop instrumented with the C API.
 *
 * Each "dispatch" walks a program of `nodes` nodes twice (digest and
 * fingerprint, nested inside the ptx phase) and does a little fixed work in
 * the other phases, charging adjacent phases with pp_lap (one clock read per
 * boundary). Run with PHASEPROBE=1; one line per dispatch goes to stderr.
 *
 *   PHASEPROBE=1 build/c_dispatch [dispatches] [nodes]
 */
#include "phaseprobe.h"

#include <stdio.h>
#include <stdlib.h>

static volatile uint64_t sink;

static void walk(uint64_t nodes) {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t i = 0; i < nodes; i++)
    h = (h ^ i) * 1099511628211ull;
  sink = h;
}

int main(int argc, char **argv) {
  int dispatches = argc > 1 ? atoi(argv[1]) : 4;
  uint64_t nodes = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000;
  pp_schema_use(pp_schema_default());
  for (int d = 0; d < dispatches; d++) {
    pp_begin();
    pp_ticks t = pp_mark();
    walk(64); /* prepare: fixed */
    t = pp_lap(PP_PREPARE, t);
    PP_MEASURE_NESTED(PP_SUB_PTX_DIGEST, walk(nodes));
    PP_MEASURE_NESTED(PP_SUB_PTX_VSA, walk(nodes));
    pp_cache_event(PP_CACHE_PTX, d == 0 ? PP_CACHE_MISS : PP_CACHE_HIT);
    t = pp_lap(PP_PTX, t);
    for (int p = PP_MODKEY; p <= PP_READBACK; p++) {
      walk(32);
      t = pp_lap(p, t);
    }
    pp_set_count(PP_COUNT_NODES, nodes);
    pp_set_count(PP_COUNT_BUFFERS, 3);
    pp_set_count(PP_COUNT_BINDINGS, 3);
    pp_set_count(PP_COUNT_FIXPOINT, 1);
    pp_set_count(PP_COUNT_GRID_BLOCKS, 132);
    pp_end();
    pp_emit(&(pp_emit_args){.seq = (uint64_t)d, .given = PP_GIVEN_SEQ}, NULL);
  }
  pp_stats_t st;
  pp_stats(&st);
  printf("dispatches=%d emitted=%llu enabled=%d\n", dispatches,
         (unsigned long long)st.emitted, pp_enabled());
  return 0;
}
