/*
 * pp_parse.h: reading record lines back, and the columnar record store they
 * land in. Public C API (usable without Lua).
 *
 *     pp_parser *p = pp_parser_new(NULL, err, sizeof err);  // defaults
 *     pp_parser_file(p, "run.log", NULL, NULL);             // or _feed/_line
 *     const pp_parse_stats *st = pp_parser_stats(p);        // counts
 *     pp_cols *c = pp_parser_take(p);                       // the records
 *     ... pp_cols_get(c, (size_t)pp_cols_find(c, "ptx_ns"), row, &v) ...
 *     pp_cols_free(c); pp_parser_free(p);
 *
 * What a line is:
 *
 *   A line is the bytes up to '\n' (a '\r' before it is dropped); a last
 *   line without '\n' counts too. Tokens are separated by runs of spaces and
 *   tabs; leading blanks are skipped.
 *
 *   Record line: the first token is a prefix word and
 *     - list mode (prefixes given): the first token equals one of them;
 *     - auto mode (no prefixes, the default): the first token is a known
 *       schema's prefix, or it is a prefix word (1..63 bytes of
 *       [A-Za-z0-9_.:/-], starting with a letter) AND the second token
 *       begins with a field name followed by '='.
 *   Every other line is "other" (counted, never an error).
 *
 *   A record line is parsed, or rejected with the first problem found:
 *     - a token without '=' (a truncated or garbled field);
 *     - an empty or bad name (names are 1..63 bytes of [A-Za-z0-9_];
 *       "_prefix", "_fields", "_table" and "_text", which a record answers
 *       to itself, are reserved);
 *     - an empty value, a value holding '=' or a control character;
 *     - a duplicate field name;
 *     - a bad number in a numeric field: names ending in _ns,
 *       _cache_hits, _cache_misses, _cache_disk_hits, and every u64 field of
 *       a known schema (seq, nodes, tid, ...) must hold an unsigned decimal
 *       integer below 2^64;
 *     - for a known schema's prefix, a missing field of the reference's
 *       part of the line (everything up to <cache>_cache_misses): the
 *       signature of a truncated line;
 *     - a prefix with no fields; more than PP_PARSE_MAX_TOKENS fields;
 *       a new field name past the store's limit of distinct names.
 *
 *   Values (pp_cols_value_of_text, one rule for lines, CSV cells and JSON
 *   numbers): a value is a number exactly when it is written as JSON writes
 *   a number. An integer without leading zeros or '+' from -2^63 to 2^64-1
 *   is an integer (a u64 above INT64_MAX kept as its bit pattern, flagged
 *   u64 when read); a finite number with a fraction or an exponent
 *   (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?) is a double, whose text
 *   is kept when it is not the double's shortest spelling ("1.50", "1e3");
 *   anything else is a string ("007", "+5", "-0", "0x10", "nan", an integer
 *   past 64 bits). Each value keeps its own kind and its exact text whatever
 *   the other values of its column: a column of integers and doubles is a
 *   number column whose integers stay integers, and a column that sees a
 *   string becomes a string column holding every value's text as written.
 *
 *   Known schemas: the default (reference) schema and the current one, plus
 *   any given in the options.
 *
 * Invariant: total == parsed + rejected + other, per source and overall.
 */
#ifndef PP_PARSE_H
#define PP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "phaseprobe.h"
#include "pp_stats.h" /* pp_summary, pp_fit: the queries' results */

