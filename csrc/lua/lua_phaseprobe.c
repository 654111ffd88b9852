/*
 * lua_phaseprobe.c: the probe's Lua API.
 *
 *   local pp = require "phaseprobe"
 *   pp.enable()
 *   pp.begin()
 *   do local _ <close> = pp.phase("prepare") ... end
 *   pp.measure("ptx", lower, program)
 *   pp.counts{ nodes = 120, ptx_bytes = #ptx }
 *   local rec = pp.emit{ seq = 1 }
 *
 * Disabled, every entry point returns after one load of the enable flag
 * (pp.phase returns nil, which a <close> variable accepts; pp.measure makes
 * the unmodified call).
 *
 * Here: the probe's entry points (enable, scopes, charges, counts, tags,
 * the dispatch's lifetime; its emit is lua_emit.c) over csrc/probe/, added
 * to the module table by pp_lua_open_probe; luaopen_phaseprobe
 * (lua_module.c) builds the module from this and every other binding file.
 */
#include "pp_lua.h"

#include <string.h>
#include <unistd.h>

#define STATE_MT "phaseprobe.state"
#define SCOPE_MT "phaseprobe.scope"

/* Per-Lua-state data: name tables for the schema they were built for (user
 * values 1: phase names, 2: nested names, each name -> index) and a small
 * cache from interned name strings to indices (user value 3 anchors the
 * cached strings, so a cached pointer always names the string it was looked
 * up with). The open scopes are not here: they are the thread's, in the C
 * accumulator (pp_scope_open), whatever Lua state or coroutine opened them. */
#define NAME_CACHE 16
#define SCOPE_POOL 64
typedef struct {
  int schema_id;
  /* The scope objects' pool: a table (an upvalue of pp.phase, pp.nested and
   * __close) of SCOPE_POOL slots, each empty or holding an object made for
   * it; free_slot[0..nfree) are the slots whose object is not handed out
   * (or not made yet). Closing through its <close> variable gives a slot
   * back without touching the table. */
  int nfree;
  unsigned char free_slot[SCOPE_POOL];
  void *slot_obj[SCOPE_POOL + 1]; /* the object in each slot, NULL: empty */
  const void *cache_key[NAME_CACHE];
  int cache_index[NAME_CACHE];
  char cache_nested[NAME_CACHE];
  unsigned cache_next;
  uint64_t scope_cost_ns; /* calibrated host cost of one scope or measure */
} lstate;

/* What pp.phase and pp.nested return: one object per open scope, so closing
 * it ends that scope and no other (coroutines close scopes out of order). A
 * phase scope holds its pp_scope; a nested region its start. `gen` is the
 * dispatch it opened in: closed after that dispatch was emitted, a scope
 * charges nothing more. An object its <close> variable closed goes back to
 * its state's pool (at most SCOPE_POOL of them) and is handed out again by
 * a later scope, so a scope costs no allocation; closing it again after
 * that (kept past its variable, closed by hand) would end the later scope.
 * An object closed by hand is never reused: a second close is a no-op. */
typedef struct {
  uint64_t tag; /* scope_tag: tells a scope object from other userdata */
  uint64_t id;  /* phase: the pp_scope; nested: start ticks */
  uint64_t gen;
  const void *owner; /* the lstate whose pool holds it (compared, never read) */
  int index;
  int slot;   /* its pool slot, 1..SCOPE_POOL; 0: not pooled */
  int nested; /* 0 phase, 1 nested region, -1 closed */
} scope_tok;

/* Set once per process (from addresses and the process id): the __close
 * metamethod checks an object by its size and this tag, which is cheaper
 * than comparing metatables on every close. */
static uint64_t scope_tag;

/* The dispatch generation of this thread's accumulator (pp_acc_clear). */
static uint64_t tls_gen(void) {
  pp_acc *a = pp_acc_get();
  return a ? a->gen : 0;
}

static lstate *get_state(lua_State *L) {
  return (lstate *)lua_touserdata(L, lua_upvalueindex(1));
}

