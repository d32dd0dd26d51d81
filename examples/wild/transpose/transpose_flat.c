/* transpose_flat.c: NCHW -> NHWC over one flattened loop; the source digits are taken apart
   with / and % and the store goes to the permuted position. */
void nchw2nhwc_flat(const float *in, float *out, int N, int C, int H, int W)
{
    int total = N * C * H * W;
    for (int idx = 0; idx < total; idx++) {
        int n = idx / (C * H * W);
        int c = (idx / (H * W)) % C;
        int h = (idx / W) % H;
        int w = idx % W;
        out[((n * H + h) * W + w) * C + c] = in[idx];
    }
}
