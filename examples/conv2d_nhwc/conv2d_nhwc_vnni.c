/* conv2d_nhwc_vnni (c dialect): quantized valid 2-D convolution, channels-last, AVX-512 VNNI.
 * input  uint8 [N][H][W][Cin]   (unsigned activations, 0..255)
 * weight int8  [Cout][KH][KW][Cin] (signed weights, -128..127)
 * output int32 [N][Ho][Wo][Cout] = exact sum over (kh, kw, ci) of input * weight.
 *
 * _mm512_dpbusd_epi32(acc, a, b) multiplies 64 unsigned bytes of a with 64 signed bytes of b
 * and adds each group of 4 neighbouring products into one of acc's 16 int32 lanes, which is
 * exactly the u8 x s8 dot product over a contiguous Cin run. The last partial run of Cin is
 * loaded with a zeroing byte mask, so masked-off lanes contribute 0. The adds wrap modulo
 * 2^32; the spec's value ranges and sizes keep every true sum inside int32. */
#include <immintrin.h>
#include <stdint.h>

void conv2d_nhwc_vnni(const uint8_t *input, const int8_t *weight, int32_t *output,
                      int N, int H, int W, int Cin, int Cout, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    int full = Cin / 64;                               /* whole 64-byte chunks of Cin */
    int rem = Cin % 64;                                /* bytes in the tail chunk */
    __mmask64 tail = rem ? (__mmask64)((1ULL << rem) - 1) : 0;
#pragma omp parallel for
    for (int r = 0; r < N * Ho; ++r) {
        int n = r / Ho;
        int ho = r % Ho;
        for (int wo = 0; wo < Wo; ++wo) {
            const uint8_t *patch = input + (((long)n * H + ho * stride) * W + wo * stride) * Cin;
            int32_t *out = output + ((long)r * Wo + wo) * Cout;
            for (int co = 0; co < Cout; ++co) {
                const int8_t *w = weight + (long)co * KH * KW * Cin;
                __m512i acc = _mm512_setzero_si512();
                for (int kh = 0; kh < KH; ++kh)
                    for (int kw = 0; kw < KW; ++kw) {
                        const uint8_t *px = patch + ((long)kh * W + kw) * Cin;
                        const int8_t *pw = w + (kh * KW + kw) * Cin;
                        for (int c = 0; c < full; ++c) {
                            __m512i a = _mm512_loadu_si512((const void *)(px + 64 * c));
                            __m512i b = _mm512_loadu_si512((const void *)(pw + 64 * c));
                            acc = _mm512_dpbusd_epi32(acc, a, b);
                        }
                        if (rem) {
                            __m512i a = _mm512_maskz_loadu_epi8(tail, (const void *)(px + 64 * full));
                            __m512i b = _mm512_maskz_loadu_epi8(tail, (const void *)(pw + 64 * full));
                            acc = _mm512_dpbusd_epi32(acc, a, b);
                        }
                    }
                /* fold the 16 partial sums of this output channel */
                out[co] = _mm512_reduce_add_epi32(acc);
            }
        }
    }
}
