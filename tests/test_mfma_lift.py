"""detensorize: an MFMA whose operands are read from LDS tiles is lifted to its contraction (each
lane computes D[4g+e][i] from the tiles, no exchange buffer, no barrier); where the lift's
conditions fail the exchange lowering stays, with the reason (passes/lowering/mfma_lift.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import detensorize
from xpiler.passes.lowering import mfma_lift
from xpiler.passes.lowering.simt import varying_names
from xpiler.printers import print_program
from xpiler.spec import load_spec

from test_pass_detensorize import _code_only, _verify

EX = Path(__file__).resolve().parent.parent / "examples"


def _barriers(prog):
    return sum(isinstance(n, N.Barrier) for n in walk(prog))


def _exchange_buffers(prog):
    return [d.name for d in walk(prog) if isinstance(d, N.Decl) and d.scope == "shared" and d.name.startswith("xpd_mf")]


@pytest.mark.parametrize("rel", ["gemm/gemm_mfma.hip", "bmm/bmm_mfma.hip", "gemm/gemm_mfma_f16.hip"])
def test_lifted_examples_have_no_exchange(rel):
    src = EX / rel
    spec = load_spec(str(src) + ".toml")
    prog = parse_file(src, "hip")
    out = detensorize.apply(prog, entry=spec.entry, target="cuda")
    assert _exchange_buffers(out) == []
    assert _barriers(out) == _barriers(prog)          # only the source's own barriers
    code = _code_only(print_program(out, "hip"))
    assert "__builtin_amdgcn_mfma" not in code
    # the operands are read from the tiles inside the k loop of the contraction
    assert "* (float)Bs[(kk + " in code
    # the exchange form (the alternative) is still there on request
    ex = detensorize.apply(prog, entry=spec.entry, target="cuda", mfma_lift=False)
    assert len(_exchange_buffers(ex)) == 2 and _barriers(ex) == _barriers(prog) + 2


@pytest.mark.parametrize("rel", ["gemm/gemm_mfma.hip", "bmm/bmm_mfma.hip"])
def test_lifted_examples_verify(rel):
    src = EX / rel
    spec = load_spec(str(src) + ".toml")
    out = detensorize.apply(parse_file(src, "hip"), entry=spec.entry, target=None)
    v = _verify(src, print_program(out, "hip"), spec)
    assert v.verified, (v.failures[0].message if v.failures else v)


KERNEL = """
typedef float floatx4 __attribute__((ext_vector_type(4)));
__global__ void k(const float *A, const float *B, float *C) {
    __shared__ float As[64];
    __shared__ float Bs[64];
    const int tid = threadIdx.x;
    const int lane = tid % 64;
    const int i = lane % 16;
    const int g = lane / 16;
    As[tid] = A[tid];
    Bs[tid] = B[tid];
    SYNC
    floatx4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
    const float a = As[i * 4 + g];
    const float b = OPB;
    acc = __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, acc, 0, 0, 0);
    __syncthreads();
    for (int e = 0; e < 4; ++e)
        C[(4 * g + e) * 16 + i] = acc[e];
    EXTRA
}
"""


def _plan(**change):
    text = KERNEL.replace("SYNC", change.get("sync", "__syncthreads();")).replace("OPB", change.get("opb", "Bs[g * 16 + i]"))
    text = text.replace("EXTRA", change.get("extra", ""))
    prog = parse_text(text, "hip", "k.hip")
    func = next(f for f in prog.funcs if f.name == "k")
    return prog, mfma_lift.plan(func, varying_names(func))


def test_plan_lifts_the_plain_kernel():
    prog, (lifts, why) = _plan()
    assert len(lifts) == 1 and not why
    lift = next(iter(lifts.values()))
    assert lift.pos == {"i": "i", "g": "g"} or set(lift.pos.values()) == {"i", "g"}
    out = detensorize.apply(prog, entry="k", target="cuda")
    assert _exchange_buffers(out) == []


@pytest.mark.parametrize("change,reason", [
    ({"sync": ""}, "written between the barriers"),                      # tiles written without a barrier
    ({"opb": "B[tid]"}, "differs between the lanes"),                     # a global read by the own thread id
    ({"opb": "Bs[g * 16 + i] + (float)threadIdx.x"}, "reads threadIdx directly"),
    ({"extra": "C[256 + tid] = a;"}, "read elsewhere than by the MFMA"),  # the operand is live after it
])
def test_plan_refusals_keep_the_exchange(change, reason):
    prog, (lifts, why) = _plan(**change)
    assert not lifts and len(why) == 1
    assert reason in next(iter(why.values()))
    out = detensorize.apply(prog, entry="k", target="cuda")
    assert len(_exchange_buffers(out)) == 2


@pytest.mark.parametrize("rel", ["gemm/gemm_wmma.cu", "bmm/bmm_wmma.cu"])
def test_wmma_accumulator_spread_over_the_warp(rel):
    """wmma_lift: 8 accumulator elements per lane (16x16 over 32 lanes), the a/b fragments
    forwarded into the products (no per-lane copy of the whole tile)."""
    src = EX / rel
    spec = load_spec(str(src) + ".toml")
    prog = parse_file(src, "cuda")
    out = detensorize.apply(prog, entry=spec.entry, target="hip")
    arrays = {d.name: d.type for d in walk(out) if isinstance(d, N.Decl) and isinstance(d.type, N.Array)
              and d.scope == "local"}
    assert set(arrays) == {"acc"} and arrays["acc"].dims[0].value == 8
    code = _code_only(print_program(out, "cuda"))
    assert "a_frag" not in code and "* (float)Bs[kk * BN" in code
    assert _barriers(out) == _barriers(prog)
    # an accumulator element read as acc.x[] keeps the whole-tile form
    text = src.read_text().replace("wmma::store_matrix_sync(", "Cs[0] = acc.x[0];\n    wmma::store_matrix_sync(", 1)
    whole = detensorize.apply(parse_text(text, "cuda", src.name), entry=spec.entry, target="hip")
    assert "a_frag" in _code_only(print_program(whole, "cuda"))
