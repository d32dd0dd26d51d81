/* conv2d_nhwc (c dialect): valid 2-D convolution, channels-last.
 * input [N][H][W][Cin], weight [Cout][KH][KW][Cin] -> output [N][Ho][Wo][Cout].
 * The innermost loop walks Cin, which is contiguous in both input and weight. */

void conv2d_nhwc(const float *input, const float *weight, float *output,
                 int N, int H, int W, int Cin, int Cout, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
#pragma omp parallel for
    for (int r = 0; r < N * Ho; ++r) {                 /* one output row per (n, ho) */
        int n = r / Ho;
        int ho = r % Ho;
        for (int wo = 0; wo < Wo; ++wo) {
            /* top-left input pixel of this output's receptive field */
            const float *patch = input + (((long)n * H + ho * stride) * W + wo * stride) * Cin;
            float *out = output + ((long)r * Wo + wo) * Cout;
            for (int co = 0; co < Cout; ++co) {
                const float *w = weight + (long)co * KH * KW * Cin;
                float acc = 0.0f;
                for (int kh = 0; kh < KH; ++kh)
                    for (int kw = 0; kw < KW; ++kw) {
                        const float *px = patch + ((long)kh * W + kw) * Cin;
                        const float *pw = w + (kh * KW + kw) * Cin;
                        for (int ci = 0; ci < Cin; ++ci)
                            acc += px[ci] * pw[ci];
                    }
                out[co] = acc;
            }
        }
    }
}
