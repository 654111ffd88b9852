/*
 * lua_parse_list.c: pp.parse.list, a column store made from values rather
 * than lines: records (as pp.emit, pp.store and record sets give them),
 * plain tables of name = value, and lists of {name, value} pairs, which the
 * CSV and JSON lines readers build. Each element is appended to a new store
 * (csrc/parse/cols_build.c) by the rules a parsed line follows, so the
 * store is the one record sets are made from, whatever the source; a bad
 * element raises, naming it (its source:line where opts.lines gives them).
 */
#include "pp_lua.h"
#include "pp_lua_record.h"

#include <string.h>

/* ---- elements ---------------------------------------------------------------- */
typedef struct {
  pp_cols_field f[PP_PARSE_MAX_TOKENS];
  const char *name[PP_PARSE_MAX_TOKENS]; /* plain tables: names in order */
  size_t nlen[PP_PARSE_MAX_TOKENS];
  char used[PP_PARSE_MAX_TOKENS];
} list_scratch;

typedef struct {
  const char *prefix; /* for plain tables */
  size_t plen;
  int order;          /* stack index of opts.fields, or 0 */
  int lines;          /* stack index of opts.lines, or 0 */
  const char *source;
  int line_mode;
} list_opts;

/* How a pair's value is read (its third element). */
enum { AS_VALUE, AS_NUMBER, AS_TOKEN };

/* The value at the top (popped) into x. NULL, or what is wrong. With
 * AS_NUMBER or AS_TOKEN a string is a value's text, read by the one rule
 * (pp_cols_value_of_text): AS_NUMBER's must be a number. */
static const char *lua_value(lua_State *L, pp_cols_field *x, int as) {
  int t = lua_type(L, -1);
  x->neg = 0;
  x->text = NULL;
  x->tlen = 0;
  x->v.u64 = 0;
  if (as != AS_VALUE && t == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    const char *bad = NULL;
    if (pp_cols_value_of_text(s, len, as == AS_NUMBER, x) == PP_VAL_NONE) {
      size_t d = len && s[0] == '-' ? 1 : 0;
      int whole = len > d && strspn(s + d, "0123456789") == len - d &&
                  (s[d] != '0' || len - d == 1); /* no leading zero */
      const char *why = whole ? "does not fit in 64 bits"
                              : "is not a number as JSON writes one";
      bad = len <= 40 ? lua_pushfstring(L, "%s %s", s, why)
                      : lua_pushfstring(L, "a number of %d bytes %s", (int)len,
                                        why);
    }
    if (bad)
      lua_remove(L, -2); /* the text; the message stays on the stack */
    else
      lua_pop(L, 1); /* the caller's table holds it */
    return bad;
  }
  if (t == LUA_TNUMBER && lua_isinteger(L, -1)) {
    lua_Integer v = lua_tointeger(L, -1);
    x->v.kind = PP_VAL_INT;
    x->v.i = (int64_t)v;
    x->neg = v < 0;
  } else if (t == LUA_TNUMBER) {
    x->v.kind = PP_VAL_NUM;
    x->v.d = lua_tonumber(L, -1);
  } else if (t == LUA_TSTRING) {
    x->v.kind = PP_VAL_STR;
    x->v.s = lua_tolstring(L, -1, &x->v.len); /* the caller's table holds it */
  } else {
    const char *tn = lua_typename(L, t);
    lua_pop(L, 1);
    return tn;
  }
  lua_pop(L, 1);
  return NULL;
}

/* Pushes "field 'name': what" for a bad value of type or text `what`. */
static const char *bad_field(lua_State *L, const char *name, size_t nlen,
                             const char *what, int is_type) {
  lua_pushlstring(L, name, nlen);
  if (is_type)
    return lua_pushfstring(L, "field '%s': a %s (values are integers, numbers "
                              "or strings)", lua_tostring(L, -1), what);
  return lua_pushfstring(L, "field '%s': %s", lua_tostring(L, -1), what);
}

/* A list of {name, value [, true | "token"]} pairs in line order (with
 * true, value is a number's text, read exactly; with "token", a text read
 * as a record line's value is). Returns the count; on a problem, *why. */
