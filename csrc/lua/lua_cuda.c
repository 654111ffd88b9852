/*
 * lua_cuda.c: pp.cuda, the CUDA driver layer for Lua (entry, contexts).
 *
 *   local cu = pp.cuda
 *   if not cu.available() then ... end        -- false, why
 *   local ctx = cu.context(0)                 -- primary context of device 0
 *   local mod = ctx:load(ptx_text)            -- lua_cuda_module.c
 *   local buf = ctx:alloc(4096)               -- lua_cuda_mem.c
 *   local s = ctx:stream()                    -- lua_cuda_launch.c
 *
 * The driver is loaded on first use (available, device_count, context), not
 * by require "phaseprobe". Without a driver, or in a build without the CUDA
 * headers, available() says why and context() returns nil, why.
 */
#include "pp_lua_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PP_HAVE_CUDA_H

static int l_unavailable(lua_State *L) {
  lua_pushboolean(L, 0);
  lua_pushliteral(L, "phaseprobe was built without the CUDA toolkit headers "
                     "(cuda.h not found at build time): the CUDA layer is "
                     "absent (analysis only); rebuild with CUDA_HOME=<toolkit>");
  return 2;
}

static int l_fail(lua_State *L) {
  luaL_pushfail(L);
  l_unavailable(L);
  lua_remove(L, -2);
  return 2;
}

static const luaL_Reg cuda_fns[] = {{"available", l_unavailable},
                                    {"device_count", l_fail},
                                    {"context", l_fail},
                                    {"driver", l_fail},
                                    {NULL, NULL}};
#define BUILT_WITH_CUDA 0

#else

/* ---- shared helpers -------------------------------------------------------- */
int lcu_raise(lua_State *L, lcu_ctx *c, const char *call, CUresult rc,
              const char *extra) {
  char msg[512];
  pp_cuda_format_error(msg, sizeof msg, call, rc);
  if (c && pp_cuda_error_is_sticky(rc) && c->sticky == CUDA_SUCCESS)
    c->sticky = rc;
  if (extra && *extra)
    return luaL_error(L, "%s: %s", msg, extra);
  return luaL_error(L, "%s", msg);
}

void lcu_check_usable(lua_State *L, lcu_ctx *c, const char *what) {
  if (c->closed)
    luaL_error(L, "%s: closed context (device %d)", what, c->ordinal);
  if (c->sticky != CUDA_SUCCESS) {
    char nb[32];
    luaL_error(L,
               "%s: context of device %d is unusable after %s; restart the "
               "process",
               what, c->ordinal, pp_cuda_error_name(c->sticky, nb, sizeof nb));
  }
}

void lcu_use(lua_State *L, lcu_ctx *c, const char *what) {
  lcu_check_usable(L, c, what);
  CUresult rc = pp_cuda()->CtxSetCurrent(c->ctx);
  if (rc != CUDA_SUCCESS)
    lcu_raise(L, c, "cuCtxSetCurrent", rc, what);
}

static void ctx_release(lcu_ctx *c) {
  if (c->released)
    return;
  c->released = 1;
  const pp_cuda_api *cu = pp_cuda();
  if (!cu || !c->ctx)
    return;
  cu->CtxSetCurrent(c->ctx);
  lcu_ctx_release_ksrc(c);
  pp_cuda_event_pool_free(c->pool);
  c->pool = NULL;
  cu->DevicePrimaryCtxRelease(c->dev);
  cu->CtxSetCurrent(NULL);
}

int lcu_closed(lua_State *L, lcu_ctx *c, int released, CUresult rc,
               const char *call) {
  if (released && rc != CUDA_SUCCESS && c->sticky == CUDA_SUCCESS &&
      !pp_cuda_error_is_sticky(rc))
    return lcu_raise(L, c, call, rc, NULL);
  return 0;
}

void lcu_hold(lcu_ctx *c) { c->live++; }

void lcu_unhold(lcu_ctx *c) {
  if (c->live > 0)
    c->live--;
  if (c->live == 0 && c->closed)
    ctx_release(c);
}

int lcu_no_field(lua_State *L, const char *kind) {
  int nul = pp_lua_hasnul(L, 2);
  return luaL_error(L, "%s has no field '%s'%s", kind, luaL_tolstring(L, 2, NULL),
                    nul ? " (it contains a NUL byte)" : "");
}

