"""The one IR -> Z3 translator (xpiler/ir/z3term.py): each construct, C's truncated division on
negative operands, the policy for untranslatable terms, and that the dependence analysis (policy
UNKNOWN) never proves independence through a term it cannot read."""
import itertools

import pytest
import z3

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir import z3term as T
from xpiler.ir.visit import find_loop


def C(v, dtype="int32"):
    return N.Const(v, dtype, str(v))


V = N.Var


def B(op, a, b):
    return N.BinOp(op, a, b)


def _names():
    return lambda e: z3.Int(e.name)


def _eval(term, **vals):
    """The value of ``term`` with the named Ints set to ``vals``."""
    sub = [(z3.Int(k), z3.IntVal(v)) for k, v in vals.items()]
    r = z3.simplify(z3.substitute(term, *sub))
    if z3.is_true(r) or z3.is_false(r):
        return z3.is_true(r)
    return r.as_long()


def c_trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_trunc_rem(a, b):
    return a - b * c_trunc_div(a, b)


# ------------------------------------------------------------------ constructs
def test_constants_names_and_integer_casts():
    t = T.Terms(names=_names())
    assert _eval(t.int(C(7))) == 7
    assert _eval(t.int(C(True, "bool"))) == 1
    assert _eval(t.int(V("x")), x=5) == 5
    assert _eval(t.int(N.Builtin("threadIdx.x")), **{"threadIdx.x": 3}) == 3
    assert _eval(t.int(N.Cast(N.Scalar("int64"), V("x"))), x=-4) == -4
    with pytest.raises(T.Untranslatable):
        t.int(N.Cast(N.Scalar("float32"), V("x")))        # a float cast is not an integer term
    with pytest.raises(T.Untranslatable):
        t.int(C(1.5, "float32"))


def test_arithmetic_unary_comparisons_and_boolean_ops():
    t = T.Terms(names=_names())
    x, y = V("x"), V("y")
    grid = list(itertools.product(range(-3, 4), repeat=2))
    for a, b in grid:
        assert _eval(t.int(B("+", x, y)), x=a, y=b) == a + b
        assert _eval(t.int(B("-", x, y)), x=a, y=b) == a - b
        assert _eval(t.int(B("*", x, y)), x=a, y=b) == a * b
        assert _eval(t.int(N.UnOp("-", x)), x=a) == -a
        for op, f in (("<", a < b), ("<=", a <= b), (">", a > b), (">=", a >= b), ("==", a == b), ("!=", a != b)):
            assert _eval(t.bool(B(op, x, y)), x=a, y=b) is f
            assert _eval(t.int(B(op, x, y)), x=a, y=b) == int(f)      # a comparison as an int
        assert _eval(t.bool(B("&&", x, y)), x=a, y=b) is (a != 0 and b != 0)
        assert _eval(t.bool(B("||", x, y)), x=a, y=b) is (a != 0 or b != 0)
        assert _eval(t.bool(N.UnOp("!", x)), x=a) is (a == 0)
        assert _eval(t.int(N.Cond(B("<", x, y), x, y)), x=a, y=b) == min(a, b)
        assert _eval(t.int(N.Call("min", (x, y))), x=a, y=b) == min(a, b)
        assert _eval(t.int(N.Call("max", (x, y))), x=a, y=b) == max(a, b)
        assert _eval(t.int(N.Intrinsic("max", (x, y))), x=a, y=b) == max(a, b)
    assert isinstance(t.value(B("<", x, y)), z3.BoolRef) and isinstance(t.value(x), z3.ArithRef)


def test_shifts_by_constants():
    t = T.Terms(names=_names())
    x = V("x")
    for a in range(-40, 41):
        assert _eval(t.int(B("<<", x, C(3))), x=a) == a << 3
        assert _eval(t.int(B(">>", x, C(2))), x=a) == a >> 2          # arithmetic: the floor
    with pytest.raises(T.Untranslatable):
        t.int(B(">>", x, V("y")))                                      # a shift by a variable


def test_reads_limits_the_optional_constructs():
    t = T.Terms(names=_names(), reads=())
    for e in (N.Cond(V("c"), V("x"), V("y")), N.Call("min", (V("x"), V("y"))), B("<<", V("x"), C(1)),
              B("<", V("x"), V("y"))):
        with pytest.raises(T.Untranslatable):
            t.int(e)
    with pytest.raises(T.Untranslatable):
        t.bool(V("x"))                                                 # an int is not a condition here


# ------------------------------------------------------------------ C division
def test_division_and_remainder_truncate_like_c_on_a_grid():
    t = T.Terms(names=_names())
    div, rem = t.int(B("/", V("a"), V("b"))), t.int(B("%", V("a"), V("b")))
    for a in range(-25, 26):
        for b in range(-9, 10):
            if b == 0:
                continue
            assert _eval(div, a=a, b=b) == c_trunc_div(a, b), (a, b)
            assert _eval(rem, a=a, b=b) == c_trunc_rem(a, b), (a, b)
            assert _eval(T.c_div(z3.IntVal(a), z3.IntVal(b))) == c_trunc_div(a, b)


