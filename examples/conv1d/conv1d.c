/* conv1d (c dialect): valid 1-D convolution, batched, with stride.
 * input [N][Cin][L], weight [Cout][Cin][KW] -> output [N][Cout][Lo], Lo = (L-KW)/stride + 1.
 * Plain scalar float loops; the (n, co) rows are independent, so OpenMP may split them. */

void conv1d(const float *input, const float *weight, float *output,
            int N, int Cin, int L, int Cout, int KW, int stride)
{
    int Lo = (L - KW) / stride + 1;
#pragma omp parallel for
    for (int row = 0; row < N * Cout; ++row) {
        int n = row / Cout;
        int co = row % Cout;
        const float *x = input + (long)n * Cin * L;   /* this sample's [Cin][L] block */
        const float *w = weight + (long)co * Cin * KW; /* this filter's [Cin][KW] block */
        float *y = output + (long)row * Lo;
        for (int lo = 0; lo < Lo; ++lo) {
            float acc = 0.0f;
            int start = lo * stride;                  /* left edge of the receptive field */
            for (int ci = 0; ci < Cin; ++ci)
                for (int k = 0; k < KW; ++k)
                    acc += x[ci * L + start + k] * w[ci * KW + k];
            y[lo] = acc;
        }
    }
}
