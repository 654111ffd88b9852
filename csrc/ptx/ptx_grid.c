/*
 * ptx_grid.c: grid synchronisations in a function body, recognised by
 * their structure (ptx_scanner.h says which: an arrive, a label, a spin
 * read of the same address, a branch back). The statement loop
 * (ptx_body.c) and the fast line reader (ptx_lines.c) hand each
 * instruction that pp_ptx_classify marks, and each label, to the watch of
 * their body (pp_ptx_watch_*); it follows addresses through register
 * copies by giving names classes, and counts a sync in f->grid_syncs when
 * the branch closes the loop.
 */
#include "ptx_scanner.h"

#include <stdlib.h>
#include <string.h>

/* ---- grid syncs: names and their classes ------------------------------------ */
static inline uint32_t fnv32(const char *p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)p[i]) * 16777619u;
  return h;
}

/* A 64-bit hash of a name, eight bytes at a time. */
static inline uint64_t name_hash(const char *p, size_t n) {
  uint64_t h = n * 0x9E3779B97F4A7C15ull;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  memcpy(&w, p, n);
  h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
  return h ^ (h >> 32);
}

static inline int same_name(const char *a, const char *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i])
      return 0;
  return 1;
}

/* A symbol never changes: its class is its name's hash, top bit set (a
 * register's class is a counter, top bit clear), with no slot. */
static inline uint64_t symbol_class(const char *p, size_t n) {
  return name_hash(p, n) | ((uint64_t)1 << 63);
}

void pp_ptx_watch_init(scanner *s, grid_watch *g) {
  g->set = g->spin = g->tracking = 0;
  g->nlabels = 0;
  g->npar = 0;
  memset(g->bloom, 0, sizeof g->bloom);
  g->len = 0;
  g->ct = s->copies;
  if (g->ct) {
    copy_table *t = g->ct;
    if (++t->gen == 0) { /* after 2^32 bodies: clear once */
      memset(t->slot, 0, sizeof t->slot);
      t->gen = 1;
    }
    t->used = 0;
  }
}

/* The table, made at first use; NULL (and the scan stops) without memory. */
static copy_table *table(scanner *s, grid_watch *g) {
  if (!g->ct) {
    if (!s->copies) {
      s->copies = calloc(1, sizeof *s->copies);
      if (!s->copies) {
        pp_ptx_no_memory(s);
        return NULL;
      }
      s->copies->gen = 1;
    }
    g->ct = s->copies;
  }
  return g->ct;
}

static uint64_t new_class(copy_table *t) {
  return ++t->next_cls & ~((uint64_t)1 << 63);
}

/* The slot of a register in this body, or NULL; with add (s set), a new
 * slot for it with a new class when it has none. A table three quarters
 * full starts again: what it forgets can only hide a sync, never make one. */
static copy_slot *slot_of(scanner *s, grid_watch *g, const char *p, size_t n) {
  copy_table *t = s ? table(s, g) : g->ct;
  if (!t || n < 2 || n >= sizeof t->slot[0].name)
    return NULL;
  for (uint64_t i = name_hash(p, n);; i++) {
    copy_slot *c = &t->slot[i & (COPY_SLOTS - 1)];
    if (c->gen != t->gen) {
      if (!s)
        return NULL;
      if (t->used >= COPY_SLOTS / 4 * 3) {
        if (++t->gen == 0) {
          memset(t->slot, 0, sizeof t->slot);
          t->gen = 1;
        }
        t->used = 0;
        g->tracking = 0;
        memset(g->bloom, 0, sizeof g->bloom);
        return slot_of(s, g, p, n);
      }
      c->gen = t->gen;
      c->cls = new_class(t);
      c->len = (uint8_t)n;
      memcpy(c->name, p, n);
      t->used++;
      unsigned b = grid_bloom(p, n); /* its writes must now be seen */
      g->tracking = 1;
      g->bloom[b >> 6] |= (uint64_t)1 << (b & 63);
      return c;
    }
    if (c->len == n && same_name(c->name, p, n))
      return c;
  }
}