static void build_names(lua_State *L, int st_idx, lstate *st,
                        const pp_schema *s) {
  for (int kind = 0; kind < 2; kind++) {
    size_t n = kind ? s->nnested : s->nphases;
    lua_createtable(L, 0, (int)n * 2);
    for (size_t i = 0; i < n; i++) {
      lua_pushinteger(L, (lua_Integer)i);
      lua_pushvalue(L, -1);
      lua_setfield(L, -3, kind ? s->nested[i] : s->phase[i]);
      lua_setfield(L, -2, kind ? s->nested_label[i] : s->phase_label[i]);
    }
    lua_setiuservalue(L, st_idx, kind + 1);
  }
  lua_createtable(L, NAME_CACHE, 0);
  lua_setiuservalue(L, st_idx, 3);
  memset(st->cache_key, 0, sizeof st->cache_key);
  st->cache_next = 0;
  st->schema_id = s->id;
}

/* Pushes and returns the n names of a schema's list (phases, nested
 * regions, counts, caches) joined by ", ", or `none` when there are none:
 * what an error message gives as valid. */
static const char *push_names(lua_State *L, const char (*names)[PP_NAME_MAX + 1],
                              size_t n, const char *none) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (size_t i = 0; i < n; i++) {
    if (i)
      luaL_addstring(&b, ", ");
    luaL_addstring(&b, names[i]);
  }
  if (n == 0)
    luaL_addstring(&b, none);
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

static int unknown_name(lua_State *L, int arg, const pp_schema *s, int nested) {
  if (lua_type(L, arg) != LUA_TSTRING)
    return luaL_typeerror(L, arg, nested ? "string (a nested region's name)" : "string (a phase name)");
  const char *valid = nested ? push_names(L, s->nested, s->nnested, "(none)")
                             : push_names(L, s->phase, s->nphases, "(none)");
  if (pp_lua_hasnul(L, arg))
    return luaL_argerror(L, arg, lua_pushfstring(L, "%s name contains a NUL byte",
                                                 nested ? "nested region" : "phase"));
  const char *given = luaL_tolstring(L, arg, NULL);
  const char *msg =
      lua_pushfstring(L, "unknown %s '%s' (valid: %s)",
                      nested ? "nested region" : "phase", given, valid);
  return luaL_argerror(L, arg, msg);
}

/* The schema a charge goes against: the pending dispatch's, or, with none
 * pending, the thread's current schema, under which the charge opens the
 * next record (the reference's accumulator always exists: charges made
 * before any pp.begin land in the next emit). */
static const pp_schema *open_schema(lua_State *L, const char *what) {
  (void)L;
  (void)what;
  const pp_schema *s = pp_open_schema();
  return s ? s : pp_schema_current();
}

/* Looks up argument `arg` as a phase (nested=0) or nested region name and
 * returns its index, raising on an unknown name. */
static int lookup(lua_State *L, int arg, int nested, const char *what) {
  const pp_schema *s = open_schema(L, what);
  lstate *st = get_state(L);
  if (st->schema_id != s->id)
    build_names(L, lua_upvalueindex(1), st, s);
  lua_getiuservalue(L, lua_upvalueindex(1), nested + 1);
  lua_pushvalue(L, arg);
  if (lua_rawget(L, -2) != LUA_TNUMBER)
    return unknown_name(L, arg, s, nested);
  int idx = (int)lua_tointeger(L, -1);
  lua_pop(L, 2);
  return idx;
}

/* ---- enable ------------------------------------------------------------- */
static uint64_t calibrate_scope_cost(lua_State *L);

/* The state's scope cost is measured the first time the probe is on for it
 * (pp.enable, pp.begin before its start time, or the module loaded with the
 * probe already on): never at a bare require, never inside a dispatch. */
static void ensure_scope_cost(lua_State *L, lstate *st) {
  if (!st->scope_cost_ns && pp_enabled())
    st->scope_cost_ns = calibrate_scope_cost(L);
}

static int l_enable(lua_State *L) {
  pp_set_enabled(pp_lua_optswitch(L, 1));
  ensure_scope_cost(L, get_state(L));
  return 0;
}
static int l_disable(lua_State *L) {
  (void)L;
  pp_set_enabled(0);
  return 0;
}
static int l_enabled(lua_State *L) {
  lua_pushboolean(L, pp_enabled());
  return 1;
}

