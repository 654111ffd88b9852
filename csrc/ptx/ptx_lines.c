/*
 * ptx_lines.c: the fast reader of a function body's simple lines, called
 * by the statement loop (pp_ptx_scan_body, ptx_body.c) before each
 * statement it reads.
 *
 * Most body lines are one instruction ("\tadd.s32 \t%r1, %r2, %r3;"), a
 * label or nothing, with no comment, string or unusual byte. This reader
 * takes such lines from bit masks of the 64 bytes at the line's start (one
 * vector pass, then bit scans: no byte loops and few branches) and gives
 * back any other line untouched, at s->p, to the statement loop, which
 * reads it as before; what it counts is what that loop would (the fuzzer
 * fuzz/ptx_fuzz.c compares the two on every input).
 */
#include "ptx_scanner.h"

#ifdef PP_SSE2
#include <immintrin.h> /* the AVX2 path */
#endif

typedef struct {
  uint64_t nl;    /* '\n' */
  uint64_t odd;   /* what a simple line cannot hold: '/', '"', DEL, and
                     control or non-ASCII bytes but tab and '\n' */
  uint64_t semi;  /* ';' */
  uint64_t blank; /* tab, space */
  uint64_t word;  /* C_WORD */
} lmasks;

#ifdef PP_SSE2
/* C_WORD by nibbles: byte b is a word byte ([0-9A-Za-z_$%.]) exactly when
 * WLO[b & 15] & WHI[b >> 4] != 0, two table lookups (one shuffle each) for
 * 32 bytes. Read the ASCII table as rows (high nibble h) of 16 columns (low
 * nibble l); S(h) is the set of columns of row h that hold word bytes:
 *
 *   row 2: $ % .   columns 4, 5, E         bit 1
 *   row 3: 0-9     columns 0-9             bit 2
 *   row 4: A-O     columns 1-F             bit 4   (row 6, a-o: the same)
 *   row 5: P-Z _   columns 0-A, F          bit 8
 *   row 7: p-z     columns 0-A             bit 16
 *
 * Each distinct S(h) has one bit; WHI[h] is the bit of S(h) (0 for rows
 * without word bytes, 8-F among them); WLO[l] is the or of the bits of the
 * sets that contain l. So WLO[l] & WHI[h] != 0 exactly when l is in S(h).
 * tools/ptx_nibbles.lua builds these two lines and checks them on all 256
 * bytes; spec/ptx_nibbles_spec.lua checks that they are the lines here. */
#define WLO 26, 30, 30, 30, 31, 31, 30, 30, 30, 30, 28, 4, 4, 4, 5, 12
#define WHI 0, 0, 1, 2, 4, 8, 4, 16, 0, 0, 0, 0, 0, 0, 0, 0

/* The masks of the 32 bytes at p + at (at 0 or 32), or'ed into m. Signed
 * compare: bytes from 0x80 up are below ' ', so odd. */
__attribute__((target("avx2"))) static inline __attribute__((always_inline))
void lm_avx2(const char *p, int at, lmasks *m) {
#define EQ(c) _mm256_cmpeq_epi8(x, _mm256_set1_epi8(c))
#define OR _mm256_or_si256
#define MOVE(v) ((uint64_t)(uint32_t)_mm256_movemask_epi8(v) << at)
  __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(p + at));
  __m256i tab = EQ('\t'), nl = EQ('\n');
  __m256i odd = OR(OR(EQ('/'), EQ('"')),
                   OR(EQ(0x7f), _mm256_andnot_si256(
                                    OR(tab, nl), _mm256_cmpgt_epi8(
                                                     _mm256_set1_epi8(' '), x))));
  /* C_WORD by nibbles (see WLO, WHI above). */
  __m256i nib = _mm256_set1_epi8(0x0f);
  __m256i bits = _mm256_and_si256(
      _mm256_shuffle_epi8(_mm256_setr_epi8(WLO, WLO),
                          _mm256_and_si256(x, nib)),
      _mm256_shuffle_epi8(_mm256_setr_epi8(WHI, WHI),
                          _mm256_and_si256(_mm256_srli_epi16(x, 4), nib)));
  __m256i nonword = _mm256_cmpeq_epi8(bits, _mm256_setzero_si256());
  m->nl |= MOVE(nl);
  m->odd |= MOVE(odd);
  m->semi |= MOVE(EQ(';'));
  m->blank |= MOVE(OR(tab, EQ(' ')));
  m->word |= (uint64_t)(uint32_t)~_mm256_movemask_epi8(nonword) << at;
