/*
 * ptx_scan.c: one pass over PTX text (see pp_ptx.h): module scope, the
 * function lists, marker counts and the entry points.
 *
 * The scan reads the module's directives with the token reader (ptx_lex.c)
 * and hands what they open to the files of ptx_scanner.h: declarations to
 * ptx_decl.c, each function's body to ptx_body.c. Functions are kept in
 * arena chunks as the scan finds them (a declaration and a later
 * definition of the same name are one function); the first marker is
 * matched body by body as each closes, the others over the whole text at
 * the end. With a feed (pp_ptx_scan_feed) the entries that can no longer
 * change are published to a reader on another thread as the scan goes.
 */
#include "ptx_scanner.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FUNCS ((size_t)1 << 16) /* per list: bounds memory per byte */
#define FCHUNK PP_PTX_FCHUNK        /* functions per chunk */
#define FEED_BATCH 32

/* ---- functions ----------------------------------------------------------------- */
static uint32_t name_hash(const char *p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)p[i]) * 16777619u;
  return h;
}

/* Function i of list k (0 entries, 1 funcs) during the scan. */
static pp_ptx_func *func_at(const scanner *s, int k, size_t i) {
  return &s->chunks[k][i / FCHUNK][i % FCHUNK];
}

/* Takes the declared-only function of this name out of the window. */
static pp_ptx_func *take_declared(scanner *s, int entry, const tok *name,
                                  uint32_t h) {
  int k = entry ? 0 : 1;
  pp_ptx_func **fs = s->decl[k];
  size_t n = s->ndecl[k];
  uint32_t *hs = s->decl_hash[k];
  for (size_t i = n; i-- > 0;) {
    pp_ptx_func *f = fs[i];
    if (hs[i] == h && word_is(name->p, name->len, f->name)) {
      memmove(fs + i, fs + i + 1, (n - i - 1) * sizeof *fs);
      memmove(hs + i, hs + i + 1, (n - i - 1) * sizeof *hs);
      s->ndecl[k]--;
      return f;
    }
  }
  return NULL;
}

static void put_declared(scanner *s, int entry, pp_ptx_func *f) {
  int k = entry ? 0 : 1;
  pp_ptx_func **fs = s->decl[k];
  uint32_t *hs = s->decl_hash[k];
  if (s->ndecl[k] == DECL_WINDOW) { /* the oldest leaves */
    memmove(fs, fs + 1, (DECL_WINDOW - 1) * sizeof *fs);
    memmove(hs, hs + 1, (DECL_WINDOW - 1) * sizeof *hs);
    s->ndecl[k]--;
  }
  fs[s->ndecl[k]] = f;
  hs[s->ndecl[k]++] = name_hash(f->name, strlen(f->name));
}

static pp_ptx_func *new_function(scanner *s, int entry, const tok *name) {
  pp_ptx_result *r = s->r;
  int k = entry ? 0 : 1;
  size_t *n = entry ? &r->nentries : &r->nfuncs;
  pp_ptx_func *f = take_declared(s, entry, name,
                                 name_hash(name->p, name->len));
  if (f) {
    f->params = NULL; /* the latest list wins (the old one stays in the
                         arena until the result is freed) */
    f->nparams = 0;
    f->line = name->line;
    f->col = name->col;
    return f;
  }
  if (*n >= MAX_FUNCS) {
    TERR(s, name, 1, "more than %zu %s; scan stopped", MAX_FUNCS,
         entry ? "entries" : "funcs");
    return NULL;
  }
  if (!s->chunks[k]) {
    if (!(s->chunks[k] = pp_ptx_alloc(s, MAX_FUNCS / FCHUNK * sizeof(void *),
                                     _Alignof(void *))))
      return NULL;
    if (s->feed)
      s->feed->chunks[k] = s->chunks[k];
  }
  if (*n % FCHUNK == 0 &&
      !(s->chunks[k][*n / FCHUNK] = pp_ptx_alloc(
            s, FCHUNK * sizeof *f, _Alignof(pp_ptx_func))))
    return NULL;
  f = func_at(s, k, *n);
  memset(f, 0, sizeof *f);
  if (!(f->name = pp_ptx_dup_word(s, name->p, name->len)))
    return NULL;
  (*n)++;
  f->line = name->line;
  f->col = name->col;
  return f;
}

