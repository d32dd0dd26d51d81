// avgpool_nchw_pad.cpp: average pooling over NCHW planes with zero padding, count_include_pad
// semantics (divide by k*k always), k/stride/pad as arguments; flattened output index over all
// planes with div/mod, std::min/std::max to clip the window.
#include <algorithm>

extern "C" void avgpool_pad(const float* in, float* out, int planes, int H, int W, int k, int s, int pad, int OH, int OW)
{
    const long total = static_cast<long>(planes) * OH * OW;
    const float inv = 1.0f / static_cast<float>(k * k);
#pragma omp parallel for
    for (long idx = 0; idx < total; ++idx) {
        const int ow = idx % OW;
        const int oh = (idx / OW) % OH;
        const long p = idx / (static_cast<long>(OW) * OH);
        const int h0 = std::max(oh * s - pad, 0), h1 = std::min(oh * s - pad + k, H);
        const int w0 = std::max(ow * s - pad, 0), w1 = std::min(ow * s - pad + k, W);
        float acc = 0.0f;
        for (int h = h0; h < h1; ++h)
            for (int w = w0; w < w1; ++w) acc += in[(p * H + h) * W + w];
        out[idx] = acc * inv;
    }
}
