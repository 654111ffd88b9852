/*
 * ptx_count.c: whole-text passes over PTX: marker literals, lines, digest.
 *
 * Marker counting filters candidate positions with two bytes of the marker
 * compared 32 (AVX2) or 16 (SSE2) positions at a time; the two bytes are the
 * marker's rarest in PTX text by a fixed ranking ('#' before punctuation
 * before capitals before the lowercase, digits and blanks that fill PTX),
 * so the full comparison runs almost only at real occurrences.
 */
#include "pp_internal.h"
#include "pp_ptx.h"
#include "ptx_internal.h"

#include <string.h>

/* Without xxhash.h (or with PP_NO_XXHASH) the module still builds; the
 * digest is then absent and pp.ptx.digest says why. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PP_X86 1
#endif

#if defined(__has_include) && !defined(PP_NO_XXHASH)
#if __has_include(<xxhash.h>)
#ifdef PP_X86 /* also the AVX2 kernels, used where the processor has them */
#define XXH_DISPATCH_AVX2 1
#define XXH_TARGET_AVX2 __attribute__((target("avx2")))
#endif
#define XXH_INLINE_ALL
#include <xxhash.h>
#define PP_HAVE_XXHASH 1
#endif
#endif

/* How common a byte is in PTX text: lower is rarer. A table (of the rank
 * less one), as the needle is set up for every function body that the
 * first marker is matched in. */
static const unsigned char rank_less_one[256] = {
    ['a' ... 'z'] = 2, ['0' ... '9'] = 2, [' '] = 2, ['\t'] = 2, ['\n'] = 2,
    ['%'] = 2, ['.'] = 2, [','] = 2, [';'] = 2,
    ['A' ... 'Z'] = 1, ['_'] = 1, ['['] = 1, [']'] = 1, ['$'] = 1, ['{'] = 1,
    ['}'] = 1, ['@'] = 1, ['/'] = 1,
};

static int byte_rank(unsigned char c) { return rank_less_one[c] + 1; }

typedef struct {
  const unsigned char *m;
  size_t mlen;
  size_t a, b; /* filter positions inside the marker */
  pp_ptx_match_fn fn;
  void *ud;
} needle;

void pp_ptx_needle_init(pp_ptx_needle *pn, const char *marker, size_t mlen) {
  pn->m = (const unsigned char *)marker;
  pn->mlen = mlen;
  pn->a = pn->b = 0;
  if (!marker || mlen == 0)
    return;
  const unsigned char *m = pn->m;
  size_t best = mlen - 1;
  for (size_t i = mlen; i-- > 0;)
    if (byte_rank(m[i]) < byte_rank(m[best]))
      best = i;
  size_t second = best == 0 ? mlen - 1 : 0;
  for (size_t i = 0; i < mlen; i++)
    if (i != best && byte_rank(m[i]) < byte_rank(m[second]))
      second = i;
  pn->a = second;
  pn->b = best;
}

static void needle_init(needle *n, const char *m, size_t mlen) {
  pp_ptx_needle pn;
  pp_ptx_needle_init(&pn, m, mlen);
  n->m = pn.m;
  n->mlen = pn.mlen;
  n->a = pn.a;
  n->b = pn.b;
}

/* Checks the candidate at pos and counts it when it matches and does not
 * overlap the previous match. */
static inline void candidate(const needle *n, const unsigned char *t,
                             size_t len, size_t pos, size_t *next,
                             uint64_t *count) {
  if (pos < *next || pos + n->mlen > len)
    return;
  if (memcmp(t + pos, n->m, n->mlen) == 0) {
    (*count)++;
    *next = pos + n->mlen;
    if (n->fn)
      n->fn(n->ud, pos);
  }
}

/* Scalar tail: positions [from, len - mlen]. */
static uint64_t count_scalar(const needle *n, const unsigned char *t,
                             size_t len, size_t from, size_t *next) {
  uint64_t count = 0;
  if (len < n->mlen)
    return 0;
  unsigned char ca = n->m[n->a], cb = n->m[n->b];
  for (size_t i = from; i + n->mlen <= len; i++)
    if (t[i + n->b] == cb && t[i + n->a] == ca)
      candidate(n, t, len, i, next, &count);
  return count;
}

#ifdef PP_X86
/* The vector pass at width W bytes (vector type V, its intrinsics), a
 * function NAME with attributes ATTR: the positions where both needle
 * bytes match, W at a time, then the scalar tail. Made for AVX2 (32) and
 * SSE2 (16). */