const char *lcu_get_key(lua_State *L, int closed, const char *kind) {
  const char *k = pp_lua_fieldkey(L, 2); /* h["closed\0x"] is not h.closed */
  if (strcmp(k, "closed") == 0) {
    lua_pushboolean(L, closed);
    return NULL;
  }
  if (closed)
    luaL_argerror(L, 1, lua_pushfstring(L, "closed %s", kind));
  return k;
}

/* Pushes the member f of the struct at p. */
static void push_member(lua_State *L, const void *p, const lcu_field *f) {
  const char *at = (const char *)p + f->at;
  int i;
  uint64_t u;
  size_t z;
  double d;
  const char *sp;
  switch (f->kind) {
  case LCU_INT:
  case LCU_BOOL:
    memcpy(&i, at, sizeof i);
    if (f->kind == LCU_BOOL)
      lua_pushboolean(L, i);
    else
      lua_pushinteger(L, i);
    break;
  case LCU_U64:
    memcpy(&u, at, sizeof u);
    lua_pushinteger(L, (lua_Integer)u);
    break;
  case LCU_SIZE:
    memcpy(&z, at, sizeof z);
    lua_pushinteger(L, (lua_Integer)z);
    break;
  case LCU_NUM:
    memcpy(&d, at, sizeof d);
    lua_pushnumber(L, d);
    break;
  case LCU_CHARS:
    lua_pushstring(L, at);
    break;
  case LCU_STRP:
    memcpy(&sp, at, sizeof sp);
    lua_pushstring(L, sp);
    break;
  }
}

void lcu_set_fields(lua_State *L, const void *p, const lcu_field *list) {
  for (; list->name; list++) {
    push_member(L, p, list);
    lua_setfield(L, -2, list->name);
  }
}

int lcu_push_field(lua_State *L, const void *p, const lcu_field *list,
                   const char *k) {
  for (; list->name; list++) {
    if (strcmp(k, list->name) != 0)
      continue;
    push_member(L, p, list);
    return 1;
  }
  return 0;
}

lcu_ctx *lcu_check_ctx(lua_State *L, int idx) {
  return pp_lua_checkudata(L, idx, LCU_CTX_MT);
}

