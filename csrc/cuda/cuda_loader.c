/*
 * cuda_loader.c: loads the CUDA driver at run time and formats its errors.
 *
 * dlopen("libcuda.so.1") (PHASEPROBE_LIBCUDA overrides the path), refuse the
 * toolkit's stub library, find cuGetProcAddress_v2 (CUDA 12+) and request
 * every entry point of pp_cuda.h's table at its explicit version, then
 * cuInit(0). The outcome (table or reason) is computed once per process and
 * is the layer's only global state.
 */
#define _GNU_SOURCE 1 /* dlinfo */
#include "pp_internal.h"

#ifdef PP_HAVE_CUDA_H
#include "pp_cuda.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*pp_getproc_fn)(const char *, void **, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult *);

static pp_cuda_api api;
static int api_ok;
static char api_why[512];
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void why_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void why_set(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(api_why, sizeof api_why, fmt, ap);
  va_end(ap);
}

/* The path the dynamic linker actually opened (for messages and the stub
 * check). */
static void loaded_path(void *h, const char *asked, char *out, size_t cap) {
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name)
    snprintf(out, cap, "%s", lm->l_name);
  else
    snprintf(out, cap, "%s", asked);
}

static int is_stub_path(const char *path) {
  return strstr(path, "/stubs/") != NULL;
}

static const char *status_text(CUdriverProcAddressQueryResult st) {
  switch (st) {
  case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: return "symbol not found";
  case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT:
    return "version not sufficient";
  default: return "no function returned";
  }
}

/* Requests one entry point; 0, or -1 with the reason set when required. */
static int resolve(pp_getproc_fn getproc, void **slot, const char *sym,
                   int version, int required) {
  *slot = NULL;
  if (!required && api.driver_version < version)
    return 0;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult rc = getproc(sym, slot, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                        &st);
  if (rc == CUDA_SUCCESS && *slot && st == CU_GET_PROC_ADDRESS_SUCCESS)
    return 0;
  *slot = NULL;
  if (!required)
    return 0;
  why_set("entry point %s (CUDA %d.%d) not found in %s: cuGetProcAddress "
          "returned %d, %s",
          sym, version / 1000, version % 1000 / 10, api.path, (int)rc,
          status_text(st));
  return -1;
}

static int resolve_all(pp_getproc_fn getproc) {
  void *p = NULL;
  /* cuDriverGetVersion first: optional entries depend on it. */
  if (resolve(getproc, &p, "cuDriverGetVersion", PP_CUDA_API_VERSION, 1))
    return -1;
  api.DriverGetVersion = (PFN_cuDriverGetVersion_v2020)p;
  if (api.DriverGetVersion(&api.driver_version) != CUDA_SUCCESS) {
    why_set("cuDriverGetVersion failed in %s", api.path);
    return -1;
  }
  if (api.driver_version < PP_CUDA_API_VERSION) {
    why_set("driver in %s supports CUDA %d.%d; phaseprobe needs 12.0 or newer",
            api.path, api.driver_version / 1000,
            api.driver_version % 1000 / 10);
    return -1;
  }
#define PP_RESOLVE_(field, sym, type, ver, req)                                \
  if (resolve(getproc, &p, sym, ver, req))                                     \
    return -1;                                                                 \
  api.field = (type)p;
  PP_CUDA_ENTRIES(PP_RESOLVE_)
#undef PP_RESOLVE_
  return 0;
}

/* Clears the entry points (the path stays, for messages). */
static void forget_table(void) {
  char path[sizeof api.path];
  memcpy(path, api.path, sizeof path);
  memset(&api, 0, sizeof api);
  memcpy(api.path, path, sizeof path);
}

static void load_once(void) {
  const char *want = getenv("PHASEPROBE_LIBCUDA");
  if (!want || !*want)
    want = "libcuda.so.1";
  void *h = dlopen(want, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    why_set("cannot load %s (the NVIDIA driver library): %s; is an NVIDIA "
            "driver installed? (PHASEPROBE_LIBCUDA=path overrides)",
            want, e ? e : "unknown error");
    return;
  }
  loaded_path(h, want, api.path, sizeof api.path);
  if (is_stub_path(api.path)) {
    why_set("%s is the CUDA toolkit's stub library, not the driver; refusing "
            "to use it",
            api.path);
    dlclose(h);
    return;
  }
  pp_getproc_fn getproc = (pp_getproc_fn)dlsym(h, "cuGetProcAddress_v2");
  if (!getproc) {
    why_set("%s has no cuGetProcAddress_v2: the driver is older than CUDA "
            "12.0",
            api.path);
    dlclose(h);
    return;
  }
  if (resolve_all(getproc) != 0) {
    forget_table();
    dlclose(h);
    return;
  }
  CUresult rc = api.Init(0);
  if (rc != CUDA_SUCCESS) {
    char msg[400];
    pp_cuda_format_error(msg, sizeof msg, "cuInit", rc);
    why_set("%s (driver %s)", msg, api.path);
    return; /* the library stays loaded: error names still work */
  }
  api_ok = 1;
  api_why[0] = 0;
}

PP_EXPORT const pp_cuda_api *pp_cuda_load(char *why, size_t whylen) {
  pthread_once(&api_once, load_once);
  if (!api_ok && why && whylen)
    snprintf(why, whylen, "%s", api_why);
  return api_ok ? &api : NULL;
}

PP_EXPORT const pp_cuda_api *pp_cuda(void) { return api_ok ? &api : NULL; }

/* ---- errors -------------------------------------------------------------- */
PP_EXPORT const char *pp_cuda_error_name(CUresult rc, char *buf, size_t cap) {
  const char *name = NULL;
  if (api.GetErrorName && api.GetErrorName(rc, &name) == CUDA_SUCCESS && name)
    return name;
  snprintf(buf, cap, "CUDA_ERROR_%d", (int)rc);
  return buf;
}

PP_EXPORT int pp_cuda_error_is_sticky(CUresult rc) {
  switch (rc) {
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_CONTAINED:
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_FAILED:
    return 1;
  default:
    return 0;
  }
}

PP_EXPORT size_t pp_cuda_format_error(char *buf, size_t cap, const char *call,
                                      CUresult rc) {
  char nbuf[32];
  const char *name = pp_cuda_error_name(rc, nbuf, sizeof nbuf);
  const char *desc = NULL;
  if (!api.GetErrorString || api.GetErrorString(rc, &desc) != CUDA_SUCCESS || !desc)
    desc = "no description from the driver";
  int n = snprintf(buf, cap, "%s: %s (%s)%s", call ? call : "CUDA", name, desc,
                   pp_cuda_error_is_sticky(rc)
                       ? "; the device is unusable in this process after "
                         "this error (even a new context fails); restart "
                         "the process"
                       : "");
  return n < 0 ? 0 : (size_t)n;
}

#else
/* Built without the CUDA headers: the layer is absent (lua_cuda.c says so). */
typedef int pp_cuda_loader_absent_;
#endif
