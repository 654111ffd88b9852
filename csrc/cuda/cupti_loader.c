/*
 * cupti_loader.c: loads libcupti at run time and formats its errors, as
 * cuda_loader.c does for the driver. The places tried are listed in
 * pp_cupti.h (PHASEPROBE_LIBCUPTI overrides them); every entry point of
 * cupti_internal.h's table is resolved, the optional ones may be missing,
 * and a CUPTI older than the kernel record read by cupti.c is refused. The
 * outcome (table or reason) is computed once per process.
 *
 * Built with the CUPTI headers (PP_HAVE_CUPTI_H, which the Makefile sets
 * only beside PP_HAVE_CUDA_H); without them every entry point says why
 * CUPTI is absent.
 */
#define _GNU_SOURCE /* dlinfo */
#include "cupti_internal.h"

#include <stdio.h>
#include <string.h>

#if defined(PP_HAVE_CUPTI_H) && defined(PP_HAVE_CUDA_H)

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>

#include "pp_cuda.h"

/* Oldest CUPTI API version whose kernel record has start, end and
 * correlationId where CUpti_ActivityKernel10 has them (CUDA 11.0, v13; the
 * prefix has not moved since CUpti_ActivityKernel4). */
#define PP_CUPTI_MIN_VERSION 13u

static pp_cupti_api api;
static int api_ok;
static char api_why[512];
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void *open_lib(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return NULL;
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name)
    snprintf(api.path, sizeof api.path, "%s", lm->l_name);
  else
    snprintf(api.path, sizeof api.path, "%s", path);
  return h;
}

/* Tries the places listed in pp_cupti.h; the reason names them all. */
static void *find_lib(void) {
  const char *forced = getenv("PHASEPROBE_LIBCUPTI");
  if (forced && *forced) {
    void *h = open_lib(forced);
    if (!h)
      snprintf(api_why, sizeof api_why,
               "PHASEPROBE_LIBCUPTI=%s could not be loaded: %s", forced,
               dlerror());
    return h;
  }
  const char *home = getenv("CUDA_HOME");
  if (!home || !*home)
    home = "/usr/local/cuda";
  static const char *const rel[] = {
      "extras/CUPTI/lib64/libcupti.so", "extras/CUPTI/lib64/libcupti.so.13",
      "lib64/libcupti.so", "lib64/libcupti.so.13"};
  char path[512];
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", home, rel[i]);
    void *h = open_lib(path);
    if (h)
      return h;
  }
  static const char *const plain[] = {"libcupti.so.13", "libcupti.so"};
  for (size_t i = 0; i < 2; i++) {
    void *h = open_lib(plain[i]);
    if (h)
      return h;
  }
  snprintf(api_why, sizeof api_why,
           "libcupti not found (tried $PHASEPROBE_LIBCUPTI, "
           "%s/extras/CUPTI/lib64, %s/lib64, libcupti.so.13, libcupti.so): "
           "%s; set PHASEPROBE_LIBCUPTI=<path to libcupti.so>",
           home, home, dlerror());
  return NULL;
}

static int resolve_all(void *h) {
  void *p;
#define PP_CUPTI_RESOLVE_(field, sym, args, req)                               \
  p = dlsym(h, sym);                                                           \
  if (!p && req) {                                                             \
    snprintf(api_why, sizeof api_why, "%s lacks %s: too old a CUPTI",          \
             api.path, sym);                                                   \
    return -1;                                                                 \
  }                                                                            \
  api.field = (pp_cupti_##field##_fn)p;
  PP_CUPTI_ENTRIES(PP_CUPTI_RESOLVE_)
#undef PP_CUPTI_RESOLVE_
  return 0;
}

static void load_once(void) {
  void *h = find_lib();
  if (!h)
    return;
  if (resolve_all(h) != 0) {
    dlclose(h);
    return;
  }
  uint32_t v = 0;
  if (api.GetVersion(&v) != CUPTI_SUCCESS || v < PP_CUPTI_MIN_VERSION) {
    snprintf(api_why, sizeof api_why,
             "%s reports CUPTI API version %u; phaseprobe reads kernel "
             "records of version %u (CUDA 11.0) or newer",
             api.path, v, PP_CUPTI_MIN_VERSION);
    dlclose(h);
    return;
  }
  api.version = v;
  api_ok = 1; /* the library stays loaded for the life of the process */
}

PP_EXPORT int pp_cupti_load(char *why, size_t whylen) {
  pthread_once(&api_once, load_once);
  if (api_ok)
    return 0;
  return pp_fail(why, whylen, "%s", api_why);
}

const pp_cupti_api *pp_cupti_lib(void) { return api_ok ? &api : NULL; }

PP_EXPORT const char *pp_cupti_path(void) { return api_ok ? api.path : ""; }
PP_EXPORT uint32_t pp_cupti_version(void) { return api_ok ? api.version : 0; }

void pp_cupti_why(char *why, size_t len, const char *call, CUptiResult rc) {
  const char *name = NULL, *msg = NULL;
  if (api.GetResultString(rc, &name) != CUPTI_SUCCESS || !name)
    name = "CUPTI_ERROR_UNKNOWN";
  if (api.GetErrorMessage && api.GetErrorMessage(rc, &msg) != CUPTI_SUCCESS)
    msg = NULL;
  if (msg && *msg && strcmp(msg, name) != 0)
    pp_fail(why, len, "%s: %s (%d, %s)", call, name, (int)rc, msg);
  else
    pp_fail(why, len, "%s: %s (%d)", call, name, (int)rc);
}

PP_EXPORT int pp_cupti_available(char *why, size_t whylen) {
  if (pp_cupti_load(why, whylen) != 0)
    return 0;
  char cwhy[384];
  if (!pp_cuda_load(cwhy, sizeof cwhy)) {
    pp_fail(why, whylen, "CUPTI (%s) needs the CUDA driver: %s", api.path,
            cwhy);
    return 0;
  }
  return 1;
}

#else /* no CUPTI headers at build time */

PP_EXPORT int pp_cupti_load(char *why, size_t whylen) {
  return pp_fail(why, whylen, "%s", PP_CUPTI_ABSENT_WHY);
}
PP_EXPORT int pp_cupti_available(char *why, size_t whylen) {
  pp_fail(why, whylen, "%s", PP_CUPTI_ABSENT_WHY);
  return 0;
}
PP_EXPORT const char *pp_cupti_path(void) { return ""; }
PP_EXPORT uint32_t pp_cupti_version(void) { return 0; }

#endif
