/*
 * cols.c: the columnar record store that parsed records land in.
 *
 * One column per field name, in chunks of PP_CH rows with per-chunk value
 * widths (see pp_cols_internal.h). Strings (text values, prefixes, source
 * names) are interned once; a record's prefix and field order are kept as a
 * "layout" id, so a record prints back as its line.
 *
 * parse.c fills it; its queries (selections, summaries, groups, fits) are
 * cols_query.c; Lua reads it through lua_cols.c.
 */
#include "pp_cols_internal.h"
#include "pp_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- allocation with a byte counter -------------------------------------- */
void *pp_cols_alloc(pp_cols *c, size_t n) {
  void *p = malloc(n ? n : 1);
  if (p)
    c->bytes += n;
  return p;
}

void *pp_cols_calloc(pp_cols *c, size_t n) {
  void *p = calloc(1, n ? n : 1);
  if (p)
    c->bytes += n;
  return p;
}

void *pp_cols_realloc(pp_cols *c, void *p, size_t old, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (q)
    c->bytes = c->bytes - old + n;
  return q;
}

void pp_cols_dealloc(pp_cols *c, void *p, size_t n) {
  if (!p)
    return;
  free(p);
  c->bytes -= n;
}

/* ---- hashing ------------------------------------------------------------- */
static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h ^ (h >> 29);
}

/* ---- the store ----------------------------------------------------------- */
pp_cols *pp_cols_new(void) {
  pp_cols *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->bytes = sizeof *c;
  c->c_file = pp_cols_add_column(c, PP_COL_FILE, strlen(PP_COL_FILE), 1, 0);
  c->c_line = pp_cols_add_column(c, PP_COL_LINE, strlen(PP_COL_LINE), 1, 0);
  c->c_layout = pp_cols_add_column(c, "@layout", 7, 1, 0);
  if (c->c_file < 0 || c->c_line < 0 || c->c_layout < 0) {
    pp_cols_free(c);
    return NULL;
  }
  return c;
}

static void free_column(pp_cols *c, pp_column *k) {
  for (size_t i = 0; i < k->nchunks; i++) {
    pp_chunk *h = &k->chunks[i];
    pp_cols_dealloc(c, h->data, (size_t)h->cap * h->width);
    pp_cols_dealloc(c, h->bits, h->cap / 8);
    pp_cols_dealloc(c, h->ibits, h->cap / 8);
    pp_cols_dealloc(c, h->sbits, h->cap / 8);
  }
  pp_cols_dealloc(c, k->chunks, k->nchunks * sizeof *k->chunks);
  pp_cols_dealloc(c, k->alt, k->alt_cap * 2 * sizeof *k->alt);
  pp_cols_dealloc(c, k->name, k->len + 1);
}

PP_EXPORT void pp_cols_free(pp_cols *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->ncol; i++)
    free_column(c, &c->col[i]);
  free(c->col);
  free(c->name_ht);
  free(c->vis);
  free(c->arena);
  free(c->str_off);
  free(c->str_ht);
  for (size_t i = 0; i < c->nlay; i++)
    free(c->lay[i].cols);
  free(c->lay);
  free(c->lay_ht);
  free(c);
}

/* Room for one more element in an array of *alloc (doubled; first
 * elements at the start); -1, the array unchanged, without memory. */
static int grow(pp_cols *c, void **a, size_t *alloc, size_t first,
                size_t elem) {
  size_t na = *alloc ? *alloc * 2 : first;
  void *n = pp_cols_realloc(c, *a, *alloc * elem, na * elem);
  if (!n)
    return -1;
  *a = n;
  *alloc = na;
  return 0;
}

/* ---- the three indexes: names, strings, layouts ---------------------------
 * Open addressing with linear probing in a power-of-two table; a slot holds
 * an item's number + 1 (0: empty). Each grows to keep at most half its
 * slots filled: index_grow places the n items already there again, item i
 * at key_hash(c, i). */
typedef uint64_t (*key_hash_fn)(const pp_cols *c, size_t i);