def test_the_two_forms_of_c_division_agree_on_all_integers():
    """Proof (not a sample): for every a and every d != 0, the named form's facts hold exactly
    for q = c_div(a, d), r = c_rem(a, d); and c_div equals the sign-and-magnitude form repair
    used before the merge."""
    a, d, q, r = z3.Ints("a d q r")
    s = z3.Solver()
    s.add(d != 0, z3.Not((z3.And(*T.c_divmod_facts(a, d, q, r))) == z3.And(q == T.c_div(a, d), r == T.c_rem(a, d))))
    assert s.check() == z3.unsat
    mag = z3.If(a >= 0, a, -a) / z3.If(d >= 0, d, -d)
    old = z3.If((a >= 0) == (d >= 0), mag, -mag)
    s = z3.Solver()
    s.add(d != 0, old != T.c_div(a, d))
    assert s.check() == z3.unsat


# ------------------------------------------------------------------ the policy
def test_refuse_raises_with_the_node():
    e = B("&", V("x"), C(3))
    with pytest.raises(T.Untranslatable) as err:
        T.Terms(policy=T.REFUSE, names=_names()).int(B("+", V("y"), e))
    assert err.value.node == e


def test_unknown_gives_an_unconstrained_term():
    t = T.Terms(policy=T.UNKNOWN, names=_names())
    for e in (B("&", V("x"), C(3)), C(1.5, "float32"), N.Call("f", (V("x"),)), N.Cast(N.Scalar("float32"), V("x"))):
        u = t.int(e)
        for v in (-7, 0, 12345):          # any value, whatever x is
            s = z3.Solver()
            s.add(z3.Int("x") == 2, u == v)
            assert s.check() == z3.sat
    # two untranslatable terms are independent unknowns, not one value
    s = z3.Solver()
    s.add(t.int(N.Call("f", (V("x"),))) != t.int(N.Call("f", (V("x"),))))
    assert s.check() == z3.sat


def test_the_provers_refuse_and_the_dependence_analysis_does_not():
    from passes.patterns.polyz import Refused, Z
    from passes import dependence as D
    e = B("+", V("i"), N.Call("f", (V("i"),)))
    with pytest.raises(Refused) as err:
        Z().int(e)
    assert isinstance(err.value, T.Untranslatable)
    env = D.Z3Env(loopvars={"i"}, lets={}, macros={}, int_params=set(), varying=set())
    ta, tb = D.to_z3(e, "a", env), D.to_z3(e, "b", env)
    s = z3.Solver()
    s.add(*env.cons)
    s.add(env.sym("i", "a") != env.sym("i", "b"), ta == tb)     # f(i) may well collide
    assert s.check() == z3.sat


def test_an_untranslatable_index_is_never_proved_independent():
    from passes.dependence import check_parallel
    src = """
void k(float* a, int n) {
    for (int i = 0; i < n; ++i)
        a[i ^ 1] = a[i ^ 1] + 1.0f;
}
void k2(float* a, int n) {
    for (int i = 0; i < n; ++i)
        a[i] = a[i] + 1.0f;
}
"""
    p = parse_text(src, "c", "t.c")
    f, f2 = p.kernels[0], p.kernels[1]
    # 'i ^ 1' is read as an unknown per iteration: two iterations may touch the same element
    assert check_parallel(p, f, find_loop(f, "i")) is not None
    assert check_parallel(p, f2, find_loop(f2, "i")) is None       # the same loop, affine: proved


def test_the_soundness_check_above_can_fail(monkeypatch):
    """If the dependence translation read 'i ^ 1' as something injective in i (here: as its
    left operand) instead of an unknown, the same loop would be called parallel: the assertion
    of the test above depends on the policy."""
    from passes import dependence as D
    src = """
void k(float* a, int n) {
    for (int i = 0; i < n; ++i)
        a[i ^ 1] = a[i ^ 1] + 1.0f;
}
"""
    p = parse_text(src, "c", "t.c")
    f = p.kernels[0]
    assert D.check_parallel(p, f, find_loop(f, "i")) is not None
    monkeypatch.setattr(D._Terms, "opaque", lambda self, e, depth: self.int(e.lhs, depth + 1))
    assert D.check_parallel(p, f, find_loop(f, "i")) is None


def test_a_query_made_past_the_searchs_cap_answers_unknown_at_once():
    import time
    import z3
    from xpiler.ir import smt
    x, y = z3.Ints("x y")
    with smt.until(time.monotonic() - 1):
        s = smt.solver(2000)
        s.add(x * x + y * y == 25, x > 0, y > 0)
        assert s.check() == z3.unknown
    s = smt.solver(2000)                   # the cap ends with its block
    s.add(x * x + y * y == 25, x > 0, y > 0)
    assert s.check() == z3.sat
    with smt.until(time.monotonic() + 60):  # before the cap: the normal budget
        s = smt.solver(2000)
        s.add(x * x + y * y == 25, x > 0, y > 0)
        assert s.check() == z3.sat