static size_t pair_fields(lua_State *L, int idx, list_scratch *sc,
                          const char **why) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  if (n > PP_PARSE_MAX_TOKENS) {
    *why = lua_pushfstring(L, "more than %d fields", PP_PARSE_MAX_TOKENS);
    return 0;
  }
  for (lua_Integer j = 1; j <= n; j++) {
    pp_cols_field *x = &sc->f[j - 1];
    if (lua_rawgeti(L, idx, j) != LUA_TTABLE) {
      *why = lua_pushfstring(L, "pair %d is a %s, not {name, value}", (int)j,
                             luaL_typename(L, -1));
      return 0;
    }
    int pair = lua_gettop(L);
    if (lua_rawgeti(L, pair, 1) != LUA_TSTRING) {
      *why = lua_pushfstring(L, "pair %d: the name is a %s, not a string",
                             (int)j, luaL_typename(L, -1));
      return 0;
    }
    x->name = lua_tolstring(L, -1, &x->nlen); /* the pair holds it */
    lua_pop(L, 1);
    int as = AS_VALUE;
    int t3 = lua_rawgeti(L, pair, 3);
    if (t3 == LUA_TBOOLEAN && lua_toboolean(L, -1))
      as = AS_NUMBER;
    else if (t3 == LUA_TSTRING && lua_rawlen(L, -1) == 5 &&
             memcmp(lua_tostring(L, -1), "token", 5) == 0)
      as = AS_TOKEN;
    else if (t3 != LUA_TNIL && t3 != LUA_TBOOLEAN) {
      int nul = pp_lua_hasnul(L, -1);
      *why = lua_pushfstring(L, "pair %d: the third element must be true or "
                                "\"token\", got %s%s",
                             (int)j, luaL_tolstring(L, -1, NULL),
                             nul ? " (it contains a NUL byte)" : "");
      return 0;
    }
    lua_pop(L, 1);
    lua_rawgeti(L, pair, 2);
    const char *bad = lua_value(L, x, as);
    if (bad) {
      *why = bad_field(L, x->name, x->nlen, bad, as == AS_VALUE);
      return 0;
    }
    lua_pop(L, 1); /* the pair: the list holds it */
  }
  return (size_t)n;
}

static int name_before(const char *a, size_t al, const char *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c < 0 || (c == 0 && al < bl);
}

/* A table of name = value: opts.fields order first, then the other names
 * sorted. Returns the count; on a problem, *why. */
static size_t table_fields(lua_State *L, int idx, const list_opts *o,
                           list_scratch *sc, const char **why) {
  size_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      *why = lua_pushfstring(L, "a key of type %s (record keys are field "
                                "names)", luaL_typename(L, -1));
      return 0;
    }
    if (n == PP_PARSE_MAX_TOKENS) {
      *why = lua_pushfstring(L, "more than %d fields", PP_PARSE_MAX_TOKENS);
      return 0;
    }
    /* the key is a key of the table: it stays alive with it */
    sc->name[n] = lua_tolstring(L, -1, &sc->nlen[n]);
    sc->used[n++] = 0;
  }
  size_t m = 0;
  const char *tmp;
  size_t tl;
  if (o->order) {
    lua_Integer no = (lua_Integer)lua_rawlen(L, o->order);
    for (lua_Integer j = 1; j <= no && m < n; j++) {
      lua_rawgeti(L, o->order, j);
      size_t len;
      const char *name =
          lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
      lua_pop(L, 1);
      for (size_t i = m; name && i < n; i++)
        if (sc->nlen[i] == len && memcmp(sc->name[i], name, len) == 0) {
          tmp = sc->name[i], sc->name[i] = sc->name[m], sc->name[m] = tmp;
          tl = sc->nlen[i], sc->nlen[i] = sc->nlen[m], sc->nlen[m] = tl;
          m++;
          break;
        }
    }
  }
  /* the rest by name: insertion sort (records have tens of fields) */
  for (size_t i = m + 1; i < n; i++) {
    tmp = sc->name[i];
    tl = sc->nlen[i];
    size_t j = i;
    while (j > m && name_before(tmp, tl, sc->name[j - 1], sc->nlen[j - 1])) {
      sc->name[j] = sc->name[j - 1];
      sc->nlen[j] = sc->nlen[j - 1];
      j--;
    }
    sc->name[j] = tmp;
    sc->nlen[j] = tl;
  }
  for (size_t i = 0; i < n; i++) {
    pp_cols_field *x = &sc->f[i];
    x->name = sc->name[i];
    x->nlen = sc->nlen[i];
    lua_pushlstring(L, x->name, x->nlen);
    lua_rawget(L, idx);
    const char *bad = lua_value(L, x, AS_VALUE);
    if (bad) {
      *why = bad_field(L, x->name, x->nlen, bad, 1);
      return 0;
    }
  }
  return n;
}

