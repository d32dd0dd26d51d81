/* Single-head self-attention, plain C: O = softmax(Q K^T * scale) V.
 * Q, K, V, O: [S][D] float32. For each query row the S scores are formed in a scratch
 * row, turned into probabilities with a max-shifted softmax, then used to mix the V rows.
 * The score row lives on the stack, so S is limited to MAX_S. */
#include <math.h>

#define MAX_S 4096
#define NEG_BIG (-3.0e38f)   /* below any score; exp(NEG_BIG - m) == 0 */

void self_attention(const float *Q, const float *K, const float *V, float *O,
                    int S, int D, float scale)
{
    float p[MAX_S];
    for (int i = 0; i < S; ++i) {
        const float *q = Q + (long)i * D;

        /* scores s_j = (q . k_j) * scale, and their maximum */
        float m = NEG_BIG;
        for (int j = 0; j < S; ++j) {
            const float *k = K + (long)j * D;
            float dot = 0.0f;
            for (int d = 0; d < D; ++d)
                dot += q[d] * k[d];
            p[j] = dot * scale;
            m = fmaxf(m, p[j]);
        }

        /* probabilities (unnormalised) and their sum */
        float sum = 0.0f;
        for (int j = 0; j < S; ++j) {
            p[j] = expf(p[j] - m);
            sum += p[j];
        }
        float inv = 1.0f / sum;

        /* o = sum_j p_j v_j / sum */
        float *o = O + (long)i * D;
        for (int d = 0; d < D; ++d)
            o[d] = 0.0f;
        for (int j = 0; j < S; ++j) {
            const float *v = V + (long)j * D;
            float w = p[j] * inv;
            for (int d = 0; d < D; ++d)
                o[d] += w * v[d];
        }
    }
}
