// Multi-scale deformable attention sampling (Deformable DETR), batch 1, HIP.
//   value [Nv][Hh][Dh], spatial_shapes [L][2] = (H_l, W_l), level_start [L],
//   loc [Nq][Hh][L][P][2] normalised (x, y), attn [Nq][Hh][L][P], out [Nq][Hh*Dh].
// One thread per (query, head, channel), channel fastest. Per sampling point the four
// neighbour weights are formed first, each zeroed when its tap falls outside the level
// (align_corners = False: px = x*W - 0.5), and out-of-grid indices are clamped so the
// loads stay in bounds without branches.
#include <hip/hip_runtime.h>

__global__ void deformable_attention(const float *value, const int *spatial_shapes,
                                     const int *level_start, const float *loc, const float *attn,
                                     float *out, int Nv, int Nq, int Hh, int Dh, int L, int P)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= Nq * Hh * Dh)
        return;
    int d = idx % Dh;
    int qh = idx / Dh;                    // = q * Hh + h
    int h = qh % Hh;

    float acc = 0.0f;
    for (int l = 0; l < L; ++l) {
        int hl = spatial_shapes[2 * l];
        int wl = spatial_shapes[2 * l + 1];
        const float *lvl = value + (long)level_start[l] * Hh * Dh + (long)h * Dh + d;
        for (int p = 0; p < P; ++p) {
            int sp = (qh * L + l) * P + p;
            float px = loc[2 * sp] * (float)wl - 0.5f;
            float py = loc[2 * sp + 1] * (float)hl - 0.5f;
            float fx0 = floorf(px);
            float fy0 = floorf(py);
            int x0 = (int)fx0;
            int y0 = (int)fy0;
            float ax = px - fx0;          // weight of column x0 + 1
            float ay = py - fy0;          // weight of row y0 + 1

            // validity of the two columns and two rows, as 0/1 factors
            float cx0 = (x0 >= 0 && x0 < wl) ? 1.0f : 0.0f;
            float cx1 = (x0 + 1 >= 0 && x0 + 1 < wl) ? 1.0f : 0.0f;
            float cy0 = (y0 >= 0 && y0 < hl) ? 1.0f : 0.0f;
            float cy1 = (y0 + 1 >= 0 && y0 + 1 < hl) ? 1.0f : 0.0f;
            int xa = min(max(x0, 0), wl - 1);
            int xb = min(max(x0 + 1, 0), wl - 1);
            int ya = min(max(y0, 0), hl - 1);
            int yb = min(max(y0 + 1, 0), hl - 1);
            long row_stride = (long)wl * Hh * Dh;
            long col_stride = (long)Hh * Dh;

            float v00 = lvl[ya * row_stride + xa * col_stride];
            float v01 = lvl[ya * row_stride + xb * col_stride];
            float v10 = lvl[yb * row_stride + xa * col_stride];
            float v11 = lvl[yb * row_stride + xb * col_stride];
            float sample = (1.0f - ay) * cy0 * ((1.0f - ax) * cx0 * v00 + ax * cx1 * v01)
                         + ay * cy1 * ((1.0f - ax) * cx0 * v10 + ax * cx1 * v11);
            acc += attn[sp] * sample;
        }
    }
    out[idx] = acc;
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
    hipMalloc((void **)&dvalue, vbytes);
    hipMalloc((void **)&dshapes, sbytes);
    hipMalloc((void **)&dstart, lbytes);
    hipMalloc((void **)&dloc, abytes * 2);
    hipMalloc((void **)&dattn, abytes);
    hipMalloc((void **)&dout, obytes);
    hipMemcpy(dvalue, value, vbytes, hipMemcpyHostToDevice);
    hipMemcpy(dshapes, spatial_shapes, sbytes, hipMemcpyHostToDevice);
    hipMemcpy(dstart, level_start, lbytes, hipMemcpyHostToDevice);
    hipMemcpy(dloc, loc, abytes * 2, hipMemcpyHostToDevice);
    hipMemcpy(dattn, attn, abytes, hipMemcpyHostToDevice);
    int total = Nq * Hh * Dh;
    deformable_attention<<<dim3((total + 63) / 64), dim3(64)>>>(dvalue, dshapes, dstart, dloc, dattn, dout,
                                                             Nv, Nq, Hh, Dh, L, P);
    hipDeviceSynchronize();
    hipMemcpy(out, dout, obytes, hipMemcpyDeviceToHost);
    hipFree(dvalue);
    hipFree(dshapes);
    hipFree(dstart);
    hipFree(dloc);
    hipFree(dattn);
    hipFree(dout);
}