static int index_grow(pp_cols *c, uint32_t **ht, size_t *size, size_t first,
                      size_t n, key_hash_fn key_hash) {
  size_t nsize = *size ? *size * 2 : first;
  uint32_t *t = pp_cols_calloc(c, nsize * sizeof *t);
  if (!t)
    return -1;
  for (size_t i = 0; i < n; i++) {
    size_t h = key_hash(c, i) & (nsize - 1);
    while (t[h])
      h = (h + 1) & (nsize - 1);
    t[h] = (uint32_t)i + 1;
  }
  pp_cols_dealloc(c, *ht, *size * sizeof *t);
  *ht = t;
  *size = nsize;
  return 0;
}

static uint64_t name_key(const pp_cols *c, size_t i) {
  return hash_bytes(c->col[i].name, c->col[i].len);
}

int pp_cols_lookup(const pp_cols *c, const char *name, size_t len) {
  if (!c->name_ht_size)
    return -1;
  size_t m = c->name_ht_size - 1, h = hash_bytes(name, len) & m;
  for (uint32_t v; (v = c->name_ht[h]) != 0; h = (h + 1) & m) {
    const pp_column *k = &c->col[v - 1];
    if (k->len == len && memcmp(k->name, name, len) == 0)
      return (int)(v - 1);
  }
  return -1;
}

int pp_cols_add_column(pp_cols *c, const char *name, size_t len, int hidden,
                       int strict) {
  if (c->ncol == c->col_alloc) {
    size_t na = c->col_alloc ? c->col_alloc * 2 : 64;
    pp_column *nc = pp_cols_realloc(c, c->col, c->col_alloc * sizeof *nc,
                                    na * sizeof *nc);
    uint32_t *nv = nc ? pp_cols_realloc(c, c->vis, c->col_alloc * sizeof *nv,
                                        na * sizeof *nv)
                      : NULL;
    if (nc)
      c->col = nc;
    if (!nv)
      return -1;
    c->vis = nv;
    c->col_alloc = na;
  }
  if ((c->ncol + 1) * 2 > c->name_ht_size &&
      index_grow(c, &c->name_ht, &c->name_ht_size, 128, c->ncol, name_key))
    return -1;
  pp_column *k = &c->col[c->ncol];
  memset(k, 0, sizeof *k);
  k->name = pp_cols_alloc(c, len + 1);
  if (!k->name)
    return -1;
  memcpy(k->name, name, len);
  k->name[len] = 0;
  k->len = (uint32_t)len;
  k->hidden = (uint8_t)hidden;
  k->strict = (uint8_t)strict;
  size_t m = c->name_ht_size - 1, h = hash_bytes(name, len) & m;
  while (c->name_ht[h])
    h = (h + 1) & m;
  c->name_ht[h] = (uint32_t)c->ncol + 1;
  if (!hidden)
    c->vis[c->nvis++] = (uint32_t)c->ncol;
  return (int)c->ncol++;
}

/* ---- strings ------------------------------------------------------------- */
static uint64_t str_key(const pp_cols *c, size_t i) {
  size_t len;
  const char *s = pp_cols_str(c, (uint32_t)i, &len);
  return hash_bytes(s, len);
}

