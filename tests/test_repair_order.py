"""Localization order (docs/repair.md, "Localize"): within a region kind, the regions nearer the
stores into the wrong output come first (their depth in the backward slice), then source order."""
from __future__ import annotations

from types import SimpleNamespace

from xpiler.frontend import parse_text

GATHER = """void gather(const float* x, float* y, int n, int m)
{
    for (int t = 0; t < n * m; t++) {
        int c = t % m;
        int r = t / m;
        y[t] = x[(t / m) * m + c];
    }
}
"""


def _wrong_values(arg):
    return SimpleNamespace(failures=[SimpleNamespace(code="XP2101", message="output 'y' differs", arg=arg, seed=0,
                                                     instance="base")])


def test_slice_depth_counts_from_the_wrong_stores():
    from xpiler.ir import nodes as N
    from xpiler.repair.localize import _slice
    f = parse_text(GATHER, "c", "g.c").func("gather")
    decls = {s.name: s for s in f.body.stmts[0].body.stmts if isinstance(s, N.Decl)}
    store = f.body.stmts[0].body.stmts[2]
    sl = _slice(f, {"y"}, [p.name for p in f.params])
    assert sl[id(store)] == 0 and sl[id(f.body.stmts[0])] == 0   # the store and its loop
    assert sl[id(decls["c"])] == 1                                # defines what the store reads
    assert id(decls["r"]) not in sl                               # r is never read


def test_the_div_in_the_wrong_store_ranks_before_the_one_feeding_it():
    from xpiler.repair.localize import localize
    prog = parse_text(GATHER, "c", "g.c")
    regs = [r for r in localize(prog, "gather", "c", _wrong_values("y")) if r.kind == "divmod"]
    # source order would put `t % m` (line 4) first; the store's `t / m` (line 6) is nearer
    assert [r.line for r in regs] == [6, 4, 5]


FOLD = """void fold(const float* x, float* y, int n)
{
    float red[256];
    for (int t = 0; t < 256; t++)
        red[t] = t < n ? x[t] : 0.0f;
    for (int half = 256 / 2; half >= 0; half /= 2) {
        for (int t = 0; t < 256; t++) {
            if (t < half)
                red[t] += red[t + half];
        }
    }
    y[0] = red[0];
}
"""


def test_a_hang_ranks_the_conditions_of_open_ended_loops_first():
    """A canonical for with a positive step always ends: for a hang (XP2103), the condition of
    the C-style loop ``half >= 0; half /= 2`` comes before every guard and bound of the others."""
    from xpiler.repair.localize import localize
    prog = parse_text(FOLD, "c", "f.c")
    hang = SimpleNamespace(failures=[SimpleNamespace(code="XP2103", message="kernel run timed out after 20 s",
                                                     arg=None, seed=0, instance="base")])
    regs = localize(prog, "fold", "c", hang)
    assert regs[0].kind == "guard" and regs[0].line == 6
    # for wrong values the source order of the guards holds (line 5's ternary first)
    plain = [r for r in localize(prog, "fold", "c", _wrong_values("y")) if r.kind == "guard"]
    assert plain[0].line != 6
