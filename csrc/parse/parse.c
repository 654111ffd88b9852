/*
 * parse.c: the record-line parser. Reads logs (ours, the reference's, any
 * prefix word followed by name=value fields) into a column store, counting
 * every line as parsed, rejected or other, and naming the file, line,
 * byte column and problem of every rejected one. The rules are in
 * pp_parse.h.
 *
 * Each record line is checked whole before anything is stored (pass 1
 * fills a token array; commit writes the columns), so a rejected line
 * leaves no trace in the store. The previous line's field order predicts
 * the next one's, so the usual name lookup is one memcmp.
 *
 * The parser is built from its options in parse_opts.c (prefixes, known
 * schemas, strict names, caps); its state is in pp_parse_internal.h. Its
 * input is cut into lines, and its results handed back, in parse_feed.c.
 * This file holds what runs per line: the character tables, the tokenizer,
 * the checks, the commit into the store.
 */
#include "pp_parse_internal.h"
#include "pp_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- character classes --------------------------------------------------- */
static unsigned char name_ok[256], prefix_ok[256];
/* In a value: 0 part of it, 1 ends it (blank), 2 not allowed. */
static unsigned char value_class[256];

static void init_classes(void) {
  for (int ch = 0; ch < 256; ch++) {
    value_class[ch] = (unsigned char)(ch == ' ' || ch == '\t' ? 1
                                      : ch < 0x20 || ch == '=' ? 2
                                                              : 0);
    int alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                (ch >= '0' && ch <= '9');
    name_ok[ch] = (unsigned char)(alnum || ch == '_');
    prefix_ok[ch] = (unsigned char)(alnum || (ch && strchr("_.:/-", ch)));
  }
}

void pp_parse_classes_once(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, init_classes);
}

int pp_parse_name_ok(const char *s, size_t n) {
  if (n == 0 || n > NAME_MAX_LEN)
    return 0;
  for (size_t j = 0; j < n; j++)
    if (!name_ok[(unsigned char)s[j]])
      return 0;
  return 1;
}

/* ---- counts and errors ------------------------------------------------- */
static void count(pp_parser *p, int what) {
  source_t *s = &p->src[p->cur];
  uint64_t *g = what == 0 ? &p->st.parsed : what == 1 ? &p->st.rejected : &p->st.other;
  uint64_t *l = what == 0 ? &s->st.parsed : what == 1 ? &s->st.rejected : &s->st.other;
  (*g)++;
  (*l)++;
}

/* Quotes a token for a message: at most 32 bytes, odd bytes as \xNN. */
static void quote(char *out, size_t cap, const char *s, size_t n) {
  size_t o = 0;
  for (size_t i = 0; i < n && o + 5 < cap; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (i == 32) {
      memcpy(out + o, "...", 3);
      o += 3;
      break;
    }
    if (ch < 0x20 || ch >= 0x7f)
      o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
    else
      out[o++] = (char)ch;
  }
  out[o] = 0;
}

