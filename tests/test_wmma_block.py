"""The block-tiled WMMA form for half matmuls to cuda (passes/patterns/simt_wmma_block.py):
tensorize's ``tile`` / ``warps`` / ``bk`` / ``double`` parameters, tried first by the default cuda
matrix plan (passes/tensorize.py: WMMA_BLOCK_DEFAULT), the one-warp WMMA form after it."""
from __future__ import annotations

import json

import pytest

from xpiler.api import migrate
from xpiler.migration.pipeline import ALTERNATIVES, REQUIRE, plans
from xpiler.migration.stage import Stage
from xpiler.passes import tensorize
from xpiler.passes.base import AlternativeRefused, PassError
from xpiler.printers import print_program
from xpiler.schedule.step import Step, StepContext, apply_step
from xpiler.spec import load_spec

from conftest import EXAMPLES
from _simt_tile_util import bound, half_gemm, verify

BLOCK = {**tensorize.WMMA_BLOCK_DEFAULT, "as_alternative": True}


def _step(prog, entry, **params):
    """tensorize applied where the plans apply it (an alternative's refusal is AlternativeRefused)."""
    return apply_step(Step("tensorize", params), Stage(prog, "cuda", entry, ()), StepContext())


def test_cuda_matrix_plan_tries_the_block_form_first_and_hip_does_not():
    ps = plans("hip", "cuda")
    (matrix,) = [p for p in ps if p[-1][0] == "tensorize" and p[-1][1].get(REQUIRE)]
    assert matrix[-1][1][ALTERNATIVES] == [BLOCK, {}]
    assert "untile" in [n for n, _ in matrix]
    for src in ("cuda", "c", "bang"):
        for p in plans(src, "hip"):
            assert all(ALTERNATIVES not in q for n, q in p if n == "tensorize")


@pytest.mark.parametrize("params", [
    tensorize.WMMA_BLOCK_DEFAULT,
    {"tile": 64, "warps": 4, "bk": 32, "double": False},
    {"tile": 128, "tile_n": 64, "warps": 8, "bk": 32, "double": True},
])
def test_block_form_verifies_at_every_shape_of_the_spec(params):
    src, prog = half_gemm()
    out, launch = tensorize.apply(prog, entry="gemm_wmma", target="cuda", **params)
    text = print_program(out, "cuda")
    assert "xp_fc00" in text and "wmma::mma_sync" in text and "uint4" in text
    assert launch["block"] == [32 * params["warps"], 1, 1]
    # the spec's shapes: odd (33 x 17 x 45, no aligned row), medium, tiles (8 x 260 x 520)
    assert {"odd", "tiles"} <= {i.name for i in load_spec(str(src) + ".toml").instances()}
    v = verify(out, src, "cuda", launch)
    assert v.verified, v.failures[:1]


def test_block_form_refuses_float32_non_matmul_and_bad_parameters():
    _, entry, f32 = bound("gemm", "cuda")
    with pytest.raises(PassError) as e:
        tensorize.check(f32, entry=entry, target="cuda", **tensorize.WMMA_BLOCK_DEFAULT)
    assert e.value.code == "XP4293"
    with pytest.raises(AlternativeRefused):
        _step(f32, entry, target="cuda", **BLOCK)
    _, entry, relu = bound("relu", "cuda")
    with pytest.raises(AlternativeRefused, match="block-tiled WMMA"):
        _step(relu, entry, target="cuda", **BLOCK)
    _, half = half_gemm()
    for bad in ({"tile": 48, "warps": 4}, {"tile": 128, "warps": 8, "bk": 64, "double": True},
                {"tile": 64, "warps": 3}, {"tile": 256, "tile_n": 64, "warps": 1}):
        with pytest.raises(PassError) as e:
            tensorize.check(half, entry="gemm_wmma", target="cuda", **bad)
        assert e.value.code == "XP4292", bad
    # without the flag a refusal is an ordinary one (a plan's end, not the next alternative)
    with pytest.raises(PassError) as e:
        _step(relu, entry, target="cuda", **tensorize.WMMA_BLOCK_DEFAULT)
    assert not isinstance(e.value, AlternativeRefused)


def _tensorize_events(r):
    events = [json.loads(x) for x in r.log_path.read_text().splitlines()]
    return [e for e in events if e["type"] == "pass" and e["name"] == "tensorize" and e.get("applied")]


