// gemm_u8s8_vnni.cpp: C[m][n] = sum_k A[m][k] * Bt[n][k], A uint8, Bt int8 (B stored
// transposed, K contiguous), int32 accumulation with AVX-512 VNNI (vpdpbusd).  Written for a
// build that force-includes <immintrin.h>: this file uses __m512i without including it.
#include <cstdint>

namespace {

inline std::int32_t dot_tail(const std::uint8_t* a, const std::int8_t* b, int from, int to)
{
    std::int32_t s = 0;
    for (int k = from; k < to; ++k) {
        s += static_cast<std::int32_t>(a[k]) * static_cast<std::int32_t>(b[k]);
    }
    return s;
}

}  // namespace

extern "C" void gemm_u8s8_vnni(const std::uint8_t* A, const std::int8_t* Bt, std::int32_t* C, int M, int N, int K)
{
    const int k_vec = K / 64 * 64;
    for (int m = 0; m < M; ++m) {
        const std::uint8_t* a_row = A + static_cast<long>(m) * K;
        for (int n = 0; n < N; ++n) {
            const std::int8_t* b_row = Bt + static_cast<long>(n) * K;
            __m512i acc = _mm512_setzero_si512();
            for (int k = 0; k < k_vec; k += 64) {
                const __m512i va = _mm512_loadu_si512(reinterpret_cast<const void*>(a_row + k));
                const __m512i vb = _mm512_loadu_si512(reinterpret_cast<const void*>(b_row + k));
                acc = _mm512_dpbusd_epi32(acc, va, vb);
            }
            C[static_cast<long>(m) * N + n] = _mm512_reduce_add_epi32(acc) + dot_tail(a_row, b_row, k_vec, K);
        }
    }
}
