"""Binding proofs beyond affine subscripts: idioms the dependence test reads exactly (lane
masks of detensorized AVX-512 code, ...) and the refusal each one must keep."""
from __future__ import annotations

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding
from xpiler.passes.base import PassError


def c_prog(text: str) -> N.Program:
    return parse_text(text, "c", "k.c")


def bound(prog, entry, target="cuda"):
    out, _ = binding.apply(prog, entry=entry, target=target)
    return [l.binding for l in walk(out.func(entry)) if isinstance(l, N.For) and l.binding]


def refused(prog, entry, target="cuda") -> PassError:
    with pytest.raises(PassError) as ei:
        binding.apply(prog, entry=entry, target=target)
    assert ei.value.code == "XP4001", ei.value.why
    return ei.value


# ------------------------------------------------------------------ lane masks (1 << t) - 1
ROW_TAIL = """void tailcopy(const float* x, float* y, int rows, int cols) {
    int full = cols / 16 * 16;
    int tail = cols - full;
    unsigned short m = (%s)((1u << tail) - 1u);
    for (int r = 0; r < rows; ++r) {
        for (int l = 0; l < 16; ++l) {
            if ((m >> l) & 1)
                y[r * cols + full + l] = x[r * cols + full + l];%s
        }
    }
}
"""


def test_lane_mask_bit_bounds_the_lane():
    # lane l is written only when l < tail = cols - full: rows stay disjoint
    assert bound(c_prog(ROW_TAIL % ("unsigned short", "")), "tailcopy") == ["global.y", "global.x"]


def test_lane_mask_unset_bit_proves_nothing():
    # the else branch writes the lanes past the row end, i.e. the next row's first elements
    e = refused(c_prog(ROW_TAIL % ("unsigned short", "\n            else\n                "
                                   "y[r * cols + full + l] = 0.0f;")), "tailcopy")
    assert "'y'" in e.why and "'r'" in e.why


def test_lane_mask_sign_extending_cast_is_not_trusted():
    # (signed char)0xff is -1: after the shift every bit is set, whatever l is
    e = refused(c_prog(ROW_TAIL % ("signed char", "")), "tailcopy")
    assert "'y'" in e.why


# ------------------------------------------------------------------ replicated local arrays
VEC_CONST = """void k(const float* x, float* y, int n) {
    float c[16];
    for (int l = 0; l < 16; ++l)
        c[l] = %s;
    int nv = n / 16;
    for (int v = 0; v < nv; ++v)
        for (int l = 0; l < 16; ++l)
            y[v * 16 + l] = x[v * 16 + l] > c[l] ? x[v * 16 + l] : c[l];
    int rest = n - nv * 16;
    if (rest > 0) {
        for (int l = 0; l < rest; ++l)
            y[nv * 16 + l] = x[nv * 16 + l] > c[l] ? x[nv * 16 + l] : c[l];%s
    }
}
"""


def test_constant_array_filled_by_every_thread_is_shared_by_the_units():
    prog, _ = binding.apply(c_prog(VEC_CONST % ("0.0f", "")), entry="k", target="cuda")
    f = prog.func("k")
    fill = f.body.stmts[1]
    assert isinstance(fill, N.For) and fill.binding is None      # runs in every thread
    assert [l.binding for l in f.body.stmts if isinstance(l, N.For)][1:] == ["global.x", "global.x"]


def test_replicated_array_written_by_a_bound_unit_is_refused():
    # the run-once tail also writes c: the other threads would never see that write
    e = refused(c_prog(VEC_CONST % ("0.0f", "\n        c[0] = 1.0f;")), "k")
    assert "'c'" in e.why


def test_replicated_fill_may_not_read_what_a_parallel_unit_writes():
    prog = c_prog("""void k(const float* x, float* y, float* z, int n) {
    for (int i = 0; i < n; ++i)
        y[i] = x[i];
    float c[4];
    for (int l = 0; l < 4; ++l)
        c[l] = y[l];
    for (int i = 0; i < n; ++i)
        z[i] = c[i % 4];
}
""")
    e = refused(prog, "k")
    assert "'y'" in e.why
