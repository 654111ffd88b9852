/*
 * lua_sink.c: where records go once emitted, from Lua: the in-memory store
 * (pp.store.*), the line sink (pp.sink, pp.flush), the module's notices
 * (pp.notices), the emission counters (pp.stats) and pp.isatty.
 *
 *   pp.sink("run.log", { interval_ms = 20 })
 *   pp.store.capacity(100000); pp.store.keep("last")
 *   ... dispatches ...
 *   assert(pp.flush())
 *   local set = pp.records.from_store()
 *
 * The emit (lua_phaseprobe.c) hands a record to both; the sink's writer
 * thread and the store are csrc/record/sink.c and store.c. Misuse (an
 * unknown option, a bad size) raises; a target that cannot be opened
 * returns nil and a message.
 */
#include "pp_lua.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- store ------------------------------------------------------------- */
static int l_store_records(lua_State *L) {
  lua_Integer from = luaL_optinteger(L, 1, 1);
  luaL_argcheck(L, from >= 1, 1, "index starts at 1");
  size_t n = pp_store_count();
  lua_createtable(L, n >= (size_t)from ? (int)(n - (size_t)from + 1) : 0, 0);
  pp_record r;
  lua_Integer out = 1;
  for (size_t i = (size_t)from - 1; pp_store_get(i, &r) == 0; i++) {
    pp_lua_push_record(L, &r);
    lua_rawseti(L, -2, out++);
  }
  return 1;
}

static int l_store_get(lua_State *L) {
  lua_Integer i = luaL_checkinteger(L, 1);
  pp_record r;
  if (i < 1 || pp_store_get((size_t)i - 1, &r) != 0)
    return 0;
  pp_lua_push_record(L, &r);
  return 1;
}

static int l_store_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)pp_store_count());
  return 1;
}

static int l_store_clear(lua_State *L) {
  (void)L;
  pp_store_clear();
  return 0;
}

static int l_store_dropped(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)pp_store_dropped());
  return 1;
}

static int l_store_capacity(lua_State *L) {
  if (!lua_isnoneornil(L, 1)) {
    lua_Integer n = luaL_checkinteger(L, 1);
    luaL_argcheck(L, n >= 0, 1, "capacity must not be negative");
    pp_store_set_capacity((size_t)n);
  }
  lua_pushinteger(L, (lua_Integer)pp_store_capacity());
  return 1;
}

static int l_store_enable(lua_State *L) {
  pp_store_enable(pp_lua_optswitch(L, 1));
  return 0;
}

/* store.keep(["first" | "last"]) -> the mode in use */
static int l_store_keep(lua_State *L) {
  static const char *const modes[] = {"first", "last", NULL};
  if (!lua_isnoneornil(L, 1))
    pp_store_set_keep(pp_lua_checkoption(L, 1, NULL, modes) ? PP_KEEP_LAST
                                                          : PP_KEEP_FIRST);
  lua_pushstring(L, modes[pp_store_get_keep() == PP_KEEP_LAST]);
  return 1;
}

static const luaL_Reg store_fns[] = {
    {"records", l_store_records}, {"get", l_store_get},
    {"count", l_store_count},     {"clear", l_store_clear},
    {"dropped", l_store_dropped}, {"capacity", l_store_capacity},
    {"enable", l_store_enable},   {"keep", l_store_keep},
    {NULL, NULL}};

/* ---- the line sink and notices -------------------------------------------- */
/* The options table of pp.sink: {buffer = bytes, interval_ms = ms,
 * write = "batch" | "record"}; anything else is refused by name. */
