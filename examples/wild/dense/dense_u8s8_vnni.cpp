// dense_u8s8_vnni.cpp: quantized Linear layer y = x W^T + bias with uint8 activations x
// [batch][in_f], int8 weights W [out_f][in_f] and an int32 bias, int32 results. The inner
// product uses AVX-512 VNNI: _mm512_dpbusd_epi32 multiplies 64 u8*s8 pairs and adds each group
// of four into one of 16 int32 lanes; the in_f tail (in_f % 64) is scalar.
#include <immintrin.h>
#include <cstdint>

static inline std::int32_t dot_u8s8(const std::uint8_t* a, const std::int8_t* b, int n)
{
    __m512i acc = _mm512_setzero_si512();
    int k = 0;
    for (; k + 64 <= n; k += 64) {
        const __m512i va = _mm512_loadu_si512(reinterpret_cast<const void*>(a + k));
        const __m512i vb = _mm512_loadu_si512(reinterpret_cast<const void*>(b + k));
        acc = _mm512_dpbusd_epi32(acc, va, vb);
    }
    std::int32_t s = _mm512_reduce_add_epi32(acc);
    for (; k < n; ++k) s += static_cast<std::int32_t>(a[k]) * static_cast<std::int32_t>(b[k]);
    return s;
}

extern "C" void dense_u8s8(const std::uint8_t* x, const std::int8_t* W, const std::int32_t* bias, std::int32_t* y,
                           int batch, int in_f, int out_f)
{
#pragma omp parallel for collapse(2)
    for (int r = 0; r < batch; ++r)
        for (int o = 0; o < out_f; ++o)
            y[static_cast<long>(r) * out_f + o] =
                bias[o] + dot_u8s8(x + static_cast<long>(r) * in_f, W + static_cast<long>(o) * in_f, in_f);
}
