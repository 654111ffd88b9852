/* pp_lua_cuda.h: shared by the pp.cuda binding files (csrc/lua/lua_cuda*.c);
 * not installed. Only meaningful with the CUDA headers (PP_HAVE_CUDA_H). */
#ifndef PP_LUA_CUDA_H
#define PP_LUA_CUDA_H

#include "pp_lua.h"

#include <stddef.h>

#ifdef PP_HAVE_CUDA_H
#include "pp_cuda.h"

#define LCU_CTX_MT "phaseprobe.cuda.context"
#define LCU_MOD_MT "phaseprobe.cuda.module"
#define LCU_FN_MT "phaseprobe.cuda.function"
#define LCU_GLOBAL_MT "phaseprobe.cuda.global"
#define LCU_BUF_MT "phaseprobe.cuda.buffer"
#define LCU_STREAM_MT "phaseprobe.cuda.stream"
#define LCU_LAUNCH_MT "phaseprobe.cuda.launch"
#define LCU_WINDOW_MT "phaseprobe.cuda.window"

/* Finalizers: any allocation (a userdata, a table, a string, a number
 * turned into text) may run pending finalizers, and a finalizer may close
 * any handle: the one whose method is running, or the context, module,
 * buffer or stream that method uses (and make another context current).
 * So a method makes its allocations first, then checks every handle it
 * uses open (lcu_use for the context, which also makes it current) and
 * calls the driver with no allocation in between; what it allocates after
 * its last driver call (the results) no longer matters. A close that comes
 * before the check is refused as "closed ...", as if it came before the
 * call (spec/cuda_fake_spec.lua arms such closes at every point of each
 * method).
 *
 * Ownership: every child userdata holds its parent in user value 1, so a
 * parent's memory outlives its children, and children point at it directly.
 * A context's driver resources (primary context retain, event pool) are
 * released when it is closed AND no child still holds driver resources of
 * it (`live`), so closing a context never strands its allocations. A child
 * whose context or module was closed refuses further use. */
typedef struct lcu_ctx {
  int closed;      /* closed by the user (or collected)                   */
  int released;    /* driver resources gone                               */
  int live;        /* children holding driver resources of this context   */
  CUresult sticky; /* the error that made it unusable, or CUDA_SUCCESS    */
  int ordinal;
  CUdevice dev;
  CUcontext ctx;
  pp_cuda_event_pool *pool;
  char name[128];
  int cc_major, cc_minor, sm_count, coop;
  uint64_t floor_ns; /* median of back-to-back event pairs at creation,   */
                     /* or what ctx:calibrate_events measured             */
  pp_kernel_src ksrc;  /* default kernel-time source of its windows        */
  int cupti_held;      /* holds one pp_cupti_start (ctx:kernel_source)     */
  int floor_method;    /* 0: back-to-back pairs, else pp_cuda_cal_method   */
  pp_cuda_calibration cal; /* the last calibration; with points (CUPTI), */
                           /* its windows take floor and error from it    */
} lcu_ctx;

typedef struct lcu_mod {
  lcu_ctx *c;
  CUmodule mod;
  int closed;
  uint64_t jit_ns;
  double jit_driver_ms;
} lcu_mod;

typedef struct lcu_fn {
  lcu_mod *m;
  CUfunction fn;
  int closed;
  int nparams;     /* -1: layout unknown (see user value 2)               */
  int from_driver; /* offsets and sizes from cuFuncGetParamInfo            */
  int typed;       /* element types known (from the PTX entry)            */
  int registers, shared_bytes, max_threads, local_bytes, const_bytes;
  size_t param_bytes;
  const char *name; /* points into this userdata                          */
  pp_cuda_param params[];
} lcu_fn;

typedef struct lcu_global {
  lcu_mod *m;
  int closed;
  CUdeviceptr ptr;
  size_t size;
  char name[];
} lcu_global;

typedef struct lcu_buf {
  lcu_ctx *c;
  CUdeviceptr ptr;
  size_t size;
  int closed;
} lcu_buf;

typedef struct lcu_stream {
  lcu_ctx *c;
  CUstream s;
  int owned; /* 0 for the default (NULL) stream                            */
  int closed;
} lcu_stream;

typedef struct lcu_window {
  lcu_ctx *c;
  lcu_stream *s;
  pp_cuda_window w;
  int holds; /* events taken from the pool (counts in c->live)             */
  int collected;
  uint64_t gap_ns[2]; /* probe-clock ns at the start and end of a host gap  */
                      /* spun by launch_loop{spin_us=} (tests, truth)       */
} lcu_window;

