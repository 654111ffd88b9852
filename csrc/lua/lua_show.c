/*
 * lua_show.c: readable text for the plain result tables the module returns
 * (pp.stats(), pp.clock(), pp.ptx.scan(), ...), so that the REPL prints
 * them as aligned "key  value" lines, nested tables indented, rather than
 * "table: 0x...".
 *
 * Sits at the edge of the Lua bindings: a binding that returns such a table
 * calls pp_lua_show(L, idx, title), which gives it a metatable of its own
 * kind (one per title, "phaseprobe.show.<title>") whose __tostring is
 * show_tostring. The table stays an ordinary table to its user (fields
 * read and written as before; pairs, #, ipairs unchanged).
 *
 * The text is made with raw access only and never calls a metamethod, so
 * no user code runs while it is made (a table the user edited prints as it
 * now is, safely): strings, numbers and booleans print as values, nested
 * tables as indented blocks (lists of scalars on one line), at most
 * SHOW_DEPTH levels and SHOW_ITEMS entries a level, anything else as its
 * type name.
 */
#include "pp_lua.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SHOW_DEPTH = 6, SHOW_ITEMS = 40, SHOW_LIST = 12 };

/* The text being made: a growable buffer held by a userdata on the stack
 * (its __gc frees it, so an error on the way leaks nothing). */
typedef struct {
  char *p;
  size_t len, cap;
  int oom;
} showbuf;

static int showbuf_gc(lua_State *L) {
  showbuf *b = pp_lua_testudata(L, 1, "phaseprobe.showbuf"); /* only ours, even called by hand */
  if (b) {
    free(b->p);
    b->p = NULL;
  }
  return 0;
}

static void add_lstring(showbuf *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void add_string(showbuf *b, const char *s) { add_lstring(b, s, strlen(s)); }
static void add_char(showbuf *b, char c) { add_lstring(b, &c, 1); }

static void add_scalar(showbuf *b, lua_State *L, int idx) {
  char tmp[64];
  switch (lua_type(L, idx)) {
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx))
      snprintf(tmp, sizeof tmp, "%lld", (long long)lua_tointeger(L, idx));
    else
      snprintf(tmp, sizeof tmp, "%.6g", lua_tonumber(L, idx));
    add_string(b, tmp);
    break;
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    /* control characters would break the lines: shown as '?' */
    for (size_t i = 0; i < len && i < 200; i++)
      add_char(b, (unsigned char)s[i] < 32 ? '?' : s[i]);
    if (len > 200)
      add_string(b, "...");
    break;
  }
  case LUA_TBOOLEAN:
    add_string(b, lua_toboolean(L, idx) ? "true" : "false");
    break;
  case LUA_TNIL:
    add_string(b, "nil");
    break;
  default:
    add_string(b, lua_typename(L, lua_type(L, idx)));
  }
}

static int is_scalar(lua_State *L, int idx) {
  int t = lua_type(L, idx);
  return t == LUA_TNUMBER || t == LUA_TSTRING || t == LUA_TBOOLEAN;
}

/* The sequence length of the table at idx when it is a list (keys 1..n
 * and nothing else), else 0. */
static lua_Integer list_len(lua_State *L, int idx) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx), count = 0;
  if (n == 0)
    return 0;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_pop(L, 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > n) {
      lua_pop(L, 1);
      return 0;
    }
    count++;
  }
  return count == n ? n : 0;
}

/* Whether the value at idx prints on its key's line: a scalar, an empty
 * table, or a list of scalars. */
static int inline_value(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TTABLE)
    return 1;
  lua_pushnil(L);
  if (lua_next(L, idx) == 0)
    return 1; /* empty */
  lua_pop(L, 2);
  lua_Integer n = list_len(L, idx);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    int sc = is_scalar(L, -1);
    lua_pop(L, 1);
    if (!sc)
      return 0;
  }
  return n > 0;
}

