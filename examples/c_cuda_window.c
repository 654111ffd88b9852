/*
 * c_cuda_window.c: the timed dispatch window from C (pp_cuda.h), no Lua.
 *
 * Loads the driver at run time, launches the spin kernel three times inside
 * a window with a host gap injected before the loop, and emits one probe
 * record carrying device_window_ns and kernel_ns. Prints the figures on
 * stdout; the record's line goes to stderr.
 *
 *   build/c_cuda_window [spin_ns] [host_gap_ns]     (from the repository root)
 */
#include "phaseprobe.h"
#include "pp_cuda.h"

#include <stdio.h>
#include <stdlib.h>

static void check(CUresult rc, const char *call) {
  if (rc == CUDA_SUCCESS)
    return;
  char msg[512];
  pp_cuda_format_error(msg, sizeof msg, call, rc);
  fprintf(stderr, "c_cuda_window: %s\n", msg);
  exit(1);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (s && fread(s, 1, (size_t)n, f) == (size_t)n)
    s[n] = 0;
  else {
    free(s);
    s = NULL;
  }
  fclose(f);
  return s;
}

int main(int argc, char **argv) {
  unsigned long long amount = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
  uint64_t gap = argc > 2 ? strtoull(argv[2], NULL, 10) : 50000;
  char why[512];
  const pp_cuda_api *cu = pp_cuda_load(why, sizeof why);
  if (!cu) {
    fprintf(stderr, "c_cuda_window: CUDA is not available: %s\n", why);
    return 2;
  }
  char *ptx = read_file("examples/kernels/spin.ptx");
  if (!ptx) {
    fprintf(stderr, "c_cuda_window: cannot read examples/kernels/spin.ptx\n");
    return 1;
  }
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUdeviceptr out;
  check(cu->DeviceGet(&dev, 0), "cuDeviceGet");
  check(cu->DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cu->CtxSetCurrent(ctx), "cuCtxSetCurrent");
  check(cu->ModuleLoadDataEx(&mod, ptx, 0, NULL, NULL), "cuModuleLoadDataEx");
  check(cu->ModuleGetFunction(&fn, mod, "spin"), "cuModuleGetFunction");
  check(cu->MemAlloc(&out, 8), "cuMemAlloc");

  unsigned mode = 0; /* %globaltimer */
  void *params[] = {&amount, &mode, &out};
  pp_cuda_launch_cfg cfg = {.fn = fn, .grid = {1, 1, 1}, .block = {32, 1, 1},
                            .params = params};
  pp_cuda_reset reset = {.ptr = out, .bytes = 8, .value = 0};
  pp_cuda_event_pool *pool = pp_cuda_event_pool_new();

  pp_set_enabled(1);
  pp_begin();
  pp_cuda_window w;
  check(pp_cuda_window_open(&w, pool, NULL), w.failed);
  pp_cuda_spin_ns(gap);
  pp_ticks t = pp_mark();
  check(pp_cuda_window_launch_loop(&w, &cfg, 3, &reset), w.failed);
  pp_charge(PP_LAUNCH, t);
  check(pp_cuda_window_close(&w), w.failed);
  uint64_t window_ns = 0, kernel_ns = 0;
  check(pp_cuda_window_collect(&w, &window_ns, &kernel_ns), w.failed);
  pp_end();
  pp_record rec;
  pp_emit(NULL, &rec);

  printf("window_ns=%llu kernel_ns=%llu gap_ns=%llu\n",
         (unsigned long long)window_ns, (unsigned long long)kernel_ns,
         (unsigned long long)(window_ns - kernel_ns));
  printf("record device_window_ns=%llu kernel_ns=%llu probe_ns=%llu "
         "kernel_src=%llu\n",
         (unsigned long long)pp_record_get(&rec, "device_window_ns", NULL),
         (unsigned long long)pp_record_get(&rec, "kernel_ns", NULL),
         (unsigned long long)pp_record_get(&rec, "probe_ns", NULL),
         (unsigned long long)pp_record_get(&rec, "kernel_src", NULL));
  printf("events created=%zu idle=%zu\n", pp_cuda_event_pool_created(pool),
         pp_cuda_event_pool_idle(pool));

  pp_cuda_event_pool_free(pool);
  check(cu->MemFree(out), "cuMemFree");
  check(cu->ModuleUnload(mod), "cuModuleUnload");
  check(cu->DevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
  free(ptx);
  return 0;
}
