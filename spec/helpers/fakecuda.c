/*
 * fakecuda.c: a fault-injecting stand-in for libcuda, for the non-GPU specs.
 *
 * Built as build/libfakecuda.so and selected with PHASEPROBE_LIBCUDA. It
 * exports only cuGetProcAddress_v2 and answers the entry points phaseprobe
 * asks for with host-memory imitations: "device memory" is malloc'd, events
 * read CLOCK_MONOTONIC, kernels do not run (a launch is checked, then logged).
 * It exists to drive the driver-error paths and the object lifecycle of the
 * binding in CI. It is never evidence that anything works on a GPU.
 *
 * Environment:
 *   PHASEPROBE_FAKE_FAULTS  comma-separated faults:
 *       no_device        cuInit fails with CUDA_ERROR_NO_DEVICE
 *       missing=<sym>    cuGetProcAddress does not find <sym>
 *       oom              every cuMemAlloc fails with CUDA_ERROR_OUT_OF_MEMORY
 *       paraminfo        driver 12.4: cuFuncGetParamInfo is offered
 *       old_driver       cuDriverGetVersion says 11.8
 *   PHASEPROBE_FAKE_LOG     file to append one line per launch:
 *       "launch <name> grid=x,y,z block=x,y,z shared=n coop=0|1 params=<hex>,..."
 *   PHASEPROBE_FAKE_REPORT  file written at exit with the objects still held:
 *       "allocs=<n> retains=<n> modules=<n> streams=<n> events=<n>"
 *
 * Imitated behaviour: PTX without ".version" fails to load with
 * CUDA_ERROR_INVALID_PTX and an error log naming the line; blocks of more
 * than 1024 threads, or more than 48 KiB of dynamic shared memory, fail with
 * CUDA_ERROR_INVALID_VALUE; launching an entry whose name starts with "trap"
 * makes the next synchronizing call, and every call after it, fail with
 * CUDA_ERROR_ILLEGAL_ADDRESS; allocations past 256 MiB in total fail with
 * CUDA_ERROR_OUT_OF_MEMORY. One device, "phaseprobe fake device", sm_90,
 * 4 SMs, at most 2048 resident threads (and 32 blocks) per SM.
 *
 * Handles used after their end are refused, as a driver would refuse them,
 * instead of reading freed memory: a function of an unloaded module, an
 * unloaded module, a destroyed stream or event give
 * CUDA_ERROR_INVALID_HANDLE (the last 4096 ends are remembered), and calls
 * that need the context fail with CUDA_ERROR_INVALID_CONTEXT once its
 * primary context was released as often as it was retained.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include "pp_cuda.h" /* PP_CUDA_ENTRIES: the entry points the module asks for */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_MEM_TOTAL (256ull << 20)
#define FAKE_SMS 4

/* ---- state --------------------------------------------------------------- */
typedef struct alloc {
  struct alloc *next;
  unsigned char *mem;
  size_t size;
  int module_owned;
} alloc;

typedef struct fake_fn {
  struct fake_fn *next;
  char name[256];
  int nparams;
  size_t sizes[128];
} fake_fn;

typedef struct fake_mod {
  int magic;
  char *ptx;
  fake_fn *fns;
  alloc *globals[64];
  char gnames[64][128];
  int nglobals;
} fake_mod;

typedef struct {
  int magic;
  uint64_t t;
  int recorded;
} fake_event;

static struct {
  int inited;
  int retains;
  int modules, streams, events;
  alloc *allocs;
  size_t used;
  CUresult sticky, pending;
  int ctx_token;
} st;

#define MOD_MAGIC 0x6d6f64
#define EV_MAGIC 0x657674

/* Handles that ended (freed modules, functions, streams, events): a ring of
 * the last DEAD_MAX addresses, checked before a handle is read, so a stale
 * handle is refused rather than read after free. An address handed out
 * again leaves the ring. */
#define DEAD_MAX 4096
static const void *dead[DEAD_MAX];
static unsigned dead_next;

static void mark_dead(const void *p) {
  dead[dead_next++ % DEAD_MAX] = p;
}

static int is_dead(const void *p) {
  for (unsigned i = 0; i < DEAD_MAX; i++)
    if (dead[i] == p)
      return 1;
  return 0;
}

