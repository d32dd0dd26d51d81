"""Repair search speed and the weak bug kinds (docs/repair.md, "Where the time goes"): a failure's
AddressSanitizer line ranks the regions on it first, a pointer into a wrong output is in the
slice, the search runs no full test per hole assignment (only the gate does), and a missing
second barrier, a div/mod swapped inside an index and a wrong stride behind a pointer alias are
repaired and verified."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from xpiler.frontend import parse_text
from xpiler.spec import dialect_of, load_spec
from test_repair import ROWCOPY_SPEC  # noqa: E402  (the spec text shared with the slower repair tests)

ROOT = Path(__file__).resolve().parent.parent

TWO = """void two(const float* x, float* y, float* z, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = x[i] * 2.0f;
    for (int i = 0; i < n; i++)
        z[i] = x[i + 1] + 1.0f;
}
"""

SPLIT = """void split(const float* x, float* y, int rows, int cols)
{
    for (int t = 0; t < rows * cols; t++)
        y[t] = x[t / cols * cols + t % cols] + 1.0f;
}
"""
SPLIT_SPEC = ROWCOPY_SPEC.replace('entry = "rowcopy"', 'entry = "split"')   # the same sizes and arguments


def _verdict(code, message, arg=None):
    return SimpleNamespace(failures=[SimpleNamespace(code=code, message=message, arg=arg, seed=0, instance="base")])


def test_an_asan_line_ranks_the_regions_on_it_first():
    from xpiler.repair.localize import localize
    prog = parse_text(TWO, "c", "two.c")
    # the bad access is reported at line 6 (z[i] = x[i + 1] ...)
    regs = localize(prog, "two", "c", _verdict("XP2105", "out-of-bounds access found by AddressSanitizer: "
                                                          "heap-buffer-overflow read of size 4 at 0x1 in two.c:6 (two)"))
    lines = [r.line for r in regs]
    # the access's line and its loop (line 5) before anything of the first loop (lines 3-4)
    assert lines.index(6) < min(lines.index(3), lines.index(4)) and set(lines[:4]) <= {5, 6}
    assert any(r.kind == "index" and r.line == 6 for r in regs[:4])
    # without a line the first loop's regions come first (source order within a kind)
    plain = localize(prog, "two", "c", _verdict("XP2105", "out-of-bounds access"))
    assert plain[0].line == 3


def test_a_pointer_into_a_wrong_output_is_in_the_slice():
    from xpiler.ir import nodes as N
    from xpiler.ir.visit import walk
    from xpiler.repair.localize import _slice
    text = (ROOT / "examples/gemm/gemm.c").read_text()
    prog = parse_text(text, "c", "gemm.c")
    f = prog.func("gemm")
    init = next(n for n in walk(f) if isinstance(n, N.Assign) and isinstance(n.value, N.Const))   # c[j] = 0.0f
    assert id(init) in _slice(f, {"C"}, [p.name for p in f.params])
    assert id(init) not in _slice(f, {"A"}, [p.name for p in f.params])


def _repair(p: Path, bad: str, tmp_path, budget=60):
    from xpiler.repair import repair_kernel
    spec = load_spec(str(p) + ".toml")
    return repair_kernel(bad, dialect_of(p), spec.entry, spec, (p, spec), workdir=tmp_path, budget_s=budget)


def _gated(r, bad):
    assert r.before is not None and not r.before.verified
    assert r.repaired and r.solver == "sat", (r.solver, r.tried[:6])
    assert r.verdict.verified and r.text != bad
    assert list(r.verdict.seeds) == list(r.before.seeds)
    # every instance of the unrepaired test ran on the repaired kernel (a boundary instance derived
    # from the unrepaired loops runs as was-<name> with the unrepaired sizes)
    assert all(i in r.verdict.instances or "was-" + i in r.verdict.instances for i in r.before.instances)


def test_the_search_runs_no_full_test_per_assignment(tmp_path, monkeypatch):
    import xpiler.verify.tester as T
    calls = []
    real = T.compare_kernels

    def counting(*a, **k):
        calls.append(k.get("instances"))
        return real(*a, **k)
    monkeypatch.setattr(T, "compare_kernels", counting)
    p = ROOT / "examples/add/add.c"
    text = p.read_text()
    bad = text.replace("= a[i] + b[i];", "= a[i + 1] + b[i];")
    assert bad != text
    r = _repair(p, bad, tmp_path)
    _gated(r, bad)
    assert r.filter.get("fast") is True
    # one full test of the unrepaired candidate, then only the gates: the assignments ran on the filter
    assert len(calls) == 1 + r.filter["gate_tests"] and all(c is None for c in calls)
    assert r.checks > r.filter["gate_tests"]


def _planted(p, find, replace, tmp_path, **kw):
    """Plant ``find`` -> ``replace`` in example ``p`` and repair it; the gated result."""
    text = p.read_text()
    assert find in text
    bad = text.replace(find, replace)
    r = _repair(p, bad, tmp_path, **kw)
    _gated(r, bad)
    return r


def test_a_missing_second_barrier_is_repaired(tmp_path):
    r = _planted(ROOT / "examples/gemm/gemm.cu",
                 "        __syncthreads();  // the tiles are overwritten in the next iteration", "", tmp_path,
                 budget=90)
    assert r.sketch == "barrier"


def test_a_div_mod_swapped_inside_an_index_is_repaired(tmp_path):
    (tmp_path / "split.c").write_text(SPLIT)
    (tmp_path / "split.c.toml").write_text(SPLIT_SPEC)
    bad = SPLIT.replace("t / cols * cols", "t % cols * cols")
    r = _repair(tmp_path / "split.c", bad, tmp_path / "w")
    _gated(r, bad)
    assert r.sketch == "divmod" and r.holes == {"op": 0}


def test_a_wrong_stride_behind_a_pointer_alias_is_repaired(tmp_path):
    r = _planted(ROOT / "examples/gemm/gemm.c", "for (int j = 0; j < N; ++j)\n            c[j] = 0.0f;",
                 "for (int j = 0; j < N; j += 2)\n            c[j] = 0.0f;", tmp_path)
    assert r.sketch in ("stride", "bound")



GUARDED = """void guarded(const float* x, float* y, int n, int m)
{
    for (int i = 0; i < m; i++)
        y[i] = 0.0f;
    for (int i = 0; i < m; i++) {
        if (i < n + 1)
            y[i] = x[i];
    }
}
"""

NEGINIT = """void rowmax(const float* x, float* y, float* acc, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        acc[r] = -3.402823466e+38f;
        for (int c = 0; c < cols; c++)
            acc[r] = fmaxf(acc[r], x[r * cols + c]);
        y[r] = acc[r];
    }
}
"""


def test_the_guard_that_admits_a_bad_access_ranks_with_it():
    from xpiler.repair.localize import localize
    prog = parse_text(GUARDED, "c", "g.c")
    # ASan names the store (line 7); the `if` on line 6 let it through
    regs = localize(prog, "guarded", "c", _verdict("XP2105", "out-of-bounds access found by AddressSanitizer: "
                                                              "heap-buffer-overflow read of size 4 in g.c:7 (guarded)"))
    lines = [r.line for r in regs]
    hot = lines[:min(lines.index(3), lines.index(4))]
    assert set(hot) == {5, 6, 7}
    assert any(r.kind == "guard" and r.line == 6 for r in regs[:len(hot)])


def test_a_negated_constant_reduction_init_is_a_region():
    from xpiler.repair.localize import regions
    from xpiler.sketches import KINDS
    prog = parse_text(NEGINIT, "c", "n.c")
    inits = [r for r in regions(prog, "rowmax", "c") if r.kind == "init"]
    assert len(inits) == 1 and inits[0].line == 4
    sk = KINDS["reduction_init"].build(inits[0])
    assert sk is not None and len(sk.holes) == 1
    # the same as a declaration: ``float m = -3.4e38f;``
    decl = NEGINIT.replace("float* acc, ", "").replace("acc[r] = -3.402823466e+38f;", "float m = -3.402823466e+38f;") \
        .replace("acc[r] = fmaxf(acc[r],", "m = fmaxf(m,").replace("y[r] = acc[r];", "y[r] = m;")
    prog = parse_text(decl, "c", "d.c")
    inits = [r for r in regions(prog, "rowmax", "c") if r.kind == "init"]
    assert len(inits) == 1 and inits[0].line == 4


def test_a_negated_guard_costs_more_than_an_off_by_one():
    from xpiler.repair.localize import regions
    from xpiler.repair.solve import models, problem
    from xpiler.sketches import KINDS
    from xpiler.sketches.guard import OPS
    prog = parse_text(GUARDED, "c", "g.c")
    reg = next(r for r in regions(prog, "guarded", "c") if r.kind == "guard")
    assert reg.node.op == "<"
    p = problem(KINDS["guard"].build(reg), reg)
    ops = {lv: {OPS[m["op"]] for m in models(p, lv, 50)} for lv in (1, 2, 3)}
    assert ops[1] == {"<", "<="}          # the other strictness, or an offset of one, as written
    assert ">" not in ops[2] and ">=" not in ops[2]
    assert {">", ">="} <= ops[3]          # the opposite direction only at the last level


def test_a_hang_ranks_loop_conditions_first_and_the_filter_waits_less_for_it():
    from xpiler.repair.fastcheck import ExampleOracle
    from xpiler.repair.localize import localize
    prog = parse_text(GUARDED, "c", "g.c")
    regs = localize(prog, "guarded", "c", _verdict("XP2103", "kernel run timed out after 20 s"))
    assert regs[0].kind == "guard"
    # a filter run's limit follows the source kernel's runs, not the per-run limit of the test
    o = ExampleOracle.__new__(ExampleOracle)
    o.timeout, o.src = 20.0, object()
    o.src_s = 0.01
    assert o.limit() == 1.5
    o.src_s = 0.5
    assert o.limit() == 10.0
    o.src_s = 5.0
    assert o.limit() == 20.0
