"""Vector math helpers that tensorize writes into c outputs (AVX-512 has no exp instruction).

``xp_exp512(x)``: e**x in every float32 lane.

* Range: x is first clamped to [-104, 89] with the NaN-propagating operand order (a NaN lane
  stays NaN).  Beyond 88.73 the true result overflows float32 and beyond -103.98 it rounds to
  zero, and the clamped value gives exactly that: +inf (from scalef) and +0.
* Reduction: k = nearest integer to x / ln 2, r = x - k ln 2 with ln 2 split in a part with few
  mantissa bits (k * hi is exact for |k| <= 150) and a correction, so |r| <= ln(2)/2 + tiny.
* e**r by its Taylor polynomial to degree 7 (Horner with FMA): the first omitted term is
  r**8 / 8! < 5.3e-9, below half an ulp of float32.
* 2**k * p as (p * 2**k1) * 2**k2 with k1 = floor(k / 2), k2 = k - k1: both factors are normal
  floats built from their exponent bits (k is in [-150, 129]; k + 1.5 * 2**23 holds k in its low
  mantissa bits, which avoids float->int conversions), the first product is exact and
  the second rounds once, so results go gradually to denormals, to zero and to infinity like
  the scalar function.  (``_mm512_scalef_ps`` would do it in one step natively, but SIMDe's
  emulation of it overflows / underflows 2**k on its own; this form is exact on both.)
tests/test_pass_tensorize_x86.py compares 10**6 points over [-110, 110] plus the special
values with expf, natively and through SIMDe, and requires <= 2 ulp and identical inf/0/NaN.

``xp_erf512(x)``: erf(x) in every float32 lane (no exp/erf instruction either).

* a = |x|; the sign bit of x is put back at the end (erf is odd: -0 gives -0, NaN stays NaN).
* a < 1: a * P(a*a), P of degree 6; a >= 1: 1 - e**Q(a - 1), Q of degree 7, with a clamped to
  [1, 3.92] (beyond 3.92 erf rounds to 1.0f; +-inf gives +-1).  Both are computed in every lane
  and blended by the mask a < 1 (no branches).  Q's range is [-17.3, -1.84], so e**Q needs none
  of xp_exp512's overflow/underflow care: the same reduction and Taylor polynomial, and one
  scale 2**k built from its exponent bits.
* P and Q: near-minimax fits computed by :mod:`passes.patterns.x86_math_fit` (relative error
  for P, absolute error of erf for Q), coefficients rounded to float32.
* Measured natively against erf in float64 over every finite float32 input (4.28e9, both
  signs): max 2 ulp of the correctly rounded result, max absolute error 1.38e-7 (at 0.976),
  max relative error 1.78e-7 over normal results (denormal results: within 2 ulp).  glibc's
  erff: 1 ulp.  tests/test_vector_erf.py re-checks a sweep natively and through SIMDe.

``xp_tanh512(x)``: tanh(x) in every float32 lane.

* a = |x|, sign put back at the end as for erf.  a < 0.625: a * T(a*a), T of degree 6 (fitted
  in :mod:`passes.patterns.x86_math_fit`); a >= 0.625: 1 - 2 / (e**(2a) + 1) with a clamped to
  [0.625, 9.02] (beyond 9.02 tanh rounds to 1.0f), e**(2a) by the same reduction and scale as in
  erf (2a <= 18.04, no overflow).  Blended by the mask a < 0.625.
* Measured natively over every finite float32 input: max 1 ulp, max absolute error 8.17e-8,
  max relative error 1.47e-7 over normal results (glibc's tanhf: 2 ulp).
"""
from __future__ import annotations

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

EXP512 = r"""
static inline __m512 xp_exp512(__m512 x) {
    x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), 8);
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.98412698e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.38888889e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.33333333e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.16666667e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.66666667e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512 k1 = _mm512_roundscale_ps(_mm512_mul_ps(k, _mm512_set1_ps(0.5f)), 9);
    __m512 k2 = _mm512_sub_ps(k, k1);
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    const __m512i bias = _mm512_set1_epi32(0x4B400000 - 127);
    __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(
        _mm512_castps_si512(_mm512_add_ps(k1, magic)), bias), 23));
    __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(
        _mm512_castps_si512(_mm512_add_ps(k2, magic)), bias), 23));
    return _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
}
"""

