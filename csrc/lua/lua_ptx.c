/*
 * lua_ptx.c: pp.ptx, the PTX scanner from Lua.
 *
 *   local r = pp.ptx.scan(text [, { markers = {...}, counter_global = name
 *                                   or false, max_line = n }])
 *   local r, err = pp.ptx.scan_file(path [, opts])   -- nil, msg if unreadable
 *                                  (opts.max_bytes: largest file read, default
 *                                  pp.ptx.max_bytes = 1 GiB; reading stops
 *                                  at the first NUL byte, where the scan
 *                                  stops: the result then has truncated =
 *                                  true, and bytes, lines, digest and
 *                                  markers cover the text up to that byte)
 *   pp.ptx.summary(text [, opts]) -> the module-level part of scan's result,
 *                                    entry names under entry_names
 *   pp.ptx.count(text, marker)  -> occurrences (non-overlapping)
 *   pp.ptx.digest(text)         -> 16 lowercase hex digits (XXH3-64, seed 0)
 *   pp.ptx.lines(text)          -> lines ('\n' count, +1 for an unended last)
 *   pp.ptx.parallel_min         -- bytes (default 256 KiB) from which scan
 *                                  and scan_file run the scan on a second
 *                                  thread while the tables are made; false:
 *                                  never
 *
 * scan's result:
 *   bytes, lines, version, target, address_size (absent when not declared),
 *   entries = { { name, visible, extern, weak, defined, line, col,
 *                 params = { { name, type, size, align, array, offset, ptr } },
 *                 maxntid = {x,y,z}, reqntid = {x,y,z}, minnctapersm, maxnreg
 *                   (each only when declared),
 *                 instructions, registers = { [".b32"] = n, ... },
 *                 bar_sync, atomics, atomics_global, grid_syncs,
 *                 barrier_markers (first marker inside the body), grid_sync,
 *                 vars = { like globals, declared in the body },
 *                 shared_bytes, local_bytes, body_begin, body_end }, ... },
 *   funcs = { name, ... },
 *   globals = { { name, space = "global"|"const"|"shared"|"local", type,
 *                 size, align, array, extern, visible, line }, ... },
 *   markers = { [marker] = count }, counter_global, grid_sync,
 *   digest (hex string; absent when built without xxhash.h),
 *   errors = { { what, line, col, offset }, ... }, errors_dropped, partial,
 *   path, truncated (scan_file only).
 *
 * Misuse (wrong types, unknown options, bad markers) raises; a file that
 * cannot be read (missing, a directory, past max_bytes, more than memory
 * holds) returns nil, message; text the scanner cannot read gives a result
 * with partial = true and its errors. Options are copied as they are read.
 */
#define _GNU_SOURCE 1 /* sched_getaffinity, CPU_COUNT */
#include "pp_lua.h"
#include "pp_ptx.h"
#include "ptx_internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- options ---------------------------------------------------------------- */
/* The options, with their strings copied in (no Lua string is used after
 * the table holding it could have let it go). */
typedef struct {
  pp_ptx_opts o;
  const char *markers[PP_PTX_MAX_MARKERS];
  char marker_buf[PP_PTX_MAX_MARKERS][PP_PTX_MARKER_MAX + 1];
  char counter[PP_PTX_COUNTER_MAX + 1];
  uint64_t max_bytes; /* scan_file only */
} lopts;

/* The largest PTX file read by default: a guard, not a format limit; PTX
 * that a driver compiles in reasonable time is far smaller. */
#define PTX_MAX_BYTES ((uint64_t)1 << 30)

static void read_markers(lua_State *L, lopts *lo, const char *fn) {
  if (!lua_istable(L, -1))
    luaL_error(L, "%s: option 'markers' must be a list of strings", fn);
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
  if (n < 1 || n > PP_PTX_MAX_MARKERS)
    luaL_error(L, "%s: option 'markers' must hold 1 to %d strings, got %d",
               fn, PP_PTX_MAX_MARKERS, (int)n);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    size_t len;
    const char *m = lua_tolstring(L, -1, &len);
    if (lua_type(L, -1) != LUA_TSTRING || len == 0 ||
        len > PP_PTX_MARKER_MAX || strlen(m) != len)
      luaL_error(L, "%s: markers[%d] must be a non-empty string of at most "
                    "%d bytes without NUL",
                 fn, (int)i, PP_PTX_MARKER_MAX);
    memcpy(lo->marker_buf[i - 1], m, len + 1);
    lo->markers[i - 1] = lo->marker_buf[i - 1];
    lua_pop(L, 1);
  }
  lo->o.markers = lo->markers;
  lo->o.nmarkers = (size_t)n;
}

