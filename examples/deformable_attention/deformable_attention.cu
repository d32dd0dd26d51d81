// Multi-scale deformable attention sampling (Deformable DETR), batch 1, CUDA.
//   value [Nv][Hh][Dh], spatial_shapes [L][2] = (H_l, W_l), level_start [L],
//   loc [Nq][Hh][L][P][2] normalised (x, y), attn [Nq][Hh][L][P], out [Nq][Hh*Dh].
// One thread per output element (query q, head h, channel d): neighbouring threads are
// neighbouring channels, so the four value reads of every bilinear tap are coalesced.
// align_corners = False: px = x*W - 0.5, py = y*H - 0.5; taps outside the grid read zero.
#include <cuda_runtime.h>

// One bilinear tap: the value of (level start, row yi, column xi) or 0 outside the grid.
__device__ float tap(const float *value, int start, int hl, int wl, int yi, int xi,
                     int h, int Hh, int Dh, int d)
{
    if (xi < 0 || xi >= wl || yi < 0 || yi >= hl)
        return 0.0f;
    long cell = (long)start + (long)yi * wl + xi;
    return value[(cell * Hh + h) * Dh + d];
}

__global__ void deformable_attention(const float *value, const int *spatial_shapes,
                                     const int *level_start, const float *loc, const float *attn,
                                     float *out, int Nv, int Nq, int Hh, int Dh, int L, int P)
{
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)Nq * Hh * Dh)
        return;
    int d = idx % Dh;
    int h = (idx / Dh) % Hh;
    int q = idx / ((long)Dh * Hh);

    float acc = 0.0f;
    for (int l = 0; l < L; ++l) {
        int hl = spatial_shapes[2 * l];
        int wl = spatial_shapes[2 * l + 1];
        int start = level_start[l];
        for (int p = 0; p < P; ++p) {
            long sp = (((long)q * Hh + h) * L + l) * P + p;   // sampling point index
            float px = loc[2 * sp] * (float)wl - 0.5f;
            float py = loc[2 * sp + 1] * (float)hl - 0.5f;
            int x0 = (int)floorf(px);
            int y0 = (int)floorf(py);
            float fx = px - (float)x0;
            float fy = py - (float)y0;
            float v = (1.0f - fy) * ((1.0f - fx) * tap(value, start, hl, wl, y0, x0, h, Hh, Dh, d)
                                     + fx * tap(value, start, hl, wl, y0, x0 + 1, h, Hh, Dh, d))
                    + fy * ((1.0f - fx) * tap(value, start, hl, wl, y0 + 1, x0, h, Hh, Dh, d)
                            + fx * tap(value, start, hl, wl, y0 + 1, x0 + 1, h, Hh, Dh, d));
            acc += attn[sp] * v;
        }
    }
    out[idx] = acc;                       // out[q][h*Dh + d] is exactly element idx
}

void deformable_attention_host(const float *value, const int *spatial_shapes, const int *level_start,
                               const float *loc, const float *attn, float *out,
                               int Nv, int Nq, int Hh, int Dh, int L, int P)
{
    size_t vbytes = sizeof(float) * (size_t)Nv * Hh * Dh;
    size_t sbytes = sizeof(int) * (size_t)L * 2;
    size_t lbytes = sizeof(int) * (size_t)L;
    size_t abytes = sizeof(float) * (size_t)Nq * Hh * L * P;
    size_t obytes = sizeof(float) * (size_t)Nq * Hh * Dh;
    float *dvalue, *dloc, *dattn, *dout;
    int *dshapes, *dstart;
    cudaMalloc((void **)&dvalue, vbytes);
    cudaMalloc((void **)&dshapes, sbytes);
    cudaMalloc((void **)&dstart, lbytes);
    cudaMalloc((void **)&dloc, abytes * 2);
    cudaMalloc((void **)&dattn, abytes);
    cudaMalloc((void **)&dout, obytes);
    cudaMemcpy(dvalue, value, vbytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dshapes, spatial_shapes, sbytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dstart, level_start, lbytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dloc, loc, abytes * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dattn, attn, abytes, cudaMemcpyHostToDevice);
    int total = Nq * Hh * Dh;
    deformable_attention<<<(total + 127) / 128, 128>>>(dvalue, dshapes, dstart, dloc, dattn, dout,
                                                       Nv, Nq, Hh, Dh, L, P);
    cudaDeviceSynchronize();
    cudaMemcpy(out, dout, obytes, cudaMemcpyDeviceToHost);
    cudaFree(dvalue);
    cudaFree(dshapes);
    cudaFree(dstart);
    cudaFree(dloc);
    cudaFree(dattn);
    cudaFree(dout);
}