ERF512 = r"""
static inline __m512 xp_erf512(__m512 x) {
    __m512 a = _mm512_abs_ps(x);
    __m512i sgn = _mm512_xor_si512(_mm512_castps_si512(x), _mm512_castps_si512(a));
    __m512 t = _mm512_mul_ps(a, a);
    __m512 p = _mm512_set1_ps(7.85401935e-05f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.000801024551f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.00518833427f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.0268538166f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.112835854f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.37612626f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.12837911f));
    __m512 near0 = _mm512_mul_ps(a, p);
    __m512 u = _mm512_sub_ps(_mm512_max_ps(_mm512_set1_ps(1.0f), _mm512_min_ps(_mm512_set1_ps(3.92f), a)),
                             _mm512_set1_ps(1.0f));
    __m512 q = _mm512_set1_ps(-2.16868521e-05f);
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(0.000289528427f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(-0.00201196759f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(0.0100464532f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(-0.0415634811f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(-0.843107104f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(-2.63896751f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(-1.84960556f));
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(q, _mm512_set1_ps(1.44269504088896341f)), 8);
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), q);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 e = _mm512_set1_ps(1.98412698e-4f);
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.38888889e-3f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(8.33333333e-3f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(4.16666667e-2f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.66666667e-1f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(0.5f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.0f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.0f));
    __m512 s = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(
        _mm512_castps_si512(_mm512_add_ps(k, _mm512_set1_ps(12582912.0f))), _mm512_set1_epi32(0x4B400000 - 127)), 23));
    __m512 tail = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_mul_ps(e, s));
    __mmask16 m = _mm512_cmp_ps_mask(a, _mm512_set1_ps(1.0f), _CMP_LT_OQ);
    __m512 y = _mm512_mask_blend_ps(m, tail, near0);
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(y), sgn));
}
"""

TANH512 = r"""
static inline __m512 xp_tanh512(__m512 x) {
    __m512 a = _mm512_abs_ps(x);
    __m512i sgn = _mm512_xor_si512(_mm512_castps_si512(x), _mm512_castps_si512(a));
    __m512 t = _mm512_mul_ps(a, a);
    __m512 p = _mm512_set1_ps(0.00212855916f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.00815917924f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.0216918532f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.0539447069f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.133331835f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.333333284f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f));
    __m512 near0 = _mm512_mul_ps(a, p);
    __m512 z = _mm512_mul_ps(_mm512_set1_ps(2.0f),
                             _mm512_max_ps(_mm512_set1_ps(0.625f), _mm512_min_ps(_mm512_set1_ps(9.02f), a)));
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(z, _mm512_set1_ps(1.44269504088896341f)), 8);
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), z);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 e = _mm512_set1_ps(1.98412698e-4f);
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.38888889e-3f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(8.33333333e-3f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(4.16666667e-2f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.66666667e-1f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(0.5f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.0f));
    e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.0f));
    __m512 s = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(
        _mm512_castps_si512(_mm512_add_ps(k, _mm512_set1_ps(12582912.0f))), _mm512_set1_epi32(0x4B400000 - 127)), 23));
    __m512 far = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_div_ps(_mm512_set1_ps(2.0f),
                               _mm512_fmadd_ps(e, s, _mm512_set1_ps(1.0f))));
    __mmask16 m = _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.625f), _CMP_LT_OQ);
    __m512 y = _mm512_mask_blend_ps(m, far, near0);
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(y), sgn));
}
"""

HELPERS = {"xp_exp512": EXP512, "xp_erf512": ERF512, "xp_tanh512": TANH512}


def finish(program: N.Program) -> N.Program:
    """Add ``#include <immintrin.h>`` / ``<math.h>`` and the helper functions the vectorized
    code calls, once, before the first function."""
    used_names = {n.name for n in walk(program) if isinstance(n, N.Intrinsic)} | \
                 {n.func for n in walk(program) if isinstance(n, N.Call) and isinstance(n.func, str)}
    used_vars = {n.name for n in walk(program) if isinstance(n, N.Var)}
    have_funcs = {it.name for it in program.items if isinstance(it, N.Func)}
    texts = [it.text for it in program.items if isinstance(it, N.Directive)]
    items = list(program.items)
    head = []
    if not any("immintrin.h" in t for t in texts):
        head.append(N.Directive("#include <immintrin.h>", "include"))
    if ("INFINITY" in used_vars or used_names & {"fmaxf", "fminf"}) and not any("math.h" in t for t in texts):
        head.append(N.Directive("#include <math.h>", "include"))
    if "_mm512_stream_ps" in used_names and not any("stdint.h" in t for t in texts):
        head.append(N.Directive("#include <stdint.h>", "include"))      # uintptr_t of the peel (x86_stream)
    funcs = []
    for name, text in HELPERS.items():
        if name in used_names and name not in have_funcs:
            funcs += [it for it in parse_text("#include <immintrin.h>\n" + text, "c", f"{name}.c").items
                      if isinstance(it, N.Func)]
    if funcs:
        first = next((k for k, it in enumerate(items) if isinstance(it, N.Func)), len(items))
        items = items[:first] + funcs + items[first:]
    return program.with_(items=tuple(head) + tuple(items))
