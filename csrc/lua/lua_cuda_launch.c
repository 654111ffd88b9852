/*
 * lua_cuda_launch.c: launches, streams and the timed dispatch window.
 *
 *   fn:launch{grid = 64, block = 256, args = {n, 2.0, x, y}}
 *   local s = ctx:stream()            -- or ctx.stream, the default stream
 *   local w = s:window()              -- outer start event
 *   w:spin_us(100)                    -- optional injected host gap
 *   w:launch_loop{fn = fn, grid = 64, block = 256, args = {...},
 *                 iterations = 4, reset = {target = g, bytes = 4}}
 *   w:close()                         -- outer end event
 *   s:synchronize()
 *   local device_window_ns, kernel_ns = w:collect()
 *
 * Arguments are converted once, before any event is recorded; the launch
 * loop then runs in C (cuda_window.c) with no Lua between the inner events.
 */
#include "pp_lua_cuda.h"

#ifdef PP_HAVE_CUDA_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arguments --------------------------------------------------------------- */
static const char *describe_param(lua_State *L, const lcu_fn *fn, int i) {
  const pp_cuda_param *p = &fn->params[i];
  if (p->name[0] && p->type[0])
    return lua_pushfstring(L, "argument %d ('%s', .%s)", i + 1, p->name,
                           p->type);
  return lua_pushfstring(L, "argument %d (%d bytes)", i + 1, (int)p->size);
}

static int arg_error(lua_State *L, const char *what, const lcu_fn *fn, int i,
                     const char *want, int vidx) {
  const char *got = luaL_typename(L, vidx);
  if (lua_type(L, vidx) == LUA_TNUMBER || lua_type(L, vidx) == LUA_TUSERDATA)
    got = luaL_tolstring(L, vidx, NULL);
  const char *p = describe_param(L, fn, i);
  return luaL_error(L, "%s: '%s' %s expects %s, got %s", what, fn->name, p,
                    want, got);
}

static void pack_int(lua_State *L, const char *what, const lcu_fn *fn, int i,
                     int vidx, unsigned char *dst) {
  const pp_cuda_param *p = &fn->params[i];
  int ok = 0;
  lua_Integer v = lua_tointegerx(L, vidx, &ok);
  if (lua_isboolean(L, vidx)) {
    v = lua_toboolean(L, vidx);
    ok = 1;
  }
  int bits = (int)p->size * 8;
  if (!ok || (bits < 64 && (v < -(1ll << (bits - 1)) || v >= (1ll << bits))))
    arg_error(L, what, fn, i,
              lua_pushfstring(L, "an integer that fits in %d bits", bits), vidx);
  uint64_t u = (uint64_t)v;
  for (size_t b = 0; b < p->size; b++) /* little-endian, as the device */
    dst[b] = (unsigned char)(u >> (8 * b));
}

static void pack_float(lua_State *L, const char *what, const lcu_fn *fn, int i,
                       int vidx, unsigned char *dst) {
  const pp_cuda_param *p = &fn->params[i];
  int ok = 0;
  lua_Number v = lua_tonumberx(L, vidx, &ok);
  if (!ok || lua_type(L, vidx) != LUA_TNUMBER || (p->size != 4 && p->size != 8))
    arg_error(L, what, fn, i, "a number", vidx);
  if (p->size == 4) {
    float f = (float)v;
    memcpy(dst, &f, 4);
  } else {
    double d = (double)v;
    memcpy(dst, &d, 8);
  }
}

static void pack_pointer(lua_State *L, const char *what, const lcu_fn *fn,
                         int i, int vidx, unsigned char *dst) {
  const pp_cuda_param *p = &fn->params[i];
  lcu_ctx *c = NULL;
  CUdeviceptr ptr = 0;
  size_t size = 0;
  if (!lcu_to_devptr(L, vidx, &c, &ptr, &size))
    arg_error(L, what, fn, i, "a buffer, a global, a number or a string", vidx);
  if (p->size != 8 || p->kind == PP_CUDA_PARAM_FLOAT ||
      p->kind == PP_CUDA_PARAM_HALF || p->kind == PP_CUDA_PARAM_BYTES)
    arg_error(L, what, fn, i,
              p->type[0] ? lua_pushfstring(L, "a .%s value", p->type)
                         : "a value of its size",
              vidx);
  if (c != fn->m->c)
    arg_error(L, what, fn, i, "memory of the function's context", vidx);
  memcpy(dst, &ptr, 8);
}

/* What parameter i accepts, for messages. */
static const char *accepts(lua_State *L, const pp_cuda_param *p) {
  switch (p->kind) {
  case PP_CUDA_PARAM_FLOAT: return "a number";
  case PP_CUDA_PARAM_HALF:
  case PP_CUDA_PARAM_BYTES:
    return lua_pushfstring(L, "a string of exactly %d bytes", (int)p->size);
  default:
    if (p->size > 8 || p->size == 0)
      return lua_pushfstring(L, "a string of exactly %d bytes", (int)p->size);
    return p->size == 8 ? "an integer, a buffer or a global" : "an integer";
  }
}

