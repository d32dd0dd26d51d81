/* conv2d_nchw (c dialect): valid 2-D convolution in NCHW layout, one stride for both axes.
 * input [N][Cin][H][W], weight [Cout][Cin][KH][KW] -> output [N][Cout][Ho][Wo]. */

void conv2d_nchw(const float *input, const float *weight, float *output,
                 int N, int Cin, int H, int W, int Cout, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
#pragma omp parallel for
    for (int plane = 0; plane < N * Cout; ++plane) {   /* one output plane per (n, co) */
        int n = plane / Cout;
        int co = plane % Cout;
        float *out = output + (long)plane * Ho * Wo;
        for (int ho = 0; ho < Ho; ++ho) {
            for (int wo = 0; wo < Wo; ++wo) {
                float acc = 0.0f;
                for (int ci = 0; ci < Cin; ++ci) {
                    const float *x = input + ((long)(n * Cin + ci) * H + ho * stride) * W + wo * stride;
                    const float *w = weight + (long)(co * Cin + ci) * KH * KW;
                    for (int kh = 0; kh < KH; ++kh)
                        for (int kw = 0; kw < KW; ++kw)
                            acc += x[kh * W + kw] * w[kh * KW + kw];
                }
                out[ho * Wo + wo] = acc;
            }
        }
    }
}
