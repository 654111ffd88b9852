/*
 * ptx_scan.c: one pass over PTX text (see pp_ptx.h).
 *
 * Two readers share one cursor: a token reader for the rare, irregular parts
 * (module directives, function headers, declarations) and a statement loop
 * for function bodies, where almost all the bytes are. The statement loop
 * reads a statement's first word (its opcode, a label, a directive) and then
 * jumps to the ';' with a 16-bytes-at-a-time search for the few bytes that
 * matter there: ';', '/', '"' and control or non-ASCII bytes (newline
 * included). Every newline crossed goes through newline(), which keeps the
 * line count and the line-length limit.
 *
 * Errors are kept in the result; a "fatal" one (NUL, control or non-ASCII
 * byte outside a comment or string, a line over the limit, no memory) stops
 * the scan there, others skip what they could not read and go on.
 */
#include "pp_internal.h"
#include "pp_ptx.h"
#include "ptx_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && !defined(PP_PTX_NO_SIMD)
#include <immintrin.h>
#define PP_SSE2 1
#endif

/* ---- byte classes -------------------------------------------------------- */
enum { C_WORD = 1, C_START = 2, C_BAD = 4, C_BLANK = 8, C_STOP = 16 };

static const unsigned char cls[256] = {
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

#define CLS(c) (cls[(unsigned char)(c)])

/* ---- types --------------------------------------------------------------- */
static const char *const reg_names[PP_PTX_NREG] = {
    ".pred", ".b8",   ".b16",  ".b32",    ".b64", ".b128", ".u8",
    ".u16",  ".u32",  ".u64",  ".s8",     ".s16", ".s32",  ".s64",
    ".f16",  ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64",  "other"};
static const uint8_t reg_sizes[PP_PTX_NREG] = {1, 1, 2, 4, 8, 16, 1, 2, 4, 8, 1,
                                               2, 4, 8, 2, 4, 2, 4, 4, 8, 0};

PP_EXPORT const char *pp_ptx_reg_class_name(int c) {
  return c >= 0 && c < PP_PTX_NREG ? reg_names[c] : NULL;
}

PP_EXPORT const char *pp_ptx_space_name(pp_ptx_space sp) {
  static const char *const n[] = {"global", "const", "shared", "local"};
  return (unsigned)sp < 4 ? n[sp] : "?";
}

/* Inlined so that, with a literal, the length and the comparison fold. */
static inline __attribute__((always_inline)) int
word_is(const char *p, size_t n, const char *lit) {
  size_t l = __builtin_strlen(lit);
  return n == l && memcmp(p, lit, l) == 0;
}

/* The register class of a type word, or -1 when it is not a type. */
static int type_class(const char *p, size_t n) {
  if (n < 3 || n > 11 || p[0] != '.')
    return -1;
  int base;
  switch (p[1]) { /* .b .u .s .f: followed by the bit count */
  case 'b':
    base = PP_PTX_REG_B8;
    break;
  case 'u':
    base = PP_PTX_REG_U8;
    break;
  case 's':
    base = PP_PTX_REG_S8;
    break;
  case 'f':
    base = -2;
    break;
  default:
    base = -3;
  }
  if (base == PP_PTX_REG_B8 || base == PP_PTX_REG_U8 || base == PP_PTX_REG_S8) {
    const char *b = p + 2;
    size_t bl = n - 2;
    if (word_is(b, bl, "8"))
      return base;
    if (word_is(b, bl, "16"))
      return base + 1;
    if (word_is(b, bl, "32"))
      return base + 2;
    if (word_is(b, bl, "64"))
      return base + 3;
    if (base == PP_PTX_REG_B8 && word_is(b, bl, "128"))
      return PP_PTX_REG_B128;
    if (base == PP_PTX_REG_B8 && word_is(b, bl, "f16"))
      return PP_PTX_REG_BF16;
    if (base == PP_PTX_REG_B8 && word_is(b, bl, "f16x2"))
      return PP_PTX_REG_BF16X2;
    if (base == PP_PTX_REG_S8 && word_is(b, bl, "urfref"))
      return PP_PTX_REG_OTHER;
    if (base == PP_PTX_REG_S8 && word_is(b, bl, "amplerref"))
      return PP_PTX_REG_OTHER;
    return -1;
  }
  if (base == -2) {
    if (word_is(p, n, ".f32"))
      return PP_PTX_REG_F32;
    if (word_is(p, n, ".f64"))
      return PP_PTX_REG_F64;
    if (word_is(p, n, ".f16"))
      return PP_PTX_REG_F16;
    if (word_is(p, n, ".f16x2"))
      return PP_PTX_REG_F16X2;
    return -1;
  }
  if (word_is(p, n, ".pred"))
    return PP_PTX_REG_PRED;
  if (word_is(p, n, ".tf32") || word_is(p, n, ".e4m3") ||
      word_is(p, n, ".e5m2") || word_is(p, n, ".e4m3x2") ||
      word_is(p, n, ".e5m2x2") || word_is(p, n, ".texref"))
    return PP_PTX_REG_OTHER;
  return -1;
}

static uint32_t type_size(const char *p, size_t n) {
  int c = type_class(p, n);
  if (c >= 0 && c != PP_PTX_REG_OTHER)
    return reg_sizes[c];
  if (word_is(p, n, ".tf32"))
    return 4;
  if (word_is(p, n, ".e4m3x2") || word_is(p, n, ".e5m2x2"))
    return 2;
  if (word_is(p, n, ".e4m3") || word_is(p, n, ".e5m2"))
    return 1;
  return 0;
}

static uint32_t vec_width(const char *p, size_t n) {
  if (word_is(p, n, ".v2"))
    return 2;
  if (word_is(p, n, ".v4"))
    return 4;
  if (word_is(p, n, ".v8"))
    return 8;
  return 0;
}

static uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

#define DECL_WINDOW 256
#define MAX_FUNCS ((size_t)1 << 16) /* per list: bounds memory per byte */
#define FCHUNK PP_PTX_FCHUNK        /* functions per chunk */
#define FEED_BATCH 32

/* ---- the scanner ---------------------------------------------------------- */
typedef struct var_list {
  pp_ptx_var *v;
  size_t n, cap;
} var_list;

struct grid_watch;

typedef struct scanner {
  const char *base, *p, *end;
  const char *line_start;
  uint64_t line;
  size_t max_line;
  int stop;
  pp_ptx_result *r;
  const char *counter;
  size_t counter_len;
  size_t cap_globals;
  /* Entries (0) and funcs (1) while the scan runs: FCHUNK at a time in
   * arena chunks, which never move (so a function is known by its address);
   * finish() copies them into r->entries and r->funcs. */
  pp_ptx_func **chunks[2];
  var_list bvars; /* the variables of the body being read */
  /* The parameter list being read, names still in the text; reused from
   * one list to the next and freed at the end of the scan. */
  struct pending_param *pend;
  size_t npend, cap_pend;
  /* The first marker, matched as the scan goes (each body's count is
   * final when the body closes): every position before mk_pos has been
   * tried, the next match may start at mk_next (matches do not overlap). */
  size_t mk_len, mk_pos, mk_next;
  uint64_t mk_count;
  pp_ptx_needle mk;
  /* With a feed (pp_ptx_scan_feed), entries[0, fed) are published. */
  pp_ptx_feed *feed;
  size_t fed, signalled;
  /* body_lines_avx2, or body_lines_none: the statement loop reads all. */
  void (*lines)(struct scanner *, pp_ptx_func *, struct grid_watch *);
  /* Indices of the latest functions declared without a body (entries 0,
   * funcs 1), where a later definition or declaration of the same name is
   * looked for: a bounded window, so that no input makes this quadratic. */
  pp_ptx_func *decl[2][DECL_WINDOW];
  uint32_t decl_hash[2][DECL_WINDOW];
  size_t ndecl[2];
} scanner;

typedef struct {
  const char *p, *line_start;
  uint64_t line;
} mark;

static mark save(const scanner *s) { return (mark){s->p, s->line_start, s->line}; }
static void restore(scanner *s, mark m) {
  s->p = m.p;
  s->line_start = m.line_start;
  s->line = m.line;
}

static void add_error_at(scanner *s, uint64_t line, uint64_t col,
                         size_t offset, int fatal, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void add_error_at(scanner *s, uint64_t line, uint64_t col,
                         size_t offset, int fatal, const char *fmt, ...) {
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

static uint64_t col_of(const scanner *s, const char *at) {
  return at >= s->line_start ? (uint64_t)(at - s->line_start) + 1 : 1;
}

#define ERR(s, at, fatal, ...)                                                 \
  add_error_at((s), (s)->line, col_of((s), (at)),                              \
               (size_t)((at) - (s)->base), (fatal), __VA_ARGS__)

#define TERR(s, t, fatal, ...)                                                 \
  add_error_at((s), (t)->line, (t)->col, (size_t)((t)->p - (s)->base),        \
               (fatal), __VA_ARGS__)

/* A byte that may not appear outside comments and strings. */
static void bad_byte(scanner *s, const char *at) {
  unsigned char c = (unsigned char)*at;
  if (c == 0)
    ERR(s, at, 1, "NUL byte");
  else if (c >= 0x80)
    ERR(s, at, 1, "non-ASCII byte 0x%02x outside a comment or string", c);
  else
    ERR(s, at, 1, "binary byte 0x%02x", c);
}

static inline void newline(scanner *s, const char *nl) {
  if ((size_t)(nl - s->line_start) > s->max_line) {
    add_error_at(s, s->line, (uint64_t)s->max_line + 1,
                 (size_t)(s->line_start - s->base) + s->max_line, 1,
                 "line longer than %zu bytes", s->max_line);
    return;
  }
  s->line++;
  s->line_start = nl + 1;
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
static int skip_comment(scanner *s) {
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
      add_error_at(s, line, col, off, 0, "unterminated block comment");
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
static const char *skip_statement(scanner *s, int at_eol) {
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
      p = skip_comment(s) ? s->p : q + 1;
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
      bad_byte(s, q);
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
    } else if (c == '/' && skip_comment(s))
      continue;
    else
      return;
  }
}

/* First byte in [p, end) that is not a word byte [A-Za-z0-9_$%.]. */
static inline const char *word_end(const char *p, const char *end) {
#ifdef PP_SSE2
  const __m128i lo = _mm_set1_epi8('a' - 1), hi = _mm_set1_epi8('z' + 1);
  const __m128i d0 = _mm_set1_epi8('0' - 1), d9 = _mm_set1_epi8('9' + 1);
  const __m128i fold = _mm_set1_epi8(0x20), us = _mm_set1_epi8('_');
  const __m128i dollar = _mm_set1_epi8('$'), pct = _mm_set1_epi8('%');
  const __m128i dot = _mm_set1_epi8('.');
  while (end - p >= 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i l = _mm_or_si128(x, fold); /* A-Z -> a-z */
    __m128i w = _mm_and_si128(_mm_cmpgt_epi8(l, lo), _mm_cmplt_epi8(l, hi));
    w = _mm_or_si128(w, _mm_and_si128(_mm_cmpgt_epi8(x, d0),
                                      _mm_cmplt_epi8(x, d9)));
    w = _mm_or_si128(w, _mm_or_si128(_mm_cmpeq_epi8(x, us),
                                     _mm_cmpeq_epi8(x, dot)));
    w = _mm_or_si128(w, _mm_or_si128(_mm_cmpeq_epi8(x, dollar),
                                     _mm_cmpeq_epi8(x, pct)));
    unsigned mask = (unsigned)_mm_movemask_epi8(w) ^ 0xffffu;
    if (mask)
      return p + __builtin_ctz(mask);
    p += 16;
  }
#endif
  while (p < end && (CLS(*p) & C_WORD))
    p++;
  return p;
}

/* ---- tokens (headers and declarations) ----------------------------------- */
enum { T_EOF, T_WORD, T_NUM, T_STR, T_PUNCT, T_STOP };

typedef struct {
  int kind;
  const char *p;
  size_t len;
  uint64_t line, col;
} tok;

static int next(scanner *s, tok *t) {
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
    bad_byte(s, s->p);
    return t->kind = T_STOP;
  }
  s->p++;
  t->len = 1;
  return t->kind = T_PUNCT;
}

/* The next token, consumed only when it is of kind k (and, for T_PUNCT,
 * the character c): returns whether it was. A token left is read again by
 * the next next(), so the errors met reading it are dropped here. */
static int accept(scanner *s, tok *t, int k, char c) {
  mark m = save(s);
  size_t nerrors = s->r->nerrors;
  uint64_t dropped = s->r->errors_dropped;
  int partial = s->r->partial;
  if (next(s, t) == k && (k != T_PUNCT || *t->p == c))
    return 1;
  if (!s->stop) {
    restore(s, m);
    s->r->nerrors = nerrors;
    s->r->errors_dropped = dropped;
    s->r->partial = partial;
  }
  return 0;
}

static int is_punct(const tok *t, char c) {
  return t->kind == T_PUNCT && *t->p == c;
}

static inline __attribute__((always_inline)) int is_word(const tok *t,
                                                        const char *lit) {
  return t->kind == T_WORD && word_is(t->p, t->len, lit);
}

/* Decimal, 0x hex, 0b binary or 0-prefixed octal, optional U suffix;
 * saturates. */
static int parse_num(const tok *t, uint64_t *out) {
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

static uint32_t clamp32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

/* ---- memory ----------------------------------------------------------------- */
static void no_memory(scanner *s) { ERR(s, s->p, 1, "out of memory"); }

/* Names and parameter lists are carved out of blocks that grow from
 * BLOCK_MIN to BLOCK_MAX bytes (or hold one larger request), chained from
 * r->mem: thousands of small allocations become a few, written in text
 * order, and freeing the result frees the blocks. */
typedef struct block {
  struct block *next;
  size_t used, cap;
  max_align_t data[];
} block;

#define BLOCK_MIN ((size_t)16 << 10)
#define BLOCK_MAX ((size_t)1 << 20)

/* n bytes aligned to align (a power of two, at most that of max_align_t);
 * NULL (and the scan stops) without memory. */
static void *arena_alloc(scanner *s, size_t n, size_t align) {
  block *b = s->r->mem;
  if (b) {
    size_t at = (b->used + align - 1) & ~(align - 1);
    if (at <= b->cap && n <= b->cap - at) {
      b->used = at + n;
      return (char *)b->data + at;
    }
  }
  size_t cap = !b ? BLOCK_MIN : b->cap < BLOCK_MAX ? b->cap * 2 : BLOCK_MAX;
  if (cap < n)
    cap = n;
  block *nb = cap <= SIZE_MAX - sizeof *nb ? malloc(sizeof *nb + cap) : NULL;
  if (!nb) {
    no_memory(s);
    return NULL;
  }
  nb->next = b;
  nb->used = n;
  nb->cap = cap;
  s->r->mem = nb;
  return nb->data;
}

static char *dup_word(scanner *s, const char *p, size_t n) {
  char *d = n < SIZE_MAX ? arena_alloc(s, n + 1, 1) : NULL;
  if (!d)
    return NULL;
  memcpy(d, p, n);
  d[n] = 0;
  return d;
}

/* Makes room for one more element; returns 0 (and stops) without memory. */
static int grow(scanner *s, void **arr, size_t *cap, size_t n, size_t elem) {
  if (n < *cap)
    return 1;
  size_t nc = *cap ? *cap * 2 : 8;
  if (nc > SIZE_MAX / elem) {
    no_memory(s);
    return 0;
  }
  void *a = realloc(*arr, nc * elem);
  if (!a) {
    no_memory(s);
    return 0;
  }
  *arr = a;
  *cap = nc;
  return 1;
}

static void copy_word(char *dst, size_t cap, const char *p, size_t n) {
  if (n >= cap)
    n = cap - 1;
  memcpy(dst, p, n);
  dst[n] = 0;
}

/* ---- declarations ------------------------------------------------------------ */
typedef struct {
  int visible, external, weak;
} linkage;

/* Reads "[N]" dimensions after a name; returns the product (0 if none or
 * unsized) and sets *unsized for "[]". */
static uint64_t read_dims(scanner *s, int *dims, int *unsized) {
  uint64_t total = 1;
  tok t;
  *dims = 0;
  *unsized = 0;
  while (accept(s, &t, T_PUNCT, '[')) {
    next(s, &t);
    uint64_t n = 0;
    if (is_punct(&t, ']')) {
      *unsized = 1;
    } else {
      if (!parse_num(&t, &n))
        TERR(s, &t, 0, "array length is not a number");
      next(s, &t);
      if (!is_punct(&t, ']')) {
        TERR(s, &t, 0, "expected ']'");
        return 0;
      }
    }
    (*dims)++;
    total = sat_mul(total, n);
  }
  return *dims && !*unsized ? total : 0;
}

/* After a state-space word (.global, .const, .shared, .local): reads
 * "[.align N] [.vN] .type name[dims] [= init] {, name...} ;" into list. */
static void parse_var(scanner *s, var_list *list, pp_ptx_space space,
                      linkage lk) {
  uint32_t align = 0, vec = 1, elem = 0;
  char type[16] = "";
  tok t;
  for (;;) {
    next(s, &t);
    if (t.kind == T_WORD && *t.p == '.') {
      uint64_t n;
      uint32_t w;
      if (word_is(t.p, t.len, ".align")) {
        next(s, &t);
        if (parse_num(&t, &n))
          align = clamp32(n);
        else
          TERR(s, &t, 0, ".align without a number");
      } else if ((w = vec_width(t.p, t.len)) != 0) {
        vec = w;
      } else if (type_class(t.p, t.len) >= 0) {
        copy_word(type, sizeof type, t.p, t.len);
        elem = type_size(t.p, t.len);
      }
      continue; /* other qualifiers (.attribute etc.) */
    }
    if (t.kind == T_PUNCT && (*t.p == '[' || *t.p == '(' || *t.p == ')')) {
      continue; /* .const[bank], .attribute(...) */
    }
    if (t.kind == T_NUM)
      continue;
    break;
  }
  if (t.kind != T_WORD && t.kind != T_STOP && t.kind != T_EOF) {
    TERR(s, &t, 0, "declaration without a name");
    if (!is_punct(&t, ';'))
      skip_statement(s, 0);
    return;
  }
  while (t.kind == T_WORD) {
    int dims, unsized;
    const char *name = t.p;
    size_t nlen = t.len;
    uint64_t line = t.line;
    uint64_t count = read_dims(s, &dims, &unsized);
    if (!grow(s, (void **)&list->v, &list->cap, list->n, sizeof *list->v))
      return;
    pp_ptx_var *v = &list->v[list->n];
    memset(v, 0, sizeof *v);
    if (!(v->name = dup_word(s, name, nlen)))
      return;
    list->n++;
    v->space = space;
    memcpy(v->type, type, sizeof type);
    v->array = count;
    v->size = unsized ? 0 : sat_mul(sat_mul(elem, vec), dims ? count : 1);
    v->align = align ? align : elem * vec;
    v->external = lk.external;
    v->visible = lk.visible;
    v->line = line;
    next(s, &t);
    if (is_punct(&t, '=')) {
      skip_statement(s, 0);
      return;
    }
    if (!is_punct(&t, ','))
      break;
    next(s, &t);
  }
  if (t.kind == T_EOF)
    TERR(s, &t, 0, "unexpected end of text in a declaration");
  else if (!is_punct(&t, ';') && t.kind != T_STOP) {
    TERR(s, &t, 0, "unexpected '%.*s' in a declaration", (int)(t.len > 40 ? 40 : t.len), t.p);
    if (t.kind != T_PUNCT || *t.p != '}')
      skip_statement(s, 0);
    else
      s->p = t.p; /* let the caller see the brace */
  }
}

static const char *skip_blanks(const char *p, const char *end) {
  while (p < end && (CLS(*p) & C_BLANK))
    p++;
  return p;
}

/* nvcc's one form, ".reg .type %name<N>;" on one line, read directly;
 * returns 0 (having moved nothing) for anything else. */
static int reg_fast(scanner *s, pp_ptx_func *f) {
  const char *p = skip_blanks(s->p, s->end), *end = s->end;
  const char *ty = p;
  if (p >= end || *p != '.')
    return 0;
  p = word_end(p, end);
  int c = type_class(ty, (size_t)(p - ty));
  const char *nm = skip_blanks(p, end);
  if (c < 0 || nm == p || nm >= end || !(CLS(*nm) & C_START) || *nm == '.')
    return 0;
  p = word_end(nm, end);
  uint64_t n = 1;
  if (p < end && *p == '<') {
    const char *d = ++p;
    uint64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9' && p - d < 18)
      v = v * 10 + (uint64_t)(*p++ - '0');
    if (p == d || p >= end || *p != '>' || (*d == '0' && p - d > 1))
      return 0;
    n = v;
    p++;
  }
  p = skip_blanks(p, end);
  if (p >= end || *p != ';')
    return 0;
  f->regs[c] = pp_sat_add(f->regs[c], n);
  s->p = p + 1;
  return 1;
}

/* ".reg [.vN] .type name[<N>], ... ;" */
static void parse_reg(scanner *s, pp_ptx_func *f) {
  if (reg_fast(s, f))
    return;
  int cls_ = PP_PTX_REG_OTHER;
  uint64_t vec = 1;
  tok t;
  for (;;) {
    next(s, &t);
    if (t.kind == T_WORD && *t.p == '.') {
      int c = type_class(t.p, t.len);
      uint32_t w = vec_width(t.p, t.len);
      if (c >= 0)
        cls_ = c;
      else if (w)
        vec = w;
      continue;
    }
    break;
  }
  while (t.kind == T_WORD) {
    uint64_t n = 1;
    next(s, &t);
    if (is_punct(&t, '<')) {
      next(s, &t);
      if (!parse_num(&t, &n))
        TERR(s, &t, 0, "register count is not a number");
      next(s, &t);
      if (!is_punct(&t, '>'))
        TERR(s, &t, 0, "expected '>' in a register declaration");
      next(s, &t);
    }
    f->regs[cls_] = pp_sat_add(f->regs[cls_], sat_mul(n, vec));
    if (!is_punct(&t, ','))
      break;
    next(s, &t);
  }
  if (!is_punct(&t, ';') && t.kind != T_STOP) {
    if (t.kind == T_EOF)
      return;
    TERR(s, &t, 0, "unexpected '%.*s' in a register declaration",
        (int)(t.len > 40 ? 40 : t.len), t.p);
    if (!is_punct(&t, '}'))
      skip_statement(s, 0);
    else
      s->p = t.p;
  }
}

typedef struct pending_param {
  pp_ptx_param p; /* name still NULL */
  const char *name;
  size_t nlen;
} pending_param;

/* One parameter: "(.param|.reg) [.align N] [.vN] .type [.ptr [.space]
 * [.align N]] name[[N]]". Stops before ',' or ')'. */
static void parse_param(scanner *s, uint64_t *cursor) {
  uint32_t align = 0, vec = 1, elem = 0;
  int ptr = 0;
  char type[16] = "";
  const char *name = NULL;
  size_t nlen = 0;
  uint64_t array = 0;
  int dims = 0, unsized = 0;
  tok t;
  for (;;) {
    if (!accept(s, &t, T_WORD, 0))
      break;
    if (*t.p != '.') {
      name = t.p;
      nlen = t.len;
      array = read_dims(s, &dims, &unsized);
      break;
    }
    uint32_t w;
    if (word_is(t.p, t.len, ".align")) {
      uint64_t n = 0;
      next(s, &t);
      if (!parse_num(&t, &n))
        TERR(s, &t, 0, ".align without a number");
      if (!ptr) /* after .ptr it is the pointee's alignment */
        align = clamp32(n);
    } else if (word_is(t.p, t.len, ".ptr")) {
      ptr = 1;
    } else if ((w = vec_width(t.p, t.len)) != 0) {
      vec = w;
    } else if (type_class(t.p, t.len) >= 0) {
      copy_word(type, sizeof type, t.p, t.len);
      elem = type_size(t.p, t.len);
    }
  }
  if (!name) {
    TERR(s, &t, 0, "parameter without a name");
    return;
  }
  if (!grow(s, (void **)&s->pend, &s->cap_pend, s->npend, sizeof *s->pend))
    return;
  pending_param *pp = &s->pend[s->npend++];
  pp_ptx_param *pa = &pp->p;
  memset(pa, 0, sizeof *pa);
  pp->name = name;
  pp->nlen = nlen;
  memcpy(pa->type, type, sizeof type);
  pa->ptr = ptr;
  pa->array = array;
  pa->size = sat_mul(sat_mul(elem, vec), dims ? array : 1);
  pa->align = align ? align : elem * vec;
  uint64_t a = pa->align ? pa->align : 1;
  uint64_t off = *cursor % a ? pp_sat_add(*cursor, a - *cursor % a) : *cursor;
  pa->offset = off;
  *cursor = pp_sat_add(off, pa->size);
}

/* The pending list becomes f's: one arena piece holds the array and then
 * the names. */
static void commit_params(scanner *s, pp_ptx_func *f) {
  size_t n = s->npend, bytes = n * sizeof *f->params;
  for (size_t i = 0; i < n; i++)
    bytes += s->pend[i].nlen + 1; /* each under the text's length */
  pp_ptx_param *a = n ? arena_alloc(s, bytes, _Alignof(pp_ptx_param)) : NULL;
  if (!a)
    return;
  char *names = (char *)(a + n);
  for (size_t i = 0; i < n; i++) {
    a[i] = s->pend[i].p;
    a[i].name = names;
    memcpy(names, s->pend[i].name, s->pend[i].nlen);
    names[s->pend[i].nlen] = 0;
    names += s->pend[i].nlen + 1;
  }
  f->params = a;
  f->nparams = n;
}

/* After '(': parameters up to and including ')'. With f NULL (a .func's
 * return list) they are read and dropped. */
static void parse_params(scanner *s, pp_ptx_func *f, const char *fname) {
  uint64_t cursor = 0;
  tok t;
  s->npend = 0;
  for (;;) {
    next(s, &t);
    if (is_punct(&t, ')') || t.kind == T_STOP)
      break;
    if (t.kind == T_EOF) {
      TERR(s, &t, 0, "unexpected end of text in the parameter list of '%s'",
          fname);
      break;
    }
    if (is_punct(&t, ','))
      continue;
    if (is_word(&t, ".param") || is_word(&t, ".reg")) {
      parse_param(s, &cursor);
      continue;
    }
    TERR(s, &t, 0, "unexpected '%.*s' in the parameter list of '%s'",
        (int)(t.len > 40 ? 40 : t.len), t.p, fname);
    if (is_punct(&t, '{') || is_punct(&t, ';')) {
      s->p = t.p; /* the header goes on from here */
      break;
    }
  }
  if (f)
    commit_params(s, f);
}

/* ".maxntid x[, y[, z]]" and friends. */
static void parse_dims3(scanner *s, uint32_t out[3], const char *what) {
  tok t;
  for (int i = 0; i < 3; i++) {
    uint64_t n;
    next(s, &t);
    if (!parse_num(&t, &n)) {
      TERR(s, &t, 0, "%s: expected a number", what);
      if (t.kind == T_PUNCT)
        s->p = t.p;
      return;
    }
    out[i] = clamp32(n);
    if (!accept(s, &t, T_PUNCT, ','))
      return;
  }
}

static void parse_num1(scanner *s, uint32_t *out, const char *what) {
  tok t;
  uint64_t n;
  next(s, &t);
  if (parse_num(&t, &n))
    *out = clamp32(n);
  else {
    TERR(s, &t, 0, "%s: expected a number", what);
    if (t.kind == T_PUNCT)
      s->p = t.p;
  }
}

/* A performance directive; returns 0 when the word is none. */
static int perf_directive(scanner *s, pp_ptx_func *f, const tok *w) {
  if (is_word(w, ".maxntid")) {
    f->has_maxntid = 1;
    parse_dims3(s, f->maxntid, ".maxntid");
  } else if (is_word(w, ".reqntid")) {
    f->has_reqntid = 1;
    parse_dims3(s, f->reqntid, ".reqntid");
  } else if (is_word(w, ".minnctapersm")) {
    f->has_minnctapersm = 1;
    parse_num1(s, &f->minnctapersm, ".minnctapersm");
  } else if (is_word(w, ".maxnreg")) {
    f->has_maxnreg = 1;
    parse_num1(s, &f->maxnreg, ".maxnreg");
  } else {
    return 0;
  }
  return 1;
}

/* ---- function bodies ------------------------------------------------------------ */
typedef struct grid_watch {
  char addr[48];
  size_t len;
  uint64_t at; /* instruction index of the atomic */
  int set;
} grid_watch;

#define GRID_WINDOW 16 /* instructions from the add-atomic to its spin load */

enum {
  P_GLOBAL = 1,
  P_ADD = 2,
  P_INC = 4,
  P_VOLATILE = 8,
  P_ACQUIRE = 16,
  P_RELAXED = 32
};

/* The components of a dotted opcode that matter here, in one walk. */
static unsigned parts(const char *op, size_t n) {
  unsigned m = 0;
  size_t i = 0;
  while (i < n) {
    if (op[i++] != '.')
      continue;
    size_t j = i;
    while (j < n && op[j] != '.')
      j++;
    const char *w = op + i;
    size_t l = j - i;
    switch (l ? *w : 0) {
    case 'g':
      m |= word_is(w, l, "global") ? P_GLOBAL : 0;
      break;
    case 'a':
      m |= word_is(w, l, "add") ? P_ADD : word_is(w, l, "acquire") ? P_ACQUIRE : 0;
      break;
    case 'i':
      m |= word_is(w, l, "inc") ? P_INC : 0;
      break;
    case 'v':
      m |= word_is(w, l, "volatile") ? P_VOLATILE : 0;
      break;
    case 'r':
      m |= word_is(w, l, "relaxed") ? P_RELAXED : 0;
      break;
    }
    i = j;
  }
  return m;
}

static inline __attribute__((always_inline)) int
starts(const char *op, size_t n, const char *lit) {
  size_t l = __builtin_strlen(lit);
  return n >= l && memcmp(op, lit, l) == 0;
}

/* The first "[...]" operand in [p, e), blanks dropped. */
static size_t first_address(const char *p, const char *e, char *out,
                            size_t cap) {
  const char *b = memchr(p, '[', (size_t)(e - p));
  if (!b)
    return 0;
  size_t n = 0;
  for (b++; b < e && *b != ']'; b++)
    if (!(CLS(*b) & C_BLANK) && *b != '\n' && n < cap)
      out[n++] = *b;
  return b < e ? n : 0;
}

typedef enum { OP_PLAIN, OP_ATOM, OP_SPIN } op_kind;

/* Whether a load's components can hold volatile, acquire or relaxed: each
 * has a 'v', 'q' or 'x', which most loads (ld.param.u64, ld.global.f32)
 * have none of. A filter before parts(). */
static inline int may_spin(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] == 'v' || p[i] == 'q' || p[i] == 'x')
      return 1;
  return 0;
}

static op_kind classify(pp_ptx_func *f, const char *op, size_t n) {
  switch (*op) {
  case 'b':
    if ((starts(op, n, "bar.") && !starts(op, n, "bar.warp.")) ||
        (starts(op, n, "barrier.") && !starts(op, n, "barrier.cluster.")))
      f->bar_sync++;
    return OP_PLAIN;
  case 'a':
  case 'r':
    if (starts(op, n, "atom.") || starts(op, n, "red.")) {
      unsigned m = parts(op, n);
      f->atomics++;
      if (m & P_GLOBAL)
        f->atomics_global++;
      if (m & (P_ADD | P_INC))
        return OP_ATOM;
    }
    return OP_PLAIN;
  case 'l':
    if (n > 3 && op[1] == 'd' && op[2] == '.' && may_spin(op + 3, n - 3) &&
        (parts(op, n) & (P_VOLATILE | P_ACQUIRE | P_RELAXED)))
      return OP_SPIN;
    return OP_PLAIN;
  default:
    return OP_PLAIN;
  }
}

/* Grid synchronisation, as nvcc's cooperative groups and the reference's
 * emitted barrier both do it: an add-atomic on a counter followed, within
 * GRID_WINDOW instructions, by a spin load (volatile/acquire/relaxed) of the
 * same address. */
static void watch_grid(pp_ptx_func *f, grid_watch *g, op_kind k,
                       const char *ops, const char *semi) {
  char addr[sizeof g->addr];
  size_t n = first_address(ops, semi, addr, sizeof addr);
  if (!n)
    return;
  if (k == OP_ATOM) {
    memcpy(g->addr, addr, n);
    g->len = n;
    g->at = f->instructions;
    g->set = 1;
  } else if (g->set && n == g->len && memcmp(addr, g->addr, n) == 0 &&
             f->instructions - g->at <= GRID_WINDOW) {
    f->grid_syncs++;
    g->set = 0;
  }
}

/* A body's variables are read into s->bvars (reused from body to body)
 * and copied into the arena when the body ends. */
static void add_body_var(scanner *s, pp_ptx_func *f, pp_ptx_space sp) {
  var_list *l = &s->bvars;
  size_t before = l->n;
  parse_var(s, l, sp, (linkage){0, 0, 0});
  for (size_t i = before; i < l->n; i++) {
    if (sp == PP_PTX_SHARED)
      f->shared_bytes = pp_sat_add(f->shared_bytes, l->v[i].size);
    else if (sp == PP_PTX_LOCAL)
      f->local_bytes = pp_sat_add(f->local_bytes, l->v[i].size);
  }
}

static void end_body(scanner *s, pp_ptx_func *f) {
  f->body_end = (size_t)(s->p - s->base);
  size_t n = s->bvars.n;
  pp_ptx_var *v = n ? arena_alloc(s, n * sizeof *v, _Alignof(pp_ptx_var)) : NULL;
  if (v) {
    memcpy(v, s->bvars.v, n * sizeof *v);
    f->vars = v;
    f->nvars = n;
  }
  s->bvars.n = 0;
}

/* A directive inside a body; s->p at its '.'. */
static void body_directive(scanner *s, pp_ptx_func *f) {
  tok w;
  next(s, &w);
  if (is_word(&w, ".reg"))
    parse_reg(s, f);
  else if (is_word(&w, ".shared"))
    add_body_var(s, f, PP_PTX_SHARED);
  else if (is_word(&w, ".local"))
    add_body_var(s, f, PP_PTX_LOCAL);
  else if (is_word(&w, ".global"))
    add_body_var(s, f, PP_PTX_GLOBAL);
  else if (is_word(&w, ".const"))
    add_body_var(s, f, PP_PTX_CONST);
  else if (is_word(&w, ".loc") || is_word(&w, ".file"))
    skip_statement(s, 1);
  else if (!perf_directive(s, f, &w))
    skip_statement(s, 0); /* .param, .pragma, .branchtargets, ... */
}

/* ---- the body's simple lines, a line at a time ------------------------------ */
/* Most body lines are one instruction ("\tadd.s32 \t%r1, %r2, %r3;"), a
 * label or nothing, with no comment, string or unusual byte. body_lines
 * reads such lines from bit masks of the 64 bytes at the line's start (one
 * vector pass, then bit scans: no byte loops and few branches) and gives
 * back any other line untouched, at s->p, to scan_body's statement loop,
 * which reads it as before; what it counts is what that loop would. */
typedef struct {
  uint64_t nl;    /* '\n' */
  uint64_t odd;   /* what a simple line cannot hold: '/', '"', DEL, and
                     control or non-ASCII bytes but tab and '\n' */
  uint64_t semi;  /* ';' */
  uint64_t blank; /* tab, space */
  uint64_t word;  /* C_WORD */
} lmasks;

#ifdef PP_SSE2
/* The masks of the 32 bytes at p + at (at 0 or 32), or'ed into m. Signed
 * compare: bytes from 0x80 up are below ' ', so odd. */
__attribute__((target("avx2"))) static inline __attribute__((always_inline))
void lm_avx2(const char *p, int at, lmasks *m) {
#define EQ(c) _mm256_cmpeq_epi8(x, _mm256_set1_epi8(c))
#define OR _mm256_or_si256
#define MOVE(v) ((uint64_t)(uint32_t)_mm256_movemask_epi8(v) << at)
  __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(p + at));
  __m256i tab = EQ('\t'), nl = EQ('\n');
  __m256i odd = OR(OR(EQ('/'), EQ('"')),
                   OR(EQ(0x7f), _mm256_andnot_si256(
                                    OR(tab, nl), _mm256_cmpgt_epi8(
                                                     _mm256_set1_epi8(' '), x))));
  /* C_WORD by nibbles: a byte is a word byte when the bits its low nibble
   * picks from WLO and its high nibble from WHI meet, each bit one block
   * of the ASCII table: [0-9P-Yp-y], [A-Oa-o], [Zz], [_], [$%.]. */
#define WLO 1, 3, 3, 3, 19, 19, 3, 3, 3, 3, 6, 2, 2, 2, 18, 10
#define WHI 0, 0, 16, 1, 2, 13, 2, 5, 0, 0, 0, 0, 0, 0, 0, 0
  __m256i nib = _mm256_set1_epi8(0x0f);
  __m256i bits = _mm256_and_si256(
      _mm256_shuffle_epi8(_mm256_setr_epi8(WLO, WLO),
                          _mm256_and_si256(x, nib)),
      _mm256_shuffle_epi8(_mm256_setr_epi8(WHI, WHI),
                          _mm256_and_si256(_mm256_srli_epi16(x, 4), nib)));
  __m256i nonword = _mm256_cmpeq_epi8(bits, _mm256_setzero_si256());
#undef WLO
#undef WHI
  m->nl |= MOVE(nl);
  m->odd |= MOVE(odd);
  m->semi |= MOVE(EQ(';'));
  m->blank |= MOVE(OR(tab, EQ(' ')));
  m->word |= (uint64_t)(uint32_t)~_mm256_movemask_epi8(nonword) << at;
#undef EQ
#undef OR
#undef MOVE
}

__attribute__((target("avx2"))) static void
body_lines_avx2(scanner *s, pp_ptx_func *f, grid_watch *g) {
  const char *p = s->p, *const end = s->end, *ls = s->line_start;
  uint64_t line = s->line;
  const size_t max_line = s->max_line;
  while (end - p >= 32) {
    lmasks m = {0, 0, 0, 0, 0};
    lm_avx2(p, 0, &m);
    if (!m.nl) {
      if (end - p < 64)
        break;
      lm_avx2(p, 32, &m);
      if (!m.nl)
        break; /* a long line */
    }
    unsigned len = (unsigned)__builtin_ctzll(m.nl); /* p[len] is '\n' */
    uint64_t in = ((uint64_t)1 << len) - 1;
    if ((m.odd & in) || (size_t)(p + len - ls) > max_line)
      break;
    uint64_t text = ~m.blank & in; /* what is not blank */
    if (text) {
      unsigned o = (unsigned)__builtin_ctzll(text);
      int guarded = p[o] == '@';
      if (guarded) { /* @p or @!p, then the opcode */
        unsigned q = o + 1;
        if (q < len && p[q] == '!')
          q++;
        q += (unsigned)__builtin_ctzll(~m.word >> q); /* stops by p[len] */
        o = q + (unsigned)__builtin_ctzll(~m.blank >> q);
        if (o >= len || !(CLS(p[o]) & C_START))
          break;
      } else if (!(CLS(p[o]) & C_START) || p[o] == '.') {
        break;
      }
      unsigned e = o + (unsigned)__builtin_ctzll(~m.word >> o);
      if (!guarded) {
        unsigned k = e + (unsigned)__builtin_ctzll(~m.blank >> e);
        if (k < len && p[k] == ':') { /* a label, alone on its line */
          if (text >> (k + 1))
            break;
          goto next_line;
        }
      }
      /* An instruction: one ';', after the opcode, then blanks. */
      uint64_t semis = m.semi & in;
      if (!semis || (semis & (semis - 1)))
        break;
      unsigned sc = (unsigned)__builtin_ctzll(semis);
      if (sc < e || (text >> (sc + 1)))
        break;
      f->instructions++;
      op_kind k = classify(f, p + o, e - o);
      if (k != OP_PLAIN)
        watch_grid(f, g, k, p + e, p + sc);
    }
  next_line:
    line++;
    ls = p + len + 1;
    p = ls;
  }
  s->p = p;
  s->line = line;
  s->line_start = ls;
}
#endif

/* Without AVX2 (where SSE2's two loads a half cost more than they save)
 * every line is read by the statement loop. */
static void body_lines_none(scanner *s, pp_ptx_func *f, grid_watch *g) {
  (void)s;
  (void)f;
  (void)g;
}

typedef void (*body_lines_fn)(scanner *, pp_ptx_func *, grid_watch *);

static body_lines_fn pick_body_lines(void) {
#ifdef PP_SSE2
  if (__builtin_cpu_supports("avx2"))
    return body_lines_avx2;
#endif
  return body_lines_none;
}

/* The body after '{' (at open). */
static void scan_body(scanner *s, pp_ptx_func *f, const char *open,
                      const char *kind) {
  uint64_t open_line = s->line;
  uint32_t depth = 1;
  s->bvars.n = 0;
  grid_watch g = {.set = 0};
  f->body_begin = (size_t)(open - s->base);
  while (!s->stop) {
    s->lines(s, f, &g);
    const char *p = s->p, *end = s->end;
    while (p < end && (CLS(*p) & C_BLANK))
      p++;
    s->p = p;
    if (p >= end) {
      ERR(s, p, 0, "unexpected end of text in the body of %s '%s' (opened "
                   "at line %llu)",
          kind, f->name, (unsigned long long)open_line);
      break;
    }
    char c = *p;
    if (c == '\n') {
      newline(s, p);
      s->p = p + 1;
    } else if (c == '{') {
      depth++;
      s->p = p + 1;
    } else if (c == '}') {
      s->p = p + 1;
      if (--depth == 0) {
        end_body(s, f);
        return;
      }
    } else if (c == ';') {
      s->p = p + 1;
    } else if (c == '.') {
      body_directive(s, f);
    } else if (c == '/') {
      if (!skip_comment(s)) {
        ERR(s, p, 0, "unexpected '/'");
        s->p = p + 1;
        skip_statement(s, 0);
      }
    } else if (c == '@' || (CLS(c) & C_START)) {
      int guarded = c == '@';
      if (guarded) { /* @p or @!p, then the opcode */
        p++;
        if (p < end && *p == '!')
          p++;
        p = word_end(p, end);
        while (p < end && (CLS(*p) & C_BLANK))
          p++;
        if (p >= end || !(CLS(*p) & C_START)) {
          s->p = p;
          ERR(s, p, 0, "expected an instruction after a guard predicate");
          skip_statement(s, 0);
          continue;
        }
      }
      const char *op = p;
      p = word_end(p, end);
      size_t n = (size_t)(p - op);
      if (!guarded) {
        const char *q = p;
        while (q < end && (CLS(*q) & C_BLANK))
          q++;
        if (q < end && *q == ':') { /* a label */
          s->p = q + 1;
          continue;
        }
      }
      f->instructions++;
      op_kind k = classify(f, op, n);
      s->p = p;
      const char *semi = skip_statement(s, 0);
      if (k != OP_PLAIN && semi)
        watch_grid(f, &g, k, p, semi);
    } else if (CLS(c) & C_BAD) {
      bad_byte(s, p);
    } else {
      ERR(s, p, 0, "unexpected '%c' in the body of %s '%s'", c, kind, f->name);
      s->p = p + 1;
      skip_statement(s, 0);
    }
  }
  end_body(s, f);
}

/* ---- functions ----------------------------------------------------------------- */
static uint32_t name_hash(const char *p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)p[i]) * 16777619u;
  return h;
}

