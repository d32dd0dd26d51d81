// unset_cu.cu: a thread's local flag and partial arrays, odd slots never written (tests/test_poison_locals.py)
extern "C" __global__ void unset_cu(const float *x, float *yf, float *yp, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned char done[4];
    float part[4];
    for (int t = 0; t < 4; t += 2) {
        done[t] = 0;
        part[t] = x[i];
    }
    yf[i] = (float)done[1 + (i & 1) * 2];
    yp[i] = part[1 + (i & 1) * 2];
}
