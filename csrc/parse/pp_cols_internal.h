/* pp_cols_internal.h: the column store's layout, shared by cols.c (the
 * store and its queries) and parse.c (which fills it); not installed.
 *
 * Records are stored column by column in chunks of PP_CH rows. Each chunk
 * keeps its own width (1, 2, 4 or 8 bytes a value), widened on demand, so a
 * phase that never exceeds 65535 ns costs 2 bytes a record. Presence: a
 * chunk without a bitmap holds values exactly for its first `npresent`
 * rows (the common case: every record has the field); the bitmap appears
 * only when a record lacks a field that a later record has. */
#ifndef PP_COLS_INTERNAL_H
#define PP_COLS_INTERNAL_H

#include "pp_parse.h"

#include <string.h>

#define PP_CH_SHIFT 16
#define PP_CH (1u << PP_CH_SHIFT)
#define PP_CH_MASK (PP_CH - 1)

typedef struct {
  void *data;     /* cap entries of `width` bytes                     */
  uint64_t *bits; /* cap presence bits, or NULL (prefix semantics)    */
  uint32_t cap;
  uint32_t npresent;
  uint8_t width; /* 0 while data is NULL                              */
} pp_chunk;

typedef struct {
  char *name;
  uint32_t len;
  uint8_t kind;     /* pp_val_kind; PP_VAL_NONE until the first value */
  uint8_t strict;   /* must hold unsigned integers (parser)           */
  uint8_t hidden;   /* @file, @line, @layout                          */
  uint8_t negative; /* a negative integer was stored                  */
  uint64_t stamp;   /* parser: the last line that named this column   */
  uint32_t tokpos;  /* parser: its token index in that line           */
  size_t nchunks;
  pp_chunk *chunks;
} pp_column;

typedef struct {
  uint32_t prefix; /* string id */
  uint32_t n;
  uint32_t *cols;
  uint64_t hash;
} pp_layout_t;

struct pp_cols {
  size_t n; /* records */
  pp_column *col;
  size_t ncol, col_alloc;
  uint32_t *name_ht; /* column index + 1; 0 empty */
  size_t name_ht_size;
  uint32_t *vis; /* visible columns in order of appearance */
  size_t nvis;
  /* interned strings: NUL-terminated in the arena */
  char *arena;
  size_t arena_len, arena_cap;
  uint64_t *str_off; /* offset << 32 | len, len < 4 GiB */
  size_t nstr, str_alloc;
  uint32_t *str_ht; /* id + 1; 0 empty */
  size_t str_ht_size;
  pp_layout_t *lay;
  size_t nlay, lay_alloc;
  uint32_t *lay_ht;
  size_t lay_ht_size;
  int c_file, c_line, c_layout;
  size_t bytes;
};

/* Allocation helpers that keep c->bytes. */
void *pp_cols_alloc(pp_cols *c, size_t n);
void *pp_cols_calloc(pp_cols *c, size_t n);
void *pp_cols_realloc(pp_cols *c, void *p, size_t old, size_t n);
void pp_cols_dealloc(pp_cols *c, void *p, size_t n);

pp_cols *pp_cols_new(void);
/* Column by name (hash lookup); -1 if none. */
int pp_cols_lookup(const pp_cols *c, const char *name, size_t len);
/* Adds a column; -1 out of memory. */
int pp_cols_add_column(pp_cols *c, const char *name, size_t len, int hidden,
                       int strict);
/* Interns a string; returns its id, or UINT32_MAX out of memory. */
uint32_t pp_cols_intern(pp_cols *c, const char *s, size_t len);
static inline const char *pp_cols_str(const pp_cols *c, uint32_t id,
                                      size_t *len) {
  uint64_t o = c->str_off[id];
  if (len)
    *len = (size_t)(o & 0xffffffffu);
  return c->arena + (o >> 32);
}
/* Interns a layout (prefix id + column sequence); UINT32_MAX on OOM. */
uint32_t pp_cols_layout_intern(pp_cols *c, uint32_t prefix,
                               const uint32_t *cols, size_t n);

/* Appending values: rows of one column must come in increasing order.
 * Return 0, or -1 out of memory. */
int pp_cols_set_int(pp_cols *c, size_t col, size_t row, uint64_t v, int neg);
int pp_cols_set_num(pp_cols *c, size_t col, size_t row, double v);
/* A string value: interned text. */
int pp_cols_set_str(pp_cols *c, size_t col, size_t row, const char *s,
                    size_t len);
/* A string value already interned in this store. */
int pp_cols_set_strid(pp_cols *c, size_t col, size_t row, uint32_t id);

/* The text of `col` in record `row` as the record's line prints it (exact
 * for every kind); returns its length (0 when absent), writing at most
 * cap-1 bytes and a NUL. */
