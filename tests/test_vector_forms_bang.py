"""Vector sources to BANG vector forms (issue 15): an AVX-512 source's lane loops are flattened
(passes/flatten_lanes.py, the c -> bang plan's step) so that cache / tensorize stage the element
loop in NRAM and write a ``__bang_*`` vector op; end to end the output verifies on the BANG
emulator (ASan on) and meets the idiom rule of benchmarks/idiom_check.py."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from xpiler.frontend import parse_text
from xpiler.passes.base import PassError, get
from xpiler.printers import print_program

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"

LANES = """
void f(const float* x, float* y, int n) {
    int nvec = n / 16;
    for (int v = 0; v < nvec; ++v) {
        int i = v * 16;
        float xv[16];
        for (int l = 0; l < 16; ++l) xv[l] = x[i + l];
        for (int l2 = 0; l2 < 16; ++l2) y[i + l2] = xv[l2] * 2.0f;
    }
}
"""


def _c(text):
    return parse_text(text, "c", "<test>")


def test_flatten_lanes_fuses_contracts_and_collapses():
    out = get("flatten_lanes").apply(_c(LANES), entry="f")
    text = print_program(out, "c")
    assert text.count("for (") == 1, text
    assert "< nvec * 16" in text and "xv[" not in text, text


def test_flatten_lanes_refuses_a_program_without_lane_loops():
    plain = "void f(const float* x, float* y, int n) { for (int i = 0; i < n; ++i) y[i] = x[i]; }"
    with pytest.raises(PassError) as ei:
        get("flatten_lanes").apply(_c(plain), entry="f")
    assert ei.value.code == "XP4002"


def test_tensorize_reads_a_constant_scalar_as_its_value():
    src = """
