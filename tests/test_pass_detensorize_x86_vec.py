"""detensorize lowers every intrinsic the c tensorizer writes (passes/lowering/x86.py): masked
arithmetic, compares / blends, abs, sqrt, roundscale immediates, reduce_*, and tensorize's own
xp_exp512 helper (recognized by its exact text, lowered as expf)."""
from __future__ import annotations

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import detensorize, tensorize
from xpiler.passes.base import PassError
from xpiler.passes.patterns import x86_math

from test_pass_cache import ROOT, verify


def _x86_names(prog):
    return {n.name for n in walk(prog) if isinstance(n, N.Intrinsic) and n.name.startswith(("_mm512_", "xp_"))} | \
           {n.func for n in walk(prog) if isinstance(n, N.Call) and str(n.func).startswith("xp_")}


@pytest.mark.parametrize("op", ["softmax", "sigmoid", "layernorm", "gemm"])
def test_vectorized_c_lowers_back_and_verifies(op):
    src = ROOT / "examples" / op / f"{op}.c"
    vec = tensorize.apply(parse_file(src), entry=op, target="c")
    assert _x86_names(vec)
    low = detensorize.apply(vec, entry=op, target="bang")
    assert not _x86_names(low)
    assert not any(isinstance(f, N.Func) and f.name == "xp_exp512" for f in low.items)
    v = verify(low, src, dialect="c", launch={})
    assert v.verified, v.failures[:1]


def test_compare_blend_abs_sqrt_lower_to_lane_formulas():
    text = """void k(const float* x, const float* y, float* o, int n) {
        for (int i = 0; i < n; i++)
            o[i] = (x[i] > y[i] ? 2.0f : 3.0f) + (float)(x[i] < 0.0f) + fabsf(x[i]) + sqrtf(fabsf(y[i]))
                   + fmaxf(x[i], y[i]);
    }"""
    vec = tensorize.apply(parse_text(text, "c", "k.c"), entry="k", target="c")
    names = _x86_names(vec)
    assert {"_mm512_cmp_ps_mask", "_mm512_mask_blend_ps", "_mm512_maskz_mov_ps", "_mm512_abs_ps",
            "_mm512_sqrt_ps"} <= names
    low = detensorize.apply(vec, entry="k", target="cuda")
    assert not _x86_names(low)
    calls = {n.func if isinstance(n, N.Call) else n.name for n in walk(low) if isinstance(n, (N.Call, N.Intrinsic))}
    assert {"fabsf", "sqrtf"} <= calls
    # unordered compare (from fmaxf of two varying values) is `x != x || y != y`
    assert any(isinstance(n, N.BinOp) and n.op == "||" for n in walk(low))


def test_changed_exp_helper_is_not_taken_for_expf():
    # same name, different body: not tensorize's helper, so it is not replaced by expf; its
    # integer bit tricks have no lane lowering here and detensorize refuses
    changed = x86_math.EXP512.replace("1.44269504088896341f", "1.5f")
    text = "#include <immintrin.h>\n" + changed + """
    void k(const float* x, float* y) { _mm512_storeu_ps(&y[0], xp_exp512(_mm512_loadu_ps(&x[0]))); }"""
    p = parse_text(text, "c", "k.c")
    from xpiler.passes.lowering import x86 as LX
    assert LX.known_helpers(p) == {}
    with pytest.raises(PassError):
        detensorize.apply(p, entry="k", target="cuda")
    exact = parse_text("#include <immintrin.h>\n" + x86_math.EXP512 + text.split(changed)[1], "c", "k.c")
    assert LX.known_helpers(exact) == {"xp_exp512": "expf"}


def test_roundscale_numeric_immediates():
    text = """#include <immintrin.h>
    void k(const float* x, float* y) {
        _mm512_storeu_ps(&y[0], _mm512_roundscale_ps(_mm512_loadu_ps(&x[0]), 9));
        _mm512_storeu_ps(&y[16], _mm512_roundscale_ps(_mm512_loadu_ps(&x[16]), 8));
        _mm512_storeu_ps(&y[32], _mm512_roundscale_ps(_mm512_loadu_ps(&x[32]), 11));
    }"""
    low = detensorize.apply(parse_text(text, "c", "k.c"), entry="k", target="cuda")
    calls = {n.func if isinstance(n, N.Call) else n.name for n in walk(low) if isinstance(n, (N.Call, N.Intrinsic))}
    assert {"floorf", "nearbyintf", "truncf"} <= calls
    bad = text.replace(", 9)", ", 0x19)")       # a scale field: not a plain rounding
    with pytest.raises(PassError):
        detensorize.apply(parse_text(bad, "c", "k.c"), entry="k", target="cuda")
