/*
 * lua_parse.c: pp.parse, reading record lines into column stores, and the
 * store's query methods that the Lua record sets (lua/phaseprobe/records.lua)
 * are built on.
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
 * raises once the callback returns.
 *
 * Lists from Lua are read by their raw length (no __len), and every string
 * taken from an options table is anchored until the parser has copied it.
 */
#include "pp_lua.h"
#include "pp_cols_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PARSER_MT "phaseprobe.parser"
#define COLS_MT "phaseprobe.columns"
#define SEL_MT "phaseprobe.selection"
#define SCHEMA_MT "phaseprobe.schema"

#define MAX_OPT_LIST 64

typedef struct {
  pp_parser *p;
  int closed;
  int busy; /* inside a call that runs a callback: freeing waits for it */
} parser_ud;

typedef pp_lua_cols cols_ud;

typedef struct {
  size_t n;
  uint32_t rows[];
} sel_ud;

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

static size_t read_names(lua_State *L, int t, const char *field,
                         const char **out, int anchor) {
  lua_getfield(L, t, field);
  size_t n = 0;
  if (lua_type(L, -1) == LUA_TSTRING) {
    out[n++] = lua_tostring(L, -1);
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
      out[n++] = lua_tostring(L, -1);
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
      const pp_schema **s = luaL_testudata(L, -1, SCHEMA_MT);
      if (!s)
        luaL_error(L, "phaseprobe.parse: option 'schemas'[%d] must be a "
                      "phaseprobe.schema, got %s",
                   (int)i, luaL_typename(L, -1));
      b->schemas[b->o.nschemas++] = *s;
      lua_pop(L, 1);
    }
    b->o.schemas = b->schemas;
  } else if (!lua_isnil(L, -1)) {
    luaL_error(L, "phaseprobe.parse: option 'schemas' must be a list of "
                  "schemas, got %s",
               luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  lua_getfield(L, t, "max_errors");
  if (!lua_isnil(L, -1)) {
    lua_Integer m = lua_tointeger(L, -1);
    if (!lua_isinteger(L, -1) || m < 1)
      luaL_error(L, "phaseprobe.parse: option 'max_errors' must be a positive "
                    "integer");
    b->o.max_errors = (size_t)m;
  }
  lua_pop(L, 1);
  lua_getfield(L, t, "max_bytes");
  if (!lua_isnil(L, -1)) {
    lua_Integer m = lua_tointeger(L, -1);
    if (!lua_isinteger(L, -1) || m < 1)
      luaL_error(L, "phaseprobe.parse: option 'max_bytes' must be a positive "
                    "integer (bytes one input may bring)");
    b->o.max_bytes = (uint64_t)m;
  }
  lua_pop(L, 1);
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
static void set_int(lua_State *L, const char *k, uint64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

static void push_stats(lua_State *L, const pp_parse_stats *st) {
  set_int(L, "total", st->total);
  set_int(L, "parsed", st->parsed);
  set_int(L, "rejected", st->rejected);
  set_int(L, "other", st->other);
  set_int(L, "bytes", st->bytes);
  if (st->errors_dropped)
    set_int(L, "errors_dropped", st->errors_dropped);
  lua_pushboolean(L, st->unterminated);
  lua_setfield(L, -2, "unterminated");
}

static void push_report(lua_State *L, const pp_parser *p) {
  lua_createtable(L, 0, 10);
  push_stats(L, pp_parser_stats(p));
  size_t ne = pp_parser_nerrors(p);
  lua_createtable(L, (int)ne, 0);
  for (size_t i = 0; i < ne; i++) {
    const pp_parse_error *e = pp_parser_error(p, i);
    lua_createtable(L, 0, 4);
    lua_pushstring(L, e->source);
    lua_setfield(L, -2, "file");
    set_int(L, "line", e->line);
    set_int(L, "column", e->column);
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

/* ---- columns userdata ---------------------------------------------------- */
void pp_lua_push_cols(lua_State *L, pp_cols *c) {
  cols_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
  u->c = c;
  u->closed = 0;
  luaL_setmetatable(L, COLS_MT);
  lua_newtable(L); /* layout -> field list of its records (lua_record.c) */
  lua_setiuservalue(L, -2, 1);
}

static pp_cols *check_cols(lua_State *L, int i) {
  cols_ud *u = luaL_checkudata(L, i, COLS_MT);
  PP_CHECK_OPEN(L, !u->closed, "columns");
  return u->c;
}

/* ---- parser userdata ----------------------------------------------------- */
static parser_ud *check_parser(lua_State *L) {
  parser_ud *u = luaL_checkudata(L, 1, PARSER_MT);
  PP_CHECK_OPEN(L, !u->closed, "parser");
  return u;
}

static void parser_release(parser_ud *u) {
  u->closed = 1;
  if (u->busy == 0 && u->p) {
    pp_parser_free(u->p);
    u->p = NULL;
  }
}

/* Closing while a callback of this parser runs only marks it: the call
 * that runs the callback frees it on its way out. */
static int parser_close(lua_State *L) {
  parser_release(luaL_checkudata(L, 1, PARSER_MT));
  return 0;
}

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
  parser_ud *u = luaL_checkudata(L, 1, PARSER_MT);
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
  parser_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
  u->p = NULL;
  u->closed = 1;
  u->busy = 0;
  luaL_setmetatable(L, PARSER_MT);
  uint64_t cap;
  u->p = new_parser(L, opts, &cap);
  u->closed = 0;
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
  int rc = pp_parser_file(u->p, path, fn ? progress_cb : NULL, &x);
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
  parser_ud *u = check_parser(L);
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

static int parser_string(lua_State *L) {
  check_parser(L);
  luaL_checkstring(L, 2);
  luaL_optstring(L, 3, NULL);
  if (lua_isnoneornil(L, 3)) {
    lua_settop(L, 2);
    lua_pushliteral(L, "(string)");
  }
  feed_string(L, 1, 2, 3);
  lua_settop(L, 1);
  return 1;
}

/* Lines from an iterator (io.lines, string.gmatch, ...) until nil; the
 * parser is the userdata at p_idx, the source name the string at src_idx. */
static int feed_lines(lua_State *L, int p_idx, int it, int src_idx) {
  parser_ud *u = lua_touserdata(L, p_idx);
  luaL_checktype(L, it, LUA_TFUNCTION);
  if (pp_lua_hasnul(L, src_idx))
    luaL_error(L, "phaseprobe.parse: a source name contains a NUL byte");
  pp_parser_source(u->p, lua_tostring(L, src_idx));
  for (;;) {
    lua_pushvalue(L, it);
    parser_enter(u);
    int rc = lua_pcall(L, 0, 1, 0);
    if (parser_leave(u))
      return closed_in_callback(L, "lines");
    if (rc != LUA_OK)
      return lua_error(L);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      break;
    }
    size_t len;
    const char *s = lua_tolstring(L, -1, &len); /* a number: its text */
    if (!s)
      return luaL_error(L, "phaseprobe.parse.lines: the iterator returned a %s, "
                           "not a string",
                        luaL_typename(L, -1));
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
  check_parser(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  luaL_optstring(L, 3, NULL);
  if (lua_isnoneornil(L, 3)) {
    lua_settop(L, 2);
    lua_pushliteral(L, "(lines)");
  }
  feed_lines(L, 1, 2, 3);
  lua_settop(L, 1);
  return 1;
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
  parser_ud *u = check_parser(L);
  feed_store(L, u->p);
  lua_settop(L, 1);
  return 1;
}


/* p:finish() -> columns, report; the parser is closed. */
static int finish(lua_State *L, pp_parser *p) {
  pp_parser_end(p);
  pp_cols *c = pp_parser_take(p);
  if (!c)
    return luaL_error(L, "phaseprobe.parse: out of memory");
  pp_lua_push_cols(L, c);
  push_report(L, p);
  return 2;
}

static int parser_finish(lua_State *L) {
  parser_ud *u = check_parser(L);
  finish(L, u->p);
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
  return finish(L, u->p);
}

/* parse.string(s [, opts]) -> columns, report */
static int l_string(lua_State *L) {
  luaL_checkstring(L, 1);
  lua_settop(L, 2);
  push_source(L, 2, "(string)"); /* 3 */
  temp_parser(L, 2);             /* 4 */
  feed_string(L, 4, 1, 3);
  return finish(L, ((parser_ud *)lua_touserdata(L, 4))->p);
}

/* parse.lines(iterator [, opts]) -> columns, report */
static int l_lines(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 2);
  push_source(L, 2, "(lines)"); /* 3 */
  temp_parser(L, 2);            /* 4 */
  feed_lines(L, 4, 1, 3);
  return finish(L, ((parser_ud *)lua_touserdata(L, 4))->p);
}

/* parse.store([opts]) -> columns, report: the live store's records */
static int l_store(lua_State *L) {
  lua_settop(L, 1);
  parser_ud *u = temp_parser(L, 1);
  feed_store(L, u->p);
  return finish(L, u->p);
}

/* ---- selections ---------------------------------------------------------- */
static sel_ud *push_sel(lua_State *L, int cols_idx, const uint32_t *rows,
                        size_t n) {
  cols_idx = lua_absindex(L, cols_idx);
  sel_ud *s = lua_newuserdatauv(L, sizeof *s + n * sizeof(uint32_t), 1);
  s->n = n;
  if (n)
    memcpy(s->rows, rows, n * sizeof *rows);
  luaL_setmetatable(L, SEL_MT);
  lua_pushvalue(L, cols_idx);
  lua_setiuservalue(L, -2, 1);
  return s;
}

/* The optional selection argument: NULL for all rows. */
static const uint32_t *opt_sel(lua_State *L, int arg, int cols_idx,
                               size_t *n) {
  *n = 0;
  if (lua_isnoneornil(L, arg))
    return NULL;
  sel_ud *s = luaL_checkudata(L, arg, SEL_MT);
  lua_getiuservalue(L, arg, 1);
  int same = lua_rawequal(L, -1, cols_idx);
  lua_pop(L, 1);
  luaL_argcheck(L, same, arg, "selection made from another record store");
  *n = s->n;
  return s->rows;
}

static size_t nrows(const pp_cols *c, const uint32_t *sel, size_t nsel) {
  return sel ? nsel : pp_cols_count(c);
}

static int sel_len(lua_State *L) {
  sel_ud *s = luaL_checkudata(L, 1, SEL_MT);
  lua_pushinteger(L, (lua_Integer)s->n);
  return 1;
}

/* sel:indices() -> {row, ...} (1-based) */
static int sel_indices(lua_State *L) {
  sel_ud *s = luaL_checkudata(L, 1, SEL_MT);
  lua_createtable(L, (int)s->n, 0);
  for (size_t i = 0; i < s->n; i++) {
    lua_pushinteger(L, (lua_Integer)s->rows[i] + 1);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* sel:get(i) -> row (1-based), nil past the end */
static int sel_get(lua_State *L) {
  sel_ud *s = luaL_checkudata(L, 1, SEL_MT);
  lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 1 || (size_t)i > s->n)
    return 0;
  lua_pushinteger(L, (lua_Integer)s->rows[i - 1] + 1);
  return 1;
}

static int sel_tostring(lua_State *L) {
  sel_ud *s = luaL_checkudata(L, 1, SEL_MT);
  lua_pushfstring(L, "phaseprobe.selection (%d records)", (int)s->n);
  return 1;
}

/* ---- column methods ------------------------------------------------------ */
static int col_of(lua_State *L, const pp_cols *c, int arg) {
  return pp_cols_find(c, pp_lua_checkcstr(L, arg));
}

static int cols_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)pp_cols_count(check_cols(L, 1)));
  return 1;
}

static int cols_fields(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  size_t n = pp_cols_nfields(c);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, pp_cols_name(c, pp_cols_field_column(c, i)));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static int cols_kind(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  int col = col_of(L, c, 2);
  static const char *const names[] = {"none", "integer", "number", "string"};
  if (col < 0)
    return 0;
  lua_pushstring(L, names[pp_cols_kind(c, (size_t)col)]);
  return 1;
}

static size_t check_row(lua_State *L, const pp_cols *c, int arg) {
  lua_Integer i = luaL_checkinteger(L, arg);
  luaL_argcheck(L, i >= 1 && (size_t)i <= pp_cols_count(c), arg,
                "record index out of range");
  return (size_t)i - 1;
}

/* cols:row(i [, {field, ...}]) -> the record (phaseprobe.record) */
static int cols_row(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  size_t row = check_row(L, c, 2);
  pp_lua_push_row(L, 1, row, 3);
  return 1;
}

/* cols:get(i, name) -> value or nil ("@file", "@line" too) */
static int cols_get(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  size_t row = check_row(L, c, 2);
  int col = col_of(L, c, 3);
  if (col < 0)
    return 0;
  pp_value v;
  pp_cols_get(c, (size_t)col, row, &v);
  pp_lua_push_value(L, &v, pp_cols_unsigned(c, (size_t)col));
  return 1;
}

/* cols:line(i) -> the record's line */
static int cols_line(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  size_t row = check_row(L, c, 2);
  char small[1024];
  size_t n = pp_cols_format(c, row, small, sizeof small);
  if (n < sizeof small) {
    lua_pushlstring(L, small, n);
    return 1;
  }
  luaL_Buffer b;
  char *big = luaL_buffinitsize(L, &b, n + 1);
  pp_cols_format(c, row, big, n + 1);
  luaL_pushresultsize(&b, n);
  return 1;
}

/* cols:values(name [, sel]) -> {present values, in row order} */
static int cols_values(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  int col = col_of(L, c, 2);
  size_t nsel;
  const uint32_t *sel = opt_sel(L, 3, 1, &nsel);
  size_t n = nrows(c, sel, nsel);
  lua_createtable(L, col < 0 ? 0 : (int)n, 0);
  if (col < 0)
    return 1;
  lua_Integer out = 1;
  pp_value v;
  int uns = pp_cols_unsigned(c, (size_t)col);
  for (size_t i = 0; i < n; i++) {
    pp_cols_get(c, (size_t)col, sel ? sel[i] : i, &v);
    if (v.kind == PP_VAL_NONE)
      continue;
    pp_lua_push_value(L, &v, uns);
    lua_rawseti(L, -2, out++);
  }
  return 1;
}

static void set_num(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

/* An exact integer, or a float when it does not fit a Lua integer as the
 * unsigned value it is. */
static void set_exact(lua_State *L, const char *k, int64_t v, int uns) {
  if (uns && v < 0)
    lua_pushnumber(L, (double)(uint64_t)v);
  else
    lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

static void push_summary(lua_State *L, const pp_summary *s, int uns) {
  lua_createtable(L, 0, 9);
  lua_pushinteger(L, (lua_Integer)s->count);
  lua_setfield(L, -2, "count");
  if (s->count == 0)
    return;
  if (s->exact) {
    set_exact(L, "min", s->imin, uns);
    set_exact(L, "max", s->imax, uns);
    if (s->isum_fits)
      set_exact(L, "sum", s->isum, 0);
    else
      set_num(L, "sum", s->sum);
  } else {
    set_num(L, "min", s->min);
    set_num(L, "max", s->max);
    set_num(L, "sum", s->sum);
  }
  set_num(L, "mean", s->mean);
  set_num(L, "median", s->median);
  set_num(L, "p90", s->p90);
  set_num(L, "p99", s->p99);
}

/* cols:summary(name [, sel]) -> {count, min, median, mean, p90, p99, max, sum} */
static int cols_summary(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  int col = col_of(L, c, 2);
  size_t nsel;
  const uint32_t *sel = opt_sel(L, 3, 1, &nsel);
  pp_summary s;
  memset(&s, 0, sizeof s);
  if (col >= 0 && pp_cols_summary(c, (size_t)col, sel, nsel, &s) != 0)
    return luaL_error(L, "phaseprobe.columns: out of memory");
  push_summary(L, &s, col >= 0 && pp_cols_unsigned(c, (size_t)col));
  return 1;
}

static void push_fit(lua_State *L, const pp_fit *f) {
  lua_createtable(L, 0, 10);
  lua_pushinteger(L, (lua_Integer)f->n);
  lua_setfield(L, -2, "n");
  lua_pushinteger(L, (lua_Integer)f->distinct_x);
  lua_setfield(L, -2, "distinct_x");
  lua_pushboolean(L, f->ok);
  lua_setfield(L, -2, "ok");
  if (f->n == 0)
    return;
  set_num(L, "xmin", f->xmin);
  set_num(L, "xmax", f->xmax);
  set_num(L, "ymedian", f->ymedian);
  lua_createtable(L, 0, 3);
  set_num(L, "intercept", f->ls_intercept);
  set_num(L, "slope", f->ls_slope);
  set_num(L, "r2", f->ls_r2);
  lua_setfield(L, -2, "ls");
  lua_createtable(L, 0, 6);
  set_num(L, "intercept", f->ts_intercept);
  set_num(L, "slope", f->ts_slope);
  set_num(L, "r2", f->ts_r2);
  set_num(L, "quality", f->ts_quality);
  lua_pushinteger(L, (lua_Integer)f->ts_pairs);
  lua_setfield(L, -2, "pairs");
  lua_pushboolean(L, f->ts_sampled);
  lua_setfield(L, -2, "sampled");
  lua_setfield(L, -2, "ts");
}

/* cols:fit(xname, yname [, sel]) -> fit table */
static int cols_fit(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  int xc = col_of(L, c, 2), yc = col_of(L, c, 3);
  size_t nsel;
  const uint32_t *sel = opt_sel(L, 4, 1, &nsel);
  pp_fit f;
  memset(&f, 0, sizeof f);
  if (xc >= 0 && yc >= 0 &&
      pp_cols_fit(c, (size_t)xc, (size_t)yc, sel, nsel, &f) != 0)
    return luaL_error(L, "phaseprobe.columns: out of memory");
  push_fit(L, &f);
  return 1;
}

/* Reads a list of field names into column indices (-1: absent). */
static size_t read_cols(lua_State *L, const pp_cols *c, int arg, int *out,
                        size_t max) {
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_Integer n = (lua_Integer)lua_rawlen(L, arg);
  luaL_argcheck(L, n >= 0 && (size_t)n <= max, arg, "too many names");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, arg, i);
    out[i - 1] = pp_cols_find(c, pp_lua_checkcstr(L, -1));
    lua_pop(L, 1);
  }
  return (size_t)n;
}

/* cols:fits({x...}, {y...} [, sel]) -> {[y] = {[x] = fit}}: every y against
 * every x, reading each column once */
static int cols_fits(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  int xi[256], yi[256];
  size_t nx = read_cols(L, c, 2, xi, 256), ny = read_cols(L, c, 3, yi, 256);
  size_t nsel;
  const uint32_t *sel = opt_sel(L, 4, 1, &nsel);
  size_t xc[256], yc[256], kx = 0, ky = 0;
  for (size_t a = 0; a < nx; a++)
    if (xi[a] >= 0)
      xc[kx++] = (size_t)xi[a];
  for (size_t b = 0; b < ny; b++)
    if (yi[b] >= 0)
      yc[ky++] = (size_t)yi[b];
  size_t nf = kx * ky > 0 ? kx * ky : 1;
  pp_fit *f = lua_newuserdatauv(L, nf * sizeof *f, 0);
  memset(f, 0, nf * sizeof *f);
  if (kx && ky && pp_cols_fit_many(c, xc, kx, yc, ky, sel, nsel, f) != 0)
    return luaL_error(L, "phaseprobe.columns: out of memory");
  pp_fit empty;
  memset(&empty, 0, sizeof empty);
  lua_createtable(L, 0, (int)ny);
  for (size_t b = 0, jb = 0; b < ny; b++) {
    lua_createtable(L, 0, (int)nx);
    for (size_t a = 0, ja = 0; a < nx; a++) {
      if (yi[b] >= 0 && xi[a] >= 0)
        push_fit(L, &f[jb * kx + ja]);
      else
        push_fit(L, &empty);
      lua_rawgeti(L, 2, (lua_Integer)a + 1);
      lua_insert(L, -2);
      lua_rawset(L, -3);
      if (xi[a] >= 0)
        ja++;
    }
    lua_rawgeti(L, 3, (lua_Integer)b + 1);
    lua_insert(L, -2);
    lua_rawset(L, -3);
    if (yi[b] >= 0)
      jb++;
  }
  return 1;
}

/* cols:lincomb({{name, coef}, ...} [, sel [, floor]]) -> summary of the
 * per-record sums (records lacking a term are left out; with floor, sums
 * below it count as floor) */
static int cols_lincomb(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  size_t nsel;
  const uint32_t *sel = opt_sel(L, 3, 1, &nsel);
  int clamp = !lua_isnoneornil(L, 4);
  double floor = clamp ? luaL_checknumber(L, 4) : 0;
  lua_Integer nt = (lua_Integer)lua_rawlen(L, 2);
  luaL_argcheck(L, nt >= 1 && nt <= 256, 2, "1 to 256 terms");
  size_t cols[256];
  double coef[256];
  int missing = 0;
  for (lua_Integer i = 1; i <= nt; i++) {
    lua_rawgeti(L, 2, i);
    luaL_argcheck(L, lua_istable(L, -1), 2, "each term is {name, coefficient}");
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    int col = pp_cols_find(c, pp_lua_checkcstr(L, -2));
    coef[i - 1] = luaL_checknumber(L, -1);
    if (col < 0)
      missing = 1;
    else
      cols[i - 1] = (size_t)col;
    lua_pop(L, 3);
  }
  pp_summary s;
  memset(&s, 0, sizeof s);
  if (!missing) {
    size_t n = nrows(c, sel, nsel);
    double *out = malloc((n ? n : 1) * sizeof *out);
    if (!out)
      return luaL_error(L, "phaseprobe.columns: out of memory");
    size_t m = pp_cols_lincomb(c, cols, coef, (size_t)nt, sel, nsel, clamp,
                               floor, out);
    pp_summarize(out, m, &s);
    free(out);
  }
  push_summary(L, &s, 0);
  return 1;
}

static void check_value(lua_State *L, int arg, pp_value *v) {
  memset(v, 0, sizeof *v);
  switch (lua_type(L, arg)) {
  case LUA_TNIL:
  case LUA_TNONE:
    v->kind = PP_VAL_NONE;
    break;
  case LUA_TNUMBER:
    if (lua_isinteger(L, arg)) {
      v->kind = PP_VAL_INT;
      v->i = (int64_t)lua_tointeger(L, arg);
    } else {
      v->kind = PP_VAL_NUM;
      v->d = lua_tonumber(L, arg);
    }
    break;
  case LUA_TSTRING:
    v->kind = PP_VAL_STR;
    v->s = lua_tolstring(L, arg, &v->len);
    break;
  default:
    luaL_argerror(L, arg, lua_pushfstring(L, "a value is a number, a string or "
                                             "nil, not %s",
                                          luaL_typename(L, arg)));
  }
}

/* cols:where(name, value [, sel]) -> selection (value nil: records lacking
 * the field) */
static int cols_where(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  int col = col_of(L, c, 2);
  pp_value v;
  check_value(L, 3, &v);
  size_t nsel;
  const uint32_t *sel = opt_sel(L, 4, 1, &nsel);
  size_t n = nrows(c, sel, nsel);
  uint32_t *out = lua_newuserdatauv(L, (n ? n : 1) * sizeof *out, 0);
  size_t m = 0;
  if (col >= 0) {
    m = pp_cols_where_eq(c, (size_t)col, &v, sel, nsel, out);
  } else if (v.kind == PP_VAL_NONE) {
    for (size_t i = 0; i < n; i++)
      out[m++] = (uint32_t)(sel ? sel[i] : i);
  }
  push_sel(L, 1, out, m);
  return 1;
}

/* cols:range(name, lo, hi [, sel]) -> selection of lo <= value <= hi */
static int cols_range(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  int col = col_of(L, c, 2);
  double lo = luaL_optnumber(L, 3, -HUGE_VAL), hi = luaL_optnumber(L, 4, HUGE_VAL);
  size_t nsel;
  const uint32_t *sel = opt_sel(L, 5, 1, &nsel);
  size_t n = nrows(c, sel, nsel);
  uint32_t *out = lua_newuserdatauv(L, (n ? n : 1) * sizeof *out, 0);
  size_t m = col >= 0 ? pp_cols_where_range(c, (size_t)col, lo, hi, sel, nsel, out) : 0;
  push_sel(L, 1, out, m);
  return 1;
}

/* cols:select({row, ...}) -> selection of those rows (1-based; sorted,
 * duplicates removed) */
static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static int cols_select(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  if (lua_isnoneornil(L, 2)) { /* every record */
    size_t n = pp_cols_count(c);
    sel_ud *s = lua_newuserdatauv(L, sizeof *s + n * sizeof(uint32_t), 1);
    s->n = n;
    for (size_t i = 0; i < n; i++)
      s->rows[i] = (uint32_t)i;
    luaL_setmetatable(L, SEL_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    return 1;
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer m = (lua_Integer)lua_rawlen(L, 2);
  uint32_t *rows = lua_newuserdatauv(L, (size_t)(m ? m : 1) * sizeof *rows, 0);
  size_t k = 0;
  for (lua_Integer i = 1; i <= m; i++) {
    lua_rawgeti(L, 2, i);
    lua_Integer r = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (r < 1 || (size_t)r > pp_cols_count(c))
      return luaL_argerror(L, 2, lua_pushfstring(L, "row %I out of range "
                                                    "(1..%I)",
                                                 r, (lua_Integer)pp_cols_count(c)));
    rows[k++] = (uint32_t)(r - 1);
  }
  qsort(rows, k, sizeof *rows, cmp_u32);
  size_t u = 0;
  for (size_t i = 0; i < k; i++)
    if (u == 0 || rows[u - 1] != rows[i])
      rows[u++] = rows[i];
  push_sel(L, 1, rows, u);
  return 1;
}

#define GROUPS_MT "phaseprobe.groups_guard"
typedef struct {
  pp_group *g;
  size_t n;
} groups_guard;

static int groups_gc(lua_State *L) {
  groups_guard *gg = luaL_checkudata(L, 1, GROUPS_MT);
  pp_groups_free(gg->g, gg->n);
  gg->g = NULL;
  gg->n = 0;
  return 0;
}

/* cols:group(name [, sel]) -> { {key=, n=, sel=}, ... } in order of first
 * appearance; records lacking the field form a group with key nil and
 * missing = true */
static int cols_group(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  int col = col_of(L, c, 2);
  size_t nsel;
  const uint32_t *sel = opt_sel(L, 3, 1, &nsel);
  if (col < 0) {
    size_t n = nrows(c, sel, nsel);
    lua_createtable(L, 1, 0);
    if (n == 0)
      return 1;
    lua_createtable(L, 0, 3);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "missing");
    lua_pushinteger(L, (lua_Integer)n);
    lua_setfield(L, -2, "n");
    if (sel) {
      push_sel(L, 1, sel, nsel);
    } else {
      lua_pushcfunction(L, cols_select);
      lua_pushvalue(L, 1);
      lua_call(L, 1, 1);
    }
    lua_setfield(L, -2, "sel");
    lua_rawseti(L, -2, 1);
    return 1;
  }
  /* the groups are freed by their guard's __gc if building the tables
   * raises (out of memory), else right here */
  groups_guard *gg = lua_newuserdatauv(L, sizeof *gg, 0);
  gg->g = NULL;
  gg->n = 0;
  luaL_setmetatable(L, GROUPS_MT);
  if (pp_cols_group(c, (size_t)col, sel, nsel, &gg->g, &gg->n) != 0)
    return luaL_error(L, "phaseprobe.columns: out of memory");
  pp_group *g = gg->g;
  size_t ng = gg->n;
  lua_createtable(L, (int)ng, 0);
  for (size_t i = 0; i < ng; i++) {
    lua_createtable(L, 0, 4);
    if (g[i].key.kind == PP_VAL_NONE) {
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, "missing");
    } else {
      pp_lua_push_value(L, &g[i].key, pp_cols_unsigned(c, (size_t)col));
      lua_setfield(L, -2, "key");
    }
    lua_pushinteger(L, (lua_Integer)g[i].n);
    lua_setfield(L, -2, "n");
    push_sel(L, 1, g[i].rows, g[i].n);
    lua_setfield(L, -2, "sel");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  pp_groups_free(g, ng);
  gg->g = NULL;
  gg->n = 0;
  return 1;
}

/* cols:distinct(name [, sel [, limit]]) -> count (up to limit, default 1000) */
static int cols_distinct(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  int col = col_of(L, c, 2);
  size_t nsel;
  const uint32_t *sel = opt_sel(L, 3, 1, &nsel);
  lua_Integer limit = luaL_optinteger(L, 4, 1000);
  luaL_argcheck(L, limit >= 1, 4, "limit must be positive");
  lua_pushinteger(L, col < 0 ? 0
                             : (lua_Integer)pp_cols_distinct(c, (size_t)col, sel,
                                                             nsel, (size_t)limit));
  return 1;
}

/* cols:prefixes([sel]) -> { {prefix=, n=}, ... } */
static int cols_prefixes(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  size_t nsel;
  const uint32_t *sel = opt_sel(L, 2, 1, &nsel);
  size_t nl = pp_cols_nlayouts(c), n = nrows(c, sel, nsel);
  size_t *per = lua_newuserdatauv(L, (nl ? nl : 1) * sizeof *per, 0);
  memset(per, 0, (nl ? nl : 1) * sizeof *per);
  for (size_t i = 0; i < n; i++)
    per[pp_cols_layout(c, sel ? sel[i] : i)]++;
  lua_newtable(L); /* prefix -> position in the result */
  lua_newtable(L); /* result */
  lua_Integer k = 0;
  for (size_t l = 0; l < nl; l++) {
    if (!per[l])
      continue;
    const char *pre = pp_cols_layout_prefix(c, l);
    if (lua_getfield(L, -2, pre) == LUA_TNIL) {
      lua_pop(L, 1);
      lua_createtable(L, 0, 2);
      lua_pushstring(L, pre);
      lua_setfield(L, -2, "prefix");
      lua_pushinteger(L, 0);
      lua_setfield(L, -2, "n");
      lua_pushvalue(L, -1);
      lua_rawseti(L, -3, ++k);
      lua_pushvalue(L, -1);
      lua_setfield(L, -4, pre);
    }
    lua_getfield(L, -1, "n");
    lua_Integer cur = lua_tointeger(L, -1);
    lua_pop(L, 1);
    lua_pushinteger(L, cur + (lua_Integer)per[l]);
    lua_setfield(L, -2, "n");
    lua_pop(L, 1);
  }
  lua_remove(L, -2);
  return 1;
}

/* cols:order([sel]) -> field names in line order, merged over the
 * layouts of the selected records (first layout first) */
static int cols_order(lua_State *L) {
  pp_cols *c = check_cols(L, 1);
  size_t nsel;
  const uint32_t *sel = opt_sel(L, 2, 1, &nsel);
  size_t nl = pp_cols_nlayouts(c), n = nrows(c, sel, nsel);
  unsigned char *used = lua_newuserdatauv(L, nl ? nl : 1, 0);
  memset(used, 0, nl ? nl : 1);
  if (!sel) /* every layout belongs to some record */
    memset(used, 1, nl);
  for (size_t i = 0; sel && i < n; i++)
    used[pp_cols_layout(c, sel[i])] = 1;
  lua_newtable(L); /* seen */
  lua_newtable(L); /* result */
  lua_Integer k = 0;
  for (size_t l = 0; l < nl; l++) {
    if (!used[l])
      continue;
    for (size_t i = 0; i < pp_cols_layout_nfields(c, l); i++) {
      const char *name = pp_cols_name(c, pp_cols_layout_column(c, l, i));
      if (lua_getfield(L, -2, name) == LUA_TNIL) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -4, name);
        lua_pushstring(L, name);
        lua_rawseti(L, -3, ++k);
      }
      lua_pop(L, 1);
    }
  }
  lua_remove(L, -2);
  return 1;
}

static int cols_bytes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)pp_cols_bytes(check_cols(L, 1)));
  return 1;
}