#include <bang.h>
__mlu_global__ void k(const float* x, float* y, int n) {
    __nram__ float x_nram[8192];
    __nram__ float y_nram[8192];
    const float zero = 0.0f;
    for (int c = taskId * 8192; c < n; c += taskDim * 8192) {
        int len = min(8192, n - c);
        __memcpy(x_nram, x + c, len * sizeof(float), GDRAM2NRAM);
        for (int i = 0; i < len; ++i) {
            float v = x_nram[i];
            y_nram[i] = v > zero ? v : zero;
        }
        __memcpy(y + c, y_nram, len * sizeof(float), NRAM2GDRAM);
    }
}
"""
    out = get("tensorize").apply(parse_text(src, "bang", "<test>"), entry="k", target="bang")
    assert "__bang_active_relu(y_nram, x_nram" in print_program(out, "bang")
    # a constant that is assigned again is no constant: nothing matches
    changed = src.replace("const float zero = 0.0f;", "float zero = 0.0f;\n    zero = 0.5f;")
    with pytest.raises(PassError):
        get("tensorize").apply(parse_text(changed, "bang", "<test>"), entry="k", target="bang")


@pytest.mark.parametrize("op,name", [pytest.param("add", "add_avx512", marks=pytest.mark.long),   # (relu: the same plan)
                                     ("relu", "relu_avx512")])
def test_avx512_source_reaches_bang_vector_ops(tmp_path, op, name):
    from xpiler.migration.driver import migrate
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import idiom_check
    out = tmp_path / f"{name}.c__to__bang"
    r = migrate(EX / op / f"{name}.c", "bang", outdir=out, jobs=1, perf=False)
    assert r.verified, [str(d) for d in r.diagnostics]
    assert r.verdict.substrate == "emu:bang-cpu"
    assert "flatten_lanes" in [s.pass_name for s in r.steps]
    row = idiom_check.check_file(r.output_path)
    assert idiom_check.requirement(row) == ("vector forms", True), row
    assert row["onchip"] > 0


def test_lanes_plan_is_skipped_for_a_scalar_source(tmp_path):
    import json
    from xpiler.migration.driver import migrate
    from xpiler.migration.pipeline import REQUIRE, plans
    lanes = plans("c", "bang")[0]
    assert [n for n, p in lanes if p.get(REQUIRE)] == ["flatten_lanes", "tensorize"]
    r = migrate(EX / "add" / "add.c", "bang", outdir=tmp_path / "o", jobs=1, perf=False)
    assert r.verified and "__bang_add" in r.code
    notes = [e for e in map(json.loads, r.log_path.read_text().splitlines()) if e.get("type") == "note"]
    skipped = [n for n in notes if n.get("what") == "plan skipped"]
    # both flatten_lanes plans (lanes, then the row plan with rows=True) are skipped
    assert [n["plan"] for n in skipped] == [0, 1] and all("flatten_lanes" in n["why"] for n in skipped)


VEC4 = """
__global__ void k(const float* a, const float* b, float* c, int n) {
    int nvec = n / 4;
    const float4* a4 = (const float4*)a;
    const float4* b4 = (const float4*)b;
    float4* c4 = (float4*)c;
    for (int i = 0; i < nvec; ++i) {
        float4 va = a4[i];
        float4 vb = b4[i];
        float4 vc;
        vc.x = va.x + vb.x;
        vc.y = va.y + vb.y;
        vc.z = va.z + vb.z;
        vc.w = va.w + vb.w;
        c4[i] = vc;
    }
}
"""


def _cu(text):
    return parse_text(text, "cuda", "<test>")


def test_float4_becomes_lane_loops_and_one_element_loop():
    from xpiler.passes.flatten_lanes import vectors_to_lanes
    lanes = print_program(vectors_to_lanes(_cu(VEC4), "k"), "cuda")
    assert "float4" not in lanes and "float va[4];" in lanes, lanes
    assert "for (int xfl_l1 = 0; xfl_l1 < 4; ++xfl_l1)" in lanes, lanes
    assert "va[xfl_l1] = a[4 * i + xfl_l1];" in lanes, lanes
    assert "vc[xfl_l3] = va[xfl_l3] + vb[xfl_l3];" in lanes, lanes       # the four components: one loop
    assert "c[4 * i + xfl_l4] = vc[xfl_l4];" in lanes, lanes
    flat = print_program(get("flatten_lanes").apply(_cu(VEC4), entry="k", vectors=True), "cuda")
    assert flat.count("for (") == 1 and "< nvec * 4" in flat, flat


def test_float4_components_that_differ_stay_separate_statements():
    from xpiler.passes.flatten_lanes import vectors_to_lanes
    src = VEC4.replace("vc.y = va.y + vb.y;", "vc.y = va.y - vb.y;")
    text = print_program(vectors_to_lanes(_cu(src), "k"), "cuda")
    assert "vc[1] = va[1] - vb[1];" in text and "vc[0] = va[0] + vb[0];" in text, text


def test_float4_through_an_inline_cast():
    from xpiler.passes.flatten_lanes import vectors_to_lanes
    src = VEC4.replace("float4 va = a4[i];", "float4 va = reinterpret_cast<const float4*>(a)[i];").replace(
        "c4[i] = vc;", "((float4*)c)[i] = vc;")
    text = print_program(vectors_to_lanes(_cu(src), "k"), "cuda")
    assert "va[xfl_l1] = a[4 * i + xfl_l1];" in text and "c[4 * i + xfl_l4] = vc[xfl_l4];" in text, text
    # an inline cast of a pointer to another element type is no view of float lanes
    src = src.replace("const float* a,", "const int* a,")
    assert vectors_to_lanes(_cu(src), "k") is None


def test_float4_used_whole_is_left_alone():
    from xpiler.passes.flatten_lanes import vectors_to_lanes
    # a vector copied whole to another (not through a cast pointer): no lane form is claimed
    src = VEC4.replace("c4[i] = vc;", "float4 vd = vc;\n        c4[i] = vd;")
    assert vectors_to_lanes(_cu(src), "k") is None
    # an index the lane loop would evaluate once per lane: a side effect, or a memory read
    assert vectors_to_lanes(_cu(VEC4.replace("float4 va = a4[i];", "float4 va = a4[i++];")), "k") is None
    src = VEC4.replace("int nvec = n / 4;", "int nvec = n / 4;\n    const int* ix = (const int*)b;").replace(
        "c4[i] = vc;", "c4[ix[i]] = vc;")
    assert vectors_to_lanes(_cu(src), "k") is None
    # a vector pointer that is not a cast of a pointer to its element type
    src = VEC4.replace("const float4* a4 = (const float4*)a;", "const float4* a4 = (const float4*)(a + 1);")
    assert vectors_to_lanes(_cu(src), "k") is None
    with pytest.raises(PassError) as ei:
        get("flatten_lanes").apply(_cu(src), entry="k", vectors=True)
    assert ei.value.code == "XP4002"


def test_float4_source_reaches_bang_vector_ops(tmp_path):
    from xpiler.migration.driver import migrate
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import idiom_check
    r = migrate(EX / "add" / "add_vec4.cu", "bang", outdir=tmp_path / "add_vec4.cu__to__bang", jobs=1, perf=False)
    assert r.verified, [str(d) for d in r.diagnostics]
    assert r.verdict.substrate == "emu:bang-cpu"
    assert ("flatten_lanes", {"vectors": True}) in [(s.pass_name, {k: v for k, v in s.params.items()
                                                                    if k not in ("entry", "require")})
                                                    for s in r.steps]
    code = idiom_check.blank_comments(r.code)
    kernel = code[code.index("__mlu_global__"):]
    kernel = kernel[:kernel.index("\n}\n")]
    assert "float4" not in kernel and "__bang_add(" in kernel, kernel
    row = idiom_check.check_file(r.output_path)
    assert idiom_check.requirement(row) == ("vector forms", True), row