/* Converts Lua value vidx into parameter i's bytes at dst. */
static void pack_one(lua_State *L, const char *what, const lcu_fn *fn, int i,
                     int vidx, unsigned char *dst) {
  const pp_cuda_param *p = &fn->params[i];
  int t = lua_type(L, vidx);
  if (t == LUA_TSTRING) { /* raw bytes, any parameter */
    size_t n;
    const char *s = lua_tolstring(L, vidx, &n);
    if (n != p->size)
      arg_error(L, what, fn, i,
                lua_pushfstring(L, "a string of exactly %d bytes", (int)p->size),
                vidx);
    memcpy(dst, s, n);
    return;
  }
  if (t == LUA_TUSERDATA) {
    pack_pointer(L, what, fn, i, vidx, dst);
    return;
  }
  int scalar = t == LUA_TNUMBER || t == LUA_TBOOLEAN;
  if (!scalar || p->kind == PP_CUDA_PARAM_HALF ||
      p->kind == PP_CUDA_PARAM_BYTES || p->size > 8 || p->size == 0)
    arg_error(L, what, fn, i, accepts(L, p), vidx);
  if (p->kind == PP_CUDA_PARAM_FLOAT) {
    pack_float(L, what, fn, i, vidx, dst);
  } else if (p->kind == PP_CUDA_PARAM_UINT || p->kind == PP_CUDA_PARAM_SINT) {
    pack_int(L, what, fn, i, vidx, dst);
  } else if (t == LUA_TNUMBER && !lua_isinteger(L, vidx) &&
             (p->size == 4 || p->size == 8)) {
    pack_float(L, what, fn, i, vidx, dst); /* .bN or untyped: a float */
  } else {
    pack_int(L, what, fn, i, vidx, dst);
  }
}

static int count_error(lua_State *L, const char *what, const lcu_fn *fn,
                       int got) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 0; i < fn->nparams; i++) {
    const pp_cuda_param *p = &fn->params[i];
    if (i)
      luaL_addstring(&b, ", ");
    if (p->name[0])
      lua_pushfstring(L, "%s .%s", p->name, p->type);
    else
      lua_pushfstring(L, "%d bytes", (int)p->size);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  return luaL_error(L, "%s: '%s' expects %d argument%s (%s), got %d", what,
                    fn->name, fn->nparams, fn->nparams == 1 ? "" : "s",
                    lua_tostring(L, -1), got);
}

/* The largest parameter block packed: CUDA allows 32 KiB of kernel
 * parameters; anything far past that is a driver's answer gone wrong. */
#define PACK_MAX (1 << 20)

/* The block the list at args_idx (or none) is packed into, a userdata left
 * on the stack: kernelParams pointers followed by the parameter bytes.
 * Allocated before the handles are checked for the last time (pp_lua_cuda.h);
 * pack_args then fills it without allocating. */
static unsigned char *args_block(lua_State *L, const char *what, int fn_idx,
                                 const lcu_fn *fn, int args_idx) {
  if (fn->nparams < 0) {
    lua_getiuservalue(L, fn_idx, 2);
    luaL_error(L, "%s: %s", what, lua_tostring(L, -1));
  }
  int got = 0;
  if (!lua_isnoneornil(L, args_idx)) {
    if (!lua_istable(L, args_idx))
      luaL_error(L, "%s: field 'args' must be a list, got %s", what,
                 luaL_typename(L, args_idx));
    got = (int)lua_rawlen(L, args_idx);
  }
  if (got != fn->nparams)
    count_error(L, what, fn, got);
  size_t np = (size_t)fn->nparams;
  if (fn->param_bytes > PACK_MAX) /* offsets as a driver reported them */
    luaL_error(L, "%s: '%s' has a parameter block of %I bytes (at most %d)",
               what, fn->name, (lua_Integer)fn->param_bytes, PACK_MAX);
  size_t head = (np * sizeof(void *) + 15) & ~(size_t)15;
  return lua_newuserdatauv(L, head + fn->param_bytes + 16, 0);
}

/* Packs the list at args_idx into mem (from args_block); a value that does
 * not fit its parameter raises. */
static void **pack_args(lua_State *L, const char *what, const lcu_fn *fn,
                        int args_idx, unsigned char *mem) {
  size_t np = (size_t)fn->nparams;
  size_t head = (np * sizeof(void *) + 15) & ~(size_t)15;
  void **ptrs = (void **)mem;
  unsigned char *bytes = mem + head;
  memset(bytes, 0, fn->param_bytes);
  for (size_t i = 0; i < np; i++) {
    lua_rawgeti(L, args_idx, (lua_Integer)i + 1);
    pack_one(L, what, fn, (int)i, lua_gettop(L), bytes + fn->params[i].offset);
    lua_pop(L, 1);
    ptrs[i] = bytes + fn->params[i].offset;
  }
  return ptrs;
}

/* ---- launch descriptions ------------------------------------------------------ */
typedef struct {
  lcu_fn *fn;
  lcu_ctx *c;
  pp_cuda_launch_cfg cfg;
  lcu_stream *s;       /* NULL: the legacy default stream                */
  uint64_t iterations;
  pp_cuda_reset reset;
  int fence;
  double spin_us;
  pp_kernel_src source; /* PP_KSRC_NONE: the window's (the context's)   */
} launch_desc;

enum { F_FN = 1, F_STREAM = 2, F_LOOP = 4, F_SPIN = 8, F_SAMPLES = 16 };

static void check_fields(lua_State *L, int t, const char *what, int allow) {
  static const struct {
    const char *name;
    int needs;
  } fields[] = {{"grid", 0},       {"block", 0},      {"shared", 0},
                {"args", 0},       {"cooperative", 0}, {"fn", F_FN},
                {"stream", F_STREAM}, {"iterations", F_LOOP},
                {"reset", F_LOOP}, {"fence", F_LOOP}, {"spin_us", F_SPIN},
                {"samples", F_SAMPLES}, {"source", F_LOOP}};
  lua_pushnil(L);
  while (lua_next(L, t)) {
    int ok = 0;
    const char *k = pp_lua_tokey(L, -2);
    for (size_t i = 0; k && i < sizeof fields / sizeof fields[0]; i++)
      if (strcmp(k, fields[i].name) == 0 &&
          (fields[i].needs & allow) == fields[i].needs)
        ok = 1;
    if (!ok) {
      lua_pop(L, 1);
      int nul = pp_lua_hasnul(L, -1);
      luaL_error(L, "%s: unknown field '%s'%s", what, luaL_tolstring(L, -1, NULL),
                 nul ? " (it contains a NUL byte)" : "");
    }
    lua_pop(L, 1);
  }
}

