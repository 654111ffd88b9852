/*
 * ptx_scanner.h: the scanner's state, shared by the files of one PTX scan;
 * not installed.
 *
 * One scan (pp_ptx_scan, ptx_scan.c) moves one cursor over the text. The
 * files that move it, in the order the text meets them:
 *
 *   ptx_lex.c    bytes, comments, strings, statements skipped, tokens,
 *                numbers, and the errors kept in the result
 *   ptx_scan.c   module scope: directives, function headers, the function
 *                lists, marker counts, the entry points
 *   ptx_decl.c   declarations: types, variables, registers, parameter
 *                lists, performance directives
 *   ptx_body.c   function bodies: the statement loop, body directives and
 *                the instruction classes (barriers, atomics)
 *   ptx_grid.c   grid syncs in a body: the pattern, addresses followed
 *                through register copies
 *   ptx_lines.c  the fast reader of a body's simple lines (AVX2 masks)
 *   ptx_arena.c  the result's memory: names and lists carved from blocks
 *
 * What is called for every byte or every statement is inline here (byte
 * classes, newline(), word_end()), so that splitting the scan into files
 * costs no call on its hot paths.
 */
#ifndef PP_PTX_SCANNER_H
#define PP_PTX_SCANNER_H

#include "pp_internal.h"
#include "pp_ptx.h"
#include "ptx_internal.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && !defined(PP_PTX_NO_SIMD)
/* SSE2 here; the AVX2 paths include <immintrin.h> themselves (it is ten
 * times the size: a fifth of a second of every file's compile). */
#include <emmintrin.h>
#define PP_SSE2 1
#endif

/* ---- byte classes -------------------------------------------------------- */
/* C_WORD: may stand in a word ([A-Za-z0-9_$%.]); C_START: may begin one
 * (not a digit); C_BAD: may not appear outside comments and strings;
 * C_BLANK: blank inside a line; C_STOP: ends the statement loop's jump
 * to the next ';' (see find_stop in ptx_lex.c). The table is in ptx_lex.c. */
enum { C_WORD = 1, C_START = 2, C_BAD = 4, C_BLANK = 8, C_STOP = 16 };
extern const unsigned char pp_ptx_cls[256];
#define CLS(c) (pp_ptx_cls[(unsigned char)(c)])

/* Inlined so that, with a literal, the length and the comparison fold. */
static inline __attribute__((always_inline)) int
word_is(const char *p, size_t n, const char *lit) {
  size_t l = __builtin_strlen(lit);
  return n == l && memcmp(p, lit, l) == 0;
}

/* Counts and sizes read from the text saturate: a product or sum that would
 * pass UINT64_MAX (or UINT32_MAX for 32-bit fields) stays at the maximum, so
 * a hostile "[99999999999999999999]" reads as "too large", never as a small
 * number that wrapped. */
