/*
 * lua_cuda_module.c: modules (PTX JIT), their functions and globals.
 *
 *   local mod = ctx:load(ptx_text, {jit_log = true, opt_level = 3})
 *   mod.jit_ns, mod.info_log, mod.error_log
 *   local fn = mod:func("saxpy")     -- fn.registers, fn.params, ...
 *   local g = mod:global("counter")  -- g.ptr, g.size, g:read_u32()
 *
 * A module holds its context (user value 1) and its PTX text (user value 2,
 * where parameter types come from); functions and globals hold the module.
 * Closing a module unloads it at once; its functions and globals then refuse
 * use.
 */
#include "pp_lua_cuda.h"

#ifdef PP_HAVE_CUDA_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define LOG_DEFAULT 16384
#define MAX_PTX_PARAMS 512

/* ---- loading ------------------------------------------------------------- */
typedef struct {
  CUjit_option opt[12];
  void *val[12];
  unsigned n;
  int info_i, error_i, wall_i;
  char *info, *error;
  size_t log_size;
} jit_opts;

static void jit_add(jit_opts *j, CUjit_option o, uintptr_t v) {
  j->opt[j->n] = o;
  j->val[j->n] = (void *)v;
  j->n++;
}

static int opt_int(lua_State *L, int t, const char *k, lua_Integer lo,
                   lua_Integer hi, lua_Integer *out) {
  if (lua_getfield(L, t, k) == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  int ok = 0;
  lua_Integer v = lua_tointegerx(L, -1, &ok);
  if (!ok || v < lo || v > hi)
    luaL_error(L, "ctx:load: option '%s' must be an integer in %d..%d, got %s",
               k, (int)lo, (int)hi, luaL_tolstring(L, -1, NULL));
  lua_pop(L, 1);
  *out = v;
  return 1;
}

static int opt_bool(lua_State *L, int t, const char *k) {
  lua_getfield(L, t, k);
  int v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

static void check_opt_names(lua_State *L, int t) {
  static const char *const known[] = {"jit_log", "log_size", "opt_level",
                                      "max_registers", "line_info", "debug",
                                      "max_bytes", NULL};
  lua_pushnil(L);
  while (lua_next(L, t)) {
    const char *k = pp_lua_tokey(L, -2);
    int found = 0;
    for (int i = 0; k && known[i]; i++)
      found |= strcmp(k, known[i]) == 0;
    if (!found)
      luaL_error(L, "ctx:load: unknown option '%s'%s (valid: jit_log, log_size, "
                    "opt_level, max_registers, line_info, debug; max_bytes "
                    "for load_file)",
                 k ? k : pp_lua_hasnul(L, -2) ? lua_tostring(L, -2)
                                              : luaL_typename(L, -2),
                 pp_lua_hasnul(L, -2) ? " (it contains a NUL byte)" : "");
    lua_pop(L, 1);
  }
}

/* Reads the option table at t (may be none) into j; log buffers are Lua
 * userdata left on the stack (two values). */
static void jit_parse(lua_State *L, int t, jit_opts *j) {
  memset(j, 0, sizeof *j);
  j->log_size = LOG_DEFAULT;
  lua_Integer v;
  int has = !lua_isnoneornil(L, t);
  if (has) {
    luaL_checktype(L, t, LUA_TTABLE);
    check_opt_names(L, t);
    if (opt_int(L, t, "log_size", 256, 64 << 20, &v))
      j->log_size = (size_t)v;
  }
  j->info = lua_newuserdatauv(L, j->log_size, 0);
  j->error = lua_newuserdatauv(L, j->log_size, 0);
  j->info[0] = j->error[0] = 0;
  j->info_i = (int)j->n;
  jit_add(j, CU_JIT_INFO_LOG_BUFFER, (uintptr_t)j->info);
  jit_add(j, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, j->log_size);
  j->error_i = (int)j->n;
  jit_add(j, CU_JIT_ERROR_LOG_BUFFER, (uintptr_t)j->error);
  jit_add(j, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, j->log_size);
  j->wall_i = (int)j->n;
  jit_add(j, CU_JIT_WALL_TIME, 0);
  if (!has)
    return;
  if (opt_bool(L, t, "jit_log"))
    jit_add(j, CU_JIT_LOG_VERBOSE, 1);
  if (opt_int(L, t, "opt_level", 0, 4, &v))
    jit_add(j, CU_JIT_OPTIMIZATION_LEVEL, (uintptr_t)v);
  if (opt_int(L, t, "max_registers", 1, 255, &v))
    jit_add(j, CU_JIT_MAX_REGISTERS, (uintptr_t)v);
  if (opt_bool(L, t, "line_info"))
    jit_add(j, CU_JIT_GENERATE_LINE_INFO, 1);
  if (opt_bool(L, t, "debug"))
    jit_add(j, CU_JIT_GENERATE_DEBUG_INFO, 1);
}

static void push_log(lua_State *L, const char *buf, size_t cap) {
  size_t n = strnlen(buf, cap);
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
    n--;
  lua_pushlstring(L, buf, n);
}

/* Loads the PTX string at ptx_idx into a new module for the context at 1;
 * options at opt_idx. Pushes the module. */
static int load_ptx(lua_State *L, int ptx_idx, int opt_idx, const char *what) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  PP_CHECK_OPEN(L, !c->closed, "context");
  size_t len;
  const char *ptx = luaL_checklstring(L, ptx_idx, &len);
  jit_opts j;
  jit_parse(L, opt_idx, &j);
  lcu_mod *m = pp_lua_newobj(L, sizeof *m, 3);
  memset(m, 0, sizeof *m);
  m->c = c;
  m->closed = 1;
  pp_lua_setclass(L, LCU_MOD_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, ptx_idx);
  lua_setiuservalue(L, -2, 2);
  lcu_use(L, c, what); /* after the allocations (pp_lua_cuda.h) */
  pp_ticks t0 = pp_now();
  CUresult rc =
      pp_cuda()->ModuleLoadDataEx(&m->mod, ptx, j.n, j.opt, j.val);
  m->jit_ns = pp_ticks_to_ns(t0, pp_now());
  float wall = 0.0f;
  memcpy(&wall, &j.val[j.wall_i], sizeof wall);
  m->jit_driver_ms = wall;
  if (rc != CUDA_SUCCESS) {
    push_log(L, j.error, j.log_size);
    return lcu_raise(L, c, "cuModuleLoadDataEx", rc, lua_tostring(L, -1));
  }
  m->closed = 0;
  lcu_hold(c);
  lua_createtable(L, 0, 2);
  push_log(L, j.info, j.log_size);
  lua_setfield(L, -2, "info_log");
  push_log(L, j.error, j.log_size);
  lua_setfield(L, -2, "error_log");
  lua_setiuservalue(L, -2, 3);
  return 1;
}

int lcu_ctx_load(lua_State *L) { return load_ptx(L, 2, 3, "ctx:load"); }

/* ctx:load_file(path [, opts]) -> mod, or nil, message when unreadable
 * (opts.max_bytes: the largest file read, default 1 GiB like pp.ptx's; a
 * PTX text is read up to its first NUL byte, all the driver reads of it) */
int lcu_ctx_load_file(lua_State *L) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  PP_CHECK_OPEN(L, !c->closed, "context");
  const char *path = pp_lua_checkname(L, 2);
  lua_Integer cap = (lua_Integer)1 << 30;
  if (lua_istable(L, 3)) {
    lua_getfield(L, 3, "max_bytes");
    if (!lua_isnil(L, -1)) {
      int ok = 0;
      cap = lua_tointegerx(L, -1, &ok);
      luaL_argcheck(L, ok && cap >= 1, 3,
                    "option 'max_bytes' must be a positive integer");
    }
    lua_pop(L, 1);
  }
  int cut;
  if (pp_lua_push_file(L, path, (uint64_t)cap, "ctx:load_file", "open",
                       PP_FILE_IMAGE, &cut) != 0) {
    luaL_pushfail(L);
    lua_insert(L, -2);
    return 2;
  }
  lua_replace(L, 2);
  return load_ptx(L, 2, 3, "ctx:load_file");
}