uint32_t pp_cols_intern(pp_cols *c, const char *s, size_t len) {
  if (len >= 0xffffffffu)
    return UINT32_MAX;
  if ((c->nstr + 1) * 2 > c->str_ht_size &&
      index_grow(c, &c->str_ht, &c->str_ht_size, 256, c->nstr, str_key))
    return UINT32_MAX;
  size_t m = c->str_ht_size - 1, h = hash_bytes(s, len) & m;
  for (uint32_t v; (v = c->str_ht[h]) != 0; h = (h + 1) & m) {
    size_t l;
    const char *t = pp_cols_str(c, v - 1, &l);
    if (l == len && memcmp(t, s, len) == 0)
      return v - 1;
  }
  if (c->nstr >= UINT32_MAX - 1)
    return UINT32_MAX;
  if (c->arena_len + len + 1 > c->arena_cap) {
    size_t na = c->arena_cap ? c->arena_cap : 4096;
    while (na < c->arena_len + len + 1)
      na *= 2;
    if (na >> 32)
      return UINT32_MAX; /* offsets are 32-bit */
    char *a = pp_cols_realloc(c, c->arena, c->arena_cap, na);
    if (!a)
      return UINT32_MAX;
    c->arena = a;
    c->arena_cap = na;
  }
  if (c->nstr == c->str_alloc &&
      grow(c, (void **)&c->str_off, &c->str_alloc, 64, sizeof *c->str_off))
    return UINT32_MAX;
  memcpy(c->arena + c->arena_len, s, len);
  c->arena[c->arena_len + len] = 0;
  c->str_off[c->nstr] = ((uint64_t)c->arena_len << 32) | len;
  c->arena_len += len + 1;
  c->str_ht[h] = (uint32_t)c->nstr + 1;
  return (uint32_t)c->nstr++;
}

/* ---- layouts ------------------------------------------------------------- */
static uint64_t layout_hash(uint32_t prefix, const uint32_t *cols, size_t n) {
  uint64_t h = pp_mix64(prefix + 0x9e3779b97f4a7c15ull);
  for (size_t i = 0; i < n; i++)
    h = pp_mix64(h ^ (cols[i] + 1));
  return h;
}

static uint64_t layout_key(const pp_cols *c, size_t i) {
  return c->lay[i].hash;
}

uint32_t pp_cols_layout_intern(pp_cols *c, uint32_t prefix,
                               const uint32_t *cols, size_t n) {
  uint64_t hash = layout_hash(prefix, cols, n);
  if ((c->nlay + 1) * 2 > c->lay_ht_size &&
      index_grow(c, &c->lay_ht, &c->lay_ht_size, 64, c->nlay, layout_key))
    return UINT32_MAX;
  size_t m = c->lay_ht_size - 1, h = hash & m;
  for (uint32_t v; (v = c->lay_ht[h]) != 0; h = (h + 1) & m) {
    const pp_layout_t *l = &c->lay[v - 1];
    if (l->hash == hash && l->prefix == prefix && l->n == n &&
        memcmp(l->cols, cols, n * sizeof *cols) == 0)
      return v - 1;
  }
  if (c->nlay == c->lay_alloc &&
      grow(c, (void **)&c->lay, &c->lay_alloc, 16, sizeof *c->lay))
    return UINT32_MAX;
  uint32_t *copy = pp_cols_alloc(c, (n ? n : 1) * sizeof *copy);
  if (!copy)
    return UINT32_MAX;
  memcpy(copy, cols, n * sizeof *copy);
  c->lay[c->nlay] = (pp_layout_t){prefix, (uint32_t)n, copy, hash};
  c->lay_ht[h] = (uint32_t)c->nlay + 1;
  return (uint32_t)c->nlay++;
}

/* ---- chunks -------------------------------------------------------------- */
static int width_for(uint64_t v) {
  return v <= 0xff ? 1 : v <= 0xffff ? 2 : v <= 0xffffffffu ? 4 : 8;
}

static void put_raw(pp_chunk *h, uint32_t off, uint64_t v) {
  switch (h->width) {
  case 1: ((uint8_t *)h->data)[off] = (uint8_t)v; break;
  case 2: ((uint16_t *)h->data)[off] = (uint16_t)v; break;
  case 4: ((uint32_t *)h->data)[off] = (uint32_t)v; break;
  default: ((uint64_t *)h->data)[off] = v; break;
  }
}

