// conv2d_nhwc_omp.cpp: NHWC convolution with strides, weights [Co][KH][KW][Ci] (OHWI), valid.
// Output pixels in parallel (collapse over n, oh, ow); the Ci loop innermost and contiguous.
#include <cstddef>

extern "C" void conv2d_nhwc(const float* x, const float* w, float* y, int N, int H, int W, int Ci, int Co,
                            int KH, int KW, int sh, int sw)
{
    const int Ho = (H - KH) / sh + 1;
    const int Wo = (W - KW) / sw + 1;
#pragma omp parallel for collapse(3)
    for (int n = 0; n < N; ++n)
        for (int oh = 0; oh < Ho; ++oh)
            for (int ow = 0; ow < Wo; ++ow) {
                float* out = y + ((static_cast<std::size_t>(n) * Ho + oh) * Wo + ow) * Co;
                for (int co = 0; co < Co; ++co) {
                    float acc = 0.f;
                    for (int i = 0; i < KH; ++i)
                        for (int j = 0; j < KW; ++j) {
                            const float* px = x + ((static_cast<std::size_t>(n) * H + oh * sh + i) * W + ow * sw + j) * Ci;
                            const float* pw = w + ((static_cast<std::size_t>(co) * KH + i) * KW + j) * Ci;
                            for (int c = 0; c < Ci; ++c) acc += px[c] * pw[c];
                        }
                    out[co] = acc;
                }
            }
}
