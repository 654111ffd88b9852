/*
 * cuda_ptxparams.c: the parameter list of one PTX .entry.
 *
 * Where the driver has no cuFuncGetParamInfo the layout comes from here, and
 * where it has, the element types still do (.f32 decides float packing).
 * Parameters are laid out as the driver lays out the parameter buffer: each
 * at the next multiple of its alignment (.align N, else its element size).
 */
#include "pp_internal.h"

#ifdef PP_HAVE_CUDA_H
#include "pp_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *p, *end;
  const char *start; /* for line numbers */
} lexer;

typedef struct {
  const char *s;
  size_t n;
} token;

static int is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '$' ||
         c == '%';
}

static void skip_space(lexer *lx) {
  for (;;) {
    while (lx->p < lx->end &&
           (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\n' ||
            *lx->p == '\r'))
      lx->p++;
    if (lx->end - lx->p >= 2 && lx->p[0] == '/' && lx->p[1] == '/') {
      while (lx->p < lx->end && *lx->p != '\n')
        lx->p++;
    } else if (lx->end - lx->p >= 2 && lx->p[0] == '/' && lx->p[1] == '*') {
      const char *close = NULL;
      for (const char *q = lx->p + 2; q + 1 < lx->end; q++)
        if (q[0] == '*' && q[1] == '/') {
          close = q;
          break;
        }
      lx->p = close ? close + 2 : lx->end;
    } else {
      return;
    }
  }
}

/* Next token: a word, a string literal, or one punctuation character.
 * Empty at the end. */
static token next(lexer *lx) {
  skip_space(lx);
  token t = {lx->p, 0};
  if (lx->p >= lx->end)
    return t;
  if (is_word(*lx->p)) {
    while (lx->p < lx->end && is_word(*lx->p))
      lx->p++;
  } else if (*lx->p == '"') {
    lx->p++;
    while (lx->p < lx->end && *lx->p != '"' && *lx->p != '\n')
      lx->p++;
    if (lx->p < lx->end)
      lx->p++;
  } else {
    lx->p++;
  }
  t.n = (size_t)(lx->p - t.s);
  return t;
}

static int tok_is(token t, const char *s) {
  return t.n == strlen(s) && memcmp(t.s, s, t.n) == 0;
}

static int line_of(const lexer *lx, const char *at) {
  int line = 1;
  for (const char *q = lx->start; q < at && q < lx->end; q++)
    line += *q == '\n';
  return line;
}

/* Element size and kind of a PTX type token (".u32"); 0 if not a type. */
static size_t type_info(token t, pp_cuda_param_kind *kind, char out[8]) {
  static const struct {
    const char *name;
    size_t size;
    pp_cuda_param_kind kind;
  } types[] = {
      {".u8", 1, PP_CUDA_PARAM_UINT},    {".u16", 2, PP_CUDA_PARAM_UINT},
      {".u32", 4, PP_CUDA_PARAM_UINT},   {".u64", 8, PP_CUDA_PARAM_UINT},
      {".s8", 1, PP_CUDA_PARAM_SINT},    {".s16", 2, PP_CUDA_PARAM_SINT},
      {".s32", 4, PP_CUDA_PARAM_SINT},   {".s64", 8, PP_CUDA_PARAM_SINT},
      {".b8", 1, PP_CUDA_PARAM_BITS},    {".b16", 2, PP_CUDA_PARAM_BITS},
      {".b32", 4, PP_CUDA_PARAM_BITS},   {".b64", 8, PP_CUDA_PARAM_BITS},
      {".b128", 16, PP_CUDA_PARAM_BYTES}, {".f32", 4, PP_CUDA_PARAM_FLOAT},
      {".f64", 8, PP_CUDA_PARAM_FLOAT},  {".f16", 2, PP_CUDA_PARAM_HALF},
      {".bf16", 2, PP_CUDA_PARAM_HALF},  {".f16x2", 4, PP_CUDA_PARAM_HALF},
      {".bf16x2", 4, PP_CUDA_PARAM_HALF},
  };
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (tok_is(t, types[i].name)) {
      *kind = types[i].kind;
      snprintf(out, 8, "%s", types[i].name + 1);
      return types[i].size;
    }
  return 0;
}

