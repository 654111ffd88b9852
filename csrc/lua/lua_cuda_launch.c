/*
 * lua_cuda_launch.c: launches as Lua describes them: a description table
 * read and checked, its arguments packed by the function's parameter
 * layout, and the launch itself.
 *
 *   fn:launch{grid = 64, block = 256, args = {n, 2.0, x, y}}
 *   fn:launch{grid = {8, 8}, block = 256, stream = s, cooperative = true,
 *             shared = 4096, args = {...}}
 *
 * Arguments are converted once, before any event is recorded: the timed
 * window (lua_cuda_window.c) reads a loop's description here, and the loop
 * then runs in C (cuda_window.c) with no Lua between the inner events.
 */
#include "pp_lua_cuda.h"

#ifdef PP_HAVE_CUDA_H

#include <stddef.h>
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

/* The block the list at args_idx (or none) is packed into: kernelParams
 * pointers followed by the parameter bytes, in d->args when they fit, else
 * a userdata left on the stack. Such an allocation may run finalizers, so
 * it comes before the handles are checked for the last time (pp_lua_cuda.h)
 * and sets d->ran_lua; pack_args then fills the block without allocating. */
static unsigned char *args_block(lua_State *L, const char *what, int fn_idx,
                                 const lcu_fn *fn, int args_idx,
                                 lcu_launch *d) {
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
  if (head + fn->param_bytes <= sizeof d->args)
    return d->args;
  d->ran_lua = 1;
  /* zeroed: fn:prepare looks at every value it keeps for a buffer's tag,
   * this block's end too */
  size_t n = head + fn->param_bytes + 16;
  unsigned char *b = lua_newuserdatauv(L, n, 0);
  memset(b, 0, n);
  return b;
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
/* The fields of a description, as bits of what check_fields found. */
enum {
  F_GRID = 1 << 0, F_BLOCK = 1 << 1, F_SHARED = 1 << 2, F_ARGS = 1 << 3,
  F_COOP = 1 << 4, F_FN = 1 << 5, F_STREAM = 1 << 6, F_ITERATIONS = 1 << 7,
  F_RESET = 1 << 8, F_FENCE = 1 << 9, F_SPIN = 1 << 10, F_SAMPLES = 1 << 11,
  F_SOURCE = 1 << 12
};

/* Raises for a key of the table at t that is no field `allow` admits;
 * returns the fields it has. Keys are compared by length first: this runs
 * on every launch, between a window's opening and its first launch call. */
static unsigned check_fields(lua_State *L, int t, const char *what, int allow) {
  static const struct {
    const char *name;
    size_t len;
    int needs;
    unsigned bit;
  } fields[] = {
#define FIELD(name, needs, bit) {name, sizeof name - 1, needs, bit}
      FIELD("grid", 0, F_GRID), FIELD("block", 0, F_BLOCK),
      FIELD("args", 0, F_ARGS), FIELD("fn", LCU_LAUNCH_FN, F_FN),
      FIELD("source", LCU_LAUNCH_LOOP, F_SOURCE),
      FIELD("spin_us", LCU_LAUNCH_SPIN, F_SPIN), FIELD("shared", 0, F_SHARED),
      FIELD("cooperative", 0, F_COOP),
      FIELD("stream", LCU_LAUNCH_STREAM, F_STREAM),
      FIELD("iterations", LCU_LAUNCH_LOOP, F_ITERATIONS),
      FIELD("reset", LCU_LAUNCH_LOOP, F_RESET),
      FIELD("fence", LCU_LAUNCH_LOOP, F_FENCE),
      FIELD("samples", LCU_LAUNCH_SAMPLES, F_SAMPLES)
#undef FIELD
  };
  unsigned has = 0;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    int ok = 0;
    size_t n = 0;
    /* a string key is read as it is (lua_tolstring converts nothing) */
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &n)
                                                   : NULL;
    for (size_t i = 0; k && !ok && i < sizeof fields / sizeof fields[0]; i++)
      if (n == fields[i].len && memcmp(k, fields[i].name, n) == 0 &&
          (fields[i].needs & allow) == fields[i].needs) {
        has |= fields[i].bit;
        ok = 1;
      }
    if (!ok) {
      lua_pop(L, 1);
      int nul = pp_lua_hasnul(L, -1);
      luaL_error(L, "%s: unknown field '%s'%s", what, luaL_tolstring(L, -1, NULL),
                 nul ? " (it contains a NUL byte)" : "");
    }
    lua_pop(L, 1);
  }
  return has;
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

/* Pushes field `field` of the table at t; for a field the description has
 * not (present 0: a plain table without that key) pushes nil unread. */
static int push_field(lua_State *L, int t, int present, const char *field) {
  if (present)
    return lua_getfield(L, t, field);
  lua_pushnil(L);
  return LUA_TNIL;
}

