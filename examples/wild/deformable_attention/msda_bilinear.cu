// msda_bilinear.cu: multi-scale deformable attention forward (Deformable DETR, batch 1) in the
// mmcv/PyTorch-extension style: a CUDA_KERNEL_LOOP grid-stride macro over (query, head, channel),
// a __device__ bilinear-sampling helper with an early return for points wholly outside the level
// and per-corner bounds checks (zero padding), levels described by spatial_shapes/level_start.
#include <cuda_runtime.h>

#define CUDA_KERNEL_LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
#define CUDA_NUM_THREADS 256

__device__ float bilinear(const float* v, int H, int W, int nheads, int dh, float h, float w, int head, int c)
{
    if (h <= -1.0f || w <= -1.0f || h >= H || w >= W)
        return 0.0f;
    int h0 = (int)floorf(h), w0 = (int)floorf(w);
    int h1 = h0 + 1, w1 = w0 + 1;
    float lh = h - h0, lw = w - w0, hh = 1.0f - lh, hw = 1.0f - lw;
    int stride_w = nheads * dh, stride_h = W * stride_w, base = head * dh + c;
    float v1 = 0.0f, v2 = 0.0f, v3 = 0.0f, v4 = 0.0f;
    if (h0 >= 0 && w0 >= 0) v1 = v[h0 * stride_h + w0 * stride_w + base];
    if (h0 >= 0 && w1 <= W - 1) v2 = v[h0 * stride_h + w1 * stride_w + base];
    if (h1 <= H - 1 && w0 >= 0) v3 = v[h1 * stride_h + w0 * stride_w + base];
    if (h1 <= H - 1 && w1 <= W - 1) v4 = v[h1 * stride_h + w1 * stride_w + base];
    return hh * hw * v1 + hh * lw * v2 + lh * hw * v3 + lh * lw * v4;
}

__global__ void msda_im2col(const float* value, const int* spatial_shapes, const int* level_start,
                            const float* loc, const float* attn, float* out,
                            int Nv, int Nq, int Hh, int Dh, int L, int P)
{
    CUDA_KERNEL_LOOP(index, Nq * Hh * Dh) {
        int c = index % Dh;
        int head = (index / Dh) % Hh;
        int q = index / (Dh * Hh);
        float acc = 0.0f;
        int a_idx = (q * Hh + head) * L * P;
        for (int l = 0; l < L; ++l) {
            int H = spatial_shapes[2 * l], W = spatial_shapes[2 * l + 1];
            const float* vl = value + (size_t)level_start[l] * Hh * Dh;
            for (int p = 0; p < P; ++p, ++a_idx) {
                float x = loc[2 * a_idx], y = loc[2 * a_idx + 1];
                float h_im = y * H - 0.5f, w_im = x * W - 0.5f;
                acc += attn[a_idx] * bilinear(vl, H, W, Hh, Dh, h_im, w_im, head, c);
            }
        }
        out[index] = acc;
    }
}

void msda_host(const float* value, const int* shapes, const int* starts, const float* loc, const float* attn,
               float* out, int Nv, int Nq, int Hh, int Dh, int L, int P)
{
    float *dv, *dl, *da, *dout;
    int *ds, *dst;
    cudaMalloc(&dv, sizeof(float) * Nv * Hh * Dh);
    cudaMalloc(&ds, sizeof(int) * L * 2);
    cudaMalloc(&dst, sizeof(int) * L);
    cudaMalloc(&dl, sizeof(float) * Nq * Hh * L * P * 2);
    cudaMalloc(&da, sizeof(float) * Nq * Hh * L * P);
    cudaMalloc(&dout, sizeof(float) * Nq * Hh * Dh);
    cudaMemcpy(dv, value, sizeof(float) * Nv * Hh * Dh, cudaMemcpyHostToDevice);
    cudaMemcpy(ds, shapes, sizeof(int) * L * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dst, starts, sizeof(int) * L, cudaMemcpyHostToDevice);
    cudaMemcpy(dl, loc, sizeof(float) * Nq * Hh * L * P * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(da, attn, sizeof(float) * Nq * Hh * L * P, cudaMemcpyHostToDevice);
    int n = Nq * Hh * Dh;
    msda_im2col<<<(n + CUDA_NUM_THREADS - 1) / CUDA_NUM_THREADS, CUDA_NUM_THREADS>>>(dv, ds, dst, dl, da, dout,
                                                                                  Nv, Nq, Hh, Dh, L, P);
    cudaMemcpy(out, dout, sizeof(float) * n, cudaMemcpyDeviceToHost);
    cudaFree(dv);
    cudaFree(ds);
    cudaFree(dst);
    cudaFree(dl);
    cudaFree(da);
    cudaFree(dout);
}
