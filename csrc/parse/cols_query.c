/*
 * cols_query.c: queries over the column store (cols.c): values gathered as
 * doubles, summaries and line fits (csrc/stats/numeric.c), per-record
 * linear combinations, groups and distinct counts (selections by value,
 * range or condition: cols_compare.c). A selection is a sorted array of row indices (NULL: all rows);
 * every query takes one. The Lua record sets reach these through
 * lua_cols.c.
 */
#include "pp_cols_internal.h"
#include "pp_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The selected rows' values of col as doubles into out: the present ones
 * only, or (with nan) one per row, NaN where absent. Returns how many. */
static inline size_t gather(const pp_cols *c, size_t col, const uint32_t *sel,
                            size_t nsel, double *out, int nan) {
  const pp_column *k = &c->col[col];
  size_t m = 0;
  PP_FOR_ROWS(c, sel, nsel, r, {
    const pp_chunk *h = pp_cols_chunk(c, col, r);
    if (pp_chunk_double(k, h, (uint32_t)(r & PP_CH_MASK), &out[m]))
      m++;
    else if (nan)
      out[m++] = NAN;
  });
  return m;
}

PP_EXPORT size_t pp_cols_gather(const pp_cols *c, size_t col,
                                const uint32_t *sel, size_t nsel,
                                double *out) {
  return gather(c, col, sel, nsel, out, 0);
}

PP_EXPORT void pp_cols_gather_nan(const pp_cols *c, size_t col,
                                  const uint32_t *sel, size_t nsel,
                                  double *out) {
  gather(c, col, sel, nsel, out, 1);
}

PP_EXPORT int pp_cols_summary(const pp_cols *c, size_t col, const uint32_t *sel,
                    size_t nsel, pp_summary *out) {
  size_t n = sel ? nsel : c->n;
  memset(out, 0, sizeof *out);
  const pp_column *k = &c->col[col];
  if (k->kind != PP_VAL_INT && k->kind != PP_VAL_NUM) {
    size_t cnt = 0;
    PP_FOR_ROWS(c, sel, nsel, r, {
      if (pp_chunk_has(pp_cols_chunk(c, col, r), (uint32_t)(r & PP_CH_MASK)))
        cnt++;
    });
    out->count = cnt;
    return 0;
  }
  if (k->kind == PP_VAL_INT) { /* exact: the integers themselves */
    int64_t *neg = malloc((n ? n : 1) * sizeof *neg);
    uint64_t *pos = malloc((n ? n : 1) * sizeof *pos);
    if (!neg || !pos) {
      free(neg);
      free(pos);
      return -1;
    }
    size_t nneg = 0, npos = 0;
    PP_FOR_ROWS(c, sel, nsel, r, {
      const pp_chunk *h = pp_cols_chunk(c, col, r);
      uint32_t off = (uint32_t)(r & PP_CH_MASK);
      if (!pp_chunk_has(h, off))
        continue;
      pp_value v = {0};
      pp_cell(k, h, off, &v);
      if (v.i < 0 && !v.u64)
        neg[nneg++] = v.i;
      else
        pos[npos++] = (uint64_t)v.i;
    });
    pp_summarize_int(neg, nneg, pos, npos, out);
    free(neg);
    free(pos);
    return 0;
  }
  double *a = malloc((n ? n : 1) * sizeof *a);
  if (!a)
    return -1;
  size_t m = pp_cols_gather(c, col, sel, nsel, a);
  pp_summarize(a, m, out);
  free(a);
  return 0;
}

PP_EXPORT size_t pp_cols_lincomb(const pp_cols *c, const size_t *cols,
                       const double *coef, size_t nterms, const uint32_t *sel,
                       size_t nsel, int clamp, double floor, double *out) {
  size_t m = 0;
  PP_FOR_ROWS(c, sel, nsel, r, {
    double acc = 0;
    size_t t = 0;
    for (; t < nterms; t++) {
      double v;
      if (!pp_cols_get_double(c, cols[t], r, &v))
        break;
      acc += coef[t] * v;
    }
    if (t < nterms)
      continue;
    if (clamp && acc < floor)
      acc = floor;
    out[m++] = acc;
  });
  return m;
}

/* ---- grouping ------------------------------------------------------------ */
/* A group key: a tag and 64 bits, so that the values a column may hold
 * never share a key (a negative integer and a u64 share their bits). An
 * integer a double holds exactly groups with that double (3 with 3.0, as
 * Lua's table keys do); -0.0 groups with 0.0. */
enum { KEY_INT, KEY_NEG, KEY_DOUBLE, KEY_STR };