/* ---- scopes ------------------------------------------------------------- */
/* Index of the name at stack slot 1 for this schema, through the cache. */
static int scope_index(lua_State *L, lstate *st, const pp_schema *s, int nested,
                       const char *what) {
  if (st->schema_id != s->id)
    build_names(L, lua_upvalueindex(1), st, s);
  /* Only strings are cached, each anchored while cached: a pointer equal
   * to a cached one is that string. */
  const void *key = lua_topointer(L, 1);
  if (key)
    for (int i = 0; i < NAME_CACHE; i++)
      if (st->cache_key[i] == key && st->cache_nested[i] == nested)
        return st->cache_index[i];
  int idx = lookup(L, 1, nested, what);
  if (key && lua_type(L, 1) == LUA_TSTRING) {
    unsigned slot = st->cache_next++ % NAME_CACHE;
    lua_getiuservalue(L, lua_upvalueindex(1), 3);
    lua_pushvalue(L, 1);
    lua_rawseti(L, -2, (lua_Integer)slot + 1); /* anchors the string */
    lua_pop(L, 1);
    st->cache_key[slot] = key;
    st->cache_index[slot] = idx;
    st->cache_nested[slot] = (char)nested;
  }
  return idx;
}

/* Opens the thread's scope for phase idx, raising where none can open. */
static pp_scope open_scope(lua_State *L, int idx, const char *what) {
  pp_scope sc = pp_scope_open(idx);
  if (!sc) {
    pp_acc *a = pp_acc_get();
    if (a && a->ended)
      luaL_error(L, "phaseprobe.%s: the dispatch on this thread is finished "
                    "(phaseprobe.finish): a scope now would lie outside its "
                    "wall_ns; emit it first",
                 what);
    if (a && a->depth >= PP_SCOPE_DEPTH)
      luaL_error(L, "phaseprobe.%s: more than %d scopes open at once on this "
                    "thread",
                 what, PP_SCOPE_DEPTH);
  }
  return sc;
}

static int push_scope(lua_State *L, int nested, const char *what) {
  if (!pp_enabled())
    return 0;
  lstate *st = get_state(L);
  const pp_schema *s = open_schema(L, what);
  int idx = scope_index(L, st, s, nested, what);
  scope_tok *t;
  int slot = st->nfree > 0 ? st->free_slot[--st->nfree] : 0;
  if (slot && st->slot_obj[slot]) {
    lua_rawgeti(L, lua_upvalueindex(3), slot);
    t = st->slot_obj[slot];
  } else {
    t = lua_newuserdatauv(L, sizeof *t, 0);
    t->tag = __atomic_load_n(&scope_tag, __ATOMIC_RELAXED);
    t->owner = st;
    t->slot = slot;
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_setmetatable(L, -2);
    if (slot) {
      lua_pushvalue(L, -1);
      lua_rawseti(L, lua_upvalueindex(3), slot);
      st->slot_obj[slot] = t;
    }
  }
  t->index = idx;
  t->nested = nested;
  if (nested) {
    pp_acc *a = pp_acc_get();
    t->gen = a ? a->gen : 0;
    t->id = pp_now_inline();
  } else {
    t->id = open_scope(L, idx, what);
  }
  return 1;
}

static int l_phase(lua_State *L) { return push_scope(L, 0, "phase"); }
static int l_nested(lua_State *L) { return push_scope(L, 1, "nested"); }

/* The scope object at idx: a userdata of its size holding the tag (a
 * light userdata has no length; the scopes keep their own tag rather than
 * the classes' pp_lua_checkudata: about 90 instructions less a scope,
 * callgrind, 1,058 against 1,148). */
static scope_tok *to_scope(lua_State *L, int idx) {
  scope_tok *t = lua_touserdata(L, idx);
  if (!t || lua_rawlen(L, idx) != sizeof *t ||
      t->tag != __atomic_load_n(&scope_tag, __ATOMIC_RELAXED))
    luaL_typeerror(L, idx, SCOPE_MT);
  return t;
}

/* __close(scope, err): ends this scope at the time it was called, error or
 * not, wherever it is on the thread's stack, and gives the object's pool
 * slot back. Upvalues: 1 the scope metatable, 2 the pool, 3 the state. */
