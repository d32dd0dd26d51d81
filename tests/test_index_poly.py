"""The tensorize matchers' index reader on the one polynomial model (``passes/patterns/index_poly.py``,
issue 13; it replaced the sympy module ``affine_sym.py``): affine coefficients, opaque atoms for
divisions of parameters, refusal of what is not affine in the loop indices, exact integer
quotients, and the model's printing order."""
from __future__ import annotations

import pytest

from xpiler.frontend import parse_text
from xpiler.passes.patterns import index_poly as A


def expr(text):
    f = parse_text("void g(int i, int j, int H, int W, int N, float* a) { long x = " + text + "; }", "c").func("g")
    return f.body.stmts[0].init


def test_affine_coefficients_and_constant():
    sp = A.Space({"i", "j"})
    b, b0 = A.coeffs(sp.to_poly(expr("(i * H + j) * W + 3 - W")), ["i", "j"])
    assert b == {"i": {("H", "W"): 1}, "j": {("W",): 1}}
    assert b0 == {(): 3, ("W",): -1}
    assert A.equal(sp.to_poly(expr("(H + 1) * (H - 1)")), sp.to_poly(expr("H * H - 1")))


def test_division_of_parameters_is_one_opaque_atom_named_by_its_text():
    sp = A.Space({"i"})
    p = sp.to_poly(expr("(N / 2) * i + (int)(N / 2) + N % 4"))
    assert sp.opaque == {"xp_q0": "N / 2", "xp_q1": "N % 4"}
    assert p == {("i", "xp_q0"): 1, ("xp_q0",): 1, ("xp_q1",): 1}
    # printed back in the model's order (names sorted, the constant last), atoms as their IR
    assert A.c_text(A.coeffs(p, ["i"])[1], sp) == "(N / 2 + N % 4)"
    assert A.c_text(A.P.add(p, {(): -1}), sp) == "(i * (N / 2) + N / 2 + N % 4 - 1)"
    assert A.c_text({}, sp) == "0"


@pytest.mark.parametrize("text", ["i / 2 + j", "i % W", "a[j] * 2 + i", "(i > 0 ? H : W)"])
def test_non_polynomial_use_of_a_loop_index_or_a_memory_read_is_refused(text):
    with pytest.raises(A.NotAffine):
        A.Space({"i", "j"}).to_poly(expr(text))


def test_coeffs_refuses_a_product_or_power_of_loop_indices():
    sp = A.Space({"i", "j"})
    for text in ("i * j + 1", "i * i"):
        with pytest.raises(A.NotAffine):
            A.coeffs(sp.to_poly(expr(text)), ["i", "j"])


def test_quotient_is_exact_with_integer_coefficients():
    sp = A.Space()
    q = A.quotient(sp.to_poly(expr("2 * H * W + 4 * W")), sp.to_poly(expr("2 * W")))
    assert q == {("H",): 1, (): 2}
    assert A.quotient(sp.to_poly(expr("W")), sp.to_poly(expr("2 * W"))) is None      # 1/2
    assert A.quotient(sp.to_poly(expr("H * W + 1")), sp.to_poly(expr("W"))) is None  # remainder 1
    assert A.quotient(6, 3) == {(): 2} and A.quotient(7, 2) is None and A.quotient(1, 0) is None
