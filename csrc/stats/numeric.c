/*
 * numeric.c: summaries (count, min, median, mean, p90, p99, max, sum) and
 * line fits (least squares beside Theil-Sen) over arrays of doubles: the
 * one statistics implementation (pp_stats.h). Its callers: the column
 * store's queries (cols.c) and the Lua binding pp.numeric (lua_stats.c),
 * through which the Lua analysis and reports take theirs.
 *
 * Quantiles are type 7 (linear between the closest ranks: the median of an
 * even count is the mean of the middle two), found by selection rather
 * than a full sort. Between two ranks the value is the line through them
 * (lerp), infinities included: from an infinity to a finite value every
 * point strictly between is that infinity, between equal values it is that
 * value, and from -inf to +inf no value is more right than another: NaN.
 * Means are the sum over the count, the sum taken scaled where the values
 * are finite but their sum is not.
 */
#include "pp_internal.h"
#include "pp_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

/* The steps of a selection, made for doubles (dbl_*) and for unsigned keys
 * (u64_*) alike. PARTITION: Hoare partitioning of a[lo..hi] (inclusive)
 * around the median of a[lo], a[mid] and a[hi], equal keys split evenly;
 * returns j, with a[lo..j] <= pivot <= a[j+1..hi]. INSERTION: insertion
 * sort of a[lo..end). */
#define SELECT_STEPS(T, SWAP, PARTITION, INSERTION)                            \
  static void SWAP(T *a, size_t i, size_t j) {                                 \
    T t = a[i];                                                                \
    a[i] = a[j];                                                               \
    a[j] = t;                                                                  \
  }                                                                            \
  static size_t PARTITION(T *a, size_t lo, size_t mid, size_t hi) {            \
    if (a[mid] < a[lo]) SWAP(a, mid, lo);                                      \
    if (a[hi] < a[lo]) SWAP(a, hi, lo);                                        \
    if (a[hi] < a[mid]) SWAP(a, hi, mid);                                      \
    T pivot = a[mid];                                                          \
    size_t i = lo, j = hi;                                                     \
    for (;;) {                                                                 \
      while (a[i] < pivot)                                                     \
        i++;                                                                   \
      while (a[j] > pivot)                                                     \
        j--;                                                                   \
      if (i >= j)                                                              \
        return j;                                                              \
      SWAP(a, i, j);                                                           \
      i++;                                                                     \
      j--;                                                                     \
    }                                                                          \
  }                                                                            \
  static void INSERTION(T *a, size_t lo, size_t end) {                         \
    for (size_t i = lo + 1; i < end; i++) {                                    \
      T v = a[i];                                                              \
      size_t j = i;                                                            \
      while (j > lo && a[j - 1] > v) {                                         \
        a[j] = a[j - 1];                                                       \
        j--;                                                                   \
      }                                                                        \
      a[j] = v;                                                                \
    }                                                                          \
  }
SELECT_STEPS(double, dbl_swap, dbl_partition, dbl_insertion)
SELECT_STEPS(uint64_t, u64_swap, u64_partition, u64_insertion)
#undef SELECT_STEPS

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
    size_t j = dbl_partition(a, lo, lo + (hi - lo) / 2, hi);
    /* a[lo..j] <= pivot <= a[j+1..hi] */
    if (k <= j)
      hi = j;
    else
      lo = j + 1;
  }
  dbl_insertion(a, lo, hi + 1);
}

/* The point at t in (0, 1) of the way from a to b (a <= b), as the line
 * through them has it: a + t (b - a) where that is a number; an infinite
 * endpoint makes every point strictly between it that infinity (the line
 * from -inf to 1 stays at -inf until 1); equal endpoints, an infinity
 * included, give that value; -inf to +inf has no point more right than
 * another, NaN. Finite endpoints whose difference overflows take the
 * weighted sum instead, which cannot. */
static double lerp(double a, double b, double t) {
  if (t <= 0 || a == b)
    return a;
  if (isinf(a) || isinf(b))
    return isinf(a) && isinf(b) ? NAN : isinf(a) ? a : b;
  double d = b - a;
  if (isinf(d))
    return (1 - t) * a + t * b;
  return a + t * d;
}

