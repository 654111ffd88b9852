/*
 * pp_ptx.h: a one-pass scanner over PTX text, public C API.
 *
 *     pp_ptx_result r;
 *     if (pp_ptx_scan(text, len, NULL, &r) < 0) ...;   // NULL: default opts
 *     for (size_t i = 0; i < r.nentries; i++)
 *       printf("%s: %zu params, %llu instructions\n", r.entries[i].name,
 *              r.entries[i].nparams,
 *              (unsigned long long)r.entries[i].instructions);
 *     pp_ptx_result_free(&r);
 *
 * The text is untrusted: it need not be NUL-terminated, may be truncated or
 * hold binary bytes, and is never read outside [text, text + len). A scan
 * that meets something it cannot read stops there (or skips the statement)
 * and returns a partial result whose errors[] say what and where (1-based
 * line and byte column).
 *
 * Comments and string literals never count as instructions or directives.
 * Marker literals are counted over the whole text, comments included (the
 * reference's barrier markers live in comments), and so is the digest.
 */
#ifndef PP_PTX_H
#define PP_PTX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PP_PTX_DEFAULT_MARKER "grid.sync barrier #"
#define PP_PTX_DEFAULT_COUNTER "_vyre_grid_barrier"
#define PP_PTX_DEFAULT_MAX_LINE ((size_t)16 << 20) /* bytes */
#define PP_PTX_MAX_MARKERS 16
#define PP_PTX_MARKER_MAX 256  /* longest marker, bytes */
#define PP_PTX_COUNTER_MAX 256 /* longest counter-global name, bytes */
#define PP_PTX_MAX_ERRORS 16   /* kept; later ones are only counted */
#define PP_PTX_WHAT_MAX 160

typedef struct pp_ptx_opts {
  /* Literals counted over the whole text. NULL with nmarkers 0: the default
   * marker alone. Each is 1..PP_PTX_MARKER_MAX bytes, at most
   * PP_PTX_MAX_MARKERS of them. */
  const char *const *markers;
  size_t nmarkers;
  /* Module-scope global whose declaration sets counter_global. NULL: the
   * default; "": look for none. */
  const char *counter_global;
  /* A longer line stops the scan (error "line longer than ..."). 0: the
   * default. */
  size_t max_line;
} pp_ptx_opts;

/* Register classes of `.reg` declarations. */
typedef enum {
  PP_PTX_REG_PRED,
  PP_PTX_REG_B8, PP_PTX_REG_B16, PP_PTX_REG_B32, PP_PTX_REG_B64,
  PP_PTX_REG_B128,
  PP_PTX_REG_U8, PP_PTX_REG_U16, PP_PTX_REG_U32, PP_PTX_REG_U64,
  PP_PTX_REG_S8, PP_PTX_REG_S16, PP_PTX_REG_S32, PP_PTX_REG_S64,
  PP_PTX_REG_F16, PP_PTX_REG_F16X2, PP_PTX_REG_BF16, PP_PTX_REG_BF16X2,
  PP_PTX_REG_F32, PP_PTX_REG_F64,
  PP_PTX_REG_OTHER,
  PP_PTX_NREG
} pp_ptx_reg_class;

/* ".pred", ".b32", ... ("other" for PP_PTX_REG_OTHER); NULL out of range. */
const char *pp_ptx_reg_class_name(int cls);

typedef enum {
  PP_PTX_GLOBAL,
  PP_PTX_CONST,
  PP_PTX_SHARED,
  PP_PTX_LOCAL
} pp_ptx_space;

/* "global", "const", "shared", "local". */
const char *pp_ptx_space_name(pp_ptx_space s);

typedef struct {
  char *name;
  char type[16];   /* ".u64", ".b8", ...; "" when absent */
  uint64_t size;   /* bytes: element size x array length (saturating) */
  uint32_t align;  /* bytes: .align before the type, else the element size */
  uint64_t array;  /* array length; 0 for a scalar or an unsized [] */
  uint64_t offset; /* in the parameter buffer: previous end, aligned */
  int ptr;         /* carries .ptr */
} pp_ptx_param;

