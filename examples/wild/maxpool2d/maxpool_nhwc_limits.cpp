// maxpool_nhwc_limits.cpp: k x k max pooling with stride, NHWC, no padding; running maxima
// start at std::numeric_limits<float>::lowest(), one output pixel's channels at a time.
#include <algorithm>
#include <limits>
#include <vector>

extern "C" void maxpool_nhwc(const float* x, float* y, int N, int H, int W, int C, int k, int s)
{
    const int OH = (H - k) / s + 1, OW = (W - k) / s + 1;
    std::vector<float> best(static_cast<size_t>(C));
    for (int n = 0; n < N; ++n)
        for (int oh = 0; oh < OH; ++oh)
            for (int ow = 0; ow < OW; ++ow) {
                std::fill(best.begin(), best.end(), std::numeric_limits<float>::lowest());
                for (int i = 0; i < k; ++i)
                    for (int j = 0; j < k; ++j) {
                        const float* px = x + ((static_cast<size_t>(n) * H + oh * s + i) * W + ow * s + j) * C;
                        for (int c = 0; c < C; ++c) best[c] = std::max(best[c], px[c]);
                    }
                std::copy(best.begin(), best.end(), y + ((static_cast<size_t>(n) * OH + oh) * OW + ow) * C);
            }
}
