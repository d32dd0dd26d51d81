// Cooperative groups: a 32-wide tile reduce and concurrent 16-wide tiles (two masks per warp).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdio>
namespace cg = cooperative_groups;
__global__ void k(const float* x, float* out, float* out2) {
  cg::thread_block b = cg::this_thread_block();
  cg::thread_block_tile<32> w = cg::tiled_partition<32>(b);
  float v = x[b.thread_rank()];
  float s = cg::reduce(w, v, cg::plus<float>());
  float m = v;
  for (int o = 8; o > 0; o >>= 1) m = fmaxf(m, cg::tiled_partition<16>(b).shfl_xor(m, o));
  b.sync();
  if (w.thread_rank() == 0) out[w.meta_group_rank()] = s;
  out2[b.thread_rank()] = m;
}