/* Function i of list k (0 entries, 1 funcs) during the scan. */
static pp_ptx_func *func_at(const scanner *s, int k, size_t i) {
  return &s->chunks[k][i / FCHUNK][i % FCHUNK];
}

/* Takes the declared-only function of this name out of the window. */
static pp_ptx_func *take_declared(scanner *s, int entry, const tok *name,
                                  uint32_t h) {
  int k = entry ? 0 : 1;
  pp_ptx_func **fs = s->decl[k];
  size_t n = s->ndecl[k];
  uint32_t *hs = s->decl_hash[k];
  for (size_t i = n; i-- > 0;) {
    pp_ptx_func *f = fs[i];
    if (hs[i] == h && word_is(name->p, name->len, f->name)) {
      memmove(fs + i, fs + i + 1, (n - i - 1) * sizeof *fs);
      memmove(hs + i, hs + i + 1, (n - i - 1) * sizeof *hs);
      s->ndecl[k]--;
      return f;
    }
  }
  return NULL;
}

static void put_declared(scanner *s, int entry, pp_ptx_func *f) {
  int k = entry ? 0 : 1;
  pp_ptx_func **fs = s->decl[k];
  uint32_t *hs = s->decl_hash[k];
  if (s->ndecl[k] == DECL_WINDOW) { /* the oldest leaves */
    memmove(fs, fs + 1, (DECL_WINDOW - 1) * sizeof *fs);
    memmove(hs, hs + 1, (DECL_WINDOW - 1) * sizeof *hs);
    s->ndecl[k]--;
  }
  fs[s->ndecl[k]] = f;
  hs[s->ndecl[k]++] = name_hash(f->name, strlen(f->name));
}

