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
  }
  pp_cols_dealloc(c, k->chunks, k->nchunks * sizeof *k->chunks);
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
    if (h->bits) { /* the bitmap covers cap rows */
      uint64_t *b = pp_cols_realloc(c, h->bits, h->cap / 8, na / 8);
      if (!b)
        return -1;
      memset((char *)b + h->cap / 8, 0, (na - h->cap) / 8);
      h->bits = b;
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
static int to_num(pp_cols *c, pp_column *k) {
  for (size_t i = 0; i < k->nchunks; i++) {
    pp_chunk *h = &k->chunks[i];
    int old = h->width;
    if (!h->data) {
      h->width = 8;
      continue;
    }
    if (widen(c, h, 8) != 0)
      return -1;
    for (uint32_t j = 0; j < h->cap; j++) {
      uint64_t raw = ((uint64_t *)h->data)[j];
      double d = pp_int_to_double(k, raw, old);
      memcpy((uint64_t *)h->data + j, &d, 8);
    }
  }
  k->kind = PP_VAL_NUM;
  return 0;
}

static size_t num_text(double d, char *buf, size_t cap) {
  int n = snprintf(buf, cap, "%.15g", d);
  if (strtod(buf, NULL) != d)
    n = snprintf(buf, cap, "%.17g", d);
  return n < 0 ? 0 : (size_t)n;
}

static size_t int_text(const pp_column *k, uint64_t raw, int width, char *buf,
                       size_t cap) {
  int n = (k->negative && width == 8)
              ? snprintf(buf, cap, "%lld", (long long)(int64_t)raw)
              : snprintf(buf, cap, "%llu", (unsigned long long)raw);
  return n < 0 ? 0 : (size_t)n;
}

/* Numbers become their text; the column then holds string ids. */
static int to_str(pp_cols *c, pp_column *k) {
  char buf[40];
  for (size_t i = 0; i < k->nchunks; i++) {
    pp_chunk *h = &k->chunks[i];
    if (!h->data)
      continue;
    int old = h->width;
    uint32_t cap = h->cap;
    uint64_t *vals = malloc((size_t)cap * sizeof *vals);
    uint8_t *ids = vals ? pp_cols_calloc(c, cap) : NULL;
    if (!ids) {
      free(vals);
      return -1;
    }
    for (uint32_t j = 0; j < cap; j++)
      vals[j] = pp_chunk_raw(h, j);
    pp_cols_dealloc(c, h->data, (size_t)cap * old);
    h->data = ids;
    h->width = 1;
    for (uint32_t j = 0; j < cap; j++) {
      if (!pp_chunk_has(h, j))
        continue;
      size_t n;
      if (k->kind == PP_VAL_NUM) {
        double d;
        memcpy(&d, &vals[j], 8);
        n = num_text(d, buf, sizeof buf);
      } else {
        n = int_text(k, vals[j], old, buf, sizeof buf);
      }
      uint32_t id = pp_cols_intern(c, buf, n);
      if (id == UINT32_MAX || (h->width < width_for(id) &&
                               widen(c, h, width_for(id)) != 0)) {
        free(vals);
        return -1;
      }
      put_raw(h, j, id);
    }
    free(vals);
  }
  k->kind = PP_VAL_STR;
  return 0;
}

/* ---- setting values ------------------------------------------------------ */
int pp_cols_set_int(pp_cols *c, size_t col, size_t row, uint64_t v, int neg) {
  pp_column *k = &c->col[col];
  if (k->kind == PP_VAL_NONE)
    k->kind = PP_VAL_INT;
  if (k->kind == PP_VAL_NUM)
    return pp_cols_set_num(c, col, row,
                           neg ? (double)(int64_t)v : (double)v);
  if (k->kind == PP_VAL_STR) {
    char buf[24];
    int n = neg ? snprintf(buf, sizeof buf, "%lld", (long long)(int64_t)v)
                : snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return pp_cols_set_str(c, col, row, buf, (size_t)n);
  }
  if (neg && !k->negative) {
    /* wide unsigned values already stored keep their bits; reading them
     * as signed is the documented ambiguity of mixed columns */
    k->negative = 1;
  }
  pp_chunk *h = chunk_for(c, k, row);
  if (!h || slot(c, h, (uint32_t)(row & PP_CH_MASK), neg ? 8 : width_for(v)))
    return -1;
  put_raw(h, (uint32_t)(row & PP_CH_MASK), v);
  return 0;
}

int pp_cols_set_num(pp_cols *c, size_t col, size_t row, double v) {
  pp_column *k = &c->col[col];
  if (k->kind == PP_VAL_NONE)
    k->kind = PP_VAL_NUM;
  if (k->kind == PP_VAL_INT && to_num(c, k) != 0)
    return -1;
  if (k->kind == PP_VAL_STR) {
    char buf[40];
    size_t n = num_text(v, buf, sizeof buf);
    return pp_cols_set_str(c, col, row, buf, n);
  }
  pp_chunk *h = chunk_for(c, k, row);
  if (!h || slot(c, h, (uint32_t)(row & PP_CH_MASK), 8))
    return -1;
  uint64_t bits;
  memcpy(&bits, &v, 8);
  put_raw(h, (uint32_t)(row & PP_CH_MASK), bits);
  return 0;
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
  uint64_t raw = pp_chunk_raw(h, off);
  out->kind = (pp_val_kind)k->kind;
  switch (k->kind) {
  case PP_VAL_INT:
    out->i = (int64_t)raw;
    break;
  case PP_VAL_NUM:
    memcpy(&out->d, &raw, 8);
    break;
  case PP_VAL_STR:
    out->s = pp_cols_str(c, (uint32_t)raw, &out->len);
    break;
  default:
    out->kind = PP_VAL_NONE;
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
    pp_value v;
    pp_cols_get(c, col, row, &v);
    size_t n = 0;
    if (v.kind == PP_VAL_INT)
      n = int_text(k, (uint64_t)v.i, 8, tmp, sizeof tmp);
    else if (v.kind == PP_VAL_NUM)
      n = num_text(v.d, tmp, sizeof tmp);
    if (v.kind == PP_VAL_STR)
      at = put(buf, cap, at, v.s, v.len);
    else
      at = put(buf, cap, at, tmp, n);
  }
  if (cap)
    buf[at < cap ? at : cap - 1] = 0;
  return at;
}

/* The text of one value as its line prints it (no NUL counted; cut to
 * cap - 1 bytes); returns the full length. */
size_t pp_cols_value_text(const pp_cols *c, size_t col, size_t row, char *buf,
                          size_t cap) {
  pp_value v;
  pp_cols_get(c, col, row, &v);
  char tmp[48];
  size_t n = 0;
  const char *s = tmp;
  if (v.kind == PP_VAL_INT)
    n = int_text(&c->col[col], (uint64_t)v.i, 8, tmp, sizeof tmp);
  else if (v.kind == PP_VAL_NUM)
    n = num_text(v.d, tmp, sizeof tmp);
  else if (v.kind == PP_VAL_STR)
    s = v.s, n = v.len;
  if (cap) {
    size_t k = n < cap ? n : cap - 1;
    memcpy(buf, s, k);
    buf[k] = 0;
  }
  return n;
}