/* Re-encodes a chunk at a wider width (in place, from the end). */
static int widen(pp_cols *c, pp_chunk *h, int w) {
  if (!h->data) {
    h->width = (uint8_t)w;
    return 0;
  }
  int old = h->width;
  void *d = pp_cols_realloc(c, h->data, (size_t)h->cap * old, (size_t)h->cap * w);
  if (!d)
    return -1;
  h->data = d;
  for (uint32_t i = h->cap; i-- > 0;) {
    pp_chunk tmp = *h;
    tmp.width = (uint8_t)old;
    uint64_t v = pp_chunk_raw(&tmp, i);
    h->width = (uint8_t)w;
    put_raw(h, i, v);
  }
  h->width = (uint8_t)w;
  return 0;
}

static pp_chunk *chunk_for(pp_cols *c, pp_column *k, size_t row) {
  size_t ch = row >> PP_CH_SHIFT;
  if (ch >= k->nchunks) {
    size_t na = k->nchunks ? k->nchunks : 1;
    while (na <= ch)
      na *= 2;
    pp_chunk *nc = pp_cols_realloc(c, k->chunks, k->nchunks * sizeof *nc,
                                   na * sizeof *nc);
    if (!nc)
      return NULL;
    memset(nc + k->nchunks, 0, (na - k->nchunks) * sizeof *nc);
    k->chunks = nc;
    k->nchunks = na;
  }
  return &k->chunks[ch];
}

/* Makes room for entry `off` at width >= w and records its presence. */
static int slot(pp_cols *c, pp_chunk *h, uint32_t off, int w) {
  if (h->width < w && widen(c, h, w) != 0)
    return -1;
  if (off >= h->cap) {
    uint32_t na = h->cap ? h->cap : 64;
    while (na <= off)
      na *= 2;
    if (na > PP_CH)
      na = PP_CH;
    void *d = pp_cols_realloc(c, h->data, (size_t)h->cap * h->width,
                              (size_t)na * h->width);
    if (!d)
      return -1;
    memset((char *)d + (size_t)h->cap * h->width, 0,
           (size_t)(na - h->cap) * h->width);
    h->data = d;
    uint64_t **maps[3] = {&h->bits, &h->ibits, &h->sbits};
    for (int m = 0; m < 3; m++) { /* the bitmaps cover cap rows */
      if (!*maps[m])
        continue;
      uint64_t *b = pp_cols_realloc(c, *maps[m], h->cap / 8, na / 8);
      if (!b)
        return -1;
      memset((char *)b + h->cap / 8, 0, (na - h->cap) / 8);
      *maps[m] = b;
    }
    h->cap = na;
  }
  if (!h->bits && off != h->npresent) {
    h->bits = pp_cols_calloc(c, h->cap / 8);
    if (!h->bits)
      return -1;
    for (uint32_t i = 0; i < h->npresent; i++)
      h->bits[i >> 6] |= 1ull << (i & 63);
  }
  if (h->bits)
    h->bits[off >> 6] |= 1ull << (off & 63);
  h->npresent++;
  return 0;
}

/* ---- kind changes -------------------------------------------------------- */
/* A bitmap over the chunk's rows, made (zeroed) when it has none. */
static int bitmap(pp_cols *c, pp_chunk *h, uint64_t **b) {
  if (*b || !h->cap)
    return 0;
  *b = pp_cols_calloc(c, h->cap / 8);
  return *b ? 0 : -1;
}

static void set_bit(uint64_t *b, uint32_t off, int on) {
  if (on)
    b[off >> 6] |= 1ull << (off & 63);
  else
    b[off >> 6] &= ~(1ull << (off & 63));
}

/* A column about to hold both negative integers and u64 values above
 * INT64_MAX: every chunk gets sbits, marking as negative the wide values
 * already there when the column held negative ones. */
static int both_signs(pp_cols *c, pp_column *k) {
  for (size_t i = 0; i < k->nchunks; i++) {
    pp_chunk *h = &k->chunks[i];
    if (!h->data || h->sbits)
      continue;
    if (bitmap(c, h, &h->sbits) != 0)
      return -1;
    if (!k->negative || h->width < 8)
      continue;
    for (uint32_t j = 0; j < h->cap; j++)
      if (pp_chunk_has(h, j) && !(k->mixed && !pp_bit(h->ibits, j)) &&
          (int64_t)((uint64_t *)h->data)[j] < 0)
        set_bit(h->sbits, j, 1);
  }
  return 0;
}