static pp_ptx_func *new_function(scanner *s, int entry, const tok *name) {
  pp_ptx_result *r = s->r;
  int k = entry ? 0 : 1;
  size_t *n = entry ? &r->nentries : &r->nfuncs;
  pp_ptx_func *f = take_declared(s, entry, name,
                                 name_hash(name->p, name->len));
  if (f) {
    f->params = NULL; /* the latest list wins (the old one stays in the
                         arena until the result is freed) */
    f->nparams = 0;
    f->line = name->line;
    f->col = name->col;
    return f;
  }
  if (*n >= MAX_FUNCS) {
    TERR(s, name, 1, "more than %zu %s; scan stopped", MAX_FUNCS,
         entry ? "entries" : "funcs");
    return NULL;
  }
  if (!s->chunks[k]) {
    if (!(s->chunks[k] = arena_alloc(s, MAX_FUNCS / FCHUNK * sizeof(void *),
                                     _Alignof(void *))))
      return NULL;
    if (s->feed)
      s->feed->chunks[k] = s->chunks[k];
  }
  if (*n % FCHUNK == 0 &&
      !(s->chunks[k][*n / FCHUNK] = arena_alloc(
            s, FCHUNK * sizeof *f, _Alignof(pp_ptx_func))))
    return NULL;
  f = func_at(s, k, *n);
  memset(f, 0, sizeof *f);
  if (!(f->name = dup_word(s, name->p, name->len)))
    return NULL;
  (*n)++;
  f->line = name->line;
  f->col = name->col;
  return f;
}

