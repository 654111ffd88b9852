/*
 * parse_fuzz.c: libFuzzer target for the record-line parser.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined $(find csrc -mindepth 1 -type d -printf '-I%p ') fuzz/parse_fuzz.c \
 *     $(find csrc -name '*.c' ! -name 'lua_*') -lm -ldl -lpthread -o parse_fuzz
 *   ./parse_fuzz fuzz-out/parse fuzz/corpus/parse
 *
 * Input: one mode byte, then log text. Mode bit 0: list mode (prefixes
 * "vyre-cuda-dispatch-phase" and "p") instead of auto mode; bits 1-3: feed
 * in chunks of 7 * k bytes (0: all at once); bit 4: feed line by line
 * through pp_parser_line instead.
 *
 * One parser per mode serves every input (pp_parser_reset between them),
 * as one per input would spend most of the run on its setup.
 *
 * Checks, beyond the sanitizers: every line is counted once (total ==
 * parsed + rejected + other), the store holds exactly the parsed records,
 * error entries name real lines, and every stored record prints as a line
 * that parses back as one record with the same fields, which prints as the
 * same line (each value keeps its text, whatever its column held).
 */
#include "pp_parse.h"

#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      __builtin_trap();                                                        \
  } while (0)

static const char *const prefixes[] = {"vyre-cuda-dispatch-phase", "p"};

static void feed(pp_parser *p, const char *data, size_t size, unsigned mode) {
  pp_parser_source(p, "fuzz");
  if (mode & 16) {
    size_t off = 0;
    while (off <= size) {
      const char *nl = memchr(data + off, '\n', size - off);
      size_t end = nl ? (size_t)(nl - data) : size;
      if (end > off || nl)
        pp_parser_line(p, data + off, end - off);
      if (!nl)
        break;
      off = end + 1;
    }
  } else {
    size_t chunk = ((mode >> 1) & 7) * 7;
    if (chunk == 0)
      chunk = size ? size : 1;
    for (size_t off = 0; off < size; off += chunk)
      pp_parser_feed(p, data + off, size - off < chunk ? size - off : chunk);
  }
  pp_parser_end(p);
}

/* A parser for a mode: odd modes read only the listed prefixes. */
static pp_parser *mode_parser(unsigned mode, size_t max_errors) {
  pp_parse_opts o = {0};
  if (mode & 1) {
    o.prefixes = prefixes;
    o.nprefixes = 2;
  }
  o.max_errors = max_errors;
  pp_parser *p = pp_parser_new(&o, NULL, 0);
  CHECK(p);
  return p;
}

/* Parsers for the round trip, one per mode, kept across inputs (made once:
 * setting one up costs more than most inputs). */
static pp_parser *checker[2];

/* A stored record, printed, parses back as one record of the same width. */
static void round_trip(const pp_cols *c, size_t row, unsigned mode) {
  char buf[8192];
  size_t n = pp_cols_format(c, row, buf, sizeof buf);
  if (n >= sizeof buf)
    return;
  pp_parser **q = &checker[mode & 1];
  if (!*q)
    *q = mode_parser(mode, 0);
  const pp_parse_stats *st = pp_parser_stats(*q);
  uint64_t total = st->total, parsed = st->parsed;
  pp_parser_line(*q, buf, n);
  CHECK(st->total == total + 1 && st->parsed == parsed + 1);
  pp_cols *back = pp_parser_take(*q);
  CHECK(back && pp_cols_count(back) == 1);
  size_t L = pp_cols_layout(c, row);
  CHECK(pp_cols_layout_nfields(back, pp_cols_layout(back, 0)) ==
        pp_cols_layout_nfields(c, L));
  /* and prints as the same line: every value keeps its text */
  char again[8192];
  size_t m = pp_cols_format(back, 0, again, sizeof again);
  CHECK(m == n && memcmp(again, buf, n) == 0);
  pp_cols_free(back);
}

static void queries(const pp_cols *c) {
  size_t nf = pp_cols_nfields(c);
  int first = -1, second = -1;
  for (size_t i = 0; i < nf; i++) {
    size_t col = pp_cols_field_column(c, i);
    pp_summary s;
    CHECK(pp_cols_summary(c, col, NULL, 0, &s) == 0);
    CHECK(s.count <= pp_cols_count(c));
    pp_group *g;
    size_t ng;
    CHECK(pp_cols_group(c, col, NULL, 0, &g, &ng) == 0);
    size_t total = 0;
    for (size_t k = 0; k < ng; k++)
      total += g[k].n;
    CHECK(total == pp_cols_count(c));
    pp_groups_free(g, ng);
    pp_val_kind k = pp_cols_kind(c, col);
    if (k == PP_VAL_INT || k == PP_VAL_NUM) {
      if (first < 0)
        first = (int)col;
      else if (second < 0)
        second = (int)col;
    }
  }
  if (first >= 0 && second >= 0) {
    pp_fit f;
    CHECK(pp_cols_fit(c, (size_t)first, (size_t)second, NULL, 0, &f) == 0);
    size_t xs[1] = {(size_t)first}, ys[1] = {(size_t)second};
    CHECK(pp_cols_fit_many(c, xs, 1, ys, 1, NULL, 0, &f) == 0);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  unsigned mode = data[0];
  const char *text = (const char *)data + 1;
  size--;
  /* one parser per mode, reset for each input (setting one up costs more
   * than most inputs) */
  static pp_parser *parsers[2];
  pp_parser **pp = &parsers[mode & 1];
  if (!*pp)
    *pp = mode_parser(mode, 4);
  pp_parser *p = *pp;
  pp_parser_reset(p);
  feed(p, text, size, mode);
  const pp_parse_stats *st = pp_parser_stats(p);
  CHECK(st->total == st->parsed + st->rejected + st->other);
  CHECK(st->bytes >= size);
  size_t ne = pp_parser_nerrors(p);
  CHECK(ne <= 4 && ne + st->errors_dropped == st->rejected);
  for (size_t i = 0; i < ne; i++) {
    const pp_parse_error *e = pp_parser_error(p, i);
    CHECK(e->line >= 1 && e->line <= st->total && e->what && e->what[0]);
  }
  pp_cols *c = pp_parser_take(p);
  CHECK(c && pp_cols_count(c) == st->parsed);
  for (size_t r = 0; r < pp_cols_count(c) && r < 16; r++)
    round_trip(c, r, mode);
  queries(c);
  pp_cols_free(c);
  return 0;
}
