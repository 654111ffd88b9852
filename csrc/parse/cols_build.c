/*
 * cols_build.c: a column store filled with records handed over field by
 * field, not parsed from lines.
 *
 * The parser (parse.c) turns lines into records of a store; this file takes
 * records that already exist as values (records of another store, records
 * emitted by the probe, plain Lua tables, rows of a CSV or JSON lines file
 * read back) and appends them to a store the same way, so every record set
 * of the Lua side is one kind of thing: a store and a selection over it.
 *
 * A record is accepted or refused whole, with the first problem found
 * written to `err`; the checks are the parser's where a line could carry the
 * record: names 1..63 bytes of [A-Za-z0-9_], none reserved, none twice; a
 * prefix word of [A-Za-z0-9_.:/-] starting with a letter; time and cache
 * fields (names ending _ns, _cache_hits, _cache_misses, _cache_disk_hits)
 * hold unsigned integers (a whole float from 2^63 to 2^64 is taken as the
 * u64 it stands for: lua_record.c hands such values to Lua as floats). String values never hold a NUL; in the line mode
 * they also hold what a line can (not empty, no blank, no '=', no control
 * character), so the record prints as a line that reads back.
 */
#include "pp_cols_internal.h"
#include "pp_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int name_byte(unsigned char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || ch == '_';
}

static int suffix(const char *s, size_t n, const char *suf) {
  size_t k = strlen(suf);
  return n > k && memcmp(s + n - k, suf, k) == 0;
}

int pp_cols_strict_name(const char *s, size_t n) {
  return suffix(s, n, "_ns") || suffix(s, n, "_cache_hits") ||
         suffix(s, n, "_cache_misses") || suffix(s, n, "_cache_disk_hits");
}

int pp_cols_reserved_name(const char *s, size_t n) {
  static const char *const reserved[] = {"_prefix", "_fields", "_table",
                                         "_text"};
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
    if (n == strlen(reserved[i]) && memcmp(s, reserved[i], n) == 0)
      return 1;
  return 0;
}

/* A float that stands for a u64 (how values above 2^63-1 reach Lua): whole,
 * from 0 to 2^64, which reads as 2^64-1 (the nearest double of it). */
static int whole_u64(double d, uint64_t *out) {
  if (!(d >= 0 && d <= 0x1p64) || d != floor(d))
    return 0;
  if (out)
    *out = d >= 0x1p64 ? UINT64_MAX : (uint64_t)d;
  return 1;
}

/* ---- what a value's text stands for -------------------------------------- */
/* The digits [s, s + n) as a u64: 0 done, 1 not all digits, 2 past 2^64-1. */
static int digits_u64(const char *s, size_t n, uint64_t *out) {
  uint64_t v = 0;
  int over = 0;
  if (n == 0)
    return 1;
  for (size_t i = 0; i < n; i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (d > 9)
      return 1;
    if (v > (UINT64_MAX - d) / 10)
      over = 1;
    else
      v = v * 10 + d;
  }
  if (over)
    return 2;
  *out = v;
  return 0;
}

/* JSON's number: -?(0|[1-9]D*)(.D+)?([eE][+-]?D+)?; sets *whole when it has
 * neither fraction nor exponent. */
static int json_number(const char *s, size_t n, int *whole) {
  size_t i = s[0] == '-' ? 1 : 0;
  if (i >= n || s[i] < '0' || s[i] > '9')
    return 0;
  if (s[i] == '0')
    i++;
  else
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
  *whole = 1;
  if (i < n && s[i] == '.') {
    size_t d = ++i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
    if (i == d)
      return 0;
    *whole = 0;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-'))
      i++;
    size_t d = i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
    if (i == d)
      return 0;
    *whole = 0;
  }
  return i == n;
}

