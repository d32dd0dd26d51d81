"""tensorize (BANG row vectors): norm-like row loops staged at a padded row stride become
__bang_* vector ops and reductions; loops the rules do not cover stay scalar."""
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import cache, tensorize
from xpiler.passes.base import PassError
from xpiler.passes.patterns.bang_rows import _reduction

from test_pass_cache import bind_first_loop, bound, verify


def ops_of(prog, entry):
    return sorted({n.name for n in walk(prog.func(entry)) if isinstance(n, N.Intrinsic)
                   and n.name.startswith("__bang_")})


@pytest.mark.parametrize("op,must", [
    ("softmax", {"__bang_max", "__bang_sum", "__bang_active_exp", "__bang_sub_scalar", "__bang_mul_scalar"}),
    ("rmsnorm", {"__bang_square", "__bang_sum", "__bang_mul_scalar", "__bang_mul"}),
    ("layernorm", {"__bang_sum", "__bang_sub_scalar", "__bang_mul", "__bang_add"}),
])
def test_norm_rows_become_vector_ops_and_verify(op, must):
    src, entry, p = bound(op)
    q = cache.apply(p, entry=entry, target="bang")
    f = q.func(entry)
    # padded row stride, strided copies, every buffer in NRAM (the vector unit reads NRAM only)
    assert any(isinstance(n, N.Decl) and n.name.endswith("_pad") for n in walk(f))
    assert not any(isinstance(n, N.Decl) and n.scope == "wram" for n in walk(f))
    assert any(isinstance(n, N.Intrinsic) and n.name == "__memcpy" and len(n.args) == 7 for n in walk(f))
    r = tensorize.apply(q, entry=entry, target="bang")
    assert must <= set(ops_of(r, entry))
    assert must <= set(tensorize.applied_ops(q, entry, target="bang"))
    v = verify(r, src)
    assert v.verified, v.failures[:1]


ROWS = """
void k(const float *x, float *y, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        BODY
    }
}
"""


def _staged(body):
    p = parse_text(ROWS.replace("BODY", body), "c", "k.c")
    p = bind_first_loop(p, "k")
    return cache.apply(p, entry="k", target="bang")


def _tensorized_ops(body):
    q = _staged(body)
    try:
        return ops_of(tensorize.apply(q, entry="k", target="bang"), "k")
    except PassError as e:
        assert e.code == "XP4002"
        return []


def test_row_sum_and_scale():
    ops = _tensorized_ops("float s = 0.0f; for (int c = 0; c < cols; ++c) s += x[r * cols + c];"
                          "for (int c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * s;")
    assert ops == ["__bang_mul_scalar", "__bang_sum"]


def test_product_reduction_is_not_a_bang_reduction():
    ops = _tensorized_ops("float s = 1.0f; for (int c = 0; c < cols; ++c) s *= x[r * cols + c];"
                          "for (int c = 0; c < cols; ++c) y[r * cols + c] = s;")
    assert "__bang_sum" not in ops and "__bang_max" not in ops


def test_loop_reading_its_accumulator_stays_scalar():
    # a prefix sum: statement 1 reads the accumulator statement 2 updates (no loop distribution)
    ops = _tensorized_ops("float s = 0.0f; for (int c = 0; c < cols; ++c) { y[r * cols + c] = s;"
                          " s += x[r * cols + c]; }")
    assert ops == []


def test_max_from_one_needs_lane_zero_as_init():
    good = "float m = x[r * cols + 0]; for (int c = 1; c < cols; ++c) m = fmaxf(m, x[r * cols + c]);" \
           "for (int c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] - m;"
    assert "__bang_max" in _tensorized_ops(good)
    # init from another lane: counting lane 0 again would change the result
    bad = good.replace("m = x[r * cols + 0]", "m = x[r * cols + 1]")
    assert "__bang_max" not in _tensorized_ops(bad)


def test_no_guard_on_the_padded_stride_no_vector_ops():
    q = _staged("for (int c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * 2.0f;")
    f = q.func("k")
    guard = next(n for n in walk(f) if isinstance(n, N.If))
    # drop the `r_pad <= CAP` bound: the padded lanes are no longer provably inside the buffers
    cond = N.BinOp(">", N.Var("cols"), N.Const(0, "int32", "0"))
    q2 = q.with_(items=tuple(it.with_(body=_replace(it.body, guard, guard.with_(cond=cond)))
                             if isinstance(it, N.Func) and it.name == "k" else it for it in q.items))
    with pytest.raises(PassError) as e:
        tensorize.apply(q2, entry="k", target="bang")
    assert e.value.code == "XP4002"
    assert tensorize.applied_ops(q, "k", target="bang") == ["__bang_mul_scalar"]


def _replace(block, old, new):
    from xpiler.passes.patterns.common import replace_stmt
    return replace_stmt(block, old, [new])


def _stmt(text):
    p = parse_text("void f(const float* x, float a) { " + text + "; }", "c", "e.c")
    return p.func("f").body.stmts[0]


@pytest.mark.parametrize("text,instr", [("a += x[0]", "__bang_sum"), ("a = a + x[0]", "__bang_sum"),
                                        ("a = fmaxf(a, x[0])", "__bang_max"), ("a = fminf(x[0], a)", "__bang_min"),
                                        ("a = a > x[0] ? a : x[0]", None), ("a = a * x[0]", None),
                                        ("a = a - x[0]", None)])
def test_reduction_combiner_is_found_by_evaluation(text, instr):
    r = _reduction(_stmt(text), "c")
    assert (r[2] if r else None) == instr
