/* add_omp_simd.c: c = a + b, C with `#pragma omp parallel for simd` and a long index. */
void add_simd(const float *a, const float *b, float *c, long n)
{
    long i;
#pragma omp parallel for simd
    for (i = 0; i < n; ++i)
        c[i] = a[i] + b[i];
}