static unsigned dim_value(lua_State *L, int idx, const char *what,
                          const char *field) {
  int ok = 0;
  lua_Integer v = lua_tointegerx(L, idx, &ok);
  if (!ok || v < 1 || v > 0x7fffffff)
    luaL_error(L, "%s: field '%s' must be a positive integer or a list of 1 "
                  "to 3 positive integers, got %s",
               what, field, luaL_tolstring(L, idx, NULL));
  return (unsigned)v;
}

static void parse_dim(lua_State *L, int t, const char *what, const char *field,
                      unsigned out[3], int required) {
  out[0] = out[1] = out[2] = 1;
  int ty = lua_getfield(L, t, field);
  if (ty == LUA_TNIL) {
    if (required)
      luaL_error(L, "%s: field '%s' is required", what, field);
  } else if (ty == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    if (n < 1 || n > 3)
      luaL_error(L, "%s: field '%s' must list 1 to 3 dimensions, got %d", what,
                 field, (int)n);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      out[i - 1] = dim_value(L, lua_gettop(L), what, field);
      lua_pop(L, 1);
    }
  } else {
    out[0] = dim_value(L, lua_gettop(L), what, field);
  }
  lua_pop(L, 1);
}

static lua_Integer opt_int_field(lua_State *L, int t, const char *what,
                                 const char *field, lua_Integer def,
                                 lua_Integer lo, lua_Integer hi) {
  lua_Integer v = def;
  if (lua_getfield(L, t, field) != LUA_TNIL) {
    int ok = 0;
    v = lua_tointegerx(L, -1, &ok);
    if (!ok || v < lo || v > hi)
      luaL_error(L, "%s: field '%s' must be an integer in %I..%I, got %s", what,
                 field, lo, hi, luaL_tolstring(L, -1, NULL));
  }
  lua_pop(L, 1);
  return v;
}

/* Reads field 'reset'; returns the stack index of its target (left on the
 * stack, so that it stays alive and can be checked again), or 0. */
static int parse_reset(lua_State *L, int t, const char *what,
                       launch_desc *d) {
  memset(&d->reset, 0, sizeof d->reset);
  int ty = lua_getfield(L, t, "reset");
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (ty != LUA_TTABLE)
    luaL_error(L, "%s: field 'reset' must be a table {target=, bytes=, "
                  "value=, offset=}", what);
  int r = lua_gettop(L);
  lua_getfield(L, r, "target");
  lcu_ctx *c = NULL;
  CUdeviceptr ptr = 0;
  size_t size = 0;
  if (!lcu_to_devptr(L, -1, &c, &ptr, &size))
    luaL_error(L, "%s: reset.target must be a buffer or a global, got %s", what,
               luaL_typename(L, -1));
  if (c != d->c)
    luaL_error(L, "%s: reset.target belongs to another context", what);
  lua_Integer off = opt_int_field(L, r, what, "offset", 0, 0, (lua_Integer)size);
  lua_Integer bytes = opt_int_field(L, r, what, "bytes",
                                    (lua_Integer)size - off, 0,
                                    (lua_Integer)size - off);
  lua_Integer value = opt_int_field(L, r, what, "value", 0, 0, 255);
  d->reset.ptr = ptr + (CUdeviceptr)off;
  d->reset.bytes = (size_t)bytes;
  d->reset.value = (unsigned char)value;
  lua_remove(L, r);
  return lua_gettop(L);
}

/* What parse_launch read may have been closed by code it ran (an __index
 * of the description table): checks it all again. */
static void recheck_launch(lua_State *L, const char *what, int fn_idx,
                           int stream_idx, int target_idx, launch_desc *d) {
  d->fn = lcu_check_open_fn(L, fn_idx);
  if (d->s && d->s->closed)
    luaL_error(L, "%s: closed stream", what);
  (void)stream_idx;
  if (target_idx) {
    lcu_ctx *c = NULL;
    CUdeviceptr ptr = 0;
    size_t size = 0;
    if (!lcu_to_devptr(L, target_idx, &c, &ptr, &size) || c != d->c)
      luaL_error(L, "%s: reset.target is no longer usable", what);
  }
}