/* An integer column that takes a double: a number column whose integer
 * cells stay integers (ibits), at width 8. */
static int to_mixed(pp_cols *c, pp_column *k) {
  for (size_t i = 0; i < k->nchunks; i++) {
    pp_chunk *h = &k->chunks[i];
    if (!h->data) {
      h->width = 8;
      continue;
    }
    if (widen(c, h, 8) != 0 || bitmap(c, h, &h->ibits) != 0)
      return -1;
    for (uint32_t j = 0; j < h->cap; j++)
      if (pp_chunk_has(h, j))
        set_bit(h->ibits, j, 1);
  }
  k->kind = PP_VAL_NUM;
  k->mixed = 1;
  return 0;
}

/* A number column that takes an integer: its doubles stay doubles. */
static int num_to_mixed(pp_cols *c, pp_column *k) {
  for (size_t i = 0; i < k->nchunks; i++) {
    pp_chunk *h = &k->chunks[i];
    if (h->data && bitmap(c, h, &h->ibits) != 0)
      return -1;
  }
  k->mixed = 1;
  return 0;
}

size_t pp_float_text(double d, char *buf, size_t cap) {
  char tmp[40];
  int n = 0;
  for (int prec = 15; prec <= 17; prec++) {
    n = snprintf(tmp, sizeof tmp, "%.*g", prec, d);
    if (strtod(tmp, NULL) == d || d != d)
      break;
  }
  if (n < 0)
    n = 0;
  if (strspn(tmp, "-0123456789") == (size_t)n && n + 2 < (int)sizeof tmp) {
    memcpy(tmp + n, ".0", 3); /* stays a double when read back */
    n += 2;
  }
  if (cap) {
    size_t k = (size_t)n < cap ? (size_t)n : cap - 1;
    memcpy(buf, tmp, k);
    buf[k] = 0;
  }
  return (size_t)n;
}

static size_t int_text(const pp_value *v, char *buf, size_t cap) {
  int n = v->u64 || v->i >= 0
              ? snprintf(buf, cap, "%llu", (unsigned long long)(uint64_t)v->i)
              : snprintf(buf, cap, "%lld", (long long)v->i);
  return n < 0 ? 0 : (size_t)n;
}

/* The string id of the text a double of row `row` was written as, or
 * UINT32_MAX. */
static uint32_t alt_of(const pp_column *k, size_t row) {
  size_t lo = 0, hi = k->nalt;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (k->alt[2 * mid] < row)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < k->nalt && k->alt[2 * lo] == row ? k->alt[2 * lo + 1]
                                                : UINT32_MAX;
}

const char *pp_cols_alt_text(const pp_cols *c, size_t col, size_t row,
                             size_t *len) {
  const pp_column *k = &c->col[col];
  uint32_t id = k->nalt ? alt_of(k, row) : UINT32_MAX;
  if (id == UINT32_MAX) {
    *len = 0;
    return NULL;
  }
  return pp_cols_str(c, id, len);
}

/* The exact text of a present cell (not a string): into buf, or *s set to
 * the string it is. Returns its length. */
static size_t cell_text(const pp_cols *c, const pp_column *k, size_t row,
                        const pp_value *v, char *buf, size_t cap,
                        const char **s) {
  *s = buf;
  if (v->kind == PP_VAL_INT)
    return int_text(v, buf, cap);
  uint32_t id = k->nalt ? alt_of(k, row) : UINT32_MAX;
  if (id != UINT32_MAX) {
    size_t len;
    *s = pp_cols_str(c, id, &len);
    return len;
  }
  return pp_float_text(v->d, buf, cap);
}

/* Numbers become their text (as written); the column then holds string
 * ids. */
