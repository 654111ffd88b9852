/*
 * numeric.c: summaries (count, min, median, mean, p90, p99, max, sum) and
 * line fits (least squares beside Theil-Sen) over arrays of doubles: the
 * one statistics implementation (pp_stats.h). Its callers: the column
 * store's queries (cols.c) and the Lua binding pp.numeric (lua_stats.c),
 * through which the Lua analysis and reports take theirs.
 *
 * Quantiles are type 7 (linear between the closest ranks: the median of an
 * even count is the mean of the middle two), found by selection rather
 * than a full sort.
 */
#include "pp_internal.h"
#include "pp_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void swap(double *a, size_t i, size_t j) {
  double t = a[i];
  a[i] = a[j];
  a[j] = t;
}

static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

/* Moves the k-th smallest of a[0..n) to a[k], smaller ones before it and
 * larger ones after. Quickselect with a median-of-three pivot and Hoare
 * partitioning (equal keys split evenly); falls back to a sort when
 * partitions keep coming out lopsided. */
static void select_k(double *a, size_t n, size_t k) {
  if (n < 2)
    return;
  size_t lo = 0, hi = n - 1; /* inclusive */
  int budget = 64;
  while (hi - lo > 16) {
    if (budget-- == 0) {
      qsort(a + lo, hi - lo + 1, sizeof *a, cmp_double);
      return;
    }
    size_t mid = lo + (hi - lo) / 2;
    if (a[mid] < a[lo]) swap(a, mid, lo);
    if (a[hi] < a[lo]) swap(a, hi, lo);
    if (a[hi] < a[mid]) swap(a, hi, mid);
    double pivot = a[mid];
    size_t i = lo, j = hi;
    for (;;) {
      while (a[i] < pivot)
        i++;
      while (a[j] > pivot)
        j--;
      if (i >= j)
        break;
      swap(a, i, j);
      i++;
      j--;
    }
    /* a[lo..j] <= pivot <= a[j+1..hi] */
    if (k <= j)
      hi = j;
    else
      lo = j + 1;
  }
  for (size_t i = lo + 1; i <= hi; i++) {
    double v = a[i];
    size_t j = i;
    while (j > lo && a[j - 1] > v) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = v;
  }
}

