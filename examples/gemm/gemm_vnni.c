/* gemm_vnni: C[M][N] (int32) = A[M][K] (uint8) . B[K][N] (int8), row-major.
 *
 * Integer semantics: products u8*s8 are exact, sums are int32 with two's-complement
 * wraparound (vpdpbusd is the non-saturating form), i.e. C equals the exact integer
 * product modulo 2**32. With K*255*128 < 2**31 (K < 65793) no wrap can happen.
 *
 * _mm512_dpbusd_epi32(acc, a, b): in each int32 lane l,
 *   acc.i32[l] += sum_{r<4} a.u8[4l+r] * b.i8[4l+r]
 * To use it, B is repacked inside the kernel into groups of 4 consecutive k:
 *   Bp[q][j][r] = B[4q+r][j]  (zero for 4q+r >= K),
 * so the 64 bytes Bp[q][j0..j0+15][0..3] hold four k-values for 16 columns, and the four
 * A values A[i][4q..4q+3] broadcast to every lane complete the dot-product step.
 * Tails: the last k-group is zero-padded on both sides; the last column block (N % 16)
 * uses masked loads and a masked store. */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void gemm_vnni(const uint8_t* A, const int8_t* B, int32_t* C, int M, int N, int K) {
    const int Kq = (K + 3) / 4;
    int8_t* Bp = (int8_t*)malloc((size_t)Kq * N * 4 + 64);
    if (Bp == NULL)
        return;

    /* pack B into [Kq][N][4] */
#pragma omp parallel for
    for (int q = 0; q < Kq; ++q) {
        for (int j = 0; j < N; ++j) {
            for (int r = 0; r < 4; ++r) {
                const int k = 4 * q + r;
                Bp[((long)q * N + j) * 4 + r] = (k < K) ? B[(long)k * N + j] : (int8_t)0;
            }
        }
    }

#pragma omp parallel for
    for (int i = 0; i < M; ++i) {
        const uint8_t* a = A + (long)i * K;
        for (int j0 = 0; j0 < N; j0 += 16) {
            const int nj = (N - j0 < 16) ? N - j0 : 16;
            const __mmask16 m = (__mmask16)((1u << nj) - 1u);
            __m512i acc = _mm512_setzero_si512();
            for (int q = 0; q < Kq; ++q) {
                /* the 4 A bytes of this k-group as one int32, zero-padded past K */
                int32_t a4 = 0;
                const int kr = (K - 4 * q < 4) ? K - 4 * q : 4;
                memcpy(&a4, a + 4 * q, (size_t)kr);
                const __m512i va = _mm512_set1_epi32(a4);
                const __m512i vb = _mm512_maskz_loadu_epi32(m, Bp + ((long)q * N + j0) * 4);
                acc = _mm512_dpbusd_epi32(acc, va, vb);
            }
            _mm512_mask_storeu_epi32(C + (long)i * N + j0, m, acc);
        }
    }
    free(Bp);
}