/* ---- modules ------------------------------------------------------------- */
static lcu_mod *check_mod(lua_State *L, int idx) {
  return pp_lua_checkudata(L, idx, LCU_MOD_MT);
}

static lcu_mod *check_open_mod(lua_State *L, int idx, const char *what) {
  lcu_mod *m = check_mod(L, idx);
  PP_CHECK_OPEN(L, !m->closed, "module");
  lcu_use(L, m->c, what);
  return m;
}

static int mod_release(lcu_mod *m, CUresult *rc) {
  if (m->closed)
    return 0;
  m->closed = 1;
  *rc = CUDA_SUCCESS;
  if (!m->c->released && pp_cuda()->CtxSetCurrent(m->c->ctx) == CUDA_SUCCESS)
    *rc = pp_cuda()->ModuleUnload(m->mod);
  lcu_unhold(m->c);
  return 1;
}

LCU_CHILD_CLOSE_GC(mod_close, mod_gc, lcu_mod, check_mod, mod_release, "cuModuleUnload")

static int mod_tostring(lua_State *L) {
  lcu_mod *m = check_mod(L, 1);
  lua_pushfstring(L, "phaseprobe.cuda.module (%s)", m->closed ? "closed"
                                                              : "loaded");
  return 1;
}

static int mod_get(lua_State *L) {
  lcu_mod *m = check_mod(L, 1);
  const char *k = lcu_get_key(L, m->closed, "module");
  if (!k)
    return 1;
  static const lcu_field fields[] = {
      LCU_FIELD(lcu_mod, "jit_ns", LCU_U64, jit_ns),
      LCU_FIELD(lcu_mod, "jit_driver_ms", LCU_NUM, jit_driver_ms),
      {NULL, LCU_INT, 0}};
  if (lcu_push_field(L, m, fields, k)) {
    return 1;
  } else if (strcmp(k, "info_log") == 0 || strcmp(k, "error_log") == 0) {
    lua_getiuservalue(L, 1, 3);
    lua_getfield(L, -1, k);
  } else if (strcmp(k, "ptx_bytes") == 0) {
    lua_getiuservalue(L, 1, 2);
    lua_pushinteger(L, (lua_Integer)lua_rawlen(L, -1));
  } else if (strcmp(k, "context") == 0) {
    lua_getiuservalue(L, 1, 1);
  } else {
    return lcu_no_field(L, LCU_MOD_MT);
  }
  return 1;
}