static uint64_t key_of(const pp_cols *c, size_t col, size_t r, int *present,
                       uint8_t *tag) {
  const pp_chunk *h = pp_cols_chunk(c, col, r);
  uint32_t off = (uint32_t)(r & PP_CH_MASK);
  if (!pp_chunk_has(h, off)) {
    *present = 0;
    return 0;
  }
  *present = 1;
  const pp_column *k = &c->col[col];
  if (k->kind == PP_VAL_INT && !k->negative) { /* the common case */
    *tag = KEY_INT;
    return pp_chunk_raw(h, off);
  }
  pp_value v;
  pp_cell(k, h, off, &v);
  uint64_t raw;
  switch (v.kind) {
  case PP_VAL_STR:
    *tag = KEY_STR;
    return (uint64_t)v.i;
  case PP_VAL_INT:
    if (k->kind == PP_VAL_NUM) { /* beside doubles: as one, when exact */
      double d = pp_value_double(&v);
      if (d < 0x1p63 && d >= -0x1p63 && (v.u64 ? 0 : (int64_t)d == v.i)) {
        v.kind = PP_VAL_NUM;
        v.d = d;
        break;
      }
    }
    *tag = v.i < 0 && !v.u64 ? KEY_NEG : KEY_INT;
    return (uint64_t)v.i;
  default:
    break;
  }
  *tag = KEY_DOUBLE;
  if (v.d == 0)
    return 0; /* -0.0 groups with 0.0 */
  memcpy(&raw, &v.d, 8);
  return raw;
}

typedef struct {
  uint64_t *keys;
  uint8_t *tags;
  uint32_t *ids; /* group id + 1; 0 empty */
  size_t size;
} keymap;

static int km_init(keymap *m, size_t size) {
  m->size = size;
  m->keys = malloc(size * sizeof *m->keys);
  m->tags = malloc(size);
  m->ids = calloc(size, sizeof *m->ids);
  return m->keys && m->tags && m->ids ? 0 : -1;
}

static void km_free(keymap *m) {
  free(m->keys);
  free(m->tags);
  free(m->ids);
}

/* Returns the id of key, inserting `next` if new; UINT32_MAX on OOM. */
static uint32_t km_get(keymap *m, uint64_t key, uint8_t tag, uint32_t next,
                       int *added) {
  *added = 0;
  size_t mask = m->size - 1, h = pp_mix64(key ^ tag) & mask;
  for (; m->ids[h]; h = (h + 1) & mask)
    if (m->keys[h] == key && m->tags[h] == tag)
      return m->ids[h] - 1;
  m->keys[h] = key;
  m->tags[h] = tag;
  m->ids[h] = next + 1;
  *added = 1;
  if ((size_t)(next + 1) * 2 > m->size) {
    keymap g;
    if (km_init(&g, m->size * 2) != 0) {
      km_free(&g);
      return UINT32_MAX;
    }
    for (size_t i = 0; i < m->size; i++)
      if (m->ids[i]) {
        size_t j = pp_mix64(m->keys[i] ^ m->tags[i]) & (g.size - 1);
        while (g.ids[j])
          j = (j + 1) & (g.size - 1);
        g.keys[j] = m->keys[i];
        g.tags[j] = m->tags[i];
        g.ids[j] = m->ids[i];
      }
    km_free(m);
    *m = g;
  }
  return next;
}

PP_EXPORT void pp_groups_free(pp_group *g, size_t n) {
  if (!g)
    return;
  for (size_t i = 0; i < n; i++)
    free(g[i].rows);
  free(g);
}

PP_EXPORT int pp_cols_group(const pp_cols *c, size_t col, const uint32_t *sel,
                  size_t nsel, pp_group **groups, size_t *ngroups) {
  size_t n = sel ? nsel : c->n;
  *groups = NULL;
  *ngroups = 0;
  uint32_t *gid = malloc((n ? n : 1) * sizeof *gid);
  size_t cap = 16, ng = 0;
  pp_group *g = calloc(cap, sizeof *g);
  uint32_t missing = UINT32_MAX;
  keymap m;
  int rc = -1;
  if (km_init(&m, 64) != 0 || !gid || !g)
    goto out;
  for (size_t i = 0; i < n; i++) {
    size_t r = sel ? sel[i] : i;
    int present, added;
    uint8_t tag = 0;
    uint64_t key = key_of(c, col, r, &present, &tag);
    uint32_t id;
    if (!present) {
      if (missing == UINT32_MAX) {
        missing = (uint32_t)ng;
        added = 1;
      } else {
        added = 0;
      }
      id = missing;
    } else {
      id = km_get(&m, key, tag, (uint32_t)ng, &added);
      if (id == UINT32_MAX)
        goto out;
    }
    if (added) {
      if (ng == cap) {
        pp_group *ng2 = realloc(g, cap * 2 * sizeof *g);
        if (!ng2)
          goto out;
        memset(ng2 + cap, 0, cap * sizeof *g);
        g = ng2;
        cap *= 2;
      }
      pp_cols_get(c, col, r, &g[ng].key);
      ng++;
    }
    g[id].n++;
    gid[i] = id;
  }
  for (size_t k = 0; k < ng; k++) {
    g[k].rows = malloc(g[k].n * sizeof *g[k].rows);
    if (!g[k].rows)
      goto out;
    g[k].n = 0;
  }
  for (size_t i = 0; i < n; i++)
    g[gid[i]].rows[g[gid[i]].n++] = (uint32_t)(sel ? sel[i] : i);
  *groups = g;
  *ngroups = ng;
  g = NULL;
  rc = 0;
out:
  km_free(&m);
  free(gid);
  pp_groups_free(g, ng);
  return rc;
}

