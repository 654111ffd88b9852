/*
 * lua_text.c: pp.text, text that the exports write by the million, built
 * in C.
 *
 *   pp.text.format(template, ...) -> string
 *       The part of string.format that the trace export's event templates
 *       use: %d (an integer, or what string.format takes for one: a float
 *       with an exact integer value, a string that converts to one), %0Nd (the same, zero-padded to N digits,
 *       N from 1 to 9: the microseconds' fraction of a trace timestamp),
 *       %s (a string, or a number in Lua's own spelling) and %%. Anything
 *       else in the template raises, naming it, as does a value of the
 *       wrong kind (naming its argument) and a missing one.
 *
 * Why: Lua's string.format hands each %d to the C library's snprintf,
 * which parses a format of its own every time; a trace of a million
 * dispatches formats about 15 events of 6 integers each per dispatch, and
 * the C library's printf machinery was most of `phaseprobe trace --all`'s
 * time. Integers are converted here two digits at a time (pp_put_u64, the
 * record line's own conversion) into one luaL_Buffer; nothing is pushed on
 * the stack while the buffer is open.
 */
#include "pp_internal.h"
#include "pp_lua.h"

#include <stdint.h>
#include <string.h>

/* Appends integer argument `arg` (or what converts to one, as for
 * string.format: a float with an integer value, a numeric string), at least
 * `width` characters, sign included, zeros after the sign as printf pads. */
static void add_integer(lua_State *L, luaL_Buffer *b, int arg, int width) {
  int isnum;
  lua_Integer v = lua_tointegerx(L, arg, &isnum);
  if (!isnum)
    luaL_argerror(L, arg,
                  lua_type(L, arg) == LUA_TNUMBER
                      ? "number has no integer representation"
                      : lua_pushfstring(L, "number expected, got %s",
                                        luaL_typename(L, arg)));
  /* a sign, and at most 20 digits (width is at most 9) */
  char *p = luaL_prepbuffsize(b, 21), *q = p;
  uint64_t u = (uint64_t)v;
  if (v < 0) {
    *q++ = '-';
    u = 0 - u;
  }
  char *digits = q;
  q = pp_put_u64(q, u);
  int n = (int)(q - digits);
  width -= (int)(digits - p);
  if (n < width) {
    memmove(digits + (width - n), digits, (size_t)n);
    memset(digits, '0', (size_t)(width - n));
    q += width - n;
  }
  luaL_addsize(b, (size_t)(q - p));
}

static void add_string(lua_State *L, luaL_Buffer *b, int arg) {
  int t = lua_type(L, arg);
  if (t != LUA_TSTRING && t != LUA_TNUMBER)
    luaL_argerror(L, arg, lua_pushfstring(L, "string expected, got %s",
                                          luaL_typename(L, arg)));
  size_t n;
  /* a number is converted in its own slot: nothing is pushed */
  const char *s = lua_tolstring(L, arg, &n);
  luaL_addlstring(b, s, n);
}

static int l_format(lua_State *L) {
  size_t len;
  const char *f = luaL_checklstring(L, 1, &len), *start = f, *end = f + len;
  int top = lua_gettop(L), arg = 1;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  while (f < end) {
    const char *pc = memchr(f, '%', (size_t)(end - f));
    if (!pc) {
      luaL_addlstring(&b, f, (size_t)(end - f));
      break;
    }
    luaL_addlstring(&b, f, (size_t)(pc - f));
    f = pc + 1;
    int width = 0;
    if (f + 1 < end && f[0] == '0' && f[1] >= '1' && f[1] <= '9') {
      width = f[1] - '0';
      f += 2;
      if (f >= end || *f != 'd')
        return luaL_error(L, "bad template for 'format': only %%d may be "
                             "zero-padded (at byte %d)",
                          (int)(pc - start) + 1);
    }
    char c = f < end ? *f++ : '\0';
    if (c == '%' && !width) {
      luaL_addchar(&b, '%');
      continue;
    }
    if (c != 'd' && c != 's')
      return luaL_error(L, "bad template for 'format': '%%%c' at byte %d "
                           "(only %%d, %%0Nd, %%s and %%%%)",
                        c ? c : ' ', (int)(pc - start) + 1);
    if (++arg > top)
      return luaL_argerror(L, arg, "no value");
    if (c == 'd')
      add_integer(L, &b, arg, width);
    else
      add_string(L, &b, arg);
  }
  luaL_pushresult(&b);
  return 1;
}

int pp_lua_open_text(lua_State *L) {
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, l_format);
  lua_setfield(L, -2, "format");
  return 1;
}