#undef EQ
#undef OR
#undef MOVE
}

__attribute__((target("avx2"))) static void
body_lines_avx2(scanner *s, pp_ptx_func *f, grid_watch *g) {
  const char *p = s->p, *const end = s->end, *ls = s->line_start;
  uint64_t line = s->line;
  const size_t max_line = s->max_line;
  while (end - p >= 32) {
    lmasks m = {0, 0, 0, 0, 0};
    lm_avx2(p, 0, &m);
    if (!m.nl) {
      if (end - p < 64)
        break;
      lm_avx2(p, 32, &m);
      if (!m.nl)
        break; /* a long line */
    }
    unsigned len = (unsigned)__builtin_ctzll(m.nl); /* p[len] is '\n' */
    uint64_t in = ((uint64_t)1 << len) - 1;
    if ((m.odd & in) || (size_t)(p + len - ls) > max_line)
      break;
    uint64_t text = ~m.blank & in; /* what is not blank */
    if (text) {
      unsigned o = (unsigned)__builtin_ctzll(text);
      int guarded = p[o] == '@';
      if (guarded) { /* @p or @!p, then the opcode */
        unsigned q = o + 1;
        if (q < len && p[q] == '!')
          q++;
        q += (unsigned)__builtin_ctzll(~m.word >> q); /* stops by p[len] */
        o = q + (unsigned)__builtin_ctzll(~m.blank >> q);
        if (o >= len || !(CLS(p[o]) & C_START))
          break;
      } else if (!(CLS(p[o]) & C_START) || p[o] == '.') {
        break;
      }
      unsigned e = o + (unsigned)__builtin_ctzll(~m.word >> o);
      if (!guarded) {
        unsigned k = e + (unsigned)__builtin_ctzll(~m.blank >> e);
        if (k < len && p[k] == ':') { /* a label, alone on its line */
          if (text >> (k + 1))
            break;
          if (g->set)
            pp_ptx_watch_label(g, p + o, e - o);
          goto next_line;
        }
      }
      /* An instruction: one ';', after the opcode, then blanks. */
      uint64_t semis = m.semi & in;
      if (!semis || (semis & (semis - 1)))
        break;
      unsigned sc = (unsigned)__builtin_ctzll(semis);
      if (sc < e || (text >> (sc + 1)))
        break;
      f->instructions++;
      op_kind k = pp_ptx_classify(f, p + o, e - o);
      if (k == OP_BRA) { /* no destination: only the end of a spin loop */
        if (g->spin)
          pp_ptx_watch_grid(s, f, g, k, p + e, p + sc);
      } else if (k != OP_PLAIN) {
        pp_ptx_watch_grid(s, f, g, k | (guarded ? OP_GUARDED : 0u), p + e,
                          p + sc);
      } else if (g->tracking) { /* the destination: the first operand */
        unsigned a = e + (unsigned)__builtin_ctzll(~m.blank >> e);
        if (a < sc && p[a] == '{') {
          pp_ptx_watch_grid(s, f, g, OP_PLAIN, p + e, p + sc);
        } else if (a < sc) {
          unsigned b = a + (unsigned)__builtin_ctzll(~m.word >> a);
          if (grid_maybe_tracked(g, p + a, b - a))
            pp_ptx_watch_write(g, p + a, b - a);
        }
      }
    }
  next_line:
    line++;
    ls = p + len + 1;
    p = ls;
  }
  s->p = p;
  s->line = line;
  s->line_start = ls;
}
#endif

/* Without AVX2 (where SSE2's two loads a half cost more than they save)
 * every line is read by the statement loop. */
void pp_ptx_lines_none(scanner *s, pp_ptx_func *f, grid_watch *g) {
  (void)s;
  (void)f;
  (void)g;
}

pp_ptx_lines_fn pp_ptx_pick_lines(void) {
#ifdef PP_SSE2
  if (__builtin_cpu_supports("avx2"))
    return body_lines_avx2;
#endif
  return pp_ptx_lines_none;
}
