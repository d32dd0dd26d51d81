/* Row-wise softmax with AVX-512 intrinsics.
 * Sixteen columns per vector; the last partial vector of each row is handled with a lane
 * mask (masked loads read nothing past the row, masked stores write nothing past it).
 * AVX-512 has no exp instruction, so exp is evaluated here by range reduction:
 *   exp(t) = 2^k * exp(f),  k = round(t / ln2),  f = t - k*ln2 in [-ln2/2, ln2/2],
 * with a degree-6 Taylor polynomial for exp(f) (relative error ~2e-7 on that interval)
 * and _mm512_scalef_ps to multiply by 2^k. Inputs are x - max <= 0. */
#include <immintrin.h>
#include <math.h>

#define LANES 16
#define NEG_BIG (-3.0e38f)   /* fill for masked-off lanes: never the maximum */

static inline __m512 exp_nonpositive_ps(__m512 t)
{
    /* below about -87.3 expf underflows to (almost) zero; clamp so k stays finite */
    t = _mm512_max_ps(t, _mm512_set1_ps(-87.0f));
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* f = t - k*ln2, ln2 split in a high and a low part to keep f accurate */
    __m512 f = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693145751953125f), t);
    f = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.42860682030941723212e-6f), f);
    /* Horner: 1 + f(1 + f/2(1 + f/3(1 + f/4(1 + f/5(1 + f/6))))) expanded into coefficients */
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, k);
}

void softmax(const float *x, float *y, int rows, int cols)
{
    int full = cols / LANES * LANES;              /* columns covered by whole vectors */
    int tail = cols - full;                        /* 0..15 columns left over */
    __mmask16 tmask = (__mmask16)((1u << tail) - 1u);

    for (int r = 0; r < rows; ++r) {
        const float *xr = x + (long)r * cols;
        float *yr = y + (long)r * cols;

        /* row maximum: masked-off lanes are filled with NEG_BIG so they never win */
        __m512 vmax = _mm512_set1_ps(NEG_BIG);
        for (int c = 0; c < full; c += LANES)
            vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(xr + c));
        if (tail)
            vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(_mm512_set1_ps(NEG_BIG), tmask, xr + full));
        __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));

        /* exponentials into y, running vector sum */
        __m512 vsum = _mm512_setzero_ps();
        for (int c = 0; c < full; c += LANES) {
            __m512 e = exp_nonpositive_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + c), m));
            _mm512_storeu_ps(yr + c, e);
            vsum = _mm512_add_ps(vsum, e);
        }
        if (tail) {
            __m512 v = _mm512_maskz_loadu_ps(tmask, xr + full);
            __m512 e = exp_nonpositive_ps(_mm512_sub_ps(v, m));
            _mm512_mask_storeu_ps(yr + full, tmask, e);
            vsum = _mm512_mask_add_ps(vsum, tmask, vsum, e);   /* only the valid lanes count */
        }
        __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));

        /* normalise in place */
        for (int c = 0; c < full; c += LANES)
            _mm512_storeu_ps(yr + c, _mm512_mul_ps(_mm512_loadu_ps(yr + c), inv));
        if (tail)
            _mm512_mask_storeu_ps(yr + full, tmask,
                                  _mm512_mul_ps(_mm512_maskz_loadu_ps(tmask, yr + full), inv));
    }
}