static int opt_bool_field(lua_State *L, int t, const char *field) {
  lua_getfield(L, t, field);
  int v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

static void check_coop(lua_State *L, const char *what, launch_desc *d) {
  if (!d->c->coop)
    luaL_error(L, "%s: device %d (%s) does not support cooperative launches",
               what, d->c->ordinal, d->c->name);
  int fits = 0;
  uint64_t cap = 0;
  const char *failed = NULL;
  CUresult rc = pp_cuda_coop_fits(&d->cfg, d->c->sm_count, &fits, &cap, &failed);
  if (rc != CUDA_SUCCESS)
    lcu_raise(L, d->c, failed, rc, what);
  if (!fits) {
    uint64_t blocks = (uint64_t)d->cfg.grid[0] * d->cfg.grid[1] * d->cfg.grid[2];
    uint64_t threads =
        (uint64_t)d->cfg.block[0] * d->cfg.block[1] * d->cfg.block[2];
    luaL_error(L,
               "%s: cooperative launch of '%s' does not fit: grid of %I blocks, "
               "at most %I co-resident (%d SMs x %I blocks per SM at %I "
               "threads a block, %d bytes of dynamic shared memory)",
               what, d->fn->name, (lua_Integer)blocks, (lua_Integer)cap,
               d->c->sm_count,
               (lua_Integer)(d->c->sm_count ? cap / (uint64_t)d->c->sm_count : 0),
               (lua_Integer)threads, (int)d->cfg.shared);
  }
}

/* Reads a launch description from the table at t. fn_idx: the function's
 * stack index, or 0 to take it from field 'fn'. Leaves the packed argument
 * block (and the function, when taken from the table) on the stack. */
static void parse_launch(lua_State *L, int t, int fn_idx, const char *what,
                         int allow, launch_desc *d) {
  memset(d, 0, sizeof *d);
  luaL_checktype(L, t, LUA_TTABLE);
  check_fields(L, t, what, allow);
  if (!fn_idx) {
    lua_getfield(L, t, "fn");
    if (!luaL_testudata(L, -1, LCU_FN_MT))
      luaL_error(L, "%s: field 'fn' must be a function (mod:func), got %s",
                 what, luaL_typename(L, -1));
    fn_idx = lua_gettop(L);
  }
  d->fn = lcu_check_open_fn(L, fn_idx);
  d->c = d->fn->m->c;
  d->cfg.fn = d->fn->fn;
  parse_dim(L, t, what, "grid", d->cfg.grid, 1);
  parse_dim(L, t, what, "block", d->cfg.block, 1);
  d->cfg.shared = (unsigned)opt_int_field(L, t, what, "shared", 0, 0, 0x7fffffff);
  d->cfg.cooperative = opt_bool_field(L, t, "cooperative");
  int stream_idx = 0, target_idx = 0;
  if (allow & F_STREAM) {
    if (lua_getfield(L, t, "stream") != LUA_TNIL) {
      d->s = luaL_testudata(L, -1, LCU_STREAM_MT);
      if (!d->s)
        luaL_error(L, "%s: field 'stream' must be a stream, got %s", what,
                   luaL_typename(L, -1));
      if (d->s->closed)
        luaL_error(L, "%s: closed stream", what);
      if (d->s->c != d->c)
        luaL_error(L, "%s: the stream belongs to another context", what);
      stream_idx = lua_gettop(L); /* stays: the stream must outlive d->s */
    } else {
      lua_pop(L, 1);
    }
  }
  if (allow & F_LOOP) {
    d->iterations = (uint64_t)opt_int_field(L, t, what, "iterations", 1, 0,
                                            LUA_MAXINTEGER);
    d->fence = opt_bool_field(L, t, "fence");
    target_idx = parse_reset(L, t, what, d);
    lua_getfield(L, t, "source");
    d->source = lcu_opt_ksrc(L, lua_gettop(L), what, PP_KSRC_NONE);
    lua_pop(L, 1);
  }
  if (allow & F_SPIN) {
    lua_getfield(L, t, "spin_us");
    d->spin_us = luaL_optnumber(L, -1, 0.0);
    if (!(d->spin_us >= 0 && d->spin_us <= 1e9)) /* NaN too */
      luaL_error(L, "%s: field 'spin_us' out of range", what);
    lua_pop(L, 1);
  }
  lua_getfield(L, t, "args");
  int args_idx = lua_gettop(L);
  /* from here on no Lua code runs (raw reads only), and after the block's
   * allocation nothing allocates: no finalizer closes what is checked */
  unsigned char *mem = args_block(L, what, fn_idx, d->fn, args_idx);
  recheck_launch(L, what, fn_idx, stream_idx, target_idx, d);
  lcu_use(L, d->c, what);
  if (d->cfg.cooperative)
    check_coop(L, what, d);
  d->cfg.params = pack_args(L, what, d->fn, args_idx, mem);
  lua_remove(L, args_idx);
}

/* "function 'f', grid=AxBxC block=AxBxC shared=N" for launch errors */
static const char *launch_text(lua_State *L, const char *what,
                               const launch_desc *d) {
  const unsigned *g = d->cfg.grid, *b = d->cfg.block;
  return lua_pushfstring(L, "%s of '%s' (grid=%dx%dx%d block=%dx%dx%d "
                            "shared=%d%s)",
                         what, d->fn->name, (int)g[0], (int)g[1], (int)g[2],
                         (int)b[0], (int)b[1], (int)b[2], (int)d->cfg.shared,
                         d->cfg.cooperative ? " cooperative" : "");
}

/* fn:launch{grid=, block=, shared=, stream=, args=, cooperative=} */
int lcu_fn_launch(lua_State *L) {
  launch_desc d;
  parse_launch(L, 2, 1, "fn:launch", F_STREAM, &d);
  const char *failed = NULL;
  CUresult rc = pp_cuda_launch(&d.cfg, d.s ? d.s->s : NULL, &failed);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, d.c, failed, rc, launch_text(L, "fn:launch", &d));
  return 0;
}

/* fn:launch_costs{..., samples = n} -> list of host ns per launch call
 * (timed one by one with the probe clock; the stream is drained every 256
 * launches, outside the timed calls). For bench/cuda_costs.lua. */
int lcu_fn_launch_costs(lua_State *L) {
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = 1000;
  if (lua_getfield(L, 2, "samples") != LUA_TNIL)
    n = luaL_checkinteger(L, -1);
  lua_pop(L, 1);
  luaL_argcheck(L, n >= 1 && n <= 1000000, 2, "samples must be 1..1000000");
  uint64_t *t = lua_newuserdatauv(L, (size_t)n * sizeof *t, 0);
  launch_desc d;
  parse_launch(L, 2, 1, "fn:launch_costs", F_STREAM | F_SAMPLES, &d);
  CUstream s = d.s ? d.s->s : NULL;
  const char *failed = NULL;
  for (lua_Integer i = 0; i < n; i++) {
    CUresult sr = i % 256 ? CUDA_SUCCESS : pp_cuda()->StreamSynchronize(s);
    if (sr != CUDA_SUCCESS)
      return lcu_raise(L, d.c, "cuStreamSynchronize", sr, NULL);
    pp_ticks t0 = pp_now();
    CUresult rc = pp_cuda_launch(&d.cfg, s, &failed);
    t[i] = pp_ticks_to_ns(t0, pp_now());
    if (rc != CUDA_SUCCESS)
      return lcu_raise(L, d.c, failed, rc,
                       launch_text(L, "fn:launch_costs", &d));
  }
  CUresult rc = pp_cuda()->StreamSynchronize(s);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, d.c, "cuStreamSynchronize", rc, NULL);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)t[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* ---- streams ----------------------------------------------------------------- */
static lcu_stream *check_stream(lua_State *L, int idx) {
  return luaL_checkudata(L, idx, LCU_STREAM_MT);
}

static lcu_stream *check_open_stream(lua_State *L, int idx, const char *what) {
  lcu_stream *s = check_stream(L, idx);
  PP_CHECK_OPEN(L, !s->closed, "stream");
  lcu_use(L, s->c, what);
  return s;
}

static lcu_stream *new_stream(lua_State *L, int ctx_idx, lcu_ctx *c) {
  lcu_stream *s = lua_newuserdatauv(L, sizeof *s, 1);
  memset(s, 0, sizeof *s);
  s->c = c;
  luaL_setmetatable(L, LCU_STREAM_MT);
  lua_pushvalue(L, ctx_idx);
  lua_setiuservalue(L, -2, 1);
  return s;
}

void lcu_push_default_stream(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_getiuservalue(L, idx, 1) != LUA_TNIL)
    return;
  lua_pop(L, 1);
  new_stream(L, idx, lcu_check_ctx(L, idx));
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, idx, 1);
}