/* ---- functions ----------------------------------------------------------- */
lcu_fn *lcu_check_fn(lua_State *L, int idx) {
  return pp_lua_checkudata(L, idx, LCU_FN_MT);
}

lcu_fn *lcu_check_open_fn(lua_State *L, int idx) {
  lcu_fn *fn = lcu_check_fn(L, idx);
  luaL_argcheck(L, !fn->closed, idx, "closed function");
  luaL_argcheck(L, !fn->m->closed, idx, "closed module");
  return fn;
}

static int fn_attr(lua_State *L, lcu_mod *m, CUfunction f,
                   CUfunction_attribute a) {
  int v = 0;
  CUresult rc = pp_cuda()->FuncGetAttribute(&v, a, f);
  if (rc != CUDA_SUCCESS)
    lcu_raise(L, m->c, "cuFuncGetAttribute", rc, NULL);
  return v;
}

/* Driver layout; -1 when the driver has no cuFuncGetParamInfo or it does
 * not answer for this function (the PTX entry is the fallback). The driver
 * says how many parameters there are only by refusing the index past the
 * last; when the PTX entry already gave a count (`expect` >= 0) and the
 * driver answers for exactly that many, the refusal is not provoked, so
 * tools that report every failed call (compute-sanitizer) stay quiet. */
static int driver_params(lua_State *L, CUfunction f, pp_cuda_param *out,
                         int max, int expect) {
  const pp_cuda_api *cu = pp_cuda();
  if (!cu->FuncGetParamInfo)
    return -1;
  for (int i = 0;; i++) {
    size_t off = 0, size = 0;
    if (i == expect) {
      /* the PTX count: the driver answered for all of them; stop here
       * (merge_types still checks every size against the PTX) */
      return i;
    }
    CUresult rc = cu->FuncGetParamInfo(f, (size_t)i, &off, &size);
    if (rc == CUDA_ERROR_INVALID_VALUE)
      return i; /* past the last parameter */
    if (rc != CUDA_SUCCESS)
      return -1;
    if (i == max)
      luaL_error(L, "mod:func: more than %d parameters", max);
    memset(&out[i], 0, sizeof out[i]);
    out[i].offset = off;
    out[i].size = size;
    out[i].align = 1;
  }
}

