/*
 * ptx_body.c: function bodies, from the '{' that opens one to its '}'
 * (called by parse_function in ptx_scan.c).
 *
 * The statement loop (pp_ptx_scan_body) first hands the body to the fast
 * reader of simple lines (ptx_lines.c) and takes back, at s->p, the first
 * line that reader left: braces, directives (.reg, body variables,
 * performance directives: ptx_decl.c), comments, labels, and instructions
 * whose first word it reads itself before jumping to their ';'
 * (pp_ptx_skip_statement). Both readers count an instruction the same way:
 * pp_ptx_classify (here) for barriers and atomics, pp_ptx_watch_grid and
 * pp_ptx_watch_label (ptx_grid.c) for the pattern of a grid
 * synchronisation (an arrive, then a loop that re-reads its address:
 * ptx_scanner.h).
 */
#include "ptx_scanner.h"

#include <string.h>

/* ---- instruction classes -------------------------------------------------------- */
enum {
  P_GLOBAL = 1,
  P_ADD = 2,
  P_INC = 4,
  P_VOLATILE = 8,
  P_ACQUIRE = 16,
  P_RELAXED = 32,
  P_BLOCK = 64, /* .shared (any ::scope) or .local: not memory the grid shares */
  P_OR = 128,   /* or, xor */
  P_AND = 256,
  P_CAS = 512
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
      m |= word_is(w, l, "add")       ? P_ADD
           : word_is(w, l, "acquire") ? P_ACQUIRE
           : word_is(w, l, "and")     ? P_AND
                                      : 0;
      break;
    case 'o':
      m |= word_is(w, l, "or") ? P_OR : 0;
      break;
    case 'x':
      m |= word_is(w, l, "xor") ? P_OR : 0;
      break;
    case 'c':
      m |= word_is(w, l, "cas") ? P_CAS : 0;
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
    case 's':
      m |= l >= 6 && memcmp(w, "shared", 6) == 0 ? P_BLOCK : 0;
      break;
    case 'l':
      m |= word_is(w, l, "local") ? P_BLOCK : 0;
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

/* Whether a load's components can hold volatile, acquire or relaxed: each
 * has a 'v', 'q' or 'x', which most loads (ld.param.u64, ld.global.f32)
 * have none of. A filter before parts(). */
static inline int may_spin(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] == 'v' || p[i] == 'q' || p[i] == 'x')
      return 1;
  return 0;
}

op_kind pp_ptx_classify(pp_ptx_func *f, const char *op, size_t n) {
  switch (*op) {
  case 'b':
    if ((starts(op, n, "bar.") && !starts(op, n, "bar.warp.")) ||
        (starts(op, n, "barrier.") && !starts(op, n, "barrier.cluster.")))
      f->bar_sync++;
    else if (n >= 3 && op[1] == 'r' && op[2] == 'a' && (n == 3 || op[3] == '.'))
      return OP_BRA;
    return OP_PLAIN;
  case 'a':
  case 'r':
    if (starts(op, n, "atom.") || starts(op, n, "red.")) {
      unsigned m = parts(op, n);
      f->atomics++;
      if (m & P_GLOBAL)
        f->atomics_global++;
      if (m & P_BLOCK)
        return OP_PLAIN;
      if (m & P_ADD)
        return OP_ATOM;
      if (m & P_INC)
        return OP_INC;
      if (*op == 'r') /* a reduction returns nothing: never a read */
        return OP_PLAIN;
      return m & P_OR ? OP_KEEP0 : m & P_AND ? OP_KEEP1 : m & P_CAS ? OP_CAS
                                                                   : OP_PLAIN;
    }
    return OP_PLAIN;
  case 'c': /* call; cvta.global.u64, cvta.to.global.u64 */
    if (n >= 4 && op[1] == 'a' && op[2] == 'l' && op[3] == 'l' &&
        (n == 4 || op[4] == '.'))
      return OP_CALL;
    if (n > 7 && op[1] == 'v' && op[2] == 't' && op[3] == 'a' &&
        op[4] == '.' && op[n - 2] == '6' && op[n - 1] == '4' &&
        (parts(op, n) & (P_GLOBAL | P_BLOCK)) == P_GLOBAL)
      return OP_COPY;
    return OP_PLAIN;
  case 's': /* st.param */
    if (n > 9 && op[1] == 't' && op[2] == '.' && starts(op, n, "st.param."))
      return OP_PARAM;
    return OP_PLAIN;
  case 'l':
    if (n > 3 && op[1] == 'd' && op[2] == '.' && may_spin(op + 3, n - 3) &&
        (parts(op, n) & (P_VOLATILE | P_ACQUIRE | P_RELAXED)))
      return OP_SPIN;
    return OP_PLAIN;
  case 'm': /* mov.b64, mov.u64, mov.s64 */
    if (n == 7 && op[5] == '6' && op[6] == '4' && op[1] == 'o' &&
        op[2] == 'v' && op[3] == '.' &&
        (op[4] == 'b' || op[4] == 'u' || op[4] == 's'))
      return OP_COPY;
    return OP_PLAIN;
  default:
    return OP_PLAIN;
  }
}

