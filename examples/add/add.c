// add.c: c[i] = a[i] + b[i], float32, scalar loop.

void add(const float* a, const float* b, float* c, int n)
{
    for (int i = 0; i < n; i++) {
        c[i] = a[i] + b[i];
    }
}