static int cols_close(lua_State *L) {
  cols_ud *u = luaL_checkudata(L, 1, COLS_MT);
  if (!u->closed) {
    u->closed = 1;
    pp_cols_free(u->c);
    u->c = NULL;
  }
  return 0;
}

static int cols_tostring(lua_State *L) {
  cols_ud *u = luaL_checkudata(L, 1, COLS_MT);
  if (u->closed)
    lua_pushliteral(L, "phaseprobe.columns (closed)");
  else
    lua_pushfstring(L, "phaseprobe.columns (%I records, %I fields)",
                    (lua_Integer)pp_cols_count(u->c),
                    (lua_Integer)pp_cols_nfields(u->c));
  return 1;
}

/* ---- numeric kernels over plain Lua arrays ------------------------------- */
static double *check_numbers(lua_State *L, int arg, size_t *n) {
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_Integer len = (lua_Integer)lua_rawlen(L, arg);
  luaL_argcheck(L, (lua_Unsigned)len <= SIZE_MAX / sizeof(double), arg,
                "too many numbers");
  double *a = lua_newuserdatauv(L, (size_t)(len ? len : 1) * sizeof *a, 0);
  for (lua_Integer i = 1; i <= len; i++) {
    lua_rawgeti(L, arg, i);
    int ok;
    a[i - 1] = lua_tonumberx(L, -1, &ok);
    if (!ok)
      luaL_argerror(L, arg, lua_pushfstring(L, "element %d is %s, not a number",
                                            (int)i, luaL_typename(L, -1)));
    lua_pop(L, 1);
  }
  *n = (size_t)len;
  return a;
}

