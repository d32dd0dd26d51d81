/* gemv_vnni_s16: y[M] (int32) = A[M][K] (int16) . x[K] (int16), row-major.
 *
 * Integer semantics: every product is formed exactly in 32 bits and summed with int32
 * two's-complement wraparound (vpdpwssd does not saturate), so y[i] equals the exact dot
 * product modulo 2**32. The spec's input ranges keep sums far from the int32 limits.
 *
 * _mm512_dpwssd_epi32(acc, a, b): for each of the 16 int32 lanes,
 *   acc += a.i16[2l] * b.i16[2l] + a.i16[2l+1] * b.i16[2l+1]
 * so one instruction consumes 32 consecutive k of a row. The K tail (K % 32 elements)
 * is read with a zero-masking load: masked-off words become 0 and add nothing. */
#include <immintrin.h>
#include <stdint.h>

void gemv_vnni_s16(const int16_t* A, const int16_t* x, int32_t* y, int M, int K) {
    const int kfull = K & ~31;
    const __mmask32 tail = (__mmask32)((1ull << (K - kfull)) - 1u);
#pragma omp parallel for
    for (int i = 0; i < M; ++i) {
        const int16_t* a = A + (long)i * K;
        __m512i acc = _mm512_setzero_si512();
        for (int k = 0; k < kfull; k += 32) {
            __m512i va = _mm512_loadu_si512((const void*)(a + k));
            __m512i vx = _mm512_loadu_si512((const void*)(x + k));
            acc = _mm512_dpwssd_epi32(acc, va, vx);
        }
        if (tail) {
            __m512i va = _mm512_maskz_loadu_epi16(tail, a + kfull);
            __m512i vx = _mm512_maskz_loadu_epi16(tail, x + kfull);
            acc = _mm512_dpwssd_epi32(acc, va, vx);
        }
        y[i] = _mm512_reduce_add_epi32(acc);  /* horizontal int32 sum (wraps like the lanes) */
    }
}
