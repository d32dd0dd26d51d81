"""tensorize on c: the AVX-512 loop vectorizer (passes/patterns/x86_vec.py, x86_loops.py, x86_math.py)."""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import tensorize
from xpiler.passes.base import PassError
from xpiler.passes.patterns import x86_math, x86_vec

from test_pass_cache import ROOT, verify


def ops_of(prog, entry):
    return sorted({n.name for n in walk(prog.func(entry)) if isinstance(n, N.Intrinsic)
                   and n.name.startswith(("_mm512_", "xp_"))})


def example(op, name=None):
    src = ROOT / "examples" / op / f"{name or op}.c"
    return src, parse_file(src)


@pytest.mark.parametrize("op,entry,needs", [
    ("sigmoid", "sigmoid", {"xp_exp512", "_mm512_div_ps", "_mm512_mask_storeu_ps"}),
    ("softmax", "softmax", {"_mm512_reduce_max_ps", "_mm512_reduce_add_ps", "xp_exp512", "_mm512_mask_max_ps"}),
    ("layernorm", "layernorm", {"_mm512_reduce_add_ps", "_mm512_mask_add_ps"}),
    ("rmsnorm", "rmsnorm", {"_mm512_reduce_add_ps"}),
    ("gemm", "gemm", {"_mm512_set1_ps", "_mm512_mul_ps", "_mm512_add_ps"}),
    ("conv1d", "conv1d", {"_mm512_loadu_ps"}),
])
def test_vectorized_and_verified(op, entry, needs):
    src, p = example(op)
    r = tensorize.apply(p, entry=entry, target="c")
    assert needs <= set(ops_of(r, entry))
    v = verify(r, src, dialect="c", launch={})
    assert v.verified, v.failures[:1]


def test_outer_loop_vectorization_over_output_column():
    # j is the lane; k stays a scalar loop; acc becomes a register; a[i*K+k] is broadcast
    text = """void mm(const float* a, const float* b, float* c, int M, int N, int K) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                float acc = 0.0f;
                for (int k = 0; k < K; k++) acc += a[i * K + k] * b[k * N + j];
                c[i * N + j] = acc;
            }
    }"""
    p = parse_text(text, "c", "mm.c")
    r = tensorize.apply(p, entry="mm", target="c")
    f = r.func("mm")
    assert any(isinstance(n, N.Decl) and n.name == "acc" and getattr(n.type, "name", "") == "__m512" for n in walk(f))
    inner = [n for n in walk(f) if isinstance(n, N.For) and n.var == "k"]
    assert inner and all(isinstance(n.step, N.Const) and n.step.value == 1 for n in inner)
    assert "_mm512_reduce_add_ps" not in ops_of(r, "mm")      # no reassociation: each lane sums in k order


def test_sum_reduction_and_max_reduction_forms():
    text = """void r(const float* x, float* out, int n) {
        float s = 0.0f, m = -1e30f;
        for (int i = 0; i < n; i++) s = s + x[i] * 2.0f;
        for (int i = 0; i < n; i++) m = fmaxf(x[i], m);
        out[0] = s; out[1] = m;
    }"""
    r = tensorize.apply(parse_text(text, "c", "r.c"), entry="r", target="c")
    assert {"_mm512_reduce_add_ps", "_mm512_reduce_max_ps"} <= set(ops_of(r, "r"))


@pytest.mark.parametrize("body,why", [
    ("y[i] = y[i + 1] + x[i];", "reads an element another iteration writes"),
    ("y[i] = x[2 * i];", "stride 2: a gather, not a vector load"),
    ("y[i] = x[i] * (float)i;", "the loop variable as a value"),
    ("s += x[i]; y[i] = s;", "the running sum is read inside the loop"),
    ("if (x[i] > 0.0f) y[i] = x[i];", "a branch that depends on the lane"),
    ("y[i] = logf(x[i]);", "no vector form of logf"),
    ("y[i] = x[i]; n = n - 1;", "the bound changes inside the loop"),
    ("y[idx[i]] = x[i];", "a scatter"),
    ("y[i] = x[i] + y[0];", "a broadcast of an element the loop writes"),
])
def test_refused_loops(body, why):
    text = ("void k(const float* x, float* y, const int* idx, int n) { float s = 0.0f;"
            " for (int i = 0; i < n; i++) { " + body + " } y[0] = s; }")
    with pytest.raises(PassError) as e:
        tensorize.check(parse_text(text, "c", "k.c"), entry="k", target="c")
    assert e.value.code == "XP4002", why


