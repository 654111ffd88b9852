/*
 * lua_cuda_mem.c: device buffers.
 *
 *   local buf = ctx:alloc(4 * n)
 *   buf:upload({1.5, 2, 3}, "f32")     -- or buf:upload(bytes [, offset])
 *   buf:download("f32")                -- {1.5, 2.0, 3.0, ...}; download() -> bytes
 *   buf:memset(0 [, stream])
 *   buf:free()                         -- also buf:close(), <close>, __gc
 *
 * Element types: u8 i32 u32 i64 u64 f32 f64. Integers are range-checked
 * (u64 values of 2^63 and more read back as negative Lua integers).
 */
#include "pp_lua_cuda.h"

#ifdef PP_HAVE_CUDA_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const elem_names[] = {"u8",  "i32", "u32", "i64",
                                         "u64", "f32", "f64", NULL};
enum { E_U8, E_I32, E_U32, E_I64, E_U64, E_F32, E_F64 };
static const size_t elem_size[] = {1, 4, 4, 8, 8, 4, 8};

static lcu_buf *check_buf(lua_State *L, int idx) {
  return pp_lua_checkudata(L, idx, LCU_BUF_MT);
}

/* The open buffer at 1; with `what`, its context made current (last, after
 * the method's allocations: pp_lua_cuda.h). */
static lcu_buf *check_open_buf(lua_State *L, const char *what) {
  lcu_buf *b = check_buf(L, 1);
  PP_CHECK_OPEN(L, !b->closed, "buffer");
  if (what)
    lcu_use(L, b->c, what);
  return b;
}

int lcu_to_devptr(lua_State *L, int idx, lcu_ctx **c, CUdeviceptr *ptr,
                  size_t *size) {
  lcu_buf *b = pp_lua_testudata(L, idx, LCU_BUF_MT);
  if (b) {
    luaL_argcheck(L, !b->closed, idx, "closed buffer");
    *c = b->c;
    *ptr = b->ptr;
    *size = b->size;
    return 1;
  }
  lcu_global *g = pp_lua_testudata(L, idx, LCU_GLOBAL_MT);
  if (g) {
    luaL_argcheck(L, !g->closed, idx, "closed global");
    luaL_argcheck(L, !g->m->closed, idx, "global of a closed module");
    *c = g->m->c;
    *ptr = g->ptr;
    *size = g->size;
    return 1;
  }
  return 0;
}