/* ---- body directives ---------------------------------------------------------- */
/* A body's variables are read into s->bvars (reused from body to body)
 * and copied into the arena when the body ends. */
static void add_body_var(scanner *s, pp_ptx_func *f, pp_ptx_space sp,
                         const tok *w) {
  var_list *l = &s->bvars;
  size_t before = l->n;
  pp_ptx_parse_var(s, l, sp, (linkage){0, 0, 0});
  uint64_t *sum = sp == PP_PTX_SHARED  ? &f->shared_bytes
                  : sp == PP_PTX_LOCAL ? &f->local_bytes
                                       : NULL;
  for (size_t i = before; sum && i < l->n; i++) {
    uint64_t was = *sum;
    *sum = pp_sat_add(was, l->v[i].size);
    if (*sum > (uint64_t)INT64_MAX && was <= (uint64_t)INT64_MAX &&
        l->v[i].size <= (uint64_t)INT64_MAX) /* (a size past it was said) */
      TERR(s, w, 0, "%s bytes of '%s' past 2^63-1", pp_ptx_space_name(sp),
           f->name);
  }
}

static void end_body(scanner *s, pp_ptx_func *f) {
  f->body_end = (size_t)(s->p - s->base);
  size_t n = s->bvars.n;
  pp_ptx_var *v =
      n ? pp_ptx_alloc(s, n * sizeof *v, _Alignof(pp_ptx_var)) : NULL;
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
  pp_ptx_next(s, &w);
  if (is_word(&w, ".reg"))
    pp_ptx_parse_reg(s, f);
  else if (is_word(&w, ".shared"))
    add_body_var(s, f, PP_PTX_SHARED, &w);
  else if (is_word(&w, ".local"))
    add_body_var(s, f, PP_PTX_LOCAL, &w);
  else if (is_word(&w, ".global"))
    add_body_var(s, f, PP_PTX_GLOBAL, &w);
  else if (is_word(&w, ".const"))
    add_body_var(s, f, PP_PTX_CONST, &w);
  else if (is_word(&w, ".loc") || is_word(&w, ".file"))
    pp_ptx_skip_statement(s, 1);
  else if (!pp_ptx_perf_directive(s, f, &w))
    pp_ptx_skip_statement(s, 0); /* .param, .pragma, .branchtargets, ... */
}

/* ---- the statement loop ------------------------------------------------------- */
/* The body after '{' (at open). */
void pp_ptx_scan_body(scanner *s, pp_ptx_func *f, const char *open,
                      const char *kind) {
  uint64_t open_line = s->line;
  uint32_t depth = 1;
  s->bvars.n = 0;
  grid_watch g;
  pp_ptx_watch_init(s, &g);
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
      if (!pp_ptx_skip_comment(s)) {
        ERR(s, p, 0, "unexpected '/'");
        s->p = p + 1;
        pp_ptx_skip_statement(s, 0);
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
          pp_ptx_skip_statement(s, 0);
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
          if (g.set)
            pp_ptx_watch_label(&g, op, n);
          s->p = q + 1;
          continue;
        }
      }
      f->instructions++;
      op_kind k = pp_ptx_classify(f, op, n);
      s->p = p;
      const char *semi = pp_ptx_skip_statement(s, 0);
      if ((k == OP_BRA ? g.spin : k != OP_PLAIN || g.tracking) && semi)
        pp_ptx_watch_grid(s, f, &g, k | (guarded ? OP_GUARDED : 0u), p, semi);
    } else if (CLS(c) & C_BAD) {
      pp_ptx_bad_byte(s, p);
    } else {
      ERR(s, p, 0, "unexpected '%c' in the body of %s '%s'", c, kind, f->name);
      s->p = p + 1;
      pp_ptx_skip_statement(s, 0);
    }
  }
  end_body(s, f);
}