static void revive(const void *p) {
  for (unsigned i = 0; i < DEAD_MAX; i++)
    if (dead[i] == p)
      dead[i] = NULL;
}

/* A new handle of size bytes, zeroed, its address no longer counted as
 * ended; NULL when out of memory. */
static void *new_handle(size_t size) {
  void *p = calloc(1, size);
  if (p)
    revive(p);
  return p;
}

/* Ends a handle: later calls that name it are refused. */
static void end_handle(void *p) {
  mark_dead(p);
  free(p);
}

/* A handle of the fake's own kind that has not ended. */
#define ALIVE(p, MAGIC) ((p) && !is_dead(p) && (p)->magic == (MAGIC))

/* NULL, the default stream, is always there. */
static int stream_ended(CUstream s) { return s && is_dead(s); }

/* Calls that need a live context: after the primary context was released
 * as often as it was retained, it is gone. */
#define NEED_CTX()                                                             \
  do {                                                                         \
    if (st.retains == 0)                                                       \
      return CUDA_ERROR_INVALID_CONTEXT;                                       \
  } while (0)

static int fault(const char *name) {
  const char *f = getenv("PHASEPROBE_FAKE_FAULTS");
  if (!f)
    return 0;
  size_t n = strlen(name);
  for (const char *p = f; (p = strstr(p, name)); p += n)
    if ((p == f || p[-1] == ',') && (p[n] == 0 || p[n] == ',' || p[n] == '='))
      return 1;
  return 0;
}

static int missing(const char *sym) {
  const char *f = getenv("PHASEPROBE_FAKE_FAULTS");
  const char *p = f ? strstr(f, "missing=") : NULL;
  if (!p)
    return 0;
  p += 8;
  size_t n = strcspn(p, ",");
  return strlen(sym) == n && strncmp(p, sym, n) == 0;
}

/* The file named by the environment variable var, opened with mode; NULL
 * when var is unset or empty or the file cannot be opened. */