/* ctx:alloc(bytes) -> buf */
int lcu_ctx_alloc(lua_State *L) {
  lcu_ctx *c = lcu_check_ctx(L, 1);
  PP_CHECK_OPEN(L, !c->closed, "context");
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_argcheck(L, n > 0, 2, "byte count must be positive");
  lcu_buf *b = pp_lua_newobj(L, sizeof *b, 1);
  memset(b, 0, sizeof *b);
  b->c = c;
  b->closed = 1;
  pp_lua_setclass(L, LCU_BUF_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  lcu_use(L, c, "ctx:alloc"); /* after the allocation (pp_lua_cuda.h) */
  CUresult rc = pp_cuda()->MemAlloc(&b->ptr, (size_t)n);
  if (rc != CUDA_SUCCESS) {
    lua_pushfstring(L, "%I bytes", n);
    return lcu_raise(L, c, "cuMemAlloc", rc, lua_tostring(L, -1));
  }
  b->size = (size_t)n;
  b->closed = 0;
  lcu_hold(c);
  return 1;
}

static int buf_release(lcu_buf *b, CUresult *rc) {
  *rc = CUDA_SUCCESS;
  if (b->closed)
    return 0;
  b->closed = 1;
  if (pp_cuda()->CtxSetCurrent(b->c->ctx) == CUDA_SUCCESS)
    *rc = pp_cuda()->MemFree(b->ptr);
  lcu_unhold(b->c);
  return 1;
}

LCU_CHILD_CLOSE_GC(buf_free, buf_gc, lcu_buf, check_buf, buf_release, "cuMemFree")

static int buf_tostring(lua_State *L) {
  lcu_buf *b = check_buf(L, 1);
  if (b->closed)
    lua_pushliteral(L, "phaseprobe.cuda.buffer (freed)");
  else { /* (%p would say "0x" itself, and "(nil)" for 0) */
    char at[24];
    snprintf(at, sizeof at, "0x%llx", (unsigned long long)b->ptr);
    lua_pushfstring(L, "phaseprobe.cuda.buffer (%I bytes at %s)",
                    (lua_Integer)b->size, at);
  }
  return 1;
}

static int buf_get(lua_State *L) {
  lcu_buf *b = check_buf(L, 1);
  const char *k = lcu_get_key(L, b->closed, "buffer");
  if (!k)
    return 1;
  static const lcu_field fields[] = {LCU_FIELD(lcu_buf, "ptr", LCU_U64, ptr),
                                     LCU_FIELD(lcu_buf, "size", LCU_SIZE, size),
                                     {NULL, LCU_INT, 0}};
  if (lcu_push_field(L, b, fields, k))
    return 1;
  if (strcmp(k, "context") != 0)
    return lcu_no_field(L, LCU_BUF_MT);
  lua_getiuservalue(L, 1, 1);
  return 1;
}

static size_t check_offset(lua_State *L, int arg, size_t len, size_t size,
                           const char *what) {
  lua_Integer off = luaL_optinteger(L, arg, 0);
  if (off < 0 || (size_t)off > size || len > size - (size_t)off)
    luaL_error(L, "%s: %I bytes at offset %I do not fit in the buffer's %I",
               what, (lua_Integer)len, off, (lua_Integer)size);
  return (size_t)off;
}

/* ---- element conversion ----------------------------------------------------- */
static int elem_error(lua_State *L, lua_Integer i, int t, const char *want) {
  return luaL_error(L, "buffer:upload: element %I must be %s for type %s, got %s",
                    i, want, elem_names[t], luaL_tolstring(L, -1, NULL));
}

static lua_Integer elem_int(lua_State *L, lua_Integer i, int t,
                            lua_Integer lo, lua_Integer hi, const char *want) {
  int ok = 0;
  lua_Integer v = lua_tointegerx(L, -1, &ok);
  if (!ok || v < lo || v > hi)
    elem_error(L, i, t, want);
  return v;
}

/* Converts the value on top of the stack (element i) into dst. */
static void put_elem(lua_State *L, lua_Integer i, int t, unsigned char *dst) {
  int isnum = 0;
  switch (t) {
  case E_U8: {
    uint8_t v = (uint8_t)elem_int(L, i, t, 0, 255, "an integer in 0..255");
    memcpy(dst, &v, 1);
    return;
  }
  case E_I32: {
    int32_t v = (int32_t)elem_int(L, i, t, INT32_MIN, INT32_MAX,
                                  "an integer in the i32 range");
    memcpy(dst, &v, 4);
    return;
  }
  case E_U32: {
    uint32_t v = (uint32_t)elem_int(L, i, t, 0, UINT32_MAX,
                                    "an integer in 0..4294967295");
    memcpy(dst, &v, 4);
    return;
  }
  case E_I64:
  case E_U64: {
    int64_t v = (int64_t)elem_int(L, i, t, LUA_MININTEGER, LUA_MAXINTEGER,
                                  "an integer");
    memcpy(dst, &v, 8);
    return;
  }
  case E_F32: {
    float v = (float)lua_tonumberx(L, -1, &isnum);
    if (!isnum)
      elem_error(L, i, t, "a number");
    memcpy(dst, &v, 4);
    return;
  }
  default: {
    double v = lua_tonumberx(L, -1, &isnum);
    if (!isnum)
      elem_error(L, i, t, "a number");
    memcpy(dst, &v, 8);
    return;
  }
  }
}

static void push_elem(lua_State *L, int t, const unsigned char *src) {
  switch (t) {
  case E_U8: lua_pushinteger(L, src[0]); return;
  case E_I32: { int32_t v; memcpy(&v, src, 4); lua_pushinteger(L, v); return; }
  case E_U32: { uint32_t v; memcpy(&v, src, 4); lua_pushinteger(L, (lua_Integer)v); return; }
  case E_I64:
  case E_U64: { int64_t v; memcpy(&v, src, 8); lua_pushinteger(L, (lua_Integer)v); return; }
  case E_F32: { float v; memcpy(&v, src, 4); lua_pushnumber(L, (lua_Number)v); return; }
  default: { double v; memcpy(&v, src, 8); lua_pushnumber(L, (lua_Number)v); return; }
  }
}

/* buf:upload(bytes [, offset]) or buf:upload(array, type [, offset]) */
static int buf_upload(lua_State *L) {
  lcu_buf *b = check_open_buf(L, NULL);
  CUresult rc = CUDA_SUCCESS;
  if (lua_type(L, 2) == LUA_TSTRING) {
    size_t n;
    const char *s = lua_tolstring(L, 2, &n);
    size_t off = check_offset(L, 3, n, b->size, "buffer:upload");
    check_open_buf(L, "buffer:upload");
    if (n)
      rc = pp_cuda()->MemcpyHtoD(b->ptr + off, s, n);
  } else {
    luaL_argexpected(L, lua_type(L, 2) == LUA_TTABLE, 2, "string or array");
    if (lua_isnoneornil(L, 3))
      return luaL_argerror(L, 3, "element type required for an array (u8, "
                                 "i32, u32, i64, u64, f32, f64)");
    int t = pp_lua_checkoption(L, 3, NULL, elem_names);
    size_t count = (size_t)lua_rawlen(L, 2);
    if (count > b->size / elem_size[t])
      return luaL_error(L, "buffer:upload: %I elements of type %s do not fit "
                           "in the buffer's %I bytes",
                        (lua_Integer)count, elem_names[t], (lua_Integer)b->size);
    size_t n = count * elem_size[t];
    size_t off = check_offset(L, 4, n, b->size, "buffer:upload");
    unsigned char *tmp = lua_newuserdatauv(L, n ? n : 1, 0);
    for (size_t i = 0; i < count; i++) {
      lua_rawgeti(L, 2, (lua_Integer)i + 1);
      put_elem(L, (lua_Integer)i + 1, t, tmp + i * elem_size[t]);
      lua_pop(L, 1);
    }
    check_open_buf(L, "buffer:upload"); /* after the allocation */
    if (n)
      rc = pp_cuda()->MemcpyHtoD(b->ptr + off, tmp, n);
  }
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, b->c, "cuMemcpyHtoD", rc, NULL);
  return 0;
}