static int scope_close(lua_State *L) {
  pp_ticks now = pp_now_inline();
  scope_tok *t = to_scope(L, 1);
  if (t->nested < 0)
    return 0;
  lstate *st = lua_touserdata(L, lua_upvalueindex(3));
  if (!t->nested) {
    pp_scope_end_at(t->id, now, st->scope_cost_ns);
  } else if (tls_gen() == t->gen) { /* else emitted inside the region */
    pp_add_probe_ns(st->scope_cost_ns);
    pp_add_nested_ns(t->index, pp_ticks_to_ns(t->id, now));
  }
  t->nested = -1;
  if (!t->slot || t->owner != st || st->nfree >= SCOPE_POOL)
    return 0;
  /* Reused only when its <close> variable closed it (Lua passes the value
   * and the error: two arguments). An object closed by hand, with one,
   * leaves the pool for good (its slot gets a new object), so closing it
   * again by hand stays a no-op. */
  int slot = t->slot;
  if (lua_gettop(L) < 2) {
    lua_pushnil(L);
    lua_rawseti(L, lua_upvalueindex(2), slot);
    st->slot_obj[slot] = NULL;
    t->slot = 0;
  }
  st->free_slot[st->nfree++] = (unsigned char)slot;
  return 0;
}

static int scope_tostring(lua_State *L) {
  scope_tok *t = to_scope(L, 1);
  lua_pushfstring(L, "phaseprobe.scope (%s %d%s)",
                  t->nested > 0 ? "nested" : "phase", t->index,
                  t->nested < 0 ? ", closed" : "");
  return 1;
}

/* measure(phase, fn, ...) -> fn's results; charged on error too. */
static int measure(lua_State *L, int nested, const char *what) {
  luaL_checktype(L, 2, LUA_TFUNCTION);
  if (!pp_enabled()) {
    lua_call(L, lua_gettop(L) - 2, LUA_MULTRET);
    return lua_gettop(L) - 1;
  }
  lstate *st = get_state(L);
  int idx = scope_index(L, st, open_schema(L, what), nested, what);
  int nargs = lua_gettop(L) - 2;
  uint64_t gen = 0;
  pp_ticks t0 = 0;
  pp_scope sc = 0;
  if (nested) {
    gen = tls_gen();
    t0 = pp_now_inline();
  } else {
    sc = open_scope(L, idx, what);
  }
  int rc = lua_pcall(L, nargs, LUA_MULTRET, 0);
  pp_ticks t1 = pp_now_inline();
  if (nested) {
    if (tls_gen() == gen) {
      pp_add_probe_ns(st->scope_cost_ns);
      pp_add_nested_ns(idx, pp_ticks_to_ns(t0, t1));
    }
  } else {
    pp_scope_end_at(sc, t1, st->scope_cost_ns);
  }
  if (rc != LUA_OK)
    return lua_error(L);
  return lua_gettop(L) - 1;
}
static int l_measure(lua_State *L) { return measure(L, 0, "measure"); }
static int l_measure_nested(lua_State *L) {
  return measure(L, 1, "measure_nested");
}

/* ---- marks and charges --------------------------------------------------- */
static int l_mark(lua_State *L) {
  if (!pp_enabled())
    return 0;
  lua_pushinteger(L, (lua_Integer)pp_now_inline());
  return 1;
}

/* A start from pp.mark(): an integer, or nil (pp.mark() while disabled:
 * the charge is skipped). Absent, it is refused: pp.lap("ptx") is a call
 * that forgot its start; so is an integer no mark can be (pp_start_check):
 * a small number, pp.now()'s nanoseconds on the TSC, a time ahead. */
static pp_ticks opt_ticks(lua_State *L, int arg) {
  pp_take_bad_start(); /* a note left by a C caller's charge is not ours */
  if (lua_isnil(L, arg))
    return 0;
  if (!lua_isinteger(L, arg))
    luaL_argerror(L, arg,
                  lua_isnone(L, arg)
                      ? "start expected (a value of phaseprobe.mark(), or nil)"
                      : lua_pushfstring(L, "start must be an integer from "
                                           "phaseprobe.mark(), got %s",
                                        luaL_typename(L, arg)));
  return (pp_ticks)lua_tointeger(L, arg);
}