/* Takes element types from the PTX layout when it agrees with the driver's
 * (same count and sizes). */
static int merge_types(pp_cuda_param *drv, int nd, const pp_cuda_param *ptx,
                       int np) {
  if (np != nd)
    return 0;
  for (int i = 0; i < nd; i++)
    if (drv[i].size != ptx[i].size)
      return 0;
  for (int i = 0; i < nd; i++) {
    drv[i].kind = ptx[i].kind;
    drv[i].align = ptx[i].align;
    memcpy(drv[i].type, ptx[i].type, sizeof drv[i].type);
    memcpy(drv[i].name, ptx[i].name, sizeof drv[i].name);
  }
  return 1;
}

typedef struct {
  int n, from_driver, typed;
  char why[400];
} layout;

/* Works out the parameter layout into scratch (MAX_PTX_PARAMS entries). */
static void find_layout(lua_State *L, CUfunction f,
                        const char *name, pp_cuda_param *drv,
                        pp_cuda_param *ptxp, layout *out) {
  size_t len;
  lua_getiuservalue(L, 1, 2);
  const char *ptx = lua_tolstring(L, -1, &len);
  char err[160];
  int np = pp_cuda_ptx_params(ptx, len, name, ptxp, MAX_PTX_PARAMS, err,
                              sizeof err);
  lua_pop(L, 1);
  int nd = driver_params(L, f, drv, MAX_PTX_PARAMS, np);
  memset(out, 0, sizeof *out);
  if (nd >= 0) {
    out->n = nd;
    out->from_driver = 1;
    out->typed = np >= 0 && merge_types(drv, nd, ptxp, np);
  } else if (np >= 0) {
    out->n = np;
    out->typed = 1;
    memcpy(drv, ptxp, (size_t)np * sizeof *drv);
  } else {
    out->n = -1;
    snprintf(out->why, sizeof out->why,
             "parameter layout of '%s' unknown: the driver has no "
             "cuFuncGetParamInfo and the PTX entry could not be read (%s)",
             name, err);
  }
}

/* mod:func(name) -> fn. Everything asked of the driver is asked between
 * the scratch block's allocation and the handle's (pp_lua_cuda.h). */