/* ctx:stream([{non_blocking = true}]) -> stream */
int lcu_ctx_stream(lua_State *L) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  PP_CHECK_OPEN(L, !c->closed, "context");
  unsigned flags = CU_STREAM_DEFAULT;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    if (opt_bool_field(L, 2, "non_blocking"))
      flags = CU_STREAM_NON_BLOCKING;
  }
  lcu_stream *s = new_stream(L, 1, c);
  s->closed = 1;
  lcu_use(L, c, "ctx:stream"); /* after the allocation (pp_lua_cuda.h) */
  CUresult rc = pp_cuda()->StreamCreate(&s->s, flags);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, c, "cuStreamCreate", rc, NULL);
  s->closed = 0;
  s->owned = 1;
  lcu_hold(c);
  return 1;
}

/* ctx.stream is the default stream, and ctx:stream(opts) calls it with the
 * context: a default stream called with its context creates a new stream. */
static int stream_call(lua_State *L) {
  lcu_stream *s = check_stream(L, 1);
  lcu_ctx *c = luaL_testudata(L, 2, LCU_CTX_MT);
  if (s->owned || c != s->c)
    return luaL_error(L, "a stream is not callable (use ctx:stream() to create "
                         "one)");
  lua_remove(L, 1);
  return lcu_ctx_stream(L);
}

static int stream_release(lcu_stream *s, CUresult *rc) {
  *rc = CUDA_SUCCESS;
  if (s->closed || !s->owned)
    return 0;
  s->closed = 1;
  if (pp_cuda()->CtxSetCurrent(s->c->ctx) == CUDA_SUCCESS)
    *rc = pp_cuda()->StreamDestroy(s->s);
  lcu_unhold(s->c);
  return 1;
}

/* The default stream is not owned: close leaves it usable. */
static int stream_close(lua_State *L) {
  lcu_stream *s = check_stream(L, 1);
  CUresult rc;
  int released = stream_release(s, &rc);
  return lcu_closed(L, s->c, released, rc, "cuStreamDestroy");
}

static int stream_gc(lua_State *L) {
  CUresult rc;
  stream_release(check_stream(L, 1), &rc);
  return 0;
}

static int stream_tostring(lua_State *L) {
  lcu_stream *s = check_stream(L, 1);
  lua_pushfstring(L, "phaseprobe.cuda.stream (%s%s)",
                  s->owned ? "created" : "default",
                  s->closed ? ", closed" : "");
  return 1;
}

static int stream_get(lua_State *L) {
  lcu_stream *s = check_stream(L, 1);
  const char *k = lcu_get_key(L, s->closed, "stream");
  if (!k)
    return 1;
  if (strcmp(k, "default") == 0)
    lua_pushboolean(L, !s->owned);
  else if (strcmp(k, "context") == 0)
    lua_getiuservalue(L, 1, 1);
  else
    return lcu_no_field(L, LCU_STREAM_MT);
  return 1;
}

static int stream_synchronize(lua_State *L) {
  lcu_stream *s = check_open_stream(L, 1, "stream:synchronize");
  CUresult rc = pp_cuda()->StreamSynchronize(s->s);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, s->c, "cuStreamSynchronize", rc, NULL);
  return 0;
}

/* ---- windows ----------------------------------------------------------------- */
static lcu_window *check_window(lua_State *L, int idx) {
  return luaL_checkudata(L, idx, LCU_WINDOW_MT);
}

static void window_release(lcu_window *w) {
  if (!w->holds)
    return;
  if (w->w.timeline)
    pp_cuda_window_discard(&w->w); /* no events: nothing of the driver's */
  else if (!w->c->released &&
           pp_cuda()->CtxSetCurrent(w->c->ctx) == CUDA_SUCCESS)
    pp_cuda_window_discard(&w->w);
  else if (w->w.held) { /* its events went with the context */
    w->w.held = 0;
    pp_cupti_window(-1);
  }
  w->holds = 0;
  lcu_unhold(w->c);
}

static int window_fail(lua_State *L, lcu_window *w, CUresult rc,
                       const char *what) {
  return lcu_raise(L, w->c, w->w.failed ? w->w.failed : "CUDA", rc, what);
}

/* A window that can take the next step (not collected or discarded). */
static lcu_window *check_live_window(lua_State *L, const char *what) {
  lcu_window *w = check_window(L, 1);
  PP_CHECK_OPEN(L, w->holds, "window");
  PP_CHECK_OPEN(L, !w->s->closed, "stream");
  lcu_use(L, w->c, what);
  return w;
}

/* s:window([{source = "event" | "cupti"}]) -> w: records the outer start
 * event. The options are read and the handle made before the stream and
 * its context are checked and used (pp_lua_cuda.h). */
