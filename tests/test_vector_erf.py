"""The AVX-512 erf and tanh helpers (passes/patterns/x86_math.py ``xp_erf512``, ``xp_tanh512``)
and the gelu loops they vectorize: accuracy over a sweep of float32 inputs (natively when this
CPU has AVX-512, and through SIMDe), special values, planted coefficient errors that the sweep
must catch, the coefficients' derivation (passes/patterns/x86_math_fit.py), and gelu (exact and
tanh form) migrated / tensorized to c and verified with the helper in it (and lowered back by
detensorize)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from xpiler.frontend import parse_file
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import detensorize, tensorize
from xpiler.passes.base import PassError
from xpiler.passes.patterns import x86_math_fit, x86_math, x86_vec

from test_pass_cache import ROOT, verify

#: bounds the helpers meet (every finite float32 checked once natively, see x86_math's
#: docstring: erf 2 ulp, max abs 1.38e-7, max rel 1.78e-7 over normal results; tanh 1 ulp,
#: 8.1e-8, 1.45e-7); gelu's spec: rtol 1e-4, atol 1e-5
MAX_ULP = 2
MAX_ABS = 2e-7
MAX_REL = 3e-7
#: helper -> (its text, the C double function it approximates, an input from which it is +-1.0f)
HELPERS = {"erf": ("ERF512", "erf", "3.92f"), "tanh": ("TANH512", "tanh", "9.02f")}

SWEEP = r"""
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
%s
static int32_t bits(float f) { int32_t b; memcpy(&b, &f, 4); return b < 0 ? INT32_MIN - b : b; }
static double max_abs, max_rel; static long worst;
static void check(const float *xs, int m) {
    float out[16];
    _mm512_storeu_ps(out, XP_FN(_mm512_maskz_loadu_ps((__mmask16)((1u << m) - 1u), xs)));
    for (int l = 0; l < m; l++) {
        double w = REF_FN((double)xs[l]), d = fabs((double)out[l] - w);
        if (d > max_abs) max_abs = d;
        if (fabs(w) >= 1.17549435e-38 && d / fabs(w) > max_rel) max_rel = d / fabs(w);
        long u = labs((long)bits(out[l]) - (long)bits((float)w));
        if (u > worst) worst = u;
    }
}
int main(int argc, char **argv) {
    uint32_t stride = (uint32_t)atoi(argv[1]);
    float buf[16]; int m = 0;
    /* every stride-th float32 bit pattern, both signs (denormals to the largest finite) */
    for (uint64_t b = 0; b < 0x7F800000u; b += stride) {
        uint32_t bb = (uint32_t)b; float f; memcpy(&f, &bb, 4);
        buf[m++] = f; buf[m++] = -f;
        if (m == 16) { check(buf, 16); m = 0; }
    }
    /* evenly spaced over [-5, 5], where gelu's inputs mostly fall */
    for (int i = 0; i <= (1 << 20); i++) {
        buf[m++] = -5.0f + 10.0f * (float)i / (float)(1 << 20);
        if (m == 16) { check(buf, 16); m = 0; }
    }
    if (m) check(buf, m);
    /* special values: sign kept for zeros, +-1 at +-inf, NaN stays NaN */
    float sp[8] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, ONE_FROM, 1e30f, -1e-45f}, o[16];
    _mm512_storeu_ps(o, XP_FN(_mm512_maskz_loadu_ps(0xFF, sp)));
    int special = o[0] == 0.0f && !signbit(o[0]) && o[1] == 0.0f && signbit(o[1]) && o[2] == 1.0f &&
                  o[3] == -1.0f && isnan(o[4]) && o[5] == 1.0f && o[6] == 1.0f && o[7] < 0.0f;
    printf("%%ld %%.6g %%.6g %%d\n", worst, max_abs, max_rel, special);
    return 0;
}
"""


def _substrates():
    from xpiler.platforms import c as CP
    out = []
    if {"avx512f"} <= CP.cpu_flags():
        out.append("native")
    if CP.simde_available() or os.environ.get("CI"):
        out.append("simde")
    return out


def _sweep(fn: str, helper_text: str, substrate: str, stride: int):
    """(worst ulp, max abs error, max relative error, special values right) of ``helper_text``
    (the helper of function ``fn``)."""
    from xpiler.platforms import c as CP
    _, ref, one_from = HELPERS[fn]
    d = Path(tempfile.mkdtemp(prefix="xp-erf-"))
    (d / "t.c").write_text((SWEEP % helper_text).replace("XP_FN", f"xp_{fn}512").replace("REF_FN", ref)
                           .replace("ONE_FROM", one_from))
    flags = ["-O2", f"-I{CP.COMMON_INCLUDE}"] + (["-mavx512f", "-mfma"] if substrate == "native" else
                                                  [f"-I{CP.SIMDE_WRAPPER}", "-mavx2", "-mfma"])
    subprocess.run(["gcc", *flags, "t.c", "-o", "t", "-lm"], cwd=d, check=True)
    out = subprocess.run(["./t", str(stride)], cwd=d, capture_output=True, text=True, check=True).stdout.split()
    shutil.rmtree(d, ignore_errors=True)
    return int(out[0]), float(out[1]), float(out[2]), out[3] == "1"


needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


@needs_gcc
@pytest.mark.parametrize("fn", ["erf", "tanh"])
@pytest.mark.parametrize("substrate", ["native", "simde"])
def test_helper_accuracy_and_special_values(substrate, fn):
    if substrate not in _substrates():
        pytest.skip(f"{substrate}: no AVX-512 here / SIMD Everywhere headers not installed")
    stride = 211 if substrate == "native" else 4099      # ~20M / ~1M bit patterns
    worst, mabs, mrel, special = _sweep(fn, getattr(x86_math, HELPERS[fn][0]), substrate, stride)
    assert special
    assert worst <= MAX_ULP, worst
    assert mabs <= MAX_ABS and mrel <= MAX_REL, (mabs, mrel)


@needs_gcc
@pytest.mark.parametrize("fn,old,new", [
    ("erf", "7.85401935e-05f", "7.95401935e-05f"),     # near-zero polynomial, top coefficient off by 1e-6
    ("erf", "-0.843107104f", "-0.843207104f"),          # tail polynomial, one coefficient off by 1e-4
    ("erf", "_mm512_set1_ps(3.92f)", "_mm512_set1_ps(3.5f)"),   # clamp too early: erf(3.5) != 1.0f
    ("tanh", "0.00212855916f", "0.00222855916f"),      # near-zero polynomial off by 1e-4
    ("tanh", "_mm512_set1_ps(9.02f)", "_mm512_set1_ps(8.0f)"),   # clamp too early
])
def test_sweep_catches_an_off_coefficient(fn, old, new):
    subs = _substrates()
    if not subs:
        pytest.skip("neither AVX-512 nor SIMD Everywhere here")
    text = getattr(x86_math, HELPERS[fn][0])
    assert old in text
    worst, mabs, mrel, _ = _sweep(fn, text.replace(old, new), subs[0], 4099)
    assert worst > MAX_ULP or mabs > MAX_ABS or mrel > MAX_REL


def test_coefficients_are_the_documented_fit():
    p, q, (ep, eq) = x86_math_fit.fit()
    assert ep < 1e-8 and eq < 1e-9               # float64 fit errors (relative / absolute)
    for lit in x86_math_fit.c_literals(p) + x86_math_fit.c_literals(q):
        assert f"_mm512_set1_ps({lit})" in x86_math.ERF512, lit
    t, et = x86_math_fit.fit_tanh()
    assert et < 1e-9
    for lit in x86_math_fit.c_literals(t):
        assert f"_mm512_set1_ps({lit})" in x86_math.TANH512, lit


def _intrinsics(prog):
    return {n.name for n in walk(prog) if isinstance(n, N.Intrinsic)}


def test_gelu_vectorizes_with_the_helper_and_verifies():
    src = ROOT / "examples" / "gelu" / "gelu.c"
    vec = tensorize.apply(parse_file(src), entry="gelu", target="c")
    # exact gelu takes the gelu-specific helper (tests/test_vector_gelu.py), not xp_erf512
    assert {"xp_gelu512", "_mm512_mask_storeu_ps"} <= _intrinsics(vec)
    assert any(isinstance(f, N.Func) and f.name == "xp_gelu512" for f in vec.items)
    assert not any(isinstance(f, N.Func) and f.name == "xp_exp512" for f in vec.items)   # only what is used
    v = verify(vec, src, dialect="c", launch={})
    assert v.verified, v.failures[:1]
    # detensorize recognizes the helper by its text and lowers it back to the scalar gelu (erff)
    low = detensorize.apply(vec, entry="gelu", target="cuda")
    assert not any(isinstance(f, N.Func) and f.name == "xp_gelu512" for f in low.items)
    assert "erff" in {n.func for n in walk(low) if isinstance(n, N.Call)} | _intrinsics(low)
    v = verify(low, src, dialect="c", launch={})
    assert v.verified, v.failures[:1]


def test_gelu_vector_output_verifies_through_simde(monkeypatch):
    from xpiler.platforms import c as CP
    if not CP.simde_available():
        pytest.skip("SIMD Everywhere headers not installed")
    monkeypatch.setenv("XPILER_C_SUBSTRATE", "simde")
    src = ROOT / "examples" / "gelu" / "gelu.c"
    vec = tensorize.apply(parse_file(src), entry="gelu", target="c")
    assert "xp_gelu512" in _intrinsics(vec)
    v = verify(vec, src, dialect="c", launch={})
    assert v.verified, v.failures[:1]
    assert v.substrate == "emu:simde-cpu"


def test_probe_check_rejects_a_wrong_erf_mapping(monkeypatch):
    # if the helper stood for another function, evaluating both sides on probes refuses the loop
    monkeypatch.setitem(x86_vec.UNARY, "erff", "xp_exp512")
    text = "void k(const float* x, float* y, int n) { for (int i = 0; i < n; i++) y[i] = erff(x[i]); }"
    from xpiler.frontend import parse_text
    with pytest.raises(PassError):
        tensorize.check(parse_text(text, "c", "k.c"), entry="k", target="c")


def test_gelu_cu_migrates_to_vector_c(tmp_path):
    from xpiler import api
    r = api.migrate(ROOT / "examples" / "gelu" / "gelu.cu", "c", outdir=tmp_path / "o", perf=False)
    assert r.verified
    code = Path(r.output_path).read_text()
    assert "static inline __m512 xp_gelu512(__m512 v)" in code and "erff(" not in code


GELU_TANH = """// tanh form of gelu: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
#include <math.h>
void gelu_tanh(const float *x, float *y, int n) {
    for (int i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}
"""

REF_TANH = """import numpy as np


def gelu_tanh(x, n):
    x64 = np.asarray(x, dtype=np.float64).reshape(-1)[:n]
    return (0.5 * x64 * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x64 + 0.044715 * x64 ** 3)))).astype(np.float32)
"""


def test_tanh_gelu_vectorizes_with_the_helper_and_verifies(tmp_path):
    src = tmp_path / "gelu_tanh.c"
    src.write_text(GELU_TANH)
    spec = (ROOT / "examples" / "gelu" / "gelu.c.toml").read_text()
    (tmp_path / "gelu_tanh.c.toml").write_text(spec.replace('entry = "gelu"', 'entry = "gelu_tanh"')
                                               .replace('"ref.py:gelu"', '"ref_tanh.py:gelu_tanh"'))
    (tmp_path / "ref_tanh.py").write_text(REF_TANH)
    vec = tensorize.apply(parse_file(src), entry="gelu_tanh", target="c")
    assert "xp_tanh512" in _intrinsics(vec)
    assert [f.name for f in vec.items if isinstance(f, N.Func) and f.name.startswith("xp_")] == ["xp_tanh512"]
    v = verify(vec, src, dialect="c", launch={})
    assert v.verified, v.failures[:1]
    low = detensorize.apply(vec, entry="gelu_tanh", target="cuda")
    assert "tanhf" in {n.func for n in walk(low) if isinstance(n, N.Call)} | _intrinsics(low)
