"""Parametric groups (xpiler/repair, docs/repair.md step 4): one build holds the sketches of
several regions only where each keeps the others' holes. A loop's bound or step sketch rebuilds
that field from the loop as written, so a div/mod or index inside the bound must be built apart
(before, its holes did nothing in the shared build and every filling of it was refuted: the
mutant ``bx < (M + 4 - 1) % 4`` was never repaired); a region in the loop's body may share it."""
from __future__ import annotations

from types import SimpleNamespace

LOOP = ("items", 3, "body", "stmts", 0)


def _p(kind, path, holes=2):
    return SimpleNamespace(region=SimpleNamespace(kind=kind, path=path), sketch=SimpleNamespace(holes=[0] * holes))


def _together(a, b) -> bool:
    from xpiler.repair import groups
    return len(groups([a, b])) == 1


def test_a_region_inside_a_loop_bound_is_not_built_with_the_bound_sketch():
    assert not _together(_p("bound", LOOP), _p("divmod", LOOP + ("hi",)))
    assert not _together(_p("divmod", LOOP + ("hi", "lhs")), _p("bound", LOOP))
    assert not _together(_p("stride", LOOP), _p("index", LOOP + ("step",)))


def test_a_region_in_the_loop_body_shares_the_build():
    assert _together(_p("bound", LOOP), _p("divmod", LOOP + ("body", "stmts", 0, "value")))
    assert _together(_p("stride", LOOP), _p("index", LOOP + ("body", "stmts", 1, "target", "index")))
    assert _together(_p("block", LOOP[:3]), _p("index", LOOP + ("hi",)))
    # a loop's bound and step sketches change different fields of one loop
    assert _together(_p("bound", LOOP), _p("stride", LOOP))
    # two expression regions, one inside the other, never share a build
    assert not _together(_p("index", LOOP + ("body", "stmts", 0, "value")),
                         _p("divmod", LOOP + ("body", "stmts", 0, "value", "lhs")))


BLOCKED = """void add(const float* a, const float* b, float* c, int n)
{
    for (int blk = 0; blk < (n + 63) % 64; blk++)
        for (int i = blk * 64; i < n && i < blk * 64 + 64; i++)
            c[i] = a[i] + b[i];
}
"""


def test_the_repair_of_a_div_mod_swapped_in_a_loop_bound(tmp_path):
    from pathlib import Path

    from xpiler.repair import repair_kernel
    from xpiler.spec import load_spec
    root = Path(__file__).resolve().parent.parent
    src = root / "examples/add/add.c"
    spec = load_spec(str(src) + ".toml")
    r = repair_kernel(BLOCKED, "c", "add", spec, (src, spec), workdir=tmp_path, budget_s=60)
    assert not r.before.verified
    assert r.repaired and r.verdict.verified, (r.solver, r.tried[:6])
    assert r.sketch == "divmod" and "/ 64" in r.text