/* The functions of list k into one array (*out); empty on no memory. */
static void gather(scanner *s, int k, pp_ptx_func **out, size_t *n) {
  *out = NULL;
  if (!*n)
    return;
  pp_ptx_func *a = malloc(*n * sizeof *a);
  if (!a) {
    *n = 0;
    no_memory(s);
    return;
  }
  for (size_t i = 0; i < *n; i += FCHUNK) {
    size_t m = *n - i < FCHUNK ? *n - i : FCHUNK;
    memcpy(a + i, s->chunks[k][i / FCHUNK], m * sizeof *a);
  }
  *out = a;
}

/* ---- the first marker, body by body ------------------------------------------ */
typedef struct {
  pp_ptx_func *f; /* the body just closed, or NULL */
  size_t base, mlen, last_end;
} marker_run;

static void on_marker(void *ud, size_t pos) {
  marker_run *m = ud;
  size_t at = m->base + pos;
  if (m->f && m->f->body_begin <= at && at + m->mlen <= m->f->body_end)
    m->f->markers++;
  m->last_end = at + m->mlen;
}

/* Matches of the first marker that start before offset `to` (and after
 * those of the previous call), each given to f when it lies wholly inside
 * f's body: called as each body closes, in text order, then for the rest
 * of the text. The bodies do not overlap, so a match can only lie in the
 * first body that ends after its start: the one closing now. */
