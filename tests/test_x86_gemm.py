"""tensorize(target="c", micro=...): the register-tiled, cache-blocked AVX-512 gemm
(passes/patterns/x86_gemm.py) -- produced, verified (spec + derived boundary instances), refused
with its reason for what it cannot take."""
import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import tensorize
from xpiler.passes.base import PassError
from xpiler.passes.patterns import x86_gemm as XG
from xpiler.printers import print_program

from test_pass_cache import ROOT, verify


def intrinsics(prog, entry):
    return {n.name for n in walk(prog.func(entry)) if isinstance(n, N.Intrinsic)}


def example(op, name=None):
    src = ROOT / "examples" / op / f"{name or op}.c"
    return src, parse_file(src)


@pytest.mark.parametrize("op,params", [
    ("gemm", {"micro": "6x32", "kc": 256}),
    # every kind of edge: 7-deep k slices, 48-column blocks (several per N), 10-row blocks with
    # a partial 5-row panel, 3 zmm per row
    ("gemm", {"micro": "5x48", "kc": 7, "mc": 10, "nc": 48}),
    ("bmm", {"micro": "8x32", "kc": 33, "nc": 32}),
])
def test_c_contraction_becomes_the_register_tiled_form_and_verifies(op, params):
    src, p = example(op)
    r = tensorize.apply(p, entry=op, target="c", **params)
    ops = intrinsics(r, op)
    assert {"_mm512_fmadd_ps", "_mm512_mask_storeu_ps", "_mm512_maskz_loadu_ps", "_mm512_set1_ps"} <= ops
    mr, nr = (int(x) for x in params["micro"].split("x"))
    # MR x NR/16 accumulators, in registers (scalar __m512 locals, not an array)
    accs = {n.name for n in walk(r.func(op)) if isinstance(n, N.Decl) and getattr(n.type, "name", "") == "__m512"
            and n.name.startswith("xg_c")}
    assert len(accs) == mr * nr // 16
    v = verify(r, src, dialect="c", launch={})
    assert v.verified, v.failures[:1]
    assert any(i.startswith("boundary") for i in v.instances)


def test_verifies_under_simde(monkeypatch):
    import os
    from xpiler.platforms import c as CP
    if not CP.simde_available() and not os.environ.get("CI"):   # CI installs libsimde-dev: never skipped there
        pytest.skip("SIMD Everywhere headers not installed")
    monkeypatch.setenv("XPILER_C_SUBSTRATE", "simde")
    src, p = example("bmm")
    r = tensorize.apply(p, entry="bmm", target="c", micro="6x32", kc=40, nc=64)
    v = verify(r, src, dialect="c", launch={})
    assert v.verified and v.substrate == "emu:simde-cpu", v.failures[:1]


def test_a_block_is_copied_by_rows_and_read_at_constant_row_offsets():
    # (docs/decisions.md, 2026-12-06 "A panels by rows"): row i of A's block at ap + i*KC, copied
    # 16 floats at a time; the micro-kernel reads row r of its panel at r*KC (no scalar interleave)
    _, p = example("bmm")
    text = print_program(tensorize.apply(p, entry="bmm", target="c", micro="6x32", kc=128))
    assert "float *xg_dst = xg_ap + xg_i * 128;" in text
    assert "_mm512_storeu_ps(xg_dst + xg_k, _mm512_loadu_ps(xg_src + xg_k));" in text
    assert "const float *xg_pa = xg_ap + xg_ir * 128;" in text
    assert all(f"_mm512_set1_ps(xg_pa[{r * 128} + xg_k])" in text for r in range(6))
    assert "* 6 + xg_r]" not in text


@pytest.mark.parametrize("src", ["gemm/gemm.cu", "gemm/gemm.mlu", "bmm/bmm.hip"])
def test_default_plan_to_c_uses_the_form(tmp_path, src):
    from xpiler.api import migrate
    r = migrate(ROOT / "examples" / src, to="c", outdir=tmp_path / "o", perf=False)
    assert r.verified
    assert "_mm512_fmadd_ps" in r.code and "xg_bp" in r.code
    assert any(s.pass_name == "tensorize" and s.params.get("micro") for s in r.steps)


