"""bang -> c row kernels (docs/decisions.md, 2026-12-06 "bang -> c row kernels are un-staged"): the
plan un-stages NRAM rows whose padded tails all drop (passes/unstage_rows.py, tails="dropped"), and
the centred-variance loop that un-staging writes is vectorized by the c vectorizer
(passes/patterns/x86_vec.same_function: one value substituted at two places gets one probe)."""
from __future__ import annotations

from pathlib import Path

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.migration.pipeline import REQUIRE, plans
from xpiler.passes import detensorize, unstage_rows
from xpiler.passes.base import PassError
from xpiler.passes.patterns import x86_loops as XL
from xpiler.passes.patterns import x86_vec as XV
from xpiler.printers import print_program

ROOT = Path(__file__).resolve().parents[1]

# one row's biased variance, staged as layernorm.mlu stages it: zero tail, centre, keep the tail 0,
# square, sum
RVAR = """#include <bang.h>
#define ALIGN 32
__nram__ float row[8192];
__nram__ float sq[8192];
__nram__ float red[32];
extern "C" __mlu_global__ void rvar(const float *x, float *y, int rows, int cols)
{
    int padded = (cols + ALIGN - 1) / ALIGN * ALIGN;
    for (int r = taskId; r < rows; r += taskDim) {
        __bang_write_zero(row, padded);
        __memcpy(row, x + (long)r * cols, cols * sizeof(float), GDRAM2NRAM);
        __bang_sum(red, row, padded);
        float mean = red[0] / (float)cols;
        __bang_sub_scalar(row, row, mean, padded);
        for (int c = cols; c < padded; ++c)
            row[c] = 0.0f;
        __bang_square(sq, row, padded);
        __bang_sum(red, sq, padded);
        y[r] = red[0] / (float)cols;
    }
}
"""


def _detensorized(src, name):
    out = detensorize.apply(parse_text(src, "bang", f"{name}.mlu"), entry=name, target="c")
    return out[0] if isinstance(out, tuple) else out


def test_bang_to_c_tries_the_unstaged_row_plan_after_the_gemm_plan():
    ps = plans("bang", "c")
    names = [n for n, _ in ps[1]]
    assert names[:3] == ["detensorize", "unstage_rows", "loop_recovery"]
    assert dict(ps[1])["unstage_rows"] == {"tails": "dropped", REQUIRE: True}
    # then the staged plan (modulo_split, argmax_value), unprobed
    assert "modulo_split" in [n for n, _ in ps[2]] and not any(p.get(REQUIRE) for _, p in ps[2])


def test_dropped_tails_refuse_a_row_that_keeps_its_tail():
    # softmax.mlu's NEG_BIG tail stays a loop of per-lane selects: refused as nothing to do (XP4002),
    # so the c plan leaves it to the staged plan; the default still un-stages it (to cuda / hip)
    prog = _detensorized((ROOT / "examples/softmax/softmax.mlu").read_text(), "softmax")
    with pytest.raises(PassError) as e:
        unstage_rows.apply(prog, entry="softmax", tails="dropped")
    assert e.value.code == "XP4002" and "tail" in str(e.value)
    unstage_rows.apply(prog, entry="softmax")
    with pytest.raises(PassError) as e:
        unstage_rows.apply(prog, entry="softmax", tails="all")
    assert e.value.code == "XP4001"


def test_unstaged_centred_variance_vectorizes():
    new = unstage_rows.apply(_detensorized(RVAR, "rvar"), entry="rvar", tails="dropped")
    fn = new.func("rvar")
    text = print_program(new)
    assert "row" not in text.split("rvar(")[1].replace("rows", "")      # no NRAM row left
    # the centred value is substituted at both factors of the square: one node object twice
    sq = next(lp for lp in walk(fn.body) if isinstance(lp, N.For) and not any(
        isinstance(n, N.For) for n in walk(lp.body)) and any(
        isinstance(n, N.Var) and n.name.startswith("xpd_s") for n in walk(lp.body)))
    mean_uses = [n for n in walk(sq.body) if isinstance(n, N.Var) and n.name.startswith("xpd_s")]
    assert len(mean_uses) == 2 and mean_uses[0] is mean_uses[1]
    repl, _, reduced = XL.vectorize(fn, XV.Facts(fn), sq)
    assert reduced
    out = print_program(new.with_(items=tuple(
        it.with_(body=N.Block(tuple(repl))) if it is fn else it for it in new.items)))
    assert "_mm512_reduce_add_ps" in out and "_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(" in out