static void reject(pp_parser *p, size_t column, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reject(pp_parser *p, size_t column, const char *fmt, ...) {
  count(p, 1);
  if (p->nerr >= p->max_errors) {
    p->st.errors_dropped++;
    p->src[p->cur].st.errors_dropped++;
    return;
  }
  if (p->nerr == p->err_alloc) {
    size_t na = p->err_alloc ? p->err_alloc * 2 : 16;
    pp_parse_error *ne = realloc(p->err, na * sizeof *ne);
    if (!ne) {
      p->st.errors_dropped++;
      return;
    }
    p->err = ne;
    p->err_alloc = na;
  }
  char msg[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char *what = dup_n(msg, strlen(msg));
  if (!what) {
    p->st.errors_dropped++;
    return;
  }
  p->err[p->nerr++] = (pp_parse_error){p->src[p->cur].name, p->lineno,
                                       (uint32_t)column, what};
}

/* ---- values -------------------------------------------------------------- */
/* 0: ok; 1: not an unsigned integer; 2: out of range. */
static int parse_u64(const char *s, size_t n, uint64_t *out) {
  uint64_t v = 0;
  if (n == 0)
    return 1;
  if (n < 20) {
    for (size_t i = 0; i < n; i++) {
      unsigned d = (unsigned)(s[i] - '0');
      if (d > 9)
        return 1;
      v = v * 10 + d;
    }
    *out = v;
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    if ((unsigned)(s[i] - '0') > 9)
      return 1;
  for (size_t i = 0; i < n; i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d, &v))
      return 2;
  }
  *out = v;
  return 0;
}

/* Classifies a free-typed value by the one rule (pp_cols_value_of_text):
 * unsigned int, negative int, double or string. */
static void classify(tok_t *t) {
  pp_cols_field f;
  t->kind = pp_cols_value_of_text(t->val, t->vlen, 0, &f);
  t->neg = f.neg;
  if (t->kind == PP_VAL_INT)
    t->u = (uint64_t)f.v.i;
  else if (t->kind == PP_VAL_NUM)
    t->d = f.v.d;
}

static int ends_with(const char *s, size_t n, const char *suf) {
  size_t m = strlen(suf);
  return n >= m && memcmp(s + n - m, suf, m) == 0;
}

static int name_strict(const pp_parser *p, const char *s, size_t n) {
  if (ends_with(s, n, "_ns") || ends_with(s, n, "_cache_hits") ||
      ends_with(s, n, "_cache_misses") || ends_with(s, n, "_cache_disk_hits"))
    return 1;
  for (size_t i = 0; i < p->nstrict; i++)
    if (strlen(p->strict[i]) == n && memcmp(p->strict[i], s, n) == 0)
      return 1;
  return 0;
}

/* ---- one line ------------------------------------------------------------ */
static int is_prefix_word(const char *s, size_t n) {
  if (n == 0 || n >= PP_PREFIX_MAX)
    return 0;
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!prefix_ok[(unsigned char)s[i]])
      return 0;
  return 1;
}

/* Is this a record line? Returns 1 and the known-schema index (or -1). */
static int classify_line(const pp_parser *p, const char *line, size_t len,
                         size_t t0, size_t plen, int *known) {
  const char *pre = line + t0;
  *known = -1;
  for (size_t i = 0; i < p->nknown; i++)
    if (p->known[i].plen == plen && memcmp(p->known[i].prefix, pre, plen) == 0)
      *known = (int)i;
  if (p->nprefixes) {
    size_t i = 0;
    for (; i < p->nprefixes; i++)
      if (p->plens[i] == plen && memcmp(p->prefixes[i], pre, plen) == 0)
        break;
    if (i == p->nprefixes)
      return 0;
  } else if (*known < 0) {
    /* a known schema's prefix is a record line even when what follows is
     * broken; any other word needs a name= after it */
    if (!is_prefix_word(pre, plen))
      return 0;
    size_t j = t0 + plen;
    while (j < len && blank(line[j]))
      j++;
    size_t k = j;
    while (k < len && name_ok[(unsigned char)line[k]])
      k++;
    if (k == j || k >= len || line[k] != '=')
      return 0;
  }
  return 1;
}

static inline int name_eq(const char *a, const char *b, size_t n) {
  while (n >= 8) {
    uint64_t x, y;
    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
    if (x != y)
      return 0;
    a += 8, b += 8, n -= 8;
  }
  while (n--)
    if (*a++ != *b++)
      return 0;
  return 1;
}

/* Column of a name: the previous line's field at this position, else the
 * store's name table. */
static int find_col(const pp_parser *p, const char *name, size_t n,
                    size_t pos) {
  if (p->prev_ok && pos < p->prev_n) {
    const pp_column *k = &p->cols->col[p->prev_cols[pos]];
    if (k->len == n && name_eq(k->name, name, n))
      return (int)p->prev_cols[pos];
  }
  return pp_cols_lookup(p->cols, name, n);
}

/* Pass 1: tokens into p->tok. Returns the token count, or -1 (rejected).
 * Messages quote the field name (q) only on the way out. */
