/* hip_on_cuda.h -- compile HIP kernels with nvcc for an NVIDIA GPU.
 *
 * Maps the HIP runtime and device names that our HIP kernels use onto CUDA.  The Debian HIP
 * packages' own NVIDIA back end (HIP 5.2) does not compile against CUDA 13, hence this small
 * header.  AMD-only builtins (__builtin_amdgcn_*, MFMA) have no NVIDIA equivalent: kernels that
 * use them run only on the emulator.  Wave size: NVIDIA warps have 32 lanes, so code that
 * hard-codes 64-lane wavefronts (instead of using warpSize) is not portable to this path.
 */
#ifndef XP_HIP_ON_CUDA_H
#define XP_HIP_ON_CUDA_H
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define __HIP_PLATFORM_NVIDIA__ 1
#define HIP_ON_CUDA_XPILER 1

typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaMemcpyKind hipMemcpyKind;
typedef cudaDeviceProp hipDeviceProp_t;
typedef __nv_bfloat16 hip_bfloat16;
typedef __nv_bfloat16 __hip_bfloat16;

#define hipSuccess cudaSuccess
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipMemcpyHostToHost cudaMemcpyHostToHost
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyDefault cudaMemcpyDefault
#define hipStreamDefault cudaStreamDefault
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipEventDefault cudaEventDefault

#define hipMalloc cudaMalloc
#define hipMallocManaged cudaMallocManaged
#define hipHostMalloc(p, n, ...) cudaMallocHost(p, n)
#define hipFree cudaFree
#define hipHostFree cudaFreeHost
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemset cudaMemset
#define hipMemsetAsync cudaMemsetAsync
#define hipMemcpyToSymbol cudaMemcpyToSymbol
#define hipMemcpyFromSymbol cudaMemcpyFromSymbol
#define hipMemcpyHtoD(d, s, n) cudaMemcpy(d, s, n, cudaMemcpyHostToDevice)
#define hipMemcpyDtoH(d, s, n) cudaMemcpy(d, s, n, cudaMemcpyDeviceToHost)
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipDeviceReset cudaDeviceReset
#define hipSetDevice cudaSetDevice
#define hipGetDevice cudaGetDevice
#define hipGetDeviceCount cudaGetDeviceCount
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipStreamCreate cudaStreamCreate
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipEventCreate cudaEventCreate
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipEventDestroy cudaEventDestroy
#define hipFuncSetAttribute(f, a, v) cudaFuncSetAttribute(f, a, v)

#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define HIP_SYMBOL(x) x
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_DYNAMIC_SHARED_ATTRIBUTE
#define hipLaunchKernelGGL(K, G, B, SH, ST, ...) K<<<(G), (B), (SH), (ST)>>>(__VA_ARGS__)

#define hipThreadIdx_x (threadIdx.x)
#define hipThreadIdx_y (threadIdx.y)
#define hipThreadIdx_z (threadIdx.z)
#define hipBlockIdx_x (blockIdx.x)
#define hipBlockIdx_y (blockIdx.y)
#define hipBlockIdx_z (blockIdx.z)
#define hipBlockDim_x (blockDim.x)
#define hipBlockDim_y (blockDim.y)
#define hipBlockDim_z (blockDim.z)
#define hipGridDim_x (gridDim.x)
#define hipGridDim_y (gridDim.y)
#define hipGridDim_z (gridDim.z)

/* HIP's mask-less warp functions = the whole (32-lane) warp.  Macros, because CUDA still
 * declares deprecated mask-less __shfl/__ballot/__any/__all that sm_70+ rejects. */
#define __shfl(v, s, ...) __shfl_sync(0xffffffffu, v, s, ##__VA_ARGS__)
#define __shfl_up(v, d, ...) __shfl_up_sync(0xffffffffu, v, d, ##__VA_ARGS__)
#define __shfl_down(v, d, ...) __shfl_down_sync(0xffffffffu, v, d, ##__VA_ARGS__)
#define __shfl_xor(v, m, ...) __shfl_xor_sync(0xffffffffu, v, m, ##__VA_ARGS__)
#define __ballot(p) ((unsigned long long)__ballot_sync(0xffffffffu, (p)))
#define __any(p) __any_sync(0xffffffffu, (p))
#define __all(p) __all_sync(0xffffffffu, (p))
__device__ __forceinline__ unsigned __lane_id() { return threadIdx.x % 32u; }
#endif
