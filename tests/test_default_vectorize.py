"""The default cuda plans end with ``vectorize_simt`` as an alternative: an elementwise grid-stride
loop moves float4s, every other kernel skips the step without a diagnostic."""
from __future__ import annotations

import json

import pytest

from xpiler.api import migrate
from xpiler.migration.pipeline import VECTORIZE, plans
from xpiler.migration.stage import Stage
from xpiler.passes.base import AlternativeRefused, PassError
from xpiler.schedule.step import Step, StepContext, apply_step

from conftest import EXAMPLES
from _simt_tile_util import bound


def _events(r):
    return [json.loads(x) for x in r.log_path.read_text().splitlines()]


def test_the_cuda_and_hip_plans_end_with_the_vector_step():
    for dst, others in (("cuda", ("c", "hip", "bang")), ("hip", ("c", "cuda", "bang"))):
        for src in others:
            # the general plan (last) and the retarget plan end with it; the matrix plans do not need it
            assert plans(src, dst)[-1][-1] == ("vectorize_simt", VECTORIZE)
    for src in ("cuda", "hip", "bang", "c"):
        assert all(n != "vectorize_simt" for dst in ("c", "bang") for p in plans(src, dst) for n, _ in p)


@pytest.mark.parametrize("src", ["add/add.cu", "relu/relu_avx512.c"])
def test_hip_outputs_of_elementwise_kernels_move_float4s_over_a_grid_from_the_problem(tmp_path, src):
    # on the H200 (through hip_on_cuda.h) add.cu -> hip kept the source's 32-block grid cap and ran at
    # 0.07x of PyTorch, relu_avx512.c -> hip at 0.21x (RESULTS.md, 2026-12-06)
    r = migrate(EXAMPLES / src, to="hip", outdir=tmp_path / "o", perf=False)
    assert r.verified
    assert "float4" in r.code and "_mm512" not in r.code
    vec = [e for e in _events(r) if e["type"] == "pass" and e["name"] == "vectorize_simt"]
    assert vec and vec[-1]["applied"]
    grid = vec[-1]["launch"]["grid"][0]
    assert "/ 512" in grid and "min(" not in grid       # sized from n, no cap


def test_as_alternative_turns_any_refusal_into_an_alternative_refused():
    _, entry, prog = bound("gemm", "cuda")      # a matmul: no elementwise loop to vectorize
    stage = Stage(prog, "cuda", entry, ())
    with pytest.raises(AlternativeRefused):
        apply_step(Step("vectorize_simt", dict(VECTORIZE)), stage, StepContext())
    with pytest.raises(PassError) as e:
        apply_step(Step("vectorize_simt", {"width": 4, "block": 512}), stage, StepContext())
    assert not isinstance(e.value, AlternativeRefused)


def test_default_cuda_output_of_an_elementwise_c_kernel_moves_float4s(tmp_path):
    r = migrate(EXAMPLES / "sigmoid" / "sigmoid.c", to="cuda", outdir=tmp_path / "o", perf=False)
    assert r.verified
    assert "float4" in r.code and "& 15" in r.code      # the vector loop and its alignment test
    vec = [e for e in _events(r) if e["type"] == "pass" and e["name"] == "vectorize_simt"]
    assert vec and vec[-1]["applied"]


def test_a_kernel_the_step_does_not_fit_skips_it_quietly(tmp_path):
    r = migrate(EXAMPLES / "gemm" / "gemm.c", to="cuda", outdir=tmp_path / "o", perf=False)
    assert r.verified
    vec = [e for e in _events(r) if e["type"] == "pass" and e["name"] == "vectorize_simt"]
    assert vec and not vec[-1]["applied"] and vec[-1]["code"] == "XP4002"
    assert not [d for d in r.diagnostics if d.code == "XP4001"]


def test_an_avx512_elementwise_kernel_is_flattened_then_moves_float4s(tmp_path):
    r = migrate(EXAMPLES / "relu" / "relu_avx512.c", to="cuda", outdir=tmp_path / "o", perf=False)
    assert r.verified
    assert "float4" in r.code and "_mm512" not in r.code
    names = [e["name"] for e in _events(r) if e["type"] == "pass" and e.get("applied")]
    assert "flatten_lanes" in names and names[-1] == "vectorize_simt"
