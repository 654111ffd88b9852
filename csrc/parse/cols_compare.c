/*
 * cols_compare.c: selections of the column store (cols.c) by comparing
 * each record's value with a constant, exactly: equality with a value,
 * a range between two values, and a condition `field op text` (=, !=, <,
 * <=, >, >=) whose constant is a number's text. No comparison goes
 * through a double that could round: integers (int64 and u64 above
 * INT64_MAX) compare with integers as integers and with doubles by their
 * exact values; a text constant compares with each value's own text as a
 * decimal number, digit by digit, so that 18446744073709551614 and ...615,
 * 9007199254740993 and ...992, or 0.1 written as 0.1 and the constant 0.1
 * are told apart or kept together as their texts say. The Lua record sets
 * reach these through lua_cols.c (cols:where, cols:range, cols:compare).
 */
#include "pp_cols_internal.h"
#include "pp_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* "No order": a NaN, or a value that is no number. */
#define UNORDERED 2

/* ---- numbers as values ---------------------------------------------------- */

static int is_negative(const pp_value *v) { return v->i < 0 && !v->u64; }

/* Two integers (int64, or u64 with the u64 flag): -1, 0, 1. */
static int cmp_int(const pp_value *a, const pp_value *b) {
  int na = is_negative(a), nb = is_negative(b);
  if (na != nb)
    return na ? -1 : 1;
  if (na)
    return (a->i > b->i) - (a->i < b->i);
  uint64_t x = (uint64_t)a->i, y = (uint64_t)b->i;
  return (x > y) - (x < y);
}

/* An integer against a double, exactly: -1, 0, 1, or UNORDERED for NaN. */
static int cmp_int_double(const pp_value *a, double d) {
  if (d != d)
    return UNORDERED;
  if (a->u64) { /* a >= 2^63 */
    if (d >= 0x1p64)
      return -1;
    if (d < 0x1p63)
      return 1;
    uint64_t t = (uint64_t)d; /* d is a whole number up there */
    uint64_t u = (uint64_t)a->i;
    return (u > t) - (u < t);
  }
  if (d >= 0x1p63)
    return -1;
  if (d < -0x1p63)
    return 1;
  double fl = floor(d);
  int64_t t = (int64_t)fl;
  if (a->i != t)
    return a->i < t ? -1 : 1;
  return fl < d ? -1 : 0;
}

/* Two numeric values (PP_VAL_INT or PP_VAL_NUM): -1, 0, 1 or UNORDERED. */
static int cmp_values(const pp_value *a, const pp_value *b) {
  if (a->kind == PP_VAL_INT && b->kind == PP_VAL_INT)
    return cmp_int(a, b);
  if (a->kind == PP_VAL_INT)
    return cmp_int_double(a, b->d);
  if (b->kind == PP_VAL_INT) {
    int r = cmp_int_double(b, a->d);
    return r == UNORDERED ? r : -r;
  }
  if (a->d != a->d || b->d != b->d)
    return UNORDERED;
  return (a->d > b->d) - (a->d < b->d);
}

static int is_number(const pp_value *v) {
  return v->kind == PP_VAL_INT || v->kind == PP_VAL_NUM;
}

static int value_equals(const pp_cols *c, size_t col, size_t r,
                        const pp_value *v) {
  pp_value x;
  pp_cols_get(c, col, r, &x);
  if (v->kind == PP_VAL_NONE || x.kind == PP_VAL_NONE)
    return v->kind == x.kind;
  if (v->kind == PP_VAL_STR || x.kind == PP_VAL_STR)
    return v->kind == x.kind && v->len == x.len &&
           memcmp(v->s, x.s, x.len) == 0;
  return cmp_values(&x, v) == 0;
}

PP_EXPORT size_t pp_cols_where_eq(const pp_cols *c, size_t col,
                                  const pp_value *v, const uint32_t *sel,
                                  size_t nsel, uint32_t *out) {
  size_t m = 0;
  PP_FOR_ROWS(c, sel, nsel, r, {
    if (value_equals(c, col, r, v))
      out[m++] = (uint32_t)r;
  });
  return m;
}

