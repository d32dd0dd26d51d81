// sin_half.hip: y = sin(x) on half data, HIP, kernel named `sin`. Converts through float
// (__half2float / __float2half), the usual way to call the float math functions on halves.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

#define THREADS 256

__global__ void sin(const __half* x, __half* y, int n)
{
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n) return;
    float v = __half2float(x[i]);
    y[i] = __float2half(sinf(v));
}