static int tokenize(pp_parser *p, const char *line, size_t len, size_t i) {
  size_t nt = 0, nnew = 0;
  char q[160];
#define QNAME() quote(q, sizeof q, line + start, nlen)
  for (;;) {
    while (i < len && blank(line[i]))
      i++;
    if (i >= len)
      break;
    size_t start = i;
    if (nt == PP_PARSE_MAX_TOKENS) {
      reject(p, start + 1, "more than %d fields", PP_PARSE_MAX_TOKENS);
      return -1;
    }
    /* Fast path: the previous line's field at this position holding a
     * plain unsigned integer (below 10^19): no byte-by-byte name scan, one
     * pass over the digits. Anything else takes the checks below. */
    if (p->prev_ok && nt < p->prev_n) {
      pp_column *k = &p->cols->col[p->prev_cols[nt]];
      size_t e = start + k->len;
      if (k->strict && e + 1 < len && line[e] == '=' && k->stamp != p->stamp &&
          name_eq(k->name, line + start, k->len)) {
        size_t j = e + 1, v0 = j;
        uint64_t v = 0;
        while (j < len && j - v0 < 19) {
          unsigned d = (unsigned)(line[j] - '0');
          if (d > 9)
            break;
          v = v * 10 + d;
          j++;
        }
        if (j > v0 && (j == len || blank(line[j]))) {
          tok_t *t = &p->tok[nt];
          t->name = line + start;
          t->nlen = k->len;
          t->val = line + v0;
          t->vlen = (uint32_t)(j - v0);
          t->column = (uint32_t)start + 1;
          t->col = (int32_t)p->prev_cols[nt];
          t->strict = 1;
          t->kind = PP_VAL_INT;
          t->neg = 0;
          t->u = v;
          k->stamp = p->stamp;
          k->tokpos = (uint32_t)nt;
          i = j;
          nt++;
          continue;
        }
      }
    }
    while (i < len && name_ok[(unsigned char)line[i]])
      i++;
    size_t nlen = i - start;
    if (i >= len || line[i] != '=') {
      size_t e = i;
      while (e < len && !blank(line[e]))
        e++;
      quote(q, sizeof q, line + start, e - start);
      if (i >= len || blank(line[i]))
        reject(p, start + 1, "field %zu ('%s'): no '=' (truncated or garbled line)",
               nt + 1, q);
      else if ((unsigned char)line[i] < 0x20)
        reject(p, i + 1, "field %zu ('%s'): control character 0x%02x in the name",
               nt + 1, q, (unsigned char)line[i]);
      else
        reject(p, i + 1, "field %zu ('%s'): '%c' in the name (names are [A-Za-z0-9_])",
               nt + 1, q, line[i]);
      return -1;
    }
    if (nlen == 0) {
      reject(p, start + 1, "field %zu: empty name before '='", nt + 1);
      return -1;
    }
    if (nlen > NAME_MAX_LEN) {
      QNAME();
      reject(p, start + 1, "field %zu ('%s'): name longer than %d bytes", nt + 1,
             q, NAME_MAX_LEN);
      return -1;
    }
    size_t vstart = ++i;
    unsigned char cls = 0;
    while (i < len && !(cls = value_class[(unsigned char)line[i]]))
      i++;
    if (cls == 2) {
      unsigned char ch = (unsigned char)line[i];
      QNAME();
      if (ch == '=')
        reject(p, i + 1, "field '%s': '=' inside the value (two fields run together?)", q);
      else
        reject(p, i + 1, "field '%s': control character 0x%02x in the value", q, ch);
      return -1;
    }
    if (i == vstart) {
      QNAME();
      reject(p, start + 1, "field '%s': empty value (truncated line?)", q);
      return -1;
    }
    tok_t *t = &p->tok[nt];
    t->name = line + start;
    t->nlen = (uint32_t)nlen;
    t->val = line + vstart;
    t->vlen = (uint32_t)(i - vstart);
    t->column = (uint32_t)start + 1;
    t->col = find_col(p, t->name, nlen, nt);
    if (t->col >= 0) {
      pp_column *k = &p->cols->col[t->col];
      if (k->stamp == p->stamp) {
        QNAME();
        reject(p, start + 1, "duplicate field '%s' (fields %u and %zu)", q,
               k->tokpos + 1, nt + 1);
        return -1;
      }
      k->stamp = p->stamp;
      k->tokpos = (uint32_t)nt;
      t->strict = k->strict;
    } else {
      if (pp_cols_reserved_name(t->name, nlen)) {
        QNAME();
        reject(p, start + 1, "field '%s': reserved name", q);
        return -1;
      }
      for (size_t j = 0; j < nt; j++)
        if (p->tok[j].col < 0 && p->tok[j].nlen == nlen &&
            memcmp(p->tok[j].name, t->name, nlen) == 0) {
          QNAME();
          reject(p, start + 1, "duplicate field '%s' (fields %zu and %zu)", q,
                 j + 1, nt + 1);
          return -1;
        }
      if (p->cols->nvis + ++nnew > PP_PARSE_MAX_COLUMNS) {
        QNAME();
        reject(p, start + 1, "field '%s': more than %d distinct field names", q,
               PP_PARSE_MAX_COLUMNS);
        return -1;
      }
      t->strict = (uint8_t)name_strict(p, t->name, nlen);
    }
    if (t->strict) {
      int rc = parse_u64(t->val, t->vlen, &t->u);
      if (rc) {
        char qv[160];
        QNAME();
        quote(qv, sizeof qv, t->val, t->vlen);
        reject(p, vstart + 1, "field '%s': %s '%s' (expected an unsigned integer)",
               q, rc == 2 ? "number out of range" : "bad number", qv);
        return -1;
      }
      t->kind = PP_VAL_INT;
      t->neg = 0;
    } else {
      classify(t);
    }
    nt++;
  }
#undef QNAME
  return (int)nt;
}

