/*
 * ptx_decl.c: PTX declarations, read with the token reader (ptx_lex.c) at
 * module scope (ptx_scan.c) and in bodies (ptx_body.c).
 *
 * What a declaration says is kept as the text says it, sizes computed as
 * the PTX ISA defines them: a variable's size is element size x vector
 * width x array length, its alignment the .align given or else the element
 * size x vector width; a parameter's offset is the running offset rounded up
 * to its alignment (cuLaunchKernel's layout). Sizes saturate (sat_mul,
 * pp_sat_add): a length too large to hold reads as UINT64_MAX, never as a
 * wrapped small number.
 *
 * What no PTX may say is an error at its number (the result is then
 * partial), never a value clamped in silence: an alignment that is not a
 * power of two from 1 to 2^31 (ptxas: "Alignment must be a power of two",
 * "Constant overflow"), a count, length, size or offset past 2^63-1 (no
 * signed 64-bit count, and so no Lua integer, holds it), and launch bounds
 * or an address size past 2^32-1 (ptxas: "Constant overflow").
 */
#include "ptx_scanner.h"

#include <string.h>

/* ---- types and sizes ---------------------------------------------------------- */
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

/* ---- numbers PTX does not allow ------------------------------------------------ */
#define COUNT_MAX ((uint64_t)INT64_MAX)

/* v, counted at token t: past 2^63-1 an error there. */
static uint64_t count_at(scanner *s, const tok *t, uint64_t v,
                         const char *what) {
  if (v > COUNT_MAX)
    TERR(s, t, 0, "%s past 2^63-1 at '%.*s'", what, TSHOW(t));
  return v;
}

/* The number after .align (token t, value n): a power of two from 1 to
 * 2^31, else an error there. */
static uint32_t align_at(scanner *s, const tok *t, uint64_t n) {
  if (n == 0 || (n & (n - 1)) != 0)
    TERR(s, t, 0, ".align %.*s: an alignment must be a power of two",
         TSHOW(t));
  else if (n > ((uint64_t)1 << 31))
    TERR(s, t, 0, ".align %.*s: an alignment larger than 2^31", TSHOW(t));
  return clamp32(n);
}

/* ---- variables ---------------------------------------------------------------- */
/* Reads "[N]" dimensions after a name; returns the product (0 if none or
 * unsized) and sets *unsized for "[]". *at: the last length's token (for
 * errors about the size), left alone without one. */
