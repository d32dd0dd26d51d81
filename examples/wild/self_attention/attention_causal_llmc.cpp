// attention_causal_llmc.cpp: causal multi-head attention forward in the style of CPU training
// code: Q, K, V, O laid out [B][H][S][D]; per (b, h, i) a scratch row of scores over j <= i,
// max-subtracted exponentials, normalised, then the weighted sum of V rows. The scratch buffer
// is a std::vector per thread of the OpenMP loop.
#include <cmath>
#include <vector>

extern "C" void attention_causal(const float* Q, const float* K, const float* V, float* O,
                                 int B, int H, int S, int D, float scale)
{
#pragma omp parallel
    {
        std::vector<float> att(static_cast<size_t>(S));
#pragma omp for collapse(2)
        for (int b = 0; b < B; ++b) {
            for (int h = 0; h < H; ++h) {
                const size_t base = (static_cast<size_t>(b) * H + h) * S * D;
                for (int i = 0; i < S; ++i) {
                    const float* q = Q + base + static_cast<size_t>(i) * D;
                    float maxv = -10000.0f;
                    for (int j = 0; j <= i; ++j) {
                        const float* k = K + base + static_cast<size_t>(j) * D;
                        float dot = 0.0f;
                        for (int d = 0; d < D; ++d) dot += q[d] * k[d];
                        dot *= scale;
                        att[j] = dot;
                        if (dot > maxv) maxv = dot;
                    }
                    float sum = 0.0f;
                    for (int j = 0; j <= i; ++j) {
                        att[j] = std::exp(att[j] - maxv);
                        sum += att[j];
                    }
                    const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
                    float* o = O + base + static_cast<size_t>(i) * D;
                    for (int d = 0; d < D; ++d) o[d] = 0.0f;
                    for (int j = 0; j <= i; ++j) {
                        const float* v = V + base + static_cast<size_t>(j) * D;
                        const float w = att[j] * inv;
                        for (int d = 0; d < D; ++d) o[d] += w * v[d];
                    }
                }
            }
        }
    }
}