/* After a charge from the start at `arg`: raises where the charge refused
 * it (pp_start_check; nothing was charged). */
static void check_start(lua_State *L, int arg) {
  int why = pp_take_bad_start();
  if (__builtin_expect(why != PP_START_OK, 0))
    luaL_argerror(
        L, arg,
        why == PP_START_EARLY
            ? "not a start from phaseprobe.mark(): earlier than the probe "
              "clock's first reading (pp.now() is in ns, not a mark)"
            : "not a start from phaseprobe.mark(): later than now");
}

/* charge(phase, t) and charge_nested(region, t): the time since t. */
static int charge(lua_State *L, int nested, const char *what) {
  if (!pp_enabled())
    return 0;
  int idx = scope_index(L, get_state(L), open_schema(L, what), nested, what);
  pp_ticks t = opt_ticks(L, 2);
  if (nested)
    pp_charge_nested(idx, t);
  else
    pp_charge(idx, t);
  check_start(L, 2);
  return 0;
}
static int l_charge(lua_State *L) { return charge(L, 0, "charge"); }
static int l_charge_nested(lua_State *L) { return charge(L, 1, "charge_nested"); }

/* lap(phase, t) -> the new start. A nil t (pp.mark() while the probe was
 * off) charges nothing and returns a start, so the next lap charges. */
static int l_lap(lua_State *L) {
  if (!pp_enabled())
    return 0;
  int idx = scope_index(L, get_state(L), open_schema(L, "lap"), 0, "lap");
  pp_ticks t = opt_ticks(L, 2);
  lua_pushinteger(L, (lua_Integer)(t ? pp_lap(idx, t) : pp_now_inline()));
  check_start(L, 2);
  return 1;
}

static int l_charge_remainder(lua_State *L) {
  if (!pp_enabled())
    return 0;
  int outer = lookup(L, 1, 0, "charge_remainder");
  pp_ticks t = opt_ticks(L, 2);
  int inner = lookup(L, 3, 0, "charge_remainder");
  pp_charge_remainder(outer, t, inner);
  check_start(L, 2);
  return 0;
}

static uint64_t check_ns(lua_State *L, int arg) {
  lua_Integer v = luaL_checkinteger(L, arg);
  luaL_argcheck(L, v >= 0, arg, "nanoseconds must not be negative");
  return (uint64_t)v;
}

/* add_ns(phase, ns), add_nested_ns(region, ns) */
static int add_ns(lua_State *L, int nested, const char *what) {
  if (!pp_enabled())
    return 0;
  int idx = lookup(L, 1, nested, what);
  (nested ? pp_add_nested_ns : pp_add_ns)(idx, check_ns(L, 2));
  return 0;
}

static int l_add_ns(lua_State *L) { return add_ns(L, 0, "add_ns"); }
static int l_add_nested_ns(lua_State *L) {
  return add_ns(L, 1, "add_nested_ns");
}

/* phase_ns(phase) -> ns charged to it in the pending dispatch; the name is
 * checked whether or not one is pending (disabled: 0, after the flag). */
static int l_phase_ns(lua_State *L) {
  if (!pp_enabled()) {
    lua_pushinteger(L, 0);
    return 1;
  }
  int idx = lookup(L, 1, 0, "phase_ns");
  lua_pushinteger(L, pp_is_open() ? (lua_Integer)pp_phase_ns(idx) : 0);
  return 1;
}

/* ---- counts, kernel time, caches, tags --------------------------------- */
static void set_count(lua_State *L, const pp_schema *s, int name_idx,
                      int val_idx) {
  const char *name = pp_lua_tocname(L, name_idx, "phaseprobe.counts");
  if (!name)
    luaL_error(L, "phaseprobe.counts: count names are strings, got %s",
               luaL_typename(L, name_idx));
  int i = pp_schema_count_index(s, name);
  if (i < 0)
    luaL_error(L, "phaseprobe.counts: unknown count '%s' (valid: %s)", name,
               push_names(L, s->count, s->ncounts, ""));
  lua_Integer v = lua_tointeger(L, val_idx);
  if (!lua_isinteger(L, val_idx) || v < 0)
    luaL_error(L, "phaseprobe.counts: count '%s' must be a non-negative "
                  "integer, got %s",
               name, luaL_tolstring(L, val_idx, NULL));
  pp_set_count(i, (uint64_t)v);
}

