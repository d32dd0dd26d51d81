"""tensorize pass: BANG vector/matrix ops matched by their registry semantics; AVX-512 for c."""
import math

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import cache, tensorize
from xpiler.passes.base import PassError
from xpiler.passes.patterns.bang import match_elementwise

from test_pass_cache import ROOT, bound, verify


def ops_of(prog, entry):
    return sorted({n.name for n in walk(prog.func(entry)) if isinstance(n, N.Intrinsic)
                   and (n.name.startswith("__bang_") or n.name.startswith("_mm512_"))})


@pytest.mark.parametrize("op,instr", [("relu", "__bang_active_relu"), ("gelu", "__bang_active_gelu"),
                                      ("sigmoid", "__bang_active_sigmoid"), ("sign", "__bang_active_sign"),
                                      ("add", "__bang_add")])
def test_bang_elementwise_selects_the_instruction(op, instr):
    src, entry, p = bound(op)
    q = cache.apply(p, entry=entry, target="bang")
    r = tensorize.apply(q, entry=entry, target="bang")
    assert ops_of(r, entry) == [instr]
    call = next(n for n in walk(r.func(entry)) if isinstance(n, N.Intrinsic) and n.name == instr)
    # the vector length is rounded up to 32 floats (128 bytes)
    assert "31" in repr(call.args[-1]) and "32" in repr(call.args[-1])
    assert not any(isinstance(n, N.For) and n.binding is None for n in walk(r.func(entry)))
    if op in ("gelu", "add"):
        v = verify(r, src)
        assert v.verified, v.failures[:1]


@pytest.mark.parametrize("op,instr", [("gemm", "__bang_matmul"), ("gemv", "__bang_mlp")])
def test_bang_matrix_nests_become_matmul_and_mlp(op, instr):
    src, entry, p = bound(op)
    q = cache.apply(p, entry=entry, target="bang")
    r = tensorize.apply(q, entry=entry, target="bang")
    assert instr in ops_of(r, entry)
    v = verify(r, src)
    assert v.verified, v.failures[:1]


def _expr(text):
    p = parse_text("void f(const float* x, float* y) { y[0] = " + text + "; }", "c", "e.c")
    return p.func("f").body.stmts[0].value


def test_semantic_match_distinguishes_close_functions():
    tanh_gelu = "0.5f * x[0] * (1.0f + tanhf(0.7978845608f * (x[0] + 0.044715f * x[0] * x[0] * x[0])))"
    assert match_elementwise(_expr(tanh_gelu), ["x"])[0] == "__bang_active_gelup"
    assert match_elementwise(_expr("0.5f * x[0] * (1.0f + erff(x[0] / 1.41421356f))"), ["x"])[0] == \
        "__bang_active_gelu"
    assert match_elementwise(_expr("fmaxf(x[0], 0.0f)"), ["x"])[0] == "__bang_active_relu"
    # leaky relu is not relu
    assert match_elementwise(_expr("x[0] > 0.0f ? x[0] : 0.01f * x[0]"), ["x"]) is None
    # operand order matters for a subtraction
    assert match_elementwise(_expr("y[0] - x[0]"), ["x", "y"]) == ("__bang_sub", ("y", "x"))


SMALL = """
__nram__ float a[40];
__nram__ float b[40];
extern "C" __mlu_global__ void k(float* out) {
    for (int i = 0; i < 40; i++) {
        a[i] = b[i] * b[i];
    }
    __memcpy(out, a, 40 * sizeof(float), NRAM2GDRAM);
}
"""


def test_refuses_padded_length_beyond_buffer():
    p = parse_text(SMALL, "bang", "small.mlu")
    with pytest.raises(PassError) as e:
        tensorize.check(p, entry="k", target="bang")
    assert e.value.code == "XP4001" and "64" in e.value.why
    assert e.value.file == "small.mlu" and e.value.line in (2, 3)


def test_c_float_elementwise_to_avx512_with_masked_tail():
    src = ROOT / "examples" / "relu" / "relu.c"
    p = parse_file(src)
    r = tensorize.apply(p, entry="relu", target="c")
    ops = ops_of(r, "relu")
    assert "_mm512_max_ps" in ops and "_mm512_mask_storeu_ps" in ops and "_mm512_maskz_loadu_ps" in ops
    v = verify(r, src, dialect="c", launch={})
    assert v.verified, v.failures[:1]


def test_c_without_an_instruction_is_nothing_to_do():
    # logf: no AVX-512 form (kept scalar); gelu's erff has one now (tests/test_vector_erf.py)
    p = parse_text("void k(const float* x, float* y, int n) { for (int i = 0; i < n; i++) y[i] = logf(x[i]); }",
                   "c", "k.c")
    with pytest.raises(PassError) as e:
        tensorize.check(p, entry="k", target="c")
    assert e.value.code == "XP4002"
