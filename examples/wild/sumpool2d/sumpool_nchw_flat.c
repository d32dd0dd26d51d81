/* sumpool_nchw_flat.c: k x k sum pooling, stride s, no padding, NCHW planes, one flattened
 * output index decomposed with / and %, macros for the index arithmetic. */
#define OUT_DIM(x, k, s) (((x) - (k)) / (s) + 1)
#define AT(p, h, w, H, W) (((long)(p) * (H) + (h)) * (W) + (w))

void sumpool_flat(const float *in, float *out, int planes, int H, int W, int k, int s)
{
    const int OH = OUT_DIM(H, k, s), OW = OUT_DIM(W, k, s);
    const long total = (long)planes * OH * OW;
    for (long idx = 0; idx < total; ++idx) {
        int ow = (int)(idx % OW);
        int oh = (int)(idx / OW % OH);
        int p = (int)(idx / OW / OH);
        float acc = 0.0f;
        for (int i = 0; i < k; ++i)
            for (int j = 0; j < k; ++j)
                acc += in[AT(p, oh * s + i, ow * s + j, H, W)];
        out[idx] = acc;
    }
}