/* counts{name = n, ...} or count(name, n) */
static int l_counts(lua_State *L) {
  if (!pp_enabled())
    return 0;
  const pp_schema *s = open_schema(L, "counts");
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    set_count(L, s, -2, -1);
    lua_pop(L, 1);
  }
  return 0;
}

static int l_count(lua_State *L) {
  if (!pp_enabled())
    return 0;
  const pp_schema *s = open_schema(L, "count");
  set_count(L, s, 1, 2);
  return 0;
}

static int l_kernel_ns(lua_State *L) {
  if (!pp_enabled())
    return 0;
  open_schema(L, "kernel_ns");
  static const char *const srcs[] = {"none", "event", "cupti", "user", NULL};
  uint64_t ns = check_ns(L, 1);
  int src = pp_lua_checkoption(L, 2, "user", srcs);
  uint64_t floor_ns = lua_isnoneornil(L, 3) ? 0 : check_ns(L, 3);
  pp_record_kernel(ns, (pp_kernel_src)src, floor_ns);
  return 0;
}

/* device_window_ns(ns), probe_ns(ns): a figure of the dispatch, handed to
 * `record`. */
static int record_ns(lua_State *L, const char *what, void (*record)(uint64_t)) {
  if (!pp_enabled())
    return 0;
  open_schema(L, what);
  record(check_ns(L, 1));
  return 0;
}

static int l_device_window_ns(lua_State *L) {
  return record_ns(L, "device_window_ns", pp_record_device_window_ns);
}

static int l_cache(lua_State *L) {
  if (!pp_enabled())
    return 0;
  const pp_schema *s = open_schema(L, "cache");
  static const char *const outcomes[] = {"hit", "miss", "disk_hit", NULL};
  const char *name = pp_lua_checkname(L, 1);
  int c = pp_schema_cache_index(s, name);
  if (c < 0) {
    const char *has = push_names(L, s->cache, s->ncaches, "none");
    return luaL_argerror(L, 1, lua_pushfstring(L, "unknown cache '%s' (schema '%s' has: %s)",
                                               name, s->prefix, has));
  }
  pp_cache_event(c, (pp_cache_outcome)pp_lua_checkoption(L, 2, NULL, outcomes));
  return 0;
}

static int l_probe_ns(lua_State *L) {
  return record_ns(L, "probe_ns", pp_add_probe_ns);
}

/* tag(key, value | nil): strings only; nil removes the tag. */
static int l_tag(lua_State *L) {
  const char *key = pp_lua_checkname(L, 1);
  const char *value = NULL;
  if (!lua_isnoneornil(L, 2))
    value = pp_lua_checkname(L, 2);
  char buf[160];
  const char *why = pp_tag_refusal(key, value, buf, sizeof buf);
  if (why)
    return luaL_error(L, "phaseprobe.tag: refused '%s'='%s': %s", key,
                      value ? value : "nil", why);
  if (pp_tag(key, value) != 0)
    return luaL_error(L,
                      "phaseprobe.tag: refused '%s'='%s': all tags of a "
                      "thread fit in %d bytes",
                      key, value ? value : "nil", PP_TAGS_MAX);
  return 0;
}

/* ---- dispatch lifetime --------------------------------------------------- */
static int l_begin(lua_State *L) {
  lstate *st = get_state(L);
  /* The name tables for this dispatch's schema are built here, before the
   * start time is taken, not by the first scope inside the dispatch. */
  const pp_schema *s = pp_schema_current();
  if (pp_enabled() && st->schema_id != s->id)
    build_names(L, lua_upvalueindex(1), st, s);
  ensure_scope_cost(L, st);
  pp_begin();
  return 0;
}

static int l_finish(lua_State *L) {
  (void)L;
  pp_end();
  return 0;
}

static int l_is_open(lua_State *L) {
  lua_pushboolean(L, pp_is_open());
  return 1;
}