size_t pp_cols_value_text(const pp_cols *c, size_t col, size_t row, char *buf,
                          size_t cap);

/* ---- records appended from values (cols_build.c) ------------------------ */
typedef struct {
  const char *name;
  size_t nlen;
  pp_value v; /* PP_VAL_INT (i: the bits), PP_VAL_NUM or PP_VAL_STR */
  int neg;    /* PP_VAL_INT: i is a negative integer (else unsigned)   */
} pp_cols_field;

/* Appends one record: its prefix and fields in line order, with @file =
 * source and @line = line. line_mode: string values must be what a line
 * can hold. Returns 0; -1 when the record is refused (nothing added, the
 * reason in err); -2 out of memory (the store is then unusable: free it). */
int pp_cols_append(pp_cols *c, const char *prefix, size_t plen,
                   const pp_cols_field *f, size_t n, const char *source,
                   uint64_t line, int line_mode, char *err, size_t errlen);
/* Names whose values must be unsigned integers (_ns, _cache_hits,
 * _cache_misses, _cache_disk_hits), names no record field may take
 * (_prefix, _fields, _table, _text: the record object answers them), and
 * prefix words ([A-Za-z0-9_.:/-], starting with a letter, < PP_PREFIX_MAX). */
int pp_cols_strict_name(const char *s, size_t n);
int pp_cols_reserved_name(const char *s, size_t n);
int pp_cols_check_prefix(const char *s, size_t n);

/* Fast presence and raw reads. */
static inline const pp_chunk *pp_cols_chunk(const pp_cols *c, size_t col,
                                            size_t row) {
  const pp_column *k = &c->col[col];
  size_t ch = row >> PP_CH_SHIFT;
  return ch < k->nchunks ? &k->chunks[ch] : NULL;
}
static inline int pp_chunk_has(const pp_chunk *h, uint32_t off) {
  if (!h || !h->npresent)
    return 0;
  if (h->bits)
    return off < h->cap && ((h->bits[off >> 6] >> (off & 63)) & 1);
  return off < h->npresent;
}
static inline uint64_t pp_chunk_raw(const pp_chunk *h, uint32_t off) {
  switch (h->width) {
  case 1: return ((const uint8_t *)h->data)[off];
  case 2: return ((const uint16_t *)h->data)[off];
  case 4: return ((const uint32_t *)h->data)[off];
  case 8: return ((const uint64_t *)h->data)[off];
  default: return 0;
  }
}

/* An integer value as a double (wide values of a column with negative
 * ones are signed). */
static inline double pp_int_to_double(const pp_column *k, uint64_t raw,
                                      int width) {
  if (width < 8)
    return (double)raw;
  return k->negative ? (double)(int64_t)raw : (double)raw;
}

/* A numeric value as a double, for a chunk already located; 0 when absent
 * or a string. */
static inline int pp_chunk_double(const pp_column *k, const pp_chunk *h,
                                  uint32_t off, double *out) {
  if (!pp_chunk_has(h, off))
    return 0;
  uint64_t raw = pp_chunk_raw(h, off);
  if (k->kind == PP_VAL_INT)
    *out = pp_int_to_double(k, raw, h->width);
  else if (k->kind == PP_VAL_NUM)
    memcpy(out, &raw, 8);
  else
    return 0;
  return 1;
}

/* A 64-bit mixer (the finaliser of MurmurHash3) for hashing integer keys. */
static inline uint64_t pp_mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/* The common append: an unsigned integer into an integer column whose
 * chunk has room at the current width and no gaps. Returns 1 when done,
 * 0 when the general path (pp_cols_set_int) must take it. */
static inline int pp_cols_fast_int(pp_cols *c, size_t col, size_t row,
                                   uint64_t v) {
  pp_column *k = &c->col[col];
  size_t ch = row >> PP_CH_SHIFT;
  if (k->kind != PP_VAL_INT || ch >= k->nchunks)
    return 0;
  pp_chunk *h = &k->chunks[ch];
  uint32_t off = (uint32_t)(row & PP_CH_MASK);
  if (h->bits || off != h->npresent || off >= h->cap)
    return 0;
  switch (h->width) {
  case 1:
    if (v > 0xff) return 0;
    ((uint8_t *)h->data)[off] = (uint8_t)v;
    break;
  case 2:
    if (v > 0xffff) return 0;
    ((uint16_t *)h->data)[off] = (uint16_t)v;
    break;
  case 4:
    if (v > 0xffffffffu) return 0;
    ((uint32_t *)h->data)[off] = (uint32_t)v;
    break;
  case 8:
    ((uint64_t *)h->data)[off] = v;
    break;
  default:
    return 0;
  }
  h->npresent++;
  return 1;
}

#endif