static int same_as_prev(const pp_parser *p, const char *pre, size_t plen,
                        size_t nt) {
  if (!p->prev_ok || nt != p->prev_n || plen != p->prev_plen ||
      memcmp(pre, p->prev_prefix, plen) != 0)
    return 0;
  for (size_t k = 0; k < nt; k++)
    if (p->tok[k].col != (int32_t)p->prev_cols[k])
      return 0;
  return 1;
}

/* A known prefix's line must carry the reference's part of the line. */
static int check_required(pp_parser *p, const known_t *k, size_t nt,
                          size_t len) {
  char missing[240];
  size_t nm = 0, o = 0;
  for (size_t r = 0; r < k->nreq; r++) {
    const char *name = k->req[r];
    size_t n = strlen(name);
    int col = pp_cols_lookup(p->cols, name, n), found = 0;
    if (col >= 0) {
      found = p->cols->col[col].stamp == p->stamp;
    } else {
      for (size_t j = 0; j < nt && !found; j++)
        found = p->tok[j].col < 0 && p->tok[j].nlen == n &&
                memcmp(p->tok[j].name, name, n) == 0;
    }
    if (found)
      continue;
    if (nm++ < 6 && o + n + 3 < sizeof missing)
      o += (size_t)snprintf(missing + o, sizeof missing - o, "%s%s",
                            nm > 1 ? ", " : "", name);
  }
  if (!nm)
    return 0;
  if (nm > 6)
    snprintf(missing + o, sizeof missing - o, " and %zu more", nm - 6);
  reject(p, len + 1, "missing field%s %s for prefix '%s' (truncated line?)",
         nm > 1 ? "s" : "", missing, k->prefix);
  return -1;
}

static uint32_t source_id(pp_parser *p) {
  source_t *s = &p->src[p->cur];
  if (s->str_id == UINT32_MAX)
    s->str_id = pp_cols_intern(p->cols, s->name, strlen(s->name));
  return s->str_id;
}