static int stream_window(lua_State *L) {
  lcu_stream *s = check_stream(L, 1);
  PP_CHECK_OPEN(L, !s->closed, "stream");
  /* With CUPTI as the context's source the window records no events: its
   * device side is CUPTI's timeline (s:window{source = "event"} keeps the
   * event pairs, and a loop may still ask CUPTI for its kernels). */
  pp_kernel_src src = PP_KSRC_NONE;
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "source");
    src = lcu_opt_ksrc(L, -1, "stream:window", PP_KSRC_NONE);
    lua_pop(L, 1);
  }
  lcu_window *w = lua_newuserdatauv(L, sizeof *w, 1);
  memset(w, 0, sizeof *w);
  w->c = s->c;
  w->s = s;
  luaL_setmetatable(L, LCU_WINDOW_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  check_open_stream(L, 1, "stream:window");
  w->holds = 1;
  lcu_hold(w->c);
  if (src == PP_KSRC_NONE)
    src = w->c->ksrc;
  lcu_check_ksrc(L, src, "stream:window");
  CUresult rc = src == PP_KSRC_CUPTI
                    ? pp_cuda_window_open_timeline(&w->w, w->c->pool, s->s)
                    : pp_cuda_window_open(&w->w, w->c->pool, s->s);
  w->w.floor_ns = w->c->floor_ns;
  w->w.cal = w->c->cal.npoints ? &w->c->cal : NULL;
  if (!w->w.timeline)
    w->w.source = PP_KSRC_EVENT;
  if (rc != CUDA_SUCCESS)
    return window_fail(L, w, rc, "stream:window");
  return 1;
}

static int window_spin_us(lua_State *L) {
  lcu_window *w = check_window(L, 1);
  PP_CHECK_OPEN(L, w->holds, "window");
  lua_Number us = luaL_checknumber(L, 2);
  luaL_argcheck(L, us >= 0 && us < 1e9, 2, "microseconds out of range");
  pp_cuda_spin_ns((uint64_t)(us * 1000.0));
  return 0;
}

/* w:launch_loop{fn=, grid=, block=, shared=, args=, iterations=, reset=,
 * cooperative=, fence=, source=, spin_us=} -> host ns of the loop (inner
 * events included). spin_us: a host gap spun right before the loop (after
 * the description was read), for tests and the truth harness. source = "event" | "cupti" overrides the context's
 * kernel-time source for this window (lua_cuda_ksrc.c). */
static int window_launch_loop(lua_State *L) {
  lcu_window *w = check_live_window(L, "window:launch_loop");
  if (w->w.stage != PP_CUDA_WINDOW_OPEN)
    return luaL_error(L, "window:launch_loop: %s",
                      w->w.looped ? "the loop already ran in this window"
                                  : "the window is closed");
  launch_desc d;
  parse_launch(L, 2, 0, "window:launch_loop", F_FN | F_LOOP | F_SPIN, &d);
  if (d.c != w->c)
    return luaL_error(L, "window:launch_loop: the function belongs to "
                         "another context");
  /* reading the description may have run code that closed the window */
  check_live_window(L, "window:launch_loop");
  if (w->w.stage != PP_CUDA_WINDOW_OPEN)
    return luaL_error(L, "window:launch_loop: the window is closed");
  pp_kernel_src src = d.source != PP_KSRC_NONE ? d.source : w->w.source;
  if (w->w.timeline && src != PP_KSRC_CUPTI)
    return luaL_error(L, "window:launch_loop: this window records no events "
                         "(its context reads CUPTI): open it with "
                         "s:window{source = \"event\"} for the event pair");
  lcu_check_ksrc(L, src, "window:launch_loop");
  w->w.source = src;
  if (d.spin_us > 0) { /* a host gap injected right before the loop */
    w->gap_ns[0] = pp_now_ns();
    pp_cuda_spin_ns((uint64_t)(d.spin_us * 1000.0));
    w->gap_ns[1] = pp_now_ns();
  }
  CUresult rc = pp_cuda_window_launch_loop(&w->w, &d.cfg, d.iterations,
                                           &d.reset);
  if (rc == CUDA_SUCCESS && d.fence)
    rc = pp_cuda_window_fence(&w->w);
  if (rc != CUDA_SUCCESS)
    return window_fail(L, w, rc, launch_text(L, "window:launch_loop", &d));
  lua_pushinteger(L, (lua_Integer)w->w.loop_host_ns);
  return 1;
}

static int window_fence(lua_State *L) {
  lcu_window *w = check_live_window(L, "window:fence");
  CUresult rc = pp_cuda_window_fence(&w->w);
  if (rc != CUDA_SUCCESS)
    return window_fail(L, w, rc, "window:fence");
  return 0;
}

/* w:close(): records the outer end event (once; later calls do nothing) */
static int window_close(lua_State *L) {
  lcu_window *w = check_window(L, 1);
  if (!w->holds || (w->w.stage != PP_CUDA_WINDOW_OPEN &&
                    w->w.stage != PP_CUDA_WINDOW_LOOPED))
    return 0;
  int unwinding = !lua_isnoneornil(L, 2); /* __close with an error */
  if (w->c->closed || w->c->sticky != CUDA_SUCCESS || w->s->closed) {
    if (unwinding)
      return 0;
    PP_CHECK_OPEN(L, !w->s->closed, "stream");
    lcu_use(L, w->c, "window:close");
  }
  if (pp_cuda()->CtxSetCurrent(w->c->ctx) != CUDA_SUCCESS && unwinding)
    return 0;
  CUresult rc = pp_cuda_window_close(&w->w);
  if (rc != CUDA_SUCCESS && !unwinding)
    return window_fail(L, w, rc, "window:close");
  return 0;
}

