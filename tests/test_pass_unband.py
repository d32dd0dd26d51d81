"""Un-banding (``passes/unband.py``): a BANG task that walks its rows in bands and sums rows staged
in NRAM (conv1d.mlu) becomes a plain loop over rows with a scalar contraction over global memory,
which the task slices then collapse. The lift is compiled with gcc and run against the plain
recovery (``normalize=False``, the staged band loops as written) on several shapes; each mutated
source that breaks one proof obligation is refused with its reason and keeps its band loop."""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import detensorize, loop_recovery
from xpiler.printers import print_program

from test_pass_loop_recovery_normalize import _lib, ptr, top_loops

ROOT = Path(__file__).resolve().parents[1]
SRC = (ROOT / "examples/conv1d/conv1d.mlu").read_text()
BLOCK4 = {"dim": [4, 1, 1], "func_type": "block"}
#: examples/conv1d/conv1d.mlu.toml's [preconditions], as the migration driver passes them
ASSUME = (("Cin", ">=", 1), ("KW", ">=", 1))


def _prog(src):
    prog = parse_text(src, "bang", "conv1d.mlu")
    out = detensorize.apply(prog, entry="conv1d", target="c")
    return out[0] if isinstance(out, tuple) else out


def recover(src, normalize=True, assume=ASSUME):
    new, launch = loop_recovery.apply(_prog(src), entry="conv1d", launch=BLOCK4, normalize=normalize, assume=assume)
    assert launch == {} and new.dialect == "c"
    return new


def why_not(src, assume=ASSUME):
    ok, why = loop_recovery.explain_normalization(_prog(src), entry="conv1d", launch=BLOCK4, assume=assume)
    assert not ok
    return why


def has_while(prog):
    return any(isinstance(n, N.While) for n in walk(prog.func("conv1d")))


def test_conv1d_mlu_becomes_the_plain_row_nest():
    new = recover(SRC)
    assert not has_while(new)
    loops = top_loops(new, "conv1d")
    assert [lp.var for lp in loops][:2] == ["i", "lo"]          # rows, then output positions
    assert not any(isinstance(n, N.Decl) and isinstance(n.type, N.Array) for n in walk(new.func("conv1d")))
    text = print_program(new)
    body = text[text.index("void conv1d"):]           # the source's header comment stays
    assert "task" not in body and "nram" not in body
    assert "input[((long)n * Cin + ci) * L + k + lo * stride]" in text
    assert "weight[co * CK + (ci * KW + k)]" in text
    assert "output[((long)n * Cout + co) * Lo + lo] = sum;" in text


@pytest.mark.parametrize("N_,Cin,L,Cout,KW,S", [(1, 4, 32, 8, 3, 1), (2, 3, 37, 5, 4, 2), (3, 5, 70, 33, 7, 3),
                                                (1, 2, 2100, 3, 3, 1), (2, 1, 9, 1, 9, 1)])