/* parse.summarize({numbers}) -> summary */
static int l_summarize(lua_State *L) {
  size_t n;
  double *a = check_numbers(L, 1, &n);
  pp_summary s;
  pp_summarize(a, n, &s);
  push_summary(L, &s, 0);
  return 1;
}

/* parse.fit_line({x}, {y}) -> fit table */
static int l_fit_line(lua_State *L) {
  size_t nx, ny;
  double *x = check_numbers(L, 1, &nx);
  double *y = check_numbers(L, 2, &ny);
  luaL_argcheck(L, nx == ny, 2, "x and y differ in length");
  pp_fit f;
  if (pp_fit_line(x, y, nx, &f) != 0)
    return luaL_error(L, "phaseprobe.parse.fit_line: out of memory");
  push_fit(L, &f);
  return 1;
}

/* ---- registration -------------------------------------------------------- */
static const luaL_Reg parser_methods[] = {
    {"file", parser_file},     {"string", parser_string},
    {"lines", parser_lines},   {"store", parser_store},
    {"finish", parser_finish}, {"close", parser_close},
    {NULL, NULL}};

static const luaL_Reg cols_methods[] = {
    {"count", cols_count},       {"fields", cols_fields},
    {"kind", cols_kind},         {"row", cols_row},
    {"get", cols_get},           {"line", cols_line},
    {"values", cols_values},     {"summary", cols_summary},
    {"fit", cols_fit},           {"fits", cols_fits},
    {"lincomb", cols_lincomb},
    {"where", cols_where},       {"range", cols_range},
    {"select", cols_select},     {"group", cols_group},
    {"distinct", cols_distinct}, {"prefixes", cols_prefixes},
    {"order", cols_order},       {"bytes", cols_bytes},
    {"close", cols_close},       {NULL, NULL}};