pp_val_kind pp_cols_value_of_text(const char *s, size_t n, int numeric,
                                  pp_cols_field *out) {
  out->neg = 0;
  out->text = NULL;
  out->tlen = 0;
  out->v.u64 = 0;
  int whole = 0;
  int is_num = n > 0 && n < 400 && json_number(s, n, &whole);
  if (is_num && whole) {
    int neg = s[0] == '-';
    uint64_t v = 0;
    /* an integer: from -2^63 to 2^64-1 */
    int over = digits_u64(s + neg, n - (size_t)neg, &v) != 0 ||
               (neg && v > (uint64_t)INT64_MAX + 1);
    if (neg && v == 0 && !over && !numeric) {
      out->v.kind = PP_VAL_STR; /* "-0" is no integer's text */
      out->v.s = s;
      out->v.len = n;
      return PP_VAL_STR;
    }
    if (!over) {
      out->v.kind = PP_VAL_INT;
      out->v.i = neg ? (int64_t)(0 - v) : (int64_t)v;
      out->neg = neg && v != 0;
      return PP_VAL_INT;
    }
    is_num = 0; /* past 64 bits: the text stays a string (or, numeric,
                   is refused: no number holds it exactly) */
  }
  if (is_num) {
    char buf[400];
    memcpy(buf, s, n);
    buf[n] = 0;
    double d = strtod(buf, NULL);
    if (d - d == 0) { /* finite (an underflow reads as 0) */
      out->v.kind = PP_VAL_NUM;
      out->v.d = d;
      out->text = s;
      out->tlen = n;
      return PP_VAL_NUM;
    }
  }
  if (numeric) {
    out->v.kind = PP_VAL_NONE;
    return PP_VAL_NONE;
  }
  out->v.kind = PP_VAL_STR;
  out->v.s = s;
  out->v.len = n;
  return PP_VAL_STR;
}

/* The first problem of a name, or NULL. */
static const char *name_problem(const char *s, size_t n) {
  if (n == 0)
    return "an empty name";
  if (n > 63)
    return "a name longer than 63 bytes";
  for (size_t i = 0; i < n; i++)
    if (!name_byte((unsigned char)s[i]))
      return "a name holding a byte other than [A-Za-z0-9_]";
  if (pp_cols_reserved_name(s, n))
    return "a reserved name";
  return NULL;
}

static const char *value_problem(const pp_cols_field *f, int line_mode) {
  if (f->v.kind == PP_VAL_STR) {
    if (memchr(f->v.s, 0, f->v.len))
      return "a string holding a NUL byte";
    if (pp_cols_strict_name(f->name, f->nlen))
      return "a string where an unsigned integer belongs";
    if (!line_mode)
      return NULL;
    if (f->v.len == 0)
      return "an empty string (a line cannot hold it)";
    for (size_t i = 0; i < f->v.len; i++) {
      unsigned char ch = (unsigned char)f->v.s[i];
      if (ch == ' ' || ch == '\t')
        return "a string holding a blank (a line cannot hold it)";
      if (ch == '=' || ch < 0x20)
        return "a string holding '=' or a control character (a line cannot "
               "hold it)";
    }
    return NULL;
  }
  if (f->v.kind == PP_VAL_NUM) {
    if (pp_cols_strict_name(f->name, f->nlen) && !whole_u64(f->v.d, NULL))
      return "a float where an unsigned integer belongs";
    if (line_mode && f->v.d - f->v.d != 0)
      return "a number that is not finite (a line cannot hold it as a number)";
    return NULL;
  }
  if (f->v.kind == PP_VAL_INT) {
    if (f->neg && pp_cols_strict_name(f->name, f->nlen))
      return "a negative integer where an unsigned integer belongs";
    return NULL;
  }
  return "no value";
}

int pp_cols_check_prefix(const char *s, size_t n) {
  if (n == 0 || n >= PP_PREFIX_MAX)
    return 0;
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
    return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (!name_byte(ch) && !(ch && strchr(".:/-", ch)))
      return 0;
  }
  return 1;
}

