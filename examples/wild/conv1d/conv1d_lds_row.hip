// conv1d_lds_row.hip: one work-group per (n, oc) output row; the weights of that output
// channel are copied to LDS once (dynamic extern __shared__, C*K floats), then each
// work-item produces outputs along the row with a group-stride loop. Stride 1, no padding.
#include <hip/hip_runtime.h>

__global__ void conv1d_row(const float* x, const float* w, float* y, int C, int L, int OC, int K)
{
    extern __shared__ float wl[];
    const int n = hipBlockIdx_y;
    const int oc = hipBlockIdx_x;
    const int OL = L - K + 1;
    for (int i = hipThreadIdx_x; i < C * K; i += hipBlockDim_x)
        wl[i] = w[oc * C * K + i];
    __syncthreads();
    const float* xn = x + (size_t)n * C * L;
    float* yr = y + ((size_t)n * OC + oc) * OL;
    for (int o = hipThreadIdx_x; o < OL; o += hipBlockDim_x) {
        float s = 0.0f;
        for (int c = 0; c < C; ++c)
            for (int k = 0; k < K; ++k)
                s += xn[c * L + o + k] * wl[c * K + k];
        yr[o] = s;
    }
}

void conv1d_row_host(const float* x, const float* w, float* y, int N, int C, int L, int OC, int K)
{
    int OL = L - K + 1;
    float *dx, *dw, *dy;
    hipMalloc(&dx, sizeof(float) * N * C * L);
    hipMalloc(&dw, sizeof(float) * OC * C * K);
    hipMalloc(&dy, sizeof(float) * N * OC * OL);
    hipMemcpy(dx, x, sizeof(float) * N * C * L, hipMemcpyHostToDevice);
    hipMemcpy(dw, w, sizeof(float) * OC * C * K, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(conv1d_row, dim3(OC, N), dim3(128), C * K * sizeof(float), 0, dx, dw, dy, C, L, OC, K);
    hipMemcpy(y, dy, sizeof(float) * N * OC * OL, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dw);
    hipFree(dy);
}