PP_EXPORT size_t pp_cols_distinct(const pp_cols *c, size_t col, const uint32_t *sel,
                        size_t nsel, size_t limit) {
  keymap m;
  size_t nd = 0;
  if (km_init(&m, 64) != 0) {
    km_free(&m);
    return 0;
  }
  int have_prev = 0;
  uint64_t prev = 0;
  uint8_t prev_tag = 0;
  PP_FOR_ROWS(c, sel, nsel, r, {
    if (nd >= limit)
      break;
    int present, added;
    uint8_t tag = 0;
    uint64_t key = key_of(c, col, r, &present, &tag);
    if (!present || (have_prev && key == prev && tag == prev_tag))
      continue;
    have_prev = 1;
    prev = key;
    prev_tag = tag;
    if (km_get(&m, key, tag, (uint32_t)nd, &added) == UINT32_MAX)
      break;
    nd += (size_t)added;
  });
  km_free(&m);
  return nd;
}

PP_EXPORT int pp_cols_fit(const pp_cols *c, size_t xcol, size_t ycol,
                const uint32_t *sel, size_t nsel, pp_fit *out) {
  size_t n = sel ? nsel : c->n;
  double *x = malloc((n ? n : 1) * sizeof *x);
  double *y = malloc((n ? n : 1) * sizeof *y);
  int rc = -1;
  if (x && y) {
    size_t m = 0;
    PP_FOR_ROWS(c, sel, nsel, r, {
      if (pp_cols_get_double(c, xcol, r, &x[m]) &&
          pp_cols_get_double(c, ycol, r, &y[m]))
        m++;
    });
    rc = pp_fit_line(x, y, m, out);
  }
  free(x);
  free(y);
  return rc;
}

PP_EXPORT int pp_cols_fit_many(const pp_cols *c, const size_t *xcols, size_t nx,
                     const size_t *ycols, size_t ny, const uint32_t *sel,
                     size_t nsel, pp_fit *out) {
  size_t n = sel ? nsel : c->n;
  size_t m = n ? n : 1;
  double *xs = malloc(nx * m * sizeof *xs), *ys = malloc(m * sizeof *ys);
  double *px = malloc(m * sizeof *px), *py = malloc(m * sizeof *py);
  unsigned char *xfull = calloc(nx ? nx : 1, 1);
  pp_fit_xstat *xst = calloc(nx ? nx : 1, sizeof *xst);
  int rc = -1;
  if (!xs || !ys || !px || !py || !xfull || !xst)
    goto out;
  /* each quantity once, absent values as NaN */
  for (size_t a = 0; a < nx; a++) {
    double *x = xs + a * m;
    pp_cols_gather_nan(c, xcols[a], sel, nsel, x);
    size_t k = 0;
    while (k < n && x[k] == x[k])
      k++;
    xfull[a] = k == n;
    if (xfull[a])
      pp_fit_xstats(x, n, &xst[a]);
  }
  for (size_t b = 0; b < ny; b++) {
    pp_cols_gather_nan(c, ycols[b], sel, nsel, ys);
    size_t k = 0;
    while (k < n && ys[k] == ys[k])
      k++;
    int yfull = k == n;
    pp_fit_ystat yst;
    if (yfull && pp_fit_ystats(ys, n, &yst) != 0)
      goto out;
    for (size_t a = 0; a < nx; a++) {
      const double *x = xs + a * m;
      pp_fit *f = &out[b * nx + a];
      if (yfull && xfull[a]) {
        rc = pp_fit_line_with(x, ys, n, &xst[a], &yst, f);
      } else {
        size_t q = pp_fit_points(x, ys, n, px, py);
        rc = pp_fit_line(px, py, q, f);
      }
      if (rc != 0)
        goto out;
    }
  }
  rc = 0;
out:
  free(xs);
  free(ys);
  free(px);
  free(py);
  free(xfull);
  free(xst);
  return rc;
}