static int to_str(pp_cols *c, pp_column *k) {
  char buf[48];
  for (size_t i = 0; i < k->nchunks; i++) {
    pp_chunk *h = &k->chunks[i];
    if (!h->data)
      continue;
    int old = h->width;
    uint32_t cap = h->cap;
    uint32_t *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids)
      return -1;
    for (uint32_t j = 0; j < cap; j++) {
      if (!pp_chunk_has(h, j))
        continue;
      pp_value v;
      pp_cell(k, h, j, &v);
      const char *t;
      size_t n = cell_text(c, k, i * PP_CH + j, &v, buf, sizeof buf, &t);
      ids[j] = pp_cols_intern(c, t, n);
      if (ids[j] == UINT32_MAX) {
        free(ids);
        return -1;
      }
    }
    uint8_t *data = pp_cols_calloc(c, cap);
    if (!data) {
      free(ids);
      return -1;
    }
    pp_cols_dealloc(c, h->data, (size_t)cap * old);
    pp_cols_dealloc(c, h->ibits, cap / 8);
    pp_cols_dealloc(c, h->sbits, cap / 8);
    h->ibits = h->sbits = NULL;
    h->data = data;
    h->width = 1;
    for (uint32_t j = 0; j < cap; j++) {
      if (!pp_chunk_has(h, j))
        continue;
      if (h->width < width_for(ids[j]) && widen(c, h, width_for(ids[j])) != 0) {
        free(ids);
        return -1;
      }
      put_raw(h, j, ids[j]);
    }
    free(ids);
  }
  pp_cols_dealloc(c, k->alt, k->alt_cap * 2 * sizeof *k->alt);
  k->alt = NULL;
  k->nalt = k->alt_cap = 0;
  k->kind = PP_VAL_STR;
  k->mixed = k->big = k->negative = 0;
  return 0;
}

/* ---- setting values ------------------------------------------------------ */
int pp_cols_set_int(pp_cols *c, size_t col, size_t row, uint64_t v, int neg) {
  pp_column *k = &c->col[col];
  if (k->kind == PP_VAL_NONE)
    k->kind = PP_VAL_INT;
  if (k->kind == PP_VAL_STR) {
    char buf[24];
    pp_value x = {.kind = PP_VAL_INT, .i = (int64_t)v, .u64 = !neg && v > (uint64_t)INT64_MAX};
    return pp_cols_set_str(c, col, row, buf, int_text(&x, buf, sizeof buf));
  }
  if (k->kind == PP_VAL_NUM && !k->mixed && num_to_mixed(c, k) != 0)
    return -1;
  int big = !neg && v > (uint64_t)INT64_MAX;
  if (((neg && k->big) || (big && k->negative)) && !(k->negative && k->big) &&
      both_signs(c, k) != 0)
    return -1;
  k->negative |= (uint8_t)neg;
  k->big |= (uint8_t)big;
  uint32_t off = (uint32_t)(row & PP_CH_MASK);
  pp_chunk *h = chunk_for(c, k, row);
  if (!h || slot(c, h, off, k->kind == PP_VAL_NUM || neg ? 8 : width_for(v)))
    return -1;
  put_raw(h, off, v);
  if (k->negative && k->big) {
    if (bitmap(c, h, &h->sbits) != 0)
      return -1;
    set_bit(h->sbits, off, neg);
  }
  if (k->mixed) {
    if (bitmap(c, h, &h->ibits) != 0)
      return -1;
    set_bit(h->ibits, off, 1);
  }
  return 0;
}

