// coopsum.cu: a cooperative kernel that needs a grid-wide barrier. Every
// thread adds its elements of `in` (grid-stride) into its block's slot of
// `partial`; after grid.sync() block 0 adds the partials into out[0]. A grid
// that is not co-resident would deadlock here, which is why it is launched
// with cuLaunchCooperativeKernel.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void coopsum(const unsigned int *in, unsigned int n,
                                   unsigned long long *partial,
                                   unsigned long long *out) {
  cg::grid_group grid = cg::this_grid();
  __shared__ unsigned long long acc;
  if (threadIdx.x == 0)
    acc = 0;
  __syncthreads();
  unsigned long long mine = 0;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x)
    mine += in[i];
  atomicAdd(&acc, mine);
  __syncthreads();
  if (threadIdx.x == 0)
    partial[blockIdx.x] = acc;
  grid.sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned long long total = 0;
    for (unsigned int b = 0; b < gridDim.x; b++)
      total += partial[b];
    out[0] = total;
  }
}
