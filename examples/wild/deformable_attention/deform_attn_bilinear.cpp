// deform_attn_bilinear.cpp: multi-scale deformable attention sampling (batch 1), C++ CPU style.
// value [Nv][Hh][Dh] (levels stacked row-major from level_start[l]), spatial_shapes [L][2] =
// (Hl, Wl), loc [Nq][Hh][L][P][2] normalised (x, y), attn [Nq][Hh][L][P]; out [Nq][Hh*Dh].
// Bilinear sampling at (x*Wl - 0.5, y*Hl - 0.5) with zeros outside the level (a lambda returns
// the corner value or 0), std::floor, auto, a per-(q, h) accumulator.
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void deform_attn(const float* value, const std::int32_t* spatial_shapes, const std::int32_t* level_start,
                            const float* loc, const float* attn, float* out, int Nv, int Nq, int Hh, int Dh, int L, int P)
{
    (void)Nv;
    std::vector<float> acc(static_cast<std::size_t>(Dh));
    for (int q = 0; q < Nq; ++q) {
        for (int h = 0; h < Hh; ++h) {
            std::fill(acc.begin(), acc.end(), 0.0f);
            for (int l = 0; l < L; ++l) {
                const int Hl = spatial_shapes[2 * l], Wl = spatial_shapes[2 * l + 1];
                const float* lvl = value + static_cast<std::int64_t>(level_start[l]) * Hh * Dh;
                auto corner = [&](int yy, int xx, int d) -> float {
                    if (yy < 0 || yy >= Hl || xx < 0 || xx >= Wl) return 0.0f;
                    return lvl[(static_cast<std::int64_t>(yy) * Wl + xx) * Hh * Dh + h * Dh + d];
                };
                for (int p = 0; p < P; ++p) {
                    const std::int64_t li = ((static_cast<std::int64_t>(q) * Hh + h) * L + l) * P + p;
                    const float px = loc[2 * li] * Wl - 0.5f;
                    const float py = loc[2 * li + 1] * Hl - 0.5f;
                    const float w = attn[li];
                    const int x0 = static_cast<int>(std::floor(px));
                    const int y0 = static_cast<int>(std::floor(py));
                    const float fx = px - x0, fy = py - y0;
                    const float w00 = (1.f - fx) * (1.f - fy), w01 = fx * (1.f - fy);
                    const float w10 = (1.f - fx) * fy, w11 = fx * fy;
                    for (int d = 0; d < Dh; ++d) {
                        const float v = w00 * corner(y0, x0, d) + w01 * corner(y0, x0 + 1, d) +
                                        w10 * corner(y0 + 1, x0, d) + w11 * corner(y0 + 1, x0 + 1, d);
                        acc[d] += w * v;
                    }
                }
            }
            float* o = out + (static_cast<std::int64_t>(q) * Hh + h) * Dh;
            for (int d = 0; d < Dh; ++d) o[d] = acc[d];
        }
    }
}