int lcu_opt_bool(lua_State *L, int t, const char *field) {
  lua_getfield(L, t, field);
  int v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* ---- module functions ------------------------------------------------------ */
static const pp_cuda_api *load_or_fail(lua_State *L) {
  char why[512];
  const pp_cuda_api *cu = pp_cuda_load(why, sizeof why);
  if (!cu) {
    luaL_pushfail(L);
    lua_pushstring(L, why);
  }
  return cu;
}

static int l_available(lua_State *L) {
  if (!load_or_fail(L)) {
    lua_pushboolean(L, 0);
    lua_replace(L, -3);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* The driver and its device count in *n; NULL with nil, why pushed when
 * there is no driver (a failing count raises). */
static const pp_cuda_api *load_and_count(lua_State *L, int *n) {
  const pp_cuda_api *cu = load_or_fail(L);
  if (!cu)
    return NULL;
  *n = 0;
  CUresult rc = cu->DeviceGetCount(n);
  if (rc != CUDA_SUCCESS)
    lcu_raise(L, NULL, "cuDeviceGetCount", rc, NULL);
  return cu;
}

static int l_device_count(lua_State *L) {
  int n;
  if (!load_and_count(L, &n))
    return 2;
  lua_pushinteger(L, n);
  return 1;
}

static int l_driver(lua_State *L) {
  const pp_cuda_api *cu = load_or_fail(L);
  if (!cu)
    return 2;
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, cu->driver_version);
  lua_setfield(L, -2, "version");
  lua_pushstring(L, cu->path);
  lua_setfield(L, -2, "path");
  lua_pushinteger(L, PP_CUDA_API_VERSION);
  lua_setfield(L, -2, "api_version");
  lua_pushboolean(L, cu->FuncGetParamInfo != NULL);
  lua_setfield(L, -2, "param_info");
  return 1;
}

static int l_spin_us(lua_State *L) {
  lua_Number us = luaL_checknumber(L, 1);
  luaL_argcheck(L, us >= 0 && us < 1e9, 1, "microseconds out of range");
  pp_cuda_spin_ns((uint64_t)(us * 1000.0));
  return 0;
}

/* ---- contexts --------------------------------------------------------------- */
static int ctx_attr(lua_State *L, lcu_ctx *c, CUdevice_attribute a, int *out,
                    const char *what) {
  CUresult rc = pp_cuda()->DeviceGetAttribute(out, a, c->dev);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, c, "cuDeviceGetAttribute", rc, what);
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void ctx_describe(lua_State *L, lcu_ctx *c) {
  const pp_cuda_api *cu = pp_cuda();
  CUresult rc = cu->DeviceGetName(c->name, (int)sizeof c->name, c->dev);
  if (rc != CUDA_SUCCESS)
    lcu_raise(L, c, "cuDeviceGetName", rc, NULL);
  ctx_attr(L, c, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &c->cc_major,
           "compute capability");
  ctx_attr(L, c, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &c->cc_minor,
           "compute capability");
  ctx_attr(L, c, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &c->sm_count,
           "SM count");
  ctx_attr(L, c, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, &c->coop,
           "cooperative launch support");
}

/* Median of back-to-back event pairs: the floor an event-pair figure can
 * not go below. */
static void ctx_calibrate(lua_State *L, lcu_ctx *c, size_t samples) {
  uint64_t t[64];
  if (samples > 64)
    samples = 64;
  const char *failed = "cuEventRecord";
  CUresult rc = pp_cuda_event_pairs(c->pool, NULL, t, samples, &failed);
  if (rc != CUDA_SUCCESS)
    lcu_raise(L, c, failed, rc, "calibrating the event-pair floor");
  qsort(t, samples, sizeof t[0], cmp_u64);
  c->floor_ns = t[samples / 2];
  c->floor_method = 0;
}

/* cu.context([ordinal]) -> ctx, or nil, why without a driver */
static int l_context(lua_State *L) {
  lua_Integer ord = luaL_optinteger(L, 1, 0);
  int n;
  const pp_cuda_api *cu = load_and_count(L, &n);
  if (!cu)
    return 2;
  if (ord < 0 || ord >= n)
    return luaL_argerror(
        L, 1,
        lua_pushfstring(L, "no CUDA device %d (%d device%s)", (int)ord, n,
                        n == 1 ? "" : "s"));
  lcu_ctx *c = pp_lua_newobj(L, sizeof *c, 1);
  memset(c, 0, sizeof *c);
  c->ordinal = (int)ord;
  c->closed = 1; /* until fully set up: a failure below releases it */
  pp_lua_setclass(L, LCU_CTX_MT);
  CUresult rc = cu->DeviceGet(&c->dev, (int)ord);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, NULL, "cuDeviceGet", rc, NULL);
  rc = cu->DevicePrimaryCtxRetain(&c->ctx, c->dev);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, NULL, "cuDevicePrimaryCtxRetain", rc, NULL);
  c->pool = pp_cuda_event_pool_new();
  if (!c->pool)
    return luaL_error(L, "pp.cuda.context: out of host memory");
  c->closed = 0;
  lcu_use(L, c, "pp.cuda.context");
  ctx_describe(L, c);
  ctx_calibrate(L, c, 9);
  return 1;
}

/* close(), __close and __gc: the driver resources go now, or when the
 * last child holding some lets go (lcu_unhold); ctx_release is idempotent. */
static int ctx_close(lua_State *L) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  c->closed = 1;
  if (c->live == 0)
    ctx_release(c);
  return 0;
}

static int ctx_tostring(lua_State *L) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  if (c->closed)
    lua_pushfstring(L, "phaseprobe.cuda.context (device %d, closed)",
                    c->ordinal);
  else
    lua_pushfstring(L, "phaseprobe.cuda.context (device %d: %s, sm_%d%d, %d SMs)",
                    c->ordinal, c->name, c->cc_major, c->cc_minor, c->sm_count);
  return 1;
}

static lcu_ctx *check_open_ctx(lua_State *L) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  PP_CHECK_OPEN(L, !c->closed, "context");
  return c;
}

static const lcu_field ctx_fields[] = {
    LCU_FIELD(lcu_ctx, "ordinal", LCU_INT, ordinal),
    LCU_FIELD(lcu_ctx, "name", LCU_CHARS, name),
    LCU_FIELD(lcu_ctx, "cc_major", LCU_INT, cc_major),
    LCU_FIELD(lcu_ctx, "cc_minor", LCU_INT, cc_minor),
    LCU_FIELD(lcu_ctx, "sm_count", LCU_INT, sm_count),
    LCU_FIELD(lcu_ctx, "cooperative", LCU_BOOL, coop),
    LCU_FIELD(lcu_ctx, "event_floor_ns", LCU_U64, floor_ns),
    {NULL, LCU_INT, 0}};

