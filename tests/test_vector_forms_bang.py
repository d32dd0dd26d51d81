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


@pytest.mark.parametrize("op,name", [("add", "add_avx512"), ("relu", "relu_avx512")])
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
    assert len(skipped) == 1 and skipped[0]["plan"] == 0 and "flatten_lanes" in skipped[0]["why"]
