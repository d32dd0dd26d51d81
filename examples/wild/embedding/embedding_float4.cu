// embedding_float4.cu: embedding lookup out[t][:] = table[ids[t]][:], 2-D grid (y: token,
// x: chunks of the row), rows copied as float4 (D must be a multiple of 4, checked by the host).
#include <cuda_runtime.h>

__global__ void embed_f4(const int* __restrict__ ids, const float4* __restrict__ table, float4* __restrict__ out,
                         int D4)
{
    int t = blockIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= D4) return;
    int row = ids[t];
    out[(size_t)t * D4 + j] = table[(size_t)row * D4 + j];
}

int embed_f4_host(const int* ids, const float* table, float* out, int T, int V, int D)
{
    if (D % 4 != 0) return -1;
    int* dids;
    float *dtab, *dout;
    cudaMalloc(&dids, sizeof(int) * T);
    cudaMalloc(&dtab, sizeof(float) * V * D);
    cudaMalloc(&dout, sizeof(float) * T * D);
    cudaMemcpy(dids, ids, sizeof(int) * T, cudaMemcpyHostToDevice);
    cudaMemcpy(dtab, table, sizeof(float) * V * D, cudaMemcpyHostToDevice);
    int D4 = D / 4;
    dim3 grid((D4 + 127) / 128, T);
    embed_f4<<<grid, 128>>>(dids, (const float4*)dtab, (float4*)dout, D4);
    cudaMemcpy(out, dout, sizeof(float) * T * D, cudaMemcpyDeviceToHost);
    cudaFree(dids);
    cudaFree(dtab);
    cudaFree(dout);
    return 0;
}