static FILE *open_named(const char *var, const char *mode) {
  const char *path = getenv(var);
  if (!path || !*path)
    return NULL;
  return fopen(path, mode);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Calls that synchronize surface a pending illegal address. */
static CUresult sync_point(void) {
  if (st.pending) {
    st.sticky = st.pending;
    st.pending = CUDA_SUCCESS;
  }
  return st.sticky;
}

#define GUARD()                                                                \
  do {                                                                         \
    if (!st.inited)                                                            \
      return CUDA_ERROR_NOT_INITIALIZED;                                       \
    if (st.sticky)                                                             \
      return st.sticky;                                                        \
  } while (0)

/* ---- errors -------------------------------------------------------------- */
static const struct fake_err {
  CUresult rc;
  const char *name, *text;
} errs[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
     "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
     "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
     "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
     "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
     "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "too many blocks in cooperative launch"},
};

/* The row of errs for rc, or NULL for a code the fake does not name. */
static const struct fake_err *err_of(CUresult rc) {
  for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
    if (errs[i].rc == rc)
      return &errs[i];
  return NULL;
}

static CUresult f_GetErrorName(CUresult rc, const char **out) {
  const struct fake_err *e = err_of(rc);
  *out = e ? e->name : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult f_GetErrorString(CUresult rc, const char **out) {
  const struct fake_err *e = err_of(rc);
  *out = e ? e->text : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- init, devices, contexts --------------------------------------------- */
static CUresult f_Init(unsigned flags) {
  if (flags)
    return CUDA_ERROR_INVALID_VALUE;
  if (fault("no_device"))
    return CUDA_ERROR_NO_DEVICE;
  st.inited = 1;
  return CUDA_SUCCESS;
}

static CUresult f_DriverGetVersion(int *v) {
  *v = fault("old_driver") ? 11080 : fault("paraminfo") ? 12040 : 12000;
  return CUDA_SUCCESS;
}

static CUresult f_DeviceGetCount(int *n) {
  GUARD();
  *n = 1;
  return CUDA_SUCCESS;
}

static CUresult f_DeviceGet(CUdevice *d, int ord) {
  GUARD();
  if (ord != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}

static CUresult f_DeviceGetName(char *name, int len, CUdevice d) {
  GUARD();
  if (d != 0 || len < 1)
    return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "phaseprobe fake device");
  return CUDA_SUCCESS;
}

static CUresult f_DeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  GUARD();
  if (d != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = FAKE_SMS; break;
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *v = 1; break;
  default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}

static CUresult f_DevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  GUARD();
  if (d != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  st.retains++;
  *c = (CUcontext)&st.ctx_token;
  return CUDA_SUCCESS;
}

static CUresult f_DevicePrimaryCtxRelease(CUdevice d) {
  if (!st.inited)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (d != 0 || st.retains == 0)
    return CUDA_ERROR_INVALID_VALUE;
  st.retains--;
  return CUDA_SUCCESS;
}

static CUresult f_CtxSetCurrent(CUcontext c) {
  if (!st.inited)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (c && c != (CUcontext)&st.ctx_token)
    return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_SUCCESS;
}

static CUresult f_CtxSynchronize(void) {
  GUARD();
  return sync_point();
}

/* ---- memory --------------------------------------------------------------- */
static alloc *new_alloc(size_t size, int module_owned) {
  alloc *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->mem = calloc(1, size ? size : 1);
  if (!a->mem) {
    free(a);
    return NULL;
  }
  a->size = size;
  a->module_owned = module_owned;
  a->next = st.allocs;
  st.allocs = a;
  return a;
}

static void drop_alloc(alloc *a) {
  for (alloc **p = &st.allocs; *p; p = &(*p)->next)
    if (*p == a) {
      *p = a->next;
      break;
    }
  free(a->mem);
  free(a);
}

/* The allocation holding [ptr, ptr+n), or NULL. */
static alloc *find_range(CUdeviceptr ptr, size_t n) {
  for (alloc *a = st.allocs; a; a = a->next) {
    uintptr_t lo = (uintptr_t)a->mem;
    if (ptr >= lo && ptr - lo <= a->size && n <= a->size - (ptr - lo))
      return a;
  }
  return NULL;
}

static CUresult f_MemAlloc(CUdeviceptr *p, size_t size) {
  GUARD();
  NEED_CTX();
  if (size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (fault("oom") || size > FAKE_MEM_TOTAL - st.used)
    return CUDA_ERROR_OUT_OF_MEMORY;
  alloc *a = new_alloc(size, 0);
  if (!a)
    return CUDA_ERROR_OUT_OF_MEMORY;
  st.used += size;
  *p = (CUdeviceptr)(uintptr_t)a->mem;
  return CUDA_SUCCESS;
}

static CUresult f_MemFree(CUdeviceptr p) {
  GUARD();
  for (alloc *a = st.allocs; a; a = a->next)
    if ((uintptr_t)a->mem == p && !a->module_owned) {
      st.used -= a->size;
      drop_alloc(a);
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult f_MemGetInfo(size_t *free_b, size_t *total) {
  GUARD();
  *free_b = FAKE_MEM_TOTAL - st.used;
  *total = FAKE_MEM_TOTAL;
  return CUDA_SUCCESS;
}

/* What a synchronous copy to or from [dev, dev+n) answers before it
 * copies: a pending illegal address surfaces, and the range must lie in
 * one allocation. */
static CUresult copy_check(CUdeviceptr dev, size_t n) {
  GUARD();
  NEED_CTX();
  CUresult rc = sync_point();
  if (rc)
    return rc;
  if (!find_range(dev, n))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static CUresult f_MemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
  CUresult rc = copy_check(dst, n);
  if (rc)
    return rc;
  memcpy((void *)(uintptr_t)dst, src, n);
  return CUDA_SUCCESS;
}

static CUresult f_MemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
  CUresult rc = copy_check(src, n);
  if (rc)
    return rc;
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}

static CUresult f_MemsetD8(CUdeviceptr dst, unsigned char v, size_t n) {
  GUARD();
  if (!find_range(dst, n))
    return CUDA_ERROR_INVALID_VALUE;
  memset((void *)(uintptr_t)dst, v, n);
  return sync_point();
}

static CUresult f_MemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n,
                                CUstream s) {
  GUARD();
  if (stream_ended(s))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!find_range(dst, n))
    return CUDA_ERROR_INVALID_VALUE;
  memset((void *)(uintptr_t)dst, v, n);
  return CUDA_SUCCESS;
}

/* ---- streams and events -------------------------------------------------- */
static CUresult f_StreamCreate(CUstream *s, unsigned flags) {
  GUARD();
  NEED_CTX();
  if (flags > 1)
    return CUDA_ERROR_INVALID_VALUE;
  *s = (CUstream)new_handle(16);
  if (!*s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  st.streams++;
  return CUDA_SUCCESS;
}

static CUresult f_StreamDestroy(CUstream s) {
  if (!s || is_dead(s))
    return CUDA_ERROR_INVALID_HANDLE;
  end_handle(s);
  st.streams--;
  return CUDA_SUCCESS;
}

static CUresult f_StreamSynchronize(CUstream s) {
  GUARD();
  if (stream_ended(s))
    return CUDA_ERROR_INVALID_HANDLE;
  return sync_point();
}

static CUresult f_EventCreate(CUevent *e, unsigned flags) {
  (void)flags;
  GUARD();
  NEED_CTX();
  fake_event *ev = new_handle(sizeof *ev);
  if (!ev)
    return CUDA_ERROR_OUT_OF_MEMORY;
  ev->magic = EV_MAGIC;
  *e = (CUevent)ev;
  st.events++;
  return CUDA_SUCCESS;
}

static CUresult f_EventDestroy(CUevent e) {
  fake_event *ev = (fake_event *)e;
  if (!ALIVE(ev, EV_MAGIC))
    return CUDA_ERROR_INVALID_HANDLE;
  ev->magic = 0;
  end_handle(ev);
  st.events--;
  return CUDA_SUCCESS;
}

static CUresult f_EventRecord(CUevent e, CUstream s) {
  GUARD();
  fake_event *ev = (fake_event *)e;
  if (!ALIVE(ev, EV_MAGIC) || stream_ended(s))
    return CUDA_ERROR_INVALID_HANDLE;
  ev->t = now_ns();
  ev->recorded = 1;
  return CUDA_SUCCESS;
}

static CUresult f_EventQuery(CUevent e) {
  (void)e;
  GUARD();
  return CUDA_SUCCESS;
}

static CUresult f_EventSynchronize(CUevent e) {
  (void)e;
  GUARD();
  return sync_point();
}

static CUresult f_EventElapsedTime(float *ms, CUevent a, CUevent b) {
  GUARD();
  fake_event *x = (fake_event *)a, *y = (fake_event *)b;
  if (!ALIVE(x, EV_MAGIC) || !ALIVE(y, EV_MAGIC))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!x->recorded || !y->recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = (float)((double)(y->t - x->t) / 1e6);
  return CUDA_SUCCESS;
}

/* ---- modules -------------------------------------------------------------- */
static size_t type_size(const char *t) {
  static const struct {
    const char *n;
    size_t s;
  } ts[] = {{".u8", 1},  {".s8", 1},  {".b8", 1},  {".u16", 2}, {".s16", 2},
            {".b16", 2}, {".f16", 2}, {".u32", 4}, {".s32", 4}, {".b32", 4},
            {".f32", 4}, {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
    if (strncmp(t, ts[i].n, strlen(ts[i].n)) == 0 &&
        !((t[strlen(ts[i].n)] >= 'a' && t[strlen(ts[i].n)] <= 'z') ||
          (t[strlen(ts[i].n)] >= '0' && t[strlen(ts[i].n)] <= '9')))
      return ts[i].s;
  return 0;
}

/* Sizes of ".param <attrs> .<type> name[N]" entries up to ')'. */
static int scan_params(const char *p, size_t *sizes, int max) {
  const char *end = strchr(p, ')');
  const char *brace = strchr(p, '{');
  if (!end || (brace && brace < end))
    return 0;
  int n = 0;
  for (const char *q = p; (q = strstr(q, ".param")) && q < end && n < max;
       q += 6) {
    size_t sz = 0;
    const char *r = q + 6, *stop = strpbrk(r, ",)");
    for (const char *t = r; t < stop; t++)
      if (*t == '.' && type_size(t))
        sz = type_size(t);
    const char *lb = memchr(r, '[', (size_t)(stop - r));
    if (lb)
      sz *= (size_t)strtoul(lb + 1, NULL, 10);
    sizes[n++] = sz;
  }
  return n;
}

static void scan_globals(fake_mod *m) {
  for (const char *line = m->ptx; line && *line;) {
    const char *next = strchr(line, '\n');
    const char *p = line;
    while (*p == ' ' || *p == '\t')
      p++;
    if (strncmp(p, ".visible ", 9) == 0)
      p += 9;
    if (strncmp(p, ".global ", 8) == 0 && m->nglobals < 64) {
      size_t elem = 0;
      const char *semi = strchr(p, ';');
      const char *name = NULL;
      for (const char *t = p + 8; semi && t < semi; t++) {
        if (*t == '.' && !elem && type_size(t))
          elem = type_size(t);
        else if (*t == '.' && t[-1] == ' ' && strncmp(t, ".align", 6) == 0)
          continue;
        if (elem && !name && (t[-1] == ' ') && *t != '.' && *t != ' ' &&
            !(*t >= '0' && *t <= '9'))
          name = t;
      }
      if (elem && name) {
        size_t nl = strcspn(name, "[ ;=");
        size_t count = 1;
        if (name[nl] == '[')
          count = (size_t)strtoul(name + nl + 1, NULL, 10);
        alloc *a = new_alloc(elem * count, 1);
        if (a) {
          snprintf(m->gnames[m->nglobals], sizeof m->gnames[0], "%.*s",
                   (int)nl, name);
          m->globals[m->nglobals++] = a;
        }
      }
    }
    line = next ? next + 1 : NULL;
  }
}

static int jit_option_index(unsigned n, CUjit_option *o, CUjit_option want) {
  for (unsigned i = 0; i < n; i++)
    if (o[i] == want)
      return (int)i;
  return -1;
}

static void write_log(unsigned n, CUjit_option *o, void **v, CUjit_option buf,
                      CUjit_option size, const char *text) {
  int b = jit_option_index(n, o, buf), s = jit_option_index(n, o, size);
  if (b < 0 || s < 0)
    return;
  size_t cap = (size_t)(uintptr_t)v[s];
  if (!cap)
    return;
  snprintf((char *)v[b], cap, "%s", text);
  v[s] = (void *)(uintptr_t)(strlen(text) + 1 < cap ? strlen(text) + 1 : cap);
}

static CUresult f_ModuleLoadDataEx(CUmodule *out, const void *image,
                                   unsigned n, CUjit_option *o, void **v) {
  GUARD();
  const char *ptx = image;
  if (!strstr(ptx, ".version")) {
    write_log(n, o, v, CU_JIT_ERROR_LOG_BUFFER,
              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
              "ptxas application ptx input, line 1; fatal   : Missing "
              ".version directive at start of file");
    return CUDA_ERROR_INVALID_PTX;
  }
  NEED_CTX();
  fake_mod *m = new_handle(sizeof *m);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  m->magic = MOD_MAGIC;
  m->ptx = strdup(ptx);
  scan_globals(m);
  write_log(n, o, v, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            jit_option_index(n, o, CU_JIT_LOG_VERBOSE) >= 0
                ? "ptxas info    : fake JIT (verbose)"
                : "");
  int w = jit_option_index(n, o, CU_JIT_WALL_TIME);
  if (w >= 0) {
    float ms = 0.5f;
    v[w] = NULL;
    memcpy(&v[w], &ms, sizeof ms);
  }
  st.modules++;
  *out = (CUmodule)m;
  return CUDA_SUCCESS;
}

static CUresult f_ModuleUnload(CUmodule mod) {
  fake_mod *m = (fake_mod *)mod;
  if (!ALIVE(m, MOD_MAGIC))
    return CUDA_ERROR_INVALID_HANDLE;
  for (int i = 0; i < m->nglobals; i++)
    drop_alloc(m->globals[i]);
  while (m->fns) {
    fake_fn *f = m->fns;
    m->fns = f->next;
    end_handle(f);
  }
  m->magic = 0;
  free(m->ptx);
  end_handle(m);
  st.modules--;
  return CUDA_SUCCESS;
}

/* The module behind mod for the calls that look into one (the context
 * must still be there); a refusal otherwise. */
static CUresult live_module(CUmodule mod, fake_mod **m) {
  GUARD();
  NEED_CTX();
  *m = (fake_mod *)mod;
  if (!ALIVE(*m, MOD_MAGIC))
    return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

static CUresult f_ModuleGetFunction(CUfunction *out, CUmodule mod,
                                    const char *name) {
  fake_mod *m;
  CUresult rc = live_module(mod, &m);
  if (rc)
    return rc;
  size_t nl = strlen(name);
  for (const char *p = m->ptx; (p = strstr(p, ".entry ")); p += 7) {
    const char *q = p + 7;
    while (*q == ' ')
      q++;
    if (strncmp(q, name, nl) != 0 ||
        !(q[nl] == '(' || q[nl] == ' ' || q[nl] == '\n' || q[nl] == '{'))
      continue;
    fake_fn *f = new_handle(sizeof *f);
    if (!f)
      return CUDA_ERROR_OUT_OF_MEMORY;
    snprintf(f->name, sizeof f->name, "%s", name);
    f->nparams = scan_params(q + nl, f->sizes, 128);
    f->next = m->fns;
    m->fns = f;
    *out = (CUfunction)f;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

static CUresult f_ModuleGetGlobal(CUdeviceptr *p, size_t *size, CUmodule mod,
                                  const char *name) {
  fake_mod *m;
  CUresult rc = live_module(mod, &m);
  if (rc)
    return rc;
  for (int i = 0; i < m->nglobals; i++)
    if (strcmp(m->gnames[i], name) == 0) {
      if (p)
        *p = (CUdeviceptr)(uintptr_t)m->globals[i]->mem;
      if (size)
        *size = m->globals[i]->size;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

static CUresult f_FuncGetAttribute(int *v, CUfunction_attribute a,
                                   CUfunction f) {
  GUARD();
  if (!f || is_dead(f))
    return CUDA_ERROR_INVALID_HANDLE;
  switch (a) {
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 32; break;
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}

static CUresult f_FuncGetParamInfo(CUfunction func, size_t i, size_t *off,
                                   size_t *size) {
  GUARD();
  fake_fn *f = (fake_fn *)func;
  if (f && is_dead(f))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!f || i >= (size_t)f->nparams)
    return CUDA_ERROR_INVALID_VALUE;
  size_t o = 0;
  for (size_t k = 0; k <= i; k++) {
    size_t al = f->sizes[k] >= 8 ? 8 : f->sizes[k] ? f->sizes[k] : 1;
    o = (o + al - 1) / al * al;
    if (k == i)
      break;
    o += f->sizes[k];
  }
  *off = o;
  *size = f->sizes[i];
  return CUDA_SUCCESS;
}

/* ---- launches -------------------------------------------------------------- */
static int occupancy(unsigned threads) {
  if (threads == 0 || threads > 1024)
    return 0;
  int n = (int)(2048 / threads);
  return n > 32 ? 32 : n;
}

static void log_launch(const fake_fn *f, const unsigned g[3],
                       const unsigned b[3], unsigned shared, int coop,
                       void **params) {
  FILE *out = open_named("PHASEPROBE_FAKE_LOG", "a");
  if (!out)
    return;
  fprintf(out, "launch %s grid=%u,%u,%u block=%u,%u,%u shared=%u coop=%d params=",
          f->name, g[0], g[1], g[2], b[0], b[1], b[2], shared, coop);
  for (int i = 0; i < f->nparams; i++) {
    if (i)
      fputc(',', out);
    const unsigned char *p = params ? params[i] : NULL;
    for (size_t k = 0; p && k < f->sizes[i]; k++)
      fprintf(out, "%02x", p[k]);
  }
  fputc('\n', out);
  fclose(out);
}

/* With FAKECUDA_TRACE=1, a launch is also reported to the fake CUPTI
 * (spec/helpers/fakecupti.c, loaded through PHASEPROBE_LIBCUPTI), as the
 * real driver reports launches to CUPTI: a kernel of 20 us starting 7 us
 * after the call. */
static void traced_launch(void) {
  static uint32_t (*report)(uint64_t, uint64_t, int);
  static int looked;
  if (!looked) {
    looked = 1;
    const char *on = getenv("FAKECUDA_TRACE"), *lib = getenv("PHASEPROBE_LIBCUPTI");
    void *h = on && *on == '1' && lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (h)
      *(void **)&report = dlsym(h, "fakecupti_launch");
  }
  if (report)
    report(20000, 7000, 1);
}

static CUresult launch(CUfunction func, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz, unsigned shared,
                       CUstream s, void **params, int coop) {
  GUARD();
  NEED_CTX();
  fake_fn *f = (fake_fn *)func;
  if (!f || is_dead(f) || stream_ended(s))
    return CUDA_ERROR_INVALID_HANDLE;
  unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  uint64_t threads = (uint64_t)bx * by * bz;
  if (!gx || !gy || !gz || !bx || !by || !bz || threads > 1024 ||
      shared > 48 * 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if (f->nparams && !params)
    return CUDA_ERROR_INVALID_VALUE;
  if (coop &&
      (uint64_t)gx * gy * gz > (uint64_t)occupancy((unsigned)threads) * FAKE_SMS)
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  log_launch(f, g, b, shared, coop, params);
  if (strncmp(f->name, "trap", 4) == 0)
    st.pending = CUDA_ERROR_ILLEGAL_ADDRESS;
  traced_launch();
  return CUDA_SUCCESS;
}

static CUresult f_LaunchKernel(CUfunction f, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream s,
                               void **params, void **extra) {
  if (extra)
    return CUDA_ERROR_INVALID_VALUE;
  return launch(f, gx, gy, gz, bx, by, bz, shared, s, params, 0);
}

static CUresult f_LaunchCooperativeKernel(CUfunction f, unsigned gx,
                                          unsigned gy, unsigned gz,
                                          unsigned bx, unsigned by,
                                          unsigned bz, unsigned shared,
                                          CUstream s, void **params) {
  return launch(f, gx, gy, gz, bx, by, bz, shared, s, params, 1);
}

static CUresult f_OccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f,
                                                          int block, size_t shared) {
  GUARD();
  if (f && is_dead(f))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!f || block <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  *n = shared > 48 * 1024 ? 0 : occupancy((unsigned)block);
  return CUDA_SUCCESS;
}

/* ---- the entry point table ---------------------------------------------------- */
typedef void (*any_fn)(void);
/* The fake answers every entry point the module asks for, from the module's
 * own list (PP_CUDA_ENTRIES, pp_cuda.h): f_<field> for each, checked
 * against the driver's typedef for that entry. */
#define FAKE_CHECK_(field, sym, type, ver, req)                                \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&f_##field), type),   \
                 "f_" #field " does not match " #type);
PP_CUDA_ENTRIES(FAKE_CHECK_)

static const struct {
  const char *sym;
  any_fn fn;
} table[] = {
#define FAKE_ENTRY_(field, sym, type, ver, req) {sym, (any_fn)f_##field},
    PP_CUDA_ENTRIES(FAKE_ENTRY_)
};

FAKE_EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int version,
                                      cuuint64_t flags,
                                      CUdriverProcAddressQueryResult *status) {
  (void)flags;
  int driver = 0;
  f_DriverGetVersion(&driver);
  *pfn = NULL;
  if (status)
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  /* cuDriverGetVersion answers at any version, so that old_driver reaches
   * the caller's version check. */
  if (version > driver && strcmp(sym, "cuDriverGetVersion") != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (missing(sym))
    return CUDA_SUCCESS;
  if (strcmp(sym, "cuFuncGetParamInfo") == 0 && driver < 12040) {
    if (status)
      *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_SUCCESS;
  }
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].sym, sym) == 0) {
      memcpy(pfn, &table[i].fn, sizeof *pfn);
      if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  return CUDA_SUCCESS;
}

__attribute__((destructor)) static void fake_report(void) {
  FILE *out = open_named("PHASEPROBE_FAKE_REPORT", "w");
  if (!out)
    return;
  int allocs = 0;
  for (alloc *a = st.allocs; a; a = a->next)
    allocs += !a->module_owned;
  fprintf(out, "allocs=%d retains=%d modules=%d streams=%d events=%d\n", allocs,
          st.retains, st.modules, st.streams, st.events);
  fclose(out);
}