/* The class of a name (a register or a symbol) [p, p + n): with s, a
 * register without one is given one; 0 when it has none. */
static uint64_t class_of(scanner *s, grid_watch *g, const char *p, size_t n) {
  if (n == 0)
    return 0;
  if (*p != '%')
    return symbol_class(p, n);
  copy_slot *c = slot_of(s, g, p, n);
  return c ? c->cls : 0;
}

static inline const char *skip_space(const char *p, const char *e) {
  while (p < e && ((CLS(*p) & C_BLANK) || *p == '\n' || *p == '\r'))
    p++;
  return p;
}

/* A register written: it holds a new value from here on. */
void pp_ptx_watch_write(grid_watch *g, const char *p, size_t n) {
  copy_slot *c = slot_of(NULL, g, p, n);
  if (c)
    c->cls = new_class(g->ct);
}

static inline void written(grid_watch *g, const char *p, size_t n) {
  if (grid_maybe_tracked(g, p, n))
    pp_ptx_watch_write(g, p, n);
}

/* The destination of an instruction, its first operand: a register, or
 * "{%a, %b}" for several. Stores, reductions and branches have none there
 * ('[', a label, '('), and a register they read is taken as written: that
 * can only hide a sync. */
static void write_dest(grid_watch *g, const char *ops, const char *semi) {
  const char *p = skip_space(ops, semi);
  if (p < semi && *p == '{') {
    const char *close = memchr(p, '}', (size_t)(semi - p));
    if (!close)
      return;
    for (p++; p < close;) {
      p = skip_space(p, close);
      const char *w = word_end(p, close);
      written(g, p, (size_t)(w - p));
      p = w;
      while (p < close && *p != ',')
        p++;
      if (p < close)
        p++;
    }
    return;
  }
  written(g, p, (size_t)(word_end(p, semi) - p));
}

/* The key of the first "[...]" operand in [p, e): "\1" and the class of its
 * base name (with s, a register is given one if it has none), then the rest
 * ("+8"), blanks dropped; or its text when the base has no class. 0 when
 * there is no address. */
static size_t address_key(scanner *s, grid_watch *g, const char *p,
                          const char *e, char *out) {
  const char *b = memchr(p, '[', (size_t)(e - p));
  if (!b)
    return 0;
  const char *close = memchr(b, ']', (size_t)(e - b));
  if (!close)
    return 0;
  b = skip_space(b + 1, close);
  const char *w = (b < close && (CLS(*b) & C_START)) ? word_end(b, close) : b;
  size_t n = 0;
  uint64_t cls = class_of(s, g, b, (size_t)(w - b));
  if (cls) {
    out[n++] = 1;
    memcpy(out + n, &cls, sizeof cls);
    n += sizeof cls;
    b = w;
  }
  for (; b < close && n < GRID_KEY; b++)
    if (!(CLS(*b) & C_BLANK) && *b != '\n' && *b != '\r')
      out[n++] = *b;
  return n;
}

/* "mov.b64 %dst, src;" (also .u64, .s64), and "cvta.global.u64 %dst, src;"
 * (and cvta.to.global): %dst takes the class of src when src is a name (a
 * register or a symbol); otherwise, or under a guard, it holds something
 * else from here on. A cvta between the global and the generic address of
 * one variable changes the number, not the memory it names, and the memory
 * is what a spin read must re-read. */
static void copy(scanner *s, grid_watch *g, int guarded, const char *ops,
                 const char *semi) {
  const char *d = skip_space(ops, semi);
  const char *de = word_end(d, semi);
  if (de == d || *d != '%')
    return;
  const char *src = skip_space(de, semi);
  const char *se = src;
  if (src < semi && *src == ',') {
    src = skip_space(src + 1, semi);
    se = (src < semi && (CLS(*src) & C_START)) ? word_end(src, semi) : src;
  }
  uint64_t cls = 0;
  if (!guarded && se > src && skip_space(se, semi) == semi)
    cls = class_of(s, g, src, (size_t)(se - src));
  if (!cls) {
    written(g, d, (size_t)(de - d));
    return;
  }
  copy_slot *to = slot_of(s, g, d, (size_t)(de - d));
  if (to)
    to->cls = cls;
}

