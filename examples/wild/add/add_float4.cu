// add_float4.cu: c = a + b with float4 vector loads/stores for the bulk and a scalar loop for
// the n % 4 tail; the tail is done by the first few threads of block 0.
#include <cuda_runtime.h>

__global__ void add_vec4_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                float* __restrict__ c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = n >> 2;
    if (i < n4) {
        float4 va = reinterpret_cast<const float4*>(a)[i];
        float4 vb = reinterpret_cast<const float4*>(b)[i];
        float4 vc;
        vc.x = va.x + vb.x;
        vc.y = va.y + vb.y;
        vc.z = va.z + vb.z;
        vc.w = va.w + vb.w;
        reinterpret_cast<float4*>(c)[i] = vc;
    }
    int t = (n4 << 2) + i;
    if (blockIdx.x == 0 && t < n && i < 4)
        c[t] = a[t] + b[t];
}

void add_vec4_host(const float* a, const float* b, float* c, int n)
{
    float *da, *db, *dc;
    cudaMalloc(&da, n * sizeof(float));
    cudaMalloc(&db, n * sizeof(float));
    cudaMalloc(&dc, n * sizeof(float));
    cudaMemcpy(da, a, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, n * sizeof(float), cudaMemcpyHostToDevice);
    int threads = 256;
    int blocks = (n / 4 + threads - 1) / threads;
    if (blocks == 0) blocks = 1;
    add_vec4_kernel<<<blocks, threads>>>(da, db, dc, n);
    cudaMemcpy(c, dc, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
}
