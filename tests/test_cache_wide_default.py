"""The default cuda plans write a float32 matmul in the wide register-blocked form
(passes/cache.py: WIDE_DEFAULT, tried as an alternative), and keep the other forms elsewhere."""
from __future__ import annotations

import json

import pytest

from xpiler.api import migrate
from xpiler.migration.pipeline import ALTERNATIVES, REQUIRE, plans
from xpiler.passes import cache
from xpiler.passes.base import AlternativeRefused, PassError
from xpiler.printers import print_program

from conftest import EXAMPLES
from _simt_tile_util import bound, half_gemm

WIDE = {**cache.WIDE_DEFAULT, "target": "cuda", "as_alternative": True}


def _cache_steps(plan):
    return [p for n, p in plan if n == "cache"]


def test_cuda_plans_try_the_wide_form_first_and_hip_plans_do_not():
    for src in ("c", "bang", "hip"):
        general = plans(src, "cuda")[-1]
        (step,) = _cache_steps(general)
        assert step[ALTERNATIVES] == [{**cache.WIDE_DEFAULT, "as_alternative": True}, {}]
    # the WMMA plan's cache writes plain tiles (the wide form would leave no WMMA to find)
    ps = plans("hip", "cuda")
    (matrix,) = [p for p in ps if p[-1][0] == "tensorize" and p[-1][1].get(REQUIRE)]
    assert _cache_steps(matrix) == [{"target": "cuda"}]
    # hip -> cuda: a plan through loops whose required step is the wide form, right after it
    (wide,) = [p for p in ps if any(c.get(REQUIRE) and c.get("thread_tile") for c in _cache_steps(p))]
    assert ps.index(wide) == ps.index(matrix) + 1 and "untile" in [n for n, _ in wide]
    for src in ("c", "bang", "cuda"):
        assert all(ALTERNATIVES not in p for p in _cache_steps(plans(src, "hip")[-1]))


def test_the_alternative_writes_the_wide_form_for_a_float32_matmul():
    _, entry, prog = bound("gemm", "cuda")
    prog2, launch = cache.apply(prog, entry=entry, **WIDE)
    assert "float4" in print_program(prog2, "cuda")
    assert launch["block"][:2] == [16, 16]          # 64 x 64 tile, 4 x 4 per thread
    # the same parameters without the flag give the same kernel (the flag only changes refusals)
    assert print_program(cache.apply(prog, entry=entry, target="cuda", **cache.WIDE_DEFAULT)[0], "cuda") == \
        print_program(prog2, "cuda")


def test_the_alternative_is_refused_as_an_alternative_where_it_does_not_apply():
    from xpiler.migration.stage import Stage
    from xpiler.schedule.step import Step, StepContext, apply_step

    def step(prog, entry, **params):     # where the plans apply it (refusals become alternatives)
        return apply_step(Step("cache", params), Stage(prog, "cuda", entry, ()), StepContext())
    _, entry, relu = bound("relu", "cuda")
    with pytest.raises(AlternativeRefused):
        step(relu, entry, **WIDE)
    # half operands converted before the multiply: the wide form would apply, the WMMA route is kept
    _, half = half_gemm()
    cache.check(half, entry="gemm_wmma", target="cuda", **cache.WIDE_DEFAULT)
    with pytest.raises(AlternativeRefused, match="not a float32 matmul"):
        step(half, "gemm_wmma", **WIDE)
    # without the flag, a refusal is an ordinary one, which ends a plan instead of trying the next
    with pytest.raises(PassError) as e:
        step(relu, entry, target="cuda", **cache.WIDE_DEFAULT)
    assert not isinstance(e.value, AlternativeRefused)


@pytest.mark.parametrize("src", ["gemm/gemm.c",
                                 # the MFMA source's route through untile (90 s): pytest -m long
                                 pytest.param("gemm/gemm_mfma.hip", marks=pytest.mark.long)])
def test_default_cuda_output_of_a_float32_matmul_is_register_blocked(tmp_path, src):
    r = migrate(EXAMPLES / src, to="cuda", outdir=tmp_path / "o", perf=False)
    assert r.verified
    code = "\n".join(x for x in r.code.splitlines() if not x.lstrip().startswith("//"))
    assert "float4" in code and "__builtin_amdgcn" not in code
    events = [json.loads(x) for x in r.log_path.read_text().splitlines()]
    caches = [e for e in events if e["type"] == "pass" and e["name"] == "cache" and e.get("applied")]
    assert caches and caches[-1]["params"].get("thread_tile") == 4