static void marker_advance(scanner *s, size_t to, pp_ptx_func *f) {
  if (!s->r->nmarkers)
    return;
  size_t len = (size_t)(s->end - s->base), mlen = s->mk_len;
  size_t start = s->mk_pos > s->mk_next ? s->mk_pos : s->mk_next;
  if (to > len)
    to = len;
  if (start < to && mlen <= len - start) {
    size_t span = len - start; /* starts in [start, to) only */
    if (to - start <= span - mlen)
      span = (to - start) + mlen - 1;
    marker_run m = {f, start, mlen, 0};
    uint64_t n = pp_ptx_find_needle(&s->mk, s->base + start, span,
                                    on_marker, &m);
    s->mk_count += n;
    if (n)
      s->mk_next = m.last_end;
  }
  if (to > s->mk_pos)
    s->mk_pos = to;
}

/* After .entry or .func. */
static void parse_function(scanner *s, int entry, linkage lk) {
  const char *kind = entry ? "entry" : "func";
  tok t;
  next(s, &t);
  if (!entry && is_punct(&t, '(')) { /* return parameters */
    parse_params(s, NULL, "(return)");
    next(s, &t);
  }
  if (t.kind != T_WORD || *t.p == '.') {
    if (t.kind == T_EOF)
      TERR(s, &t, 0, "unexpected end of text after .%s", kind);
    else if (t.kind != T_STOP)
      TERR(s, &t, 0, ".%s without a name", kind);
    if (t.kind != T_EOF && t.kind != T_STOP)
      skip_statement(s, 0);
    return;
  }
  pp_ptx_func *f = new_function(s, entry, &t);
  if (!f)
    return;
  f->visible |= lk.visible;
  f->external |= lk.external;
  f->weak |= lk.weak;
  if (accept(s, &t, T_PUNCT, '('))
    parse_params(s, f, f->name);
  for (;;) {
    next(s, &t);
    if (t.kind == T_STOP)
      return;
    if (is_punct(&t, '{')) {
      f->defined = 1;
      scan_body(s, f, t.p, kind);
      marker_advance(s, f->body_end, f);
      return;
    }
    if (is_punct(&t, ';')) {
      put_declared(s, entry, f);
      return;
    }
    if (t.kind == T_EOF) {
      TERR(s, &t, 0, "unexpected end of text in the header of %s '%s'", kind,
          f->name);
      return;
    }
    if (t.kind == T_WORD && *t.p == '.') {
      if (!perf_directive(s, f, &t) && is_word(&t, ".pragma"))
        skip_statement(s, 0);
      continue; /* .noreturn, .explicitcluster, ... */
    }
    if (t.kind == T_NUM || is_punct(&t, ','))
      continue; /* arguments of directives we do not read */
    TERR(s, &t, 0, "unexpected '%.*s' in the header of %s '%s'",
        (int)(t.len > 40 ? 40 : t.len), t.p, kind, f->name);
    if (is_punct(&t, '}'))
      return;
  }
}

