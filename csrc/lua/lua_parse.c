/*
 * lua_parse.c: pp.parse, reading record lines (csrc/parse/parse.c) into
 * column stores, handed to Lua as phaseprobe.columns (lua_cols.c).
 *
 *   local cols, report = pp.parse.file("run.log")        -- or "-" (stdin)
 *   local cols, report = pp.parse.string(text, {prefix = "vyre-cuda-dispatch-phase"})
 *   local cols, report = pp.parse.lines(io.lines("run.log"))
 *   local cols, report = pp.parse.store()                -- the live store
 *   report = {total=, parsed=, rejected=, other=, bytes=, errors = {
 *              {file=, line=, column=, what=}, ...}, files = {...}}
 *
 * A parser object takes several inputs into one store:
 *   local p <close> = pp.parse.new(opts)
 *   p:file("a.log"); p:file("b.log")
 *   local cols, report = p:finish()
 *
 * Options: prefix (string or list: list mode), schemas (list of
 * pp.schema objects: known prefixes), numeric (list of field names that
 * must hold unsigned integers), max_errors, max_bytes (what one input may
 * bring, default pp.parse.max_bytes = 8 GiB), source (name for string/lines
 * input), progress (function(bytes, records), called about every 16 MiB).
 *
 * Unreadable files, and files past max_bytes, give nil, message (what was
 * read stays in a parser object); bad options raise. A parser closed from
 * its own callback (the lines iterator, the progress function) stops and
 * raises once the callback returns. A lines iterator may feed its parser
 * (p:string, p:lines, p:file, p:store): those are sources of their own, and
 * the iterator's lines go on in its source, numbered where they left off; a
 * file's progress function may not (it raises: the file's next line may
 * have begun in the bytes already read).
 *
 * Lists from Lua are read by their raw length (no __len), and every string
 * taken from an options table is anchored until the parser has copied it.
 */
#include "pp_lua.h"
#include "pp_parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PARSER_MT "phaseprobe.parser"

#define MAX_OPT_LIST 64

typedef struct {
  pp_parser *p;
  int closed;
  int busy; /* inside a call that runs a callback: freeing waits for it */
  int in_file; /* reading a file (its progress function may run) */
} parser_ud;

/* ---- options ------------------------------------------------------------- */
typedef struct {
  pp_parse_opts o;
  const char *prefixes[MAX_OPT_LIST];
  const pp_schema *schemas[MAX_OPT_LIST];
  const char *numeric[MAX_OPT_LIST];
} opts_buf;

/* Keeps the value on top alive in the anchor table at `anchor` (a list)
 * until the C function that made that table returns, and pops it. */
static void anchor_top(lua_State *L, int anchor) {
  lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
}

/* The name on top of the stack, for option `field` (entry i; 0: the option
 * itself): C sees it whole or not at all. */
static const char *option_name(lua_State *L, const char *field, int i) {
  if (pp_lua_hasnul(L, -1)) {
    if (i)
      luaL_error(L, "phaseprobe.parse: option '%s'[%d] contains a NUL byte",
                 field, i);
    luaL_error(L, "phaseprobe.parse: option '%s' contains a NUL byte", field);
  }
  return lua_tostring(L, -1);
}