/* ---- lua_cuda.c ----------------------------------------------------------- */
/* Raises "call: NAME (desc)[; sticky note][: extra]"; marks c sticky when
 * the error is one. */
int lcu_raise(lua_State *L, lcu_ctx *c, const char *call, CUresult rc,
              const char *extra);
/* Raises unless c is open and usable. */
void lcu_check_usable(lua_State *L, lcu_ctx *c, const char *what);
/* lcu_check_usable, then makes c current on this thread. */
void lcu_use(lua_State *L, lcu_ctx *c, const char *what);
/* What close() returns after a child's release (released: it held driver
 * resources until now): raises the driver's refusal rc of `call`, unless
 * the context is already unusable (its sticky error said so) or rc is
 * such an error itself; 0 otherwise. */
int lcu_closed(lua_State *L, lcu_ctx *c, int released, CUresult rc,
               const char *call);
/* The close() and __gc of a context's child kind T: `check` gets the object
 * at index 1, `release(obj, &rc)` gives its driver resources back once
 * (returning whether it held any, rc the driver's answer to `call`). close()
 * raises a refusal through lcu_closed; __gc never raises. */
#define LCU_CHILD_CLOSE_GC(close_fn, gc_fn, T, check, release, call)         \
  static int close_fn(lua_State *L) {                                         \
    T *o_ = check(L, 1);                                                      \
    CUresult rc_;                                                             \
    int released_ = release(o_, &rc_);                                        \
    return lcu_closed(L, o_->c, released_, rc_, call);                        \
  }                                                                           \
  static int gc_fn(lua_State *L) {                                            \
    CUresult rc_;                                                             \
    release(check(L, 1), &rc_);                                               \
    return 0;                                                                 \
  }
/* A child took / gave back driver resources of c. */
void lcu_hold(lcu_ctx *c);
void lcu_unhold(lcu_ctx *c);
/* Raises "unknown field 'k' of <kind>" */
int lcu_no_field(lua_State *L, const char *kind);
/* The key a handle's getter is asked for (at 2). "closed" is answered
 * whatever the handle's state: its value pushed, NULL returned. Any other
 * key of a closed handle raises "closed <kind>" (as PP_CHECK_OPEN does);
 * of an open one it is returned. */
const char *lcu_get_key(lua_State *L, int closed, const char *kind);

/* The plain fields of a handle, read by its getter from a table: name,
 * the C type of the member, its offset. A list ends with {NULL}. */
typedef enum {
  LCU_INT,   /* int                                     */
  LCU_BOOL,  /* int, as a boolean                       */
  LCU_U64,   /* uint64_t (CUdeviceptr too)              */
  LCU_SIZE,  /* size_t                                  */
  LCU_NUM,   /* double                                  */
  LCU_CHARS, /* a char array holding a C string         */
  LCU_STRP   /* const char *                            */
} lcu_kind;
typedef struct {
  const char *name;
  lcu_kind kind;
  size_t at;
} lcu_field;
#define LCU_FIELD(type, name, kind, member) {name, kind, offsetof(type, member)}
/* Pushes field k of the struct at p when the list names it: 1, else 0. */
int lcu_push_field(lua_State *L, const void *p, const lcu_field *list,
                   const char *k);
/* Sets every field of the list, from the struct at p, in the table on top. */
void lcu_set_fields(lua_State *L, const void *p, const lcu_field *list);
/* The context of a context handle at idx (checked). */
lcu_ctx *lcu_check_ctx(lua_State *L, int idx);
/* Field `field` of the table at t, as a boolean (absent: false). */
int lcu_opt_bool(lua_State *L, int t, const char *field);

/* ---- lua_cuda_module.c ---------------------------------------------------- */
void lcu_open_module(lua_State *L);
int lcu_ctx_load(lua_State *L);
int lcu_ctx_load_file(lua_State *L);
lcu_fn *lcu_check_fn(lua_State *L, int idx);
/* A function whose handle and module are open (raises otherwise). */
lcu_fn *lcu_check_open_fn(lua_State *L, int idx);

/* ---- lua_cuda_mem.c ------------------------------------------------------- */
void lcu_open_mem(lua_State *L);
int lcu_ctx_alloc(lua_State *L);
/* A buffer or a module global at idx: its device range and context, or 0. */
int lcu_to_devptr(lua_State *L, int idx, lcu_ctx **c, CUdeviceptr *ptr,
                  size_t *size);