PP_EXPORT double pp_quantile_sorted(const double *sorted, size_t n, double p) {
  if (n == 0)
    return NAN;
  double h = (double)(n - 1) * p;
  size_t lo = (size_t)floor(h);
  if (lo + 1 >= n)
    return sorted[n - 1];
  return sorted[lo] + (h - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

/* Type-7 quantile by selection on a[from..n); everything below `from` is
 * already <= everything at or above it. */
static double quantile_sel(double *a, size_t n, double p, size_t *at) {
  double h = (double)(n - 1) * p;
  size_t lo = (size_t)floor(h);
  if (lo >= n - 1)
    lo = n - 1;
  select_k(a + *at, n - *at, lo - *at);
  double v = a[lo];
  if (lo + 1 < n && h > (double)lo) {
    double next = a[lo + 1];
    for (size_t i = lo + 2; i < n; i++)
      if (a[i] < next)
        next = a[i];
    v += (h - (double)lo) * (next - v);
  }
  *at = lo;
  return v;
}

/* The smallest and the largest of a[0..n), n > 0, and their sum (added in
 * order). */
static void extent(const double *a, size_t n, double *mn, double *mx,
                   double *sum) {
  double lo = a[0], hi = a[0], s = 0;
  for (size_t i = 0; i < n; i++) {
    if (a[i] < lo) lo = a[i];
    if (a[i] > hi) hi = a[i];
    s += a[i];
  }
  *mn = lo;
  *mx = hi;
  *sum = s;
}

/* The sum of squared deviations of a[0..n) from mean. */
static double sq_dev(const double *a, size_t n, double mean) {
  double ss = 0;
  for (size_t i = 0; i < n; i++) {
    double d = a[i] - mean;
    ss += d * d;
  }
  return ss;
}

PP_EXPORT void pp_summarize(double *a, size_t n, pp_summary *out) {
  memset(out, 0, sizeof *out);
  /* NaNs out, to the end: no order of the values changes the figures */
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (a[i] == a[i])
      a[m++] = a[i];
  out->nan = n - m;
  n = m;
  out->count = n;
  if (n == 0) {
    out->min = out->max = out->mean = out->median = out->p90 = out->p99 = NAN;
    return;
  }
  extent(a, n, &out->min, &out->max, &out->sum);
  out->mean = out->sum / (double)n;
  size_t at = 0;
  out->median = quantile_sel(a, n, 0.5, &at);
  out->p90 = quantile_sel(a, n, 0.9, &at);
  out->p99 = quantile_sel(a, n, 0.99, &at);
}

/* Median of a[0..n) (reordered); NAN when empty. */
static double median(double *a, size_t n) {
  if (n == 0)
    return NAN;
  size_t at = 0;
  return quantile_sel(a, n, 0.5, &at);
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Distinct x values, counted up to 1000: a small open-addressing set on
 * the value bits, behind a check of the last 8 distinct values seen (so a
 * quantity cycling through a few values costs no hashing). */
static size_t count_distinct(const double *x, size_t n) {
  enum { LIMIT = 1000, SIZE = 4096, RECENT = 8 };
  uint64_t keys[SIZE], recent[RECENT];
  unsigned char used[SIZE];
  memset(used, 0, sizeof used);
  size_t nd = 0, nr = 0, rpos = 0;
  for (size_t i = 0; i < n && nd < LIMIT; i++) {
    double v = x[i] == 0 ? 0 : x[i];
    uint64_t k;
    memcpy(&k, &v, 8);
    size_t r = 0;
    while (r < nr && recent[r] != k)
      r++;
    if (r < nr)
      continue;
    recent[rpos] = k;
    rpos = (rpos + 1) % RECENT;
    if (nr < RECENT)
      nr++;
    size_t h = (size_t)((k * 0x9e3779b97f4a7c15ull) >> 52) & (SIZE - 1);
    while (used[h] && keys[h] != k)
      h = (h + 1) & (SIZE - 1);
    if (!used[h]) {
      used[h] = 1;
      keys[h] = k;
      nd++;
    }
  }
  return nd;
}

/* The k-th point of a subsample that keeps one point in `step` of n: one
 * point drawn (fixed seed) from each run of `step` points, not the first of
 * each run. A log whose records repeat with a period that divides the step
 * (a dispatcher cycling through three program sizes, and a step of 15) is
 * then seen through all of its phases, not through one of them only. */
static size_t sub_index(size_t k, size_t step, size_t n) {
  if (step <= 1)
    return k;
  uint64_t h = (uint64_t)(k + 1) * 0x9e3779b97f4a7c15ull;
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 29;
  size_t i = k * step + (size_t)(h % step);
  return i < n ? i : n - 1;
}

/* Median of pairwise slopes over pairs with distinct x: all pairs while
 * there are few enough, else a fixed-seed sample of pairs drawn from a
 * subsample of the points (sub_index; compact, so the draws stay in
 * cache). */
static int theil_sen_slope(const double *x, const double *y, size_t n,
                           pp_fit *f) {
  uint64_t all = (uint64_t)n * (n - 1) / 2;
  int sampled = all > PP_TS_EXACT_PAIRS;
  size_t cap = sampled ? PP_TS_SAMPLE_PAIRS : (size_t)all;
  double *s = malloc((cap ? cap : 1) * sizeof *s);
  if (!s)
    return -1;
  size_t m = 0;
  if (!sampled) {
    for (size_t i = 0; i < n; i++)
      for (size_t j = i + 1; j < n; j++)
        if (x[i] != x[j])
          s[m++] = (y[j] - y[i]) / (x[j] - x[i]);
  } else {
    size_t step = n > PP_TS_SAMPLE_POINTS ? n / PP_TS_SAMPLE_POINTS : 1;
    size_t k = (n + step - 1) / step;
    double *sx = malloc(k * sizeof *sx), *sy = malloc(k * sizeof *sy);
    if (!sx || !sy) {
      free(sx);
      free(sy);
      free(s);
      return -1;
    }
    for (size_t j = 0; j < k; j++) {
      size_t i = sub_index(j, step, n);
      sx[j] = x[i];
      sy[j] = y[i];
    }
    uint64_t seed = 0x5eed5eedull ^ n;
    /* Pairs with equal x are skipped; stop after 20 tries a slot, so a
     * data set with one dominant x value ends with fewer slopes. */
    for (uint64_t tries = 0; m < cap && tries < 20ull * cap; tries++) {
      uint64_t r = splitmix(&seed);
      size_t i = (size_t)(((r & 0xffffffffu) * k) >> 32);
      size_t j = (size_t)(((r >> 32) * k) >> 32);
      if (sx[i] != sx[j])
        s[m++] = (sy[j] - sy[i]) / (sx[j] - sx[i]);
    }
    free(sx);
    free(sy);
  }
  f->ts_pairs = m;
  f->ts_sampled = sampled;
  f->ts_slope = m ? median(s, m) : 0;
  free(s);
  return 0;
}

/* ---- fits in stages: per-x and per-y statistics, then one pass a pair -- */

/* Points used for intercepts, medians and MADs: all, or an even stride. */
static size_t sub_step(size_t n) {
  return n > PP_TS_SAMPLE_POINTS ? n / PP_TS_SAMPLE_POINTS : 1;
}

PP_EXPORT void pp_fit_xstats(const double *x, size_t n, pp_fit_xstat *s) {
  memset(s, 0, sizeof *s);
  s->n = n;
  if (n == 0)
    return;
  double sum;
  extent(x, n, &s->min, &s->max, &sum);
  s->mean = sum / (double)n;
  s->ss = sq_dev(x, n, s->mean);
  s->distinct = count_distinct(x, n);
}

PP_EXPORT int pp_fit_ystats(const double *y, size_t n, pp_fit_ystat *s) {
  memset(s, 0, sizeof *s);
  s->n = n;
  if (n == 0)
    return 0;
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += y[i];
  s->mean = sum / (double)n;
  s->ss = sq_dev(y, n, s->mean);
  size_t step = sub_step(n), m = (n + step - 1) / step;
  double *d = malloc(m * sizeof *d);
  if (!d)
    return -1;
  for (size_t k = 0; k < m; k++)
    d[k] = y[sub_index(k, step, n)];
  s->median = median(d, m);
  for (size_t k = 0; k < m; k++)
    d[k] = fabs(y[sub_index(k, step, n)] - s->median);
  s->mad = median(d, m);
  free(d);
  return 0;
}

/* Intercept (median of y - b x) and MAD of the residuals, over the
 * subsample. */
static int ts_intercept(const double *x, const double *y, size_t n, double b,
                        double *a, double *mad) {
  size_t step = sub_step(n), m = (n + step - 1) / step;
  double *r = malloc(m * sizeof *r);
  if (!r)
    return -1;
  for (size_t k = 0; k < m; k++) {
    size_t i = sub_index(k, step, n);
    r[k] = y[i] - b * x[i];
  }
  *a = median(r, m);
  for (size_t k = 0; k < m; k++) {
    size_t i = sub_index(k, step, n);
    r[k] = fabs(y[i] - (*a + b * x[i]));
  }
  *mad = median(r, m);
  free(r);
  return 0;
}

PP_EXPORT int pp_fit_line_with(const double *x, const double *y, size_t n,
                     const pp_fit_xstat *xs, const pp_fit_ystat *ys,
                     pp_fit *out) {
  memset(out, 0, sizeof *out);
  out->n = n;
  if (n == 0)
    return 0;
  out->xmin = xs->min;
  out->xmax = xs->max;
  out->distinct_x = xs->distinct;
  out->ymedian = ys->median;
  double sxy = 0;
  for (size_t i = 0; i < n; i++)
    sxy += (x[i] - xs->mean) * (y[i] - ys->mean);
  double sxx = xs->ss, syy = ys->ss;
  out->ls_slope = sxx > 0 ? sxy / sxx : 0;
  out->ls_intercept = ys->mean - out->ls_slope * xs->mean;
  if (out->distinct_x < 2) {
    /* no slope can be told; the level is still reported */
    out->ls_slope = out->ts_slope = 0;
    out->ls_intercept = ys->mean;
    out->ts_intercept = ys->median;
    out->ls_r2 = out->ts_r2 = 0;
    return 0;
  }
  out->ok = 1;
  out->ls_r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 1.0;
  if (theil_sen_slope(x, y, n, out) != 0)
    return -1;
  double b = out->ts_slope, mad_r;
  if (ts_intercept(x, y, n, b, &out->ts_intercept, &mad_r) != 0)
    return -1;
  if (ys->mad > 0)
    out->ts_quality = 1.0 - mad_r / ys->mad;
  else
    out->ts_quality = mad_r > 0 ? 0.0 : 1.0;
  if (out->ts_quality < 0)
    out->ts_quality = 0;
  /* sum of squared residuals from the centred sums:
   * e = (dy - b dx) + c with c = mean(y) - b mean(x) - a */
  double c = ys->mean - b * xs->mean - out->ts_intercept;
  double ssr = syy - 2 * b * sxy + b * b * sxx + (double)n * c * c;
  if (ssr < 0)
    ssr = 0;
  out->ts_r2 = syy > 0 ? 1.0 - ssr / syy : (ssr > 0 ? 0.0 : 1.0);
  return 0;
}

PP_EXPORT int pp_fit_line(const double *x, const double *y, size_t n, pp_fit *out) {
  /* a point with a NaN coordinate is no point: left out (copies made only
   * when there is one), so the fit never depends on where it stands */
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    bad += x[i] != x[i] || y[i] != y[i];
  double *cx = NULL, *cy = NULL;
  if (bad) {
    cx = malloc((n - bad + 1) * sizeof *cx);
    cy = malloc((n - bad + 1) * sizeof *cy);
    if (!cx || !cy) {
      free(cx);
      free(cy);
      return -1;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (x[i] == x[i] && y[i] == y[i]) {
        cx[m] = x[i];
        cy[m] = y[i];
        m++;
      }
    x = cx;
    y = cy;
    n = m;
  }
  pp_fit_xstat xs;
  pp_fit_ystat ys;
  pp_fit_xstats(x, n, &xs);
  int rc = pp_fit_ystats(y, n, &ys) != 0
               ? -1
               : pp_fit_line_with(x, y, n, &xs, &ys, out);
  if (rc == 0)
    out->nan = bad;
  free(cx);
  free(cy);
  return rc;
}