static size_t read_names(lua_State *L, int t, const char *field,
                         const char **out, int anchor) {
  lua_getfield(L, t, field);
  size_t n = 0;
  if (lua_type(L, -1) == LUA_TSTRING) {
    out[n++] = option_name(L, field, 0);
    lua_pushvalue(L, -1);
    anchor_top(L, anchor);
  } else if (lua_istable(L, -1)) {
    lua_Integer len = (lua_Integer)lua_rawlen(L, -1);
    if (len > MAX_OPT_LIST)
      luaL_error(L, "phaseprobe.parse: option '%s': at most %d names", field,
                 MAX_OPT_LIST);
    for (lua_Integer i = 1; i <= len; i++) {
      lua_rawgeti(L, -1, i);
      if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "phaseprobe.parse: option '%s'[%d] must be a string, got %s",
                   field, (int)i, luaL_typename(L, -1));
      out[n++] = option_name(L, field, (int)i);
      anchor_top(L, anchor);
    }
  } else if (!lua_isnil(L, -1)) {
    luaL_error(L, "phaseprobe.parse: option '%s' must be a string or a list of "
                  "strings, got %s",
               field, luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  return n;
}

/* Option `name` of the options table at t: 0 when absent, else a positive
 * integer (raises otherwise; `note` follows the message). */
static lua_Integer opt_positive(lua_State *L, int t, const char *name,
                                const char *note) {
  lua_Integer m = 0;
  if (lua_getfield(L, t, name) != LUA_TNIL) {
    m = lua_tointeger(L, -1);
    if (!lua_isinteger(L, -1) || m < 1)
      luaL_error(L, "phaseprobe.parse: option '%s' must be a positive "
                    "integer%s",
                 name, note);
  }
  lua_pop(L, 1);
  return m;
}

/* Reads the options at t into b. Pushes the table anchoring the strings b
 * points at: the caller pops it once they are copied. */
static void read_opts(lua_State *L, int t, opts_buf *b) {
  memset(b, 0, sizeof *b);
  t = lua_absindex(L, t);
  lua_newtable(L);
  int anchor = lua_gettop(L);
  if (lua_isnoneornil(L, t))
    return;
  luaL_checktype(L, t, LUA_TTABLE);
  b->o.prefixes = b->prefixes;
  b->o.nprefixes = read_names(L, t, "prefix", b->prefixes, anchor);
  b->o.numeric = b->numeric;
  b->o.nnumeric = read_names(L, t, "numeric", b->numeric, anchor);
  lua_getfield(L, t, "schemas");
  if (lua_istable(L, -1)) {
    lua_Integer len = (lua_Integer)lua_rawlen(L, -1);
    if (len > MAX_OPT_LIST)
      luaL_error(L, "phaseprobe.parse: option 'schemas': at most %d", MAX_OPT_LIST);
    for (lua_Integer i = 1; i <= len; i++) {
      lua_rawgeti(L, -1, i);
      const pp_schema *s = pp_lua_test_schema(L, -1);
      if (!s)
        luaL_error(L, "phaseprobe.parse: option 'schemas'[%d] must be a "
                      "phaseprobe.schema, got %s",
                   (int)i, luaL_typename(L, -1));
      b->schemas[b->o.nschemas++] = s;
      lua_pop(L, 1);
    }
    b->o.schemas = b->schemas;
  } else if (!lua_isnil(L, -1)) {
    luaL_error(L, "phaseprobe.parse: option 'schemas' must be a list of "
                  "schemas, got %s",
               luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  b->o.max_errors = (size_t)opt_positive(L, t, "max_errors", "");
  b->o.max_bytes = (uint64_t)opt_positive(L, t, "max_bytes",
                                          " (bytes one input may bring)");
}

static pp_parser *new_parser(lua_State *L, int opts, uint64_t *max_bytes) {
  opts_buf b;
  read_opts(L, opts, &b);
  char err[256];
  pp_parser *p = pp_parser_new(&b.o, err, sizeof err);
  if (!p)
    luaL_error(L, "phaseprobe.parse: %s", err);
  lua_pop(L, 1); /* the anchors: the parser has its own copies */
  *max_bytes = b.o.max_bytes ? b.o.max_bytes : PP_PARSE_MAX_BYTES;
  return p;
}

/* ---- the report ---------------------------------------------------------- */
static void push_stats(lua_State *L, const pp_parse_stats *st) {
  pp_lua_set_int(L, "total", st->total);
  pp_lua_set_int(L, "parsed", st->parsed);
  pp_lua_set_int(L, "rejected", st->rejected);
  pp_lua_set_int(L, "other", st->other);
  pp_lua_set_int(L, "bytes", st->bytes);
  if (st->errors_dropped)
    pp_lua_set_int(L, "errors_dropped", st->errors_dropped);
  lua_pushboolean(L, st->unterminated);
  lua_setfield(L, -2, "unterminated");
}

/* A number field of the table at t, read raw (0 when it is none). */
static lua_Integer raw_int(lua_State *L, int t, const char *k) {
  lua_pushstring(L, k);
  lua_rawget(L, t);
  lua_Integer v = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  return v;
}

static const char *plural(lua_Integer n) { return n == 1 ? "" : "s"; }

/* A report as text: its counts, then its first damaged lines. The text
 * begins on a line of its own: the REPL prints a read's two results on
 * one line, the set (or columns) first, then this. Read with raw access
 * only: no user code runs while it is made. */
static int report_tostring(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer total = raw_int(L, 1, "total"), parsed = raw_int(L, 1, "parsed"),
              rejected = raw_int(L, 1, "rejected"), other = raw_int(L, 1, "other");
  lua_pushfstring(L, "\nphaseprobe.parse_report: %I line%s: %I record%s, %I damaged, "
                     "%I other",
                  total, plural(total), parsed, plural(parsed), rejected, other);
  int acc = lua_gettop(L); /* the text so far */
  lua_Integer shown = 0;
  lua_pushliteral(L, "errors");
  if (lua_rawget(L, 1) == LUA_TTABLE) {
    int errs = lua_gettop(L);
    for (lua_Integer i = 1; i <= 3 && lua_rawgeti(L, errs, i) == LUA_TTABLE; i++) {
      int e = lua_gettop(L);
      lua_pushliteral(L, "file");
      lua_rawget(L, e);
      lua_pushliteral(L, "what");
      lua_rawget(L, e);
      const char *file = lua_tostring(L, -2), *what = lua_tostring(L, -1);
      lua_pushvalue(L, acc);
      lua_pushfstring(L, "\n  %s:%I:%I: %s", file ? file : "?", raw_int(L, e, "line"),
                      raw_int(L, e, "column"), what ? what : "?");
      lua_concat(L, 2);
      lua_replace(L, acc);
      lua_settop(L, errs);
      shown++;
    }
  }
  lua_settop(L, acc);
  if (rejected > shown && shown > 0) {
    lua_pushfstring(L, "\n  (and %I more)", rejected - shown);
    lua_concat(L, 2);
  }
  return 1;
}

static void push_report(lua_State *L, const pp_parser *p) {
  lua_createtable(L, 0, 10);
  (void)pp_lua_class_push(L, &(pp_lua_class){.name = "phaseprobe.parse_report",
                                              .tostring = report_tostring});
  lua_setmetatable(L, -2);
  push_stats(L, pp_parser_stats(p));
  size_t ne = pp_parser_nerrors(p);
  lua_createtable(L, (int)ne, 0);
  for (size_t i = 0; i < ne; i++) {
    const pp_parse_error *e = pp_parser_error(p, i);
    lua_createtable(L, 0, 4);
    lua_pushstring(L, e->source);
    lua_setfield(L, -2, "file");
    pp_lua_set_int(L, "line", e->line);
    pp_lua_set_int(L, "column", e->column);
    lua_pushstring(L, e->what);
    lua_setfield(L, -2, "what");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "errors");
  size_t ns = pp_parser_nsources(p);
  lua_createtable(L, (int)ns, 0);
  for (size_t i = 0; i < ns; i++) {
    lua_createtable(L, 0, 8);
    lua_pushstring(L, pp_parser_source_name(p, i));
    lua_setfield(L, -2, "file");
    push_stats(L, pp_parser_source_stats(p, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "files");
  if (ns == 1) {
    lua_pushstring(L, pp_parser_source_name(p, 0));
    lua_setfield(L, -2, "file");
  }
}

/* ---- parser userdata ----------------------------------------------------- */
static parser_ud *check_parser(lua_State *L) {
  parser_ud *u = pp_lua_checkudata(L, 1, PARSER_MT);
  PP_CHECK_OPEN(L, !u->closed, "parser");
  return u;
}

/* A parser about to be fed: not from the progress function of a file it
 * is reading (the file's next line may have begun in the bytes already
 * read: another source would end it there). A line iterator may feed it:
 * its own lines then go on in their source (feed_lines). */
static parser_ud *check_feedable(lua_State *L) {
  parser_ud *u = check_parser(L);
  if (u->in_file)
    luaL_error(L, "phaseprobe.parse: a parser cannot be fed while it reads a "
                  "file (from that file's progress function)");
  return u;
}

static void parser_free(parser_ud *u) {
  if (u->p) {
    pp_parser_free(u->p);
    u->p = NULL;
  }
}

static void parser_release(parser_ud *u) {
  u->closed = 1;
  if (u->busy == 0)
    parser_free(u);
}

/* Closing while a callback of this parser runs only marks it: the call
 * that runs the callback frees it on its way out; __gc frees it at once. */
PP_LUA_BUSY_CLOSE_GC(parser_close, parser_gc, parser_ud, PARSER_MT,
                     parser_free)

/* Around a call into Lua code from inside a parser method. */
static void parser_enter(parser_ud *u) { u->busy++; }

/* Ends the guard; returns whether the parser was closed meanwhile (it is
 * then freed here, unless an outer call still runs). */
static int parser_leave(parser_ud *u) {
  u->busy--;
  if (!u->closed)
    return 0;
  parser_release(u);
  return 1;
}

static int closed_in_callback(lua_State *L, const char *what) {
  return luaL_error(L, "phaseprobe.parse: %s: the parser was closed inside its "
                       "own callback",
                    what);
}

static int parser_tostring(lua_State *L) {
  parser_ud *u = pp_lua_checkudata(L, 1, PARSER_MT);
  if (u->closed) {
    lua_pushliteral(L, "phaseprobe.parser (closed)");
  } else {
    const pp_parse_stats *st = pp_parser_stats(u->p);
    lua_pushfstring(L, "phaseprobe.parser (%I lines: %I parsed, %I rejected, %I other)",
                    (lua_Integer)st->total, (lua_Integer)st->parsed,
                    (lua_Integer)st->rejected, (lua_Integer)st->other);
  }
  return 1;
}

/* Pushes a parser handle built from the options at `opts`. Its user value
 * holds the cap on one input, for messages. */
static parser_ud *push_parser(lua_State *L, int opts) {
  opts = lua_absindex(L, opts);
  parser_ud *u = pp_lua_newobj(L, sizeof *u, 1);
  u->p = NULL;
  u->closed = 1;
  u->busy = 0;
  pp_lua_setclass(L, PARSER_MT);
  uint64_t cap;
  u->p = new_parser(L, opts, &cap);
  u->closed = 0;
  u->in_file = 0;
  lua_pushinteger(L, (lua_Integer)cap);
  lua_setiuservalue(L, -2, 1);
  return u;
}

/* "NAME: input larger than N bytes ..." for an input past its cap; the
 * parser is the userdata at idx. */
static const char *push_cap_msg(lua_State *L, int idx, const char *name) {
  lua_getiuservalue(L, idx, 1);
  lua_Integer cap = lua_tointeger(L, -1);
  lua_pop(L, 1);
  return lua_pushfstring(L, "%s: input larger than %I bytes (stopped there; "
                            "the option max_bytes raises the limit)",
                         name, cap);
}

/* parse.new([opts]) -> parser */
static int l_new(lua_State *L) {
  lua_settop(L, 1);
  push_parser(L, 1);
  return 1;
}

typedef struct {
  lua_State *L;
  parser_ud *u;
  int fn;
  int failed; /* 1: the callback raised (message on the stack), 2: closed */
} progress_ctx;

static int progress_cb(void *ud, uint64_t bytes, uint64_t records) {
  progress_ctx *x = ud;
  lua_State *L = x->L;
  lua_pushvalue(L, x->fn);
  lua_pushinteger(L, (lua_Integer)bytes);
  lua_pushinteger(L, (lua_Integer)records);
  parser_enter(x->u);
  int rc = lua_pcall(L, 2, 0, 0);
  x->u->busy--; /* parser_leave's freeing waits for pp_parser_file's end */
  if (rc != LUA_OK)
    x->failed = 1; /* its error stays on the stack */
  else if (x->u->closed)
    x->failed = 2;
  return x->failed;
}

/* p:file(path [, progress]) -> true | nil, message; the parser is the
 * userdata at stack index p_idx. */
static int do_file(lua_State *L, int p_idx, const char *path, int fn) {
  parser_ud *u = lua_touserdata(L, p_idx);
  progress_ctx x = {L, u, fn, 0};
  parser_enter(u);
  u->in_file++;
  int rc = pp_parser_file(u->p, path, fn ? progress_cb : NULL, &x);
  u->in_file--;
  int saved = errno;
  int closed = parser_leave(u);
  if (x.failed == 1) {
    const char *m = lua_tostring(L, -1);
    return luaL_error(L, "phaseprobe.parse: progress callback: %s",
                      m ? m : "(error object)");
  }
  if (closed)
    return closed_in_callback(L, "p:file");
  const char *name = strcmp(path, "-") == 0 ? "(stdin)" : path;
  if (rc != 0) {
    luaL_pushfail(L);
    if (saved == EFBIG)
      push_cap_msg(L, p_idx, name);
    else
      lua_pushfstring(L, "%s: %s", name, strerror(saved));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int parser_file(lua_State *L) {
  parser_ud *u = check_feedable(L);
  const char *path = pp_lua_checkcstr(L, 2);
  int fn = 0;
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TFUNCTION);
    fn = 3;
  }
  (void)u;
  return do_file(L, 1, path, fn);
}

/* Raises for a failed feed: out of memory, or past the cap (the parser is
 * the userdata at idx). */
static int feed_failed(lua_State *L, int idx, const char *source) {
  if (errno == EFBIG)
    return luaL_error(L, "phaseprobe.parse: %s", push_cap_msg(L, idx, source));
  return luaL_error(L, "phaseprobe.parse: out of memory");
}

/* Feeds the string at s_idx as a source named by the string at src_idx;
 * the parser is the userdata at p_idx. */
static int feed_string(lua_State *L, int p_idx, int s_idx, int src_idx) {
  parser_ud *u = lua_touserdata(L, p_idx);
  size_t len;
  const char *s = luaL_checklstring(L, s_idx, &len);
  if (pp_lua_hasnul(L, src_idx))
    luaL_error(L, "phaseprobe.parse: a source name contains a NUL byte");
  const char *source = lua_tostring(L, src_idx);
  pp_parser_source(u->p, source);
  if (pp_parser_feed(u->p, s, len) != 0) {
    int e = errno;
    pp_parser_end(u->p);
    errno = e;
    return feed_failed(L, p_idx, source);
  }
  if (pp_parser_end(u->p) != 0)
    return luaL_error(L, "phaseprobe.parse: out of memory");
  return 0;
}

/* p:string(s [, source]) and p:lines(iterator [, source]): the input at 2
 * (checked), the source name at 3 (dflt when nil), fed by feed(parser 1,
 * input 2, source 3); returns the parser. */
static int parser_feed(lua_State *L, const char *dflt,
                       int (*feed)(lua_State *, int, int, int)) {
  luaL_optstring(L, 3, NULL);
  if (lua_isnoneornil(L, 3)) {
    lua_settop(L, 2);
    lua_pushstring(L, dflt);
  }
  feed(L, 1, 2, 3);
  lua_settop(L, 1);
  return 1;
}

static int parser_string(lua_State *L) {
  check_feedable(L);
  luaL_checkstring(L, 2);
  return parser_feed(L, "(string)", feed_string);
}

/* Lines from an iterator (io.lines, string.gmatch, ...) until nil; the
 * parser is the userdata at p_idx, the source name the string at src_idx. */
static int feed_lines(lua_State *L, int p_idx, int it, int src_idx) {
  parser_ud *u = lua_touserdata(L, p_idx);
  luaL_checktype(L, it, LUA_TFUNCTION);
  if (pp_lua_hasnul(L, src_idx))
    luaL_error(L, "phaseprobe.parse: a source name contains a NUL byte");
  pp_parser_source(u->p, lua_tostring(L, src_idx));
  size_t mine = pp_parser_current(u->p);
  for (;;) {
    lua_pushvalue(L, it);
    parser_enter(u);
    int rc = lua_pcall(L, 0, 1, 0);
    size_t len = 0;
    const char *s = NULL;
    /* a number: its text, made while the parser is still busy (making it
     * allocates, which may run a finalizer that closes the parser) */
    if (rc == LUA_OK && !lua_isnil(L, -1))
      s = lua_tolstring(L, -1, &len);
    if (parser_leave(u))
      return closed_in_callback(L, "lines");
    if (rc != LUA_OK)
      return lua_error(L);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      break;
    }
    if (!s)
      return luaL_error(L, "phaseprobe.parse.lines: the iterator returned a %s, "
                           "not a string",
                        luaL_typename(L, -1));
    /* the iterator may have fed this parser another source (p:string,
     * p:lines, p:file): its lines go on in their own */
    if (pp_parser_current(u->p) != mine && pp_parser_resume(u->p, mine) != 0) {
      pp_parser_source(u->p, lua_tostring(L, src_idx));
      mine = pp_parser_current(u->p);
    }
    if (pp_parser_line(u->p, s, len) != 0) {
      int e = errno;
      pp_parser_end(u->p);
      errno = e;
      return feed_failed(L, p_idx, lua_tostring(L, src_idx));
    }
    lua_pop(L, 1);
  }
  pp_parser_end(u->p);
  return 0;
}

static int parser_lines(lua_State *L) {
  check_feedable(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  return parser_feed(L, "(lines)", feed_lines);
}

/* The live store's records, as their lines. */
static int feed_store(lua_State *L, pp_parser *p) {
  pp_parser_source(p, "(store)");
  pp_record *r = malloc(sizeof *r);
  size_t cap = 8192;
  char *line = malloc(cap);
  if (!r || !line) {
    free(r);
    free(line);
    return luaL_error(L, "phaseprobe.parse: out of memory");
  }
  int rc = 0;
  for (size_t i = 0; rc == 0 && pp_store_get(i, r) == 0; i++) {
    size_t n = pp_format_line(r, line, cap);
    rc = pp_parser_line(p, line, n < cap ? n : cap - 1);
  }
  free(r);
  free(line);
  pp_parser_end(p);
  if (rc)
    return luaL_error(L, "phaseprobe.parse: out of memory");
  return 0;
}

static int parser_store(lua_State *L) {
  parser_ud *u = check_feedable(L);
  feed_store(L, u->p);
  lua_settop(L, 1);
  return 1;
}


/* The columns and the report of u's parser. Making them allocates, which
 * may run a finalizer that closes the parser: it is busy meanwhile, so
 * closing only marks it (a raise here, no memory, leaves it busy: it is
 * then freed when collected). */
static int finish(lua_State *L, parser_ud *u) {
  pp_parser *p = u->p;
  pp_parser_end(p);
  pp_cols *c = pp_parser_take(p);
  if (!c)
    return luaL_error(L, "phaseprobe.parse: out of memory");
  parser_enter(u);
  pp_lua_push_cols(L, c);
  push_report(L, p);
  parser_leave(u);
  return 2;
}

/* p:finish() -> columns, report; the parser is closed. */
static int parser_finish(lua_State *L) {
  parser_ud *u = check_parser(L);
  finish(L, u);
  parser_release(u);
  return 2;
}

/* One-shot forms: a temporary parser at stack index 3, closed on the way
 * out (error too). */
static parser_ud *temp_parser(lua_State *L, int opts) {
  parser_ud *u = push_parser(L, opts);
  lua_toclose(L, -1);
  return u;
}

/* Pushes the option 'source' (a string) or dflt. */
static void push_source(lua_State *L, int opts, const char *dflt) {
  if (!lua_istable(L, opts) || lua_getfield(L, opts, "source") == LUA_TNIL) {
    if (lua_istable(L, opts))
      lua_pop(L, 1);
    lua_pushstring(L, dflt);
    return;
  }
  if (lua_type(L, -1) != LUA_TSTRING)
    luaL_error(L, "phaseprobe.parse: option 'source' must be a string, got %s",
               luaL_typename(L, -1));
}

/* parse.file(path [, opts]) -> columns, report | nil, message */
static int l_file(lua_State *L) {
  const char *path = pp_lua_checkcstr(L, 1);
  lua_settop(L, 2);
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "progress"); /* 3 */
    if (!lua_isnil(L, 3))
      luaL_checktype(L, 3, LUA_TFUNCTION);
  } else {
    lua_pushnil(L);
  }
  int fn = lua_isnil(L, 3) ? 0 : 3;
  parser_ud *u = temp_parser(L, 2); /* 4 */
  if (do_file(L, 4, path, fn) == 2)
    return 2;
  lua_pop(L, 1);
  return finish(L, u);
}

/* The one-shot forms of a parser's string and lines: the input at 1, the
 * options at 2, fed by feed(parser 4, input 1, source name 3). */
static int one_shot(lua_State *L, const char *dflt,
                    int (*feed)(lua_State *, int, int, int)) {
  lua_settop(L, 2);
  push_source(L, 2, dflt); /* 3 */
  temp_parser(L, 2);       /* 4 */
  feed(L, 4, 1, 3);
  return finish(L, lua_touserdata(L, 4));
}

/* parse.string(s [, opts]) -> columns, report */
static int l_string(lua_State *L) {
  luaL_checkstring(L, 1);
  return one_shot(L, "(string)", feed_string);
}

/* parse.lines(iterator [, opts]) -> columns, report */
static int l_lines(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  return one_shot(L, "(lines)", feed_lines);
}

/* parse.store([opts]) -> columns, report: the live store's records */
static int l_store(lua_State *L) {
  lua_settop(L, 1);
  parser_ud *u = temp_parser(L, 1);
  feed_store(L, u->p);
  return finish(L, u);
}

/* ---- registration -------------------------------------------------------- */
/* Every method that reads the parser runs through guard: the allocations
 * a method makes (a string, a table) may run a pending finalizer that
 * closes this very parser, which then stays until the method is done
 * (closing only marks it). A method that raises leaves it busy: it is then
 * freed when the handle is collected. */
static int guard(lua_State *L, lua_CFunction method) {
  parser_ud *u = check_parser(L);
  parser_enter(u);
  int n = method(L);
  parser_leave(u);
  return n;
}

#define GUARDED(f)                                                             \
  static int f##_guarded(lua_State *L) { return guard(L, f); }
GUARDED(parser_file)
GUARDED(parser_string)
GUARDED(parser_lines)
GUARDED(parser_store)
GUARDED(parser_finish)

static const luaL_Reg parser_methods[] = {
    {"file", parser_file_guarded},     {"string", parser_string_guarded},
    {"lines", parser_lines_guarded},   {"store", parser_store_guarded},
    {"finish", parser_finish_guarded}, {"close", parser_close},
    {NULL, NULL}};

static const luaL_Reg parse_fns[] = {
    {"new", l_new},           {"file", l_file},
    {"string", l_string},     {"lines", l_lines},
    {"store", l_store},       {"list", pp_lua_parse_list},
    {NULL, NULL}};

int pp_lua_open_parse(lua_State *L) {
  pp_lua_open_cols(L);
  pp_lua_class_new(L, &(pp_lua_class){
      .name = PARSER_MT, .methods = parser_methods, .gc = parser_gc,
      .close = parser_close, .tostring = parser_tostring});
  luaL_newlib(L, parse_fns);
  pp_lua_set_int(L, "max_fields", PP_PARSE_MAX_TOKENS);
  pp_lua_set_int(L, "max_bytes", PP_PARSE_MAX_BYTES);
  pp_lua_set_int(L, "max_line", PP_PARSE_MAX_LINE);
  return 1;
}