def test_local_pointer_into_the_written_buffer_is_refused():
    # p aliases y shifted by one element: lanes would communicate
    text = """void k(float* y, int n) {
        float* p = y + 1;
        for (int i = 0; i < n; i++) y[i] = p[i] * 2.0f;
    }"""
    with pytest.raises(PassError):
        tensorize.check(parse_text(text, "c", "k.c"), entry="k", target="c")


def test_probe_check_rejects_a_wrong_translation(monkeypatch):
    # a translation-table bug (sub written as add) is caught by evaluating both sides on probes
    monkeypatch.setitem(x86_vec.BIN, "-", "_mm512_add_ps")
    text = "void k(const float* x, float* y, int n) { for (int i = 0; i < n; i++) y[i] = x[i] - 1.0f; }"
    with pytest.raises(PassError):
        tensorize.check(parse_text(text, "c", "k.c"), entry="k", target="c")


def test_omp_loop_keeps_its_pragma_and_tail_is_masked():
    src, p = example("relu")
    from xpiler.passes import binding
    q = binding.apply(p, entry="relu", target="c")
    q = q[0] if isinstance(q, tuple) else q
    r = tensorize.apply(q, entry="relu", target="c", stream=0)
    fors = [n for n in walk(r.func("relu")) if isinstance(n, N.For)]
    assert any(f.binding == "omp" and isinstance(f.step, N.Const) and f.step.value == 16 for f in fors)
    v = verify(r, src, dialect="c", launch={})
    assert v.verified, v.failures[:1]
    # the default (non-temporal stores from x86_stream.STREAM_MIN on): the omp loop walks chunks
    from xpiler.passes.patterns.x86_stream import CHUNK
    r = tensorize.apply(q, entry="relu", target="c")
    fors = [n for n in walk(r.func("relu")) if isinstance(n, N.For)]
    assert any(f.binding == "omp" and isinstance(f.step, N.Const) and f.step.value == CHUNK for f in fors)
    v = verify(r, src, dialect="c", launch={})
    assert v.verified, v.failures[:1]


