/*
 * ptx_fuzz.c: libFuzzer target for the PTX scanner (make fuzz).
 *
 * Each input is scanned twice (default options; a short line limit with
 * several markers) and the results are held to invariants that a correct
 * scan keeps on any bytes: the line count equals a plain newline count,
 * marker counts equal a naive search, errors and bodies point inside the
 * text, a complete result has no errors. A broken invariant traps, which
 * libFuzzer reports as a crash; AddressSanitizer catches any read outside
 * the input (libFuzzer passes a buffer of exactly the input's size).
 */
#include "pp_ptx.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The oracles below are not what is being fuzzed: no coverage tracing. */
#if defined(__clang__)
#define ORACLE __attribute__((no_sanitize("coverage")))
#else
#define ORACLE
#endif

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c))                                                                  \
      __builtin_trap();                                                        \
  } while (0)

ORACLE static uint64_t naive_lines(const char *t, size_t n) {
  uint64_t c = 0;
  for (size_t i = 0; i < n; i++)
    c += t[i] == '\n';
  return c + (n > 0 && t[n - 1] != '\n');
}

/* Byte loops, not memcmp: the sanitizers' interceptors would dominate. */
ORACLE static int same(const char *a, const char *b, size_t l) {
  for (size_t i = 0; i < l; i++)
    if (a[i] != b[i])
      return 0;
  return 1;
}

ORACLE static uint64_t naive_count(const char *t, size_t n, const char *m) {
  size_t l = 0;
  while (m[l])
    l++;
  uint64_t c = 0;
  for (size_t i = 0; l && i + l <= n;) {
    if (t[i] == m[0] && same(t + i, m, l)) {
      c++;
      i += l;
    } else {
      i++;
    }
  }
  return c;
}

static void check_func(const pp_ptx_func *f, size_t size) {
  CHECK(f->name != NULL);
  CHECK(f->body_begin <= size && f->body_end <= size);
  CHECK(!f->defined || f->body_begin <= f->body_end);
  CHECK(f->atomics_global <= f->atomics);
  CHECK(f->grid_syncs <= f->atomics);
  CHECK(f->bar_sync <= f->instructions && f->atomics <= f->instructions);
  for (size_t i = 0; i < f->nparams; i++) {
    CHECK(f->params[i].name != NULL);
    CHECK(memchr(f->params[i].type, 0, sizeof f->params[i].type) != NULL);
  }
  for (size_t i = 0; i < f->nvars; i++)
    CHECK(f->vars[i].name != NULL);
}

static void scan_and_check(const char *t, size_t size, const pp_ptx_opts *o) {
  pp_ptx_result r;
  int rc = pp_ptx_scan(t, size, o, &r);
  CHECK(rc == 0 || rc == 1);
  CHECK((rc == 1) == (r.partial != 0));
  CHECK(r.partial == (r.nerrors > 0));
  CHECK(r.bytes == size);
  CHECK(r.lines == naive_lines(t, size));
  CHECK(r.nerrors <= PP_PTX_MAX_ERRORS);
  for (size_t i = 0; i < r.nerrors; i++) {
    const pp_ptx_error *e = &r.errors[i];
    CHECK(memchr(e->what, 0, sizeof e->what) != NULL && e->what[0]);
    CHECK(e->line >= 1 && e->line <= r.lines + 1);
    CHECK(e->col >= 1 && e->offset <= size);
  }
  for (size_t i = 0; i < r.nmarkers; i++)
    CHECK(r.marker_count[i] == naive_count(t, size, r.markers[i]));
  uint64_t in_bodies = 0;
  for (size_t i = 0; i < r.nentries; i++) {
    check_func(&r.entries[i], size);
    in_bodies += r.entries[i].markers;
  }
  for (size_t i = 0; i < r.nfuncs; i++) {
    check_func(&r.funcs[i], size);
    in_bodies += r.funcs[i].markers;
  }
  CHECK(r.nmarkers == 0 || in_bodies <= r.marker_count[0]);
  for (size_t i = 0; i < r.nglobals; i++)
    CHECK(r.globals[i].name != NULL);
  CHECK(r.digest == pp_ptx_digest(t, size));
  pp_ptx_result_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *t = (const char *)data;
  scan_and_check(t, size, NULL);
  static const char *const markers[] = {"grid.sync barrier #", "//", "a",
                                        "}\n{"};
  pp_ptx_opts o = {markers, 4, "x", 48};
  scan_and_check(t, size, &o);
  return 0;
}