/* The mean of a[0..n), n > 0, whose plain sum is `sum`. */
static double mean_of(const double *a, size_t n, double sum) {
  if (isfinite(sum) || isnan(sum))
    return sum / (double)n;
  /* infinite: from an infinite value (then it is the mean), or from
   * finite values past the largest double, whose mean is a number */
  for (size_t i = 0; i < n; i++)
    if (isinf(a[i]))
      return sum / (double)n;
  double m = 0;
  for (size_t i = 0; i < n; i++)
    m += a[i] / (double)n;
  return m;
}

PP_EXPORT double pp_quantile_sorted(const double *sorted, size_t n, double p) {
  if (n == 0)
    return NAN;
  double h = (double)(n - 1) * p;
  size_t lo = (size_t)floor(h);
  if (lo + 1 >= n)
    return sorted[n - 1];
  return lerp(sorted[lo], sorted[lo + 1], h - (double)lo);
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
    v = lerp(v, next, h - (double)lo);
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
  out->mean = mean_of(a, n, out->sum);
  size_t at = 0;
  out->median = quantile_sel(a, n, 0.5, &at);
  out->p90 = quantile_sel(a, n, 0.9, &at);
  out->p99 = quantile_sel(a, n, 0.99, &at);
}

/* ---- exact summaries of integers ------------------------------------------ */
/* As select_k, on unsigned keys. */
static void select_u64(uint64_t *a, size_t n, size_t k) {
  while (n > 16) {
    size_t j = u64_partition(a, 0, n / 2, n - 1);
    if (k <= j) {
      n = j + 1;
    } else {
      a += j + 1;
      k -= j + 1;
      n -= j + 1;
    }
  }
  u64_insertion(a, 0, n);
}

/* Integers held as order keys: a negative one as its bits with the top bit
 * flipped (so they sort below every other), a u64 as itself in its own
 * array; together they span -2^63 .. 2^64-1, held in __int128. */
typedef struct {
  uint64_t *neg, *pos; /* neg: keys of the negatives */
  size_t nneg, npos;
} int_set;

static __int128 key_value(const int_set *s, size_t k) {
  if (k < s->nneg)
    return (__int128)(int64_t)(s->neg[k] ^ ((uint64_t)1 << 63));
  return (__int128)s->pos[k - s->nneg];
}

/* The k-th smallest value (k < nneg + npos), selection on its array (the
 * values below k in that array end up before it). */
static __int128 select_int(int_set *s, size_t k) {
  if (k < s->nneg) {
    select_u64(s->neg, s->nneg, k);
    return key_value(s, k);
  }
  select_u64(s->pos, s->npos, k - s->nneg);
  return key_value(s, k);
}

/* The smallest value at rank k or above, with everything below rank k
 * already before it (after select_int(s, k - 1)). */
static __int128 next_int(const int_set *s, size_t k) {
  __int128 best = key_value(s, k);
  if (k < s->nneg) {
    for (size_t i = k; i < s->nneg; i++) {
      __int128 v = (__int128)(int64_t)(s->neg[i] ^ ((uint64_t)1 << 63));
      if (v < best)
        best = v;
    }
    return best; /* the negatives all lie below the others */
  }
  for (size_t i = k - s->nneg; i < s->npos; i++)
    if ((__int128)s->pos[i] < best)
      best = s->pos[i];
  return best;
}

