// conv1d_pad_stride.cpp: 1-D convolution (cross-correlation) with zero padding and stride,
// x [N][C][L], w [OC][C][K] -> y [N][OC][OL], OL = (L + 2*pad - K) / stride + 1.
// C++ style: std::int64_t, a bounds check via `continue`, OpenMP over (n, oc).
#include <cstdint>

extern "C" void conv1d_ncl(const float* x, const float* w, float* y, int N, int C, int L, int OC, int K,
                           int stride, int pad, int OL)
{
#pragma omp parallel for collapse(2)
    for (int n = 0; n < N; ++n) {
        for (int oc = 0; oc < OC; ++oc) {
            for (int o = 0; o < OL; ++o) {
                float acc = 0.0f;
                for (int c = 0; c < C; ++c) {
                    const float* xr = x + (static_cast<std::int64_t>(n) * C + c) * L;
                    const float* wr = w + (static_cast<std::int64_t>(oc) * C + c) * K;
                    for (int k = 0; k < K; ++k) {
                        const int pos = o * stride - pad + k;
                        if (pos < 0 || pos >= L) continue;
                        acc += xr[pos] * wr[k];
                    }
                }
                y[(static_cast<std::int64_t>(n) * OC + oc) * OL + o] = acc;
            }
        }
    }
}