/* ---- lua_cuda_launch.c ---------------------------------------------------- */
/* A launch as a description table gives it, its arguments packed. */
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
  /* Lua code may have run while the description was read (a metatable's
   * __index, or a finalizer run by an allocation): what the caller checked
   * before must be checked again. 0 for a plain table whose arguments fit
   * `args` below, the common case. Such a reading may still intern a key
   * string (lua_getfield of a field a reset table lacks), which runs no
   * finalizer: Lua takes a collection step only in the API calls that
   * check for one (those that push new objects), and an allocation that
   * fails collects in emergency mode, which calls no finalizer. */
  int ran_lua;
  /* The packed arguments when they fit here (else a userdata on the
   * stack): kernelParams pointers, then the parameter bytes. */
  _Alignas(16) unsigned char args[512];
} lcu_launch;

/* The fields a description may have besides grid, block, shared, args and
 * cooperative (`allow`, or-ed). */
enum {
  LCU_LAUNCH_FN = 1,     /* fn (the function, when not the receiver)   */
  LCU_LAUNCH_STREAM = 2, /* stream                                     */
  LCU_LAUNCH_LOOP = 4,   /* iterations, reset, fence, source           */
  LCU_LAUNCH_SPIN = 8,   /* spin_us                                    */
  LCU_LAUNCH_SAMPLES = 16,
  LCU_LAUNCH_KEEP_ARGS = 32 /* not a field: leave the args list read, on top */
};

/* Reads a launch description from the table at t; an unknown field, or one
 * `allow` leaves out, raises. fn_idx: the function's stack index, or 0 to
 * take it from field 'fn'. Leaves on the stack what d points into: the
 * function when taken from the table, the stream, the reset target and the
 * packed argument block when it did not fit d->args, and with
 * LCU_LAUNCH_KEEP_ARGS the args list it packed (on top). Ends with d's context
 * current on this thread; when d->ran_lua is 0 no Lua code ran. */
void lcu_parse_launch(lua_State *L, int t, int fn_idx, const char *what,
                      int allow, lcu_launch *d);
/* "WHAT of 'f' (grid=AxBxC block=AxBxC shared=N[ cooperative])", pushed:
 * for launch errors. */
const char *lcu_launch_text(lua_State *L, const char *what,
                            const lcu_launch *d);
/* fn:launch{...}, fn:launch_costs{...} */
int lcu_fn_launch(lua_State *L);
int lcu_fn_launch_costs(lua_State *L);
/* fn:prepare{...} -> a prepared launch (LCU_LAUNCH_MT): the description of
 * a window's loop read once, for w:launch_loop(p) to launch again. */
int lcu_fn_prepare(lua_State *L);
/* The launch prepared at idx, checked usable now (its function, module,
 * context and every buffer or global it points into still open; the
 * context made current), or NULL when idx holds no prepared launch. Runs
 * no Lua code. */
const lcu_launch *lcu_prepared_use(lua_State *L, int idx, const char *what);
void lcu_open_launch(lua_State *L);

/* ---- lua_cuda_window.c ---------------------------------------------------- */
void lcu_open_window(lua_State *L);
int lcu_ctx_stream(lua_State *L);
/* Pushes the context's default stream (cached in the context's user value
 * 1); idx is the context handle. */
void lcu_push_default_stream(lua_State *L, int idx);
int lcu_ctx_event_costs(lua_State *L);

/* ---- lua_cuda_ksrc.c ------------------------------------------------------ */
/* ctx:calibrate_events{samples=, source=}, ctx:kernel_source([name]) */
int lcu_ctx_calibrate_events(lua_State *L);
int lcu_ctx_kernel_source(lua_State *L);
/* Gives back what the context holds of the kernel-time sources (release). */
void lcu_ctx_release_ksrc(lcu_ctx *c);
/* CUPTI's timeline of a window as a table (w.timeline, s:timed's third
 * result), times from the window's opening. */
void lcu_push_timeline(lua_State *L, const pp_cupti_timeline *t);
/* Reads an optional source name ("event" | "cupti") at idx; def if nil. */
pp_kernel_src lcu_opt_ksrc(lua_State *L, int idx, const char *what,
                           pp_kernel_src def);
/* Checks that CUPTI collection is on when a window asks for it (raises). */
void lcu_check_ksrc(lua_State *L, pp_kernel_src src, const char *what);
/* Window fields of the kernel-time sources; 0 when k is not one of them. */
int lcu_window_ksrc_field(lua_State *L, const lcu_window *w, const char *k);

#endif /* PP_HAVE_CUDA_H */
#endif