static int parse_uint(token t, size_t *out) {
  if (t.n == 0 || t.n > 9)
    return -1;
  size_t v = 0;
  for (size_t i = 0; i < t.n; i++) {
    if (t.s[i] < '0' || t.s[i] > '9')
      return -1;
    v = v * 10 + (size_t)(t.s[i] - '0');
  }
  *out = v;
  return 0;
}

static int bad(const lexer *lx, const char *at, char *err, size_t errlen,
               const char *what) {
  if (err && errlen)
    snprintf(err, errlen, "PTX line %d: %s", line_of(lx, at), what);
  return -2;
}

/* One ".param ..." declaration; *t is the token after it on return. */
static int parse_param(lexer *lx, token *t, pp_cuda_param *p, char *err,
                       size_t errlen) {
  size_t elem = 0, align = 0, count = 1;
  memset(p, 0, sizeof *p);
  for (*t = next(lx); t->n && t->s[0] == '.'; *t = next(lx)) {
    if (tok_is(*t, ".align")) {
      token v = next(lx);
      if (parse_uint(v, &align) || align == 0 || (align & (align - 1)))
        return bad(lx, v.s, err, errlen, "bad .align in a parameter");
    } else if (!elem) {
      elem = type_info(*t, &p->kind, p->type);
    }
    /* .ptr, .global, .const, .local, .shared: attributes, no layout */
  }
  if (!elem)
    return bad(lx, t->s, err, errlen, "parameter without a type");
  if (!t->n || !is_word(t->s[0]))
    return bad(lx, t->s, err, errlen, "parameter without a name");
  snprintf(p->name, sizeof p->name, "%.*s", (int)t->n, t->s);
  *t = next(lx);
  if (tok_is(*t, "[")) {
    token n = next(lx);
    if (parse_uint(n, &count) || count == 0 || !tok_is(next(lx), "]"))
      return bad(lx, n.s, err, errlen, "bad array size in a parameter");
    p->kind = PP_CUDA_PARAM_BYTES;
    *t = next(lx);
  }
  p->size = elem * count;
  p->align = align ? align : elem;
  return 0;
}

/* Finds ".entry <name>" outside comments; leaves the lexer after the name. */
static int find_entry(lexer *lx, const char *entry) {
  for (token t = next(lx); t.n; t = next(lx)) {
    if (!tok_is(t, ".entry"))
      continue;
    if (tok_is(next(lx), entry))
      return 0;
  }
  return -1;
}

PP_EXPORT int pp_cuda_ptx_params(const char *ptx, size_t len,
                                 const char *entry, pp_cuda_param *out,
                                 size_t max, char *err, size_t errlen) {
  lexer lx = {ptx, ptx + len, ptx};
  if (err && errlen)
    err[0] = 0;
  if (find_entry(&lx, entry) != 0) {
    if (err && errlen)
      snprintf(err, errlen, "no .entry %s in the PTX", entry);
    return -1;
  }
  const char *mark = lx.p;
  token t = next(&lx);
  if (!tok_is(t, "(")) {
    lx.p = mark;
    return 0; /* .entry name { ... }: no parameters */
  }
  size_t n = 0, offset = 0;
  t = next(&lx);
  if (tok_is(t, ")"))
    return 0;
  for (;;) {
    if (!tok_is(t, ".param"))
      return bad(&lx, t.s, err, errlen, "expected .param in the entry's list");
    if (n == max) {
      if (err && errlen)
        snprintf(err, errlen, "entry %s has more than %zu parameters", entry,
                 max);
      return -3;
    }
    pp_cuda_param *p = &out[n];
    int rc = parse_param(&lx, &t, p, err, errlen);
    if (rc)
      return rc;
    offset = (offset + p->align - 1) / p->align * p->align;
    p->offset = offset;
    offset += p->size;
    n++;
    if (tok_is(t, ")"))
      return (int)n;
    if (!tok_is(t, ","))
      return bad(&lx, t.s, err, errlen,
                 "expected ',' or ')' after a parameter");
    t = next(&lx);
  }
}

#else
typedef int pp_cuda_ptxparams_absent_;
#endif