static int mod_func(lua_State *L) {
  lcu_mod *m = check_mod(L, 1);
  PP_CHECK_OPEN(L, !m->closed, "module");
  const char *name = pp_lua_checkname(L, 2);
  pp_cuda_param *scratch =
      lua_newuserdatauv(L, 2 * MAX_PTX_PARAMS * sizeof *scratch, 0);
  m = check_open_mod(L, 1, "mod:func");
  CUfunction f = NULL;
  CUresult rc = pp_cuda()->ModuleGetFunction(&f, m->mod, name);
  if (rc != CUDA_SUCCESS) {
    lua_pushfstring(L, "function '%s'", name);
    return lcu_raise(L, m->c, "cuModuleGetFunction", rc, lua_tostring(L, -1));
  }
  layout lay;
  find_layout(L, f, name, scratch, scratch + MAX_PTX_PARAMS, &lay);
  static const CUfunction_attribute attr[] = {
      CU_FUNC_ATTRIBUTE_NUM_REGS, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
      CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
      CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES};
  int av[5];
  for (int i = 0; i < 5; i++)
    av[i] = fn_attr(L, m, f, attr[i]);
  size_t np = lay.n > 0 ? (size_t)lay.n : 0, nlen = strlen(name);
  lcu_fn *fn =
      pp_lua_newobj(L, sizeof *fn + np * sizeof(pp_cuda_param) + nlen + 1, 2);
  memset(fn, 0, sizeof *fn);
  fn->m = m;
  fn->fn = f;
  fn->nparams = lay.n;
  fn->from_driver = lay.from_driver;
  fn->typed = lay.typed;
  memcpy(fn->params, scratch, np * sizeof(pp_cuda_param));
  char *nm = (char *)(fn->params + np);
  memcpy(nm, name, nlen + 1);
  fn->name = nm;
  for (size_t i = 0; i < np; i++) /* the end of the furthest parameter */
    if (fn->params[i].offset + fn->params[i].size > fn->param_bytes)
      fn->param_bytes = fn->params[i].offset + fn->params[i].size;
  pp_lua_setclass(L, LCU_FN_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  fn->registers = av[0];
  fn->shared_bytes = av[1];
  fn->max_threads = av[2];
  fn->local_bytes = av[3];
  fn->const_bytes = av[4];
  if (lay.n < 0) {
    lua_pushstring(L, lay.why);
    lua_setiuservalue(L, -2, 2);
  }
  return 1;
}

static void push_params(lua_State *L, const lcu_fn *fn) {
  lua_createtable(L, fn->nparams > 0 ? fn->nparams : 0, 0);
  for (int i = 0; i < fn->nparams; i++) {
    const pp_cuda_param *p = &fn->params[i];
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, (lua_Integer)p->offset);
    lua_setfield(L, -2, "offset");
    lua_pushinteger(L, (lua_Integer)p->size);
    lua_setfield(L, -2, "size");
    if (p->type[0]) {
      lua_pushstring(L, p->type);
      lua_setfield(L, -2, "type");
    }
    if (p->name[0]) {
      lua_pushstring(L, p->name);
      lua_setfield(L, -2, "name");
    }
    lua_rawseti(L, -2, i + 1);
  }
}

static const lcu_field fn_fields[] = {
    LCU_FIELD(lcu_fn, "name", LCU_STRP, name),
    LCU_FIELD(lcu_fn, "registers", LCU_INT, registers),
    LCU_FIELD(lcu_fn, "shared_bytes", LCU_INT, shared_bytes),
    LCU_FIELD(lcu_fn, "max_threads", LCU_INT, max_threads),
    LCU_FIELD(lcu_fn, "local_bytes", LCU_INT, local_bytes),
    LCU_FIELD(lcu_fn, "const_bytes", LCU_INT, const_bytes),
    LCU_FIELD(lcu_fn, "param_bytes", LCU_SIZE, param_bytes),
    {NULL, LCU_INT, 0}};

static int fn_get(lua_State *L) {
  lcu_fn *fn = lcu_check_fn(L, 1);
  const char *k = pp_lua_fieldkey(L, 2);
  if (strcmp(k, "closed") == 0) {
    lua_pushboolean(L, fn->closed || fn->m->closed);
    return 1;
  }
  lcu_check_open_fn(L, 1);
  if (lcu_push_field(L, fn, fn_fields, k))
    return 1;
  if (strcmp(k, "params") == 0) {
    if (fn->nparams < 0)
      return 0;
    push_params(L, fn);
  } else if (strcmp(k, "param_source") == 0)
    lua_pushstring(L, fn->nparams < 0 ? "unknown"
                      : fn->from_driver ? (fn->typed ? "driver+ptx" : "driver")
                                        : "ptx");
  else if (strcmp(k, "module") == 0)
    lua_getiuservalue(L, 1, 1);
  else
    return lcu_no_field(L, LCU_FN_MT);
  return 1;
}

/* fn:max_active_blocks(block [, shared]) -> blocks per SM */
static int fn_max_active_blocks(lua_State *L) {
  lcu_fn *fn = lcu_check_open_fn(L, 1);
  lua_Integer block = luaL_checkinteger(L, 2);
  lua_Integer shared = luaL_optinteger(L, 3, 0);
  luaL_argcheck(L, block >= 1 && block <= 0x7fffffff, 2,
                "block size must be a positive integer");
  luaL_argcheck(L, shared >= 0 && shared <= 0x7fffffff, 3,
                "shared bytes must not be negative");
  lcu_use(L, fn->m->c, "fn:max_active_blocks");
  int n = 0;
  CUresult rc = pp_cuda()->OccupancyMaxActiveBlocksPerMultiprocessor(
      &n, fn->fn, (int)block, (size_t)shared);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, fn->m->c,
                     "cuOccupancyMaxActiveBlocksPerMultiprocessor", rc, NULL);
  lua_pushinteger(L, n);
  return 1;
}

