/*
 * script_probe.c: drives phaseprobe's C API with the script that
 * spec/helpers/reference/driver.rs feeds the reference probe, and prints
 * each emitted record's line on standard output (spec/reference_spec.lua
 * compares them with the reference's). One call per line:
 *
 *     add PHASE NS             pp_add_ns
 *     nested REGION NS         pp_add_nested_ns (the spec gives the time
 *                              the reference measured for that region)
 *     counts NODES PTX_BYTES BUFFERS BINDINGS FIXPOINT GX GY GZ
 *                              pp_set_count; grid_blocks = GX*GY*GZ,
 *                              saturating, as the reference computes it
 *     kernel NS                pp_record_kernel_ns
 *     emit SEQ WALL ENQUEUE WAIT WINDOW|- HITS MISSES
 *                              pp_emit with those values given
 *
 * No pp_begin: the reference has none.
 */
#include "phaseprobe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t num(const char *s) {
  if (!s) {
    fprintf(stderr, "script_probe: missing number\n");
    exit(2);
  }
  char *end;
  uint64_t v = strtoull(s, &end, 10);
  if (*end) {
    fprintf(stderr, "script_probe: not a u64: %s\n", s);
    exit(2);
  }
  return v;
}

static uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

int main(void) {
  pp_set_enabled(1);
  pp_sink_fd(-1);
  pp_store_enable(0);
  const pp_schema *s = pp_schema_default();
  char line[1024];
  while (fgets(line, sizeof line, stdin)) {
    char *w[12] = {0};
    int n = 0;
    for (char *t = strtok(line, " \t\n"); t && n < 12; t = strtok(NULL, " \t\n"))
      w[n++] = t;
    if (n == 0)
      continue;
    if (strcmp(w[0], "add") == 0) {
      pp_add_ns(pp_schema_phase_index(s, w[1]), num(w[2]));
    } else if (strcmp(w[0], "nested") == 0) {
      pp_add_nested_ns(pp_schema_nested_index(s, w[1]), num(w[2]));
    } else if (strcmp(w[0], "counts") == 0) {
      pp_set_count(PP_COUNT_NODES, num(w[1]));
      pp_set_count(PP_COUNT_PTX_BYTES, num(w[2]));
      pp_set_count(PP_COUNT_BUFFERS, num(w[3]));
      pp_set_count(PP_COUNT_BINDINGS, num(w[4]));
      pp_set_count(PP_COUNT_FIXPOINT, num(w[5]));
      pp_set_count(PP_COUNT_GRID_BLOCKS,
                   sat_mul(sat_mul(num(w[6]), num(w[7])), num(w[8])));
    } else if (strcmp(w[0], "kernel") == 0) {
      pp_record_kernel_ns(num(w[1]));
    } else if (strcmp(w[0], "emit") == 0) {
      pp_emit_args a = {.seq = num(w[1]), .wall_ns = num(w[2]),
                        .enqueue_ns = num(w[3]), .wait_ns = num(w[4]),
                        .given = PP_GIVEN_SEQ | PP_GIVEN_WALL | PP_GIVEN_ENQUEUE |
                                 PP_GIVEN_WAIT | PP_GIVEN_HITS(PP_CACHE_PTX) |
                                 PP_GIVEN_MISSES(PP_CACHE_PTX)};
      if (w[5] && strcmp(w[5], "-") != 0) {
        a.device_window_ns = num(w[5]);
        a.given |= PP_GIVEN_WINDOW;
      }
      a.cache_hits[PP_CACHE_PTX] = num(w[6]);
      a.cache_misses[PP_CACHE_PTX] = num(w[7]);
      pp_record r;
      if (pp_emit(&a, &r) != 0) {
        fprintf(stderr, "script_probe: pp_emit failed\n");
        return 1;
      }
      char out[8192];
      pp_format_line(&r, out, sizeof out);
      puts(out);
    } else {
      fprintf(stderr, "script_probe: unknown call %s\n", w[0]);
      return 2;
    }
  }
  return 0;
}