/* The value on top of the stack, option `name` of fn: a positive integer,
 * else raises. */
static lua_Integer positive_opt(lua_State *L, const char *fn,
                                const char *name) {
  lua_Integer n = lua_tointeger(L, -1);
  if (!lua_isinteger(L, -1) || n < 1)
    luaL_error(L, "%s: option '%s' must be a positive integer, got %s", fn,
               name, luaL_tolstring(L, -1, NULL));
  return n;
}

static void read_opts(lua_State *L, int t, lopts *lo, const char *fn,
                      int file) {
  memset(lo, 0, sizeof *lo);
  lo->max_bytes = PTX_MAX_BYTES;
  if (lua_isnoneornil(L, t))
    return;
  luaL_checktype(L, t, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, t)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? pp_lua_tocname(L, -2, fn) : NULL;
    if (k && strcmp(k, "markers") == 0) {
      read_markers(L, lo, fn);
    } else if (k && strcmp(k, "counter_global") == 0) {
      size_t len = 0;
      const char *cg = lua_type(L, -1) == LUA_TSTRING
                           ? lua_tolstring(L, -1, &len)
                           : NULL;
      if (lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1)) {
        lo->o.counter_global = "";
      } else if (!cg || len > PP_PTX_COUNTER_MAX || strlen(cg) != len) {
        luaL_error(L, "%s: option 'counter_global' must be a name of at most "
                      "%d bytes, or false",
                   fn, PP_PTX_COUNTER_MAX);
      } else {
        memcpy(lo->counter, cg, len + 1);
        lo->o.counter_global = lo->counter;
      }
    } else if (k && strcmp(k, "max_line") == 0) {
      lo->o.max_line = (size_t)positive_opt(L, fn, k);
    } else if (file && k && strcmp(k, "max_bytes") == 0) {
      lo->max_bytes = (uint64_t)positive_opt(L, fn, k);
    } else {
      luaL_error(L, "%s: unknown option '%s' (valid: markers, counter_global, "
                    "max_line%s)",
                 fn, luaL_tolstring(L, -2, NULL), file ? ", max_bytes" : "");
    }
    lua_pop(L, 1);
  }
}

/* ---- results ------------------------------------------------------------------ */
/* Result tables are built with field-name strings held as upvalues of the
 * functions that build them (pushed once at open), then rawset: a table of
 * a thousand entries costs no string lookups for its keys. */
#define KEYS(X)                                                                \
  X(address_size) X(align) X(array) X(atomics) X(atomics_global) X(bar_sync)   \
  X(barrier_markers) X(body_begin) X(body_end) X(bytes) X(col)                 \
  X(counter_global) X(defined) X(digest) X(entries) X(errors)                  \
  X(errors_dropped) X(extern) X(funcs) X(globals) X(grid_sync) X(grid_syncs)   \
  X(instructions) X(line) X(lines) X(local_bytes) X(markers) X(maxnreg)        \
  X(maxntid) X(minnctapersm) X(name) X(offset) X(params) X(partial) X(path)    \
  X(ptr) X(registers) X(reqntid) X(shared_bytes) X(size) X(space) X(target)    \
  X(truncated) X(type) X(vars) X(version) X(visible) X(weak) X(what) X(entry_names)

enum {
#define KEY_ENUM(k) K_##k,
  KEYS(KEY_ENUM)
#undef KEY_ENUM
  K_REG0,                      /* then the register class names */
  K_SPACE0 = K_REG0 + PP_PTX_NREG, /* then the state-space names */
  NKEYS = K_SPACE0 + 4
};

static const char *const key_names[] = {
#define KEY_NAME(k) #k,
    KEYS(KEY_NAME)
#undef KEY_NAME
};

