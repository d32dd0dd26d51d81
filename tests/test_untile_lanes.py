"""untile of a lane-distributed tile (passes/untile_lanes.py): the matrix-core kernels, lifted by
detensorize (MFMA: mfma_lift.py, WMMA: wmma_lift.py) and recovered to loops, become the plain
contraction; altered tiles are refused."""
from __future__ import annotations

import functools
from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import detensorize, loop_recovery, untile
from xpiler.passes.base import PassError
from xpiler.printers import print_program
from xpiler.spec import load_spec

from test_pass_detensorize import _verify

EX = Path(__file__).resolve().parent.parent / "examples"


@functools.lru_cache(maxsize=None)
def _recovered(rel):
    src = EX / rel
    spec = load_spec(str(src) + ".toml")
    prog = detensorize.apply(parse_file(src, spec.dialect), entry=spec.entry, target="c")
    launch = spec.launch
    rec, _ = loop_recovery.apply(prog, entry=spec.entry, normalize="loops", launch=launch)
    return src, spec, rec


def _plain(prog, entry):
    """The entry's body is loops only, with one k loop accumulating into a scalar."""
    func = next(f for f in prog.funcs if f.name == entry)
    assert not [d for d in walk(func.body) if isinstance(d, N.Decl) and isinstance(d.type, N.Array)]
    sums = [a for a in walk(func.body) if isinstance(a, N.Assign) and a.op == "+=" and isinstance(a.target, N.Var)]
    assert len(sums) == 1
    return func


@pytest.mark.parametrize("rel", ["gemm/gemm_mfma.hip", "bmm/bmm_mfma.hip", "gemm/gemm_mfma_f16.hip",
                                 "gemm/gemm_wmma.cu", "bmm/bmm_wmma.cu"])
def test_matrix_core_kernels_untile(rel):
    src, spec, rec = _recovered(rel)
    out = untile.apply(rec, entry=spec.entry)
    _plain(out, spec.entry)
    text = print_program(out, "c")
    if "f16" in rel or "wmma" in rel:
        assert "(float)A[" in text and "(float)B[" in text      # half inputs widened, float sums


def test_untiled_wmma_verifies():
    src, spec, rec = _recovered("gemm/gemm_wmma.cu")
    out = untile.apply(rec, entry=spec.entry)
    v = _verify(src, print_program(out, "c"), spec)
    assert v.verified, (v.failures[0].message if v.failures else v)


@pytest.mark.parametrize("old,new,reason", [
    # a product reads the next k: not one function of (output, k)
    ("+ (xpd_r10 * BK + xpd_k12)]", "+ (xpd_r10 * BK + (xpd_k12 + 1) % 16)]", "not one function of the output"),
    # the staging leaves the last element of As unwritten
    ("i < BM * BK; i += 128", "i < BM * BK - 1; i += 128", "does not write every element of 'As' once"),
    # the copy-out drops the last column of every tile
    ("i_2 < BM * BN; i_2 += 128", "i_2 < BM * BN - 1; i_2 += 128", "each place of the block tile exactly once"),
    # the padding of A is not zero
    ("A[r * K + k] : (_Float16)0.0f", "A[r * K + k] : (_Float16)1.0f", "zero-padded"),
    # the A copy is taken past K (reads beyond the row)
    ("(r < M && k < K) ? A", "(r < M && k < K + 1) ? A", "holds a nonzero value past K"),
])
def test_altered_tiles_are_refused(old, new, reason):
    src, spec, rec = _recovered("gemm/gemm_wmma.cu")
    text = print_program(rec, "c")
    assert old in text
    bad = parse_text(text.replace(old, new), "c", "bad.c")
    with pytest.raises(PassError) as e:
        untile.apply(bad, entry=spec.entry)
    assert e.value.code == "XP4001" and reason in str(e.value), str(e.value)


def test_half_contraction_to_mfma_f16_on_hip():
    """The untiled half x half -> float contraction is written with MFMA 16x16x16f16 on hip
    (tensorize; before, only float32 mapped to MFMA) and verifies against the WMMA source."""
    from xpiler.passes import binding, tensorize
    src, spec, rec = _recovered("gemm/gemm_wmma.cu")
    plain = untile.apply(rec, entry=spec.entry)
    hip = binding.apply(plain, entry=spec.entry, target="hip")
    hip = hip[0] if isinstance(hip, tuple) else hip
    out = tensorize.apply(hip, entry=spec.entry, target="hip")
    prog, launch = out if isinstance(out, tuple) else (out, None)
    text = print_program(prog, "hip")
    assert "__builtin_amdgcn_mfma_f32_16x16x16f16" in text and "halfx4" in text
    assert "(_Float16)(float)A[" in text          # hip's half goes through float into _Float16
