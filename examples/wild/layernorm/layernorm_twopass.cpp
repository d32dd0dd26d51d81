// layernorm_twopass.cpp: llm.c-style forward that keeps the statistics: a first loop over rows
// writes mean[r] and rstd[r], a second loop over the flattened (row, column) index normalises,
// reading the row's statistics through idx / C.
#include <cmath>

extern "C" void layernorm_twopass(const float* inp, const float* weight, const float* bias,
                                  float* out, float* mean, float* rstd, int R, int C)
{
    const float eps = 1e-5f;
    for (int r = 0; r < R; r++) {
        const float* x = inp + r * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++) {
            m += x[i];
        }
        m = m / C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) {
            float d = x[i] - m;
            v += d * d;
        }
        v = v / C;
        mean[r] = m;
        rstd[r] = 1.0f / sqrtf(v + eps);
    }
    for (int idx = 0; idx < R * C; idx++) {
        int r = idx / C;
        int c = idx % C;
        out[idx] = (inp[idx] - mean[r]) * rstd[r] * weight[c] + bias[c];
    }
}
