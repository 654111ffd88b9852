// trap.cu: writes to a device address the caller chooses; given an address
// that is not mapped (e.g. 16) the launch fails with
// CUDA_ERROR_ILLEGAL_ADDRESS, which leaves the context unusable. Used only
// by the error-path GPU spec, in a subprocess.
extern "C" __global__ void trap_write(unsigned long long addr, int value) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    *(volatile int *)addr = value;
}
