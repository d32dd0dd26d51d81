"""The one polynomial model of the analyses (xpiler/ir/poly.py) read three ways: the provers'
names (passes/patterns/polyz.py ``poly``), the dependence test's atoms (passes/dependence.py
``_poly``) and the access functions (xpiler/ir/affine.py ``to_affine``). Each row is an index
shape one of those callers meets, with the canonical form (monomials, their order, and the dict
order the printers walk) that the three separate models gave before they were merged
(checked against the tree before the merge, 2026-12-05); the merged model must give the same."""
from fractions import Fraction

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir import poly as P
from xpiler.ir.affine import Affine, context_for, to_affine
from xpiler.ir.visit import walk
from xpiler.printers import printer_for

HEADER = "#define TILE 4\n#define IDX(a, b) ((a) * 8 + (b))\n"


def _parse(src):
    p = parse_text(HEADER + "int f(int i, int j, int k, int K, int N, int x, int t) "
                   "{ const int r = i * TILE + 1; return " + src + "; }", "cuda", "t.cu")
    f = next(n for n in walk(p) if isinstance(n, N.Func))
    return next(n for n in walk(p) if isinstance(n, N.Return)).value, context_for(p, f)


def _names(e):
    from passes.patterns.polyz import poly
    try:
        return list(poly(e).items())
    except P.NotPoly:
        return "refused"


def _atoms(e):
    from passes.dependence import _poly
    c = printer_for("cuda")
    return [(tuple(c.expr(a) for a in m), v) for m, v in _poly(e).items()]


# source, provers' names (items in order), dependence atoms (items in order, atoms as C text),
# access function (str of the Affine; None: not one)
CASES = [
    ("i * K + k", [(("K", "i"), 1), (("k",), 1)], [(("K", "i"), 1), (("k",), 1)], "K*i + k"),
    ("(int)(i * K + k) - 3", [(("K", "i"), 1), (("k",), 1), ((), -3)],
     [(("(int)(i * K + k)",), 1), ((), -3)], "K*i + k + -3"),
    ("-(x - 2 * i) + +j", [(("x",), -1), (("i",), 2), (("j",), 1)],
     [(("x",), -1), (("i",), 2), (("+j",), 1)], "2*i + j + -1*x"),
    ("i * 4 * j - j * i * 4", [], [], "0"),
    ("(long)i * N * K + j * N + k", [(("K", "N", "i"), 1), (("N", "j"), 1), (("k",), 1)],
     [(("(long)i", "K", "N"), 1), (("N", "j"), 1), (("k",), 1)], "K*N*i + N*j + k"),
    ("i / 4 * 4 + i % 4", "refused", [(("i / 4",), 4), (("i % 4",), 1)], None),
    ("(t * 64 + x) * 2", [(("t",), 128), (("x",), 2)], [(("t",), 128), (("x",), 2)], "128*t + 2*x"),
    ("k * (K + 1) * i", [(("K", "i", "k"), 1), (("i", "k"), 1)], [(("K", "i", "k"), 1), (("i", "k"), 1)],
     "K*i*k + i*k"),
    ("x << 2", "refused", [(("x << 2",), 1)], "4*x"),
    ("8 / 3 - -7 % 3 + (1 << 4)", "refused", [(("8 / 3",), 1), (("-7 % 3",), -1), (("1 << 4",), 1)], "19"),
    ("IDX(r, j)", "refused", [(("IDX(r, j)",), 1)], "32*i + j + 8"),
    ("r * N + TILE", [(("N", "r"), 1), (("TILE",), 1)], [(("N", "r"), 1), (("TILE",), 1)], "N + 4*N*i + 4"),
    ("i * j * k * K", [(("K", "i", "j", "k"), 1)], [(("K", "i", "j", "k"), 1)], None),
    ("threadIdx.x + blockIdx.x * blockDim.x", "refused",
     [(("threadIdx.x",), 1), (("blockDim.x", "blockIdx.x"), 1)], "blockDim.x*blockIdx.x + threadIdx.x"),
    ("(float)i + 1", "refused", [(("(float)i",), 1), ((), 1)], None),
    ("0 * i", [], [], "0"),
]