int pp_cols_set_num_text(pp_cols *c, size_t col, size_t row, double v,
                         const char *text, size_t len) {
  pp_column *k = &c->col[col];
  char buf[48];
  size_t n = pp_float_text(v, buf, sizeof buf);
  int own = text && (len != n || memcmp(text, buf, n) != 0);
  if (k->kind == PP_VAL_NONE)
    k->kind = PP_VAL_NUM;
  if (k->kind == PP_VAL_STR)
    return own ? pp_cols_set_str(c, col, row, text, len)
               : pp_cols_set_str(c, col, row, buf, n);
  if (k->kind == PP_VAL_INT && to_mixed(c, k) != 0)
    return -1;
  uint32_t off = (uint32_t)(row & PP_CH_MASK);
  pp_chunk *h = chunk_for(c, k, row);
  if (!h || slot(c, h, off, 8))
    return -1;
  uint64_t bits;
  memcpy(&bits, &v, 8);
  put_raw(h, off, bits);
  if (k->mixed) {
    if (bitmap(c, h, &h->ibits) != 0)
      return -1;
    set_bit(h->ibits, off, 0);
  }
  if (own) { /* the text it was written as */
    uint32_t id = pp_cols_intern(c, text, len);
    if (id == UINT32_MAX || row > UINT32_MAX)
      return -1;
    if (k->nalt == k->alt_cap) {
      size_t na = k->alt_cap ? k->alt_cap * 2 : 8;
      uint32_t *a = pp_cols_realloc(c, k->alt, k->alt_cap * 2 * sizeof *a,
                                    na * 2 * sizeof *a);
      if (!a)
        return -1;
      k->alt = a;
      k->alt_cap = na;
    }
    k->alt[2 * k->nalt] = (uint32_t)row;
    k->alt[2 * k->nalt + 1] = id;
    k->nalt++;
  }
  return 0;
}

int pp_cols_set_num(pp_cols *c, size_t col, size_t row, double v) {
  return pp_cols_set_num_text(c, col, row, v, NULL, 0);
}

int pp_cols_set_str(pp_cols *c, size_t col, size_t row, const char *s,
                    size_t len) {
  pp_column *k = &c->col[col];
  if (k->kind == PP_VAL_INT || k->kind == PP_VAL_NUM) {
    if (to_str(c, k) != 0)
      return -1;
  }
  k->kind = PP_VAL_STR;
  uint32_t id = pp_cols_intern(c, s, len);
  if (id == UINT32_MAX)
    return -1;
  pp_chunk *h = chunk_for(c, k, row);
  if (!h || slot(c, h, (uint32_t)(row & PP_CH_MASK), width_for(id)))
    return -1;
  put_raw(h, (uint32_t)(row & PP_CH_MASK), id);
  return 0;
}

int pp_cols_set_strid(pp_cols *c, size_t col, size_t row, uint32_t id) {
  pp_column *k = &c->col[col];
  if (k->kind != PP_VAL_NONE && k->kind != PP_VAL_STR) {
    size_t len;
    const char *s = pp_cols_str(c, id, &len);
    return pp_cols_set_str(c, col, row, s, len);
  }
  k->kind = PP_VAL_STR;
  pp_chunk *h = chunk_for(c, k, row);
  if (!h || slot(c, h, (uint32_t)(row & PP_CH_MASK), width_for(id)))
    return -1;
  put_raw(h, (uint32_t)(row & PP_CH_MASK), id);
  return 0;
}

/* ---- reading ------------------------------------------------------------- */
PP_EXPORT size_t pp_cols_count(const pp_cols *c) { return c->n; }
PP_EXPORT size_t pp_cols_ncolumns(const pp_cols *c) { return c->ncol; }
PP_EXPORT size_t pp_cols_nfields(const pp_cols *c) { return c->nvis; }
PP_EXPORT size_t pp_cols_field_column(const pp_cols *c, size_t i) { return c->vis[i]; }
PP_EXPORT const char *pp_cols_name(const pp_cols *c, size_t col) { return c->col[col].name; }
PP_EXPORT int pp_cols_hidden(const pp_cols *c, size_t col) { return c->col[col].hidden; }
PP_EXPORT pp_val_kind pp_cols_kind(const pp_cols *c, size_t col) {
  return (pp_val_kind)c->col[col].kind;
}
PP_EXPORT int pp_cols_unsigned(const pp_cols *c, size_t col) {
  return !c->col[col].negative;
}
PP_EXPORT int pp_cols_find(const pp_cols *c, const char *name) {
  return pp_cols_lookup(c, name, strlen(name));
}
PP_EXPORT size_t pp_cols_bytes(const pp_cols *c) { return c->bytes; }

