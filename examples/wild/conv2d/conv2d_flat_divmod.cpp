// conv2d_flat_divmod.cpp: NCHW valid convolution, stride 1, with the output walked as one
// flattened index that is decomposed with / and % (the form ported GPU code keeps on the CPU).
extern "C" void conv2d_flat(const float* inp, const float* weight, float* out, int N, int C, int H, int W,
                            int K, int R, int S)
{
    const int OH = H - R + 1;
    const int OW = W - S + 1;
    const long total = static_cast<long>(N) * K * OH * OW;
#pragma omp parallel for
    for (long idx = 0; idx < total; ++idx) {
        const int ow = static_cast<int>(idx % OW);
        const int oh = static_cast<int>((idx / OW) % OH);
        const int k = static_cast<int>((idx / (static_cast<long>(OW) * OH)) % K);
        const int n = static_cast<int>(idx / (static_cast<long>(OW) * OH * K));
        float acc = 0.0f;
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r)
                for (int s = 0; s < S; ++s)
                    acc += inp[((static_cast<long>(n) * C + c) * H + oh + r) * W + ow + s] *
                           weight[((static_cast<long>(k) * C + c) * R + r) * S + s];
        out[idx] = acc;
    }
}