static void sink_opts(lua_State *L, int arg, pp_sink_opts *o) {
  memset(o, 0, sizeof *o);
  if (lua_isnoneornil(L, arg))
    return;
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, arg)) {
    if (pp_lua_hasnul(L, -2))
      luaL_argerror(L, arg, "an option name contains a NUL byte");
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (k && strcmp(k, "buffer") == 0) {
      lua_Integer v = lua_tointeger(L, -1);
      if (!lua_isinteger(L, -1) || v < 32768 || v > (1 << 30))
        luaL_argerror(L, arg, "buffer must be an integer number of bytes "
                              "from 32768 to 1073741824");
      o->buffer = (size_t)v;
    } else if (k && strcmp(k, "interval_ms") == 0) {
      lua_Integer v = lua_tointeger(L, -1);
      if (!lua_isinteger(L, -1) || v < 1 || v > 60000)
        luaL_argerror(L, arg, "interval_ms must be an integer from 1 to 60000");
      o->interval_ms = (unsigned)v;
    } else if (k && strcmp(k, "write") == 0) {
      const char *w = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
      if (pp_lua_hasnul(L, -1))
        luaL_argerror(L, arg, "write contains a NUL byte");
      if (strcmp(w, "record") == 0)
        o->per_record = 1;
      else if (strcmp(w, "batch") != 0)
        luaL_argerror(L, arg, "write must be 'batch' or 'record'");
    } else {
      luaL_argerror(L, arg,
                    lua_pushfstring(L, "unknown option '%s' (valid: buffer, "
                                       "interval_ms, write)",
                                    luaL_tolstring(L, -2, NULL)));
    }
    lua_pop(L, 1);
  }
}

/* The descriptor that pp.sink and pp.notices take in place of a name: an
 * integer from -1 (none) to INT_MAX; a float is neither a path nor a
 * descriptor. Raises otherwise. */
static int check_fd(lua_State *L, int arg) {
  luaL_argcheck(L, lua_isinteger(L, arg), arg, "descriptor must be an integer");
  lua_Integer fd = lua_tointeger(L, arg);
  luaL_argcheck(L, fd >= -1 && fd <= INT_MAX, arg, "descriptor out of range");
  return (int)fd;
}

/* sink("stderr" | "stdout" | "none" | path | fd [, opts]) -> true, or nil,
 * message */
