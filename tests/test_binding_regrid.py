"""Binding's ``retarget`` with ``regrid=True`` (passes/regrid.py): a grid-stride SIMT kernel moved
between cuda and hip gets a launch sized from the problem instead of the source's capped grid.
Legal kernels verify on the SIMT emulator and replay; kernels whose result could depend on the
launch shape are refused with the statement named; the tuner sees each launch as its own
candidate (``Stage.key``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.passes import binding
from xpiler.passes.base import PassError

EX = Path(__file__).resolve().parents[1] / "examples"


def hip_prog(text):
    return parse_text(text, "hip", "k.hip")


def test_capped_grid_stride_kernel_gets_a_problem_sized_launch():
    prog = parse_file(EX / "relu" / "relu.hip")
    out = binding.apply(prog, entry="relu", target="cuda", mode="retarget", regrid=True, block=512, grid_cap=None)
    assert out.launch_dict("relu") == {"grid": ["max((n + 511) / 512, 1)", 1, 1], "block": [512, 1, 1]}
    assert out.dialect == "cuda"
    capped = binding.apply(prog, entry="relu", target="cuda", mode="retarget", regrid=True, block=256,
                           grid_cap=4096).launch_of("relu")
    assert capped.grid[0] == "max(min((n + 255) / 256, 4096), 1)"
    # without regrid, retarget keeps the source's launch (a Program, no launch table)
    plain = binding.apply(prog, entry="relu", target="cuda", mode="retarget")
    assert not isinstance(plain, tuple)


def test_candidates_offer_regrid_only_for_grid_stride_kernels():
    relu = binding.candidates(parse_file(EX / "relu" / "relu.hip"), "cuda")
    assert {"target": "cuda", "mode": "retarget"} in relu
    assert sorted((c["block"], c["grid_cap"] or 0) for c in relu if c.get("regrid")) == [
        (256, 0), (256, 4096), (512, 0), (512, 4096)]
    gemm = binding.candidates(parse_file(EX / "gemm" / "gemm.hip"), "cuda")   # shared-memory tiles
    assert gemm == [{"target": "cuda", "mode": "retarget"}]


USES_THREAD = """#include <hip/hip_runtime.h>
__global__ void k(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = x[i] + (float)threadIdx.x;
}
"""
USES_GRID = """#include <hip/hip_runtime.h>
__global__ void k(const float* x, float* y, int n) {
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = x[i] * (float)gridDim.x;
}
"""
SHARED = """#include <hip/hip_runtime.h>
__global__ void k(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        __shared__ float t[4];
        t[0] = x[i];
        y[i] = t[0];
    }
}
"""
BLOCK_STRIDE = """#include <hip/hip_runtime.h>
__global__ void k(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x)
        y[i] = x[i];
}
"""
AFTER = """#include <hip/hip_runtime.h>
__global__ void k(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = x[i];
    y[0] = 1.0f;
}
"""


@pytest.mark.parametrize("src,line,words", [
    (USES_THREAD, 4, "'threadIdx.x' is used outside"),       # a thread's result depends on its lane
    (USES_GRID, 5, "'gridDim.x' is used outside"),           # ... on the grid
    (SHARED, 4, "'t' is not a thread-local variable"),       # block-level cooperation
    (BLOCK_STRIDE, 3, "stride is not blockDim.x * gridDim.x"),   # not grid-stride: grid-dependent
    (AFTER, 5, "not a scalar declaration"),                  # a store outside the loop
])
def test_refusals_name_the_statement(src, line, words):
    with pytest.raises(PassError) as ei:
        binding.apply(hip_prog(src), entry="k", target="cuda", mode="retarget", regrid=True, block=256)
    e = ei.value
    assert e.code == "XP4001" and words in e.why and e.line == line, (e.why, e.line)
    # the plain retarget of the same kernel is still offered
    assert {"target": "cuda", "mode": "retarget"} in binding.candidates(hip_prog(src), "cuda")


def test_regrid_only_with_retarget():
    prog = parse_file(EX / "relu" / "relu.c")
    with pytest.raises(PassError) as ei:
        binding.apply(prog, entry="relu", target="cuda", regrid=True)
    assert "mode='retarget'" in ei.value.why


def test_stage_key_tells_launches_apart():
    from xpiler.migration.stage import Stage
    prog = parse_file(EX / "relu" / "relu.hip")
    a = Stage(prog.with_launch("relu", {"grid": ["32", 1, 1], "block": [256, 1, 1]}), "cuda", "relu", text="same text")
    b = Stage(prog.with_launch("relu", {"grid": ["(n + 255) / 256", 1, 1], "block": [256, 1, 1]}), "cuda", "relu",
              text="same text")
    assert a.hash == b.hash and a.key != b.key
    assert Stage(prog, "c", "relu", text="same text").key == a.hash


def test_pipeline_step_verifies_and_replays(tmp_path):
    """The regridded kernel verifies on the emulator (the spec's sizes run grids of 1 to 128
    blocks), the host launcher carries the new grid, and replay re-derives it."""
    from xpiler.migration.driver import migrate
    from xpiler.replay import replay
    params = {"target": "cuda", "mode": "retarget", "regrid": True, "block": 512, "grid_cap": None}
    r = migrate(EX / "relu" / "relu.hip", "cuda", outdir=tmp_path / "out", jobs=1, perf=False,
                pipeline=[("binding", params)])
    assert r.verified, [str(d) for d in r.diagnostics]
    code = r.output_path.read_text()
    assert "dim3((n + 511) / 512 > 1 ? (n + 511) / 512 : 1, 1, 1), dim3(512, 1, 1)" in code
    assert "RELU_MAX_GRID" not in code.split("relu_host")[1]
    spec = r.output_path.with_name(r.output_path.name + ".toml").read_text()
    assert 'block = [512, 1, 1]' in spec
    rep = replay(tmp_path / "out" / "provenance.jsonl")
    assert rep.ok if hasattr(rep, "ok") else rep


@pytest.mark.long     # a tuning run (70 s); the regrid step itself: test_pipeline_step_verifies_and_replays
def test_tuner_chooses_a_problem_sized_grid(tmp_path, monkeypatch):
    """With the cost model as the latency source (forced: a GPU host would time), the capped
    source launch is the slowest candidate. The search offers the regridded retargets as their
    own candidates (one text, several launches: distinct nodes) next to the route through loops,
    and keeps a kernel whose grid is sized from the problem."""
    import xpiler.schedule.tune as TU
    from xpiler.migration.driver import migrate
    from xpiler.schedule.timing import MODEL
    monkeypatch.setattr(TU, "source_for", lambda dialect, text: MODEL)
    # the tuner's choice from the plans' output before they vectorized by default (2026-12-05)
    from xpiler.migration import pipeline as PL
    monkeypatch.setattr(PL, "_finish", lambda dst: [PL._cache(dst), ("tensorize", {"target": dst})])
    r = migrate(EX / "relu" / "relu.hip", "cuda", outdir=tmp_path / "out", jobs=1, perf=False, tune=True,
                max_evals=8, tune_sizes={"n": 1 << 24}, seed=0)
    assert r.verified
    events = [json.loads(x) for x in (tmp_path / "out" / "provenance.jsonl").read_text().splitlines()[1:]]
    evals = [e for e in events if e["type"] == "tune" and e["kind"] == "evaluate"]
    binds = [e for e in evals if e["step"]["pass"] in ("binding", "sequence")]
    assert len({e["program_hash"] for e in binds}) == len(binds) >= 2
    assert any(e["step"]["params"].get("regrid") for e in binds)
    res = next(e for e in events if e["type"] == "tune" and e["kind"] == "result")
    assert res["latency_source"] == "model:analytic" and res["steps"]
    chosen_bind = [s for s in res["steps"] if s["pass"] == "binding"][-1]["params"]
    assert chosen_bind.get("regrid") or chosen_bind.get("mode", "bind") == "bind"
    spec = r.output_path.with_name(r.output_path.name + ".toml").read_text()
    assert "32" not in spec.split("[launch]")[1].split("block")[0]      # the source's cap is gone
