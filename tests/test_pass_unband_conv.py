"""The staged 2-D convolution lift (``passes/unband_conv.py``): conv2d_nchw.mlu's band loop (channel-
padded NRAM copies, transposes, a WRAM filter staged in groups of 32) becomes a plain loop over the
task's rows with a scalar sum over the real channels. The lift is applied to the staged recovery
(``normalize=False``), compiled with gcc and run against it; mutated sources that break an
obligation are refused with the reason. Loop recovery does not call the lift yet (it would also
change bang -> c, where the staged form is faster: docs/decisions.md). (Z3 proofs: each lift takes
a minute or more on a loaded host.)"""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import detensorize, loop_recovery
from xpiler.passes.unband import Refused
from xpiler.passes.unband_conv import lift
from xpiler.printers import print_program

from test_pass_loop_recovery_normalize import _lib, ptr

ROOT = Path(__file__).resolve().parents[1]
SRC = (ROOT / "examples/conv2d_nchw/conv2d_nchw.mlu").read_text()
BLOCK4 = {"dim": [2, 2, 1], "func_type": "block"}
#: examples/conv2d_nchw/conv2d_nchw.mlu.toml's [preconditions], as the migration driver passes them
ASSUME = (("stride", ">=", 1), ("H", ">=", "KH"), ("W", ">=", "KW"))
_CACHE: dict = {}


def _prog(src):
    prog = parse_text(src, "bang", "conv2d_nchw.mlu")
    out = detensorize.apply(prog, entry="conv2d_nchw", target="c")
    return out[0] if isinstance(out, tuple) else out


def recover(src, normalize=True):
    """The staged recovery, with the lift applied to its task loop when ``normalize``."""
    key = (src, normalize)
    if key not in _CACHE:
        new, launch = loop_recovery.apply(_prog(src), entry="conv2d_nchw", launch=BLOCK4, normalize=False,
                                          assume=ASSUME)
        assert launch == {} and new.dialect == "c"
        if normalize:
            fn = new.func("conv2d_nchw")
            task = [s for s in fn.body.stmts if isinstance(s, N.For)][0]
            lifted = lift(fn, new, task, ASSUME)
            fn2 = fn.with_(body=fn.body.with_(stmts=tuple(lifted if s is task else s for s in fn.body.stmts)))
            new = new.with_(items=tuple(fn2 if x is fn else x for x in new.items))
        _CACHE[key] = new
    return _CACHE[key]


def why_not(src):
    new = recover(src, False)
    fn = new.func("conv2d_nchw")
    task = [s for s in fn.body.stmts if isinstance(s, N.For)][0]
    with pytest.raises(Refused) as e:
        lift(fn, new, task, ASSUME)
    return str(e.value)


def has_while(prog):
    return has_while_in(prog, "conv2d_nchw")


def has_while_in(prog, name):
    return any(isinstance(n, N.While) for n in walk(prog.func(name)))


def test_conv2d_nchw_mlu_becomes_the_row_nest():
    new = recover(SRC)
    assert not has_while(new)
    fn = new.func("conv2d_nchw")
    task = [s for s in fn.body.stmts if isinstance(s, N.For)][0]
    assert not any(isinstance(n, N.Decl) and isinstance(n.type, N.Array) for n in walk(task))
    text = print_program(new)
    body = text[text.index("void conv2d_nchw"):]
    assert "nram_buf[" not in body and "wram_filter[" not in body
    # the sum runs over the real channels only, reading the parameter arrays
    assert "< Cin - 1 + 1; ++" in body and "CinP" not in body
    assert "acc += input[" in body and "* weight[" in body


@pytest.mark.parametrize("N_,Cin,H,W,Cout,KH,KW,S", [(1, 4, 10, 10, 8, 3, 3, 1), (2, 3, 11, 7, 5, 3, 2, 2),
                                                     (1, 33, 6, 5, 35, 2, 3, 1), (2, 1, 5, 9, 1, 5, 1, 3)])