PP_EXPORT size_t pp_cols_where_range(const pp_cols *c, size_t col, double lo,
                                     double hi, const uint32_t *sel,
                                     size_t nsel, uint32_t *out) {
  pp_value a = {.kind = PP_VAL_NUM, .d = lo}, b = {.kind = PP_VAL_NUM, .d = hi};
  return pp_cols_where_between(c, col, &a, &b, sel, nsel, out);
}

PP_EXPORT size_t pp_cols_where_between(const pp_cols *c, size_t col,
                                       const pp_value *lo, const pp_value *hi,
                                       const uint32_t *sel, size_t nsel,
                                       uint32_t *out) {
  size_t m = 0;
  PP_FOR_ROWS(c, sel, nsel, r, {
    pp_value x;
    pp_cols_get(c, col, r, &x);
    if (!is_number(&x))
      continue;
    int a = lo ? cmp_values(&x, lo) : 1, b = hi ? cmp_values(&x, hi) : -1;
    if ((a == 0 || a == 1) && (b == 0 || b == -1))
      out[m++] = (uint32_t)r;
  });
  return m;
}

/* ---- numbers as text ------------------------------------------------------ */
/* A decimal number's text, [+-]?(D+(.D*)?|.D+)([eE][+-]?D+)?, read as
 * 0.d1 d2 d3 ... x 10^q with d1 its first nonzero digit. */
typedef struct {
  const char *first; /* d1; NULL for zero */
  const char *end;   /* the end of the digits (the exponent or the text) */
  int neg;
  int64_t q;
} dec;

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

/* Reads the text into d; 0 when it is not such a number. */
static int dec_read(const char *s, size_t n, dec *d) {
  size_t i = 0;
  d->neg = 0;
  if (i < n && (s[i] == '+' || s[i] == '-'))
    d->neg = s[i++] == '-';
  int64_t before = 0, lead = 0; /* digits before the point, leading zeros */
  size_t ndig = 0;
  int point = 0;
  d->first = NULL;
  for (; i < n; i++) {
    if (is_digit(s[i])) {
      if (!d->first) {
        if (s[i] == '0')
          lead++;
        else
          d->first = s + i;
      }
      if (!point)
        before++;
      ndig++;
    } else if (s[i] == '.' && !point) {
      point = 1;
    } else {
      break;
    }
  }
  if (ndig == 0)
    return 0;
  d->end = s + i;
  int64_t e = 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    int eneg = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
      eneg = s[i++] == '-';
    size_t e0 = i;
    for (; i < n && is_digit(s[i]); i++)
      if (e < ((int64_t)1 << 50)) /* far past any text's digits: saturated */
        e = e * 10 + (s[i] - '0');
    if (i == e0)
      return 0;
    if (eneg)
      e = -e;
  }
  if (i != n)
    return 0;
  d->q = before - lead + e;
  return 1;
}

/* The next digit from *p (past a point), '0' once the digits end. */
static char next_digit(const char **p, const char *end) {
  if (*p < end && **p == '.')
    (*p)++;
  if (*p >= end)
    return '0';
  return *(*p)++;
}

/* -1, 0, 1. */
static int dec_cmp(const dec *a, const dec *b) {
  int sa = !a->first ? 0 : a->neg ? -1 : 1;
  int sb = !b->first ? 0 : b->neg ? -1 : 1;
  if (sa != sb || sa == 0)
    return (sa > sb) - (sa < sb);
  int mag = 0;
  if (a->q != b->q) {
    mag = a->q < b->q ? -1 : 1;
  } else {
    const char *p = a->first, *r = b->first;
    while (p < a->end || r < b->end) {
      char x = next_digit(&p, a->end), y = next_digit(&r, b->end);
      if (x != y) {
        mag = x < y ? -1 : 1;
        break;
      }
    }
  }
  return sa < 0 ? -mag : mag;
}

/* ---- conditions: field op text --------------------------------------------- */
typedef struct {
  pp_cmp_op op;
  const char *text;
  size_t len;
  int numeric; /* the text is a decimal number (d)             */
  dec d;
  int whole;   /* ... and an integer from -2^63 to 2^64-1 (iv) */
  pp_value iv;
} condition;

/* An integer text [+-]?D+ as an int64 or u64 value; 0 when it is none or
 * lies outside -2^63 .. 2^64-1. */
