// sumpool2d.c: 2-D sum pooling, NHWC float32, no padding (scalar loops).
// input [N][H][W][C] -> output [N][Ho][Wo][C], Ho = (H - KH) / stride + 1, Wo likewise.
#include <math.h>

void sumpool2d(const float* input, float* output, int N, int H, int W, int C, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    for (int n = 0; n < N; n++) {
        for (int oh = 0; oh < Ho; oh++) {
            for (int ow = 0; ow < Wo; ow++) {
                // window corner for this output pixel; the channel loop is innermost
                const float* corner = input + ((n * H + oh * stride) * W + ow * stride) * C;
                float* out = output + ((n * Ho + oh) * Wo + ow) * C;
                for (int c = 0; c < C; c++) {
                    const float* win = corner + c;
                    float acc = 0.0f;
                    for (int kh = 0; kh < KH; kh++) {
                        for (int kw = 0; kw < KW; kw++) {
                            float v = win[(kh * W + kw) * C];
                            acc += v;
                        }
                    }
                    out[c] = acc;
                }
            }
        }
    }
}
