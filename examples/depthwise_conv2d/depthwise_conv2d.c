/* depthwise_conv2d (c dialect): NCHW, one KHxKW filter per channel, valid, strided.
 * input [N][C][H][W], weight [C][KH][KW] -> output [N][C][Ho][Wo]. */

void depthwise_conv2d(const float *input, const float *weight, float *output,
                      int N, int C, int H, int W, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
#pragma omp parallel for
    for (int plane = 0; plane < N * C; ++plane) {
        int c = plane % C;                              /* channel selects the filter */
        const float *x = input + (long)plane * H * W;
        const float *w = weight + (long)c * KH * KW;
        float *y = output + (long)plane * Ho * Wo;
        for (int ho = 0; ho < Ho; ++ho)
            for (int wo = 0; wo < Wo; ++wo) {
                float acc = 0.0f;
                for (int kh = 0; kh < KH; ++kh)
                    for (int kw = 0; kw < KW; ++kw)
                        acc += x[(ho * stride + kh) * W + wo * stride + kw] * w[kh * KW + kw];
                y[ho * Wo + wo] = acc;
            }
    }
}