/* w:collect() -> device_window_ns, kernel_ns (nil without a launch loop) */
static int window_collect(lua_State *L) {
  lcu_window *w = check_live_window(L, "window:collect");
  if (w->w.stage != PP_CUDA_WINDOW_CLOSED)
    return luaL_error(L, "window:collect: close the window first (w:close())");
  uint64_t win = 0, ker = 0;
  CUresult rc = pp_cuda_window_collect(&w->w, &win, &ker);
  if (rc != CUDA_SUCCESS)
    return window_fail(L, w, rc, "window:collect");
  w->collected = 1;
  window_release(w);
  /* a window without events has nothing to read yet: CUPTI completes the
   * dispatch's record when the kernels' records come (w:wait() reads now) */
  if (win == UINT64_MAX)
    lua_pushnil(L);
  else
    lua_pushinteger(L, (lua_Integer)win);
  if (ker == UINT64_MAX)
    lua_pushnil(L);
  else
    lua_pushinteger(L, (lua_Integer)ker);
  return 2;
}

/* w:wait([timeout_ms = 1000]) -> device_window_ns, kernel_ns | nil, why:
 * after collect, for a window read by CUPTI, waits for the loop's kernel
 * records (one forced flush: about 200 us of extra latency for the next
 * kernel on an H200, so read a batch of windows after the batch). An open
 * dispatch takes the timeline at once. */
static int window_wait(lua_State *L) {
  lcu_window *w = check_window(L, 1);
  lua_Integer ms = luaL_optinteger(L, 2, 1000);
  luaL_argcheck(L, ms >= 1 && ms <= 600000, 2, "timeout must be 1..600000 ms");
  luaL_argcheck(L, w->collected, 1, "collect the window first (w:collect())");
  if (w->w.cupti_span == 0 && w->w.kernel_src != PP_KSRC_CUPTI) {
    luaL_pushfail(L);
    lua_pushstring(L, w->w.cupti_why[0] ? w->w.cupti_why
                                        : "the window was not read by CUPTI");
    return 2;
  }
  if (w->w.cupti_span &&
      pp_cuda_window_wait(&w->w, (uint64_t)ms * 1000000u) != 0) {
    luaL_pushfail(L);
    lua_pushstring(L, w->w.cupti_why);
    return 2;
  }
  lua_pushinteger(L, (lua_Integer)w->w.tl.window_ns);
  lua_pushinteger(L, (lua_Integer)w->w.tl.sum_ns);
  return 2;
}

/* w:discard(): gives the events back without reading them */
static int window_discard(lua_State *L) {
  window_release(check_window(L, 1));
  return 0;
}

static int window_gc(lua_State *L) {
  lcu_window *w = check_window(L, 1);
  window_release(w);
  if (w->w.cupti_span) { /* never waited for: released when its kernels come */
    pp_cupti_span_release(w->w.cupti_span);
    w->w.cupti_span = 0;
  }
  return 0;
}

static const char *stage_name(const lcu_window *w) {
  if (!w->holds)
    return w->collected ? "collected" : "discarded";
  switch (w->w.stage) {
  case PP_CUDA_WINDOW_OPEN: return "open";
  case PP_CUDA_WINDOW_LOOPED: return "looped";
  case PP_CUDA_WINDOW_CLOSED: return "closed";
  default: return "failed";
  }
}

static int window_tostring(lua_State *L) {
  lcu_window *w = check_window(L, 1);
  lua_pushfstring(L, "phaseprobe.cuda.window (%s)", stage_name(w));
  return 1;
}

static int window_get(lua_State *L) {
  lcu_window *w = check_window(L, 1);
  const char *k = pp_lua_fieldkey(L, 2);
  static const lcu_field fields[] = {
      LCU_FIELD(lcu_window, "probe_ns", LCU_U64, w.probe_ns),
      LCU_FIELD(lcu_window, "loop_host_ns", LCU_U64, w.loop_host_ns),
      LCU_FIELD(lcu_window, "iterations", LCU_U64, w.iterations),
      LCU_FIELD(lcu_window, "floor_ns", LCU_U64, w.floor_ns),
      LCU_FIELD(lcu_window, "lead_ns", LCU_U64, w.lead_ns),
      {NULL, LCU_INT, 0}};
  if (lcu_push_field(L, w, fields, k))
    return 1;
  if (strcmp(k, "stage") == 0)
    lua_pushstring(L, stage_name(w));
  else if (strcmp(k, "host_ns") == 0) {
    /* open, loop start, loop end, close; then a spun gap's start and end */
    lua_createtable(L, 6, 0);
    for (int i = 0; i < 4; i++) {
      lua_pushinteger(L, (lua_Integer)w->w.host_ns[i]);
      lua_rawseti(L, -2, i + 1);
    }
    for (int i = 0; i < 2 && w->gap_ns[0]; i++) {
      lua_pushinteger(L, (lua_Integer)w->gap_ns[i]);
      lua_rawseti(L, -2, i + 5);
    }
  }
  else if (strcmp(k, "stream") == 0)
    lua_getiuservalue(L, 1, 1);
  else if (!lcu_window_ksrc_field(L, w, k))
    return lcu_no_field(L, LCU_WINDOW_MT);
  return 1;
}

/* s:timed{fn=, grid=, block=, shared=, args=, iterations=, reset=,
 * cooperative=, fence=, spin_us=, source=} -> device_window_ns, kernel_ns
 * [, timeline]: the whole window (open, optional spin, loop, optional fence,
 * close, collect) in C. Read by CUPTI it waits for the kernels' records (a
 * forced flush, after which the next launch call takes 170 to 290 us on an
 * H200, whether 2 ms pass in between or not: make truth, part 2c) and
 * adds the timeline table (as w.timeline) with the host's stamps in it
 * (host_ns, as w.host_ns). */
