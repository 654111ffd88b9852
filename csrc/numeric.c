/*
 * numeric.c: summaries (count, min, median, mean, p90, p99, max, sum) and
 * line fits (least squares beside Theil-Sen) over arrays of doubles.
 *
 * Quantiles are type 7 (linear between the closest ranks: the median of an
 * even count is the mean of the middle two), found by selection rather
 * than a full sort.
 */
#include "pp_parse.h"

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
 * larger ones after. Median-of-three quickselect; falls back to a sort
 * when partitions keep coming out lopsided. */
static void select_k(double *a, size_t n, size_t k) {
  size_t lo = 0, hi = n; /* [lo, hi) holds position k */
  int budget = 64;
  while (hi - lo > 16) {
    if (budget-- == 0) {
      qsort(a + lo, hi - lo, sizeof *a, cmp_double);
      return;
    }
    size_t mid = lo + (hi - lo) / 2;
    if (a[mid] < a[lo]) swap(a, mid, lo);
    if (a[hi - 1] < a[lo]) swap(a, hi - 1, lo);
    if (a[hi - 1] < a[mid]) swap(a, hi - 1, mid);
    double pivot = a[mid];
    /* three-way partition: < pivot | == pivot | > pivot */
    size_t lt = lo, i = lo, gt = hi;
    while (i < gt) {
      if (a[i] < pivot)
        swap(a, lt++, i++);
      else if (a[i] > pivot)
        swap(a, i, --gt);
      else
        i++;
    }
    if (k < lt)
      hi = lt;
    else if (k >= gt)
      lo = gt;
    else
      return;
  }
  /* insertion sort of the small remainder */
  for (size_t i = lo + 1; i < hi; i++) {
    double v = a[i];
    size_t j = i;
    while (j > lo && a[j - 1] > v) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = v;
  }
}

double pp_quantile_sorted(const double *sorted, size_t n, double p) {
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

void pp_summarize(double *a, size_t n, pp_summary *out) {
  memset(out, 0, sizeof *out);
  out->count = n;
  if (n == 0) {
    out->min = out->max = out->mean = out->median = out->p90 = out->p99 = NAN;
    return;
  }
  double mn = a[0], mx = a[0], sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (a[i] < mn) mn = a[i];
    if (a[i] > mx) mx = a[i];
    sum += a[i];
  }
  out->min = mn;
  out->max = mx;
  out->sum = sum;
  out->mean = sum / (double)n;
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
 * the value bits, skipping runs of equal values. */
static size_t count_distinct(const double *x, size_t n) {
  enum { LIMIT = 1000, SIZE = 4096 };
  uint64_t keys[SIZE];
  unsigned char used[SIZE];
  memset(used, 0, sizeof used);
  size_t nd = 0;
  for (size_t i = 0; i < n && nd < LIMIT; i++) {
    if (i && x[i] == x[i - 1])
      continue;
    double v = x[i] == 0 ? 0 : x[i];
    uint64_t k;
    memcpy(&k, &v, 8);
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

static void least_squares(const double *x, const double *y, size_t n,
                          pp_fit *f, double *syy_out) {
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; i++) {
    mx += x[i];
    my += y[i];
  }
  mx /= (double)n;
  my /= (double)n;
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < n; i++) {
    double dx = x[i] - mx, dy = y[i] - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  f->ls_slope = sxx > 0 ? sxy / sxx : 0;
  f->ls_intercept = my - f->ls_slope * mx;
  f->ls_r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 1.0;
  *syy_out = syy;
}

/* Median of pairwise slopes over pairs with distinct x: all pairs while
 * there are few enough, else a fixed-seed sample. */
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
    uint64_t seed = 0x5eed5eedull ^ n;
    /* Pairs with equal x are skipped; stop after 20 tries a slot, so a
     * data set with one dominant x value ends with fewer slopes. */
    for (uint64_t tries = 0; m < cap && tries < 20ull * cap; tries++) {
      size_t i = (size_t)(splitmix(&seed) % n), j = (size_t)(splitmix(&seed) % n);
      if (x[i] != x[j])
        s[m++] = (y[j] - y[i]) / (x[j] - x[i]);
    }
  }
  f->ts_pairs = m;
  f->ts_sampled = sampled;
  f->ts_slope = m ? median(s, m) : 0;
  free(s);
  return 0;
}

/* Intercept, R^2 of the Theil-Sen line, and the MAD-based quality, over all
 * points or an evenly strided subsample of PP_TS_SAMPLE_POINTS. */
static int theil_sen_rest(const double *x, const double *y, size_t n,
                          double syy, pp_fit *f) {
  size_t step = n > PP_TS_SAMPLE_POINTS ? n / PP_TS_SAMPLE_POINTS : 1;
  size_t m = (n + step - 1) / step;
  double *r = malloc(m * sizeof *r), *d = malloc(m * sizeof *d);
  if (!r || !d) {
    free(r);
    free(d);
    return -1;
  }
  for (size_t i = 0, k = 0; k < m; i += step, k++) {
    r[k] = y[i] - f->ts_slope * x[i];
    d[k] = y[i];
  }
  f->ts_intercept = median(r, m);
  f->ymedian = median(d, m);
  /* MAD(y) and MAD(residuals) */
  for (size_t i = 0, k = 0; k < m; i += step, k++) {
    d[k] = fabs(y[i] - f->ymedian);
    r[k] = fabs(y[i] - (f->ts_intercept + f->ts_slope * x[i]));
  }
  double mad_y = median(d, m), mad_r = median(r, m);
  free(r);
  free(d);
  if (mad_y > 0)
    f->ts_quality = 1.0 - mad_r / mad_y;
  else
    f->ts_quality = mad_r > 0 ? 0.0 : 1.0;
  if (f->ts_quality < 0)
    f->ts_quality = 0;
  double ssr = 0;
  for (size_t i = 0; i < n; i++) {
    double e = y[i] - (f->ts_intercept + f->ts_slope * x[i]);
    ssr += e * e;
  }
  f->ts_r2 = syy > 0 ? 1.0 - ssr / syy : (ssr > 0 ? 0.0 : 1.0);
  return 0;
}

int pp_fit_line(const double *x, const double *y, size_t n, pp_fit *out) {
  memset(out, 0, sizeof *out);
  out->n = n;
  if (n == 0)
    return 0;
  out->xmin = out->xmax = x[0];
  for (size_t i = 1; i < n; i++) {
    if (x[i] < out->xmin) out->xmin = x[i];
    if (x[i] > out->xmax) out->xmax = x[i];
  }
  out->distinct_x = count_distinct(x, n);
  double syy;
  least_squares(x, y, n, out, &syy);
  if (out->distinct_x < 2) {
    /* no slope can be told; the level is still reported */
    double *d = malloc(n * sizeof *d);
    if (!d)
      return -1;
    memcpy(d, y, n * sizeof *d);
    out->ymedian = median(d, n);
    free(d);
    out->ls_slope = out->ts_slope = 0;
    out->ts_intercept = out->ymedian;
    out->ls_r2 = out->ts_r2 = 0;
    return 0;
  }
  out->ok = 1;
  if (theil_sen_slope(x, y, n, out) != 0 ||
      theil_sen_rest(x, y, n, syy, out) != 0)
    return -1;
  return 0;
}