@pytest.mark.parametrize("src,names,atoms,affine", CASES, ids=[c[0] for c in CASES])
def test_canonical_forms(src, names, atoms, affine):
    e, ctx = _parse(src)
    assert _names(e) == names
    assert _atoms(e) == atoms
    a = to_affine(e, ctx)
    assert (str(a) if a is not None else None) == affine


def test_printers_back_to_ir_keep_the_orders():
    from passes.patterns.polyz import poly
    c = printer_for("cuda")
    e, _ = _parse("x * 3 - j * N + i * N * K - 5")
    p = poly(e)
    # a subscript: terms by their leading loop (i before j), names in a term by rank then name
    assert c.expr(P.ranked_expr(p, {"i": 0, "j": 1})) == "i * K * N - j * N + x * 3 - 5"
    assert c.expr(P.ranked_expr(p, {})) == "K * N * i - N * j + x * 3 - 5"      # the constant last
    assert c.expr(P.ranked_expr({}, {})) == "0"
    from passes.dependence import _poly
    q = _poly(e)
    # the dependence test's Z3 side: monomials in repr order, coefficient first
    assert c.expr(P.atom_expr(q)) == "-5 + K * N * i + -1 * N * j + 3 * x"


def test_operations():
    p = {("i",): 2, ("K", "i"): 1, (): 3}
    assert P.subst(p, "i", {("j",): 1, (): -1}) == {("j",): 2, ("K", "j"): 1, ("K",): -1, (): 1}
    assert P.atoms(p) == {"i", "K"}
    assert P.add(p, p, -1) == {}
    assert list(P.mul({("i",): 1, (): 1}, {("i",): 1, (): -1}).items()) == [(("i", "i"), 1), ((), -1)]
    with pytest.raises(P.NotPoly):
        P.mul({("a", "b"): 1}, {("c", "d"): 1}, max_degree=3)


def test_affine_arithmetic_is_the_model():
    a, b = Affine.of({"i": 2, "K*i": 1}, 3), Affine.of({"j": 1}, -1)
    assert a.poly == {("i",): 2, ("K", "i"): 1, (): 3}
    assert Affine.from_poly(a.poly) == a
    assert a - a == Affine.of({}, 0)
    assert a * b == Affine.of({"K*i*j": 1, "K*i": -1, "i*j": 2, "i": -2, "j": 3}, -3)
    assert Affine.of({"K*i*j": 1}) * b is None          # four symbols in one monomial
    assert 2 * b + 1 == Affine.of({"j": 2}, -1)


def test_loop_recovery_reads_through_the_model():
    """Loop recovery's index comparisons (passes/loop_recovery.py ``_Poly``) are a reader of the
    model: integer casts read through, a variable is its name, ``/`` an opaque atom keyed
    ``(lhs)op(rhs)`` over its operands' sorted polynomials, atoms ordered by the model's default
    (the answers and atom keys of the class it replaced, checked against the tree before, 2026-12-05)."""
    from xpiler.passes.loop_recovery import _Poly
    rd = _Poly()
    assert isinstance(rd, P.Reader) and rd.key is None
    e, _ = _parse("(int)((long)i * 2 + j / 4) * (k - 1)")
    div = "([(('j',), 1)])/([((), 4)])"
    assert list(rd.of(e).items()) == [(("i", "k"), 2), (("i",), -2), tuple([tuple(sorted(("k", div))), 1]),
                                      ((div,), -1)]
    assert set(rd.atoms) == {"i", "j", "k", div}
    assert rd.atoms[div][1] == {"j"}