/* The functions of list k into one array (*out); empty on no memory. */
static void gather(scanner *s, int k, pp_ptx_func **out, size_t *n) {
  *out = NULL;
  if (!*n)
    return;
  pp_ptx_func *a = malloc(*n * sizeof *a);
  if (!a) {
    *n = 0;
    pp_ptx_no_memory(s);
    return;
  }
  for (size_t i = 0; i < *n; i += FCHUNK) {
    size_t m = *n - i < FCHUNK ? *n - i : FCHUNK;
    memcpy(a + i, s->chunks[k][i / FCHUNK], m * sizeof *a);
  }
  *out = a;
}

/* ---- the first marker, body by body ------------------------------------------ */
typedef struct {
  pp_ptx_func *f; /* the body just closed, or NULL */
  size_t base, mlen, last_end;
} marker_run;

static void on_marker(void *ud, size_t pos) {
  marker_run *m = ud;
  size_t at = m->base + pos;
  if (m->f && m->f->body_begin <= at && at + m->mlen <= m->f->body_end)
    m->f->markers++;
  m->last_end = at + m->mlen;
}

/* Matches of the first marker that start before offset `to` (and after
 * those of the previous call), each given to f when it lies wholly inside
 * f's body: called as each body closes, in text order, then for the rest
 * of the text. The bodies do not overlap, so a match can only lie in the
 * first body that ends after its start: the one closing now. */
static void marker_advance(scanner *s, size_t to, pp_ptx_func *f) {
  if (!s->r->nmarkers)
    return;
  size_t len = (size_t)(s->end - s->base), mlen = s->mk_len;
  size_t start = s->mk_pos > s->mk_next ? s->mk_pos : s->mk_next;
  if (to > len)
    to = len;
  if (start < to && mlen <= len - start) {
    size_t span = len - start; /* starts in [start, to) only */
    if (to - start <= span - mlen)
      span = (to - start) + mlen - 1;
    marker_run m = {f, start, mlen, 0};
    uint64_t n = pp_ptx_find_needle(&s->mk, s->base + start, span,
                                    on_marker, &m);
    s->mk_count += n;
    if (n)
      s->mk_next = m.last_end;
  }
  if (to > s->mk_pos)
    s->mk_pos = to;
}

/* After .entry or .func. */
static void parse_function(scanner *s, int entry, linkage lk) {
  const char *kind = entry ? "entry" : "func";
  tok t;
  pp_ptx_next(s, &t);
  if (!entry && is_punct(&t, '(')) { /* return parameters */
    pp_ptx_parse_params(s, NULL, "(return)");
    pp_ptx_next(s, &t);
  }
  if (t.kind != T_WORD || *t.p == '.') {
    if (t.kind == T_EOF)
      TERR(s, &t, 0, "unexpected end of text after .%s", kind);
    else if (t.kind != T_STOP)
      TERR(s, &t, 0, ".%s without a name", kind);
    if (t.kind != T_EOF && t.kind != T_STOP)
      pp_ptx_skip_statement(s, 0);
    return;
  }
  pp_ptx_func *f = new_function(s, entry, &t);
  if (!f)
    return;
  f->visible |= lk.visible;
  f->external |= lk.external;
  f->weak |= lk.weak;
  if (pp_ptx_accept(s, &t, T_PUNCT, '('))
    pp_ptx_parse_params(s, f, f->name);
  for (;;) {
    pp_ptx_next(s, &t);
    if (t.kind == T_STOP)
      return;
    if (is_punct(&t, '{')) {
      f->defined = 1;
      pp_ptx_scan_body(s, f, t.p, kind);
      marker_advance(s, f->body_end, f);
      return;
    }
    if (is_punct(&t, ';')) {
      put_declared(s, entry, f);
      return;
    }
    if (t.kind == T_EOF) {
      TERR(s, &t, 0, "unexpected end of text in the header of %s '%s'", kind,
          f->name);
      return;
    }
    if (t.kind == T_WORD && *t.p == '.') {
      if (!pp_ptx_perf_directive(s, f, &t) && is_word(&t, ".pragma"))
        pp_ptx_skip_statement(s, 0);
      continue; /* .noreturn, .explicitcluster, ... */
    }
    if (t.kind == T_NUM || is_punct(&t, ','))
      continue; /* arguments of directives we do not read */
    TERR(s, &t, 0, "unexpected '%.*s' in the header of %s '%s'", TSHOW(&t), kind, f->name);
    if (is_punct(&t, '}'))
      return;
  }
}