static const luaL_Reg sel_methods[] = {
    {"indices", sel_indices}, {"get", sel_get}, {NULL, NULL}};

static void new_class(lua_State *L, const char *name, const luaL_Reg *methods,
                      lua_CFunction gc, lua_CFunction tostring,
                      lua_CFunction len) {
  luaL_newmetatable(L, name);
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  if (gc) {
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__close");
  }
  lua_pushcfunction(L, tostring);
  lua_setfield(L, -2, "__tostring");
  if (len) {
    lua_pushcfunction(L, len);
    lua_setfield(L, -2, "__len");
  }
  lua_pop(L, 1);
}

static const luaL_Reg parse_fns[] = {
    {"new", l_new},           {"file", l_file},
    {"string", l_string},     {"lines", l_lines},
    {"store", l_store},       {"list", pp_lua_parse_list},
    {"summarize", l_summarize},
    {"fit_line", l_fit_line}, {NULL, NULL}};

int pp_lua_open_parse(lua_State *L) {
  luaL_newmetatable(L, GROUPS_MT);
  lua_pushcfunction(L, groups_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  new_class(L, PARSER_MT, parser_methods, parser_close, parser_tostring, NULL);
  new_class(L, COLS_MT, cols_methods, cols_close, cols_tostring, cols_count);
  new_class(L, SEL_MT, sel_methods, NULL, sel_tostring, sel_len);
  luaL_newlib(L, parse_fns);
  lua_pushinteger(L, PP_PARSE_MAX_TOKENS);
  lua_setfield(L, -2, "max_fields");
  lua_pushinteger(L, (lua_Integer)PP_PARSE_MAX_BYTES);
  lua_setfield(L, -2, "max_bytes");
  lua_pushinteger(L, PP_PARSE_MAX_LINE);
  lua_setfield(L, -2, "max_line");
  return 1;
}