/* ---- module scope ----------------------------------------------------------------- */
/* ".version 9.0": one number, kept as written. */
static void read_version(scanner *s, char *out, size_t cap) {
  tok t;
  next(s, &t);
  if (t.kind != T_NUM) {
    if (t.kind != T_STOP)
      TERR(s, &t, 0, ".version without a number");
    if (t.kind == T_PUNCT)
      s->p = t.p;
    return;
  }
  copy_word(out, cap, t.p, t.len);
}

/* ".target sm_90[, texmode_independent ...]": the list, as "a, b". */
static void read_target(scanner *s, char *out, size_t cap) {
  tok t;
  size_t n = 0;
  out[0] = 0;
  for (;;) {
    next(s, &t);
    if (t.kind != T_WORD) {
      if (t.kind != T_STOP)
        TERR(s, &t, 0, ".target without a name");
      if (t.kind == T_PUNCT)
        s->p = t.p;
      return;
    }
    if (n && n + 2 < cap)
      out[n++] = ',', out[n++] = ' ';
    for (size_t i = 0; i < t.len && n + 1 < cap; i++)
      out[n++] = t.p[i];
    out[n] = 0;
    if (!accept(s, &t, T_PUNCT, ','))
      return;
  }
}

/* ".section name { ... }": skipped whole. */
static void skip_section(scanner *s) {
  tok t;
  uint32_t depth = 0;
  do {
    next(s, &t);
    if (t.kind == T_EOF) {
      TERR(s, &t, 0, "unexpected end of text in a .section");
      return;
    }
    if (is_punct(&t, '{'))
      depth++;
    else if (is_punct(&t, '}') && depth)
      depth--;
  } while (t.kind != T_STOP && (depth || !is_punct(&t, '}')));
}

