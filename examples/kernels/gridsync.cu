// gridsync.cu: a cooperative kernel that synchronises the whole grid three
// times (cg::this_grid().sync()); it must be launched with
// cuLaunchCooperativeKernel.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void three_phase(float *data, float *sums, int n) {
  cg::grid_group grid = cg::this_grid();
  unsigned int i = grid.thread_rank();
  unsigned int stride = grid.size();
  for (unsigned int k = i; k < (unsigned int)n; k += stride)
    data[k] *= 2.0f;
  grid.sync();
  if (i < gridDim.x)
    sums[i] = data[i * (n / gridDim.x)];
  grid.sync();
  if (i == 0) {
    float s = 0.0f;
    for (unsigned int b = 0; b < gridDim.x; b++)
      s += sums[b];
    sums[0] = s;
  }
  grid.sync();
  for (unsigned int k = i; k < (unsigned int)n; k += stride)
    data[k] -= sums[0] / (float)n;
}
