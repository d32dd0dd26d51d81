// Atomics from every thread: histogram (atomicAdd int), float sum (atomicAdd float),
// max/min (int), a CAS-built float max, and bit ops; stats[] gathers the scalar results.
#include <cuda_runtime.h>
__device__ float atomic_max_float(float* addr, float v) {
  int* ia = (int*)addr;
  int old = *ia, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= v) break;
    old = atomicCAS(ia, assumed, __float_as_int(v));
  } while (old != assumed);
  return __int_as_float(old);
}
__global__ void atomics(const int* keys, const float* vals, int* hist, float* fstats, int* istats, int n, int nbins) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(&hist[keys[i] % nbins], 1);
  atomicAdd(&fstats[0], vals[i]);
  atomic_max_float(&fstats[1], vals[i]);
  atomicMax(&istats[0], keys[i]);
  atomicMin(&istats[1], keys[i]);
  atomicOr(&istats[2], 1 << (keys[i] % 31));
  atomicAnd(&istats[3], ~(1 << (keys[i] % 31)));
  atomicSub(&istats[4], 2);
  atomicExch(&istats[5], 7);
  atomicInc((unsigned*)&istats[6], 1000000);
}
