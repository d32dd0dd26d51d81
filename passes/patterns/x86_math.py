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

HELPERS = {"xp_exp512": EXP512}


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
    funcs = []
    for name, text in HELPERS.items():
        if name in used_names and name not in have_funcs:
            funcs += [it for it in parse_text("#include <immintrin.h>\n" + text, "c", f"{name}.c").items
                      if isinstance(it, N.Func)]
    if funcs:
        first = next((k for k, it in enumerate(items) if isinstance(it, N.Func)), len(items))
        items = items[:first] + funcs + items[first:]
    return program.with_(items=tuple(head) + tuple(items))