static int ctx_get(lua_State *L) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  const char *k = lcu_get_key(L, c->closed, "context");
  if (!k)
    return 1;
  if (lcu_push_field(L, c, ctx_fields, k))
    return 1;
  if (strcmp(k, "usable") == 0)
    lua_pushboolean(L, c->sticky == CUDA_SUCCESS);
  else if (strcmp(k, "events_created") == 0)
    lua_pushinteger(L, (lua_Integer)pp_cuda_event_pool_created(c->pool));
  else if (strcmp(k, "events_idle") == 0)
    lua_pushinteger(L, (lua_Integer)pp_cuda_event_pool_idle(c->pool));
  else if (strcmp(k, "stream") == 0 || strcmp(k, "default_stream") == 0)
    lcu_push_default_stream(L, 1); /* callable: ctx:stream() makes one */
  else
    return lcu_no_field(L, LCU_CTX_MT);
  return 1;
}

static int ctx_synchronize(lua_State *L) {
  lcu_ctx *c = check_open_ctx(L);
  lcu_use(L, c, "ctx:synchronize");
  CUresult rc = pp_cuda()->CtxSynchronize();
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, c, "cuCtxSynchronize", rc, NULL);
  return 0;
}

static int ctx_mem_info(lua_State *L) {
  lcu_ctx *c = check_open_ctx(L);
  lcu_use(L, c, "ctx:mem_info");
  size_t free_b = 0, total = 0;
  CUresult rc = pp_cuda()->MemGetInfo(&free_b, &total);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, c, "cuMemGetInfo", rc, NULL);
  lua_pushinteger(L, (lua_Integer)free_b);
  lua_pushinteger(L, (lua_Integer)total);
  return 2;
}

/* ctx:event_floor([samples]) -> floor_ns: re-measures the event-pair floor
 * reported with kernel_ns. */
static int ctx_event_floor(lua_State *L) {
  lcu_ctx *c = check_open_ctx(L);
  lua_Integer n = luaL_optinteger(L, 2, 9);
  luaL_argcheck(L, n >= 1 && n <= 64, 2, "samples must be 1..64");
  lcu_use(L, c, "ctx:event_floor");
  ctx_calibrate(L, c, (size_t)n);
  lua_pushinteger(L, (lua_Integer)c->floor_ns);
  return 1;
}

static const luaL_Reg ctx_methods[] = {
    {"load", lcu_ctx_load},
    {"load_file", lcu_ctx_load_file},
    {"alloc", lcu_ctx_alloc},
    {"synchronize", ctx_synchronize},
    {"mem_info", ctx_mem_info},
    {"event_floor", ctx_event_floor},
    {"event_costs", lcu_ctx_event_costs},
    {"calibrate_events", lcu_ctx_calibrate_events},
    {"kernel_source", lcu_ctx_kernel_source},
    {"close", ctx_close},
    {NULL, NULL}};

static const luaL_Reg cuda_fns[] = {{"available", l_available},
                                    {"device_count", l_device_count},
                                    {"context", l_context},
                                    {"driver", l_driver},
                                    {"spin_us", l_spin_us},
                                    {NULL, NULL}};
#define BUILT_WITH_CUDA 1

/* The classes of the CUDA layer's handles. */
static void open_classes(lua_State *L) {
  pp_lua_class_new(L, &(pp_lua_class){
      .name = LCU_CTX_MT, .methods = ctx_methods, .get = ctx_get,
      .gc = ctx_close, .close = ctx_close, .tostring = ctx_tostring});
  lcu_open_module(L);
  lcu_open_mem(L);
  lcu_open_launch(L);
  lcu_open_window(L);
}

#endif

/* pp.cuda: the layer, or (built without the CUDA headers) the functions
 * that say why it is absent. */
int pp_lua_open_cuda(lua_State *L) {
#if BUILT_WITH_CUDA
  open_classes(L);
#endif
  luaL_newlib(L, cuda_fns);
  lua_pushboolean(L, BUILT_WITH_CUDA);
  lua_setfield(L, -2, "built_with_cuda");
  return 1;
}