/* A function owns no driver resource (its module does): closing it only
 * makes the handle refuse further use. */
static int fn_close(lua_State *L) {
  lcu_check_fn(L, 1)->closed = 1;
  return 0;
}

static int fn_tostring(lua_State *L) {
  lcu_fn *fn = lcu_check_fn(L, 1);
  lua_pushfstring(L, "phaseprobe.cuda.function '%s'%s", fn->name,
                  fn->closed     ? " (closed)"
                  : fn->m->closed ? " (module closed)"
                                  : "");
  return 1;
}

/* ---- globals ------------------------------------------------------------- */
static lcu_global *check_global(lua_State *L, int idx, const char *what) {
  lcu_global *g = pp_lua_checkudata(L, idx, LCU_GLOBAL_MT);
  luaL_argcheck(L, !g->closed, idx, "closed global");
  luaL_argcheck(L, !g->m->closed, idx, "closed module");
  if (what)
    lcu_use(L, g->m->c, what);
  return g;
}

/* mod:global(name) -> g */
static int mod_global(lua_State *L) {
  lcu_mod *m = check_open_mod(L, 1, "mod:global");
  const char *name = pp_lua_checkname(L, 2);
  CUdeviceptr ptr = 0;
  size_t size = 0;
  CUresult rc = pp_cuda()->ModuleGetGlobal(&ptr, &size, m->mod, name);
  if (rc != CUDA_SUCCESS) {
    lua_pushfstring(L, "global '%s'", name);
    return lcu_raise(L, m->c, "cuModuleGetGlobal", rc, lua_tostring(L, -1));
  }
  size_t nlen = strlen(name);
  lcu_global *g = pp_lua_newobj(L, sizeof *g + nlen + 1, 1);
  g->m = m;
  g->closed = 0;
  g->ptr = ptr;
  g->size = size;
  memcpy(g->name, name, nlen + 1);
  pp_lua_setclass(L, LCU_GLOBAL_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  return 1;
}

static size_t check_range(lua_State *L, int off_arg, size_t len, size_t size,
                          const char *what) {
  lua_Integer off = luaL_optinteger(L, off_arg, 0);
  if (off < 0 || (size_t)off > size || len > size - (size_t)off)
    luaL_error(L, "%s: %d bytes at offset %d do not fit in %d bytes", what,
               (int)len, (int)off, (int)size);
  return (size_t)off;
}

/* g:read([n [, offset]]) -> string */
static int global_read(lua_State *L) {
  lcu_global *g = check_global(L, 1, NULL);
  lua_Integer n = luaL_optinteger(L, 2, (lua_Integer)g->size);
  luaL_argcheck(L, n >= 0, 2, "byte count must not be negative");
  size_t off = check_range(L, 3, (size_t)n, g->size, "global:read");
  luaL_Buffer b;
  char *p = luaL_buffinitsize(L, &b, (size_t)n);
  check_global(L, 1, "global:read"); /* after the allocation */
  CUresult rc = n ? pp_cuda()->MemcpyDtoH(p, g->ptr + off, (size_t)n)
                  : CUDA_SUCCESS;
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, g->m->c, "cuMemcpyDtoH", rc, g->name);
  luaL_pushresultsize(&b, (size_t)n);
  return 1;
}

/* g:write(bytes [, offset]) */
static int global_write(lua_State *L) {
  lcu_global *g = check_global(L, 1, NULL);
  size_t n;
  const char *s = luaL_checklstring(L, 2, &n); /* a number becomes text */
  size_t off = check_range(L, 3, n, g->size, "global:write");
  check_global(L, 1, "global:write");
  CUresult rc = n ? pp_cuda()->MemcpyHtoD(g->ptr + off, s, n) : CUDA_SUCCESS;
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, g->m->c, "cuMemcpyHtoD", rc, g->name);
  return 0;
}