static void push_keys(lua_State *L) {
  luaL_checkstack(L, NKEYS, "pp.ptx: field names");
  for (int k = 0; k < K_REG0; k++)
    lua_pushstring(L, key_names[k]);
  for (int c = 0; c < PP_PTX_NREG; c++)
    lua_pushstring(L, pp_ptx_reg_class_name(c));
  for (int sp = 0; sp < 4; sp++)
    lua_pushstring(L, pp_ptx_space_name((pp_ptx_space)sp));
}

#define KEY(k) lua_upvalueindex((k) + 1)

/* Keys go on the stack before their values, so that lua_rawset takes both
 * with no stack rotation; the table being filled sits just below the key. */
static inline void key(lua_State *L, int k) { lua_pushvalue(L, KEY(k)); }

static inline void set_int(lua_State *L, int k, uint64_t v) {
  key(L, k);
  lua_pushinteger(L, v > (uint64_t)LUA_MAXINTEGER ? LUA_MAXINTEGER
                                                  : (lua_Integer)v);
  lua_rawset(L, -3);
}

/* lua_pushlstring rather than lua_pushstring, which first looks the
 * pointer up in Lua's string cache (a strcmp per push) and misses for
 * fresh names anyway. */
static inline void push_str(lua_State *L, const char *v) {
  lua_pushlstring(L, v, strlen(v));
}

static inline void set_str(lua_State *L, int k, const char *v) {
  key(L, k);
  push_str(L, v);
  lua_rawset(L, -3);
}

static inline void set_bool(lua_State *L, int k, int v) {
  key(L, k);
  lua_pushboolean(L, v);
  lua_rawset(L, -3);
}

/* Type names (".u64", ".b8", ...) repeat across thousands of parameters
 * and variables: the first TYPE_CACHE distinct ones of a result are kept
 * in stack slots reserved below the result table and copied from there. */
#define TYPE_CACHE 16
typedef struct {
  char name[TYPE_CACHE][16];
  int base; /* stack index of the first slot */
  int n;
} type_cache;

static void push_type(lua_State *L, type_cache *tc, const char *type) {
  size_t len = strnlen(type, 16);
  if (len == 16) { /* not from the scanner: no cache */
    lua_pushlstring(L, type, len);
    return;
  }
  for (int i = 0; i < tc->n; i++)
    if (memcmp(tc->name[i], type, len + 1) == 0) {
      lua_pushvalue(L, tc->base + i);
      return;
    }
  lua_pushlstring(L, type, len);
  if (tc->n < TYPE_CACHE) {
    memcpy(tc->name[tc->n], type, len + 1);
    lua_pushvalue(L, -1);
    lua_replace(L, tc->base + tc->n++);
  }
}

static void set_type(lua_State *L, type_cache *tc, const char *type) {
  key(L, K_type);
  push_type(L, tc, type);
  lua_rawset(L, -3);
}

static void push_hex(lua_State *L, uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  lua_pushstring(L, buf);
}

static void push_var(lua_State *L, type_cache *tc, const pp_ptx_var *v) {
  lua_createtable(L, 0, 9);
  set_str(L, K_name, v->name);
  key(L, K_space);
  lua_pushvalue(L, KEY(K_SPACE0 + (int)v->space));
  lua_rawset(L, -3);
  if (v->type[0])
    set_type(L, tc, v->type);
  set_int(L, K_size, v->size);
  set_int(L, K_align, v->align);
  set_int(L, K_array, v->array);
  set_bool(L, K_extern, v->external);
  set_bool(L, K_visible, v->visible);
  set_int(L, K_line, v->line);
}

