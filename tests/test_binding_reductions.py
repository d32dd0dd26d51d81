"""Binding of parallel code the dependence test used to refuse (issue 12): scalar reductions,
flattened div/mod indices, sibling loop nests that need a barrier (passes/phases.py,
passes/digits.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding, digits, phases
from xpiler.passes.base import PassError
from xpiler.printers import print_program

WILD = Path(__file__).resolve().parents[1] / "examples" / "wild"


def c_prog(text):
    return parse_text(text, "c", "k.c")


def loops(prog, name):
    return [n for n in walk(prog.func(name)) if isinstance(n, N.For)]


def _loop_op(body: str, acc: str = "m"):
    src = f"void f(const float* x, float* y, int n) {{ float {acc} = 0.0f; " \
          f"for (int i = 0; i < n; i++) {{ {body} }} y[0] = {acc}; }}"
    lp = loops(c_prog(src), "f")[0]
    try:
        return phases.reductions(lp, [acc])[acc].op
    except phases.NotPhases:
        return None


@pytest.mark.parametrize("body,op", [
    ("m += x[i] * x[i];", "+"),
    ("m -= x[i];", "+"),
    ("m = m + x[i];", "+"),
    ("m = x[i] + m;", "+"),
    ("m *= x[i];", "*"),
    ("m = fmaxf(m, x[i]);", "max"),
    ("m = fmaxf(x[i], m);", "max"),
    ("m = fminf(m, x[i]);", "min"),
    ("if (x[i] > m) m = x[i];", "max"),
    ("if (m < x[i]) { m = x[i]; }", "max"),
    ("if (x[i] < m) m = x[i];", "min"),
    ("m = m > x[i] ? m : x[i];", "max"),
    ("m = x[i] < m ? x[i] : m;", "min"),
    ("if (x[i] > 0.0f) m += x[i];", "+"),
])
def test_reduction_forms_are_recognised(body, op):
    assert _loop_op(body) == op


@pytest.mark.parametrize("body", [
    "m += x[i]; y[i] = m;",                 # the running value is read: a scan, not a reduction
    "m = m * 0.5f + x[i];",                 # not one associative operator
    "m = x[i] - m;",                        # acc on the right of '-'
    "m += x[i]; m = fmaxf(m, x[i]);",       # two operators
    "if (x[i] > m) { m = x[i]; y[1] = 1.0f; }",
])
def test_non_reductions_are_not_taken(body):
    assert _loop_op(body) is None


def test_integer_and_product_reductions_bind_one_block():
    src = """void f(const int* a, int* out, float* p, const float* x, int n)
{
    int acc = 0;
    float prod = 1.0f;
    for (int i = 0; i < n; i++) {
        acc += a[i];
        prod *= x[i];
    }
    out[0] = acc;
    p[0] = prod;
}
"""
    prog, launch = binding.apply(c_prog(src), entry="f", target="hip", block=128)
    assert launch == {"grid": [1, 1, 1], "block": [128, 1, 1]}
    text = print_program(prog, "hip")
    assert "int acc_part = 0;" in text and "float prod_part = 1;" in text
    assert "__shared__ int xp_red_acc[128];" in text and "__shared__ float xp_red_prod[128];" in text
    assert "if (threadIdx.x == 0)" in text            # the stores after the loop: one thread
    assert loops(prog, "f")[0].binding == "threadIdx.x"


def test_idempotent_reduction_starts_from_the_accumulator():
    src = "void f(const float* x, float* y, int n) { float m = x[0]; " \
          "for (int i = 1; i < n; i++) { m = fmaxf(m, x[i]); } y[0] = m; }"
    text = print_program(binding.apply(c_prog(src), entry="f", target="cuda")[0], "cuda")
    assert "float m_part = m;" in text and "m = xp_red_m[0];" in text


def test_scan_is_not_spread_over_threads():
    src = """void scan(const float* x, float* y, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++) {
        s += x[i];
        y[i] = s;
    }
}
"""
    # s is read by the store: no reduction; the loop would have to run in one thread, which
    # may not assign a scalar the other threads hold: refused
    with pytest.raises(PassError) as ei:
        binding.apply(c_prog(src), entry="scan", target="cuda")
    assert "'s'" in ei.value.why and ei.value.line == 4


def test_bang_fallback_is_one_task():
    src = "void f(const float* x, float* y, int n) { float s = 0.0f; " \
          "for (int i = 0; i < n; i++) { s += x[i]; } y[0] = s; }"
    prog, launch = binding.apply(c_prog(src), entry="f", target="bang")
    assert launch == {"dim": [1, 1, 1], "func_type": "block"}
    ls = loops(prog, "f")
    assert ls[0].binding == "taskId" and ls[0].hi == N.Const(1) and ls[1].binding is None


# ---------------------------------------------------------------- flattened indices
def _store_injective(store: str, hi: str = "N * C * H * W") -> bool:
    src = f"""void f(const float* in, float* out, int N, int C, int H, int W)
{{
    for (int idx = 0; idx < {hi}; idx++) {{
        int n = idx / (C * H * W);
        int c = (idx / (H * W)) % C;
        int h = (idx / W) % H;
        int w = idx % W;
        out[{store}] = in[idx];
    }}
}}
"""
    try:
        binding.check(c_prog(src), entry="f", target="cuda", dims=1)
        return True
    except PassError:
        return False


@pytest.mark.parametrize("store", [
    "((n * H + h) * W + w) * C + c",          # NCHW -> NHWC
    "((n * C + c) * H + h) * W + w",          # identity recomposition
    "((c * N + n) * W + w) * H + h",          # another permutation
    "((n * H + (H - 1 - h)) * W + w) * C + c",   # a reversed digit is still one-to-one
])
def test_flattened_permutation_stores_are_parallel(store):
    assert _store_injective(store)


@pytest.mark.parametrize("store", [
    "(n * H + h) * W + w",                    # c dropped: C iterations write one element
    "((n * H + h) * W + w) * C",              # c's radix missing
    "((n * H + h) * W + w) * (C - 1) + c",    # radix smaller than the digit's range
    "(h * W + w) * C + c + n",                # n with a radix that overlaps the others
])
def test_flattened_stores_that_collide_are_refused(store):
    assert not _store_injective(store)


def test_digits_read_modulo_of_product_forms():
    # (idx % (H*W)) / W is the h digit, idx / W / H the n*C... top part
    e = parse_text("void g(int idx, int H, int W, float* o) { o[(idx / W / H) * H * W + "
                   "((idx % (H * W)) / W) * W + idx % W] = 0; }", "c").func("g")
    store = next(n for n in walk(e) if isinstance(n, N.Assign)).target.index
    assert digits.injective(store, "idx", N.BinOp("*", N.Var("Q"), N.BinOp("*", N.Var("H"), N.Var("W"))), set())


# ---------------------------------------------------------------- the wild kernels
@pytest.mark.parametrize("rel,entry,target,want", [
    ("softmax/softmax_vec.cpp", "softmax_vec", "cuda", {"grid": [1, 1, 1], "block": [256, 1, 1]}),
    ("layernorm/layernorm_twopass.cpp", "layernorm_twopass", "hip", {"grid": [1, 1, 1], "block": [256, 1, 1]}),
    ("transpose/transpose_flat.c", "nchw2nhwc_flat", "bang", {"dim": [4, 1, 1], "func_type": "union1"}),
    ("avgpool2d/avgpool_flat.cpp", "avgpool_flat", "cuda", None),
])
def test_wild_kernels_bind(rel, entry, target, want):
    prog = parse_file(WILD / rel)
    out, launch = binding.apply(prog, entry=entry, target=target)
    if want is not None:
        assert launch == want
    else:                                   # a grid-stride loop over all outputs
        assert loops(out, entry)[0].binding == "global.x" and "N * C" in launch["grid"][0]
