// conv2d_nchw.cpp: direct 2-D convolution, NCHW input, KCRS filter, stride 1, no padding.
// C++ style: constexpr-free index helper, std::size_t offsets built with static_cast, auto.
#include <cstddef>

namespace {

inline std::size_t offset4(int a, int b, int c, int d, int B, int C, int D)
{
    return ((static_cast<std::size_t>(a) * B + b) * C + c) * D + d;
}

}  // namespace

extern "C" void conv2d_nchw(const float* input, const float* weight, float* output,
                            int N, int C, int H, int W, int K, int R, int S)
{
    const int OH = H - R + 1;
    const int OW = W - S + 1;
    for (int n = 0; n < N; ++n) {
        for (int k = 0; k < K; ++k) {
            for (int oh = 0; oh < OH; ++oh) {
                for (int ow = 0; ow < OW; ++ow) {
                    auto acc = 0.0f;
                    for (int c = 0; c < C; ++c) {
                        for (int r = 0; r < R; ++r) {
                            for (int s = 0; s < S; ++s) {
                                acc += input[offset4(n, c, oh + r, ow + s, C, H, W)] *
                                       weight[offset4(k, c, r, s, C, R, S)];
                            }
                        }
                    }
                    output[offset4(n, k, oh, ow, K, OH, OW)] = acc;
                }
            }
        }
    }
}
