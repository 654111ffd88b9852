/*
 * lua_class.c: pp_lua_class_new, how every binding file (lua_parse.c,
 * lua_ptx.c, lua_phaseprobe.c, lua_schema.c, lua_cuda*.c) makes its
 * userdata classes, and pp_lua_view_open, the read-only view a class's
 * metatable shows through getmetatable (lua_record.c's field lists are
 * such views too); the conventions are in pp_lua_class.h.
 */
#include "pp_lua.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* __index of a class with methods and a getter. Upvalues: 1 the methods,
 * 2 the getter. */
static int class_index(lua_State *L) {
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL)
    return 1;
  lua_pop(L, 1);
  if (lua_type(L, 2) != LUA_TSTRING)
    return 0;
  lua_pushvalue(L, lua_upvalueindex(2));
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_call(L, 2, 1);
  return 1;
}

/* __eq of a class. Lua calls __eq for any two userdata when either has
 * one, so the other may be anything (io.stdout == obj): a value of another
 * class is simply not equal, and the class's eq sees two of its own.
 * Upvalues: 1 the class name, 2 its eq. */
static int class_eq(lua_State *L) {
  uint64_t tag = pp_lua_tag(lua_tostring(L, lua_upvalueindex(1)));
  if (!pp_lua_testudata_(L, 1, tag) || !pp_lua_testudata_(L, 2, tag)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_settop(L, 2);
  lua_pushvalue(L, lua_upvalueindex(2));
  lua_insert(L, 1);
  lua_call(L, 2, 1);
  return 1;
}

static void set_fn(lua_State *L, const char *event, lua_CFunction f) {
  if (!f)
    return;
  lua_pushcfunction(L, f);
  lua_setfield(L, -2, event);
}

/* __newindex of a class's public view of its metatable. Upvalue 1: the
 * class name. */
static int view_newindex(lua_State *L) {
  return luaL_error(L, "the metatable of %s is read-only",
                    lua_tostring(L, lua_upvalueindex(1)));
}

void pp_lua_view_open(lua_State *L, int idx, int nevents) {
  idx = lua_absindex(L, idx);
  lua_createtable(L, 0, 0);       /* the view */
  lua_createtable(L, 0, nevents); /* its metatable */
  lua_pushvalue(L, idx);
  lua_setfield(L, -2, "__index");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
}

/* Sets __metatable of the metatable on top of the stack to a read-only
 * view of it (getmetatable(obj) gives the view: its fields read through,
 * a write raises), so no user code can take a __gc or a __close away from
 * the module's objects. */
static void protect(lua_State *L, const char *name) {
  pp_lua_view_open(L, -1, 3);
  lua_pushstring(L, name);
  lua_pushcclosure(L, view_newindex, 1);
  lua_setfield(L, -2, "__newindex");
  lua_setmetatable(L, -2);
  lua_setfield(L, -2, "__metatable");
}

/* Fills the metatable on top of the stack from c. */
static void fill(lua_State *L, const pp_lua_class *c) {
  if (c->methods) {
    lua_newtable(L);
    luaL_setfuncs(L, c->methods, 0);
    if (c->get) {
      lua_pushcfunction(L, c->get);
      lua_pushcclosure(L, class_index, 2);
    }
    lua_setfield(L, -2, "__index");
  } else {
    set_fn(L, "__index", c->get);
  }
  const struct {
    const char *event;
    lua_CFunction f;
  } meta[] = {{"__gc", c->gc},
              {"__close", c->close},
              {"__tostring", c->tostring},
              {"__len", c->len},
              {"__call", c->call},
              {"__newindex", c->newindex},
              {"__pairs", c->pairs}};
  for (size_t i = 0; i < sizeof meta / sizeof *meta; i++)
    set_fn(L, meta[i].event, meta[i].f);
  if (c->eq) {
    lua_pushstring(L, c->name);
    lua_pushcfunction(L, c->eq);
    lua_pushcclosure(L, class_eq, 2);
    lua_setfield(L, -2, "__eq");
  }
  protect(L, c->name);
}

/* ---- class tags ----------------------------------------------------------- */
/* luaL_testudata looks the class's metatable up in the registry by name
 * (the name interned again, a hash lookup, two metatables compared) for
 * each check: about 300 instructions, several per call of a handle's
 * method. A class's objects end in its tag instead: 8 bytes after the
 * object (room made by pp_lua_newobj), FNV-1a of the class name mixed with
 * a secret drawn once per process from the kernel, written when the object
 * gets its class (pp_lua_setclass), so an object still being built, before
 * its metatable and fields are set, passes no check. No Lua code can read
 * or write a userdata's bytes. */
static uint64_t tag_secret;

uint64_t pp_lua_tag(const char *tname) {
  uint64_t secret = __atomic_load_n(&tag_secret, __ATOMIC_ACQUIRE);
  if (!secret) {
    uint64_t mine = 0;
    if (getrandom(&mine, sizeof mine, GRND_NONBLOCK) != (ssize_t)sizeof mine) {
      struct timespec ts; /* no entropy yet (early boot): the clock's */
      clock_gettime(CLOCK_MONOTONIC, &ts);
      mine = ((uint64_t)ts.tv_nsec << 32) ^ (uint64_t)ts.tv_sec ^
             ((uint64_t)getpid() << 16) ^ (uint64_t)(uintptr_t)&ts;
    }
    mine |= 1;
    uint64_t none = 0;
    if (__atomic_compare_exchange_n(&tag_secret, &none, mine, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      secret = mine;
    else
      secret = none; /* another thread's, set first */
  }
  uint64_t h = 0xcbf29ce484222325u;
  for (const unsigned char *p = (const unsigned char *)tname; *p; p++)
    h = (h ^ *p) * 0x100000001b3u;
  return (h ^ secret) | 1;
}

void *pp_lua_newobj(lua_State *L, size_t size, int nuv) {
  size_t at = (size + 7) & ~(size_t)7;
  unsigned char *p = lua_newuserdatauv(L, at + sizeof(uint64_t), nuv);
  /* no class yet: every tag has bit 0 set */
  memset(p + at, 0, sizeof(uint64_t));
  return p;
}

void pp_lua_settag_(lua_State *L, int idx, uint64_t tag) {
  size_t len = lua_rawlen(L, idx);
  unsigned char *p = lua_touserdata(L, idx);
  if (p && lua_type(L, idx) == LUA_TUSERDATA && len >= sizeof tag)
    memcpy(p + len - sizeof tag, &tag, sizeof tag);
}

void *pp_lua_testudata_(lua_State *L, int idx, uint64_t tag) {
  if (lua_type(L, idx) != LUA_TUSERDATA)
    return NULL;
  size_t len = lua_rawlen(L, idx);
  unsigned char *p = lua_touserdata(L, idx);
  uint64_t t;
  if (len < sizeof t)
    return NULL;
  memcpy(&t, p + len - sizeof t, sizeof t);
  return t == tag ? p : NULL;
}

void *pp_lua_checkudata_(lua_State *L, int idx, const char *tname,
                         uint64_t tag) {
  void *p = pp_lua_testudata_(L, idx, tag);
  if (!p)
    luaL_typeerror(L, idx, tname);
  return p;
}

void pp_lua_class_new(lua_State *L, const pp_lua_class *c) {
  luaL_newmetatable(L, c->name);
  fill(L, c);
  lua_pop(L, 1);
}

int pp_lua_class_push(lua_State *L, const pp_lua_class *c) {
  if (!luaL_newmetatable(L, c->name))
    return 0;
  fill(L, c);
  return 1;
}