#ifdef __cplusplus
extern "C" {
#endif

#define PP_PARSE_MAX_TOKENS 512      /* fields in one record line          */
#define PP_PARSE_MAX_COLUMNS 4096    /* distinct field names in one store  */
#define PP_PARSE_MAX_ERRORS 10000    /* default: error entries kept        */
/* Default cap on the bytes one source (a file, standard input, a string,
 * a line iterator) may bring: well above real logs (a million records is
 * 470 to 600 MB), and what stops a reader of /dev/zero or an endless pipe. */
#define PP_PARSE_MAX_BYTES ((uint64_t)8 << 30)
/* Bytes of one line the parser keeps: a longer line is counted, its start
 * classified (a record line is rejected as too long, anything else is
 * other), the rest dropped as it arrives, so memory stays bounded. */
#define PP_PARSE_MAX_LINE (1u << 20)

/* ---- the column store ---------------------------------------------------- */
typedef struct pp_cols pp_cols;

typedef enum { PP_VAL_NONE = 0, PP_VAL_INT, PP_VAL_NUM, PP_VAL_STR } pp_val_kind;

typedef struct {
  pp_val_kind kind;
  int64_t i;         /* PP_VAL_INT: the value, or with u64 set the bit
                        pattern of an unsigned value above INT64_MAX     */
  double d;          /* PP_VAL_NUM                                        */
  const char *s;     /* PP_VAL_STR: NUL-terminated, owned by the store    */
  size_t len;        /* PP_VAL_STR                                        */
  int u64;           /* PP_VAL_INT: i is a u64 above INT64_MAX            */
} pp_value;

/* Hidden per-record columns, addressable by name like any field. */
#define PP_COL_FILE "@file"     /* source (file name) of the record        */
#define PP_COL_LINE "@line"     /* 1-based line number in that source      */

size_t pp_cols_count(const pp_cols *c);               /* records          */
size_t pp_cols_ncolumns(const pp_cols *c);            /* incl. hidden     */
/* Visible fields in order of first appearance: index -> column index. */
size_t pp_cols_nfields(const pp_cols *c);
size_t pp_cols_field_column(const pp_cols *c, size_t i);
const char *pp_cols_name(const pp_cols *c, size_t col);
int pp_cols_hidden(const pp_cols *c, size_t col);
/* PP_VAL_INT: integers only; PP_VAL_NUM: doubles (and integers, which
 * pp_cols_get gives as PP_VAL_INT); PP_VAL_STR: strings only. */
pp_val_kind pp_cols_kind(const pp_cols *c, size_t col);
/* Whether no integer of the column is negative. */
int pp_cols_unsigned(const pp_cols *c, size_t col);
/* Column index by name (hidden names included); -1 if none. */
int pp_cols_find(const pp_cols *c, const char *name);
/* Value of `col` in record `row`; kind PP_VAL_NONE when absent. */
void pp_cols_get(const pp_cols *c, size_t col, size_t row, pp_value *out);
/* The text of that value as the record's line prints it (exact: the digits
 * of an integer, a double's text as it was written or its shortest
 * spelling, the string); returns its full length (0 when absent), writing
 * at most cap-1 bytes and a NUL. */
size_t pp_cols_text(const pp_cols *c, size_t col, size_t row, char *buf,
                    size_t cap);
/* A value as double (ints by the column's signedness); 0 if absent. */
int pp_cols_get_double(const pp_cols *c, size_t col, size_t row, double *out);
/* The record's layout: its prefix and its fields in line order. */
size_t pp_cols_layout(const pp_cols *c, size_t row);
size_t pp_cols_nlayouts(const pp_cols *c);
const char *pp_cols_layout_prefix(const pp_cols *c, size_t layout);
size_t pp_cols_layout_nfields(const pp_cols *c, size_t layout);
size_t pp_cols_layout_column(const pp_cols *c, size_t layout, size_t i);
/* Formats record `row` as its line (no newline); returns the full length,
 * writing at most cap-1 bytes and a NUL. */
size_t pp_cols_format(const pp_cols *c, size_t row, char *buf, size_t cap);
/* Bytes this store holds (columns, bitmaps, strings, layouts). */
size_t pp_cols_bytes(const pp_cols *c);
void pp_cols_free(pp_cols *c);

/* ---- the parser ---------------------------------------------------------- */
typedef struct pp_parser pp_parser;

typedef struct {
  /* List mode when nprefixes > 0; auto mode otherwise. */
  const char *const *prefixes;
  size_t nprefixes;
  /* Schemas whose prefix makes a line "known" (required and numeric
   * fields). NULL: the default schema and the current one. */
  const pp_schema *const *schemas;
  size_t nschemas;
  /* Extra field names that must hold unsigned integers. */
  const char *const *numeric;
  size_t nnumeric;
  size_t max_errors; /* error entries kept; 0: PP_PARSE_MAX_ERRORS */
  uint64_t max_bytes; /* bytes one source may bring; 0: PP_PARSE_MAX_BYTES */
} pp_parse_opts;

typedef struct {
  uint64_t total, parsed, rejected, other;
  uint64_t bytes;
  uint64_t errors_dropped; /* rejected lines past max_errors (not listed) */
  int unterminated;        /* the last line had no '\n'                  */
} pp_parse_stats;

typedef struct {
  const char *source; /* file name (or "(string)", "(stdin)", ...)         */
  uint64_t line;      /* 1-based                                           */
  uint32_t column;    /* 1-based byte column of the offending token       */
  const char *what;
} pp_parse_error;

pp_parser *pp_parser_new(const pp_parse_opts *opts, char *err, size_t errlen);
void pp_parser_free(pp_parser *p);
/* Forgets everything read (records, counts, errors, sources), keeping the
 * options, so one parser can serve many inputs. */
void pp_parser_reset(pp_parser *p);

/* Starts a new source (file name used in errors and in @file); line
 * numbers restart at 1. A pending partial line of the previous source is
 * finished first. */
void pp_parser_source(pp_parser *p, const char *name);
/* Feeds bytes; lines may span calls. Returns 0, or -1 with errno ENOMEM
 * (out of memory) or EFBIG (the source would pass max_bytes: nothing of
 * these bytes is taken, what came before is kept). */
int pp_parser_feed(pp_parser *p, const char *buf, size_t len);
/* Feeds one whole line (no '\n' inside; a trailing '\n' is allowed).
 * Returns as pp_parser_feed. */
int pp_parser_line(pp_parser *p, const char *line, size_t len);
/* Ends the current source: a pending unterminated line is parsed. */
int pp_parser_end(pp_parser *p);
/* The index of the source being read (SIZE_MAX before any), and a return
 * to source i after another was read (its line numbers and counts go on):
 * a reader of lines whose callback fed the parser another source resumes
 * its own. -1 when there is no source i (the parser was reset). */
size_t pp_parser_current(const pp_parser *p);
int pp_parser_resume(pp_parser *p, size_t i);

/* Reads a whole file ("-" is stdin) as one source. progress (may be NULL)
 * is called about every 16 MiB; a non-zero return stops the reading.
 * Returns 0, or -1 with errno set: the file could not be opened or read,
 * ENOMEM, EFBIG (larger than max_bytes), ECANCELED (stopped by progress).
 * What was read before a failure is kept. */
typedef int (*pp_parse_progress)(void *ud, uint64_t bytes, uint64_t records);
int pp_parser_file(pp_parser *p, const char *path, pp_parse_progress progress,
                   void *ud);

const pp_parse_stats *pp_parser_stats(const pp_parser *p);
/* Per-source counts: nsources and stats of source i. */
size_t pp_parser_nsources(const pp_parser *p);
const char *pp_parser_source_name(const pp_parser *p, size_t i);
const pp_parse_stats *pp_parser_source_stats(const pp_parser *p, size_t i);
size_t pp_parser_nerrors(const pp_parser *p);
const pp_parse_error *pp_parser_error(const pp_parser *p, size_t i);

/* The records parsed so far (the parser may go on into a fresh store, or
 * be freed). The caller owns the result. NULL only out of memory. */
pp_cols *pp_parser_take(pp_parser *p);

/* ---- queries over a store ------------------------------------------------ */
/* Rows are named by a selection: a sorted array of record indices. Every
 * query takes (sel, nsel); sel == NULL means all records. */
/* Present values of `col` as doubles; out has room for nsel (or count)
 * values. Returns how many were written. */
size_t pp_cols_gather(const pp_cols *c, size_t col, const uint32_t *sel,
                      size_t nsel, double *out);
/* Like pp_cols_gather, but absent values are written as NaN, one per row. */
void pp_cols_gather_nan(const pp_cols *c, size_t col, const uint32_t *sel,
                        size_t nsel, double *out);
/* Summary of a column; -1 out of memory. */
int pp_cols_summary(const pp_cols *c, size_t col, const uint32_t *sel,
                    size_t nsel, pp_summary *out);
/* Per row, sum of coef[k] * value(cols[k]); rows lacking any term are
 * skipped; with clamp, results below `floor` become `floor`. Writes to out
 * (room for nsel) and returns the count. */
size_t pp_cols_lincomb(const pp_cols *c, const size_t *cols,
                       const double *coef, size_t nterms, const uint32_t *sel,
                       size_t nsel, int clamp, double floor, double *out);
/* Rows whose `col` equals v (kind PP_VAL_NONE: rows lacking it). Numbers
 * compare by their exact values across int, u64 and double. Writes to out (room for nsel);
 * returns the count. */
size_t pp_cols_where_eq(const pp_cols *c, size_t col, const pp_value *v,
                        const uint32_t *sel, size_t nsel, uint32_t *out);
/* Rows whose `col` is a number and lo <= value <= hi. */
size_t pp_cols_where_range(const pp_cols *c, size_t col, double lo, double hi,
                           const uint32_t *sel, size_t nsel, uint32_t *out);
/* The same with bounds of kind PP_VAL_INT (u64 included) or PP_VAL_NUM
 * (NULL: no bound), compared exactly: an integer with a double by their
 * values, never through a rounded double. */
size_t pp_cols_where_between(const pp_cols *c, size_t col, const pp_value *lo,
                             const pp_value *hi, const uint32_t *sel,
                             size_t nsel, uint32_t *out);
/* Rows whose `col` meets `col op text`. The text is a decimal number,
 * [+-]?(D+(.D*)?|.D+)([eE][+-]?D+)?, or (for = and != only) any text.
 * Numbers compare exactly, as decimals: a value by its own text (an
 * integer's digits, a double as it was written or its shortest spelling;
 * a string whose text is a number by the rule of values, pp_parse.h,
 * counts as that number); = also holds where the value's text is the
 * text. Absent values and values that are no number meet only !=. Writes
 * the rows to out (room for nsel) and their count to *nout; returns 0, or
 * -1 when op orders and the text is no number. */
typedef enum {
  PP_CMP_EQ, PP_CMP_NE, PP_CMP_LT, PP_CMP_LE, PP_CMP_GT, PP_CMP_GE
} pp_cmp_op;
int pp_cols_where_cmp(const pp_cols *c, size_t col, pp_cmp_op op,
                      const char *text, size_t len, const uint32_t *sel,
                      size_t nsel, uint32_t *out, size_t *nout);

/* Group by the value of `col`, groups in order of first appearance; rows
 * lacking the field form a group with key kind PP_VAL_NONE. */
typedef struct {
  pp_value key;
  size_t n;
  uint32_t *rows;
} pp_group;
int pp_cols_group(const pp_cols *c, size_t col, const uint32_t *sel,
                  size_t nsel, pp_group **groups, size_t *ngroups);
void pp_groups_free(pp_group *g, size_t n);
/* Distinct present values, counted up to `limit`. */
size_t pp_cols_distinct(const pp_cols *c, size_t col, const uint32_t *sel,
                        size_t nsel, size_t limit);

/* Fit of column ycol against xcol over rows where both are present. */
int pp_cols_fit(const pp_cols *c, size_t xcol, size_t ycol,
                const uint32_t *sel, size_t nsel, pp_fit *out);
/* Every y column against every x column (out[b * nx + a]: ycols[b]
 * against xcols[a]), reading each column once. */
int pp_cols_fit_many(const pp_cols *c, const size_t *xcols, size_t nx,
                     const size_t *ycols, size_t ny, const uint32_t *sel,
                     size_t nsel, pp_fit *out);

#ifdef __cplusplus
}
#endif
#endif /* PP_PARSE_H */