static inline uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static inline uint32_t clamp32(uint64_t v) {
  return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* A word truncated to cap - 1 bytes, NUL-terminated. */
static inline void copy_word(char *dst, size_t cap, const char *p, size_t n) {
  if (n >= cap)
    n = cap - 1;
  memcpy(dst, p, n);
  dst[n] = 0;
}

/* ---- the scanner ---------------------------------------------------------- */
#define DECL_WINDOW 256

typedef struct var_list {
  pp_ptx_var *v;
  size_t n, cap;
} var_list;

struct grid_watch;
struct pending_param;

typedef struct scanner {
  const char *base, *p, *end;
  const char *line_start;
  uint64_t line;
  size_t max_line;
  int stop;
  pp_ptx_result *r;
  const char *counter;
  size_t counter_len;
  size_t cap_globals;
  /* Entries (0) and funcs (1) while the scan runs: FCHUNK at a time in
   * arena chunks, which never move (so a function is known by its address);
   * finish() copies them into r->entries and r->funcs. */
  pp_ptx_func **chunks[2];
  var_list bvars; /* the variables of the body being read */
  /* The parameter list being read, names still in the text; reused from
   * one list to the next and freed at the end of the scan. */
  struct pending_param *pend;
  size_t npend, cap_pend;
  /* The first marker, matched as the scan goes (each body's count is
   * final when the body closes): every position before mk_pos has been
   * tried, the next match may start at mk_next (matches do not overlap). */
  size_t mk_len, mk_pos, mk_next;
  uint64_t mk_count;
  pp_ptx_needle mk;
  /* With a feed (pp_ptx_scan_feed), entries[0, fed) are published. */
  pp_ptx_feed *feed;
  size_t fed, signalled;
  /* The reader of a body's simple lines (ptx_lines.c), or the one that
   * reads none, leaving every line to the statement loop. */
  void (*lines)(struct scanner *, pp_ptx_func *, struct grid_watch *);
  /* Indices of the latest functions declared without a body (entries 0,
   * funcs 1), where a later definition or declaration of the same name is
   * looked for: a bounded window, so that no input makes this quadratic. */
  pp_ptx_func *decl[2][DECL_WINDOW];
  uint32_t decl_hash[2][DECL_WINDOW];
  size_t ndecl[2];
  /* The name classes of grid-sync recognition (ptx_grid.c): malloc'ed at
   * first use, freed at the end of the scan. */
  struct copy_table *copies;
} scanner;

/* Linkage directives before a module-scope declaration. */
typedef struct {
  int visible, external, weak;
} linkage;

/* A cursor position to go back to. */
typedef struct {
  const char *p, *line_start;
  uint64_t line;
} mark;

static inline mark save(const scanner *s) {
  return (mark){s->p, s->line_start, s->line};
}
static inline void restore(scanner *s, mark m) {
  s->p = m.p;
  s->line_start = m.line_start;
  s->line = m.line;
}

/* ---- errors (ptx_lex.c) ---------------------------------------------------- */
/* Keeps an error in the result (up to PP_PTX_MAX_ERRORS, then counts it as
 * dropped); a fatal one stops the scan. */
void pp_ptx_error_at(scanner *s, uint64_t line, uint64_t col, size_t offset,
                     int fatal, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static inline uint64_t col_of(const scanner *s, const char *at) {
  return at >= s->line_start ? (uint64_t)(at - s->line_start) + 1 : 1;
}

/* An error at a byte of the current line, or at a token. */
#define ERR(s, at, fatal, ...)                                                 \
  pp_ptx_error_at((s), (s)->line, col_of((s), (at)),                           \
                  (size_t)((at) - (s)->base), (fatal), __VA_ARGS__)

#define TERR(s, t, fatal, ...)                                                 \
  pp_ptx_error_at((s), (t)->line, (t)->col, (size_t)((t)->p - (s)->base),     \
                  (fatal), __VA_ARGS__)

/* A NUL, control or non-ASCII byte outside comments and strings (fatal). */
void pp_ptx_bad_byte(scanner *s, const char *at);

/* Crosses the newline at nl: counts the line, or stops the scan when the
 * line it ends is longer than the limit. */
static inline void newline(scanner *s, const char *nl) {
  if ((size_t)(nl - s->line_start) > s->max_line) {
    pp_ptx_error_at(s, s->line, (uint64_t)s->max_line + 1,
                    (size_t)(s->line_start - s->base) + s->max_line, 1,
                    "line longer than %zu bytes", s->max_line);
    return;
  }
  s->line++;
  s->line_start = nl + 1;
}

/* ---- skipping (ptx_lex.c) -------------------------------------------------- */
/* At '/': skips a comment and returns 1, or returns 0 when it is none. */
int pp_ptx_skip_comment(scanner *s);
/* Skips to just past the next ';' and returns a pointer to it; NULL at the
 * end of the text, a fatal error, or (with at_eol) the end of the line. */
const char *pp_ptx_skip_statement(scanner *s, int at_eol);

static inline const char *skip_blanks(const char *p, const char *end) {
  while (p < end && (CLS(*p) & C_BLANK))
    p++;
  return p;
}

/* First byte in [p, end) that is not a word byte [A-Za-z0-9_$%.]. */
static inline const char *word_end(const char *p, const char *end) {
#ifdef PP_SSE2
  /* Four ranges and four single bytes, 16 at a time: letters are folded to
   * lowercase by or-ing 0x20 (which maps no non-letter into a-z: 0x40-0x5f
   * are '@', A-Z, '[' ... '_' and only A-Z land in a-z). */
  const __m128i lo = _mm_set1_epi8('a' - 1), hi = _mm_set1_epi8('z' + 1);
  const __m128i d0 = _mm_set1_epi8('0' - 1), d9 = _mm_set1_epi8('9' + 1);
  const __m128i fold = _mm_set1_epi8(0x20), us = _mm_set1_epi8('_');
  const __m128i dollar = _mm_set1_epi8('$'), pct = _mm_set1_epi8('%');
  const __m128i dot = _mm_set1_epi8('.');
  while (end - p >= 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i l = _mm_or_si128(x, fold); /* A-Z -> a-z */
    __m128i w = _mm_and_si128(_mm_cmpgt_epi8(l, lo), _mm_cmplt_epi8(l, hi));
    w = _mm_or_si128(w, _mm_and_si128(_mm_cmpgt_epi8(x, d0),
                                      _mm_cmplt_epi8(x, d9)));
    w = _mm_or_si128(w, _mm_or_si128(_mm_cmpeq_epi8(x, us),
                                     _mm_cmpeq_epi8(x, dot)));
    w = _mm_or_si128(w, _mm_or_si128(_mm_cmpeq_epi8(x, dollar),
                                     _mm_cmpeq_epi8(x, pct)));
    unsigned mask = (unsigned)_mm_movemask_epi8(w) ^ 0xffffu;
    if (mask)
      return p + __builtin_ctz(mask);
    p += 16;
  }
#endif
  while (p < end && (CLS(*p) & C_WORD))
    p++;
  return p;
}

/* ---- tokens (ptx_lex.c): headers and declarations -------------------------- */
enum { T_EOF, T_WORD, T_NUM, T_STR, T_PUNCT, T_STOP };

typedef struct {
  int kind;
  const char *p;
  size_t len;
  uint64_t line, col;
} tok;

/* The next token after blanks, newlines and comments. */
int pp_ptx_next(scanner *s, tok *t);
/* The next token, consumed only when it is of kind k (and, for T_PUNCT,
 * the character c): returns whether it was. */
int pp_ptx_accept(scanner *s, tok *t, int k, char c);
/* A number token's value (decimal, 0x, 0b, 0-octal, U suffix; saturates);
 * 0 when the token is no number. */
int pp_ptx_parse_num(const tok *t, uint64_t *out);

static inline int is_punct(const tok *t, char c) {
  return t->kind == T_PUNCT && *t->p == c;
}

static inline __attribute__((always_inline)) int is_word(const tok *t,
                                                        const char *lit) {
  return t->kind == T_WORD && word_is(t->p, t->len, lit);
}

/* At most 40 bytes of a token, for an error message: "%.*s", TSHOW(t). */
#define TSHOW(t) (int)((t)->len > 40 ? 40 : (t)->len), (t)->p

/* ---- the result's memory (ptx_arena.c) ------------------------------------- */
/* n bytes aligned to align, freed with the result; NULL (and the scan
 * stops) without memory. */
void *pp_ptx_alloc(scanner *s, size_t n, size_t align);
/* A NUL-terminated copy of a word, in the arena. */
char *pp_ptx_dup_word(scanner *s, const char *p, size_t n);
/* Room for one more element of a malloc'ed array; 0 (and the scan stops)
 * without memory. */
int pp_ptx_grow(scanner *s, void **arr, size_t *cap, size_t n, size_t elem);
void pp_ptx_no_memory(scanner *s);
/* Frees the blocks chained from r->mem. */
void pp_ptx_arena_free(pp_ptx_result *r);

/* ---- declarations (ptx_decl.c) --------------------------------------------- */
/* After a state-space word: "[.align N] [.vN] .type name[dims] [= init]
 * {, name...} ;" into list. */
void pp_ptx_parse_var(scanner *s, var_list *list, pp_ptx_space space,
                      linkage lk);
/* After ".reg": the registers it declares, counted in f->regs. */
void pp_ptx_parse_reg(scanner *s, pp_ptx_func *f);
/* After '(': parameters up to and including ')' into f (NULL: dropped). */
void pp_ptx_parse_params(scanner *s, pp_ptx_func *f, const char *fname);
/* A performance directive (.maxntid ...) into f; 0 when w is none. */
int pp_ptx_perf_directive(scanner *s, pp_ptx_func *f, const tok *w);
/* One number after a directive, clamped to 32 bits. */
void pp_ptx_parse_num1(scanner *s, uint32_t *out, const char *what);

/* ---- bodies (ptx_body.c, ptx_grid.c, ptx_lines.c) -------------------------- */
/* A grid synchronisation is recognised by its structure, however far apart
 * its parts are: an arrive (an add-atomic on global or generic memory),
 * then a label, then a spin read of the same address, then a branch back to
 * that label. The spin read is a volatile, acquire or relaxed load, or an
 * atomic that reads and leaves the value as it is (add, or, xor of 0; and
 * of all ones; a compare-and-swap that swaps in what it compares). An
 * atomic may be nvcc's call of its atomic function (atomicAdd, __uAtomicAdd,
 * ...: debug code, -G), its address and operands passed in st.param. "The
 * same address" follows the address through register copies (mov of 64-bit
 * values, and cvta between the global and the generic address of one
 * variable, which name the same memory), as nvcc's debug code moves it from
 * register to register: each name (register or symbol) that a copy involves
 * gets a class, a copy gives its destination the class of its source, and
 * any other instruction that writes a register (or a guarded copy) gives it
 * a new class. */
#define GRID_LABELS 32 /* labels kept between an arrive and its spin read */
#define GRID_KEY 48    /* bytes of an address's key */
#define GRID_PARAMS 4  /* st.param values kept for the next call */
#define GRID_PARAM_TEXT 31

typedef struct copy_slot {
  uint64_t cls;
  uint32_t gen;
  uint8_t len;
  char name[27];
} copy_slot;

#define COPY_SLOTS 512 /* a power of two; a fuller table starts again */

/* The classes of the names of a body, allocated at the first copy or
 * arrive of a scan and reused by its later bodies (gen tells which body a
 * slot belongs to, so nothing is cleared between bodies). */
typedef struct copy_table {
  copy_slot slot[COPY_SLOTS];
  uint64_t next_cls;
  uint32_t gen, used;
} copy_table;

typedef struct grid_watch {
  char key[GRID_KEY]; /* the arrive's address: its class, or its text */
  size_t len;
  int set;            /* an arrive is watched */
  int spin;           /* its spin read was seen: labels[] is final */
  unsigned nlabels;   /* labels since the arrive (the last GRID_LABELS) */
  uint32_t labels[GRID_LABELS];
  /* Some register of this body has a class: every instruction's
   * destination is then looked at (registers only: a symbol never changes),
   * first in bloom, a bit per register with a class (grid_bloom), so that
   * most instructions cost a few bit operations and no call. */
  int tracking;
  uint64_t bloom[4];
  copy_table *ct; /* NULL until needed */
  /* The values the last st.param instructions stored, by parameter name,
   * for a call of an atomic function. */
  struct {
    uint32_t name;                     /* fnv32 of the parameter's name  */
    uint8_t len;                       /* of text; 0: unusable          */
    char text[GRID_PARAM_TEXT];        /* the value, blanks dropped     */
  } par[GRID_PARAMS];
  unsigned npar;
} grid_watch;

/* The bloom bit of a register name [p, p + n), n >= 2: from its length,
 * its second byte (the class letter after '%') and its last two bytes. */
static inline unsigned grid_bloom(const char *p, size_t n) {
  uint32_t h = (uint32_t)n * 0x9E3779B1u ^
               (uint32_t)(unsigned char)p[1] * 0x85EBCA6Bu ^
               (uint32_t)(unsigned char)p[n - 1] * 0xC2B2AE35u ^
               (uint32_t)(unsigned char)p[n - 2] * 0x27D4EB2Fu;
  return (h * 2654435761u) >> 24;
}

static inline int grid_maybe_tracked(const grid_watch *g, const char *p,
                                     size_t n) {
  if (n < 2 || *p != '%')
    return 0;
  unsigned b = grid_bloom(p, n);
  return (int)((g->bloom[b >> 6] >> (b & 63)) & 1);
}

typedef enum {
  OP_PLAIN,
  OP_ATOM,  /* atom/red add on global or generic memory: an arrive, or
               with a result and 0 added, a read */
  OP_SPIN,  /* a volatile, acquire or relaxed load */
  OP_COPY,  /* mov of a 64-bit value; cvta.global, cvta.to.global */
  OP_BRA,   /* bra */
  OP_INC,   /* atom/red inc on that memory: an arrive */
  OP_KEEP0, /* atom or, xor: a read when its operand is 0 */
  OP_KEEP1, /* atom and: a read when its operand is all ones */
  OP_CAS,   /* atom cas: a read when it swaps in what it compares */
  OP_PARAM, /* st.param: a value for the next call */
  OP_CALL,  /* call: maybe of an atomic function */
  OP_GUARDED = 16 /* or'ed in: the instruction has a guard predicate */
} op_kind;
#define OP_KIND(k) ((k) & 15)

/* Counts the opcode's barriers and atomics in f and says what it may be in
 * a grid sync. */
op_kind pp_ptx_classify(pp_ptx_func *f, const char *op, size_t n);
/* With the operands [ops, semi) of an instruction of kind k (or'ed with
 * OP_GUARDED), when k is not OP_PLAIN or g->tracking is set (for OP_PLAIN,
 * the fast line reader looks at the destination itself). */
void pp_ptx_watch_grid(scanner *s, pp_ptx_func *f, grid_watch *g, unsigned k,
                       const char *ops, const char *semi);
/* A register [p, p + n) written by an instruction that is none of the
 * kinds above (called when grid_maybe_tracked says it may have a class). */
void pp_ptx_watch_write(grid_watch *g, const char *p, size_t n);
/* A label [p, p + n) in a body (only needed while g->set). */
void pp_ptx_watch_label(grid_watch *g, const char *p, size_t n);
/* The watch of a new body; frees nothing. */
void pp_ptx_watch_init(scanner *s, grid_watch *g);

/* The body after '{' (at open), up to its '}'. */
void pp_ptx_scan_body(scanner *s, pp_ptx_func *f, const char *open,
                      const char *kind);

typedef void (*pp_ptx_lines_fn)(scanner *, pp_ptx_func *, grid_watch *);
/* The fastest reader of simple lines this processor runs. */
pp_ptx_lines_fn pp_ptx_pick_lines(void);
/* The reader that reads none (every line goes to the statement loop). */
void pp_ptx_lines_none(scanner *s, pp_ptx_func *f, grid_watch *g);

#endif