static void module_directive(scanner *s, tok *t) {
  linkage lk = {0, 0, 0};
  for (;;) {
    if (is_word(t, ".visible"))
      lk.visible = 1;
    else if (is_word(t, ".extern"))
      lk.external = 1;
    else if (is_word(t, ".weak") || is_word(t, ".common"))
      lk.weak = 1;
    else
      break;
    next(s, t);
  }
  pp_ptx_result *r = s->r;
  if (t->kind != T_WORD || *t->p != '.') {
    if (t->kind == T_EOF)
      TERR(s, t, 0, "unexpected end of text after a linkage directive");
    else if (t->kind != T_STOP) {
      TERR(s, t, 0, "unexpected '%.*s' after a linkage directive",
          (int)(t->len > 40 ? 40 : t->len), t->p);
      skip_statement(s, 1);
    }
    return;
  }
  var_list g = {r->globals, r->nglobals, s->cap_globals};
  if (is_word(t, ".version")) {
    read_version(s, r->version, sizeof r->version);
  } else if (is_word(t, ".target")) {
    read_target(s, r->target, sizeof r->target);
  } else if (is_word(t, ".address_size")) {
    uint32_t n = 0;
    parse_num1(s, &n, ".address_size");
    r->address_size = n;
  } else if (is_word(t, ".entry") || is_word(t, ".func")) {
    parse_function(s, t->p[1] == 'e', lk);
  } else if (is_word(t, ".global") || is_word(t, ".const") ||
             is_word(t, ".shared") || is_word(t, ".local")) {
    pp_ptx_space sp = t->p[1] == 'g'   ? PP_PTX_GLOBAL
                      : t->p[1] == 'c' ? PP_PTX_CONST
                      : t->p[1] == 's' ? PP_PTX_SHARED
                                       : PP_PTX_LOCAL;
    parse_var(s, &g, sp, lk);
    r->globals = g.v;
    r->nglobals = g.n;
    s->cap_globals = g.cap;
  } else if (is_word(t, ".file") || is_word(t, ".loc")) {
    skip_statement(s, 1);
  } else if (is_word(t, ".section")) {
    skip_section(s);
  } else if (is_word(t, ".pragma") || is_word(t, ".alias") ||
             is_word(t, ".tex") || is_word(t, ".callprototype")) {
    skip_statement(s, 0);
  } else {
    TERR(s, t, 0, "unknown directive '%.*s' at module scope",
        (int)(t->len > 40 ? 40 : t->len), t->p);
    skip_statement(s, 1);
  }
}

