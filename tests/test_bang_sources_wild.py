"""BANG sources written the way public code writes them (issue 12): the wild BANG kernels pass
their own test on the BANG emulator; a run-time sized NRAM array gets a constant size with a
guard on cuda/hip (``passes/runtime_arrays.py``); per-core NRAM buffers of a kernel fissioned at
``__sync_cluster`` are declared where every phase that uses them sees them
(``loop_recovery._privatize_across_phases``)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding, detensorize, loop_recovery
from xpiler.printers import print_program

ROOT = Path(__file__).resolve().parents[1]
WILD = ROOT / "examples" / "wild"

NEW_BANG = [
    "layernorm/layernorm_seg_bang.mlu",
    "layernorm/layernorm_vla_scalar.mlu",
    "self_attention/mha_rows_bang.mlu",
    "self_attention/mha_tokens_bang.mlu",
    "deformable_attention/msda_corners_bang.mlu",
    "softmax/softmax_chunk_bang.mlu",
    "rmsnorm/rmsnorm_sram_bang.mlu",
    "rmsnorm/rmsnorm_lasttask_bang.mlu",
]


@pytest.mark.parametrize("rel", NEW_BANG)
def test_wild_bang_kernel_verifies_on_the_emulator(rel):
    import xpiler
    v = xpiler.test(WILD / rel)
    assert v.verified, v
    assert v.substrate == "emu:bang-cpu"


# ---------------------------------------------------------------------------- run-time sized arrays
VLA_C = """
void k(const float *x, float *y, int rows, int cols) {
    int padded = (cols + 31) / 32 * 32;
    for (int r = 0; r < rows; ++r) {
        float row[padded];
        for (int i = 0; i < padded; ++i) row[i] = 0.0f;
        for (int i = 0; i < cols; ++i) row[i] = x[r * cols + i];
        for (int i = 0; i < cols; ++i) y[r * cols + i] = 2.0f * row[i];
    }
}
"""


def _decl(prog, name):
    return next(n for n in walk(prog.func("k").body) if isinstance(n, N.Decl) and n.name == name)


def test_runtime_sized_array_gets_the_largest_instance_size_and_a_guard():
    prog = parse_text(VLA_C, "c", "k.c")
    out, _ = binding.apply(prog, entry="k", target="cuda",
                           instances=[{"rows": 4, "cols": 33}, {"rows": 2, "cols": 200}, {"rows": 9, "cols": 5}])
    dims = _decl(out, "row").type.dims
    assert len(dims) == 1 and isinstance(dims[0], N.Const) and dims[0].value == 224   # (200 + 31) / 32 * 32
    text = print_program(out, "cuda")
    assert "padded > 224" in text and "__trap()" in text
    hip = print_program(binding.apply(prog, entry="k", target="hip", instances=[{"rows": 1, "cols": 40}])[0], "hip")
    assert "padded > 64" in hip and "__builtin_trap()" in hip


def test_runtime_sized_array_is_left_alone_without_instances_or_when_not_a_function_of_parameters():
    prog = parse_text(VLA_C, "c", "k.c")
    out, _ = binding.apply(prog, entry="k", target="cuda")
    assert not isinstance(_decl(out, "row").type.dims[0], N.Const)
    reassigned = VLA_C.replace("int padded = (cols + 31) / 32 * 32;", "int padded = (cols + 31) / 32 * 32;\n"
                                                                      "    padded += rows;")
    out2, _ = binding.apply(parse_text(reassigned, "c", "k.c"), entry="k", target="cuda",
                            instances=[{"rows": 4, "cols": 33}])
    assert not isinstance(_decl(out2, "row").type.dims[0], N.Const)       # 'padded' is written twice


def test_runtime_sized_array_is_not_resized_for_the_c_target():
    prog = parse_text(VLA_C, "c", "k.c")
    out = binding.apply(prog, entry="k", target="c", instances=[{"rows": 4, "cols": 33}])
    out = out[0] if isinstance(out, tuple) else out
    assert not isinstance(_decl(out, "row").type.dims[0], N.Const)


@pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc for the real-compile gate")
def test_scale_rows_vla_migrates_to_cuda_and_passes_the_real_compile_gate(tmp_path):
    import xpiler
    r = xpiler.migrate(WILD / "scale" / "scale_rows_vla.mlu", to="cuda", outdir=tmp_path / "o", perf=False)
    assert r.verified
    assert any(getattr(d, "code", "") == "XP4050" for d in r.diagnostics)
    assert "__trap()" in r.code


# ---------------------------------------------------------------------------- NRAM across cluster barriers
ACROSS = """
#include <bang.h>
__nram__ float buf[64];
__nram__ float tmp[64];
__mlu_shared__ float s_in[256];
__mlu_global__ void k(const float *x, float *y) {
    if (coreId == 0)
        __memcpy(s_in, x + clusterId * 256, 256 * sizeof(float), GDRAM2SRAM);
    __memcpy(buf, x + (clusterId * 4 + coreId) * 64, 64 * sizeof(float), GDRAM2NRAM);
    __sync_cluster();
    __memcpy(tmp, s_in + coreId * 64, 64 * sizeof(float), SRAM2NRAM);
    __bang_add(buf, buf, tmp, 64);
    __memcpy(y + (clusterId * 4 + coreId) * 64, buf, 64 * sizeof(float), NRAM2GDRAM);
}
"""
UNION = {"dim": [8, 1, 1], "func_type": "union1"}


def test_nram_buffer_live_across_a_cluster_barrier_becomes_one_array_per_core():
    prog = parse_text(ACROSS, "bang", "k.mlu")
    prog = detensorize.apply(prog, entry="k", target="c")
    prog = prog[0] if isinstance(prog, tuple) else prog
    new, _ = loop_recovery.apply(prog, entry="k", launch=UNION, normalize=False)
    decls = {n.name: n for n in walk(new.func("k").body) if isinstance(n, N.Decl)}
    per_core = [d for name, d in decls.items() if name.startswith("buf") and name != "buf"]
    assert per_core and per_core[0].type.dims[0].value == 4          # buf: written before, read after
    assert "tmp" in decls and len(decls["tmp"].type.dims) == 1         # tmp: one phase only
    text = print_program(new, "c")
    assert f"{per_core[0].name}[core" in text