/* ---- pp.parse.list --------------------------------------------------------------- */
static void read_list_opts(lua_State *L, int t, list_opts *o) {
  memset(o, 0, sizeof *o);
  o->prefix = "record";
  o->plen = 6;
  o->source = "(list)";
  o->line_mode = 1;
  if (lua_isnoneornil(L, t))
    return;
  luaL_checktype(L, t, LUA_TTABLE);
  if (lua_getfield(L, t, "prefix") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_argerror(L, t, "option prefix must be a string");
    o->prefix = lua_tolstring(L, -1, &o->plen); /* stays on the stack */
    luaL_argcheck(L, strlen(o->prefix) == o->plen, t,
                  "option prefix holds a NUL byte");
  }
  if (lua_getfield(L, t, "source") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_argerror(L, t, "option source must be a string");
    o->source = lua_tostring(L, -1);
    luaL_argcheck(L, strlen(o->source) == lua_rawlen(L, -1), t,
                  "option source holds a NUL byte");
  }
  if (lua_getfield(L, t, "fields") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TTABLE)
      luaL_argerror(L, t, "option fields must be a list of names");
    o->order = lua_gettop(L);
  }
  if (lua_getfield(L, t, "lines") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TTABLE)
      luaL_argerror(L, t, "option lines must be a list of line numbers");
    o->lines = lua_gettop(L);
  }
  if (lua_getfield(L, t, "text") != LUA_TNIL) {
    const char *m = pp_lua_fieldkey(L, -1); /* "" for "line\0x" */
    if (strcmp(m, "line") != 0 && strcmp(m, "any") != 0) {
      int nul = pp_lua_hasnul(L, -1);
      luaL_argerror(L, t, lua_pushfstring(L, "option text must be 'line' or "
                                             "'any', got %s%s",
                                          luaL_tolstring(L, -1, NULL),
                                          nul ? " (it holds a NUL byte)" : ""));
    }
    o->line_mode = m[0] == 'l';
  }
}

/* pp.parse.list(list [, opts]) -> columns: the elements of `list`, in
 * order, appended to a new store. An element is a record (as pp.emit and
 * record sets give them: copied with its prefix, fields and values), a
 * table of name = value (its fields in the order of opts.fields, the others
 * by name), or a list of {name, value} pairs in line order, where
 * {name, text, true} is a number given as its text (a JSON number: read
 * exactly, u64 up to 2^64-1, a float keeping its text) and
 * {name, text, "token"} a text read as a record line's value is (a number
 * when written as JSON writes one, else the string: pp_parse.h). opts:
 * prefix (of tables, default "record"), fields, text = "line" (default: a
 * table's strings must fit in a line, and its numbers be finite) | "any",
 * source (@file, default "(list)"), lines (@line of each element, default
 * its index; errors then say source:line). A bad element raises, naming
 * it. */
int pp_lua_parse_list(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  list_opts o;
  read_list_opts(L, 2, &o);
  list_scratch *sc = lua_newuserdatauv(L, sizeof *sc, 0);
  pp_cols *c = pp_cols_new();
  if (!c)
    return luaL_error(L, "phaseprobe.parse.list: out of memory");
  pp_lua_push_cols(L, c);
  int out = lua_gettop(L);
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
  char err[256];
  for (lua_Integer i = 1; i <= n; i++) {
    lua_settop(L, out);
    lua_rawgeti(L, 1, i);
    int e = lua_gettop(L);
    lua_Integer line = i;
    if (o.lines) {
      lua_rawgeti(L, o.lines, i);
      if (lua_isinteger(L, -1))
        line = lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
    const char *prefix, *why = NULL;
    size_t plen, nf = 0;
    int is_rec = pp_lua_record_fields(L, e, sc->f, &nf, &prefix);
    if (is_rec) {
      plen = strlen(prefix);
    } else if (lua_type(L, e) == LUA_TTABLE) {
      prefix = o.prefix;
      plen = o.plen;
      if (lua_rawlen(L, e) > 0)
        nf = pair_fields(L, e, sc, &why);
      else
        nf = table_fields(L, e, &o, sc, &why);
    } else {
      return luaL_error(L, "phaseprobe.parse.list: element %d is a %s, not a "
                           "record or a table", (int)i, luaL_typename(L, e));
    }
    int rc = -1;
    if (!why) {
      rc = pp_cols_append(c, prefix, plen, sc->f, nf, o.source, (uint64_t)line,
                          is_rec ? 0 : o.line_mode, err, sizeof err);
      if (rc == -2)
        return luaL_error(L, "phaseprobe.parse.list: out of memory");
      why = err;
    }
    if (rc != 0) {
      if (o.lines)
        return luaL_error(L, "%s:%d: %s", o.source, (int)line, why);
      return luaL_error(L, "phaseprobe.parse.list: element %d: %s", (int)i,
                        why);
    }
  }
  lua_settop(L, out);
  return 1;
}