PP_EXPORT void pp_cols_get(const pp_cols *c, size_t col, size_t row, pp_value *out) {
  memset(out, 0, sizeof *out);
  const pp_chunk *h = pp_cols_chunk(c, col, row);
  uint32_t off = (uint32_t)(row & PP_CH_MASK);
  if (row >= c->n || !pp_chunk_has(h, off))
    return;
  const pp_column *k = &c->col[col];
  if (k->kind == PP_VAL_NONE)
    return;
  pp_cell(k, h, off, out);
  if (out->kind == PP_VAL_STR) {
    out->s = pp_cols_str(c, (uint32_t)out->i, &out->len);
    out->i = 0;
  }
}

PP_EXPORT int pp_cols_get_double(const pp_cols *c, size_t col, size_t row, double *out) {
  *out = 0;
  if (row >= c->n)
    return 0;
  return pp_chunk_double(&c->col[col], pp_cols_chunk(c, col, row),
                      (uint32_t)(row & PP_CH_MASK), out);
}

PP_EXPORT size_t pp_cols_nlayouts(const pp_cols *c) { return c->nlay; }
PP_EXPORT size_t pp_cols_layout(const pp_cols *c, size_t row) {
  pp_value v;
  pp_cols_get(c, (size_t)c->c_layout, row, &v);
  return (size_t)v.i;
}
PP_EXPORT const char *pp_cols_layout_prefix(const pp_cols *c, size_t layout) {
  return pp_cols_str(c, c->lay[layout].prefix, NULL);
}
PP_EXPORT size_t pp_cols_layout_nfields(const pp_cols *c, size_t layout) {
  return c->lay[layout].n;
}
PP_EXPORT size_t pp_cols_layout_column(const pp_cols *c, size_t layout, size_t i) {
  return c->lay[layout].cols[i];
}

static size_t put(char *buf, size_t cap, size_t at, const char *s, size_t n) {
  if (at < cap) {
    size_t room = cap - at;
    memcpy(buf + at, s, n < room ? n : room);
  }
  return at + n;
}

/* The exact text of `col` in `row`: a pointer to it (into tmp, or the
 * store's string) and its length; 0 when absent. */
static size_t text_of(const pp_cols *c, size_t col, size_t row, char *tmp,
                      size_t cap, const char **s) {
  pp_value v;
  pp_cols_get(c, col, row, &v);
  *s = tmp;
  if (v.kind == PP_VAL_STR) {
    *s = v.s;
    return v.len;
  }
  if (v.kind == PP_VAL_NONE)
    return 0;
  return cell_text(c, &c->col[col], row, &v, tmp, cap, s);
}

PP_EXPORT size_t pp_cols_format(const pp_cols *c, size_t row, char *buf, size_t cap) {
  size_t at = 0, L = pp_cols_layout(c, row);
  const char *prefix = pp_cols_layout_prefix(c, L);
  at = put(buf, cap, at, prefix, strlen(prefix));
  char tmp[48];
  for (size_t i = 0; i < c->lay[L].n; i++) {
    size_t col = c->lay[L].cols[i];
    const pp_column *k = &c->col[col];
    at = put(buf, cap, at, " ", 1);
    at = put(buf, cap, at, k->name, k->len);
    at = put(buf, cap, at, "=", 1);
    const char *s;
    size_t n = text_of(c, col, row, tmp, sizeof tmp, &s);
    at = put(buf, cap, at, s, n);
  }
  if (cap)
    buf[at < cap ? at : cap - 1] = 0;
  return at;
}

PP_EXPORT size_t pp_cols_text(const pp_cols *c, size_t col, size_t row,
                              char *buf, size_t cap) {
  char tmp[48];
  const char *s;
  size_t n = text_of(c, col, row, tmp, sizeof tmp, &s);
  if (cap) {
    size_t k = n < cap ? n : cap - 1;
    memcpy(buf, s, k);
    buf[k] = 0;
  }
  return n;
}