static void set_vars(lua_State *L, type_cache *tc, int k,
                     const pp_ptx_var *v, size_t n) {
  key(L, k);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    push_var(L, tc, &v[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_rawset(L, -3);
}

static void set_dims(lua_State *L, int k, int has, const uint32_t d[3]) {
  if (!has)
    return;
  key(L, k);
  lua_createtable(L, 3, 0);
  for (int i = 0; i < 3; i++) {
    lua_pushinteger(L, d[i] ? d[i] : 1); /* unset dimensions mean 1 */
    lua_rawseti(L, -2, i + 1);
  }
  lua_rawset(L, -3);
}

static void set_params(lua_State *L, type_cache *tc, const pp_ptx_func *f) {
  key(L, K_params);
  lua_createtable(L, (int)f->nparams, 0);
  for (size_t i = 0; i < f->nparams; i++) {
    const pp_ptx_param *p = &f->params[i];
    lua_createtable(L, 0, 7);
    set_str(L, K_name, p->name);
    set_type(L, tc, p->type);
    set_int(L, K_size, p->size);
    set_int(L, K_align, p->align);
    set_int(L, K_array, p->array);
    set_int(L, K_offset, p->offset);
    set_bool(L, K_ptr, p->ptr);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_rawset(L, -3);
}

static void set_regs(lua_State *L, const pp_ptx_func *f) {
  int n = 0;
  for (int c = 0; c < PP_PTX_NREG; c++)
    n += f->regs[c] != 0;
  key(L, K_registers);
  lua_createtable(L, 0, n);
  for (int c = 0; c < PP_PTX_NREG; c++)
    if (f->regs[c])
      set_int(L, K_REG0 + c, f->regs[c]);
  lua_rawset(L, -3);
}

/* The number of fields push_func sets, so that its table is made once at
 * its final size. */
static int func_fields(const pp_ptx_func *f) {
  return 21 + f->has_maxntid + f->has_reqntid + f->has_minnctapersm +
         f->has_maxnreg;
}

static void push_func(lua_State *L, type_cache *tc, const pp_ptx_func *f) {
  lua_createtable(L, 0, func_fields(f));
  set_str(L, K_name, f->name);
  set_bool(L, K_visible, f->visible);
  set_bool(L, K_extern, f->external);
  set_bool(L, K_weak, f->weak);
  set_bool(L, K_defined, f->defined);
  set_int(L, K_line, f->line);
  set_int(L, K_col, f->col);
  set_params(L, tc, f);
  set_dims(L, K_maxntid, f->has_maxntid, f->maxntid);
  set_dims(L, K_reqntid, f->has_reqntid, f->reqntid);
  if (f->has_minnctapersm)
    set_int(L, K_minnctapersm, f->minnctapersm);
  if (f->has_maxnreg)
    set_int(L, K_maxnreg, f->maxnreg);
  set_int(L, K_instructions, f->instructions);
  set_regs(L, f);
  set_int(L, K_bar_sync, f->bar_sync);
  set_int(L, K_atomics, f->atomics);
  set_int(L, K_atomics_global, f->atomics_global);
  set_int(L, K_grid_syncs, f->grid_syncs);
  set_int(L, K_barrier_markers, f->markers);
  set_bool(L, K_grid_sync, f->grid_syncs || f->markers);
  set_vars(L, tc, K_vars, f->vars, f->nvars);
  set_int(L, K_shared_bytes, f->shared_bytes);
  set_int(L, K_local_bytes, f->local_bytes);
  set_int(L, K_body_begin, f->body_begin);
  set_int(L, K_body_end, f->body_end);
}

/* Function i of list k (0 entries, 1 funcs) of a result read through a
 * feed (fd), or of a complete one. */
static const pp_ptx_func *func_of(const pp_ptx_result *r,
                                  const pp_ptx_feed *fd, int k, size_t i) {
  if (fd)
    return pp_ptx_feed_func(fd, k, i);
  return k ? &r->funcs[i] : &r->entries[i];
}

/* The result table, made on top of the type cache's slots (at tc->base)
 * and, for a full result (fd set), the r->nentries entry tables that
 * follow them, which go into its entries list; a summary has only the
 * entry names, under entry_names. Leaves the result alone at tc->base. */
static void push_result(lua_State *L, const pp_ptx_result *r,
                        const pp_ptx_feed *fd, type_cache *tc) {
  int first = tc->base + TYPE_CACHE; /* the first entry table */
  luaL_checkstack(L, 8, "pp.ptx: result");
  lua_createtable(L, 0, 18);
  set_int(L, K_bytes, r->bytes);
  set_int(L, K_lines, r->lines);
  if (r->version[0])
    set_str(L, K_version, r->version);
  if (r->target[0])
    set_str(L, K_target, r->target);
  if (r->address_size)
    set_int(L, K_address_size, r->address_size);
  key(L, fd ? K_entries : K_entry_names);
  lua_createtable(L, (int)r->nentries, 0);
  for (size_t i = 0; i < r->nentries; i++) {
    if (fd)
      lua_pushvalue(L, first + (int)i);
    else
      push_str(L, r->entries[i].name);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_rawset(L, -3);
  key(L, K_funcs);
  lua_createtable(L, (int)r->nfuncs, 0);
  for (size_t i = 0; i < r->nfuncs; i++) {
    push_str(L, func_of(r, fd, 1, i)->name);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_rawset(L, -3);
  if (fd)
    set_vars(L, tc, K_globals, r->globals, r->nglobals);
  key(L, K_markers);
  lua_createtable(L, 0, (int)r->nmarkers);
  for (size_t i = 0; i < r->nmarkers; i++) {
    lua_pushinteger(L, (lua_Integer)r->marker_count[i]);
    lua_setfield(L, -2, r->markers[i]);
  }
  lua_rawset(L, -3);
  set_bool(L, K_counter_global, r->counter_global);
  set_bool(L, K_grid_sync, r->grid_sync);
  if (r->have_digest) {
    key(L, K_digest);
    push_hex(L, r->digest);
    lua_rawset(L, -3);
  }
  key(L, K_errors);
  lua_createtable(L, (int)r->nerrors, 0);
  for (size_t i = 0; i < r->nerrors; i++) {
    lua_createtable(L, 0, 4);
    set_str(L, K_what, r->errors[i].what);
    set_int(L, K_line, r->errors[i].line);
    set_int(L, K_col, r->errors[i].col);
    set_int(L, K_offset, r->errors[i].offset);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_rawset(L, -3);
  set_int(L, K_errors_dropped, r->errors_dropped);
  set_bool(L, K_partial, r->partial);
  lua_replace(L, tc->base);
  lua_settop(L, tc->base);
}

/* ---- the scan, beside the making of its tables ---------------------------------- */
/* pp.ptx.scan reads the entries as the scan finishes them (pp_ptx_scan_feed)
 * and makes their tables on the way. A large text is scanned on a second
 * thread meanwhile, so that the scan's time and the tables' overlap instead
 * of adding up. The scan's state is a userdata whose __gc waits for that
 * thread and frees the result: a Lua error while the tables are made (out
 * of memory) leaves nothing behind. The text is its user value, alive while
 * the thread may read it, and the options' strings are copied into it. */
#define RESULT_MT "phaseprobe.ptx_result"
#define PARALLEL_MIN_DEFAULT ((lua_Integer)256 << 10)
#define SPIN_NS 50000 /* then sleep until the scan signals */

typedef struct {
  pp_ptx_result r;
  pp_ptx_feed feed;
  pthread_t worker;
  int feed_init, running;
  uint64_t digest; /* with feed.no_digest */
  const char *text;
  size_t len;
  pp_ptx_opts o;
  const char *markers[PP_PTX_MAX_MARKERS];
  char marker_buf[PP_PTX_MAX_MARKERS][PP_PTX_MARKER_MAX + 1];
  char counter[PP_PTX_COUNTER_MAX + 1];
} scan_job;

static void job_wait(scan_job *j) {
  if (j->running) {
    pthread_join(j->worker, NULL);
    j->running = 0;
  }
}

static int job_gc(lua_State *L) {
  scan_job *j = pp_lua_checkudata(L, 1, RESULT_MT);
  job_wait(j);
  if (j->feed_init) {
    pthread_mutex_destroy(&j->feed.mu);
    pthread_cond_destroy(&j->feed.cv);
    j->feed_init = 0;
  }
  pp_ptx_result_free(&j->r);
  return 0;
}

static void *job_run(void *ud) {
  scan_job *j = ud;
  pp_ptx_scan_feed(j->text, j->len, &j->o, &j->r, &j->feed);
  return NULL;
}

/* A second processor to scan on, by this thread's affinity. */
static int have_two_cpus(void) {
#ifdef CPU_COUNT
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return CPU_COUNT(&set) > 1;
#endif
  return 0;
}

/* The scan's thread, with every signal blocked: signals stay with the
 * threads the program made. */
static int job_thread(scan_job *j) {
  sigset_t all, old;
  sigfillset(&all);
  if (pthread_sigmask(SIG_SETMASK, &all, &old) != 0)
    return 0;
  int ok = pthread_create(&j->worker, NULL, job_run, j) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return ok;
}

static void job_init(scan_job *j, const char *text, size_t len,
                     const pp_ptx_opts *o) {
  j->text = text;
  j->len = len;
  j->o = *o;
  if (o->markers) {
    for (size_t i = 0; i < o->nmarkers; i++) {
      strcpy(j->marker_buf[i], o->markers[i]); /* lengths checked */
      j->markers[i] = j->marker_buf[i];
    }
    j->o.markers = j->markers;
  }
  if (o->counter_global) {
    strcpy(j->counter, o->counter_global);
    j->o.counter_global = j->counter;
  }
}

static void job_start(lua_State *L, scan_job *j, size_t parallel_min) {
  if (pthread_mutex_init(&j->feed.mu, NULL) != 0)
    luaL_error(L, "pp.ptx: cannot make a mutex");
  if (pthread_cond_init(&j->feed.cv, NULL) != 0) {
    pthread_mutex_destroy(&j->feed.mu);
    luaL_error(L, "pp.ptx: cannot make a condition variable");
  }
  j->feed_init = 1;
  if (j->len >= parallel_min && have_two_cpus()) {
    j->feed.no_digest = 1; /* this thread hashes while that one starts */
    if (job_thread(j)) {
      j->running = 1;
      j->digest = pp_ptx_digest(j->text, j->len);
      return;
    }
    j->feed.no_digest = 0;
  }
  job_run(j); /* here and now */
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Waits until the scan has published more than `have` entries or ended:
 * spinning a while first, as the next entry is usually microseconds away
 * and a thread put to sleep may take longer to get its processor back. */
static void wait_fed(pp_ptx_feed *fd, size_t have) {
  uint64_t t0 = 0;
  for (unsigned i = 1;; i++) {
    if (atomic_load(&fd->ready) != have || atomic_load(&fd->done))
      return;
    cpu_relax();
    if (i % 256 == 0) {
      uint64_t t = mono_ns();
      if (!t0)
        t0 = t;
      else if (t - t0 > SPIN_NS)
        break;
    }
  }
  pthread_mutex_lock(&fd->mu);
  atomic_store(&fd->waiting, 1);
  while (atomic_load(&fd->ready) == have && !atomic_load(&fd->done))
    pthread_cond_wait(&fd->cv, &fd->mu);
  atomic_store(&fd->waiting, 0);
  pthread_mutex_unlock(&fd->mu);
}

/* Pushes a table per entry as the scan publishes them, then waits for the
 * scan's thread. */
static void push_fed_entries(lua_State *L, scan_job *j, type_cache *tc) {
  pp_ptx_feed *fd = &j->feed;
  size_t have = 0;
  for (;;) {
    int done = atomic_load(&fd->done); /* before ready: then ready is final */
    size_t ready = atomic_load(&fd->ready);
    if (ready > have) {
      luaL_checkstack(L, (int)(ready - have) + 8, "pp.ptx: entries");
      for (; have < ready; have++)
        push_func(L, tc, pp_ptx_feed_func(fd, 0, have));
    } else if (done) {
      break;
    } else {
      wait_fed(fd, have);
    }
  }
  job_wait(j);
}

/* pp.ptx.parallel_min: the text size from which a scan runs on a second
 * thread; false for never. */
static size_t parallel_min(lua_State *L) {
  size_t v = (size_t)PARALLEL_MIN_DEFAULT;
  lua_pushliteral(L, "parallel_min");
  lua_rawget(L, lua_upvalueindex(NKEYS + 1));
  if (lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1))
    v = SIZE_MAX;
  else if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 0)
    v = (size_t)lua_tointeger(L, -1);
  else if (!lua_isnil(L, -1))
    luaL_error(L, "pp.ptx.parallel_min must be a byte count or false, not %s",
               luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

/* Scans the text at stack index ti and pushes the result table: all of it
 * (full) or the summary. */
static int scan_push(lua_State *L, int ti, const lopts *lo, const char *fn,
                     int full) {
  size_t len;
  const char *text = lua_tolstring(L, ti, &len);
  size_t pmin = full ? parallel_min(L) : SIZE_MAX;
  scan_job *j = pp_lua_newobj(L, sizeof *j, 1);
  memset(j, 0, sizeof *j);
  pp_lua_setclass(L, RESULT_MT);
  lua_pushvalue(L, ti);
  lua_setiuservalue(L, -2, 1);
  job_init(j, text, len, &lo->o);
  type_cache tc;
  tc.n = 0;
  luaL_checkstack(L, TYPE_CACHE + 8, "pp.ptx: result");
  tc.base = lua_gettop(L) + 1;
  for (int i = 0; i < TYPE_CACHE; i++)
    lua_pushnil(L);
  int rc;
  if (full) {
    job_start(L, j, pmin);
    push_fed_entries(L, j, &tc);
    rc = j->feed.rc;
    if (j->feed.no_digest)
      j->r.digest = j->digest;
  } else {
    rc = pp_ptx_scan(text, len, &j->o, &j->r);
  }
  if (rc < 0)
    return luaL_error(L, "%s: %s", fn, j->r.errors[0].what);
  push_result(L, &j->r, full ? &j->feed : NULL, &tc);
  pp_ptx_result_free(&j->r); /* idempotent: __gc finds it empty */
  lua_remove(L, -2);
  pp_lua_show(L, -1, full ? "ptx.scan" : "ptx.summary");
  return 1;
}

static int l_scan(lua_State *L) {
  luaL_checkstring(L, 1);
  lopts lo;
  read_opts(L, 2, &lo, "pp.ptx.scan", 0);
  return scan_push(L, 1, &lo, "pp.ptx.scan", 1);
}

/* summary(text [, opts]): the same scan, with the module-level facts only
 * (no per-entry tables): for a dispatch path that needs the markers, the
 * counter, grid_sync and the digest. */
static int l_summary(lua_State *L) {
  luaL_checkstring(L, 1);
  lopts lo;
  read_opts(L, 2, &lo, "pp.ptx.summary", 0);
  return scan_push(L, 1, &lo, "pp.ptx.summary", 0);
}

static int l_scan_file(lua_State *L) {
  const char *path = pp_lua_checkcstr(L, 1);
  lopts lo;
  read_opts(L, 2, &lo, "pp.ptx.scan_file", 1);
  int cut;
  if (pp_lua_push_file(L, path, lo.max_bytes, "pp.ptx.scan_file", "read",
                       PP_FILE_PTX_TEXT, &cut) != 0) {
    luaL_pushfail(L);
    lua_insert(L, -2);
    return 2;
  }
  scan_push(L, lua_gettop(L), &lo, "pp.ptx.scan_file", 1);
  set_str(L, K_path, path);
  if (cut)
    set_bool(L, K_truncated, 1);
  return 1;
}

static int l_count(lua_State *L) {
  size_t len, mlen;
  const char *text = luaL_checklstring(L, 1, &len);
  const char *m = luaL_checklstring(L, 2, &mlen);
  luaL_argcheck(L, mlen > 0, 2, "empty marker");
  lua_pushinteger(L, (lua_Integer)pp_ptx_count_bytes(text, len, m, mlen));
  return 1;
}

static int l_digest(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  if (!pp_ptx_have_digest()) {
    luaL_pushfail(L);
    lua_pushliteral(L, "pp.ptx.digest: built without xxhash.h (install "
                       "libxxhash-dev and rebuild)");
    return 2;
  }
  push_hex(L, pp_ptx_digest(text, len));
  return 1;
}

static int l_lines(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  lua_pushinteger(L, (lua_Integer)pp_ptx_count_lines(text, len));
  return 1;
}

static const luaL_Reg result_fns[] = {{"scan", l_scan},
                                      {"summary", l_summary},
                                      {"scan_file", l_scan_file},
                                      {NULL, NULL}};

static const luaL_Reg fns[] = {{"count", l_count},
                               {"digest", l_digest},
                               {"lines", l_lines},
                               {NULL, NULL}};

int pp_lua_open_ptx(lua_State *L) {
  pp_lua_class_new(L, &(pp_lua_class){.name = RESULT_MT, .gc = job_gc});
  luaL_newlib(L, fns);
  push_keys(L);
  lua_pushvalue(L, -NKEYS - 1); /* the module table, for parallel_min */
  luaL_setfuncs(L, result_fns, NKEYS + 1);
  pp_lua_set_int(L, "parallel_min", PARALLEL_MIN_DEFAULT);
  pp_lua_set_int(L, "max_bytes", PTX_MAX_BYTES);
  lua_pushliteral(L, PP_PTX_DEFAULT_MARKER);
  lua_setfield(L, -2, "default_marker");
  lua_pushliteral(L, PP_PTX_DEFAULT_COUNTER);
  lua_setfield(L, -2, "default_counter");
  return 1;
}