static int int_of_text(const char *s, size_t n, pp_value *v) {
  size_t i = 0;
  int neg = 0;
  if (i < n && (s[i] == '+' || s[i] == '-'))
    neg = s[i++] == '-';
  if (i == n)
    return 0;
  uint64_t x = 0;
  for (; i < n; i++) {
    if (!is_digit(s[i]))
      return 0;
    unsigned dg = (unsigned)(s[i] - '0');
    if (x > (UINT64_MAX - dg) / 10)
      return 0;
    x = x * 10 + dg;
  }
  memset(v, 0, sizeof *v);
  v->kind = PP_VAL_INT;
  if (neg) {
    if (x > (uint64_t)INT64_MAX + 1)
      return 0;
    v->i = (int64_t)(0 - x);
  } else {
    v->i = (int64_t)x;
    v->u64 = x > (uint64_t)INT64_MAX;
  }
  return 1;
}

/* The order of a present value against the condition's number (-1, 0, 1;
 * UNORDERED when either is no number), and, in *same, whether its text
 * is the condition's text. */
static int order_of(const pp_cols *c, size_t col, size_t r, const pp_value *x,
                    const condition *k, int *same) {
  *same = 0;
  if (x->kind == PP_VAL_INT && k->whole)
    return cmp_int(x, &k->iv);
  if (x->kind == PP_VAL_NUM && (x->d != x->d || isinf(x->d))) {
    char t[8];
    size_t n = pp_cols_text(c, col, r, t, sizeof t);
    *same = n == k->len && memcmp(t, k->text, n) == 0;
    if (x->d != x->d || !k->numeric)
      return UNORDERED;
    return x->d < 0 ? -1 : 1;
  }
  const char *s;
  size_t n;
  char small[128], *big = NULL;
  if (x->kind == PP_VAL_STR) {
    s = x->s;
    n = x->len;
  } else {
    n = pp_cols_text(c, col, r, small, sizeof small);
    s = small;
    if (n >= sizeof small) {
      big = malloc(n + 1);
      if (!big)
        return UNORDERED;
      pp_cols_text(c, col, r, big, n + 1);
      s = big;
    }
  }
  *same = n == k->len && memcmp(s, k->text, n) == 0;
  int ord = UNORDERED;
  if (k->numeric) {
    pp_cols_field f;
    /* a string is a number when its text is one by the rule of values */
    int num = x->kind != PP_VAL_STR ||
              pp_cols_value_of_text(s, n, 0, &f) != PP_VAL_STR;
    dec d;
    if (num && dec_read(s, n, &d))
      ord = dec_cmp(&d, &k->d);
  }
  free(big);
  return ord;
}

static int meets(int ord, int same, pp_cmp_op op) {
  switch (op) {
  case PP_CMP_EQ:
    return ord == 0 || same;
  case PP_CMP_NE:
    return !(ord == 0 || same);
  case PP_CMP_LT:
    return ord == -1;
  case PP_CMP_LE:
    return ord == -1 || ord == 0;
  case PP_CMP_GT:
    return ord == 1;
  case PP_CMP_GE:
    return ord == 1 || ord == 0;
  }
  return 0;
}

PP_EXPORT int pp_cols_where_cmp(const pp_cols *c, size_t col, pp_cmp_op op,
                                const char *text, size_t len,
                                const uint32_t *sel, size_t nsel,
                                uint32_t *out, size_t *nout) {
  condition k;
  memset(&k, 0, sizeof k);
  k.op = op;
  k.text = text;
  k.len = len;
  k.numeric = dec_read(text, len, &k.d);
  k.whole = int_of_text(text, len, &k.iv);
  *nout = 0;
  if (op != PP_CMP_EQ && op != PP_CMP_NE && !k.numeric)
    return -1;
  size_t m = 0;
  PP_FOR_ROWS(c, sel, nsel, r, {
    pp_value x;
    pp_cols_get(c, col, r, &x);
    int ord = UNORDERED, same = 0;
    if (x.kind != PP_VAL_NONE)
      ord = order_of(c, col, r, &x, &k, &same);
    if (meets(ord, same, op))
      out[m++] = (uint32_t)r;
  });
  *nout = m;
  return 0;
}
