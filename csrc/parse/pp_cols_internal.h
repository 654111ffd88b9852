/* pp_cols_internal.h: the column store's layout, shared by cols.c (the
 * store and its queries) and parse.c (which fills it); not installed.
 *
 * Records are stored column by column in chunks of PP_CH rows. Each chunk
 * keeps its own width (1, 2, 4 or 8 bytes a value), widened on demand, so a
 * phase that never exceeds 65535 ns costs 2 bytes a record. Presence: a
 * chunk without a bitmap holds values exactly for its first `npresent`
 * rows (the common case: every record has the field); the bitmap appears
 * only when a record lacks a field that a later record has.
 *
 * A value's kind is its own (pp_cell says which): integer cells of a number
 * column are marked in the chunk's `ibits`, and where a column holds both
 * negative integers and u64 values above INT64_MAX (which share their bit
 * patterns at width 8), `sbits` marks the negative ones. A double whose text
 * is not its shortest spelling keeps that text in its column's `alt` list
 * (row, string id), so that the value prints as it was written. */
#ifndef PP_COLS_INTERNAL_H
#define PP_COLS_INTERNAL_H

#include "pp_parse.h"

#include <string.h>

#define PP_CH_SHIFT 16
#define PP_CH (1u << PP_CH_SHIFT)
#define PP_CH_MASK (PP_CH - 1)

typedef struct {
  void *data;      /* cap entries of `width` bytes                     */
  uint64_t *bits;  /* cap presence bits, or NULL (prefix semantics)    */
  uint64_t *ibits; /* a mixed number column: 1 = an integer cell       */
  uint64_t *sbits; /* negative and big integers: 1 = a negative cell  */
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
  uint8_t big;      /* a u64 above INT64_MAX was stored               */
  uint8_t mixed;    /* PP_VAL_NUM holding integers too (ibits)        */
  uint64_t stamp;   /* parser: the last line that named this column   */
  uint32_t tokpos;  /* parser: its token index in that line           */
  size_t nchunks;
  pp_chunk *chunks;
  uint32_t *alt;    /* (row, string id) pairs, rows increasing        */
  size_t nalt, alt_cap;
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
/* A double with the text it was written as (kept when it is not the
 * double's shortest spelling; text may be NULL). */
int pp_cols_set_num_text(pp_cols *c, size_t col, size_t row, double v,
                         const char *text, size_t len);
/* A string value: interned text. */
int pp_cols_set_str(pp_cols *c, size_t col, size_t row, const char *s,
                    size_t len);
/* A string value already interned in this store. */
int pp_cols_set_strid(pp_cols *c, size_t col, size_t row, uint32_t id);

/* The text a double of `col` in `row` was written as, when it is not its
 * shortest spelling (a string of the store), else NULL. */
const char *pp_cols_alt_text(const pp_cols *c, size_t col, size_t row,
                             size_t *len);
/* The shortest text of a double that reads back as it, with ".0" after
 * one that would read as an integer ("3.0", "-0.0"); returns its length. */
size_t pp_float_text(double d, char *buf, size_t cap);

/* ---- what a value's text stands for ------------------------------------- */
/* The one rule (record lines, pp.parse.list's texts, CSV cells, JSON
 * numbers): see pp_parse.h. Sets out's v (and neg; text and tlen to the
 * text, for a double) and returns its kind. With numeric, the text must be
 * a number (a JSON number): "-0" is then 0, and PP_VAL_NONE says it is none
 * (an integer past 64 bits included: no number holds it exactly). */
struct pp_cols_field;
pp_val_kind pp_cols_value_of_text(const char *s, size_t n, int numeric,
                                  struct pp_cols_field *out);

/* ---- records appended from values (cols_build.c) ------------------------ */
typedef struct pp_cols_field {
  const char *name;
  size_t nlen;
  pp_value v; /* PP_VAL_INT (i: the bits), PP_VAL_NUM or PP_VAL_STR */
  int neg;    /* PP_VAL_INT: i is a negative integer (else unsigned)   */
  const char *text; /* PP_VAL_NUM: the text it was written as, or NULL */
  size_t tlen;
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

/* PP_FOR_ROWS(c, sel, nsel, r, { body }): r runs over the selected rows
 * (sel: a sorted array of nsel row indices; NULL: all c->n rows). */
#define PP_FOR_ROWS(c, sel, nsel, r, ...)                                      \
  do {                                                                         \
    size_t n_ = (sel) ? (nsel) : (c)->n;                                       \
    for (size_t i_ = 0; i_ < n_; i_++) {                                       \
      size_t r = (sel) ? (sel)[i_] : i_;                                       \
      __VA_ARGS__                                                              \
    }                                                                          \
  } while (0)

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

static inline int pp_bit(const uint64_t *b, uint32_t off) {
  return b && ((b[off >> 6] >> (off & 63)) & 1);
}

/* The one reading of a stored value (present, located in chunk h): its
 * kind, and for an integer its bits and whether they are a u64 above
 * INT64_MAX; a string's id is left in out->i. */
static inline void pp_cell(const pp_column *k, const pp_chunk *h, uint32_t off,
                           pp_value *out) {
  uint64_t raw = pp_chunk_raw(h, off);
  out->u64 = 0;
  if (k->kind == PP_VAL_STR) {
    out->kind = PP_VAL_STR;
    out->i = (int64_t)raw;
    return;
  }
  if (k->kind == PP_VAL_NUM && !(k->mixed && pp_bit(h->ibits, off))) {
    out->kind = PP_VAL_NUM;
    memcpy(&out->d, &raw, 8);
    return;
  }
  out->kind = PP_VAL_INT;
  out->i = (int64_t)raw;
  /* a top bit set (width 8 only) is negative unless the column holds
   * big values and, holding both, sbits says it is not */
  out->u64 = (int64_t)raw < 0 &&
             !(k->negative && (!k->big || pp_bit(h->sbits, off)));
}

static inline double pp_value_double(const pp_value *v) {
  if (v->kind == PP_VAL_NUM)
    return v->d;
  return v->u64 ? (double)(uint64_t)v->i : (double)v->i;
}

/* A numeric value as a double, for a chunk already located; 0 when absent
 * or a string. */
static inline int pp_chunk_double(const pp_column *k, const pp_chunk *h,
                                  uint32_t off, double *out) {
  if (!pp_chunk_has(h, off) || k->kind == PP_VAL_STR)
    return 0;
  if (k->kind == PP_VAL_INT && !k->negative) { /* the common case */
    *out = (double)pp_chunk_raw(h, off);
    return 1;
  }
  pp_value v;
  pp_cell(k, h, off, &v);
  *out = pp_value_double(&v);
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
    if (v > (uint64_t)INT64_MAX && !k->big)
      return 0; /* the first big value: the general path marks the column */
    ((uint64_t *)h->data)[off] = v;
    break;
  default:
    return 0;
  }
  h->npresent++;
  return 1;
}

#endif
