// spin.cu: a kernel that busy-waits for a fixed amount of device time, used
// to check the timed window (kernel_ns of a known-length kernel).
//
//   spin(amount, mode, out)
//     mode 0: wait `amount` nanoseconds of %globaltimer
//     mode 1: wait `amount` SM clock cycles of clock64()
//   Thread 0 of block 0 writes the number of loop turns to out[0] (when out
//   is not null), so the loop cannot be removed and the caller can see it ran.
extern "C" __global__ void spin(unsigned long long amount, unsigned int mode,
                                unsigned long long *out) {
  unsigned long long turns = 0;
  if (mode == 0) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
      turns++;
    } while (now - start < amount);
  } else {
    long long start = clock64();
    while ((unsigned long long)(clock64() - start) < amount)
      turns++;
  }
  if (out && blockIdx.x == 0 && threadIdx.x == 0)
    out[0] = turns;
}
