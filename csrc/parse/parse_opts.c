/*
 * parse_opts.c: a parser built from its options, and freed. pp_parser_new
 * checks pp_parse_opts (prefix words, numeric field names) and turns it into
 * the parser's own copies: the prefixes that alone make a line a record
 * line, the known schemas (the reference's, ours, or those given) with the
 * fields their lines must carry and their integer fields, the names whose
 * values must be unsigned integers, and the caps on errors kept and bytes
 * read from one source. parse.c then reads lines against these and never
 * changes them; pp_parser_free releases them with everything parse.c
 * gathered (sources, errors, the pending partial line, the store).
 */
#include "pp_parse_internal.h"
#include "pp_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_strict(pp_parser *p, const char *name) {
  for (size_t i = 0; i < p->nstrict; i++)
    if (strcmp(p->strict[i], name) == 0)
      return 0;
  char **ns = realloc(p->strict, (p->nstrict + 1) * sizeof *ns);
  if (!ns)
    return -1;
  p->strict = ns;
  if (!(ns[p->nstrict] = dup_n(name, strlen(name))))
    return -1;
  p->nstrict++;
  return 0;
}

/* A known schema: its prefix, the reference's part of its line (required)
 * and its integer fields (numeric). */
static int add_known(pp_parser *p, const pp_schema *s) {
  for (size_t i = 0; i < p->nknown; i++)
    if (strcmp(p->known[i].prefix, s->prefix) == 0)
      return 0; /* first declaration of a prefix wins */
  known_t *nk = realloc(p->known, (p->nknown + 1) * sizeof *nk);
  if (!nk)
    return -1;
  p->known = nk;
  known_t *k = &nk[p->nknown];
  memset(k, 0, sizeof *k);
  k->plen = strlen(s->prefix);
  if (!(k->prefix = dup_n(s->prefix, k->plen)))
    return -1;
  p->nknown++;
  size_t nreq = (size_t)s->f_disk0;
  if (!(k->req = calloc(nreq ? nreq : 1, sizeof *k->req)))
    return -1;
  for (size_t i = 0; i < nreq; i++) {
    if (!(k->req[i] = dup_n(s->field[i], strlen(s->field[i]))))
      return -1;
    k->nreq++;
  }
  for (size_t i = 0; i < s->nfields; i++)
    if (s->kind[i] == PP_FIELD_U64 && add_strict(p, s->field[i]) != 0)
      return -1;
  return 0;
}

static int setup(pp_parser *p, const pp_parse_opts *o, char *err,
                 size_t errlen) {
  for (size_t i = 0; o && i < o->nprefixes; i++) {
    const char *pre = o->prefixes[i];
    size_t n = pre ? strlen(pre) : 0;
    int ok = n > 0 && n < PP_PREFIX_MAX;
    for (size_t j = 0; ok && j < n; j++)
      ok = !blank(pre[j]) && (unsigned char)pre[j] > ' ' && pre[j] != '=';
    if (!ok) {
      snprintf(err, errlen,
               "prefix %zu ('%.40s'): 1 to %d bytes without blanks or '='",
               i + 1, pre ? pre : "(null)", PP_PREFIX_MAX - 1);
      return -1;
    }
  }
  if (o && o->nprefixes) {
    p->prefixes = calloc(o->nprefixes, sizeof *p->prefixes);
    p->plens = calloc(o->nprefixes, sizeof *p->plens);
    if (!p->prefixes || !p->plens)
      goto oom;
    for (size_t i = 0; i < o->nprefixes; i++) {
      p->plens[i] = strlen(o->prefixes[i]);
      if (!(p->prefixes[i] = dup_n(o->prefixes[i], p->plens[i])))
        goto oom;
      p->nprefixes++;
    }
  }
  if (o && o->schemas) {
    for (size_t i = 0; i < o->nschemas; i++)
      if (o->schemas[i] && add_known(p, o->schemas[i]) != 0)
        goto oom;
  } else if (add_known(p, pp_schema_default()) != 0 ||
             add_known(p, pp_schema_current()) != 0) {
    goto oom;
  }
  for (size_t i = 0; o && i < o->nnumeric; i++) {
    const char *nm = o->numeric[i];
    size_t n = nm ? strlen(nm) : 0;
    if (!pp_parse_name_ok(nm, n)) {
      snprintf(err, errlen,
               "numeric field %zu ('%.40s'): names are 1 to %d bytes of "
               "[A-Za-z0-9_]",
               i + 1, nm ? nm : "(null)", NAME_MAX_LEN);
      return -1;
    }
    if (add_strict(p, nm) != 0)
      goto oom;
  }
  p->max_errors = o && o->max_errors ? o->max_errors : PP_PARSE_MAX_ERRORS;
  p->max_bytes = o && o->max_bytes ? o->max_bytes : PP_PARSE_MAX_BYTES;
  return 0;
oom:
  snprintf(err, errlen, "out of memory");
  return -1;
}

PP_EXPORT pp_parser *pp_parser_new(const pp_parse_opts *opts, char *err, size_t errlen) {
  pp_parse_classes_once();
  char dummy[8];
  if (!err || !errlen) {
    err = dummy;
    errlen = sizeof dummy;
  }
  pp_parser *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  p->cols = pp_cols_new();
  if (!p->cols) {
    snprintf(err, errlen, "out of memory");
    pp_parser_free(p);
    return NULL;
  }
  if (setup(p, opts, err, errlen) != 0) {
    pp_parser_free(p);
    return NULL;
  }
  return p;
}

PP_EXPORT void pp_parser_free(pp_parser *p) {
  if (!p)
    return;
  pp_cols_free(p->cols);
  for (size_t i = 0; i < p->nprefixes; i++)
    free(p->prefixes[i]);
  free(p->prefixes);
  free(p->plens);
  for (size_t i = 0; i < p->nknown; i++) {
    free(p->known[i].prefix);
    for (size_t j = 0; j < p->known[i].nreq; j++)
      free(p->known[i].req[j]);
    free(p->known[i].req);
  }
  free(p->known);
  for (size_t i = 0; i < p->nstrict; i++)
    free(p->strict[i]);
  free(p->strict);
  for (size_t i = 0; i < p->nsrc; i++)
    free(p->src[i].name);
  free(p->src);
  for (size_t i = 0; i < p->nerr; i++)
    free((char *)p->err[i].what);
  free(p->err);
  free(p->carry);
  free(p);
}
