"""softmax_avx512.c to BANG vector forms (issue 15): the c -> bang plan's row step
(``flatten_lanes(rows=True)``) inlines the exp helper detensorize made a pointer helper, makes the
lane accumulators scalars and joins each vector loop with its masked tail into one element loop
(passes/lowering/chunk_tail.py, ``join_masked``), so that cache stages the rows in NRAM and
tensorize writes ``__bang_*`` ops. The joins' refusals, and the inliner's trailing ``return;``."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from xpiler.frontend import parse_text
from xpiler.passes.base import PassError
from xpiler.passes.inline_helpers import inline_calls
from xpiler.passes.lowering.chunk_tail import join_masked
from xpiler.passes.lowering.common import Names
from xpiler.printers import print_program

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"

ROWS = """
#define W 16
void f(const float* x, float* y, int cols) {
    int full = cols / W * W;
    int tail = cols - full;
    float vmax = -3.0e38f;
    for (int c = 0; c < full; c += W) {
        for (int l = 0; l < 16; ++l) {
            vmax = vmax > x[c + l] ? vmax : x[c + l];
        }
    }
    if (tail) {
        for (int l2 = 0; l2 < 16; ++l2) {
            vmax = vmax > (l2 < tail ? x[full + l2] : -3.0e38f) ? vmax : l2 < tail ? x[full + l2] : -3.0e38f;
        }
    }
    float s = 0.0f;
    for (int c = 0; c < full; c += W) {
        for (int l = 0; l < 16; ++l) {
            float t = x[c + l] - vmax;
            float e = expf(t);
            y[c + l] = e;
            s = s + e;
        }
    }
    if (tail) {
        for (int l2 = 0; l2 < 16; ++l2) {
            float v = l2 < tail ? x[full + l2] : 0.0f;
            float t2 = v - vmax;
            float e2 = expf(t2);
            if (l2 < tail) {
                y[full + l2] = e2;
            }
            if (l2 < tail) {
                s = s + e2;
            }
        }
    }
    y[0] = s;
}
"""


def _join(text):
    p = parse_text(text, "c", "<test>")
    fn = p.func("f")
    body, n = join_masked(fn, fn.body, Names(p), p.macros)
    return n, print_program(p.with_(items=tuple(fn.with_(body=body) if it is fn else it for it in p.items)), "c")


def test_masked_tails_join_into_element_loops():
    n, text = _join(ROWS)
    assert n == 2, text
    assert text.count("< cols; ++") == 2 and "if (tail)" not in text and "l2" not in text, text
    # the joined loops are the chunk loops' bodies at element i
    assert "vmax = vmax > x[xpd_i1] ? vmax : x[xpd_i1];" in text, text
    assert "float t = x[xpd_i2] - vmax;" in text, text


@pytest.mark.parametrize("change", [
    # the fill is not the max's initial value: a masked lane could change the fold
    ("-3.0e38f) ? vmax : l2 < tail ? x[full + l2] : -3.0e38f", "-1.0f) ? vmax : l2 < tail ? x[full + l2] : -1.0f", 1),
    # the tail writes memory on a masked lane
    ("float v = l2 < tail ? x[full + l2] : 0.0f;", "float v = l2 < tail ? x[full + l2] : 0.0f; y[1] = 0.0f;", 1),
    # the tail is not the chunk body at F + l2
    ("float t2 = v - vmax;", "float t2 = v + vmax;", 1),
    # F is not X / W * W
    ("int full = cols / W * W;", "int full = cols / 8 * W;", 0),
    # something assigns the split
    ("y[0] = s;", "y[0] = s; tail = 0;", 0),
])
def test_masked_join_refusals(change):
    old, new, joined = change
    assert old in ROWS
    n, text = _join(ROWS.replace(old, new))
    assert n == joined, text


INLINE = """
static void h(float* t, float* r) {
    {
        for (int l = 0; l < 4; ++l) { r[l] = t[l] * 2.0f; }
        return;
    }
}
static float g(float a) {
    {
        float b = a * 2.0f;
        return b;
    }
}
void f(float* x, float* y) {
    h(x, y);
    y[0] = g(x[0]);
}
"""


def test_inliner_takes_a_valueless_return_that_ends_a_trailing_block():
    p = parse_text(INLINE, "c", "<test>")
    fn, done = inline_calls(p, p.func("f"), lambda h: h.name == "h")
    assert done == {"h"}
    assert "return" not in print_program(p.with_(items=tuple(fn if it.name == "f" else it for it in p.items)),
                                         "c").split("void f(")[1]
    # a valued return inside a trailing block may name the block's locals: still refused
    with pytest.raises(PassError):
        inline_calls(p, p.func("f"), lambda h: False, must=lambda h: h.name == "g")


def test_softmax_avx512_reaches_nram_and_bang_vector_ops(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import idiom_check
    from xpiler.migration.driver import migrate
    r = migrate(EX / "softmax" / "softmax_avx512.c", "bang", outdir=tmp_path / "softmax_avx512.c__to__bang", jobs=1, perf=False)
    assert r.verified
    code = idiom_check.blank_comments(r.code)
    assert "__nram__" in code and "__bang_mul_scalar(" in code, r.code
    row = idiom_check.check_file(r.output_path)
    assert idiom_check.requirement(row) == ("vector forms", True), row
