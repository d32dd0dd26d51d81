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

``xp_gelu512(v)``: exact gelu, 0.5 v (1 + erf(v / sqrt 2)) = v Phi(v), in every float32 lane;
the vectorizer writes it for that expression (:mod:`passes.patterns.x86_gelu` recognizes its
spellings) instead of the erf form, which evaluates both of erf's branches and a full exp.

* a = min(|v|, 15.999999); h = Phi(-a) = erfc(a / sqrt 2) / 2 is computed as R**16 with
  R = G_i(s), i = floor(a), s = a - i: 16 polynomials of degree 6 (one per unit interval),
  their coefficients picked per lane by ``_mm512_permutexvar_ps`` from 7 constant tables
  (fitted in :mod:`passes.patterns.x86_math_fit`).  The index is built from floor(a) by the
  1.5 * 2**23 trick (the low mantissa bits are the integer; the permute reads the low 4 bits),
  which SIMDe 0.7.4 also has (it lacks ``_mm512_cvttps_epi32``).
* r8 = R**8 by three squarings; v >= 0: v * (1 - r8*r8) (one fnmadd); v < 0: (max(v, -16) * r8) * r8,
  so the small negative results keep their *relative* precision (no 1 + erf cancellation) and
  go gradually to denormals; beyond -14.4 gelu rounds to -0 and so does this (-16 * Phi(-16)
  underflows; the max keeps a huge v from multiplying back up).  Blended by the mask v < 0.
* Special values: +-0 -> +-0, +inf -> +inf, -inf -> -0 (gelu's limit; the scalar expression
  0.5f * v * (1 + erff(..)) gives NaN there, -inf * 0), NaN -> NaN.
* About 28 vector operations per 16 elements (xp_erf512 alone is about 43, plus gelu's 4).
* Error, measured through SIMDe (``emu:simde-cpu``, this host has no AVX-512; the operations
  are IEEE float32 ones with the same results natively) over every finite float32 input (both
  signs, 4.28e9 values) against 0.5 v erfc(-v / sqrt 2) in float64: max relative error
  2.55e-6 over normal results (at v = -9.751; the float32 rounding of R, times 16), max absolute
  error 3.84e-7.  This is about 14 times xp_erf512's relative error, well inside every gelu
  spec's tolerance (rtol 1e-4 / atol 1e-5, the tightest rtol 1e-5 / atol 1e-6).
  tests/test_vector_gelu.py re-checks a sweep and the special values.
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

GELU512 = r"""
static inline __m512 xp_gelu512(__m512 v) {
    __m512 a = _mm512_min_ps(_mm512_abs_ps(v), _mm512_set1_ps(15.9999990f));
    __m512 f = _mm512_roundscale_ps(a, 9);
    __m512i i = _mm512_castps_si512(_mm512_add_ps(f, _mm512_set1_ps(12582912.0f)));
    __m512 s = _mm512_sub_ps(a, f);
    __m512 r = _mm512_permutexvar_ps(i, _mm512_setr_ps(-1.91766067e-05f, -5.39092798e-05f, 4.27592931e-05f, 4.32961451e-06f, 3.99279343e-05f, -1.26660498e-05f, -5.33966295e-06f, -1.48186803e-06f,
        -4.38494999e-06f, -6.1827659e-06f, 5.59844239e-07f, -2.10426464e-07f, -1.71536414e-07f, -2.15230585e-07f, 7.25995903e-08f, 1.33780418e-07f));
    r = _mm512_fmadd_ps(r, s, _mm512_permutexvar_ps(i, _mm512_setr_ps(3.63965155e-05f, 0.000114521587f, -0.000175730573f, -4.6648518e-05f, -0.000136263872f, 4.11428991e-05f, 3.0099136e-05f, 2.15668824e-05f,
        2.75638758e-05f, 2.74500962e-05f, 1.2647464e-06f, 1.52348569e-08f, -1.72375587e-06f, -1.77604352e-06f, -2.16514104e-06f, -1.69720681e-06f)));
    r = _mm512_fmadd_ps(r, s, _mm512_permutexvar_ps(i, _mm512_setr_ps(0.000535768457f, 0.000289960386f, 0.000374332361f, 6.26673909e-06f, -3.9310049e-05f, -0.000295733364f, -0.00025456358f, -0.00016908934f,
        -9.22324762e-05f, -2.74167451e-05f, 3.86295796e-05f, 5.02075491e-05f, 4.65524499e-05f, 3.46959496e-05f, 2.33225437e-05f, 1.3800799e-05f)));
    r = _mm512_fmadd_ps(r, s, _mm512_permutexvar_ps(i, _mm512_setr_ps(-0.00122992671f, 0.00100567145f, 0.00224871887f, 0.00277089584f, 0.00234622997f, 0.00159177755f, 0.000604308676f, -0.000206372599f,
        -0.000687642023f, -0.000852980767f, -0.000806191005f, -0.000630374067f, -0.000433857378f, -0.000267724099f, -0.000150528052f, -7.74376458e-05f)));
    r = _mm512_fmadd_ps(r, s, _mm512_permutexvar_ps(i, _mm512_setr_ps(-0.0178638902f, -0.0182808358f, -0.0131486543f, -0.00528795458f, 0.00267639523f, 0.00869470462f, 0.0119197713f, 0.012427927f,
        0.0109865349f, 0.00857889745f, 0.00603970513f, 0.00387360877f, 0.00228064437f, 0.00123846717f, 0.00062255282f, 0.000290368072f)));
    r = _mm512_fmadd_ps(r, s, _mm512_permutexvar_ps(i, _mm512_setr_ps(-0.0477532223f, -0.0849585086f, -0.117093951f, -0.135771289f, -0.138218194f, -0.126426265f, -0.105314001f, -0.0805610716f,
        -0.0569015555f, -0.0372485034f, -0.0226590764f, -0.0128340852f, -0.0067783501f, -0.00334205828f, -0.00153967552f, -0.000663254468f)));
    r = _mm512_fmadd_ps(r, s, _mm512_permutexvar_ps(i, _mm512_setr_ps(0.957603276f, 0.891309202f, 0.789426148f, 0.661673605f, 0.523349226f, 0.390017986f, 0.27361095f, 0.180591226f,
        0.112102702f, 0.0654309839f, 0.0359022506f, 0.0185171422f, 0.00897630397f, 0.00408939784f, 0.00175078737f, 0.000704366656f)));
    r = _mm512_mul_ps(r, r);
    r = _mm512_mul_ps(r, r);
    r = _mm512_mul_ps(r, r);
    __m512 pos = _mm512_mul_ps(v, _mm512_fnmadd_ps(r, r, _mm512_set1_ps(1.0f)));
    __m512 neg = _mm512_mul_ps(_mm512_mul_ps(_mm512_max_ps(v, _mm512_set1_ps(-16.0f)), r), r);
    __mmask16 m = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(m, pos, neg);
}
"""

HELPERS = {"xp_exp512": EXP512, "xp_erf512": ERF512, "xp_tanh512": TANH512, "xp_gelu512": GELU512}


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
