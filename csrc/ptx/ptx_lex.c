/*
 * ptx_lex.c: the PTX scan's cursor over bytes (see ptx_scanner.h for the
 * files of one scan).
 *
 * Two readers share one cursor: a token reader for the rare, irregular parts
 * (module directives, function headers, declarations: pp_ptx_next) and the
 * statement loop of function bodies (ptx_body.c), where almost all the bytes
 * are. The statement loop reads a statement's first word (its opcode, a
 * label, a directive) and then jumps to the ';' (pp_ptx_skip_statement) with
 * a 16-bytes-at-a-time search for the few bytes that matter there: ';', '/',
 * '"' and control or non-ASCII bytes (newline included). Every newline
 * crossed goes through newline(), which keeps the line count and the
 * line-length limit.
 *
 * Errors are kept in the result; a "fatal" one (NUL, control or non-ASCII
 * byte outside a comment or string, a line over the limit, no memory) stops
 * the scan there, others skip what they could not read and go on.
 */
#include "ptx_scanner.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- byte classes -------------------------------------------------------- */
const unsigned char pp_ptx_cls[256] = {
    [0 ... 8] = C_BAD | C_STOP,
    ['\t'] = C_BLANK,
    ['\n'] = C_STOP,
    ['\v'] = C_BLANK | C_STOP,
    ['\f'] = C_BLANK | C_STOP,
    ['\r'] = C_BLANK | C_STOP,
    [14 ... 31] = C_BAD | C_STOP,
    [' '] = C_BLANK,
    [';'] = C_STOP,
    ['/'] = C_STOP,
    ['"'] = C_STOP,
    ['0' ... '9'] = C_WORD,
    ['A' ... 'Z'] = C_WORD | C_START,
    ['a' ... 'z'] = C_WORD | C_START,
    ['_'] = C_WORD | C_START,
    ['$'] = C_WORD | C_START,
    ['%'] = C_WORD | C_START,
    ['.'] = C_WORD | C_START,
    [127] = C_BAD,
    [128 ... 255] = C_BAD | C_STOP,
};

/* ---- errors ---------------------------------------------------------------- */
void pp_ptx_error_at(scanner *s, uint64_t line, uint64_t col, size_t offset,
                     int fatal, const char *fmt, ...) {
  pp_ptx_result *r = s->r;
  r->partial = 1;
  if (fatal)
    s->stop = 1;
  if (r->nerrors >= PP_PTX_MAX_ERRORS) {
    r->errors_dropped++;
    return;
  }
  pp_ptx_error *e = &r->errors[r->nerrors++];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->what, sizeof e->what, fmt, ap);
  va_end(ap);
  e->line = line;
  e->col = col;
  e->offset = offset;
}

/* A byte that may not appear outside comments and strings. */
void pp_ptx_bad_byte(scanner *s, const char *at) {
  unsigned char c = (unsigned char)*at;
  if (c == 0)
    ERR(s, at, 1, "NUL byte");
  else if (c >= 0x80)
    ERR(s, at, 1, "non-ASCII byte 0x%02x outside a comment or string", c);
  else
    ERR(s, at, 1, "binary byte 0x%02x", c);
}

/* First byte in [p, end) of class C_STOP: ';', '/', '"', newline, or a
 * control or non-ASCII byte (tab excepted). */
static inline const char *find_stop(const char *p, const char *end) {
#ifdef PP_SSE2
  const __m128i semi = _mm_set1_epi8(';'), slash = _mm_set1_epi8('/');
  const __m128i quote = _mm_set1_epi8('"'), tab = _mm_set1_epi8('\t');
  const __m128i space = _mm_set1_epi8(' ');
  while (end - p >= 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i m = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(x, semi), _mm_cmpeq_epi8(x, slash)),
        _mm_or_si128(_mm_cmpeq_epi8(x, quote),
                     _mm_andnot_si128(_mm_cmpeq_epi8(x, tab),
                                      _mm_cmplt_epi8(x, space))));
    int mask = _mm_movemask_epi8(m);
    if (mask)
      return p + __builtin_ctz((unsigned)mask);
    p += 16;
  }
#endif
  while (p < end && !(CLS(*p) & C_STOP))
    p++;
  return p;
}

/* First '\n', NUL or (when star) '*' in [p, end). */
static inline const char *find_in_comment(const char *p, const char *end,
                                          int star) {
#ifdef PP_SSE2
  const __m128i nl = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
  const __m128i st = _mm_set1_epi8(star ? '*' : '\n');
  while (end - p >= 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i m = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(x, nl), _mm_cmpeq_epi8(x, zero)),
        _mm_cmpeq_epi8(x, st));
    int mask = _mm_movemask_epi8(m);
    if (mask)
      return p + __builtin_ctz((unsigned)mask);
    p += 16;
  }
#endif
  while (p < end && *p != '\n' && *p != 0 && !(star && *p == '*'))
    p++;
  return p;
}

/* At '/': skips a comment and returns 1, or returns 0 when it is none. A line
 * comment ends before its newline. */
