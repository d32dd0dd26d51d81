// dwconv_nhwc.cpp: depthwise convolution, NHWC input [N][H][W][C], taps [KH][KW][C], valid,
// stride 1. Accumulates a whole pixel's channels into a small std::array-free local buffer
// declared with a compile-time bound (MAX_C), the loop nest ordered for contiguous channels.
#define MAX_C 1024

extern "C" void dwconv_nhwc(const float* x, const float* w, float* y, int N, int H, int W, int C, int KH, int KW)
{
    const int OH = H - KH + 1, OW = W - KW + 1;
    for (int n = 0; n < N; ++n) {
        for (int oh = 0; oh < OH; ++oh) {
            for (int ow = 0; ow < OW; ++ow) {
                float acc[MAX_C] = {};
                for (int i = 0; i < KH; ++i) {
                    for (int j = 0; j < KW; ++j) {
                        const float* px = &x[((n * H + oh + i) * W + ow + j) * C];
                        const float* pw = &w[(i * KW + j) * C];
                        for (int c = 0; c < C; ++c) acc[c] += px[c] * pw[c];
                    }
                }
                float* po = &y[((n * OH + oh) * OW + ow) * C];
                for (int c = 0; c < C; ++c) po[c] = acc[c];
            }
        }
    }
}