def test_default_cuda_output_of_the_half_mfma_source_is_block_tiled(tmp_path):
    r = migrate(EXAMPLES / "gemm" / "gemm_mfma_f16.hip", to="cuda", outdir=tmp_path / "o", perf=False)
    assert r.verified
    code = "\n".join(x for x in r.code.splitlines() if not x.lstrip().startswith("//"))
    d = tensorize.WMMA_BLOCK_DEFAULT
    from xpiler.passes.patterns.simt_wmma_block import warp_grid
    wr, wc = warp_grid(d["tile"], d.get("tile_n", d["tile"]), d["warps"])
    fm, fn = d["tile"] // wr // 16, d.get("tile_n", d["tile"]) // wc // 16
    # the default's warp grid and fragments: the last accumulator of a warp, and 32 threads a warp
    assert f"xp_fc{fm - 1}{fn - 1}" in code and f"xp_fc{fm}{fn - 1}" not in code
    assert f"dim3({32 * d['warps']}, 1, 1)" in code and "__builtin_amdgcn" not in code
    assert _tensorize_events(r)[-1]["params"].get("tile") == d["tile"]
    assert _tensorize_events(r)[-1]["params"].get("warps") == d["warps"]


def test_where_the_block_form_does_not_apply_the_one_warp_form_follows(tmp_path, monkeypatch):
    # a default that makes no valid form stands for any kernel the form refuses: the plan's next
    # alternative (the one-warp WMMA form) is taken in the same plan, and the output verifies
    monkeypatch.setattr(tensorize, "WMMA_BLOCK_DEFAULT", {"tile": 48, "warps": 4, "bk": 32, "double": True})
    r = migrate(EXAMPLES / "gemm" / "gemm_mfma_f16.hip", to="cuda", outdir=tmp_path / "o", perf=False)
    assert r.verified
    assert "wmma::mma_sync" in r.code and "dim3(32, 1, 1)" in r.code and "xp_fc00" not in r.code
    assert "tile" not in _tensorize_events(r)[-1]["params"]
    events = [json.loads(x) for x in r.log_path.read_text().splitlines()]
    assert any(e.get("what") == "alternative refused" and e.get("pass_name") == "tensorize" for e in events)


def test_search_candidates_offer_the_block_shapes_for_half_only():
    from xpiler.passes.patterns.simt_wmma_block import SHAPES
    _, half = half_gemm()
    shapes = [(c["tile"], c["tile_n"], c["warps"], c["bk"], c["double"])
              for c in tensorize.candidates(half, "cuda") if "warps" in c]
    assert shapes == list(SHAPES)
    _, _, f32 = bound("gemm", "cuda")
    assert not [c for c in tensorize.candidates(f32, "cuda") if "warps" in c]


BMM_HALF = """#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" __global__ void bmm_wmma(const half* A, const half* B, float* C, int batch, int M, int N, int K) {
    for (int t = 0; t < batch * M; ++t) {
        for (int j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k) {
                acc += __half2float(A[(t / M * M + t % M) * K + k]) * __half2float(B[(t / M * K + k) * N + j]);
            }
            C[(t / M * M + t % M) * N + j] = acc;
        }
    }
}
"""


def test_block_form_verifies_a_batched_half_matmul():
    # a flattened batch loop (t < batch * M): the batch runs over blockIdx.z, every shape of
    # bmm_wmma.cu's spec (odd: 3 x 17 x 33 x ...), against its reference and the WMMA source
    from xpiler.frontend import parse_text
    p = parse_text(BMM_HALF, "cuda", "bmm_half_scalar.cu")
    f = p.func("bmm_wmma")
    lt = f.body.stmts[0]
    lt = lt.with_(binding="global.x")
    prog = p.with_(items=tuple(f.with_(body=f.body.with_(stmts=(lt,))) if it is f else it for it in p.items))
    out, launch = tensorize.apply(prog, entry="bmm_wmma", target="cuda", **tensorize.WMMA_BLOCK_DEFAULT)
    assert "blockIdx.z" in print_program(out, "cuda") and launch["grid"][2] != 1
    v = verify(out, EXAMPLES / "bmm" / "bmm_wmma.cu", "cuda", launch)
    assert v.verified, v.failures[:1]
