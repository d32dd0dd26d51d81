"""Horner forms of the polynomial model (xpiler/ir/horner.py): the printer of the lifted
convolution indices (passes/unband_conv.py ``_horner``, passes/unstage_planes.py), which replaced
sympy's ``horner`` / ``count_ops`` / ``default_sort_key`` (issue 13, 2026-12-06)."""
import random
import subprocess
import sys
from pathlib import Path

from xpiler.ir import horner as H
from xpiler.ir import nodes as N
from xpiler.ir import poly as P
from xpiler.printers import CPrinter

ROOT = Path(__file__).resolve().parent.parent


def _text(e):
    return CPrinter().expr(e)


def _leaf(a):
    return N.Var({"__nL": "n", "__hoL": "ho"}.get(a, a))


# the three lifted indices of conv2d_nchw.mlu -> cuda, with the texts the sympy printer gave them
# (recorded on the plan's path, RESULTS.md 2026-12-06 helper 88)
CONV = [
    ({("Cout", "__nL", "_a3", "_a8"): 1, ("__hoL", "_a3"): 1, ("_a3", "_a8", "co"): 1, ("wo",): 1},
     {"__hoL", "__nL", "co", "wo"}, "(((long)n * Cout + co) * _a8 + ho) * _a3 + wo"),
    ({("Cin", "H", "W", "__nL"): 1, ("W", "__hoL", "stride"): 1, ("H", "W", "ci"): 1, ("kw",): 1,
      ("W", "kh"): 1, ("stride", "wo"): 1},
     {"__hoL", "__nL", "co", "wo", "ci", "kh", "kw"},
     "(((long)n * Cin + ci) * H + ho * stride + kh) * W + wo * stride + kw"),
    ({("Cin", "KH", "KW", "co"): 1, ("kw",): 1, ("KW", "kh"): 1, ("KH", "KW", "ci"): 1},
     {"__hoL", "__nL", "co", "wo", "ci", "kh", "kw"}, "(((long)co * Cin + ci) * KH + kh) * KW + kw"),
]


def _print(p, loopvars):
    from xpiler.passes.unband_conv import _long_first
    return _text(_long_first(H.to_ir(H.fewest_ops(p, loopvars), _leaf, loopvars)))


def test_conv_indices_print_as_nested_products_over_the_sizes():
    for p, loopvars, want in CONV:
        assert _print(p, loopvars) == want


def test_fewest_operators_and_the_first_order_on_a_tie():
    # x*W*H + y*W + z: over (H, W) 2 * and 2 +, over (W, H) 3 * and 2 +, expanded 3 * and 2 +
    p = {("H", "W", "x"): 1, ("W", "y"): 1, ("z",): 1}
    f = H.fewest_ops(p, {"x", "y", "z"})
    assert H.ops(f) == 4 and _text(H.to_ir(f, N.Var, {"x", "y", "z"})) == "(x * H + y) * W + z"
    assert H.ops(H.expanded(p)) == 5
    # no size: the expanded sum, deeper terms first, loop counters before sizes in a product
    assert _text(H.to_ir(H.fewest_ops({("i",): 1, ("i", "j"): 3}, {"i", "j"}), N.Var, {"i", "j"})) == "i * j * 3 + i"


def test_signs_print_as_subtraction_and_negative_terms_keep_the_order():
    # the sympy printer raised TypeError on a sum of mixed signs (its sort key compared booleans)
    p = {("KH", "W"): 1, ("W", "band", "stride"): 1, ("W", "stride"): -1}
    assert _print(p, {"band"}) == "(((long)band - 1) * stride + KH) * W"
    e = H.to_ir(H.expanded({("a",): 1, ("p",): -2, ("o",): -1}), N.Var, deep_first=False, coeff_first=True)
    assert _text(e) == "a - o - 2 * p"


def test_every_form_is_its_polynomial_at_random_points():
    """fewest_ops and the printer keep the value: the printed IR, evaluated directly, equals the
    polynomial at random integer points (not through the model's arithmetic)."""
    rng = random.Random(88)
    atoms = ["A", "B", "C", "i", "j", "k"]

    def ev(e, env):
        if isinstance(e, N.Var):
            return env[e.name]
        if isinstance(e, N.Const):
            return e.value
        if isinstance(e, N.UnOp):
            return -ev(e.operand, env)
        if isinstance(e, N.Cast):
            return ev(e.expr, env)
        a, b = ev(e.lhs, env), ev(e.rhs, env)
        return {"+": a + b, "-": a - b, "*": a * b}[e.op]
    for _ in range(200):
        p = {}
        for _ in range(rng.randint(1, 6)):
            m = tuple(sorted(rng.choice(atoms) for _ in range(rng.randint(0, 3))))
            p[m] = p.get(m, 0) + rng.choice([-3, -1, 1, 2])
        p = {m: c for m, c in p.items() if c}
        loopvars = set(rng.sample(["i", "j", "k"], rng.randint(0, 3)))
        f = H.fewest_ops(p, loopvars)
        assert H.ops(f) <= H.ops(H.expanded(p))
        for deep in (True, False):
            e = H.to_ir(f, N.Var, loopvars, deep_first=deep)
            for _ in range(3):
                env = {a: rng.randint(-7, 7) for a in atoms}
                want = sum(c * _prod(env[a] for a in m) for m, c in p.items())
                assert ev(e, env) == want


def _prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


def test_the_lifts_import_no_sympy():
    """The index lifts and the whole migration pipeline run without sympy (no core dependency)."""
    code = ("import sys; import xpiler.passes.unband_conv, xpiler.passes.unstage_planes, xpiler.migration.driver; "
            "import xpiler.passes.loop_recovery, xpiler.passes.tensorize; "
            "assert 'sympy' not in sys.modules, 'sympy imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    for f in ("passes/unband_conv.py", "passes/unstage_planes.py", "xpiler/ir/horner.py"):
        assert "import sympy" not in (ROOT / f).read_text()
