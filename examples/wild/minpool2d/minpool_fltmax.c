/* minpool_fltmax.c: k x k min pooling with stride s over [planes][H][W], no padding; the running
 * minimum starts at FLT_MAX, written without including <float.h>. */
void minpool_plane(const float *in, float *out, int planes, int H, int W, int k, int s)
{
    int OH = (H - k) / s + 1, OW = (W - k) / s + 1;
    for (int p = 0; p < planes; ++p)
        for (int oh = 0; oh < OH; ++oh)
            for (int ow = 0; ow < OW; ++ow) {
                float m = FLT_MAX;
                for (int i = 0; i < k; ++i)
                    for (int j = 0; j < k; ++j) {
                        float v = in[((long)p * H + oh * s + i) * W + ow * s + j];
                        if (v < m) m = v;
                    }
                out[((long)p * OH + oh) * OW + ow] = m;
            }
}
