// add_vec4.cu: c[i] = a[i] + b[i] with 128-bit (float4) loads and stores.
// The body works on n / 4 float4 groups with a grid-stride loop; the last n % 4
// elements (0 to 3 of them) are added one by one by the first threads of the grid.
// cudaMalloc returns 256-byte aligned pointers, so the float4 casts are aligned.
#include <cuda_runtime.h>

#define ADDV_BLOCK 256
#define ADDV_MAX_GRID 32

__global__ void add_vec4(const float* a, const float* b, float* c, int n)
{
    int nvec = n / 4;
    const float4* a4 = (const float4*)a;
    const float4* b4 = (const float4*)b;
    float4* c4 = (float4*)c;
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    int step = blockDim.x * gridDim.x;

    for (int i = tid; i < nvec; i += step) {
        float4 va = a4[i];
        float4 vb = b4[i];
        float4 vc;
        vc.x = va.x + vb.x;
        vc.y = va.y + vb.y;
        vc.z = va.z + vb.z;
        vc.w = va.w + vb.w;
        c4[i] = vc;
    }

    // scalar tail: element 4 * nvec + tid exists only for tid < n % 4
    int t = nvec * 4 + tid;
    if (t < n) {
        c[t] = a[t] + b[t];
    }
}

void add_vec4_host(const float* a, const float* b, float* c, int n)
{
    size_t bytes = (size_t)n * sizeof(float);
    float* d_a;
    float* d_b;
    float* d_c;
    cudaMalloc((void**)&d_a, bytes);
    cudaMalloc((void**)&d_b, bytes);
    cudaMalloc((void**)&d_c, bytes);
    cudaMemcpy(d_a, a, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(d_b, b, bytes, cudaMemcpyHostToDevice);

    // one thread per float4 group (at least one block, so the tail is always covered)
    int groups = n / 4;
    int blocks = (groups + ADDV_BLOCK - 1) / ADDV_BLOCK;
    if (blocks > ADDV_MAX_GRID) blocks = ADDV_MAX_GRID;
    if (blocks < 1) blocks = 1;
    add_vec4<<<blocks, ADDV_BLOCK>>>(d_a, d_b, d_c, n);

    cudaMemcpy(c, d_c, bytes, cudaMemcpyDeviceToHost);
    cudaFree(d_a);
    cudaFree(d_b);
    cudaFree(d_c);
}