/* ---- module scope ----------------------------------------------------------------- */
/* The next token, when it is of kind k; else 0, the error `what` (unless
 * the scan stopped) and a punctuation mark left to be read again. */
static int expect(scanner *s, tok *t, int k, const char *what) {
  pp_ptx_next(s, t);
  if (t->kind == k)
    return 1;
  if (t->kind != T_STOP)
    TERR(s, t, 0, "%s", what);
  if (t->kind == T_PUNCT)
    s->p = t->p;
  return 0;
}

/* ".version 9.0": one number, kept as written. */
static void read_version(scanner *s, char *out, size_t cap) {
  tok t;
  if (expect(s, &t, T_NUM, ".version without a number"))
    copy_word(out, cap, t.p, t.len);
}

/* ".target sm_90[, texmode_independent ...]": the list, as "a, b". */
static void read_target(scanner *s, char *out, size_t cap) {
  tok t;
  size_t n = 0;
  out[0] = 0;
  for (;;) {
    if (!expect(s, &t, T_WORD, ".target without a name"))
      return;
    if (n && n + 2 < cap)
      out[n++] = ',', out[n++] = ' ';
    for (size_t i = 0; i < t.len && n + 1 < cap; i++)
      out[n++] = t.p[i];
    out[n] = 0;
    if (!pp_ptx_accept(s, &t, T_PUNCT, ','))
      return;
  }
}

/* ".section name { ... }": skipped whole. */
static void skip_section(scanner *s) {
  tok t;
  uint32_t depth = 0;
  do {
    pp_ptx_next(s, &t);
    if (t.kind == T_EOF) {
      TERR(s, &t, 0, "unexpected end of text in a .section");
      return;
    }
    if (is_punct(&t, '{'))
      depth++;
    else if (is_punct(&t, '}') && depth)
      depth--;
  } while (t.kind != T_STOP && (depth || !is_punct(&t, '}')));
}

static void module_directive(scanner *s, tok *t) {
  linkage lk = {0, 0, 0};
  for (;;) {
    if (is_word(t, ".visible"))
      lk.visible = 1;
    else if (is_word(t, ".extern"))
      lk.external = 1;
    else if (is_word(t, ".weak") || is_word(t, ".common"))
      lk.weak = 1;
    else
      break;
    pp_ptx_next(s, t);
  }
  pp_ptx_result *r = s->r;
  if (t->kind != T_WORD || *t->p != '.') {
    if (t->kind == T_EOF)
      TERR(s, t, 0, "unexpected end of text after a linkage directive");
    else if (t->kind != T_STOP) {
      TERR(s, t, 0, "unexpected '%.*s' after a linkage directive", TSHOW(t));
      pp_ptx_skip_statement(s, 1);
    }
    return;
  }
  var_list g = {r->globals, r->nglobals, s->cap_globals};
  if (is_word(t, ".version")) {
    read_version(s, r->version, sizeof r->version);
  } else if (is_word(t, ".target")) {
    read_target(s, r->target, sizeof r->target);
  } else if (is_word(t, ".address_size")) {
    uint32_t n = 0;
    pp_ptx_parse_num1(s, &n, ".address_size");
    r->address_size = n;
  } else if (is_word(t, ".entry") || is_word(t, ".func")) {
    parse_function(s, t->p[1] == 'e', lk);
  } else if (is_word(t, ".global") || is_word(t, ".const") ||
             is_word(t, ".shared") || is_word(t, ".local")) {
    pp_ptx_space sp = t->p[1] == 'g'   ? PP_PTX_GLOBAL
                      : t->p[1] == 'c' ? PP_PTX_CONST
                      : t->p[1] == 's' ? PP_PTX_SHARED
                                       : PP_PTX_LOCAL;
    pp_ptx_parse_var(s, &g, sp, lk);
    r->globals = g.v;
    r->nglobals = g.n;
    s->cap_globals = g.cap;
  } else if (is_word(t, ".file") || is_word(t, ".loc")) {
    pp_ptx_skip_statement(s, 1);
  } else if (is_word(t, ".section")) {
    skip_section(s);
  } else if (is_word(t, ".pragma") || is_word(t, ".alias") ||
             is_word(t, ".tex") || is_word(t, ".callprototype")) {
    pp_ptx_skip_statement(s, 0);
  } else {
    TERR(s, t, 0, "unknown directive '%.*s' at module scope", TSHOW(t));
    pp_ptx_skip_statement(s, 1);
  }
}

