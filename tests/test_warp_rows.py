"""binding(rows="warp") (passes/warp_rows.py): one warp per row, several rows per block, column
loops over the warp's lanes, reductions folded by warp shuffles with no shared memory or block
barrier. Row kernels verify on the SIMT emulator (cuda 32 lanes, hip 64, and the hip output at
32 lanes), with one column, fewer columns than a warp and more than a block; every operator folds
right; the search offers the form where rows='block' applies; refusals; nvcc sm_90."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from xpiler.frontend import parse_file
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding
from xpiler.passes.base import PassError
from xpiler.printers import print_program

from test_reduce_shuffle import EXTRA, OPS_REF, OPS_SRC, OPS_TOML, _migrate

EX = Path(__file__).resolve().parents[1] / "examples"


def test_softmax_form():
    prog = parse_file(EX / "softmax" / "softmax.c")
    out, launch = binding.apply(prog, entry="softmax", target="cuda", rows="warp", block=256, grid_cap=1024)
    assert launch == {"grid": ["min((rows + 7) / 8, 1024)", 1, 1], "block": [256, 1, 1]}
    text = print_program(out)
    assert "int xp_lane = threadIdx.x % warpSize;" in text
    assert "r = 0 + (blockIdx.x * (blockDim.x / warpSize) + threadIdx.x / warpSize); r < rows; " \
           "r += gridDim.x * (blockDim.x / warpSize)" in text
    assert "for (int c = 1 + xp_lane; c < cols; c += warpSize)" in text
    f = out.func("softmax")
    # no shared memory, no block barrier; the lanes' phases ordered by warp barriers
    assert not [n for n in walk(f) if isinstance(n, N.Decl) and n.scope == "shared"]
    assert {n.kind for n in walk(f) if isinstance(n, N.Barrier)} == {"warp"}
    assert text.count("__shfl_xor_sync(0xffffffffu") == 10


@pytest.mark.parametrize("name,target", [("softmax", "cuda"), ("softmax", "hip"), ("layernorm", "cuda"),
                                         ("rmsnorm", "hip"), ("gemv", "cuda")])
def test_c_row_kernels_verify(tmp_path, name, target):
    params = {"target": target, "loop": "i" if name == "gemv" else "r", "rows": "warp", "block": 128, "grid_cap": 2}
    r = _migrate(tmp_path, EX / name / f"{name}.c", target, [("binding", params)],
                 EXTRA["gemv" if name == "gemv" else "rows"])
    assert r.verified, [str(x) for x in r.diagnostics]
    assert "xp_lane" in r.output_path.read_text()


@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_every_operator_folds_right(tmp_path, target):
    from xpiler.migration.driver import migrate
    d = tmp_path / "in"
    d.mkdir()
    (d / "ops.c").write_text(OPS_SRC)
    (d / "ops.c.toml").write_text(OPS_TOML)
    (d / "ref.py").write_text(OPS_REF)
    params = {"target": target, "rows": "warp", "block": 128, "grid_cap": 1}
    r = migrate(d / "ops.c", target, spec=d / "ops.c.toml", outdir=tmp_path / "out", jobs=1, perf=False,
                pipeline=[("binding", params)], repair=False)
    assert r.verified, [str(x) for x in r.diagnostics]


def test_hip_output_on_a_32_lane_wavefront(tmp_path):
    """At 32 lanes a block of 128 holds four rows, at 64 two: the grid is sized for four and the
    row loop's stride covers the rest; both give the reference's result."""
    from xpiler.platforms.harness import read_outputs, write_job
    from xpiler.platforms.hip import HipPlatform
    from xpiler.sandbox import run_limited
    from xpiler.spec import load_spec

    class Wave32(HipPlatform):
        wave = 32

    prog = parse_file(EX / "rmsnorm" / "rmsnorm.c")
    out, launch = binding.apply(prog, entry="rmsnorm", target="hip", rows="warp", block=128)
    src = tmp_path / "rmsnorm.hip"
    src.write_text(print_program(out))
    spec = load_spec(EX / "rmsnorm" / "rmsnorm.c.toml")
    spec.dialect = "hip"
    spec.launch = {"grid": launch["grid"], "block": [128, 1, 1]}      # (before the instances take it)
    assert launch["grid"][0] == "(rows + 3) / 4"
    from xpiler.verify.oracle import reference_outputs
    ran = 0
    for wave, plat in ((32, Wave32()), (64, HipPlatform())):
        exe = plat.build(src, spec, tmp_path / f"w{wave}", sanitize=False)
        for inst in spec.instances():
            rng = np.random.default_rng(2)
            arrays = {}
            for a in spec.args:
                if a.role in ("in", "inout", "out"):
                    n = inst.numel(a.name)
                    arrays[a.name] = rng.uniform(-2, 2, n).astype(np.float32) if a.role != "out" else \
                        np.full(n, np.nan, np.float32)
            job = tmp_path / f"job{wave}_{inst.name}"
            write_job(job, inst, arrays)
            oc = run_limited([str(exe), str(job)], timeout_s=120, mem_mb=None)
            assert oc.ok, oc.stderr
            got = read_outputs(job, inst)
            want = reference_outputs(spec, inst, {k: v.reshape(inst.shapes[k]) for k, v in arrays.items()})
            for k, v in want.items():
                np.testing.assert_allclose(got[k].reshape(v.shape), v, rtol=1e-4, atol=1e-5)
            ran += 1
    assert ran == 2 * len(spec.instances())


def test_search_offers_warp_rows_where_block_rows_apply():
    prog = parse_file(EX / "layernorm" / "layernorm.c")
    cands = binding.candidates(prog, "cuda")
    warp = sorted((c["block"], c["grid_cap"] or 0) for c in cands if c.get("rows") == "warp")
    assert warp == sorted((b, cap or 0) for b in (128, 256) for cap in (None, 1024))
    assert all("reduce" not in c for c in cands if c.get("rows") == "warp")


def test_refusals():
    prog = parse_file(EX / "softmax" / "softmax.c")
    with pytest.raises(PassError, match="cuda/hip thread blocks, not bang"):
        binding.apply(prog, entry="softmax", target="bang", rows="warp")
    with pytest.raises(PassError, match="multiple of 64"):
        from xpiler.passes import warp_rows
        warp_rows.plan(prog, prog.func("softmax"), next(s for s in prog.func("softmax").body.stmts
                                                        if isinstance(s, N.For)), "hip", 96)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_cuda_output_compiles_with_nvcc(tmp_path):
    from xpiler.platforms.cuda import CudaPlatform
    prog = parse_file(EX / "softmax" / "softmax.c")
    out, _ = binding.apply(prog, entry="softmax", target="cuda", rows="warp", block=128)
    src = tmp_path / "softmax.cu"
    src.write_text(print_program(out))
    r = CudaPlatform().compile_check(src)
    assert r["ok"], r["log"][-2000:]


def test_rows_without_a_reduction_are_not_offered():
    from xpiler.frontend import parse_text
    prog = parse_text("void k(const float* x, float* y, int rows, int cols) {\n"
                      "  for (int r = 0; r < rows; r++)\n    for (int c = 0; c < cols; c++) y[r*cols+c] = 2.0f * x[r*cols+c];\n}\n",
                      "c", "k.c")
    with pytest.raises(PassError) as e:
        binding.apply(prog, entry="k", target="cuda", loop="r", rows="warp", block=128)
    assert e.value.code == "XP4002" and "reduces nothing" in e.value.why
    cands = binding.candidates(prog, "cuda")
    assert any(c.get("rows") == "block" for c in cands) and not any(c.get("rows") == "warp" for c in cands)


@pytest.mark.skipif(not Path("/usr/lib/llvm-15/bin/clang++").exists() or
                    not Path("/usr/include/hip/hip_runtime.h").exists(), reason="clang-15 / HIP headers not installed")
@pytest.mark.parametrize("arch", ["gfx90a", "gfx1100"])
def test_hip_output_compiles_for_amdgpu(tmp_path, arch):
    from xpiler.platforms.hip import HipPlatform
    prog = parse_file(EX / "layernorm" / "layernorm.c")
    out, _ = binding.apply(prog, entry="layernorm", target="hip", rows="warp", block=256)
    src = tmp_path / "layernorm.hip"
    src.write_text(print_program(out))
    assert "__builtin_amdgcn_wave_barrier();" in src.read_text()
    r = HipPlatform().compile_check(src, arch=arch)
    assert r["ok"], r["log"][-2000:]