/* Publishes the defined entries that follow the published ones: those
 * can no longer change. */
static void publish(scanner *s) {
  const pp_ptx_result *r = s->r;
  size_t k = s->fed;
  while (k < r->nentries && func_at(s, 0, k)->defined)
    k++;
  if (k == s->fed)
    return;
  s->fed = k;
  atomic_store(&s->feed->ready, k);
  if (s->feed->published)
    s->feed->published(s->feed, k);
  /* A sleeping reader is woken for FEED_BATCH entries at a time, not a
   * system call per entry (done wakes it in any case). */
  if (k - s->signalled >= FEED_BATCH && atomic_load(&s->feed->waiting)) {
    s->signalled = k;
    pthread_mutex_lock(&s->feed->mu);
    pthread_cond_signal(&s->feed->cv);
    pthread_mutex_unlock(&s->feed->mu);
  }
}

static void scan_module(scanner *s) {
  tok t;
  while (!s->stop) {
    next(s, &t);
    if (t.kind == T_EOF || t.kind == T_STOP)
      return;
    if (t.kind == T_WORD && *t.p == '.') {
      module_directive(s, &t);
      if (s->feed)
        publish(s);
    } else if (is_punct(&t, ';'))
      continue;
    else if (is_punct(&t, '}'))
      TERR(s, &t, 0, "'}' without a matching '{'");
    else {
      TERR(s, &t, 0, "unexpected '%.*s' at module scope",
          (int)(t.len > 40 ? 40 : t.len), t.p);
      skip_statement(s, 1);
    }
  }
}

/* ---- entry point ------------------------------------------------------------------- */
static int bad_opts(pp_ptx_result *out, const char *fmt, const char *arg) {
  out->partial = 1;
  out->nerrors = 1;
  snprintf(out->errors[0].what, sizeof out->errors[0].what, fmt, arg);
  return -1;
}

static int set_opts(const pp_ptx_opts *o, pp_ptx_result *out, scanner *s) {
  static const char *const dflt[] = {PP_PTX_DEFAULT_MARKER};
  const char *const *m = o && o->markers ? o->markers : dflt;
  size_t nm = o && o->markers ? o->nmarkers : 1;
  if (nm > PP_PTX_MAX_MARKERS)
    return bad_opts(out, "more than %s markers", "16");
  for (size_t i = 0; i < nm; i++) {
    size_t l = m[i] ? strlen(m[i]) : 0;
    if (l == 0 || l > PP_PTX_MARKER_MAX)
      return bad_opts(out, "marker %s is empty or longer than 256 bytes",
                      m[i] ? m[i] : "(null)");
    memcpy(out->markers[i], m[i], l + 1);
  }
  out->nmarkers = nm;
  s->counter = o && o->counter_global ? o->counter_global
                                      : PP_PTX_DEFAULT_COUNTER;
  s->counter_len = strlen(s->counter);
  if (s->counter_len > PP_PTX_COUNTER_MAX)
    return bad_opts(out, "counter_global %s is longer than 256 bytes", "");
  s->max_line = o && o->max_line ? o->max_line : PP_PTX_DEFAULT_MAX_LINE;
  return 0;
}

/* Marker counts, module-wide (the bodies had their matches of the first
 * marker as they closed). */
static void count_markers(scanner *s, const char *text, size_t len) {
  pp_ptx_result *r = s->r;
  if (r->nmarkers) {
    marker_advance(s, len, NULL);
    r->marker_count[0] = s->mk_count;
  }
  for (size_t i = 1; i < r->nmarkers; i++)
    r->marker_count[i] = pp_ptx_find_all(text, len, r->markers[i],
                                         strlen(r->markers[i]), NULL, NULL);
  for (int k = 0; k < 2; k++) {
    size_t n = k ? r->nfuncs : r->nentries;
    for (size_t i = 0; i < n; i++) {
      const pp_ptx_func *f = func_at(s, k, i);
      if (f->grid_syncs || f->markers)
        r->grid_sync = 1;
    }
  }
}

static void finish(scanner *s, const char *text, size_t len) {
  pp_ptx_result *r = s->r;
  if (!s->stop && s->p >= s->end && (size_t)(s->end - s->line_start) >
                                         s->max_line)
    add_error_at(s, s->line, (uint64_t)s->max_line + 1,
                 (size_t)(s->line_start - s->base) + s->max_line, 1,
                 "line longer than %zu bytes", s->max_line);
  if (s->stop)
    r->lines = pp_ptx_count_lines(text, len);
  else
    r->lines = (s->line - 1) + (len > 0 && text[len - 1] != '\n');
  count_markers(s, text, len);
  for (size_t i = 0; s->counter_len && i < r->nglobals; i++)
    if (r->globals[i].space == PP_PTX_GLOBAL &&
        strcmp(r->globals[i].name, s->counter) == 0)
      r->counter_global = 1;
  r->have_digest = pp_ptx_have_digest();
  if (!s->feed || !s->feed->no_digest)
    r->digest = pp_ptx_digest(text, len);
  if (!s->feed) {
    gather(s, 0, &r->entries, &r->nentries);
    gather(s, 1, &r->funcs, &r->nfuncs);
  }
}

static int scan(const char *text, size_t len, const pp_ptx_opts *opts,
                pp_ptx_result *out, pp_ptx_feed *feed) {
  memset(out, 0, sizeof *out);
  if (!text && len)
    return bad_opts(out, "text is NULL with length %s", "> 0");
  if (!text)
    text = "";
  scanner s;
  memset(&s, 0, sizeof s);
  if (set_opts(opts, out, &s) != 0)
    return -1;
  s.base = s.p = s.line_start = text;
  s.end = text + len;
  s.line = 1;
  s.r = out;
  s.feed = feed;
  s.lines = feed && feed->plain_lines ? body_lines_none : pick_body_lines();
  s.mk_len = out->nmarkers ? strlen(out->markers[0]) : 0;
  pp_ptx_needle_init(&s.mk, out->markers[0], s.mk_len);
  out->bytes = len;
  scan_module(&s);
  finish(&s, text, len);
  free(s.pend);
  free(s.bvars.v);
  return out->partial ? 1 : 0;
}

PP_EXPORT int pp_ptx_scan(const char *text, size_t len,
                          const pp_ptx_opts *opts, pp_ptx_result *out) {
  if (!out)
    return -1;
  return scan(text, len, opts, out, NULL);
}

int pp_ptx_scan_feed(const char *text, size_t len, const pp_ptx_opts *opts,
                     pp_ptx_result *out, pp_ptx_feed *feed) {
  int rc = scan(text, len, opts, out, feed);
  feed->rc = rc;
  atomic_store(&feed->ready, out->nentries);
  atomic_store(&feed->done, 1);
  pthread_mutex_lock(&feed->mu);
  pthread_cond_signal(&feed->cv);
  pthread_mutex_unlock(&feed->mu);
  return rc;
}

PP_EXPORT void pp_ptx_result_free(pp_ptx_result *r) {
  if (!r)
    return;
  free(r->entries);
  free(r->funcs);
  free(r->globals);
  for (block *b = r->mem, *nb; b; b = nb) {
    nb = b->next;
    free(b);
  }
  r->entries = r->funcs = NULL;
  r->globals = NULL;
  r->nentries = r->nfuncs = r->nglobals = 0;
  r->mem = NULL;
}