/* ---- grid syncs: the pattern --------------------------------------------- */
void pp_ptx_watch_label(grid_watch *g, const char *p, size_t n) {
  if (!g->set || g->spin)
    return;
  g->labels[g->nlabels++ % GRID_LABELS] = fnv32(p, n);
}

/* A branch: the end of the spin loop when it goes back to a label between
 * the arrive and the spin read. */
static void branch(pp_ptx_func *f, grid_watch *g, const char *ops,
                   const char *semi) {
  const char *p = skip_space(ops, semi);
  const char *e = word_end(p, semi);
  if (e == p)
    return;
  uint32_t h = fnv32(p, (size_t)(e - p));
  unsigned n = g->nlabels < GRID_LABELS ? g->nlabels : GRID_LABELS;
  for (unsigned i = 0; i < n; i++)
    if (g->labels[i] == h) {
      f->grid_syncs++;
      g->set = g->spin = 0;
      g->nlabels = 0;
      return;
    }
}

/* An arrive at the address whose key is key[0..n): watched from here on. */
static void arrive(grid_watch *g, const char *key, size_t n) {
  if (!n)
    return;
  memcpy(g->key, key, n);
  g->len = n;
  g->set = 1;
  g->spin = 0;
  g->nlabels = 0;
}

/* A read of the address whose key is key[0..n): the spin read when it is
 * the watched arrive's address. */
static void spin_read(grid_watch *g, const char *key, size_t n) {
  if (g->set && !g->spin && n && n == g->len && memcmp(key, g->key, n) == 0)
    g->spin = 1;
}

/* [p, e) with its blanks dropped, into out (cap bytes); 0 when it does not
 * fit. */
static size_t squeeze(const char *p, const char *e, char *out, size_t cap) {
  size_t n = 0;
  for (; p < e; p++) {
    if ((CLS(*p) & C_BLANK) || *p == '\n' || *p == '\r')
      continue;
    if (n == cap)
      return 0;
    out[n++] = *p;
  }
  return n;
}

/* The integer a PTX literal spells ([-]digits, 0x hex, 0b binary, 0 octal,
 * an optional U): 1 and *v (two's complement of 64 bits), or 0. */
