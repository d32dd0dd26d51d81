/* Multi-scale deformable attention sampling (Deformable DETR), batch 1, plain C.
 *   value [Nv][Hh][Dh], spatial_shapes [L][2] = (H_l, W_l), level_start [L],
 *   loc [Nq][Hh][L][P][2] = normalised (x, y), attn [Nq][Hh][L][P], out [Nq][Hh*Dh].
 * Every sampling point is read bilinearly from its level (align_corners = False:
 * pixel centres at integer + 0.5, so px = x*W - 0.5) with zeros outside the grid,
 * weighted by its attention weight, and summed per (query, head). */
#include <math.h>

void deformable_attention(const float *value, const int *spatial_shapes, const int *level_start,
                          const float *loc, const float *attn, float *out,
                          int Nv, int Nq, int Hh, int Dh, int L, int P)
{
    (void)Nv;   /* implied by spatial_shapes; kept for the common parameter list */
    for (int q = 0; q < Nq; ++q) {
        for (int h = 0; h < Hh; ++h) {
            float *o = out + ((long)q * Hh + h) * Dh;
            for (int d = 0; d < Dh; ++d)
                o[d] = 0.0f;

            for (int l = 0; l < L; ++l) {
                int hl = spatial_shapes[2 * l];
                int wl = spatial_shapes[2 * l + 1];
                const float *lvl = value + (long)level_start[l] * Hh * Dh;
                for (int p = 0; p < P; ++p) {
                    long sp = (((long)q * Hh + h) * L + l) * P + p;
                    float px = loc[2 * sp] * (float)wl - 0.5f;
                    float py = loc[2 * sp + 1] * (float)hl - 0.5f;
                    float a = attn[sp];

                    int x0 = (int)floorf(px);
                    int y0 = (int)floorf(py);
                    float fx = px - (float)x0;
                    float fy = py - (float)y0;

                    /* the four neighbours; a tap outside the grid contributes nothing */
                    for (int corner = 0; corner < 4; ++corner) {
                        int dx = corner & 1;
                        int dy = corner >> 1;
                        int xi = x0 + dx;
                        int yi = y0 + dy;
                        if (xi < 0 || xi >= wl || yi < 0 || yi >= hl)
                            continue;
                        float w = (dx ? fx : 1.0f - fx) * (dy ? fy : 1.0f - fy) * a;
                        const float *v = lvl + ((long)(yi * wl + xi) * Hh + h) * Dh;
                        for (int d = 0; d < Dh; ++d)
                            o[d] += w * v[d];
                    }
                }
            }
        }
    }
}