def test_unbanded_conv1d_equals_the_staged_recovery(N_, Cin, L, Cout, KW, S, tmp_path):
    # the lift against the band loops as recovered (NRAM staging, 4 tasks); L = 2100: 3 chunks of LT
    Lo = (L - KW) // S + 1
    rng = np.random.default_rng(L)
    x = rng.uniform(-2, 2, (N_, Cin, L)).astype(np.float32)
    w = rng.uniform(-1, 1, (Cout, Cin, KW)).astype(np.float32)
    outs = []
    for norm in (True, False):
        fn = _lib(print_program(recover(SRC, norm)), tmp_path, f"c{int(norm)}").conv1d
        y = np.full((N_, Cout, Lo), -7.0, np.float32)
        fn(ptr(x), ptr(w), ptr(y), *map(ctypes.c_int, (N_, Cin, L, Cout, KW, S)))
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    ref = np.array([[[sum(float(x[n, c, lo * S + k]) * float(w[co, c, k]) for c in range(Cin) for k in range(KW))
                      for lo in range(Lo)] for co in range(Cout)] for n in range(N_)])
    np.testing.assert_allclose(outs[0], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("old,new,reason", [
    # the band advances by one row whatever its size
    ("r += co_end - co_begin;", "r += 1;", "the band's step is its row count"),
    # the reduction reads the next gathered row
    ("__bang_mul_scalar(tmp, cols + j * lenP, wrow[j], lenP);",
     "__bang_mul_scalar(tmp, cols + (j + 1) * lenP, wrow[j], lenP);", "the reduction reads row j of the gather"),
    # the weight copy is one float short
    ("__memcpy(w_nram, weight, Cout * CK * sizeof(float), GDRAM2NRAM);",
     "__memcpy(w_nram, weight, (Cout * CK - 1) * sizeof(float), GDRAM2NRAM);",
     "the scalar operand is read inside the copied range"),
    # the gathered rows start inside the weight copy
    ("float *cols = w_nram + w_len;", "float *cols = w_nram + w_len - ALIGN;", "not the weight copy"),
    # the scratch lanes are the accumulator's
    ("float *tmp = acc + LT;", "float *tmp = acc + 1;", "the accumulator is not the scratch"),
    # the strided branch gathers one lane less than the unit-stride one
    ("sizeof(float), stride * sizeof(float), len - 1);", "sizeof(float), stride * sizeof(float), len - 2);",
     "the gather's branches store the same lanes"),
    # the unit-stride branch reads the next input element
    ("__memcpy(dst, src_row + k, len * sizeof(float), GDRAM2NRAM);",
     "__memcpy(dst, src_row + k + 1, len * sizeof(float), GDRAM2NRAM);", "the gather's branches load the same element"),
    # the zero fill comes after the gather (the rows read are zeros)
    ("            __bang_write_zero(cols, CK * lenP);\n", "", None),
    # the padded lanes are copied out too
    ("lo0, acc, len * sizeof(float),", "lo0, acc, lenP * sizeof(float),", "the lanes copied out of a chunk are min(step, rest)"),
])
def test_broken_obligations_keep_the_band_loop(old, new, reason):
    assert old in SRC
    src = SRC.replace(old, new)
    if reason is None:          # move the fill behind the gather
        anchor = "            for (int co = co_begin; co < co_end; ++co) {"
        src = src.replace(anchor, "            __bang_write_zero(cols, CK * lenP);\n" + anchor)
        reason = "a fill of the chunk follows its gather"
    why = why_not(src)
    assert "band loop" in why and reason in why, why
    assert has_while(recover(src))


@pytest.mark.parametrize("to", ["cuda", pytest.param("hip", marks=pytest.mark.long)])   # (hip: pytest -m long)
def test_conv1d_mlu_reaches_shared_tiles_and_mfma_and_verifies(tmp_path, to):
    """End to end: un-banded, conv1d.mlu takes the plan of conv1d.c (binding, cache, tensorize):
    shared-memory tiles on cuda, LDS tiles + MFMA on hip (the idiom rule of issue 15); verified
    on emu:simt-cpu. Before the lift both outputs were four threads walking the NRAM pipeline."""
    from xpiler.api import migrate
    r = migrate(ROOT / "examples" / "conv1d" / "conv1d.mlu", to, outdir=tmp_path / "o", perf=False, jobs=1)
    assert r.verified
    text = (tmp_path / "o" / f"conv1d.{'cu' if to == 'cuda' else 'hip'}").read_text()
    # (cuda: the wide register-blocked tiles, the default for a float32 matmul since 2026-12-05)
    assert ("__shared__ __align__(16) float xp_As" if to == "cuda" else "__shared__ float xp_As") in text
    assert "__syncthreads()" in text
    assert "xp_priv_nram_buf" not in text and "while" not in text
    if to == "hip":
        assert "__builtin_amdgcn_mfma_f32" in text


def test_without_the_preconditions_two_negative_extents_refuse_the_lift():
    # Cin < 0 and KW < 0: Cin*KW > 0 zero-filled rows are summed by the source, none by the lift
    why = why_not(SRC, assume=())
    assert "band loop" in why and "the gather nest runs as often as the reduction" in why
    assert has_while(recover(SRC, assume=()))
    # one of the two suffices
    assert not has_while(recover(SRC, assume=(("KW", ">=", 0),)))


def test_the_lift_does_not_depend_on_the_names():
    # every buffer, pointer and loop name changed: the same nest, with the new names
    import re
    names = {"cols": "unrolled", "acc": "run", "tmp": "prod", "w_nram": "filt", "r": "at", "co": "ch",
             "lo0": "start", "len": "cnt", "lenP": "cnt_pad", "ci": "c", "k": "tap", "n": "b"}
    src = re.sub(r"\b(" + "|".join(names) + r")\b", lambda m: names[m.group(1)], SRC)
    new = recover(src)
    assert not has_while(new)
    text = print_program(new)
    assert "input[((long)b * Cin + c) * L + tap + lo * stride]" in text
    assert "weight[ch * CK + (c * KW + tap)]" in text