static void text_i128(__int128 v, char *buf, size_t cap) {
  char tmp[48];
  size_t n = 0;
  unsigned __int128 u = v < 0 ? (unsigned __int128)(-(v + 1)) + 1
                              : (unsigned __int128)v;
  do {
    tmp[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  if (v < 0)
    tmp[n++] = '-';
  size_t k = 0;
  while (n && k + 1 < cap)
    buf[k++] = tmp[--n];
  buf[k] = 0;
}

/* lo + (num / den) * (hi - lo), rounded to the nearest integer (halves up),
 * exactly: hi - lo < 2^65, num < den <= 100. */
static __int128 lerp_round(__int128 lo, __int128 hi, unsigned num,
                           unsigned den) {
  unsigned __int128 d = (unsigned __int128)(hi - lo);
  unsigned __int128 p = d * num;
  return lo + (__int128)((p + den / 2) / den);
}

/* Type-7 quantile num/den of the set: its double and, in text, its exact
 * value rounded. The rank (n - 1) * num / den is taken exactly, as the
 * fraction it is (the double is computed as quantile_sel computes it). */
static double quantile_int(int_set *s, size_t n, unsigned num, unsigned den,
                           char *text, size_t cap) {
  double h = (double)(n - 1) * ((double)num / den);
  size_t dlo = (size_t)floor(h);
  if (dlo >= n - 1)
    dlo = n - 1;
  unsigned __int128 rank = (unsigned __int128)(n - 1) * num;
  size_t lo = (size_t)(rank / den);
  unsigned rem = (unsigned)(rank % den);
  __int128 v = select_int(s, lo);
  __int128 exact = v;
  if (lo + 1 < n && rem)
    exact = lerp_round(v, next_int(s, lo + 1), rem, den);
  text_i128(exact, text, cap);
  /* the double, as quantile_sel gives it */
  __int128 dv0 = dlo == lo ? v : select_int(s, dlo);
  double dv = (double)dv0;
  if (dlo + 1 < n && h > (double)dlo)
    dv += (h - (double)dlo) * ((double)next_int(s, dlo + 1) - dv);
  return dv;
}

PP_EXPORT void pp_summarize_int(int64_t *neg, size_t nneg, uint64_t *pos,
                                size_t npos, pp_summary *out) {
  memset(out, 0, sizeof *out);
  size_t n = nneg + npos;
  out->count = n;
  if (n == 0) {
    out->min = out->max = out->mean = out->median = out->p90 = out->p99 = NAN;
    return;
  }
  int_set s = {(uint64_t *)(void *)neg, pos, nneg, npos};
  __int128 sum = 0, mn = 0, mx = 0;
  for (size_t i = 0; i < nneg; i++) {
    sum += neg[i];
    if (i == 0 || neg[i] < mn) mn = neg[i];
    if (i == 0 || neg[i] > mx) mx = neg[i];
    s.neg[i] = (uint64_t)neg[i] ^ ((uint64_t)1 << 63); /* its order key */
  }
  for (size_t i = 0; i < npos; i++) {
    sum += pos[i];
    if ((nneg == 0 && i == 0) || (__int128)pos[i] < mn) mn = pos[i];
    if ((nneg == 0 && i == 0) || (__int128)pos[i] > mx) mx = pos[i];
  }
  out->exact = 1;
  out->min = (double)mn;
  out->max = (double)mx;
  out->imin = (int64_t)(uint64_t)mn;
  out->imax = (int64_t)(uint64_t)mx;
  out->imin_u64 = mn > INT64_MAX;
  out->imax_u64 = mx > INT64_MAX;
  out->sum = (double)sum;
  out->isum_fits = sum >= INT64_MIN && sum <= INT64_MAX;
  out->isum = out->isum_fits ? (int64_t)sum : 0;
  out->mean = (double)sum / (double)n;
  /* the mean rounded, halves up: floor((2 sum + n) / 2n) */
  __int128 num = 2 * sum + (__int128)n, den = 2 * (__int128)n;
  __int128 q = num / den;
  if (num % den != 0 && num < 0)
    q -= 1;
  text_i128(mn, out->text.min, sizeof out->text.min);
  text_i128(mx, out->text.max, sizeof out->text.max);
  text_i128(sum, out->text.sum, sizeof out->text.sum);
  text_i128(q, out->text.mean, sizeof out->text.mean);
  out->median =
      quantile_int(&s, n, 1, 2, out->text.median, sizeof out->text.median);
  out->p90 = quantile_int(&s, n, 9, 10, out->text.p90, sizeof out->text.p90);
  out->p99 = quantile_int(&s, n, 99, 100, out->text.p99, sizeof out->text.p99);
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
  s->mean = mean_of(x, n, sum);
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
  s->mean = mean_of(y, n, sum);
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
  /* An infinite coordinate leaves the sums of squares without a number:
   * least squares and both r2 are then unknown, never a perfect 1. */
  int sums_known = isfinite(sxx) && isfinite(syy) && isfinite(sxy);
  if (!sums_known)
    out->ls_slope = out->ls_intercept = NAN;
  out->ls_r2 = !sums_known ? NAN : syy > 0 ? (sxy * sxy) / (sxx * syy) : 1.0;
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
  out->ts_r2 = !sums_known ? NAN
               : syy > 0   ? 1.0 - ssr / syy
                           : (ssr > 0 ? 0.0 : 1.0);
  return 0;
}

PP_EXPORT size_t pp_fit_points(const double *x, const double *y, size_t n,
                               double *ox, double *oy) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (x[i] == x[i] && y[i] == y[i]) {
      ox[m] = x[i];
      oy[m] = y[i];
      m++;
    }
  return m;
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
    n = pp_fit_points(x, y, n, cx, cy);
    x = cx;
    y = cy;
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