static int stream_timed(lua_State *L) {
  lcu_stream *s = check_open_stream(L, 1, "stream:timed");
  launch_desc d;
  parse_launch(L, 2, 0, "stream:timed", F_FN | F_LOOP | F_SPIN, &d);
  if (d.c != s->c)
    return luaL_error(L, "stream:timed: the function belongs to another "
                         "context");
  check_open_stream(L, 1, "stream:timed"); /* closed while being read? */
  pp_cuda_window w;
  uint64_t win = 0, ker = 0;
  pp_kernel_src src = d.source != PP_KSRC_NONE ? d.source : s->c->ksrc;
  lcu_check_ksrc(L, src, "stream:timed");
  CUresult rc = src == PP_KSRC_CUPTI
                    ? pp_cuda_window_open_timeline(&w, s->c->pool, s->s)
                    : pp_cuda_window_open(&w, s->c->pool, s->s);
  w.floor_ns = s->c->floor_ns;
  w.cal = s->c->cal.npoints ? &s->c->cal : NULL;
  w.source = src;
  uint64_t gap_ns[2] = {0, 0};
  if (rc == CUDA_SUCCESS) {
    if (d.spin_us > 0) {
      gap_ns[0] = pp_now_ns();
      pp_cuda_spin_ns((uint64_t)(d.spin_us * 1000.0));
      gap_ns[1] = pp_now_ns();
    }
    rc = pp_cuda_window_launch_loop(&w, &d.cfg, d.iterations, &d.reset);
  }
  if (rc == CUDA_SUCCESS && d.fence)
    rc = pp_cuda_window_fence(&w);
  if (rc == CUDA_SUCCESS)
    rc = pp_cuda_window_close(&w);
  if (rc == CUDA_SUCCESS)
    rc = pp_cuda_window_collect(&w, &win, &ker);
  if (rc != CUDA_SUCCESS) {
    pp_cuda_window_discard(&w);
    return lcu_raise(L, s->c, w.failed ? w.failed : "CUDA", rc,
                     launch_text(L, "stream:timed", &d));
  }
  if (w.timeline) { /* CUPTI's reading, waited for */
    if (pp_cuda_window_wait(&w, 0) != 0) {
      luaL_pushfail(L);
      lua_pushstring(L, w.cupti_why);
      return 2;
    }
    win = w.tl.window_ns;
    ker = w.tl.sum_ns;
  }
  lua_pushinteger(L, (lua_Integer)win);
  lua_pushinteger(L, (lua_Integer)ker);
  if (!w.timeline)
    return 2;
  lcu_push_timeline(L, &w.tl);
  /* the host's own stamps, as w.host_ns: open, loop start, loop end, close,
   * then a spun gap's start and end */
  lua_createtable(L, 6, 0);
  for (int i = 0; i < 6 && (i < 4 || gap_ns[0]); i++) {
    lua_pushinteger(L, (lua_Integer)(i < 4 ? w.host_ns[i] : gap_ns[i - 4]));
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "host_ns");
  return 3;
}

/* ctx:event_costs([samples]) -> {record = {ns...}, pair = {ns...}}: host
 * cost of single cuEventRecord calls, and device time of back-to-back
 * event pairs. For bench/cuda_costs.lua. */
int lcu_ctx_event_costs(lua_State *L) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  PP_CHECK_OPEN(L, !c->closed, "context");
  lua_Integer n = luaL_optinteger(L, 2, 1000);
  luaL_argcheck(L, n >= 1 && n <= 1000000, 2, "samples must be 1..1000000");
  /* both series measured before any result is made (pp_lua_cuda.h) */
  uint64_t *t = lua_newuserdatauv(L, 2 * (size_t)n * sizeof *t, 0);
  uint64_t *pair = t + n;
  lcu_use(L, c, "ctx:event_costs");
  CUevent ev = NULL;
  CUresult rc = pp_cuda_event_get(c->pool, &ev);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, c, "cuEventCreate", rc, NULL);
  for (lua_Integer i = 0; i < n && rc == CUDA_SUCCESS; i++) {
    if (i % 256 == 0)
      rc = pp_cuda()->CtxSynchronize();
    pp_ticks t0 = pp_now();
    if (rc == CUDA_SUCCESS)
      rc = pp_cuda()->EventRecord(ev, NULL);
    t[i] = pp_ticks_to_ns(t0, pp_now());
  }
  pp_cuda_event_put(c->pool, ev);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, c, "cuEventRecord", rc, NULL);
  const char *failed = NULL;
  rc = pp_cuda_event_pairs(c->pool, NULL, pair, (size_t)n, &failed);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, c, failed, rc, NULL);
  lua_createtable(L, 0, 2);
  const uint64_t *series[2] = {t, pair};
  static const char *const names[2] = {"record", "pair"};
  for (int k = 0; k < 2; k++) {
    lua_createtable(L, (int)n, 0);
    for (lua_Integer i = 0; i < n; i++) {
      lua_pushinteger(L, (lua_Integer)series[k][i]);
      lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, names[k]);
  }
  return 1;
}

void lcu_open_launch(lua_State *L) {
  static const luaL_Reg stream_methods[] = {
      {"synchronize", stream_synchronize},
      {"window", stream_window},
      {"timed", stream_timed},
      {"close", stream_close},
      {NULL, NULL}};
  static const luaL_Reg window_methods[] = {
      {"spin_us", window_spin_us}, {"launch_loop", window_launch_loop},
      {"fence", window_fence},     {"close", window_close},
      {"collect", window_collect}, {"discard", window_discard},
      {"wait", window_wait},       {NULL, NULL}};
  pp_lua_class_new(L, &(pp_lua_class){
      .name = LCU_STREAM_MT, .methods = stream_methods, .get = stream_get,
      .gc = stream_gc, .close = stream_close, .tostring = stream_tostring,
      .call = stream_call});
  pp_lua_class_new(L, &(pp_lua_class){
      .name = LCU_WINDOW_MT, .methods = window_methods, .get = window_get,
      .gc = window_gc, .close = window_close, .tostring = window_tostring});
}

#else
typedef int pp_lua_cuda_launch_absent_;
#endif
