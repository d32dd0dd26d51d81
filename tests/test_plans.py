"""Plans with a required step: probed without tests, skipped unless that step applies."""
from __future__ import annotations

import json

from xpiler.api import migrate
from xpiler.migration.pipeline import ALTERNATIVES, REGRID, REQUIRE, plans

from conftest import EXAMPLES


def _notes(log):
    return [e for e in map(json.loads, log.read_text().splitlines()) if e.get("type") == "note"]


def test_simt_to_simt_tries_the_matrix_plan_first():
    # (after the row-kernel plan, probed on its binding: tests/test_rows_default.py)
    ps = plans("cuda", "hip")
    assert dict(ps[0])["binding"].get("row_kernel")
    ps = ps[1:]
    assert ps[0][-1] == ("tensorize", {"target": "hip", REQUIRE: True})
    # then the staged plan (through loops, probed: skipped unless cache stages on chip), no untile
    assert ("cache", {"target": "hip", REQUIRE: True}) in ps[1] and "untile" not in [n for n, _ in ps[1]]
    # the retarget plan: a grid-stride kernel's launch sized from the problem, else the source's
    assert ("binding", {"target": "hip", "mode": "retarget", ALTERNATIVES: [REGRID, {}]}) in ps[2]
    # bang -> c: only the register-tiled gemm plan (tests/test_x86_gemm.py) and the un-staged row
    # plan (tests/test_c_rows_unstaged.py) are probed
    assert all(not p.get(REQUIRE) for plan in plans("bang", "c")[2:] for _, p in plan)


def test_matrix_plan_is_skipped_when_no_matrix_instruction_applies(tmp_path):
    r = migrate(EXAMPLES / "relu" / "relu.cu", to="hip", outdir=tmp_path / "o", perf=False)
    assert r.verified
    skipped = [n for n in _notes(r.log_path) if n.get("what") == "plan skipped"]
    assert [n["plan"] for n in skipped] == [0, 1, 2] and "row kernel" in skipped[0]["why"]
    assert "tensorize" in skipped[1]["why"] and skipped[2]["why"].startswith("cache:")
    assert "__builtin_amdgcn_mfma" not in r.code
    # the skipped plan ran no test: every tested stage belongs to the retarget plan
    events = [json.loads(x) for x in r.log_path.read_text().splitlines()]
    assert not any(e["type"] == "pass" and e["name"] == "loop_recovery" for e in events)


def test_matrix_plan_reaches_mfma_for_a_convolution(tmp_path):
    r = migrate(EXAMPLES / "conv1d" / "conv1d.cu", to="hip", outdir=tmp_path / "o", perf=False)
    assert r.verified
    assert "__builtin_amdgcn_mfma_f32_16x16x4f32" in r.code
    # only the row-kernel plan before it is skipped (a window, not a row)
    assert [n["plan"] for n in _notes(r.log_path) if n.get("what") == "plan skipped"] == [0]


def test_matrix_plan_untiles_a_shared_memory_tiled_gemm_to_mfma(tmp_path):
    r = migrate(EXAMPLES / "gemm" / "gemm.cu", to="hip", outdir=tmp_path / "o", perf=False)
    assert r.verified
    assert "__builtin_amdgcn_mfma_f32_16x16x4f32" in r.code
    events = [json.loads(x) for x in r.log_path.read_text().splitlines()]
    assert any(e["type"] == "pass" and e["name"] == "untile" and e.get("applied") for e in events)


def test_simt_to_bang_untiles_a_shared_memory_tiled_gemm_to_bang_matmul(tmp_path):
    # the last plan is the one without unthread (the first, probed, runs unthread before untile)
    plan = plans("hip", "bang")[-1]
    assert [n for n, _ in plan].index("untile") == [n for n, _ in plan].index("loop_recovery") + 1
    r = migrate(EXAMPLES / "gemm" / "gemm.cu", to="bang", outdir=tmp_path / "o", perf=False)
    assert r.verified
    assert "__bang_matmul" in r.code and "__wram__" in r.code
    events = [json.loads(x) for x in r.log_path.read_text().splitlines()]
    assert any(e["type"] == "pass" and e["name"] == "untile" and e.get("applied") for e in events)


def test_bang_matmul_is_unblocked_for_mfma_and_shared_tiles(tmp_path):
    assert plans("bang", "hip")[1][2] == ("unblock", {REQUIRE: True})   # (after the row-kernel plan)
    r = migrate(EXAMPLES / "gemm" / "gemm.mlu", to="hip", outdir=tmp_path / "h", perf=False)
    assert r.verified and "__builtin_amdgcn_mfma_f32_16x16x4f32" in r.code and "__shared__" in r.code
    # float32 on cuda: tensorize refuses WMMA, the plan (probed on unblock) still stages in shared memory
    r = migrate(EXAMPLES / "bmm" / "bmm.mlu", to="cuda", outdir=tmp_path / "c", perf=False)
    assert r.verified and "__shared__" in r.code and "wmma" not in r.code
    skipped = [n for n in _notes(r.log_path) if n.get("what") == "plan skipped"]
    assert [n["plan"] for n in skipped] == [0] and "row kernel" in skipped[0]["why"]