typedef struct {
  char *name;
  pp_ptx_space space;
  char type[16];
  uint64_t size;   /* 0 for an unsized (extern) array */
  uint32_t align;
  uint64_t array;  /* product of the dimensions; 0 for a scalar or [] */
  int external;    /* .extern */
  int visible;     /* .visible */
  uint64_t line;
} pp_ptx_var;

/* Per-function statistics (entries and funcs alike). */
typedef struct {
  char *name;
  int visible, external, weak, defined;
  uint64_t line, col;     /* of the name */
  size_t body_begin;      /* byte offsets of '{' and just past '}' */
  size_t body_end;
  pp_ptx_param *params;
  size_t nparams;
  uint32_t maxntid[3], reqntid[3]; /* unset dimensions are 0 */
  uint32_t minnctapersm, maxnreg;
  int has_maxntid, has_reqntid, has_minnctapersm, has_maxnreg;
  uint64_t instructions;           /* statements that are instructions */
  uint64_t regs[PP_PTX_NREG];      /* registers declared, by class */
  uint64_t bar_sync;               /* bar.{sync,red,arrive}, barrier.* */
  uint64_t atomics;                /* atom.* and red.*, and calls of nvcc's
                                      atomic functions (debug code)      */
  uint64_t atomics_global;         /* atom.*, red.* on .global          */
  uint64_t grid_syncs;             /* add-atomic, then a loop re-reading
                                      its address (a volatile, acquire or
                                      relaxed load, or an atomic that
                                      leaves the value as it is)         */
  uint64_t markers;                /* first marker, inside the body */
  pp_ptx_var *vars;                /* .shared/.local/... declared inside */
  size_t nvars;
  uint64_t shared_bytes, local_bytes;
} pp_ptx_func;

typedef struct {
  char what[PP_PTX_WHAT_MAX];
  uint64_t line, col; /* 1-based; col counts bytes */
  size_t offset;      /* byte offset */
} pp_ptx_error;

typedef struct {
  uint64_t bytes, lines;
  char version[16];       /* "" when absent */
  char target[64];
  uint32_t address_size;  /* 0 when absent */
  pp_ptx_func *entries;
  size_t nentries;
  pp_ptx_func *funcs;
  size_t nfuncs;
  pp_ptx_var *globals;    /* module-scope .global/.const/.shared/.local */
  size_t nglobals;
  size_t nmarkers;
  char markers[PP_PTX_MAX_MARKERS][PP_PTX_MARKER_MAX + 1];
  uint64_t marker_count[PP_PTX_MAX_MARKERS];
  int counter_global;     /* the counter global is declared at module scope */
  int grid_sync;          /* some entry or func synchronises the grid */
  uint64_t digest;        /* XXH3-64 of the whole text, seed 0 */
  int have_digest;        /* 0 when built without xxhash.h */
  pp_ptx_error errors[PP_PTX_MAX_ERRORS];
  size_t nerrors;
  uint64_t errors_dropped;
  int partial;            /* some error was met */
  void *mem;              /* internal: the blocks names and parameter lists
                             live in (pp_ptx_result_free releases them) */
} pp_ptx_result;

/* Scans text[0..len). Returns 0 for a complete result, 1 for a partial one
 * (see out->errors), -1 for bad arguments (out->errors[0] says which; out
 * is still safe to free). opts may be NULL. */
int pp_ptx_scan(const char *text, size_t len, const pp_ptx_opts *opts,
                pp_ptx_result *out);
void pp_ptx_result_free(pp_ptx_result *r);

/* Non-overlapping occurrences of marker (NUL-terminated, non-empty) in
 * text[0..len); 0 for an empty marker. */
uint64_t pp_ptx_count_markers(const char *text, size_t len,
                              const char *marker);
uint64_t pp_ptx_count_bytes(const char *text, size_t len, const char *marker,
                            size_t mlen);
/* Lines: '\n' count, plus one for a last line without '\n'. */
uint64_t pp_ptx_count_lines(const char *text, size_t len);
/* XXH3-64 of the text, seed 0 (0 when built without xxhash.h: see
 * pp_ptx_have_digest). */
uint64_t pp_ptx_digest(const char *text, size_t len);
int pp_ptx_have_digest(void);

#ifdef __cplusplus
}
#endif

#endif
