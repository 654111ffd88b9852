/* pp_parse_internal.h: the parser's state, shared by parse.c (the line
 * parser: its character tables and hot path), parse_feed.c (sources,
 * feeding, results) and parse_opts.c (the parser built from its options and
 * freed); not installed.
 *
 * The options (pp_parse_opts) become the parser's prefixes, known schemas
 * and strict (unsigned integer) names once, in parse_opts.c; every line read
 * afterwards goes through parse.c, which only reads them. The character
 * tables stay static in parse.c, beside the loops that read them: the setup
 * sees them only through pp_parse_classes_once and pp_parse_name_ok. */
#ifndef PP_PARSE_INTERNAL_H
#define PP_PARSE_INTERNAL_H

#include "pp_cols_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 63

typedef struct {
  const char *name, *val;
  uint32_t nlen, vlen;
  int32_t col; /* existing column, or -1 for a name new to the store */
  uint32_t column;
  uint8_t kind, neg, strict;
  uint64_t u;
  double d;
} tok_t;

typedef struct {
  char *prefix;
  size_t plen;
  char **req;
  size_t nreq;
} known_t;

typedef struct {
  char *name;
  uint32_t str_id; /* in the current store; UINT32_MAX: not interned yet */
  uint64_t lineno; /* its last line read, while another source is read */
  pp_parse_stats st;
} source_t;

struct pp_parser {
  pp_cols *cols;
  int oom;
  char **prefixes;
  size_t *plens, nprefixes;
  known_t *known;
  size_t nknown;
  char **strict;
  size_t nstrict;
  size_t max_errors;
  uint64_t max_bytes; /* bytes one source may bring */
  source_t *src;
  size_t nsrc, src_alloc;
  size_t cur;      /* the source being read (the last, unless resumed) */
  uint64_t lineno; /* its last line read */
  pp_parse_stats st;
  char *carry;
  size_t carry_len, carry_cap;
  pp_parse_error *err;
  size_t nerr, err_alloc;
  uint64_t stamp;
  /* the previous stored line, to predict and skip work for this one */
  int prev_ok;
  size_t prev_n;
  uint32_t prev_prefix_id, prev_layout;
  size_t prev_plen;
  char prev_prefix[PP_PREFIX_MAX];
  uint32_t prev_cols[PP_PARSE_MAX_TOKENS];
  uint32_t lay_cols[PP_PARSE_MAX_TOKENS];
  tok_t tok[PP_PARSE_MAX_TOKENS];
};

static inline int blank(char ch) { return ch == ' ' || ch == '\t'; }

static inline char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = 0;
  }
  return d;
}

/* parse.c: fills the character tables, once a process (before the first
 * parser reads or checks anything). */
void pp_parse_classes_once(void);
/* parse.c: whether s[0..n) is a field name (1 to NAME_MAX_LEN bytes of
 * [A-Za-z0-9_]), by the tokenizer's table. */
int pp_parse_name_ok(const char *s, size_t n);
/* parse.c: one line of the current source (without its '\n'; only the
 * first PP_PARSE_MAX_LINE bytes of a longer one are read): counted, and its
 * record checked and stored or rejected. */
void pp_parse_process_line(pp_parser *p, const char *line, size_t len);

#endif