/* Publishes the defined entries that follow the published ones: those
 * can no longer change. */
static void publish(scanner *s) {
  const pp_ptx_result *r = s->r;
  size_t k = s->fed;
  while (k < r->nentries && func_at(s, 0, k)->defined)
    k++;
  if (k == s->fed)
    return;
  s->fed = k;
  atomic_store(&s->feed->ready, k);
  if (s->feed->published)
    s->feed->published(s->feed, k);
  /* A sleeping reader is woken for FEED_BATCH entries at a time, not a
   * system call per entry (done wakes it in any case). */
  if (k - s->signalled >= FEED_BATCH && atomic_load(&s->feed->waiting)) {
    s->signalled = k;
    pthread_mutex_lock(&s->feed->mu);
    pthread_cond_signal(&s->feed->cv);
    pthread_mutex_unlock(&s->feed->mu);
  }
}

static void scan_module(scanner *s) {
  tok t;
  while (!s->stop) {
    pp_ptx_next(s, &t);
    if (t.kind == T_EOF || t.kind == T_STOP)
      return;
    if (t.kind == T_WORD && *t.p == '.') {
      module_directive(s, &t);
      if (s->feed)
        publish(s);
    } else if (is_punct(&t, ';'))
      continue;
    else if (is_punct(&t, '}'))
      TERR(s, &t, 0, "'}' without a matching '{'");
    else {
      TERR(s, &t, 0, "unexpected '%.*s' at module scope", TSHOW(&t));
      pp_ptx_skip_statement(s, 1);
    }
  }
}

/* ---- entry point ------------------------------------------------------------------- */
static int bad_opts(pp_ptx_result *out, const char *fmt, const char *arg) {
  out->partial = 1;
  out->nerrors = 1;
  snprintf(out->errors[0].what, sizeof out->errors[0].what, fmt, arg);
  return -1;
}

static int set_opts(const pp_ptx_opts *o, pp_ptx_result *out, scanner *s) {
  static const char *const dflt[] = {PP_PTX_DEFAULT_MARKER};
  const char *const *m = o && o->markers ? o->markers : dflt;
  size_t nm = o && o->markers ? o->nmarkers : 1;
  if (nm > PP_PTX_MAX_MARKERS)
    return bad_opts(out, "more than %s markers", "16");
  for (size_t i = 0; i < nm; i++) {
    size_t l = m[i] ? strlen(m[i]) : 0;
    if (l == 0 || l > PP_PTX_MARKER_MAX)
      return bad_opts(out, "marker %s is empty or longer than 256 bytes",
                      m[i] ? m[i] : "(null)");
    memcpy(out->markers[i], m[i], l + 1);
  }
  out->nmarkers = nm;
  s->counter = o && o->counter_global ? o->counter_global
                                      : PP_PTX_DEFAULT_COUNTER;
  s->counter_len = strlen(s->counter);
  if (s->counter_len > PP_PTX_COUNTER_MAX)
    return bad_opts(out, "counter_global %s is longer than 256 bytes", "");
  s->max_line = o && o->max_line ? o->max_line : PP_PTX_DEFAULT_MAX_LINE;
  return 0;
}

/* Marker counts, module-wide (the bodies had their matches of the first
 * marker as they closed). */
