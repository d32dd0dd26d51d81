// mul_int8_sat.hip: int8 x int8 elementwise product requantized with a right shift and
// saturated to [-128, 127], a typical quantized-inference helper. Work-items read
// hipThreadIdx_x; the shift is a scalar kernel parameter.
#include <hip/hip_runtime.h>
#include <stdint.h>

__device__ __forceinline__ int8_t sat_i8(int v)
{
    return (int8_t)(v > 127 ? 127 : (v < -128 ? -128 : v));
}

__global__ void mul_i8(const int8_t* __restrict__ a, const int8_t* __restrict__ b,
                       int8_t* __restrict__ c, int n, int shift)
{
    int i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;
    if (i >= n) return;
    int p = (int)a[i] * (int)b[i];
    c[i] = sat_i8(p >> shift);
}

void mul_i8_host(const int8_t* a, const int8_t* b, int8_t* c, int n, int shift)
{
    int8_t *da, *db, *dc;
    hipMalloc(&da, n);
    hipMalloc(&db, n);
    hipMalloc(&dc, n);
    hipMemcpy(da, a, n, hipMemcpyHostToDevice);
    hipMemcpy(db, b, n, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(mul_i8, dim3((n + 255) / 256), dim3(256), 0, 0, da, db, dc, n, shift);
    hipMemcpy(c, dc, n, hipMemcpyDeviceToHost);
    hipFree(da);
    hipFree(db);
    hipFree(dc);
}
