/* Front-end test input: C with OpenMP and AVX-512 intrinsics. */
#include <immintrin.h>
#include <stdint.h>

static inline int32_t hsum(__m512i v) { return _mm512_reduce_add_epi32(v); }

void dot_rows(const uint8_t *a, const int8_t *b, int32_t *out, int rows, int k)
{
#pragma omp parallel for
    for (int r = 0; r < rows; ++r) {
        __m512i acc = _mm512_setzero_si512();
        int c = 0;
        for (; c + 64 <= k; c += 64) {
            __m512i va = _mm512_loadu_si512((const void *)(a + (long)r * k + c));
            __m512i vb = _mm512_loadu_si512((const void *)(b + c));
            acc = _mm512_dpbusd_epi32(acc, va, vb);
        }
        int32_t tail = 0;
        for (; c < k; ++c)
            tail += (int32_t)a[(long)r * k + c] * (int32_t)b[c];
        out[r] = hsum(acc) + tail;
    }
}