static void count_markers(scanner *s, const char *text, size_t len) {
  pp_ptx_result *r = s->r;
  if (r->nmarkers) {
    marker_advance(s, len, NULL);
    r->marker_count[0] = s->mk_count;
  }
  for (size_t i = 1; i < r->nmarkers; i++)
    r->marker_count[i] = pp_ptx_find_all(text, len, r->markers[i],
                                         strlen(r->markers[i]), NULL, NULL);
  for (int k = 0; k < 2; k++) {
    size_t n = k ? r->nfuncs : r->nentries;
    for (size_t i = 0; i < n; i++) {
      const pp_ptx_func *f = func_at(s, k, i);
      if (f->grid_syncs || f->markers)
        r->grid_sync = 1;
    }
  }
}

static void finish(scanner *s, const char *text, size_t len) {
  pp_ptx_result *r = s->r;
  if (!s->stop && s->p >= s->end && (size_t)(s->end - s->line_start) >
                                         s->max_line)
    pp_ptx_error_at(s, s->line, (uint64_t)s->max_line + 1,
                 (size_t)(s->line_start - s->base) + s->max_line, 1,
                 "line longer than %zu bytes", s->max_line);
  if (s->stop)
    r->lines = pp_ptx_count_lines(text, len);
  else
    r->lines = (s->line - 1) + (len > 0 && text[len - 1] != '\n');
  count_markers(s, text, len);
  for (size_t i = 0; s->counter_len && i < r->nglobals; i++)
    if (r->globals[i].space == PP_PTX_GLOBAL &&
        strcmp(r->globals[i].name, s->counter) == 0)
      r->counter_global = 1;
  r->have_digest = pp_ptx_have_digest();
  if (!s->feed || !s->feed->no_digest)
    r->digest = pp_ptx_digest(text, len);
  if (!s->feed) {
    gather(s, 0, &r->entries, &r->nentries);
    gather(s, 1, &r->funcs, &r->nfuncs);
  }
}

static int scan(const char *text, size_t len, const pp_ptx_opts *opts,
                pp_ptx_result *out, pp_ptx_feed *feed) {
  memset(out, 0, sizeof *out);
  if (!text && len)
    return bad_opts(out, "text is NULL with length %s", "> 0");
  if (!text)
    text = "";
  scanner s;
  memset(&s, 0, sizeof s);
  if (set_opts(opts, out, &s) != 0)
    return -1;
  s.base = s.p = s.line_start = text;
  s.end = text + len;
  s.line = 1;
  s.r = out;
  s.feed = feed;
  s.lines = feed && feed->plain_lines ? pp_ptx_lines_none : pp_ptx_pick_lines();
  s.mk_len = out->nmarkers ? strlen(out->markers[0]) : 0;
  pp_ptx_needle_init(&s.mk, out->markers[0], s.mk_len);
  out->bytes = len;
  scan_module(&s);
  finish(&s, text, len);
  free(s.pend);
  free(s.bvars.v);
  free(s.copies);
  return out->partial ? 1 : 0;
}

PP_EXPORT int pp_ptx_scan(const char *text, size_t len,
                          const pp_ptx_opts *opts, pp_ptx_result *out) {
  if (!out)
    return -1;
  return scan(text, len, opts, out, NULL);
}

int pp_ptx_scan_feed(const char *text, size_t len, const pp_ptx_opts *opts,
                     pp_ptx_result *out, pp_ptx_feed *feed) {
  int rc = scan(text, len, opts, out, feed);
  feed->rc = rc;
  atomic_store(&feed->ready, out->nentries);
  atomic_store(&feed->done, 1);
  pthread_mutex_lock(&feed->mu);
  pthread_cond_signal(&feed->cv);
  pthread_mutex_unlock(&feed->mu);
  return rc;
}

PP_EXPORT void pp_ptx_result_free(pp_ptx_result *r) {
  if (!r)
    return;
  free(r->entries);
  free(r->funcs);
  free(r->globals);
  pp_ptx_arena_free(r);
  r->entries = r->funcs = NULL;
  r->globals = NULL;
  r->nentries = r->nfuncs = r->nglobals = 0;
}