int pp_ptx_skip_comment(scanner *s) {
  const char *p = s->p;
  if (p + 1 >= s->end || (p[1] != '/' && p[1] != '*'))
    return 0;
  if (p[1] == '/') {
    const char *q = find_in_comment(p + 2, s->end, 0);
    s->p = q;
    if (q < s->end && *q == 0)
      ERR(s, q, 1, "NUL byte");
    return 1;
  }
  uint64_t line = s->line, col = col_of(s, p);
  size_t off = (size_t)(p - s->base);
  p += 2;
  for (;;) {
    const char *q = find_in_comment(p, s->end, 1);
    if (q >= s->end) {
      s->p = s->end;
      pp_ptx_error_at(s, line, col, off, 0, "unterminated block comment");
      return 1;
    }
    if (*q == '\n') {
      newline(s, q);
      if (s->stop) {
        s->p = q;
        return 1;
      }
    } else if (*q == 0) {
      s->p = q;
      ERR(s, q, 1, "NUL byte");
      return 1;
    } else if (q + 1 < s->end && q[1] == '/') {
      s->p = q + 2;
      return 1;
    }
    p = q + 1;
  }
}

/* At '"': skips a string literal and returns 1; one that reaches the end
 * of its line is an error, ends there and returns 0. */
static int skip_string(scanner *s) {
  const char *p = s->p + 1;
  while (p < s->end) {
    char c = *p;
    if (c == '"') {
      s->p = p + 1;
      return 1;
    }
    if (c == '\n' || c == 0)
      break;
    p += (c == '\\' && p + 1 < s->end && p[1] != '\n') ? 2 : 1;
  }
  ERR(s, s->p, 0, "unterminated string literal");
  s->p = p;
  return 0;
}

/* Skips to just past the next ';'. Returns a pointer to that ';', or NULL at
 * the end of the text or a fatal error. With at_eol, stops (returning NULL,
 * not consuming it) at a newline instead of crossing it. */
const char *pp_ptx_skip_statement(scanner *s, int at_eol) {
  const char *p = s->p;
  while (!s->stop) {
    const char *q = find_stop(p, s->end);
    if (q >= s->end) {
      s->p = s->end;
      return NULL;
    }
    switch (*q) {
    case ';':
      s->p = q + 1;
      return q;
    case '\n':
      if (at_eol) {
        s->p = q;
        return NULL;
      }
      newline(s, q);
      p = q + 1;
      break;
    case '/':
      s->p = q;
      p = pp_ptx_skip_comment(s) ? s->p : q + 1;
      break;
    case '"':
      s->p = q;
      if (!skip_string(s))
        return NULL; /* the statement ends with its line */
      p = s->p;
      break;
    case '\r':
    case '\v':
    case '\f':
      p = q + 1;
      break;
    default:
      s->p = q;
      pp_ptx_bad_byte(s, q);
      return NULL;
    }
  }
  return NULL;
}

/* Skips blanks, newlines and comments. */
static void skip_space(scanner *s) {
  while (!s->stop && s->p < s->end) {
    char c = *s->p;
    if (CLS(c) & C_BLANK)
      s->p++;
    else if (c == '\n') {
      newline(s, s->p);
      s->p++;
    } else if (c == '/' && pp_ptx_skip_comment(s))
      continue;
    else
      return;
  }
}

int pp_ptx_next(scanner *s, tok *t) {
  skip_space(s);
  t->p = s->p;
  t->len = 0;
  t->line = s->line;
  t->col = col_of(s, s->p);
  if (s->stop)
    return t->kind = T_STOP;
  if (s->p >= s->end)
    return t->kind = T_EOF;
  char c = *s->p;
  if (CLS(c) & C_WORD) {
    s->p = word_end(s->p, s->end);
    t->len = (size_t)(s->p - t->p);
    return t->kind = (CLS(c) & C_START) ? T_WORD : T_NUM;
  }
  if (c == '"') {
    skip_string(s);
    t->len = (size_t)(s->p - t->p);
    return t->kind = T_STR;
  }
  if (CLS(c) & C_BAD) {
    pp_ptx_bad_byte(s, s->p);
    return t->kind = T_STOP;
  }
  s->p++;
  t->len = 1;
  return t->kind = T_PUNCT;
}

/* The next token, consumed only when it is of kind k (and, for T_PUNCT,
 * the character c): returns whether it was. A token left is read again by
 * the next next(), so the errors met reading it are dropped here. */
int pp_ptx_accept(scanner *s, tok *t, int k, char c) {
  mark m = save(s);
  size_t nerrors = s->r->nerrors;
  uint64_t dropped = s->r->errors_dropped;
  int partial = s->r->partial;
  if (pp_ptx_next(s, t) == k && (k != T_PUNCT || *t->p == c))
    return 1;
  if (!s->stop) {
    restore(s, m);
    s->r->nerrors = nerrors;
    s->r->errors_dropped = dropped;
    s->r->partial = partial;
  }
  return 0;
}

/* Decimal, 0x hex, 0b binary or 0-prefixed octal, optional U suffix;
 * saturates. */
int pp_ptx_parse_num(const tok *t, uint64_t *out) {
  const char *p = t->p, *e = t->p + t->len;
  if (t->kind != T_NUM || p == e)
    return 0;
  if (e - p > 1 && e[-1] == 'U')
    e--;
  unsigned base = 10;
  if (e - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
    base = 16, p += 2;
  else if (e - p > 2 && p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
    base = 2, p += 2;
  else if (e - p > 1 && p[0] == '0')
    base = 8, p += 1;
  uint64_t v = 0;
  for (; p < e; p++) {
    unsigned d;
    if (*p >= '0' && *p <= '9')
      d = (unsigned)(*p - '0');
    else if (*p >= 'a' && *p <= 'f')
      d = (unsigned)(*p - 'a' + 10);
    else if (*p >= 'A' && *p <= 'F')
      d = (unsigned)(*p - 'A' + 10);
    else
      return 0;
    if (d >= base)
      return 0;
    v = sat_mul(v, base);
    v = v > UINT64_MAX - d ? UINT64_MAX : v + d;
  }
  *out = v;
  return 1;
}
