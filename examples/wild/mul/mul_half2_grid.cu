// mul_half2_grid.cu: elementwise product on fp16 with __hmul2, grid-stride over pairs;
// an odd last element is done by thread 0 of block 0 with __hmul.
#include <cuda_fp16.h>

__global__ void mul_h2(const __half* a, const __half* b, __half* c, int n)
{
    const __half2* a2 = (const __half2*)a;
    const __half2* b2 = (const __half2*)b;
    __half2* c2 = (__half2*)c;
    int pairs = n / 2;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += blockDim.x * gridDim.x)
        c2[i] = __hmul2(a2[i], b2[i]);
    if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0)
        c[n - 1] = __hmul(a[n - 1], b[n - 1]);
}

void mul_h2_host(const __half* a, const __half* b, __half* c, int n)
{
    __half *da, *db, *dc;
    cudaMalloc(&da, n * sizeof(__half));
    cudaMalloc(&db, n * sizeof(__half));
    cudaMalloc(&dc, n * sizeof(__half));
    cudaMemcpy(da, a, n * sizeof(__half), cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, n * sizeof(__half), cudaMemcpyHostToDevice);
    mul_h2<<<16, 256>>>(da, db, dc, n);
    cudaMemcpy(c, dc, n * sizeof(__half), cudaMemcpyDeviceToHost);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
}
