// unset_c.c: a flag and a partial array whose odd slots are never written (tests/test_poison_locals.py)
void unset_c(const float *x, float *yf, float *yp, int n) {
    for (int i = 0; i < n; ++i) {
        unsigned char done[4];
        float part[4];
        for (int t = 0; t < 4; t += 2) {
            done[t] = 0;
            part[t] = x[i];
        }
        yf[i] = (float)done[1 + (i & 1) * 2];
        yp[i] = part[1 + (i & 1) * 2];
    }
}
