// shared.cu: static and dynamic shared memory with __syncthreads barriers.
extern "C" __global__ void __launch_bounds__(256, 2)
    block_reduce(const float *in, float *out, int n) {
  __shared__ float partial[256];
  extern __shared__ float spill[]; // dynamic: sized at launch
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  float v = i < n ? in[i] : 0.0f;
  partial[t] = v;
  spill[t] = v * v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) {
      partial[t] += partial[t + s];
      spill[t] += spill[t + s];
    }
    __syncthreads();
  }
  if (t == 0) {
    out[2 * blockIdx.x] = partial[0];
    out[2 * blockIdx.x + 1] = spill[0];
  }
}

// A module-scope constant table and a device global, declared by the module.
__constant__ float coeffs[16];
__device__ unsigned int histogram[64];

extern "C" __global__ void block_histogram(const unsigned char *in, int n) {
  __shared__ unsigned int local[64];
  for (int k = threadIdx.x; k < 64; k += blockDim.x)
    local[k] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x)
    atomicAdd(&local[in[i] & 63], (unsigned int)coeffs[in[i] & 15]);
  __syncthreads();
  for (int k = threadIdx.x; k < 64; k += blockDim.x)
    atomicAdd(&histogram[k], local[k]);
}