EXP_TEST = r"""
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
%s
static int32_t bits(float f) { int32_t b; memcpy(&b, &f, 4); return b < 0 ? INT32_MIN - b : b; }
int main(void) {
    static float xs[1 << 20]; int n = 0;
    for (int i = 0; i < (1 << 20) - 32; i++) xs[n++] = -110.0f + 220.0f * (float)i / (float)(1 << 20);
    float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.72f, 88.73f, 89.0f, 1e30f, -1e30f,
                  -87.3f, -100.0f, -103.97f, -103.98f, -104.0f, -150.0f, 1e-40f, -1e-40f, 0.5f, -0.5f};
    for (unsigned i = 0; i < sizeof sp / sizeof sp[0]; i++) xs[n++] = sp[i];
    long worst = 0; int bad_special = 0;
    for (int i = 0; i < n; i += 16) {
        float out[16]; int m = n - i < 16 ? n - i : 16;
        _mm512_storeu_ps(out, xp_exp512(_mm512_maskz_loadu_ps((__mmask16)((1u << m) - 1u), xs + i)));
        for (int l = 0; l < m; l++) {
            float want = expf(xs[i + l]);
            if (isnan(want) || isinf(want) || want == 0.0f) {
                if (!(isnan(want) ? isnan(out[l]) : out[l] == want)) bad_special++;
                continue;
            }
            long d = labs((long)bits(out[l]) - (long)bits(want));
            if (d > worst) worst = d;
        }
    }
    printf("%%ld %%d\n", worst, bad_special);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("substrate", ["native", "simde"])
def test_vector_exp_accuracy_and_special_values(substrate):
    from xpiler.platforms import c as CP
    if substrate == "native" and not {"avx512f"} <= CP.cpu_flags():
        pytest.skip("no AVX-512 here")
    if substrate == "simde" and not CP.simde_available() and not os.environ.get("CI"):
        pytest.skip("SIMD Everywhere headers not installed (libsimde-dev; CI installs them)")
    d = Path(tempfile.mkdtemp(prefix="xp-exp-"))
    (d / "t.c").write_text(EXP_TEST % x86_math.EXP512)
    flags = ["-O2", f"-I{CP.COMMON_INCLUDE}"] + (["-march=native"] if substrate == "native" else
                                                  [f"-I{CP.SIMDE_WRAPPER}", "-mavx2", "-mfma"])
    subprocess.run(["gcc", *flags, "t.c", "-o", "t", "-lm"], cwd=d, check=True)
    worst, bad = map(int, subprocess.run(["./t"], cwd=d, capture_output=True, text=True, check=True).stdout.split())
    assert bad == 0          # inf, 0, NaN exactly where expf gives them
    assert worst <= 2        # ulps (denormal results included)


def test_loop_the_statement_rewriter_cannot_reach_is_skipped_not_crashed():
    text = """void k(const float* x, float* y, int n) {
        if (n > 0) for (int i = 0; i < n; i++) y[i] = x[i] * 2.0f;
        for (int i = 0; i < n; i++) y[i] = y[i] + 1.0f;
    }"""
    r = tensorize.apply(parse_text(text, "c", "k.c"), entry="k", target="c")
    assert "_mm512_add_ps" in ops_of(r, "k")


# ---------------------------------------------------------------- flat output loops (x86_delin)
FLAT = """void pool(const float* in, float* out, int N, int C, int K) {
    int total = N * C;
    for (int idx = 0; idx < total; ++idx) {
        int c = idx % C;
        int t = idx / C;
        const float* win = in + t * K * C + c;
        float m = win[0];
        for (int k = 0; k < K; ++k) { float v = win[k * C]; m = v > m ? v : m; }
        out[idx] = m;
    }
}"""


def test_flat_index_is_split_and_channel_loop_vectorized():
    r = tensorize.apply(parse_text(FLAT, "c", "pool.c"), entry="pool", target="c")
    f = r.func("pool")
    ifs = [n for n in walk(f.body) if isinstance(n, N.If) and str(n.cond).find("C") >= 0]
    assert ifs, "split is guarded by C > 0"
    assert "_mm512_max_ps" in ops_of(r, "pool")
    # the else branch keeps the original scalar loop for C <= 0
    assert any(isinstance(n, N.For) and n.var == "idx" for n in walk(f))


@pytest.mark.parametrize("change,why", [
    ("int total = N * C;", None),
    ("int total = N * C + 1;", "total not a multiple of C"),
    ("int total = N * K;", "total not a product with C"),
])
def test_flat_index_split_needs_a_product_with_the_divisor(change, why):
    text = FLAT.replace("int total = N * C;", change)
    if why is None:
        tensorize.check(parse_text(text, "c", "pool.c"), entry="pool", target="c")
        return
    with pytest.raises(PassError) as e:
        tensorize.check(parse_text(text, "c", "pool.c"), entry="pool", target="c")
    assert e.value.code == "XP4002", why


def test_flat_index_split_refused_when_divisor_is_assigned():
    text = FLAT.replace("int total = N * C;", "C = C + 0; int total = N * C;")
    with pytest.raises(PassError):
        tensorize.check(parse_text(text, "c", "pool.c"), entry="pool", target="c")


def test_pointer_let_is_not_inlined_when_its_variables_change():
    # w = x + t, then t changes: substituting w would read the wrong element
    text = """void k(const float* x, float* y, int n, int s) {
        for (int i = 0; i < n; i++) { int t = s; const float* w = x + t; t = t + 1; y[i] = w[i] + (float)t; }
    }"""
    from xpiler.passes.patterns import x86_loops
    p = parse_text(text, "c", "k.c")
    loop = next(n for n in walk(p.func("k")) if isinstance(n, N.For))
    stmts = x86_loops._inline_lane_ints(loop.body.stmts, "i")
    assert any(isinstance(s, N.Decl) and s.name == "w" for s in stmts)


def test_select_max_is_exact_operand_order():
    # x > m ? x : m is _mm512_max_ps(x, m) (SRC1 > SRC2 ? SRC1 : SRC2): NaN or a tie gives m
    text = """void k(const float* x, const float* m, float* y, int n) {
        for (int i = 0; i < n; i++) y[i] = x[i] > m[i] ? x[i] : m[i];
    }"""
    r = tensorize.apply(parse_text(text, "c", "k.c"), entry="k", target="c")
    mx = [n for n in walk(r.func("k")) if isinstance(n, N.Intrinsic) and n.name == "_mm512_max_ps"]
    assert mx and "x" in str(mx[0].args[0]) and "m" in str(mx[0].args[1])


def test_maxpool_from_cuda_is_vectorized_and_verified(tmp_path):
    import xpiler
    r = xpiler.migrate(ROOT / "examples" / "maxpool2d" / "maxpool2d.cu", to="c", outdir=tmp_path / "o",
                       tune=False, perf=False)
    assert r.verified, [d.format() for d in r.diagnostics]
    assert "_mm512_max_ps" in r.output_path.read_text()