static int literal(const char *p, size_t n, uint64_t *v) {
  int neg = n && *p == '-';
  p += neg, n -= (size_t)neg;
  if (n && (p[n - 1] == 'U' || p[n - 1] == 'u'))
    n--;
  if (!n)
    return 0;
  unsigned base = 10;
  if (n > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
    base = 16, p += 2, n -= 2;
  else if (n > 2 && p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
    base = 2, p += 2, n -= 2;
  else if (n > 1 && p[0] == '0')
    base = 8, p++, n--;
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                 : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                        : 99;
    if (d >= base || x > (UINT64_MAX - d) / base)
      return 0;
    x = x * base + d;
  }
  *v = neg ? (uint64_t)0 - x : x;
  return 1;
}

/* Whether operands a[0..an) (and b[0..bn) for a compare-and-swap) leave the
 * value of an atomic of kind k as it is. */
static int keeps_value(unsigned k, const char *a, size_t an, const char *b,
                       size_t bn) {
  uint64_t v;
  switch (k) {
  case OP_ATOM:
  case OP_KEEP0:
    return an && literal(a, an, &v) && v == 0;
  case OP_KEEP1:
    return an && literal(a, an, &v) &&
           (v == UINT64_MAX || v == 0xffffffffu);
  case OP_CAS:
    return an && an == bn && memcmp(a, b, an) == 0;
  default:
    return 0;
  }
}

/* The key of a name (a register or a symbol) as address_key makes it for
 * "[name]", into out: with s, a register is given a class if it has none. */
static size_t name_key(scanner *s, grid_watch *g, const char *p, size_t n,
                       char *out) {
  uint64_t cls = (n && (CLS(*p) & C_START)) ? class_of(s, g, p, n) : 0;
  if (cls) {
    out[0] = 1;
    memcpy(out + 1, &cls, sizeof cls);
    return 1 + sizeof cls;
  }
  return n <= GRID_KEY ? (memcpy(out, p, n), n) : 0;
}

/* An atomic instruction of kind k on grid memory: with a result and
 * operands that leave the value as it is, a read of its address (which may
 * be the spin read); else an add or inc arrives. */
static void atomic(scanner *s, grid_watch *g, unsigned k, const char *ops,
                   const char *semi) {
  const char *b = memchr(ops, '[', (size_t)(semi - ops));
  const char *close = b ? memchr(b, ']', (size_t)(semi - b)) : NULL;
  if (!close)
    return;
  int result = skip_space(ops, semi) != b;
  char x[GRID_PARAM_TEXT], y[GRID_PARAM_TEXT], key[GRID_KEY];
  size_t xn = 0, yn = 0;
  const char *p = skip_space(close + 1, semi);
  if (result && p < semi && *p == ',') { /* the operands after the address */
    const char *c = memchr(p + 1, ',', (size_t)(semi - p - 1));
    xn = squeeze(p + 1, c ? c : semi, x, sizeof x);
    if (c)
      yn = squeeze(c + 1, semi, y, sizeof y);
  }
  if (result && keeps_value(k, x, xn, y, yn))
    spin_read(g, key, address_key(NULL, g, ops, semi, key));
  else if (k == OP_ATOM || k == OP_INC)
    arrive(g, key, address_key(s, g, ops, semi, key));
}

/* st.param.TYPE [name+0], value: kept for the next call. */
static void param(grid_watch *g, const char *ops, const char *semi) {
  const char *p = skip_space(ops, semi);
  if (p >= semi || *p != '[')
    return;
  p = skip_space(p + 1, semi);
  const char *e = word_end(p, semi);
  const char *q = skip_space(e, semi);
  if (e == p)
    return;
  if (q < semi && *q == '+') { /* +0 only: the parameter itself */
    q = skip_space(q + 1, semi);
    if (q >= semi || *q != '0')
      return;
    q = skip_space(q + 1, semi);
  }
  if (q >= semi || *q != ']')
    return;
  q = skip_space(q + 1, semi);
  if (q >= semi || *q != ',')
    return;
  unsigned i = g->npar++ % GRID_PARAMS;
  g->par[i].name = fnv32(p, (size_t)(e - p));
  g->par[i].len = (uint8_t)squeeze(q + 1, semi, g->par[i].text,
                                   sizeof g->par[i].text);
}

/* The value st.param stored in the parameter named [p, p + n), or NULL. */
static const char *param_value(const grid_watch *g, const char *p, size_t n,
                               size_t *len) {
  uint32_t h = fnv32(p, n);
  unsigned m = g->npar < GRID_PARAMS ? g->npar : GRID_PARAMS;
  for (unsigned j = 0; j < m; j++) {
    unsigned i = (g->npar - 1 - j) % GRID_PARAMS; /* the latest first */
    if (g->par[i].name == h && g->par[i].len) {
      *len = g->par[i].len;
      return g->par[i].text;
    }
  }
  return NULL;
}

/* The kind of nvcc's atomic function named [p, p + n) (the CUDA atomicAdd,
 * its mangled forms, and the __uAtomicAdd family it calls): OP_ATOM,
 * OP_INC, OP_KEEP0, OP_KEEP1, OP_CAS; OP_PLAIN for anything else. */
static unsigned atomic_function(const char *p, size_t n) {
  for (size_t i = 1; i + 5 < n; i++) {
    if ((p[i - 1] != 'a' && p[i - 1] != 'A') || memcmp(p + i, "tomic", 5) != 0)
      continue;
    const char *w = p + i + 5, *e = p + n;
    if (e - w >= 3 && memcmp(w, "CAS", 3) == 0)
      return OP_CAS;
    size_t l = 0;
    if (w < e && *w >= 'A' && *w <= 'Z')
      for (l = 1; w + l < e && w[l] >= 'a' && w[l] <= 'z'; l++)
        ;
    if (word_is(w, l, "Add") || word_is(w, l, "Sub"))
      return OP_ATOM;
    if (word_is(w, l, "Inc"))
      return OP_INC;
    if (word_is(w, l, "Or") || word_is(w, l, "Xor"))
      return OP_KEEP0;
    if (word_is(w, l, "And"))
      return OP_KEEP1;
    /* "atomic_poll", "atomicExch": on to the next */
  }
  return OP_PLAIN;
}

/* Past blanks, line ends, comments (a call's operands may span lines,
 * each with its comment) and the bytes of `also` in [p, e). */
static const char *skip_gap(const char *p, const char *e, const char *also) {
  while (p < e) {
    if ((CLS(*p) & C_BLANK) || *p == '\n' || *p == '\r' ||
        (*p && strchr(also, *p))) {
      p++;
    } else if (*p == '/' && e - p >= 2 && p[1] == '/') {
      const char *nl = memchr(p, '\n', (size_t)(e - p));
      p = nl ? nl + 1 : e;
    } else if (*p == '/' && e - p >= 2 && p[1] == '*') {
      const char *q = p + 2;
      while (q + 1 < e && !(q[0] == '*' && q[1] == '/'))
        q++;
      p = q + 1 < e ? q + 2 : e;
    } else {
      break;
    }
  }
  return p;
}

/* The next name of a call's operand list [p, e), after blanks, comments,
 * ',' and '(': [*w, returned). */
static const char *next_name(const char *p, const char *e, const char **w) {
  p = skip_gap(p, e, ",(");
  *w = p;
  return word_end(p, e);
}

/* call[.uni] [(retval),] name, (args): an atomic of nvcc's functions acts
 * on the address in its first argument, with the values of the others. */
static void call(scanner *s, pp_ptx_func *f, grid_watch *g, const char *ops,
                 const char *semi) {
  const char *p = skip_gap(ops, semi, ""), *w, *e;
  int result = p < semi && *p == '(';
  if (result) {
    const char *close = memchr(p, ')', (size_t)(semi - p));
    if (!close)
      return;
    p = close + 1;
  }
  e = next_name(p, semi, &w);
  unsigned k = atomic_function(w, (size_t)(e - w));
  if (k != OP_PLAIN) {
    f->atomics++; /* the atomic nvcc's debug code calls rather than inlines */
    const char *args[3] = {NULL, NULL, NULL};
    size_t alen[3] = {0, 0, 0};
    const char *a = e;
    for (int i = 0; i < 3; i++) {
      const char *an;
      a = next_name(a, semi, &an);
      if (a == an)
        break;
      args[i] = param_value(g, an, (size_t)(a - an), &alen[i]);
    }
    char key[GRID_KEY];
    size_t n = args[0] ? 1 : 0;
    if (n && result && keeps_value(k, args[1], alen[1], args[2], alen[2]))
      spin_read(g, key, name_key(NULL, g, args[0], alen[0], key));
    else if (n && (k == OP_ATOM || k == OP_INC))
      arrive(g, key, name_key(s, g, args[0], alen[0], key));
  }
  g->npar = 0;
}

void pp_ptx_watch_grid(scanner *s, pp_ptx_func *f, grid_watch *g, unsigned k,
                       const char *ops, const char *semi) {
  char key[GRID_KEY];
  switch (OP_KIND(k)) {
  case OP_BRA:
    if (g->spin)
      branch(f, g, ops, semi);
    return;
  case OP_COPY:
    copy(s, g, (k & OP_GUARDED) != 0, ops, semi);
    return;
  case OP_PARAM:
    param(g, ops, semi);
    return;
  case OP_CALL:
    call(s, f, g, ops, semi);
    return;
  case OP_ATOM:
  case OP_INC:
  case OP_KEEP0:
  case OP_KEEP1:
  case OP_CAS:
    atomic(s, g, OP_KIND(k), ops, semi);
    break;
  case OP_SPIN:
    spin_read(g, key, address_key(NULL, g, ops, semi, key));
    break;
  default:
    break;
  }
  if (g->tracking)
    write_dest(g, ops, semi);
}
