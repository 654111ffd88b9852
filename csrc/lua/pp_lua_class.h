/*
 * pp_lua_class.h: the helpers that make the bindings' userdata classes and
 * their read-only views (lua_class.c); included by pp_lua.h, not installed.
 *
 * A class is a metatable in the registry under its name (luaL_newmetatable
 * also sets __name, which error messages and tostring fall back on). Its
 * __metatable is a read-only view of it: getmetatable(obj) reads every
 * field (getmetatable(obj).__close is the class's) but cannot write one,
 * and setmetatable cannot change an object's. Its
 * __index finds the methods first, then asks a getter for the fields of
 * the object (a context's `name`, a window's `kernel_ns`); a class with
 * only one of the two gets that one directly.
 *
 * Handles follow LuaFileSystem's directory objects: the userdata keeps a
 * `closed` flag; close(), __close and __gc release through one idempotent
 * function (the same function, or functions that share the release); any
 * other method on a closed handle fails with PP_CHECK_OPEN:
 * "bad argument #1 to 'method' (closed <kind>)".
 */
#ifndef PP_LUA_CLASS_H
#define PP_LUA_CLASS_H

#include <lauxlib.h>
#include <lua.h>

typedef struct pp_lua_class {
  const char *name;        /* registry key and __name ("phaseprobe.columns") */
  const luaL_Reg *methods; /* found first by __index; NULL: none           */
  lua_CFunction get;       /* get(obj, key) for other string keys; NULL    */
  lua_CFunction gc;        /* __gc; NULL: none                             */
  lua_CFunction close;     /* __close; NULL: none                          */
  lua_CFunction tostring;  /* __tostring; NULL: Lua's "<name>: 0x..."      */
  lua_CFunction len;       /* __len; NULL: none                            */
  lua_CFunction eq;        /* __eq of two objects of the class (a foreign
                              value is unequal, eq never sees it); NULL: none */
  lua_CFunction call;      /* __call; NULL: none                           */
  lua_CFunction newindex;  /* __newindex; NULL: none                       */
  lua_CFunction pairs;     /* __pairs; NULL: none                          */
} pp_lua_class;

/* Creates the class's metatable, or fills the one already registered under
 * that name again (the module loaded twice into one state), and leaves the
 * stack as it was. */
void pp_lua_class_new(lua_State *L, const pp_lua_class *c);

/* Pushes the class's metatable, made on first use: returns 1 when it was
 * made now (the caller may add fields to it), 0 when it was there (left as
 * it is). For classes made on demand (lua_show.c). */
int pp_lua_class_push(lua_State *L, const pp_lua_class *c);

/* Objects of a class made here are allocated by pp_lua_newobj (size bytes
 * for the caller, nuv user values, and room for the class's tag), given
 * their class once built by pp_lua_setclass (the metatable of class tname
 * for the object on top, and its tag), and checked by pp_lua_testudata and
 * pp_lua_checkudata: lua_newuserdatauv, luaL_setmetatable, luaL_testudata
 * and luaL_checkudata, with checks at a fifth of the cost (not for another
 * library's classes, such as Lua's files). pp_lua_settag writes the tag
 * alone, for an object whose metatable is set otherwise. tname must be a
 * constant (each call site keeps its tag); pp_lua_tag serves any name. */
uint64_t pp_lua_tag(const char *tname);
void *pp_lua_newobj(lua_State *L, size_t size, int nuv);
void pp_lua_settag_(lua_State *L, int idx, uint64_t tag);
void *pp_lua_testudata_(lua_State *L, int idx, uint64_t tag);
void *pp_lua_checkudata_(lua_State *L, int idx, const char *tname,
                         uint64_t tag);
#define PP_LUA_TAG_(tname)                                                     \
  __extension__({                                                              \
    static uint64_t tag_;                                                      \
    uint64_t t_ = __atomic_load_n(&tag_, __ATOMIC_RELAXED);                    \
    if (__builtin_expect(!t_, 0)) {                                            \
      t_ = pp_lua_tag(tname);                                                  \
      __atomic_store_n(&tag_, t_, __ATOMIC_RELAXED);                           \
    }                                                                          \
    t_;                                                                        \
  })
#define pp_lua_settag(L, idx, tname)                                           \
  pp_lua_settag_((L), (idx), PP_LUA_TAG_(tname))
#define pp_lua_setclass(L, tname)                                              \
  do {                                                                         \
    luaL_setmetatable((L), (tname));                                           \
    pp_lua_settag((L), -1, (tname));                                           \
  } while (0)
#define pp_lua_testudata(L, idx, tname)                                        \
  pp_lua_testudata_((L), (idx), PP_LUA_TAG_(tname))
#define pp_lua_checkudata(L, idx, tname)                                       \
  pp_lua_checkudata_((L), (idx), (tname), PP_LUA_TAG_(tname))

/* Pushes a read-only view of the table at idx and, on top, the view's
 * metatable as far as every view has it: the view is an empty table whose
 * reads go through to the table (__index) and whose metatable is hidden
 * (__metatable = false). The caller adds __newindex (the error a write
 * raises) and any other event (nevents in all, for the table's size), then
 * lua_setmetatable(L, -2). The class metatables' views (getmetatable(obj))
 * and a record's field list (r._fields) are such views. */
void pp_lua_view_open(lua_State *L, int idx, int nevents);

/* close() (and __close) and __gc of a handle whose methods may run Lua
 * code (a callback, or a finalizer during one of their allocations) that
 * closes it. T has `closed` and `busy` (methods running that can run Lua
 * code); free_fn(T *) frees what it holds, once. close frees now, or,
 * while busy, leaves it to the method running, on its way out; __gc frees
 * whatever busy says, as no method of an unreachable handle runs. */
#define PP_LUA_BUSY_CLOSE_GC(close_fn, gc_fn, T, mt, free_fn)                 \
  static int close_fn(lua_State *L) {                                         \
    T *u_ = pp_lua_checkudata(L, 1, mt);                                        \
    u_->closed = 1;                                                           \
    if (u_->busy == 0)                                                        \
      free_fn(u_);                                                            \
    return 0;                                                                 \
  }                                                                           \
  static int gc_fn(lua_State *L) {                                            \
    T *u_ = pp_lua_checkudata(L, 1, mt);                                        \
    u_->closed = 1;                                                           \
    u_->busy = 0;                                                             \
    free_fn(u_);                                                              \
    return 0;                                                                 \
  }

/* Raises "bad argument #1 (closed KIND)" unless cond holds. */
#define PP_CHECK_OPEN(L, cond, kind) luaL_argcheck(L, (cond), 1, "closed " kind)

#endif
