/*
 * pp_stats.h: summaries and line fits over arrays of doubles, the one
 * statistics implementation of phaseprobe (csrc/stats/numeric.c). Public C
 * API, usable without Lua; the column store's queries (pp_parse.h) and the
 * Lua binding (pp.numeric, csrc/lua/lua_stats.c) use it.
 *
 *     double t[] = {50, 10, 40, 20, 30};
 *     pp_summary s;  pp_summarize(t, 5, &s);       // s.median == 30
 *     double x[] = {1, 2, 3}, y[] = {12, 14, 16};
 *     pp_fit f;      pp_fit_line(x, y, 3, &f);     // f.ts_slope == 2
 */
#ifndef PP_STATS_H
#define PP_STATS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- summaries ----------------------------------------------------------- */
/* Quantiles are type 7 (linear between the closest ranks: the median of an
 * even count is the mean of the middle two). An empty summary has count 0
 * and NaN for the rest. NaN values are no values: they are left out of
 * every figure (count included) and counted in nan, so a summary does not
 * depend on where they stand; infinities are values like any other.
 * Between two ranks a quantile is the point of the line through them: an
 * infinite endpoint gives that infinity, equal endpoints their value, -inf
 * to +inf NaN (so is a mean over both). Finite values whose difference or
 * sum overflows still get a finite quantile and mean. */
typedef struct {
  size_t count;        /* values summarised (NaNs not among them)       */
  size_t nan;          /* NaN values left out                           */
  double min, max, sum, mean, median, p90, p99;
  int exact;           /* integers: imin, imax, isum and text are exact  */
  int64_t imin, imax;  /* with imin_u64 / imax_u64: a u64's bit pattern  */
  int imin_u64, imax_u64;
  int isum_fits;       /* the exact sum fits in int64                    */
  int64_t isum;
  /* With exact: each figure in decimal, the integer it is (min, max, sum)
   * or the nearest one (mean, median, p90, p99; halves rounded up),
   * computed exactly (what --raw prints). */
  struct {
    char min[24], max[24], sum[32], mean[24], median[24], p90[24], p99[24];
  } text;
} pp_summary;

/* Type-7 quantile (linear between closest ranks) of a sorted array. */
double pp_quantile_sorted(const double *sorted, size_t n, double p);
/* Summary (count, min, max, sum, mean, median, p90, p99) of n doubles; a
 * is reordered. */
void pp_summarize(double *a, size_t n, pp_summary *out);
/* The exact summary of integers: neg[0..nneg) the negative ones,
 * pos[0..npos) the others (any u64); both are reordered. */
void pp_summarize_int(int64_t *neg, size_t nneg, uint64_t *pos, size_t npos,
                      pp_summary *out);

/* ---- line fits ----------------------------------------------------------- */
typedef struct {
  size_t n;             /* points used                                    */
  size_t nan;           /* pp_fit_line: points left out, a coordinate NaN */
  size_t distinct_x;    /* distinct x values (counted up to 1000)         */
  double xmin, xmax, ymedian;
  /* least squares */
  double ls_intercept, ls_slope, ls_r2;
  /* Theil-Sen: slope = median of pairwise slopes over pairs of distinct x,
   * intercept = median of y - slope * x */
  double ts_intercept, ts_slope, ts_r2;
  double ts_quality;     /* 1 - MAD(residuals) / MAD(y), in [0, 1]         */
  uint64_t ts_pairs;     /* slopes the median was taken over               */
  int ts_sampled;        /* pairs drawn at random (fixed seed)             */
  int ok;                /* 0: fewer than 2 distinct x values              */
} pp_fit;

/* Theil-Sen is exact while n*(n-1)/2 <= PP_TS_EXACT_PAIRS; past that the
 * slope is the median over PP_TS_SAMPLE_PAIRS pairs drawn with a fixed seed,
 * and the intercept, ymedian and the MADs are taken over a subsample of
 * about PP_TS_SAMPLE_POINTS points, one drawn with a fixed seed from each
 * run of n / PP_TS_SAMPLE_POINTS (reproducible, and blind to no phase of a
 * log whose records repeat with a period). */
#define PP_TS_EXACT_PAIRS 200000
#define PP_TS_SAMPLE_PAIRS 100000
#define PP_TS_SAMPLE_POINTS 65536
/* x and y are not modified. A point with a NaN coordinate is left out
 * (counted in out->nan); one with an infinite coordinate leaves least
 * squares and both r2 NaN. Returns 0, or -1 out of memory. */
int pp_fit_line(const double *x, const double *y, size_t n, pp_fit *out);
/* The same in stages, for many fits over shared columns: statistics of
 * an x column and of a y column once, then one pass a pair. */
typedef struct {
  size_t n, distinct;
  double min, max, mean, ss; /* ss: sum of squared deviations */
} pp_fit_xstat;
typedef struct {
  size_t n;
  double mean, ss, median, mad; /* median, mad: over the subsample */
} pp_fit_ystat;
void pp_fit_xstats(const double *x, size_t n, pp_fit_xstat *s);
int pp_fit_ystats(const double *y, size_t n, pp_fit_ystat *s);
int pp_fit_line_with(const double *x, const double *y, size_t n,
                     const pp_fit_xstat *xs, const pp_fit_ystat *ys,
                     pp_fit *out);
/* The points of x and y with no NaN coordinate, in their order, copied to
 * ox and oy (room for n each); returns how many there are. */
size_t pp_fit_points(const double *x, const double *y, size_t n, double *ox,
                     double *oy);

#ifdef __cplusplus
}
#endif
#endif /* PP_STATS_H */
