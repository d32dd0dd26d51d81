/* Multi-head self-attention, plain C.
 * Q, K, V, O: [S][H][D] float32 (the heads of one token are adjacent); each head h
 * attends independently: O[:,h,:] = softmax(Q[:,h,:] K[:,h,:]^T * scale) V[:,h,:].
 * This version streams over the keys with an online softmax, so it needs no score row:
 * a running maximum m, running denominator l and running output o are rescaled by
 * exp(m_old - m_new) whenever a larger score appears. */
#include <math.h>

#define MAX_D 256            /* per-head width limit of the local accumulator */
#define NEG_BIG (-3.0e38f)   /* start value of the running maximum */

void self_attention_mh(const float *Q, const float *K, const float *V, float *O,
                       int S, int H, int D, float scale)
{
    long row = (long)H * D;    /* distance between consecutive tokens */
    for (int h = 0; h < H; ++h) {
        for (int i = 0; i < S; ++i) {
            const float *q = Q + i * row + (long)h * D;
            float acc[MAX_D];
            float m = NEG_BIG;
            float l = 0.0f;
            for (int d = 0; d < D; ++d)
                acc[d] = 0.0f;

            for (int j = 0; j < S; ++j) {
                const float *k = K + j * row + (long)h * D;
                const float *v = V + j * row + (long)h * D;
                float s = 0.0f;
                for (int d = 0; d < D; ++d)
                    s += q[d] * k[d];
                s *= scale;

                float m_new = fmaxf(m, s);
                float corr = expf(m - m_new);   /* 0 on the first key (m = NEG_BIG) */
                float p = expf(s - m_new);
                l = l * corr + p;
                for (int d = 0; d < D; ++d)
                    acc[d] = acc[d] * corr + p * v[d];
                m = m_new;
            }

            float *o = O + i * row + (long)h * D;
            float inv = 1.0f / l;
            for (int d = 0; d < D; ++d)
                o[d] = acc[d] * inv;
        }
    }
}
