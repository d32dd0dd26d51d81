/* conv2d_nchw_rows: conv2d_nchw (examples/conv2d_nchw/conv2d_nchw.c's signature and result) in the
 * loop order that loop recovery's staged-convolution lift gives conv2d_nchw.mlu: one output row
 * (n, ho) per iteration, the output pixels of the row outside the output channels, and the sum
 * over the taps outside the input channels (the channels-last order of the NRAM staging).
 * Test input of the cache pass's orientation and reduction order (tests/test_simt_orient.py). */
void conv2d_nchw(const float *input, const float *weight, float *output,
                 int N, int Cin, int H, int W, int Cout, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    int rows = N * Ho;
    for (int i = 0; i < rows; ++i) {
        int n = i / Ho;
        int ho = i % Ho;
        for (int wo = 0; wo < Wo; ++wo) {
            for (int co = 0; co < Cout; ++co) {
                float acc = 0.0f;
                for (int p = 0; p < KH; ++p)
                    for (int q = 0; q < KW; ++q)
                        for (int ci = 0; ci < Cin; ++ci)
                            acc += input[(((long)n * Cin + ci) * H + ho * stride + p) * W + wo * stride + q] *
                                   weight[(((long)co * Cin + ci) * KH + p) * KW + q];
                output[(((long)n * Cout + co) * Ho + ho) * Wo + wo] = acc;
            }
        }
    }
}