def test_constants_coefficients_and_division():
    assert P.const(0) == {} and P.const(3) == {(): 3}
    assert P.value({}) == 0 and P.value({(): -2}) == -2 and P.value({("i",): 1}) is None
    assert P.frozen({("j",): 1, ("i",): 2}) == P.frozen({("i",): 2, ("j",): 1})
    p = {("W", "x"): 3, ("x",): 1, ("x", "x"): 2, (): 5}
    assert P.degree(p, "x") == 2 and P.degree({}, "x") == -1
    assert P.coeff(p, "x") == {("W",): 3, (): 1} and P.coeff(p, "x", 2) == {(): 2}
    assert P.divide_monomial((("W", "W", "x"), 6), (("W",), -2)) == (("W", "x"), -3)
    assert P.divide_monomial((("x",), 3), ((), 2)) is None               # 3/2 is no integer
    assert P.divide_monomial((("x",), 4), (("W",), 2)) is None           # W does not divide x


@pytest.mark.parametrize("f,g,gens,q,r", [
    # exact: (W + 1) * (x * W + 3)
    ({("W", "W", "x"): 1, ("W", "x"): 1, ("W",): 3, (): 3}, {("W",): 1, (): 1}, ["W", "x"],
     {("W", "x"): 1, (): 3}, {}),
    # a remainder, and a leading coefficient that does not divide in the other generators
    ({("a", "x", "x"): 3, ("a", "b"): -3, ("a", "a"): -2, ("W", "W", "x"): -2}, {(): -4, ("a", "a"): -3},
     ["a", "W", "b", "x"],
     {(): Fraction(2, 3)}, {("a", "x", "x"): 3, ("a", "b"): -3, ("W", "W", "x"): -2, (): Fraction(8, 3)}),
    ({("b", "x"): 5, ("a", "x", "x"): 2}, {(): -2, ("b",): 3}, ["b", "a", "x"],
     {("x",): Fraction(5, 3)}, {("a", "x", "x"): 2, ("x",): Fraction(10, 3)}),
])
def test_divide_is_the_recursive_division(f, g, gens, q, r):
    """``divide`` is the dense recursive division over the rationals that unband_conv's witness
    was written against (sympy's ``div(f, g, *gens)``; its answers for these cases, written here as
    sympy gave them on 2026-12-06, and on 1829 random cases when ``divide`` was written). sympy is
    no dependency now: the answers are literal, and ``f == q * g + r`` is checked by evaluating
    both sides at random integer points (not through the model's arithmetic)."""
    import random

    def at(p, env):
        total = Fraction(0)
        for m, c in p.items():
            t = Fraction(c)
            for a in m:
                t *= env[a]
            total += t
        return total
    got_q, got_r = P.divide(f, g, gens)
    assert got_q == q and got_r == r
    rng = random.Random(13)
    for _ in range(20):
        env = {a: rng.randint(-9, 9) for a in gens}
        assert at(f, env) == at(got_q, env) * at(g, env) + at(got_r, env)
    with pytest.raises(ZeroDivisionError):
        P.divide(f, {}, gens)


def test_untile_lanes_and_unband_conv_read_through_the_model():
    """untile_lanes' block run and unband_conv's index reader build the model's polynomials
    (no private arithmetic left): a let of ``+ - *`` expanded, ``%`` by a constant folded into its
    quotient atom, the run's products in the model's monomial order."""
    import xpiler.passes.untile_lanes as UL
    import xpiler.passes.unband_conv as UC
    assert not any(hasattr(UL, n) for n in ("_padd", "_pmul", "_pconst", "_key", "_p"))
    assert not any(hasattr(UC, n) for n in ("_monomials", "_divides"))
    e, _ = _parse("(i * K + 2) * (k - i)")
    run = UL._Run({}, {}, None, {"i", "K", "k"})
    assert list(run.ev(e, {}).items()) == list(
        P.mul(P.add({("K", "i"): 1}, P.const(2)), P.add({("k",): 1}, {("i",): 1}, -1)).items())
    rd = UC._Poly({"r": _parse("i * K + 1")[0]}, {})
    assert isinstance(rd, P.Reader)
    assert rd(_parse("(long)r * 2 - j % 4")[0]) == {("K", "i"): 2, (): 2, ("j",): -1, ("_a0",): 4}
    assert list(rd.back) == ["_a0"] and isinstance(rd.back["_a0"], N.BinOp) and rd.back["_a0"].op == "/"