/* g:read_u32([offset]) -> integer */
static int global_read_u32(lua_State *L) {
  lcu_global *g = check_global(L, 1, "global:read_u32");
  size_t off = check_range(L, 2, 4, g->size, "global:read_u32");
  uint32_t v = 0;
  CUresult rc = pp_cuda()->MemcpyDtoH(&v, g->ptr + off, 4);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, g->m->c, "cuMemcpyDtoH", rc, g->name);
  lua_pushinteger(L, (lua_Integer)v);
  return 1;
}

/* g:write_u32(value [, offset]) */
static int global_write_u32(lua_State *L) {
  lcu_global *g = check_global(L, 1, "global:write_u32");
  lua_Integer v = luaL_checkinteger(L, 2);
  luaL_argcheck(L, v >= 0 && v <= 0xffffffffll, 2, "not a u32 (0..4294967295)");
  size_t off = check_range(L, 3, 4, g->size, "global:write_u32");
  uint32_t u = (uint32_t)v;
  CUresult rc = pp_cuda()->MemcpyHtoD(g->ptr + off, &u, 4);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, g->m->c, "cuMemcpyHtoD", rc, g->name);
  return 0;
}

static const lcu_field global_fields[] = {
    LCU_FIELD(lcu_global, "ptr", LCU_U64, ptr),
    LCU_FIELD(lcu_global, "size", LCU_SIZE, size),
    LCU_FIELD(lcu_global, "name", LCU_CHARS, name),
    {NULL, LCU_INT, 0}};

static int global_get(lua_State *L) {
  lcu_global *g = pp_lua_checkudata(L, 1, LCU_GLOBAL_MT);
  const char *k = pp_lua_fieldkey(L, 2);
  if (strcmp(k, "closed") == 0) {
    lua_pushboolean(L, g->closed || g->m->closed);
    return 1;
  }
  check_global(L, 1, NULL);
  if (!lcu_push_field(L, g, global_fields, k))
    return lcu_no_field(L, LCU_GLOBAL_MT);
  return 1;
}

/* The module owns the memory: closing a global only retires the handle. */
static int global_close(lua_State *L) {
  ((lcu_global *)pp_lua_checkudata(L, 1, LCU_GLOBAL_MT))->closed = 1;
  return 0;
}

static int no_gc(lua_State *L) {
  (void)L;
  return 0;
}

static int global_tostring(lua_State *L) {
  lcu_global *g = pp_lua_checkudata(L, 1, LCU_GLOBAL_MT);
  lua_pushfstring(L, "phaseprobe.cuda.global '%s' (%d bytes%s)", g->name,
                  (int)g->size,
                  g->closed     ? ", closed"
                  : g->m->closed ? ", module closed"
                                 : "");
  return 1;
}

void lcu_open_module(lua_State *L) {
  static const luaL_Reg mod_methods[] = {{"func", mod_func},
                                         {"global", mod_global},
                                         {"close", mod_close},
                                         {NULL, NULL}};
  static const luaL_Reg fn_methods[] = {
      {"launch", lcu_fn_launch},
      {"prepare", lcu_fn_prepare},
      {"launch_costs", lcu_fn_launch_costs},
      {"max_active_blocks", fn_max_active_blocks},
      {"close", fn_close},
      {NULL, NULL}};
  static const luaL_Reg global_methods[] = {{"read", global_read},
                                            {"write", global_write},
                                            {"read_u32", global_read_u32},
                                            {"write_u32", global_write_u32},
                                            {"close", global_close},
                                            {NULL, NULL}};
  pp_lua_class_new(L, &(pp_lua_class){
      .name = LCU_MOD_MT, .methods = mod_methods, .get = mod_get,
      .gc = mod_gc, .close = mod_close, .tostring = mod_tostring});
  pp_lua_class_new(L, &(pp_lua_class){
      .name = LCU_FN_MT, .methods = fn_methods, .get = fn_get,
      .gc = no_gc, .close = fn_close, .tostring = fn_tostring});
  pp_lua_class_new(L, &(pp_lua_class){
      .name = LCU_GLOBAL_MT, .methods = global_methods, .get = global_get,
      .gc = no_gc, .close = global_close, .tostring = global_tostring});
}

#else
typedef int pp_lua_cuda_module_absent_;
#endif