/* functions that need the per-state upvalue */
static const luaL_Reg state_fns[] = {
    {"phase", l_phase},
    {"nested", l_nested},
    {"measure", l_measure},
    {"measure_nested", l_measure_nested},
    {"charge", l_charge},
    {"charge_since", l_charge},
    {"lap", l_lap},
    {"charge_nested", l_charge_nested},
    {"charge_remainder", l_charge_remainder},
    {"add_ns", l_add_ns},
    {"add_nested_ns", l_add_nested_ns},
    {"phase_ns", l_phase_ns},
    {"begin", l_begin},
    {"enable", l_enable},
    {NULL, NULL}};

static const luaL_Reg plain_fns[] = {
    {"disable", l_disable},
    {"enabled", l_enabled},
    {"mark", l_mark},
    {"counts", l_counts},
    {"count", l_count},
    {"kernel_ns", l_kernel_ns},
    {"device_window_ns", l_device_window_ns},
    {"cache", l_cache},
    {"probe_ns", l_probe_ns},
    {"tag", l_tag},
    {"finish", l_finish},
    {"is_open", l_is_open},
    {"emit", pp_lua_emit},
    {NULL, NULL}};

static int nothing(lua_State *L) {
  (void)L;
  return 0;
}

/* The probe's own cost of one scope (or measure) from Lua, for probe_ns:
 * two calls from Lua into C (open, close) and two clock reads. The call
 * cost is measured here, once per state, as the best of a few batches of
 * lua_call to an empty C function. */
static uint64_t calibrate_scope_cost(lua_State *L) {
  enum { N = 2000 };
  uint64_t best = UINT64_MAX;
  for (int rep = 0; rep < 5; rep++) {
    pp_ticks t0 = pp_now();
    for (int i = 0; i < N; i++) {
      lua_pushcfunction(L, nothing);
      lua_call(L, 0, 0);
    }
    uint64_t el = pp_ticks_to_ns(t0, pp_now());
    if (el < best)
      best = el;
  }
  const pp_clock_info *c = pp_clock();
  uint64_t ns = (uint64_t)(2.0 * (double)best / N + 2.0 * c->read_ns[c->kind] + 0.5);
  return ns ? ns : 1; /* 0 means "not measured yet" */
}

/* With the module table on top: this state's data (the first upvalue of
 * state_fns), the scopes' metatable and pool, and the entry points. */
void pp_lua_open_probe(lua_State *L) {
  lstate *st = pp_lua_newobj(L, sizeof *st, 3);
  memset(st, 0, sizeof *st);
  st->schema_id = -1;
  for (int i = 0; i < SCOPE_POOL; i++) /* slot 1 first */
    st->free_slot[st->nfree++] = (unsigned char)(SCOPE_POOL - i);
  ensure_scope_cost(L, st);
  pp_lua_class_new(L, &(pp_lua_class){.name = STATE_MT});
  pp_lua_setclass(L, STATE_MT);

  /* The scopes' metatable: in this state's registry under its __name, and
   * the second upvalue of the functions that make scopes; their pool of
   * closed scope objects, the third. */
  if (!__atomic_load_n(&scope_tag, __ATOMIC_ACQUIRE)) {
    /* Lua states opened at once in several threads: one tag wins */
    static char here;
    uint64_t tag = (((uint64_t)(uintptr_t)&here * 0x9e3779b97f4a7c15u) ^
                    ((uint64_t)(uintptr_t)L * 0xbf58476d1ce4e5b9u) ^
                    ((uint64_t)getpid() << 32) ^ 0x5c09e7a65c09e7a6u) | 1;
    uint64_t none = 0;
    __atomic_compare_exchange_n(&scope_tag, &none, tag, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
  }
  /* its __close is a closure over the metatable, the pool and the state */
  pp_lua_class_push(L, &(pp_lua_class){.name = SCOPE_MT});
  lua_createtable(L, SCOPE_POOL, 0);
  lua_pushvalue(L, -2);
  lua_pushvalue(L, -2);
  lua_pushvalue(L, -5);
  lua_pushcclosure(L, scope_close, 3);
  lua_setfield(L, -3, "__close");
  lua_pushcfunction(L, scope_tostring);
  lua_setfield(L, -3, "__tostring");

  luaL_setfuncs(L, state_fns, 3); /* pops all three: upvalues now */
  luaL_setfuncs(L, plain_fns, 0);
}
