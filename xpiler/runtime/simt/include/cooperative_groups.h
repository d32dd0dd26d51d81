/* xpiler SIMT emulator: the commonly used part of CUDA's cooperative groups.
 * thread_block, thread_block_tile<N> (N a power of two <= warpSize) with sync, shfl, shfl_up/down/xor, ballot, any, all;
 * tiled_partition<N>, reduce() with plus/less/greater/bit_*; grid-wide sync is not emulated
 * (blocks run one after another) and reports XP3011. */
#ifndef XPS_COOPERATIVE_GROUPS_H
#define XPS_COOPERATIVE_GROUPS_H
#include "../xp_simt.h"

namespace cooperative_groups {

struct thread_block {
  void sync(XPS_SITE) const { ::xps::block_barrier("thread_block::sync()", XPS_SITE_FWD); }
  unsigned thread_rank() const { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
  unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
  unsigned num_threads() const { return size(); }
  dim3 group_index() const { return dim3(blockIdx); }
  dim3 thread_index() const { return dim3(threadIdx); }
  dim3 group_dim() const { return blockDim; }
  dim3 dim_threads() const { return blockDim; }
};
inline thread_block this_thread_block() { return thread_block(); }
inline void sync(const thread_block &b, XPS_SITE) { ::xps::block_barrier("cooperative_groups::sync()", XPS_SITE_FWD); (void)b; }

struct grid_group {
  void sync(XPS_SITE) const {
    ::xps::fatal("XP3011", "grid-wide synchronisation (grid_group::sync at %s:%d) is not supported by the emulator", xps_file, xps_line);
  }
  unsigned long long size() const { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z; }
  unsigned long long thread_rank() const {
    unsigned long long b = blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    return b * blockDim.x * blockDim.y * blockDim.z + this_thread_block().thread_rank();
  }
};
inline grid_group this_grid() { return grid_group(); }

template <unsigned N> struct thread_block_tile {
  static_assert(N >= 1 && N <= XPS_WAVE && (N & (N - 1)) == 0, "tile size must be a power of two <= warpSize");
  static unsigned lin() { return this_thread_block().thread_rank(); }
  static unsigned long long mask() {
    unsigned base = (lin() % XPS_WAVE) / N * N;
    unsigned long long m = N == 64 ? ~0ull : ((1ull << N) - 1) << base;
    return m & ::xps::g.warps[::xps::g.cur->warp].exist;
  }
  unsigned thread_rank() const { return lin() % N; }
  static constexpr unsigned size() { return N; }
  static constexpr unsigned num_threads() { return N; }
  unsigned meta_group_rank() const { return lin() / N; }
  unsigned meta_group_size() const { return (this_thread_block().size() + N - 1) / N; }
  void sync(XPS_SITE) const { ::xps::warp_barrier(mask(), "thread_block_tile::sync()", XPS_SITE_FWD); }
  template <class T> T shfl(T v, int src, XPS_SITE) const {
    return ::xps::shfl(mask(), v, ::xps::SH_IDX, src, (int)N, "thread_block_tile::shfl", XPS_SITE_FWD);
  }
  template <class T> T shfl_down(T v, unsigned d, XPS_SITE) const {
    return ::xps::shfl(mask(), v, ::xps::SH_DOWN, (int)d, (int)N, "thread_block_tile::shfl_down", XPS_SITE_FWD);
  }
  template <class T> T shfl_up(T v, unsigned d, XPS_SITE) const {
    return ::xps::shfl(mask(), v, ::xps::SH_UP, (int)d, (int)N, "thread_block_tile::shfl_up", XPS_SITE_FWD);
  }
  template <class T> T shfl_xor(T v, int m, XPS_SITE) const {
    return ::xps::shfl(mask(), v, ::xps::SH_XOR, m, (int)N, "thread_block_tile::shfl_xor", XPS_SITE_FWD);
  }
  unsigned long long ballot(int p, XPS_SITE) const {
    unsigned base = (lin() % XPS_WAVE) / N * N;
    return ::xps::ballot(mask(), p, "thread_block_tile::ballot", XPS_SITE_FWD) >> base;
  }
  int any(int p, XPS_SITE) const { return ::xps::ballot(mask(), p, "thread_block_tile::any", XPS_SITE_FWD) != 0; }
  int all(int p, XPS_SITE) const {
    unsigned long long m = mask() & ::xps::g.warps[::xps::g.cur->warp].live;
    return ::xps::ballot(mask(), p, "thread_block_tile::all", XPS_SITE_FWD) == m;
  }
};
template <unsigned N, class Parent> inline thread_block_tile<N> tiled_partition(const Parent &) { return thread_block_tile<N>(); }
template <unsigned N> inline void sync(const thread_block_tile<N> &t, XPS_SITE) { t.sync(XPS_SITE_FWD); }

template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };

template <unsigned N, class T, class Op> inline T reduce(const thread_block_tile<N> &t, T v, Op op, XPS_SITE) {
  return ::xps::warp_reduce(t.mask(), v, op, "cooperative_groups::reduce", XPS_SITE_FWD);
}
} // namespace cooperative_groups
#endif