def test_lifted_conv2d_equals_the_staged_recovery(N_, Cin, H, W, Cout, KH, KW, S, tmp_path):
    # the lift against the band loops as recovered (NRAM/WRAM staging, 4 tasks); Cin = 33 and
    # Cout = 35 pad to 64 (two filter groups, 31 / 29 pad channels)
    Ho, Wo = (H - KH) // S + 1, (W - KW) // S + 1
    rng = np.random.default_rng(H * W + Cin)
    x = rng.uniform(-2, 2, (N_, Cin, H, W)).astype(np.float32)
    w = rng.uniform(-1, 1, (Cout, Cin, KH, KW)).astype(np.float32)
    outs = []
    for norm in (True, False):
        text = print_program(recover(SRC, norm)).replace("float nram_buf[NRAM_FLOATS];", "static float nram_buf[NRAM_FLOATS];")
        text = text.replace("float wram_filter[FILTER_FLOATS];", "static float wram_filter[FILTER_FLOATS];")
        fn = _lib(text, tmp_path, f"c{int(norm)}").conv2d_nchw
        y = np.full((N_, Cout, Ho, Wo), -7.0, np.float32)
        fn(ptr(x), ptr(w), ptr(y), *map(ctypes.c_int, (N_, Cin, H, W, Cout, KH, KW, S)))
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    ref = np.zeros((N_, Cout, Ho, Wo))
    for kh in range(KH):
        for kw in range(KW):
            patch = x[:, :, kh:kh + S * (Ho - 1) + 1:S, kw:kw + S * (Wo - 1) + 1:S].astype(np.float64)
            ref += np.einsum("nchw,oc->nohw", patch, w[:, :, kh, kw].astype(np.float64))
    np.testing.assert_allclose(outs[0], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("old,new,reason", [
    # the input band's pad channels are not zeroed: they hold what an earlier band left there
    ("        __bang_write_zero(in_chw, CinP * pix);\n", "", "is not stored earlier in the same band"),
    # the filter's pad channels are not zeroed
    ("        __bang_write_zero(chan_major, ALIGN * slot);\n", "", "stored by no statement before it"),
    # the input band is transposed with the real channel count as its row length
    ("__bang_transpose(in_hwc, in_chw, CinP, pix);", "__bang_transpose(in_hwc, in_chw, Cin, pix);",
     "the sum splits on a bound that is not a reduction loop's"),
])
def test_broken_obligations_are_refused(old, new, reason):
    assert old in SRC
    why = why_not(SRC.replace(old, new))
    # the broken obligation names itself; on a loaded host an earlier proof can come back unknown
    # first (seen once in a CI run under load: "... not proved that one iteration stores each
    # element"), which refuses too. Either way the mutated source is never lifted.
    assert why and (reason in why or "not proved" in why), why


def test_only_the_cuda_and_hip_plans_ask_for_the_lift():
    # loop recovery's staged_conv (the lift, required: the plan is skipped unless it applies) is a
    # step of the bang -> cuda / hip plans only; bang -> c / bang keep the staged form (faster there)
    from xpiler.migration.pipeline import REQUIRE, plans

    def conv_steps(src, dst):
        return [p for plan in plans(src, dst) for n, p in plan if n == "loop_recovery" and p.get("staged_conv")]
    for dst in ("cuda", "hip"):
        assert conv_steps("bang", dst) == [{"normalize": "task_slices", "staged_conv": True, REQUIRE: True}]
    for src, dst in (("bang", "c"), ("bang", "bang"), ("c", "cuda"), ("cuda", "hip"), ("hip", "cuda")):
        assert conv_steps(src, dst) == []


def test_staged_conv_recovery_lifts_the_task_and_collapses_its_rows():
    # the plan's step: the lift inside loop recovery, then the task slices collapsed into one loop
    # over the N * Ho rows (bound `rows`, whose definition the dependence test reads: test_analyses)
    new, launch = loop_recovery.apply(_prog(SRC), entry="conv2d_nchw", launch=BLOCK4, normalize="task_slices",
                                      staged_conv=True, assume=ASSUME)
    assert launch == {} and not has_while(new)
    body = print_program(new)
    body = body[body.index("void conv2d_nchw"):]
    assert "for (int i = 0; i < rows; ++i)" in body and "nram_buf" not in body and "taskId" not in body


def test_staged_conv_refuses_other_band_loops_and_kernels_without_one():
    from xpiler.passes.base import AlternativeRefused
    conv1d = (ROOT / "examples/conv1d/conv1d.mlu").read_text()
    prog = parse_text(conv1d, "bang", "conv1d.mlu")
    prog = detensorize.apply(prog, entry="conv1d", target="c")
    prog = prog[0] if isinstance(prog, tuple) else prog
    launch = {"dim": [4, 1, 1], "func_type": "block"}
    assume = (("Cin", ">=", 1), ("KW", ">=", 1))    # examples/conv1d/conv1d.mlu.toml's [preconditions]
    with pytest.raises(AlternativeRefused) as e:     # conv1d.mlu's band loop is the one-gather form
        loop_recovery.apply(prog, entry="conv1d", launch=launch, normalize="task_slices", staged_conv=True,
                            assume=assume)
    assert "staged_conv: staged convolution:" in str(e.value)
    # without staged_conv the same recovery un-bands it as before
    assert not has_while_in(loop_recovery.apply(prog, entry="conv1d", launch=launch, normalize="task_slices",
                                                assume=assume)[0], "conv1d")
    with pytest.raises(AlternativeRefused):          # no un-staging asked for: the lift cannot run
        loop_recovery.apply(_prog(SRC), entry="conv2d_nchw", launch=BLOCK4, normalize="staged", staged_conv=True)


def test_conv2d_nhwc_mlu_lifts_with_its_channel_last_copy_out(tmp_path):
    # conv2d_nhwc.mlu copies a band out as band * Wo pixels of Cout channels (pixels outer): the
    # lift reads either order of the copy-out loops; its detensorized __bang_conv names its own
    # output width, which the lifted index must spell as the task's Wo (declared), not the
    # band's name (gone after the lift: the C would not compile)
    src = (ROOT / "examples/conv2d_nhwc/conv2d_nhwc.mlu").read_text()
    prog = detensorize.apply(parse_text(src, "bang", "conv2d_nhwc.mlu"), entry="conv2d_nhwc", target="c")
    prog = prog[0] if isinstance(prog, tuple) else prog
    new, _ = loop_recovery.apply(prog, entry="conv2d_nhwc", launch={"dim": [8, 1, 1], "func_type": "union1"},
                                 normalize="task_slices", staged_conv=True, assume=ASSUME)
    assert not has_while_in(new, "conv2d_nhwc")
    text = print_program(new)
    assert "for (int i = 0; i < rows; ++i)" in text and "nram_buf[" not in text[text.index("void conv2d_nhwc"):]
    fn = _lib(text.replace("float nram_buf[NRAM_FLOATS];", "static float nram_buf[NRAM_FLOATS];").replace(
        "float wram_filter[FILTER_FLOATS];", "static float wram_filter[FILTER_FLOATS];"), tmp_path, "nhwc").conv2d_nhwc
    N_, H, W, Cin, Cout, KH, KW, S = 2, 7, 6, 3, 5, 3, 2, 2
    Ho, Wo = (H - KH) // S + 1, (W - KW) // S + 1
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, (N_, H, W, Cin)).astype(np.float32)
    w = rng.uniform(-1, 1, (Cout, KH, KW, Cin)).astype(np.float32)
    y = np.full((N_, Ho, Wo, Cout), -7.0, np.float32)
    fn(ptr(x), ptr(w), ptr(y), *map(ctypes.c_int, (N_, H, W, Cin, Cout, KH, KW, S)))
    ref = np.zeros((N_, Ho, Wo, Cout))
    for kh in range(KH):
        for kw in range(KW):
            patch = x[:, kh:kh + S * (Ho - 1) + 1:S, kw:kw + S * (Wo - 1) + 1:S, :].astype(np.float64)
            ref += np.einsum("nhwc,oc->nhwo", patch, w[:, kh, kw, :].astype(np.float64))
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
