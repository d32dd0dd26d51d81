"""The staged planes lift (``passes/unstage_planes.py``): depthwise_conv2d.mlu's plane loop (NRAM
plane widened to the phase pitch, a stride-phase transpose under ``if (stride > 1)``, a tap loop of
strided window gathers, in-place scales and adds) becomes the plain depthwise nest over the task's
planes. The lift is applied to the staged recovery, compiled with gcc and run against it and a
numpy reference at strides 1, 2 and 3; mutated sources that break an obligation are refused.
(Z3 proofs: each lift takes 10-30 s on a loaded host.)"""
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
from xpiler.passes.unstage_planes import lift
from xpiler.printers import print_program

from test_pass_loop_recovery_normalize import _lib, ptr

ROOT = Path(__file__).resolve().parents[1]
SRC = (ROOT / "examples/depthwise_conv2d/depthwise_conv2d.mlu").read_text()
BLOCK4 = {"dim": [4, 1, 1], "func_type": "block"}
#: examples/depthwise_conv2d/depthwise_conv2d.mlu.toml's [preconditions]
ASSUME = (("stride", ">=", 1), ("H", ">=", "KH"), ("W", ">=", "KW"))
ENTRY = "depthwise_conv2d"
_CACHE: dict = {}


def _staged(src):
    prog = parse_text(src, "bang", "depthwise_conv2d.mlu")
    out = detensorize.apply(prog, entry=ENTRY, target="c")
    out = out[0] if isinstance(out, tuple) else out
    new, launch = loop_recovery.apply(out, entry=ENTRY, launch=BLOCK4, normalize=False, assume=ASSUME)
    assert launch == {} and new.dialect == "c"
    return new


def recover(src, lifted=True):
    key = (src, lifted)
    if key not in _CACHE:
        new = _staged(src)
        if lifted:
            fn = new.func(ENTRY)
            task = [s for s in fn.body.stmts if isinstance(s, N.For)][0]
            t2 = lift(fn, new, task, ASSUME)
            fn2 = fn.with_(body=fn.body.with_(stmts=tuple(t2 if s is task else s for s in fn.body.stmts)))
            new = new.with_(items=tuple(fn2 if x is fn else x for x in new.items))
        _CACHE[key] = new
    return _CACHE[key]


def why_not(src):
    new = _staged(src)
    fn = new.func(ENTRY)
    task = [s for s in fn.body.stmts if isinstance(s, N.For)][0]
    with pytest.raises(Refused) as e:
        lift(fn, new, task, ASSUME)
    return str(e.value)


def test_depthwise_mlu_becomes_the_plain_nest():
    new = recover(SRC)
    task = [s for s in new.func(ENTRY).body.stmts if isinstance(s, N.For)][0]
    assert not any(isinstance(n, N.Decl) and isinstance(n.type, (N.Array, N.Pointer)) for n in walk(task))
    assert not any(isinstance(n, N.If) for n in walk(task))
    body = print_program(new)
    # the nest's indexing: the phase transpose and the window gathers read input[p][ho*s+kh][wo*s+kw]
    assert "input[((long)p * H + ho * stride + kh) * W + wo * stride + kw]" in body, body
    assert "weight[" in body and "output[((long)p * Ho + ho) * Wo + wo]" in body, body


@pytest.mark.parametrize("N_,C,H,W,KH,KW,S", [(1, 4, 10, 10, 3, 3, 1), (2, 3, 11, 7, 3, 2, 2),
                                             (2, 5, 24, 21, 5, 5, 3), (1, 2, 4, 9, 4, 1, 2)])
def test_lifted_nest_equals_the_staged_recovery(N_, C, H, W, KH, KW, S, tmp_path):
    Ho, Wo = (H - KH) // S + 1, (W - KW) // S + 1
    rng = np.random.default_rng(H * W + C)
    x = rng.uniform(-2, 2, (N_, C, H, W)).astype(np.float32)
    w = rng.uniform(-1, 1, (C, KH, KW)).astype(np.float32)
    outs = []
    for lifted in (True, False):
        text = print_program(recover(SRC, lifted)).replace("float nram_buf[NRAM_FLOATS];",
                                                           "static float nram_buf[NRAM_FLOATS];")
        fn = getattr(_lib(text, tmp_path, f"d{int(lifted)}"), ENTRY)
        y = np.full((N_, C, Ho, Wo), -7.0, np.float32)
        fn(ptr(x), ptr(w), ptr(y), *map(ctypes.c_int, (N_, C, H, W, KH, KW, S)))
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    ref = np.zeros((N_, C, Ho, Wo))
    for kh in range(KH):
        for kw in range(KW):
            patch = x[:, :, kh:kh + S * (Ho - 1) + 1:S, kw:kw + S * (Wo - 1) + 1:S].astype(np.float64)
            ref += patch * w[None, :, kh, kw, None, None]
    np.testing.assert_allclose(outs[0], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("old,new,reason", [
    # the accumulator is not zeroed: it holds the previous plane's sum
    ("        __bang_write_zero(acc, out_len);\n", "", "stored by no statement before it"),
    # the plane copy leaves the last column of every row to the zero fill (the padding is read)
    ("__memcpy(plane, input + (long)p * H * W, W * sizeof(float), GDRAM2NRAM,\n"
     "                 Wq * stride * sizeof(float), W * sizeof(float), H - 1);",
     "__memcpy(plane, input + (long)p * H * W, (W - 1) * sizeof(float), GDRAM2NRAM,\n"
     "                 Wq * stride * sizeof(float), W * sizeof(float), H - 1);", "not proved"),
    # the phases are split with the sizes swapped: phase p is no longer columns p, p+s, ...
    ("__bang_transpose(phases, plane, H * Wq, stride);", "__bang_transpose(phases, plane, stride, H * Wq);",
     "not proved"),
])
def test_broken_obligations_are_refused(old, new, reason):
    assert old in SRC
    why = why_not(SRC.replace(old, new))
    assert why and (reason in why or "not proved" in why), why


def test_staged_conv_recovery_lifts_the_planes():
    # the plan step (loop recovery's staged_conv) takes the planes lift and collapses the task
    from xpiler.passes import detensorize as Dt
    prog = parse_text(SRC, "bang", "depthwise_conv2d.mlu")
    out = Dt.apply(prog, entry=ENTRY, target="c")
    out = out[0] if isinstance(out, tuple) else out
    new, launch = loop_recovery.apply(out, entry=ENTRY, launch=BLOCK4, normalize="task_slices",
                                      staged_conv=True, assume=ASSUME)
    fn = new.func(ENTRY)
    assert not any(isinstance(n, N.Decl) and isinstance(n.type, N.Array) for n in walk(fn))
    assert "+= input[" in print_program(new)