#define COUNT_SIMD(ATTR, NAME, V, W, SET1, LOADU, CMPEQ, AND, MOVEMASK)        \
  ATTR static uint64_t NAME(const needle *n, const unsigned char *t,           \
                            size_t len) {                                      \
    uint64_t count = 0;                                                        \
    size_t next = 0, i = 0;                                                    \
    size_t hi = n->a > n->b ? n->a : n->b;                                     \
    const V va = SET1((char)n->m[n->a]);                                       \
    const V vb = SET1((char)n->m[n->b]);                                       \
    if (len >= n->mlen && len - n->mlen >= W && len >= hi + W) {               \
      size_t stop = len - hi - W; /* loads at i + hi stay inside */           \
      for (; i <= stop; i += W) {                                              \
        V xa = LOADU((const V *)(t + i + n->a));                               \
        V xb = LOADU((const V *)(t + i + n->b));                               \
        uint32_t mask =                                                        \
            (uint32_t)MOVEMASK(AND(CMPEQ(xa, va), CMPEQ(xb, vb)));             \
        while (mask) {                                                         \
          candidate(n, t, len, i + (size_t)__builtin_ctz(mask), &next,         \
                    &count);                                                   \
          mask &= mask - 1;                                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
    return count + count_scalar(n, t, len, i, &next);                          \
  }
COUNT_SIMD(__attribute__((target("avx2"))), count_avx2, __m256i, 32,
           _mm256_set1_epi8, _mm256_loadu_si256, _mm256_cmpeq_epi8,
           _mm256_and_si256, _mm256_movemask_epi8)
COUNT_SIMD(, count_sse2, __m128i, 16, _mm_set1_epi8, _mm_loadu_si128,
           _mm_cmpeq_epi8, _mm_and_si128, _mm_movemask_epi8)
#undef COUNT_SIMD

static int have_avx2(void) {
  return __builtin_cpu_supports("avx2");
}
#endif

static uint64_t find(const needle *n, const char *text, size_t len);

uint64_t pp_ptx_find_all(const char *text, size_t len, const char *marker,
                         size_t mlen, pp_ptx_match_fn fn, void *ud) {
  if (!text || !marker || mlen == 0 || len < mlen)
    return 0;
  needle n;
  needle_init(&n, marker, mlen);
  n.fn = fn;
  n.ud = ud;
  return find(&n, text, len);
}

/* pp_ptx_find_all with the needle set up once (the first marker is
 * matched in every function body). */
uint64_t pp_ptx_find_needle(const pp_ptx_needle *pn, const char *text,
                            size_t len, pp_ptx_match_fn fn, void *ud) {
  if (!text || !pn->m || pn->mlen == 0 || len < pn->mlen)
    return 0;
  needle n = {pn->m, pn->mlen, pn->a, pn->b, fn, ud};
  return find(&n, text, len);
}

static uint64_t find(const needle *n, const char *text, size_t len) {
  const unsigned char *t = (const unsigned char *)text;
#ifdef PP_X86
  return have_avx2() ? count_avx2(n, t, len) : count_sse2(n, t, len);
#else
  size_t next = 0;
  return count_scalar(n, t, len, 0, &next);
#endif
}

PP_EXPORT uint64_t pp_ptx_count_bytes(const char *text, size_t len,
                                      const char *marker, size_t mlen) {
  return pp_ptx_find_all(text, len, marker, mlen, NULL, NULL);
}

PP_EXPORT uint64_t pp_ptx_count_markers(const char *text, size_t len,
                                        const char *marker) {
  if (!marker)
    return 0;
  return pp_ptx_count_bytes(text, len, marker, strlen(marker));
}

/* ---- lines ------------------------------------------------------------- */
#ifdef PP_X86
__attribute__((target("avx2,popcnt"))) static uint64_t
newlines_avx2(const unsigned char *t, size_t len, size_t *done) {
  uint64_t count = 0;
  const __m256i nl = _mm256_set1_epi8('\n');
  size_t i = 0;
  for (; i + 32 <= len; i += 32) {
    __m256i x = _mm256_loadu_si256((const __m256i *)(t + i));
    count += (uint64_t)__builtin_popcount(
        (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, nl)));
  }
  *done = i;
  return count;
}
#endif

PP_EXPORT uint64_t pp_ptx_count_lines(const char *text, size_t len) {
  if (!text || len == 0)
    return 0;
  const unsigned char *t = (const unsigned char *)text;
  uint64_t count = 0;
  size_t i = 0;
#ifdef PP_X86
  if (have_avx2())
    count = newlines_avx2(t, len, &i);
#endif
  for (; i < len; i++)
    count += t[i] == '\n';
  return count + (t[len - 1] != '\n');
}

/* ---- digest ------------------------------------------------------------ */
PP_EXPORT int pp_ptx_have_digest(void) {
#ifdef PP_HAVE_XXHASH
  return 1;
#else
  return 0;
#endif
}

#if defined(PP_HAVE_XXHASH) && defined(PP_X86) && XXH_VERSION_NUMBER == 801
/* XXH3_64bits of a long input (> XXH3_MIDSIZE_MAX) with xxhash's AVX2
 * stripe kernels: the same hash (the kernels differ only in how they
 * compute it), twice as fast as the SSE2 ones the build defaults to. The
 * internals named are those of xxhash 0.8.1; other versions use
 * XXH3_64bits alone. */
#define PP_XXH3_AVX2 1
__attribute__((target("avx2"))) static uint64_t xxh3_long_avx2(const void *p,
                                                              size_t len) {
  return XXH3_hashLong_64b_internal(p, len, XXH3_kSecret, sizeof(XXH3_kSecret),
                                    XXH3_accumulate_512_avx2,
                                    XXH3_scrambleAcc_avx2);
}
#endif

PP_EXPORT uint64_t pp_ptx_digest(const char *text, size_t len) {
#ifdef PP_HAVE_XXHASH
#ifdef PP_XXH3_AVX2
  if (len > XXH3_MIDSIZE_MAX && have_avx2())
    return xxh3_long_avx2(text, len);
#endif
  return (uint64_t)XXH3_64bits(len ? text : "", len);
#else
  (void)text;
  (void)len;
  return 0;
#endif
}
