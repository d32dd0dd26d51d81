// avgpool_flat.cpp: average pooling (kernel K, stride S, no padding) over an NCHW tensor, one
// flattened loop over the output elements split into (n, c, oh, ow) with / and %.
extern "C" void avgpool_flat(const float* input, float* output, int N, int C, int H, int W,
                             int OH, int OW, int K, int S)
{
    for (int idx = 0; idx < N * C * OH * OW; ++idx) {
        int ow = idx % OW;
        int oh = (idx / OW) % OH;
        int c = (idx / (OW * OH)) % C;
        int n = idx / (OW * OH * C);
        float acc = 0.0f;
        for (int kh = 0; kh < K; ++kh) {
            for (int kw = 0; kw < K; ++kw) {
                acc += input[((n * C + c) * H + oh * S + kh) * W + ow * S + kw];
            }
        }
        output[((n * C + c) * OH + oh) * OW + ow] = acc / (float)(K * K);
    }
}