static uint64_t read_dims(scanner *s, int *dims, int *unsized, tok *at) {
  uint64_t total = 1;
  tok t;
  *dims = 0;
  *unsized = 0;
  while (pp_ptx_accept(s, &t, T_PUNCT, '[')) {
    pp_ptx_next(s, &t);
    uint64_t n = 0;
    if (is_punct(&t, ']')) {
      *unsized = 1;
    } else {
      if (!pp_ptx_parse_num(&t, &n))
        TERR(s, &t, 0, "array length is not a number");
      else if (n > COUNT_MAX)
        count_at(s, &t, n, "array length");
      else if (sat_mul(total, n) > COUNT_MAX && total <= COUNT_MAX)
        count_at(s, &t, sat_mul(total, n), "array length");
      *at = t;
      pp_ptx_next(s, &t);
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

/* The bytes of elem x vec x count at token at: past 2^63-1 an error there
 * (unless the count itself was one already). */
static uint64_t size_at(scanner *s, const tok *at, uint64_t elem, uint64_t vec,
                        uint64_t count) {
  uint64_t size = sat_mul(sat_mul(elem, vec), count);
  if (size > COUNT_MAX && count <= COUNT_MAX)
    count_at(s, at, size, "size in bytes");
  return size;
}

/* After a state-space word (.global, .const, .shared, .local): reads
 * "[.align N] [.vN] .type name[dims] [= init] {, name...} ;" into list. */
void pp_ptx_parse_var(scanner *s, var_list *list, pp_ptx_space space,
                      linkage lk) {
  uint32_t align = 0, vec = 1, elem = 0;
  char type[16] = "";
  tok t;
  for (;;) {
    pp_ptx_next(s, &t);
    if (t.kind == T_WORD && *t.p == '.') {
      uint64_t n;
      uint32_t w;
      if (word_is(t.p, t.len, ".align")) {
        pp_ptx_next(s, &t);
        if (pp_ptx_parse_num(&t, &n))
          align = align_at(s, &t, n);
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
      pp_ptx_skip_statement(s, 0);
    return;
  }
  while (t.kind == T_WORD) {
    int dims, unsized;
    const char *name = t.p;
    size_t nlen = t.len;
    uint64_t line = t.line;
    tok at = t;
    uint64_t count = read_dims(s, &dims, &unsized, &at);
    if (!pp_ptx_grow(s, (void **)&list->v, &list->cap, list->n, sizeof *list->v))
      return;
    pp_ptx_var *v = &list->v[list->n];
    memset(v, 0, sizeof *v);
    if (!(v->name = pp_ptx_dup_word(s, name, nlen)))
      return;
    list->n++;
    v->space = space;
    memcpy(v->type, type, sizeof type);
    v->array = count;
    v->size = unsized ? 0 : size_at(s, &at, elem, vec, dims ? count : 1);
    v->align = align ? align : elem * vec;
    v->external = lk.external;
    v->visible = lk.visible;
    v->line = line;
    pp_ptx_next(s, &t);
    if (is_punct(&t, '=')) {
      pp_ptx_skip_statement(s, 0);
      return;
    }
    if (!is_punct(&t, ','))
      break;
    pp_ptx_next(s, &t);
  }
  if (t.kind == T_EOF)
    TERR(s, &t, 0, "unexpected end of text in a declaration");
  else if (!is_punct(&t, ';') && t.kind != T_STOP) {
    TERR(s, &t, 0, "unexpected '%.*s' in a declaration", TSHOW(&t));
    if (t.kind != T_PUNCT || *t.p != '}')
      pp_ptx_skip_statement(s, 0);
    else
      s->p = t.p; /* let the caller see the brace */
  }
}

/* ---- registers ---------------------------------------------------------------- */
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
  if (p >= end || *p != ';' || pp_sat_add(f->regs[c], n) > COUNT_MAX)
    return 0; /* (a sum past 2^63-1 is said by the general reader) */
  f->regs[c] = pp_sat_add(f->regs[c], n);
  s->p = p + 1;
  return 1;
}

/* ".reg [.vN] .type name[<N>], ... ;" */
void pp_ptx_parse_reg(scanner *s, pp_ptx_func *f) {
  if (reg_fast(s, f))
    return;
  int cls_ = PP_PTX_REG_OTHER;
  uint64_t vec = 1;
  tok t;
  for (;;) {
    pp_ptx_next(s, &t);
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
    tok at = t; /* the count, or the name without one */
    pp_ptx_next(s, &t);
    if (is_punct(&t, '<')) {
      pp_ptx_next(s, &t);
      at = t;
      if (!pp_ptx_parse_num(&t, &n))
        TERR(s, &t, 0, "register count is not a number");
      else if (n > COUNT_MAX || sat_mul(n, vec) > COUNT_MAX)
        count_at(s, &t, UINT64_MAX, "register count");
      pp_ptx_next(s, &t);
      if (!is_punct(&t, '>'))
        TERR(s, &t, 0, "expected '>' in a register declaration");
      pp_ptx_next(s, &t);
    }
    uint64_t before = f->regs[cls_], add = sat_mul(n, vec);
    f->regs[cls_] = pp_sat_add(before, add);
    if (f->regs[cls_] > COUNT_MAX && before <= COUNT_MAX && add <= COUNT_MAX)
      count_at(s, &at, f->regs[cls_], "registers of one class");
    if (!is_punct(&t, ','))
      break;
    pp_ptx_next(s, &t);
  }
  if (!is_punct(&t, ';') && t.kind != T_STOP) {
    if (t.kind == T_EOF)
      return;
    TERR(s, &t, 0, "unexpected '%.*s' in a register declaration", TSHOW(&t));
    if (!is_punct(&t, '}'))
      pp_ptx_skip_statement(s, 0);
    else
      s->p = t.p;
  }
}

/* ---- parameters --------------------------------------------------------------- */
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
  tok t, at = {0};
  for (;;) {
    if (!pp_ptx_accept(s, &t, T_WORD, 0))
      break;
    if (*t.p != '.') {
      name = t.p;
      nlen = t.len;
      at = t;
      array = read_dims(s, &dims, &unsized, &at);
      break;
    }
    uint32_t w;
    if (word_is(t.p, t.len, ".align")) {
      uint64_t n = 0;
      pp_ptx_next(s, &t);
      if (!pp_ptx_parse_num(&t, &n))
        TERR(s, &t, 0, ".align without a number");
      else if (!ptr) /* after .ptr it is the pointee's alignment */
        align = align_at(s, &t, n);
      else
        align_at(s, &t, n);
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
  if (!pp_ptx_grow(s, (void **)&s->pend, &s->cap_pend, s->npend, sizeof *s->pend))
    return;
  pending_param *pp = &s->pend[s->npend++];
  pp_ptx_param *pa = &pp->p;
  memset(pa, 0, sizeof *pa);
  pp->name = name;
  pp->nlen = nlen;
  memcpy(pa->type, type, sizeof type);
  pa->ptr = ptr;
  pa->array = array;
  pa->size = size_at(s, &at, elem, vec, dims ? array : 1);
  pa->align = align ? align : elem * vec;
  uint64_t a = pa->align ? pa->align : 1;
  uint64_t off = *cursor % a ? pp_sat_add(*cursor, a - *cursor % a) : *cursor;
  pa->offset = off;
  *cursor = pp_sat_add(off, pa->size);
  if (*cursor > COUNT_MAX && off <= COUNT_MAX && pa->size <= COUNT_MAX)
    count_at(s, &at, *cursor, "parameter buffer offset");
}

/* The pending list becomes f's: one arena piece holds the array and then
 * the names. */
static void commit_params(scanner *s, pp_ptx_func *f) {
  size_t n = s->npend, bytes = n * sizeof *f->params;
  for (size_t i = 0; i < n; i++)
    bytes += s->pend[i].nlen + 1; /* each under the text's length */
  pp_ptx_param *a = n ? pp_ptx_alloc(s, bytes, _Alignof(pp_ptx_param)) : NULL;
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
void pp_ptx_parse_params(scanner *s, pp_ptx_func *f, const char *fname) {
  uint64_t cursor = 0;
  tok t;
  s->npend = 0;
  for (;;) {
    pp_ptx_next(s, &t);
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
    TERR(s, &t, 0, "unexpected '%.*s' in the parameter list of '%s'", TSHOW(&t), fname);
    if (is_punct(&t, '{') || is_punct(&t, ';')) {
      s->p = t.p; /* the header goes on from here */
      break;
    }
  }
  if (f)
    commit_params(s, f);
}

/* ---- performance directives ---------------------------------------------------- */
/* A 32-bit number of a directive: past 2^32-1 an error at it. */
static uint32_t bound_at(scanner *s, const tok *t, uint64_t n,
                         const char *what) {
  if (n > UINT32_MAX)
    TERR(s, t, 0, "%s %.*s: past 2^32-1", what, TSHOW(t));
  return clamp32(n);
}

/* ".maxntid x[, y[, z]]" and friends. */
static void parse_dims3(scanner *s, uint32_t out[3], const char *what) {
  tok t;
  for (int i = 0; i < 3; i++) {
    uint64_t n;
    pp_ptx_next(s, &t);
    if (!pp_ptx_parse_num(&t, &n)) {
      TERR(s, &t, 0, "%s: expected a number", what);
      if (t.kind == T_PUNCT)
        s->p = t.p;
      return;
    }
    out[i] = bound_at(s, &t, n, what);
    if (!pp_ptx_accept(s, &t, T_PUNCT, ','))
      return;
  }
}

void pp_ptx_parse_num1(scanner *s, uint32_t *out, const char *what) {
  tok t;
  uint64_t n;
  pp_ptx_next(s, &t);
  if (pp_ptx_parse_num(&t, &n))
    *out = bound_at(s, &t, n, what);
  else {
    TERR(s, &t, 0, "%s: expected a number", what);
    if (t.kind == T_PUNCT)
      s->p = t.p;
  }
}

/* A performance directive; returns 0 when the word is none. */
int pp_ptx_perf_directive(scanner *s, pp_ptx_func *f, const tok *w) {
  if (is_word(w, ".maxntid")) {
    f->has_maxntid = 1;
    parse_dims3(s, f->maxntid, ".maxntid");
  } else if (is_word(w, ".reqntid")) {
    f->has_reqntid = 1;
    parse_dims3(s, f->reqntid, ".reqntid");
  } else if (is_word(w, ".minnctapersm")) {
    f->has_minnctapersm = 1;
    pp_ptx_parse_num1(s, &f->minnctapersm, ".minnctapersm");
  } else if (is_word(w, ".maxnreg")) {
    f->has_maxnreg = 1;
    pp_ptx_parse_num1(s, &f->maxnreg, ".maxnreg");
  } else {
    return 0;
  }
  return 1;
}
