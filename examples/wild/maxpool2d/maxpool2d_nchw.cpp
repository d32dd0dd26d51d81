// maxpool2d_nchw.cpp: 2x2 max pooling with stride 2 over an NCHW tensor (floor on odd sizes).
// C++ style with a header assumption: -FLT_MAX is used without <cfloat>; std::max needs
// <algorithm>, which is included.
#include <algorithm>

extern "C" void maxpool2d_2x2(const float* in, float* out, int planes, int H, int W)
{
    const int OH = H / 2;
    const int OW = W / 2;
    for (int p = 0; p < planes; ++p) {
        const float* src = in + static_cast<long>(p) * H * W;
        float* dst = out + static_cast<long>(p) * OH * OW;
        for (int oh = 0; oh < OH; ++oh) {
            for (int ow = 0; ow < OW; ++ow) {
                float best = -FLT_MAX;
                for (int dy = 0; dy < 2; ++dy) {
                    for (int dx = 0; dx < 2; ++dx) {
                        best = std::max(best, src[(2 * oh + dy) * W + 2 * ow + dx]);
                    }
                }
                dst[oh * OW + ow] = best;
            }
        }
    }
}