/* buf:download([type [, n [, offset]]]) -> bytes (no type: n is in bytes)
 * or an array of n elements (default: as many as fit after offset). */
static int buf_download(lua_State *L) {
  lcu_buf *b = check_open_buf(L, NULL);
  int t = lua_isnoneornil(L, 2) ? -1 : pp_lua_checkoption(L, 2, NULL, elem_names);
  size_t es = t < 0 ? 1 : elem_size[t];
  lua_Integer off0 = luaL_optinteger(L, 4, 0);
  luaL_argcheck(L, off0 >= 0 && (size_t)off0 <= b->size, 4,
                "offset outside the buffer");
  size_t room = (b->size - (size_t)off0) / es; /* whole elements that fit */
  lua_Integer n = luaL_optinteger(L, 3, (lua_Integer)room);
  luaL_argcheck(L, n >= 0, 3, "count must not be negative");
  if ((uint64_t)n > room) /* before multiplying: n * es may wrap */
    return luaL_error(L, "buffer:download: %I elements of %I bytes at offset "
                         "%I do not fit in the buffer's %I",
                      n, (lua_Integer)es, off0, (lua_Integer)b->size);
  size_t bytes = (size_t)n * es;
  size_t off = check_offset(L, 4, bytes, b->size, "buffer:download");
  unsigned char *tmp = lua_newuserdatauv(L, bytes ? bytes : 1, 0);
  check_open_buf(L, "buffer:download"); /* after the allocation */
  CUresult rc = bytes ? pp_cuda()->MemcpyDtoH(tmp, b->ptr + off, bytes)
                      : CUDA_SUCCESS;
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, b->c, "cuMemcpyDtoH", rc, NULL);
  if (t < 0) {
    lua_pushlstring(L, (const char *)tmp, bytes);
    return 1;
  }
  lua_createtable(L, (int)n, 0);
  for (lua_Integer i = 0; i < n; i++) {
    push_elem(L, t, tmp + (size_t)i * es);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* buf:memset(byte [, stream]): synchronous, or cuMemsetD8Async on stream */
static int buf_memset(lua_State *L) {
  lcu_buf *b = check_open_buf(L, "buffer:memset");
  lua_Integer v = luaL_checkinteger(L, 2);
  luaL_argcheck(L, v >= 0 && v <= 255, 2, "byte value must be 0..255");
  CUresult rc;
  if (lua_isnoneornil(L, 3)) {
    rc = pp_cuda()->MemsetD8(b->ptr, (unsigned char)v, b->size);
    if (rc != CUDA_SUCCESS)
      return lcu_raise(L, b->c, "cuMemsetD8", rc, NULL);
    return 0;
  }
  lcu_stream *s = pp_lua_checkudata(L, 3, LCU_STREAM_MT);
  luaL_argcheck(L, !s->closed, 3, "closed stream");
  luaL_argcheck(L, s->c == b->c, 3, "stream of another context");
  rc = pp_cuda()->MemsetD8Async(b->ptr, (unsigned char)v, b->size, s->s);
  if (rc != CUDA_SUCCESS)
    return lcu_raise(L, b->c, "cuMemsetD8Async", rc, NULL);
  return 0;
}

void lcu_open_mem(lua_State *L) {
  static const luaL_Reg methods[] = {{"upload", buf_upload},
                                     {"download", buf_download},
                                     {"memset", buf_memset},
                                     {"free", buf_free},
                                     {"close", buf_free},
                                     {NULL, NULL}};
  pp_lua_class_new(L, &(pp_lua_class){
      .name = LCU_BUF_MT, .methods = methods, .get = buf_get,
      .gc = buf_gc, .close = buf_free, .tostring = buf_tostring});
}

#else
typedef int pp_lua_cuda_mem_absent_;
#endif
