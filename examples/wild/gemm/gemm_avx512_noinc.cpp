// gemm_avx512_noinc.cpp: C = A * B with AVX-512 FMA over 16 columns of C at a time, written
// the way snippets copied from the intrinsics guide often are: __m512 / _mm512_* used with no
// #include <immintrin.h> (the including project provided it). Column tail: masked load/store.
extern "C" void gemm_avx512(const float* A, const float* B, float* C, int M, int N, int K)
{
    for (int i = 0; i < M; ++i) {
        int j = 0;
        for (; j + 16 <= N; j += 16) {
            __m512 acc = _mm512_setzero_ps();
            for (int p = 0; p < K; ++p) {
                __m512 a = _mm512_set1_ps(A[i * K + p]);
                __m512 b = _mm512_loadu_ps(B + p * N + j);
                acc = _mm512_fmadd_ps(a, b, acc);
            }
            _mm512_storeu_ps(C + i * N + j, acc);
        }
        if (j < N) {
            const __mmask16 m = static_cast<__mmask16>((1u << (N - j)) - 1u);
            __m512 acc = _mm512_setzero_ps();
            for (int p = 0; p < K; ++p) {
                __m512 a = _mm512_set1_ps(A[i * K + p]);
                __m512 b = _mm512_maskz_loadu_ps(m, B + p * N + j);
                acc = _mm512_fmadd_ps(a, b, acc);
            }
            _mm512_mask_storeu_ps(C + i * N + j, m, acc);
        }
    }
}