int pp_cols_append(pp_cols *c, const char *prefix, size_t plen,
                   const pp_cols_field *f, size_t n, const char *source,
                   uint64_t line, int line_mode, char *err, size_t errlen) {
  if (!pp_cols_check_prefix(prefix, plen))
    return pp_fail(err, errlen,
                "prefix '%.*s' is not a prefix word (1 to %d bytes of "
                "[A-Za-z0-9_.:/-], starting with a letter)",
                (int)(plen < 80 ? plen : 80), prefix, PP_PREFIX_MAX - 1);
  if (n == 0)
    return pp_fail(err, errlen, "a record with no fields");
  if (n > PP_PARSE_MAX_TOKENS)
    return pp_fail(err, errlen, "more than %d fields", PP_PARSE_MAX_TOKENS);
  /* pass 1: everything checked before the store changes */
  size_t fresh = 0;
  for (size_t i = 0; i < n; i++) {
    const char *why = name_problem(f[i].name, f[i].nlen);
    if (why)
      return pp_fail(err, errlen, "field '%.*s': %s",
                  (int)(f[i].nlen < 80 ? f[i].nlen : 80), f[i].name, why);
    for (size_t j = 0; j < i; j++)
      if (f[j].nlen == f[i].nlen && memcmp(f[j].name, f[i].name, f[i].nlen) == 0)
        return pp_fail(err, errlen, "field '%.*s' given twice", (int)f[i].nlen,
                    f[i].name);
    why = value_problem(&f[i], line_mode);
    if (why)
      return pp_fail(err, errlen, "field '%.*s': %s", (int)f[i].nlen, f[i].name,
                  why);
    if (pp_cols_lookup(c, f[i].name, f[i].nlen) < 0)
      fresh++;
  }
  if (c->nvis + fresh > PP_PARSE_MAX_COLUMNS)
    return pp_fail(err, errlen, "more than %d distinct field names",
                PP_PARSE_MAX_COLUMNS);
  /* pass 2: into the store */
  size_t row = c->n;
  uint32_t cols[PP_PARSE_MAX_TOKENS];
  for (size_t i = 0; i < n; i++) {
    int col = pp_cols_lookup(c, f[i].name, f[i].nlen);
    if (col < 0)
      col = pp_cols_add_column(c, f[i].name, f[i].nlen, 0,
                               pp_cols_strict_name(f[i].name, f[i].nlen));
    if (col < 0)
      return -2;
    int rc;
    uint64_t u;
    switch (f[i].v.kind) {
    case PP_VAL_INT:
      rc = pp_cols_set_int(c, (size_t)col, row, (uint64_t)f[i].v.i, f[i].neg);
      break;
    case PP_VAL_NUM:
      if (pp_cols_strict_name(f[i].name, f[i].nlen) && whole_u64(f[i].v.d, &u))
        rc = pp_cols_set_int(c, (size_t)col, row, u, 0);
      else
        rc = pp_cols_set_num_text(c, (size_t)col, row, f[i].v.d, f[i].text,
                                  f[i].tlen);
      break;
    default:
      rc = pp_cols_set_str(c, (size_t)col, row, f[i].v.s, f[i].v.len);
      break;
    }
    if (rc)
      return -2;
    cols[i] = (uint32_t)col;
  }
  uint32_t pid = pp_cols_intern(c, prefix, plen);
  if (pid == UINT32_MAX)
    return -2;
  uint32_t layout = pp_cols_layout_intern(c, pid, cols, n);
  if (layout == UINT32_MAX)
    return -2;
  const char *src = source ? source : "(list)";
  if (pp_cols_set_str(c, (size_t)c->c_file, row, src, strlen(src)) ||
      pp_cols_set_int(c, (size_t)c->c_line, row, line, 0) ||
      pp_cols_set_int(c, (size_t)c->c_layout, row, layout, 0))
    return -2;
  c->n++;
  return 0;
}
