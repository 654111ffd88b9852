/*
 * ptx_fuzz.c: libFuzzer target for the PTX scanner (make fuzz).
 *
 * Each input is scanned twice (default options; a short line limit with
 * several markers) and the results are held to invariants that a correct
 * scan keeps on any bytes: the line count equals a plain newline count,
 * marker counts equal a naive search, errors and bodies point inside the
 * text, a complete result has no errors. A broken invariant traps, which
 * libFuzzer reports as a crash; AddressSanitizer catches any read outside
 * the input (libFuzzer passes a buffer of exactly the input's size). The
 * scan that publishes entries as it goes (pp_ptx_scan_feed, what pp.ptx.scan
 * uses), here with its statement loop reading every line, must give the
 * same functions as pp_ptx_scan with its faster reader of simple lines, and
 * an entry must not change once published.
 */
#include "pp_ptx.h"
#include "ptx_internal.h"

#include <stdint.h>
#include <stdlib.h>
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

/* ---- the scan read while it runs (pp_ptx_scan_feed) ---------------------- */
ORACLE static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211u;
  return h;
}

ORACLE static uint64_t fnv_str(uint64_t h, const char *s) {
  size_t n = 0;
  while (s[n])
    n++;
  return fnv(h, s, n + 1);
}

/* h mixed with each value in turn, each as a uint64_t. */
#define MIX(h, ...)                                                            \
  do {                                                                         \
    const uint64_t v_[] = {__VA_ARGS__};                                       \
    h = fnv(h, v_, sizeof v_);                                                 \
  } while (0)

/* Everything a function holds, field by field (no padding bytes). */
ORACLE static uint64_t fingerprint(const pp_ptx_func *f) {
  uint64_t h = fnv_str(14695981039346656037u, f->name);
  MIX(h, f->visible, f->external, f->weak, f->defined, f->line, f->col,
      f->body_begin, f->body_end);
  for (int i = 0; i < 3; i++)
    MIX(h, f->maxntid[i], f->reqntid[i]);
  MIX(h, f->minnctapersm, f->maxnreg, f->has_maxntid, f->has_reqntid,
      f->has_minnctapersm, f->has_maxnreg, f->instructions);
  for (int i = 0; i < PP_PTX_NREG; i++)
    MIX(h, f->regs[i]);
  MIX(h, f->bar_sync, f->atomics, f->atomics_global, f->grid_syncs, f->markers,
      f->shared_bytes, f->local_bytes, f->nparams);
  for (size_t i = 0; i < f->nparams; i++) {
    const pp_ptx_param *p = &f->params[i];
    h = fnv_str(fnv_str(h, p->name), p->type);
    MIX(h, p->size, p->align, p->array, p->offset, p->ptr);
  }
  MIX(h, f->nvars);
  for (size_t i = 0; i < f->nvars; i++) {
    const pp_ptx_var *v = &f->vars[i];
    h = fnv_str(fnv_str(h, v->name), v->type);
    MIX(h, v->space, v->size, v->align, v->array, v->external, v->visible,
        v->line);
  }
  return h;
}

typedef struct {
  uint64_t *fp; /* of each entry when published */
  size_t n, calls;
} published_log;

/* A published entry is final: its fingerprint now must hold at the end. */
ORACLE static void on_published(pp_ptx_feed *fd, size_t ready) {
  published_log *log = fd->ud;
  CHECK(ready > log->n);
  log->fp = realloc(log->fp, ready * sizeof *log->fp);
  CHECK(log->fp != NULL);
  for (size_t i = log->n; i < ready; i++)
    log->fp[i] = fingerprint(pp_ptx_feed_func(fd, 0, i));
  log->n = ready;
  log->calls++;
}

/* The feed's scan gives what pp_ptx_scan gives, and what it published
 * early did not change after. */
static void feed_and_check(const char *t, size_t size, const pp_ptx_opts *o) {
  pp_ptx_result whole, fed;
  int rc = pp_ptx_scan(t, size, o, &whole);
  pp_ptx_feed fd;
  memset(&fd, 0, sizeof fd);
  pthread_mutex_init(&fd.mu, NULL);
  pthread_cond_init(&fd.cv, NULL);
  published_log log = {NULL, 0, 0};
  fd.published = on_published;
  fd.ud = &log;
  fd.plain_lines = 1; /* and pp_ptx_scan the faster line reader */
  CHECK(pp_ptx_scan_feed(t, size, o, &fed, &fd) == rc);
  CHECK(fd.rc == rc && atomic_load(&fd.done));
  CHECK(atomic_load(&fd.ready) == fed.nentries);
  CHECK(fed.entries == NULL && fed.funcs == NULL);
  CHECK(fed.nentries == whole.nentries && fed.nfuncs == whole.nfuncs);
  CHECK(fed.lines == whole.lines && fed.nerrors == whole.nerrors);
  CHECK(fed.grid_sync == whole.grid_sync && fed.digest == whole.digest);
  for (size_t i = 0; i < fed.nmarkers; i++)
    CHECK(fed.marker_count[i] == whole.marker_count[i]);
  for (size_t i = 0; i < fed.nentries; i++) {
    uint64_t h = fingerprint(pp_ptx_feed_func(&fd, 0, i));
    CHECK(h == fingerprint(&whole.entries[i]));
    if (i < log.n)
      CHECK(h == log.fp[i]);
  }
  for (size_t i = 0; i < fed.nfuncs; i++)
    CHECK(fingerprint(pp_ptx_feed_func(&fd, 1, i)) ==
          fingerprint(&whole.funcs[i]));
  free(log.fp);
  pthread_mutex_destroy(&fd.mu);
  pthread_cond_destroy(&fd.cv);
  pp_ptx_result_free(&fed);
  pp_ptx_result_free(&whole);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *t = (const char *)data;
  scan_and_check(t, size, NULL);
  feed_and_check(t, size, NULL);
  static const char *const markers[] = {"grid.sync barrier #", "//", "a",
                                        "}\n{"};
  pp_ptx_opts o = {markers, 4, "x", 48};
  scan_and_check(t, size, &o);
  feed_and_check(t, size, &o);
  return 0;
}