/* Pass 2: the checked tokens into the store. */
static int commit(pp_parser *p, const char *pre, size_t plen, size_t nt,
                  int same) {
  pp_cols *c = p->cols;
  size_t row = c->n;
  for (size_t k = 0; k < nt; k++) {
    tok_t *t = &p->tok[k];
    if (t->col < 0) {
      t->col = pp_cols_add_column(c, t->name, t->nlen, 0, t->strict);
      if (t->col < 0)
        return -1;
      c->col[t->col].stamp = p->stamp;
    }
    int rc;
    if (t->kind == PP_VAL_INT && !t->neg &&
        pp_cols_fast_int(c, (size_t)t->col, row, t->u))
      rc = 0;
    else if (t->kind == PP_VAL_INT)
      rc = pp_cols_set_int(c, (size_t)t->col, row, t->u, t->neg);
    else if (t->kind == PP_VAL_NUM)
      rc = pp_cols_set_num_text(c, (size_t)t->col, row, t->d, t->val,
                                t->vlen);
    else
      rc = pp_cols_set_str(c, (size_t)t->col, row, t->val, t->vlen);
    if (rc)
      return -1;
    p->lay_cols[k] = (uint32_t)t->col;
  }
  uint32_t layout = p->prev_layout;
  if (!same) {
    uint32_t pid = p->prev_prefix_id;
    if (!p->prev_ok || plen != p->prev_plen ||
        memcmp(pre, p->prev_prefix, plen) != 0)
      pid = pp_cols_intern(c, pre, plen);
    if (pid == UINT32_MAX)
      return -1;
    layout = pp_cols_layout_intern(c, pid, p->lay_cols, nt);
    if (layout == UINT32_MAX)
      return -1;
    p->prev_prefix_id = pid;
    p->prev_layout = layout;
    memcpy(p->prev_prefix, pre, plen);
    p->prev_plen = plen;
    memcpy(p->prev_cols, p->lay_cols, nt * sizeof *p->lay_cols);
    p->prev_n = nt;
    p->prev_ok = 1;
  }
  uint32_t sid = source_id(p);
  if (sid == UINT32_MAX ||
      pp_cols_set_strid(c, (size_t)c->c_file, row, sid) ||
      pp_cols_set_int(c, (size_t)c->c_line, row, p->lineno, 0) ||
      pp_cols_set_int(c, (size_t)c->c_layout, row, layout, 0))
    return -1;
  c->n++;
  return 0;
}

/* Counts a line, then finds its first word, [*t0, *t1): returns whether it
 * begins a record line (classify_line; *known as it says), else counts it
 * as other. */
static int record_line(pp_parser *p, const char *line, size_t len, size_t *t0,
                       size_t *t1, int *known) {
  p->lineno++;
  p->st.total++;
  p->src[p->cur].st.total++;
  size_t i = 0;
  while (i < len && blank(line[i]))
    i++;
  *t0 = i;
  while (i < len && !blank(line[i]))
    i++;
  *t1 = i;
  if (i == *t0 || !classify_line(p, line, len, *t0, i - *t0, known)) {
    count(p, 2);
    return 0;
  }
  return 1;
}

void pp_parse_process_line(pp_parser *p, const char *line, size_t len) {
  size_t t0, i;
  int known;
  if (len > PP_PARSE_MAX_LINE) {
    /* only its start was kept: a record line (by its first words) is
     * rejected, anything else is other */
    if (record_line(p, line, PP_PARSE_MAX_LINE, &t0, &i, &known))
      reject(p, 1, "line longer than %u bytes (the parser's line limit)",
             (unsigned)PP_PARSE_MAX_LINE);
    return;
  }
  if (len && line[len - 1] == '\r')
    len--;
  if (!record_line(p, line, len, &t0, &i, &known))
    return;
  p->stamp++;
  int nt = tokenize(p, line, len, i);
  if (nt < 0)
    return;
  if (nt == 0) {
    char q[160];
    quote(q, sizeof q, line + t0, i - t0);
    reject(p, t0 + 1, "prefix '%s' with no fields", q);
    return;
  }
  int same = same_as_prev(p, line + t0, i - t0, (size_t)nt);
  if (!same && known >= 0 && check_required(p, &p->known[known], (size_t)nt, len))
    return;
  if (commit(p, line + t0, i - t0, (size_t)nt, same) != 0) {
    p->oom = 1;
    p->prev_ok = 0;
    reject(p, 0, "out of memory while storing the record");
    return;
  }
  count(p, 0);
}