def test_candidates_offer_the_tiles_for_a_contraction_only():
    _, p = example("gemm")
    cands = tensorize.candidates(p, "c")
    tiles = [(c["micro"], c["kc"]) for c in cands if "micro" in c]
    assert tiles == list(XG.CHOICES)
    _, relu = example("relu")
    assert not [c for c in tensorize.candidates(relu, "c") if "micro" in c]


MM = """void mm(const {T}* A, const {T}* B, {T}* C, int M, int N, int K) {{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {{
            {T} acc = 0;
            for (int k = 0; k < K; k++) acc += {a} * {b};
            {c} = acc;
        }}
}}"""


def refusal(text, **params):
    p = parse_text(text, "c", "mm.c")
    with pytest.raises(PassError) as e:
        tensorize.apply(p, entry="mm", target="c", **(params or {"micro": "6x32", "kc": 256}))
    return e.value


def test_refuses_a_non_contraction_with_its_reason():
    _, p = example("relu")
    with pytest.raises(PassError) as e:
        tensorize.apply(p, entry="relu", target="c", micro="6x32", kc=256)
    assert e.value.code == "XP4002" and "accumulation form not recognised" in e.value.why


def test_refuses_a_non_unit_inner_stride():
    # A read down a column (A[k][i]): k does not advance by one element
    e = refusal(MM.format(T="float", a="A[k * M + i]", b="B[k * N + j]", c="C[i * N + j]"))
    assert e.code == "XP4001" and "non-unit inner stride: 'A'" in e.why


def test_refuses_a_non_float_contraction():
    e = refusal(MM.format(T="int", a="A[i * K + k]", b="B[k * N + j]", c="C[i * N + j]"))
    assert "non-float" in e.why


def test_refuses_c_aliasing_an_operand():
    text = MM.format(T="float", a="A[i * K + k]", b="C[k * N + j]", c="C[i * N + j]")
    e = refusal(text)
    assert "C aliases an operand" in e.why


@pytest.mark.parametrize("params,words", [
    ({"micro": "16x64"}, "zmm registers"),
    ({"micro": "6x20"}, "multiple of 16"),
    ({"micro": "6x32", "kc": 256, "mc": 100}, "multiple of MR"),
    ({"micro": "6x32", "unroll": 4}, "unknown parameter"),
])
def test_bad_parameters_are_xp4210(params, words):
    e = refusal(MM.format(T="float", a="A[i * K + k]", b="B[k * N + j]", c="C[i * N + j]"), **params)
    assert e.code == "XP4210" and words in e.why


def test_no_untested_fallback_k_zero_runs_the_tiled_path(tmp_path):
    """The form keeps no second copy of the nest (docs/decisions.md, 2026-12-05: a path no test
    runs is not emitted); K <= 0 takes the tiled path with one k slice of length 0 and writes
    C = 0, as the nest does; a failed malloc aborts with a message."""
    import shutil
    import subprocess
    from xpiler.platforms.c import cpu_flags
    from xpiler.printers import print_program
    src, p = example("gemm")
    r = tensorize.apply(p, entry="gemm", target="c", micro="6x32", kc=256)
    text = print_program(r, "c")
    assert "c[j] += a * b[j]" not in text and "} else {" not in text.split("xg_bp")[-1]
    assert "abort();" in text and "xg_Kb" in text
    if "avx512f" not in cpu_flags() or not shutil.which("gcc"):
        pytest.skip("needs gcc and AVX-512 to run the output")
    (tmp_path / "gemm.c").write_text(text)
    (tmp_path / "main.c").write_text(r"""
#include <stdio.h>
#include <math.h>
void gemm(const float *A, const float *B, float *C, int M, int N, int K);
int main(void) {
    float A[1], B[1], C[7 * 37];
    for (int i = 0; i < 7 * 37; ++i) C[i] = NAN;
    gemm(A, B, C, 7, 37, 0);
    for (int i = 0; i < 7 * 37; ++i) if (C[i] != 0.0f) { printf("C[%d] = %g\n", i, C[i]); return 1; }
    return 0;
}
""")
    subprocess.run(["gcc", "-O1", "-mavx512f", "gemm.c", "main.c", "-o", "run", "-lm"], cwd=tmp_path, check=True)
    assert subprocess.run(["./run"], cwd=tmp_path).returncode == 0