static int cmp_keys(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void add_indent(showbuf *b, int depth) {
  for (int i = 0; i < depth; i++)
    add_string(b, "  ");
}

static void add_table(showbuf *b, lua_State *L, int idx, int depth);

/* One entry: key already written; value at vidx. */
static void add_value(showbuf *b, lua_State *L, int vidx, int depth) {
  if (lua_type(L, vidx) != LUA_TTABLE) {
    add_char(b, ' ');
    add_scalar(b, L, vidx);
    add_char(b, '\n');
    return;
  }
  lua_pushnil(L);
  if (lua_next(L, vidx) == 0) {
    add_string(b, " (empty)\n");
    return;
  }
  lua_pop(L, 2);
  lua_Integer n = list_len(L, vidx);
  int scalars = n > 0;
  for (lua_Integer i = 1; scalars && i <= n; i++) {
    lua_rawgeti(L, vidx, i);
    scalars = is_scalar(L, -1);
    lua_pop(L, 1);
  }
  if (scalars) { /* a list of scalars on one line */
    add_char(b, ' ');
    for (lua_Integer i = 1; i <= n && i <= SHOW_LIST; i++) {
      if (i > 1)
        add_string(b, ", ");
      lua_rawgeti(L, vidx, i);
      add_scalar(b, L, -1);
      lua_pop(L, 1);
    }
    if (n > SHOW_LIST) {
      char tmp[48];
      snprintf(tmp, sizeof tmp, ", ... (%lld in all)", (long long)n);
      add_string(b, tmp);
    }
    add_char(b, '\n');
    return;
  }
  add_char(b, '\n');
  if (depth >= SHOW_DEPTH) {
    add_indent(b, depth + 1);
    add_string(b, "...\n");
    return;
  }
  add_table(b, L, vidx, depth + 1);
}

/* The entries of the table at idx, one a line, at the given depth: lists
 * by position ([1], [2], ...), other tables by sorted string key (then
 * the others, by type). */
static void add_table(showbuf *b, lua_State *L, int idx, int depth) {
  idx = lua_absindex(L, idx);
  if (!lua_checkstack(L, 8)) {
    add_string(b, "...\n");
    return;
  }
  lua_Integer n = list_len(L, idx);
  if (n > 0) {
    for (lua_Integer i = 1; i <= n && i <= SHOW_ITEMS; i++) {
      char tmp[32];
      add_indent(b, depth);
      snprintf(tmp, sizeof tmp, "[%lld]", (long long)i);
      add_string(b, tmp);
      lua_rawgeti(L, idx, i);
      add_value(b, L, lua_gettop(L), depth);
      lua_pop(L, 1);
    }
    if (n > SHOW_ITEMS) {
      char tmp[48];
      add_indent(b, depth);
      snprintf(tmp, sizeof tmp, "... %lld more\n", (long long)(n - SHOW_ITEMS));
      add_string(b, tmp);
    }
    return;
  }
  /* string keys, sorted; the strings stay anchored in a list of their own */
  lua_newtable(L);
  int keys = lua_gettop(L);
  lua_Integer nk = 0, others = 0;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      lua_pushvalue(L, -1);
      lua_rawseti(L, keys, ++nk);
    } else {
      others++;
    }
  }
  size_t nsort = nk < SHOW_ITEMS * 4 ? (size_t)nk : (size_t)SHOW_ITEMS * 4;
  const char **names = nsort ? malloc(nsort * sizeof *names) : NULL;
  if (nsort && !names) {
    lua_pop(L, 1);
    add_string(b, "(out of memory)\n");
    return;
  }
  size_t width = 0;
  for (size_t i = 0; i < nsort; i++) {
    lua_rawgeti(L, keys, (lua_Integer)i + 1);
    names[i] = lua_tostring(L, -1); /* anchored by `keys` */
    lua_pop(L, 1);
    size_t w = strlen(names[i]);
    if (w > width && w <= 32)
      width = w;
  }
  if (nsort) /* (qsort takes no NULL, even for no items) */
    qsort(names, nsort, sizeof *names, cmp_keys);
  for (size_t i = 0; i < nsort && i < SHOW_ITEMS; i++) {
    add_indent(b, depth);
    add_string(b, names[i]);
    lua_pushstring(L, names[i]);
    lua_rawget(L, idx);
    if (inline_value(L, lua_gettop(L))) {
      size_t w = strlen(names[i]);
      for (size_t k = w; k < width + 1; k++)
        add_char(b, ' ');
    }
    add_value(b, L, lua_gettop(L), depth);
    lua_pop(L, 1);
  }
  free(names);
  lua_pop(L, 1); /* keys */
  lua_Integer left = (nk > SHOW_ITEMS ? nk - SHOW_ITEMS : 0) + others;
  if (left > 0) {
    char tmp[64];
    add_indent(b, depth);
    snprintf(tmp, sizeof tmp, "... and %lld more entries\n", (long long)left);
    add_string(b, tmp);
  }
}

static int show_tostring(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  showbuf *b = pp_lua_newobj(L, sizeof *b, 0); /* 2 */
  memset(b, 0, sizeof *b);
  pp_lua_class_push(L, &(pp_lua_class){.name = "phaseprobe.showbuf",
                                       .gc = showbuf_gc});
  lua_setmetatable(L, 2);
  pp_lua_settag(L, 2, "phaseprobe.showbuf");
  /* the title, from the table's own metatable (raw: never a metamethod) */
  const char *title = "phaseprobe";
  if (lua_getmetatable(L, 1)) { /* 3 */
    lua_pushliteral(L, "title");
    lua_rawget(L, -2); /* 4 */
    if (lua_type(L, -1) == LUA_TSTRING)
      title = lua_tostring(L, -1);
  }
  add_string(b, title);
  add_char(b, '\n');
  add_table(b, L, 1, 1);
  if (b->oom)
    return luaL_error(L, "phaseprobe: out of memory");
  size_t len = b->len;
  if (len > 0 && b->p[len - 1] == '\n') /* print adds one */
    len--;
  lua_pushlstring(L, b->p, len);
  free(b->p);
  b->p = NULL;
  return 1;
}

/* Gives the table at idx the metatable of its kind (`title`), which
 * prints it as lines. */
void pp_lua_show(lua_State *L, int idx, const char *title) {
  idx = lua_absindex(L, idx);
  char name[96];
  snprintf(name, sizeof name, "phaseprobe.show.%s", title);
  char shown[96];
  snprintf(shown, sizeof shown, "phaseprobe.%s", title);
  if (pp_lua_class_push(L, &(pp_lua_class){.name = name,
                                           .tostring = show_tostring})) {
    lua_pushstring(L, shown);
    lua_setfield(L, -2, "title");
    lua_pushstring(L, shown);
    lua_setfield(L, -2, "__name");
  }
  lua_setmetatable(L, idx);
}