static int l_sink(lua_State *L) {
  pp_sink_opts o;
  sink_opts(L, 2, &o);
  if (lua_type(L, 1) == LUA_TNUMBER) {
    int fd = check_fd(L, 1);
    if (pp_sink_fd_with(fd, &o) != 0) {
      luaL_pushfail(L);
      lua_pushfstring(L, "phaseprobe.sink: descriptor %d: %s", fd,
                      strerror(errno));
      return 2;
    }
  } else {
    const char *what = pp_lua_checkname(L, 1);
    int rc;
    if (strcmp(what, "stderr") == 0)
      rc = pp_sink_fd_with(2, &o);
    else if (strcmp(what, "stdout") == 0)
      rc = pp_sink_fd_with(1, &o);
    else if (strcmp(what, "none") == 0)
      rc = pp_sink_fd(-1);
    else
      rc = pp_sink_file_with(what, &o);
    if (rc != 0) {
      int e = errno;
      luaL_pushfail(L);
      lua_pushfstring(
          L, "phaseprobe.sink: cannot open '%s': %s", what,
          e == ENXIO ? "no reader (a FIFO opens for writing only while a "
                       "reader has it open)"
          : e == ETIMEDOUT ? "open() did not return within 2 s (a stalled "
                             "file system?)"
                           : strerror(e));
      return 2;
    }
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* notices("stderr" | "none" | path | fd) -> true, or nil, message: where the
 * module's notices go (a sink that fails or falls behind, the store full). */
static int l_notices(lua_State *L) {
  int rc;
  const char *what = NULL;
  if (lua_type(L, 1) == LUA_TNUMBER) {
    rc = pp_notices_fd(check_fd(L, 1));
  } else {
    what = pp_lua_checkname(L, 1);
    if (strcmp(what, "stderr") == 0)
      rc = pp_notices_fd(2);
    else if (strcmp(what, "none") == 0)
      rc = pp_notices_fd(-1);
    else if (*what == 0)
      return luaL_argerror(L, 1, "\"stderr\", \"none\", a path or a descriptor expected");
    else
      rc = pp_notices_file(what);
  }
  if (rc != 0) {
    int e = errno;
    luaL_pushfail(L);
    if (what)
      lua_pushfstring(L, "phaseprobe.notices: cannot open '%s': %s", what,
                      e == ETIMEDOUT ? "open() did not return within 2 s" : strerror(e));
    else
      lua_pushfstring(L, "phaseprobe.notices: descriptor %d: %s",
                      (int)lua_tointeger(L, 1), strerror(e));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* flush([timeout_ms = 1000]) -> true, or nil, message */
static int l_flush(lua_State *L) {
  lua_Integer ms = luaL_optinteger(L, 1, 1000);
  luaL_argcheck(L, ms >= 0 && ms <= 3600000, 1,
                "timeout_ms must be from 0 to 3600000");
  if (pp_flush((unsigned)ms) == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  pp_stats_t s;
  pp_stats(&s);
  luaL_pushfail(L);
  lua_pushfstring(L,
                  "phaseprobe.flush: %d record lines to %s not written "
                  "within %d ms (the target is not taking them)",
                  (int)s.lines_pending, s.sink, (int)ms);
  return 2;
}

/* The emission counters: records emitted, stored, dropped; lines written,
 * dropped, pending, failed (and the last failure); dispatches abandoned. */
static int l_stats(lua_State *L) {
  pp_stats_t s;
  pp_stats(&s);
  lua_createtable(L, 0, 10);
  pp_lua_set_int(L, "emitted", s.emitted);
  pp_lua_set_int(L, "stored", s.stored);
  pp_lua_set_int(L, "dropped", s.dropped);
  pp_lua_set_int(L, "line_failures", s.line_failures);
  pp_lua_set_int(L, "lines_written", s.lines_written);
  pp_lua_set_int(L, "lines_dropped", s.lines_dropped);
  pp_lua_set_int(L, "lines_pending", s.lines_pending);
  pp_lua_set_int(L, "abandoned", s.abandoned);
  pp_lua_set_int(L, "bad_starts", s.bad_starts);
  lua_pushstring(L, s.sink);
  lua_setfield(L, -2, "sink");
  if (s.line_failures) {
    lua_pushstring(L, strerror(s.last_errno));
    lua_setfield(L, -2, "last_error");
  }
  pp_lua_show(L, -1, "stats");
  return 1;
}

/* ---- descriptors ---------------------------------------------------------- */
/* pp.isatty(fd | file) -> boolean: whether a descriptor (or a Lua file
 * handle's) is a terminal. The command line draws its progress line only
 * then, so files and pipes never receive one. */
static int l_isatty(lua_State *L) {
  int fd;
  luaL_Stream *s = luaL_testudata(L, 1, LUA_FILEHANDLE);
  if (s) {
    luaL_argcheck(L, s->closef != NULL && s->f != NULL, 1, "closed file");
    fd = fileno(s->f);
  } else {
    /* as pp.sink and pp.notices: a descriptor is an integer, never a float
     * or a string that reads as one */
    luaL_argexpected(L, lua_type(L, 1) == LUA_TNUMBER, 1, "file or descriptor");
    luaL_argcheck(L, lua_isinteger(L, 1), 1, "descriptor must be an integer");
    lua_Integer n = lua_tointeger(L, 1);
    luaL_argcheck(L, n >= 0 && n <= INT_MAX, 1, "a file descriptor is >= 0");
    fd = (int)n;
  }
  lua_pushboolean(L, fd >= 0 && isatty(fd) == 1);
  return 1;
}

/* With the module table on top: adds pp.sink, pp.flush, pp.notices,
 * pp.stats, pp.isatty and the pp.store table. */
void pp_lua_open_sink(lua_State *L) {
  static const luaL_Reg fns[] = {{"sink", l_sink},       {"flush", l_flush},
                                 {"notices", l_notices}, {"stats", l_stats},
                                 {"isatty", l_isatty},   {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  lua_newtable(L);
  luaL_setfuncs(L, store_fns, 0);
  lua_setfield(L, -2, "store");
}