static void parse_dim(lua_State *L, int t, int present, const char *what,
                      const char *field, unsigned out[3], int required) {
  out[0] = out[1] = out[2] = 1;
  int ty = push_field(L, t, present, field);
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

static lua_Integer opt_int_field(lua_State *L, int t, int present,
                                 const char *what, const char *field,
                                 lua_Integer def, lua_Integer lo,
                                 lua_Integer hi) {
  lua_Integer v = def;
  if (push_field(L, t, present, field) != LUA_TNIL) {
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
static int parse_reset(lua_State *L, int t, int present, const char *what,
                       lcu_launch *d) {
  memset(&d->reset, 0, sizeof d->reset);
  int ty = push_field(L, t, present, "reset");
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (ty != LUA_TTABLE)
    luaL_error(L, "%s: field 'reset' must be a table {target=, bytes=, "
                  "value=, offset=}", what);
  int r = lua_gettop(L);
  if (lua_getmetatable(L, r)) { /* read through its __index */
    lua_pop(L, 1);
    d->ran_lua = 1;
  }
  lua_getfield(L, r, "target");
  lcu_ctx *c = NULL;
  CUdeviceptr ptr = 0;
  size_t size = 0;
  if (!lcu_to_devptr(L, -1, &c, &ptr, &size))
    luaL_error(L, "%s: reset.target must be a buffer or a global, got %s", what,
               luaL_typename(L, -1));
  if (c != d->c)
    luaL_error(L, "%s: reset.target belongs to another context", what);
  lua_Integer off =
      opt_int_field(L, r, 1, what, "offset", 0, 0, (lua_Integer)size);
  lua_Integer bytes = opt_int_field(L, r, 1, what, "bytes",
                                    (lua_Integer)size - off, 0,
                                    (lua_Integer)size - off);
  lua_Integer value = opt_int_field(L, r, 1, what, "value", 0, 0, 255);
  d->reset.ptr = ptr + (CUdeviceptr)off;
  d->reset.bytes = (size_t)bytes;
  d->reset.value = (unsigned char)value;
  lua_remove(L, r);
  return lua_gettop(L);
}

/* What parse_launch read may have been closed by code it ran (an __index
 * of the description table): checks it all again. */
static void recheck_launch(lua_State *L, const char *what, int fn_idx,
                           int stream_idx, int target_idx, lcu_launch *d) {
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

static void check_coop(lua_State *L, const char *what, lcu_launch *d) {
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

/* Reads a launch description from the table at t (pp_lua_cuda.h). */
void lcu_parse_launch(lua_State *L, int t, int fn_idx, const char *what,
                      int allow, lcu_launch *d) {
  memset(d, 0, offsetof(lcu_launch, args));
  luaL_checktype(L, t, LUA_TTABLE);
  unsigned has = check_fields(L, t, what, allow);
  /* A plain table is read for the fields it has, with no Lua code run; one
   * with a metatable for every field, through its __index. */
  if (lua_getmetatable(L, t)) {
    lua_pop(L, 1);
    has = ~0u;
    d->ran_lua = 1;
  }
#define HAS(bit) ((has & (bit)) != 0)
  if (!fn_idx) {
    push_field(L, t, HAS(F_FN), "fn");
    if (!pp_lua_testudata(L, -1, LCU_FN_MT))
      luaL_error(L, "%s: field 'fn' must be a function (mod:func), got %s",
                 what, luaL_typename(L, -1));
    fn_idx = lua_gettop(L);
  }
  d->fn = lcu_check_open_fn(L, fn_idx);
  d->c = d->fn->m->c;
  d->cfg.fn = d->fn->fn;
  parse_dim(L, t, HAS(F_GRID), what, "grid", d->cfg.grid, 1);
  parse_dim(L, t, HAS(F_BLOCK), what, "block", d->cfg.block, 1);
  d->cfg.shared = (unsigned)opt_int_field(L, t, HAS(F_SHARED), what, "shared",
                                          0, 0, 0x7fffffff);
  d->cfg.cooperative = HAS(F_COOP) && lcu_opt_bool(L, t, "cooperative");
  int stream_idx = 0, target_idx = 0;
  if (allow & LCU_LAUNCH_STREAM) {
    if (push_field(L, t, HAS(F_STREAM), "stream") != LUA_TNIL) {
      d->s = pp_lua_testudata(L, -1, LCU_STREAM_MT);
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
  if (allow & LCU_LAUNCH_LOOP) {
    d->iterations = (uint64_t)opt_int_field(L, t, HAS(F_ITERATIONS), what,
                                            "iterations", 1, 0, LUA_MAXINTEGER);
    d->fence = HAS(F_FENCE) && lcu_opt_bool(L, t, "fence");
    target_idx = parse_reset(L, t, HAS(F_RESET), what, d);
    push_field(L, t, HAS(F_SOURCE), "source");
    d->source = lcu_opt_ksrc(L, lua_gettop(L), what, PP_KSRC_NONE);
    lua_pop(L, 1);
  }
  if (allow & LCU_LAUNCH_SPIN) {
    push_field(L, t, HAS(F_SPIN), "spin_us");
    d->spin_us = luaL_optnumber(L, -1, 0.0);
    if (!(d->spin_us >= 0 && d->spin_us <= 1e9)) /* NaN too */
      luaL_error(L, "%s: field 'spin_us' out of range", what);
    lua_pop(L, 1);
  }
  push_field(L, t, HAS(F_ARGS), "args");
#undef HAS
  int args_idx = lua_gettop(L);
  /* from here on no Lua code runs (raw reads only), and after the block's
   * allocation nothing allocates: no finalizer closes what is checked */
  unsigned char *mem = args_block(L, what, fn_idx, d->fn, args_idx, d);
  if (d->ran_lua)
    recheck_launch(L, what, fn_idx, stream_idx, target_idx, d);
  lcu_use(L, d->c, what);
  if (d->cfg.cooperative)
    check_coop(L, what, d);
  d->cfg.params = pack_args(L, what, d->fn, args_idx, mem);
  if (allow & LCU_LAUNCH_KEEP_ARGS)
    lua_rotate(L, args_idx, -1); /* to the top */
  else
    lua_remove(L, args_idx);
}

const char *lcu_launch_text(lua_State *L, const char *what,
                            const lcu_launch *d) {
  const unsigned *g = d->cfg.grid, *b = d->cfg.block;
  return lua_pushfstring(L, "%s of '%s' (grid=%dx%dx%d block=%dx%dx%d "
                            "shared=%d%s)",
                         what, d->fn->name, (int)g[0], (int)g[1], (int)g[2],
                         (int)b[0], (int)b[1], (int)b[2], (int)d->cfg.shared,
                         d->cfg.cooperative ? " cooperative" : "");
}

/* fn:launch{grid=, block=, shared=, stream=, args=, cooperative=} */
int lcu_fn_launch(lua_State *L) {
  lcu_launch d;
  lcu_parse_launch(L, 2, 1, "fn:launch", LCU_LAUNCH_STREAM, &d);
  const char *failed = NULL;
  CUresult rc = pp_cuda_launch(&d.cfg, d.s ? d.s->s : NULL, &failed);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, d.c, failed, rc, lcu_launch_text(L, "fn:launch", &d));
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
  lcu_launch d;
  lcu_parse_launch(L, 2, 1, "fn:launch_costs",
                   LCU_LAUNCH_STREAM | LCU_LAUNCH_SAMPLES, &d);
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
                       lcu_launch_text(L, "fn:launch_costs", &d));
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

/* ---- prepared launches ---------------------------------------------------- */
/* A description read once: the parsed launch, its packed arguments inside
 * it (or in a block its user value keeps), and the buffers and globals its
 * pointers point into, each checked open again at every use. Its user
 * value, a sequence, keeps alive what it points into: the function, the
 * reset target, an outside argument block, those buffers and globals. */
#define PREP_MEM_MAX 64
typedef struct {
  lcu_launch d;
  int nmem; /* entries of mem[] */
  struct {
    void *obj;  /* an lcu_buf or an lcu_global */
    int global; /* which of the two            */
    int arg;    /* its argument (1-based), 0: the reset target */
  } mem[PREP_MEM_MAX];
} lcu_prepared;

/* Lua aligns a userdata's block for its own types only (8 bytes here), and
 * the packed arguments want 16: the prepared launch lies at the first
 * 16-byte boundary of its block. */
static lcu_prepared *prep_at(void *block) {
  return block ? (lcu_prepared *)(((uintptr_t)block + 15) & ~(uintptr_t)15)
               : NULL;
}

/* Notes the buffer or global at idx (if it is one) as memory p points into. */
static void prep_note_mem(lua_State *L, lcu_prepared *p, int idx, int arg,
                          int anchor) {
  void *obj = pp_lua_testudata(L, idx, LCU_BUF_MT);
  int global = 0;
  if (!obj) {
    obj = pp_lua_testudata(L, idx, LCU_GLOBAL_MT);
    global = 1;
  }
  if (!obj)
    return;
  if (p->nmem == PREP_MEM_MAX)
    luaL_error(L, "fn:prepare: more than %d buffers and globals in one "
                  "description", PREP_MEM_MAX);
  p->mem[p->nmem].obj = obj;
  p->mem[p->nmem].global = global;
  p->mem[p->nmem].arg = arg;
  p->nmem++;
  lua_pushvalue(L, idx);
  lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
}

/* fn:prepare{grid=, block=, shared=, args=, cooperative=, iterations=,
 * reset=, fence=, source=, spin_us=} -> launch */
int lcu_fn_prepare(lua_State *L) {
  lua_settop(L, 2);
  lcu_launch d;
  lcu_parse_launch(L, 2, 1, "fn:prepare",
                   LCU_LAUNCH_LOOP | LCU_LAUNCH_SPIN | LCU_LAUNCH_KEEP_ARGS, &d);
  /* 3..left: what d points into (pp_lua_cuda.h), the args list it packed
   * above them; the description is not read again (its __index could
   * answer differently) */
  int args = lua_gettop(L), left = args - 1;
  lcu_prepared *p =
      prep_at(pp_lua_newobj(L, sizeof *p + 15, 1));
  int pi = lua_gettop(L);
  memset(p, 0, offsetof(lcu_prepared, mem));
  p->d = d;
  /* The packed block inside d moved with it: its pointers follow. */
  unsigned char *from = d.args, *to = p->d.args;
  if ((unsigned char *)d.cfg.params == from) {
    void **params = (void **)to;
    for (int i = 0; i < d.fn->nparams; i++)
      params[i] = to + ((unsigned char *)params[i] - from);
    p->d.cfg.params = params;
  }
  p->d.ran_lua = 0;
  lua_createtable(L, left - 2 + 4, 0);
  int anchor = lua_gettop(L);
  lua_pushvalue(L, 1);
  lua_rawseti(L, anchor, 1);
  for (int i = 3; i <= left; i++) { /* a buffer or global here: the reset target */
    prep_note_mem(L, p, i, 0, anchor);
    lua_pushvalue(L, i);
    lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
  }
  if (lua_istable(L, args)) { /* the raw reads pack_args made */
    int n = (int)lua_rawlen(L, args);
    for (int i = 1; i <= n; i++) {
      lua_rawgeti(L, args, i);
      prep_note_mem(L, p, lua_gettop(L), i, anchor);
      lua_pop(L, 1);
    }
  }
  lua_setiuservalue(L, pi, 1);
  pp_lua_setclass(L, LCU_LAUNCH_MT);
  return 1;
}

const lcu_launch *lcu_prepared_use(lua_State *L, int idx, const char *what) {
  lcu_prepared *p = prep_at(pp_lua_testudata(L, idx, LCU_LAUNCH_MT));
  if (!p)
    return NULL;
  const lcu_fn *fn = p->d.fn;
  if (fn->closed || fn->m->closed)
    luaL_error(L, "%s: the prepared launch's function '%s' is closed%s", what,
               fn->name, fn->m->closed ? " (its module was unloaded)" : "");
  for (int i = 0; i < p->nmem; i++) {
    int closed;
    if (p->mem[i].global) {
      const lcu_global *g = p->mem[i].obj;
      closed = g->closed || g->m->closed;
    } else {
      closed = ((const lcu_buf *)p->mem[i].obj)->closed;
    }
    if (closed) {
      if (p->mem[i].arg)
        luaL_error(L, "%s: argument %d of the prepared launch of '%s' (a %s) "
                      "was closed after the launch was prepared",
                   what, p->mem[i].arg, fn->name,
                   p->mem[i].global ? "global" : "buffer");
      luaL_error(L, "%s: the reset target of the prepared launch of '%s' was "
                    "closed after the launch was prepared", what, fn->name);
    }
  }
  lcu_use(L, p->d.c, what);
  return &p->d;
}

static int prepared_tostring(lua_State *L) {
  lcu_prepared *p = prep_at(pp_lua_checkudata(L, 1, LCU_LAUNCH_MT));
  lcu_launch_text(L, "phaseprobe.cuda.launch", &p->d);
  return 1;
}

static int prepared_get(lua_State *L) {
  lcu_prepared *p = prep_at(pp_lua_checkudata(L, 1, LCU_LAUNCH_MT));
  const char *k = pp_lua_fieldkey(L, 2);
  if (k && strcmp(k, "fn") == 0) {
    lua_getiuservalue(L, 1, 1);
    lua_rawgeti(L, -1, 1);
  } else if (k && strcmp(k, "iterations") == 0) {
    lua_pushinteger(L, (lua_Integer)p->d.iterations);
  } else if (k && strcmp(k, "spin_us") == 0) {
    lua_pushnumber(L, p->d.spin_us);
  } else {
    return lcu_no_field(L, LCU_LAUNCH_MT);
  }
  return 1;
}

void lcu_open_launch(lua_State *L) {
  pp_lua_class_new(L, &(pp_lua_class){.name = LCU_LAUNCH_MT,
                                      .get = prepared_get,
                                      .tostring = prepared_tostring});
}

#else
typedef int pp_lua_cuda_launch_absent_;
#endif
