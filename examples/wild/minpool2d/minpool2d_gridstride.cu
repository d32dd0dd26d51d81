// minpool2d_gridstride.cu: NCHW min pooling, window k x k and stride s as parameters,
// grid-stride loop with a fixed grid, FLT_MAX as the start value, fminf.
#include <cfloat>
#include <cuda_runtime.h>

__global__ void min_pool2d(const float* __restrict__ in, float* __restrict__ out, int planes, int H, int W,
                           int k, int s, int OH, int OW)
{
    int total = planes * OH * OW;
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += blockDim.x * gridDim.x) {
        int ow = idx % OW;
        int t = idx / OW;
        int oh = t % OH;
        int pl = t / OH;
        const float* src = in + (size_t)pl * H * W + (oh * s) * W + ow * s;
        float m = FLT_MAX;
        for (int i = 0; i < k; ++i)
            for (int j = 0; j < k; ++j)
                m = fminf(m, src[i * W + j]);
        out[idx] = m;
    }
}

void min_pool2d_host(const float* in, float* out, int N, int C, int H, int W, int k, int s)
{
    int OH = (H - k) / s + 1, OW = (W - k) / s + 1, planes = N * C;
    float *di, *dout;
    cudaMalloc(&di, sizeof(float) * planes * H * W);
    cudaMalloc(&dout, sizeof(float) * planes * OH * OW);
    cudaMemcpy(di, in, sizeof(float) * planes * H * W, cudaMemcpyHostToDevice);
    min_pool2d<<<64, 256>>>(di, dout, planes, H, W, k, s, OH, OW);
    cudaMemcpy(out, dout, sizeof(float) * planes * OH * OW, cudaMemcpyDeviceToHost);
    cudaFree(di);
    cudaFree(dout);
}
