"""Z3 sketch repair (xpiler/repair, sketches/; docs/repair.md): each sketch kind repairs a planted
bug, a bug outside every sketch is not reported repaired, the repaired kernel passed the same
instances and seeds, --no-repair writes no repair event, and replay re-applies a logged repair
without a solver."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpiler.spec import dialect_of, load_spec

ROOT = Path(__file__).resolve().parent.parent

ROWCOPY = """void rowcopy(const float* x, float* y, int rows, int cols)
{
    for (int t = 0; t < rows * cols; t++) {
        int r = t / cols;
        int c = t % cols;
        if (c < cols - 1)
            y[r * cols + c] = x[r * cols + c + 1];
        else
            y[r * cols + c] = 0.0f;
    }
}
"""
ROWCOPY_SPEC = """entry = "rowcopy"
dialect = "c"
[sizes]
rows = 4
cols = 9
[[shapes]]
name = "odd"
rows = 3
cols = 13
[[args]]
name = "x"
dtype = "float32"
shape = ["rows", "cols"]
role = "in"
[[args]]
name = "y"
dtype = "float32"
shape = ["rows", "cols"]
role = "out"
[[args]]
name = "rows"
dtype = "int32"
role = "scalar"
value = "rows"
[[args]]
name = "cols"
dtype = "int32"
role = "scalar"
value = "cols"
"""


@pytest.fixture(scope="module")
def rowcopy(tmp_path_factory):
    d = tmp_path_factory.mktemp("rowcopy")
    (d / "rowcopy.c").write_text(ROWCOPY)
    (d / "rowcopy.c.toml").write_text(ROWCOPY_SPEC)
    return d / "rowcopy.c"


# (source, find, replace, the sketch kind that must repair it)
CASES = [
    ("examples/add/add.c", "i < n", "i < n - 1", "bound"),
    ("examples/add/add.c", "i++", "i += 2", "stride"),
    ("examples/add/add.c", "= a[i] + b[i];", "= a[i + 1] + b[i];", "affine_index"),
    ("examples/gemm/gemm.c", "c[j] = 0.0f", "c[j] = 1.0f", "reduction_init"),
    ("rowcopy", "if (c < cols - 1)", "if (c <= cols - 1)", "guard"),
    ("rowcopy", "int c = t % cols;", "int c = t / cols;", "divmod"),
    ("examples/softmax/softmax.mlu", "cols * sizeof(float), NRAM2GDRAM", "(cols - 1) * sizeof(float), NRAM2GDRAM",
     "copy"),
    ("examples/softmax/softmax.cu", "red[tid] += red[tid + half];\n        __syncthreads();",
     "red[tid] += red[tid + half];", "barrier"),
]


def _case(src, find, repl, rowcopy):
    p = rowcopy if src == "rowcopy" else ROOT / src
    text = p.read_text()
    assert find in text
    spec = load_spec(str(p) + ".toml")
    return p, text.replace(find, repl, 1), spec


@pytest.mark.parametrize("src,find,repl,kind", CASES, ids=[c[3] for c in CASES])
def test_each_sketch_kind_repairs_a_planted_bug(src, find, repl, kind, rowcopy, tmp_path):
    from xpiler.repair import repair_kernel
    p, bad, spec = _case(src, find, repl, rowcopy)
    r = repair_kernel(bad, dialect_of(p), spec.entry, spec, (p, spec), workdir=tmp_path, budget_s=60)
    assert r.before is not None and not r.before.verified       # the planted bug fails the test
    assert r.repaired and r.solver == "sat", (r.solver, r.tried[:5])
    assert r.sketch == kind
    assert r.verdict.verified and r.text != bad
    # the repaired kernel passed the same seeds on every instance the unrepaired test ran
    assert list(r.verdict.seeds) == list(r.before.seeds)
    assert set(r.before.instances) <= set(r.verdict.instances)
    assert r.verdict.runs >= r.before.runs - r.before.skipped
    js = r.to_json()
    assert js["region"]["kind"] and js["holes"] and js["verdict"]["verified"]


def test_a_bug_no_sketch_covers_is_not_reported_repaired(tmp_path):
    from xpiler.repair import repair_kernel
    p = ROOT / "examples/add/add.c"
    spec = load_spec(str(p) + ".toml")
    bad = p.read_text().replace("= a[i] + b[i];", "= a[i] - b[i];")   # wrong operator: no sketch has that hole
    r = repair_kernel(bad, "c", "add", spec, (p, spec), workdir=tmp_path, budget_s=20)
    assert not r.repaired and r.text is None and r.verdict is None
    assert r.solver in ("unsat", "timeout", "unknown")
    assert r.tried          # sketches were tried and refuted


def test_a_passing_kernel_is_not_repaired(tmp_path):
    from xpiler.repair import repair_kernel
    p = ROOT / "examples/add/add.c"
    spec = load_spec(str(p) + ".toml")
    r = repair_kernel(p.read_text(), "c", "add", spec, (p, spec), workdir=tmp_path, budget_s=5)
    assert not r.repaired and r.solver == "not localized"


def _plant_bound_bug(monkeypatch):
    """Binding's output gets its first loop one iteration short, in migrate and in replay alike
    (both apply passes through xpiler.schedule.step.apply_program)."""
    import xpiler.schedule.step as step
    from xpiler.ir import nodes as N
    from xpiler.ir.visit import rewrite
    from xpiler.sketches._base import add_const
    real = step.apply_program

    def planted(program, entry, pass_name, params, ctx):
        prog = real(program, entry, pass_name, params, ctx)
        if pass_name == "binding":
            done = [False]

            def fn(n):
                if isinstance(n, N.For) and not done[0]:
                    done[0] = True
                    return n.with_(hi=add_const(n.hi, -1))
                return n
            prog = rewrite(prog, fn)
        return prog
    monkeypatch.setattr(step, "apply_program", planted)


def _events(out: Path) -> list[dict]:
    return [json.loads(ln) for ln in (out / "provenance.jsonl").read_text().splitlines()]


def test_no_repair_writes_no_repair_event(tmp_path, monkeypatch):
    from xpiler.migration.driver import migrate
    _plant_bound_bug(monkeypatch)
    r = migrate(ROOT / "examples/add/add.c", "cuda", outdir=tmp_path / "o", perf=False, repair=False, budget=300)
    assert not r.verified
    assert not [e for e in _events(tmp_path / "o") if e["type"] == "repair"]


def test_migration_repairs_and_replay_reapplies_without_z3(tmp_path, monkeypatch):
    from xpiler.migration.driver import migrate
    from xpiler.replay import replay
    _plant_bound_bug(monkeypatch)
    out = tmp_path / "o"
    # the plans' float4 tail (cuda and, since 2026-12-06, hip) would vectorize the repaired program,
    # so the output would not be the repair's: this test's plans end at tensorize, as hip's did
    from xpiler.migration import pipeline as PL
    monkeypatch.setattr(PL, "_finish", lambda dst: [PL._cache(dst), ("tensorize", {"target": dst})])
    r = migrate(ROOT / "examples/add/add.c", "hip", outdir=out, perf=False, budget=300)
    assert r.verified
    evs = _events(out)
    rep = [e for e in evs if e["type"] == "repair"]
    assert len(rep) == 1 and rep[0]["accepted"] and rep[0]["sketch"] == "bound" and rep[0]["holes"] == {"hi": 1}
    assert rep[0]["solver"] == "sat" and rep[0]["verdict"]["verified"]
    # the repaired program was tested by the driver itself and is the output
    tests = {e["program_hash"]: e for e in evs if e["type"] == "test"}
    assert tests[rep[0]["out_hash"]]["verified"]
    assert any(e["type"] == "output" and e["program_hash"] == rep[0]["out_hash"] for e in evs)
    assert any(d.code == "XP4110" for d in r.diagnostics)

    # replay re-applies the splice from the event: no solver may run
    import z3

    import xpiler.repair.solve as solve

    def boom(*a, **k):
        raise AssertionError("replay called the solver")
    monkeypatch.setattr(solve, "cegis", boom)
    monkeypatch.setattr(z3, "Solver", boom)
    res = replay(out / "provenance.jsonl")
    assert res.ok and res.verified and res.output_hash == rep[0]["out_hash"]


def test_replay_refuses_an_edited_repair(tmp_path, monkeypatch):
    from xpiler.diagnostics import XPError
    from xpiler.migration.driver import migrate
    from xpiler.replay import replay
    _plant_bound_bug(monkeypatch)
    out = tmp_path / "o"
    assert migrate(ROOT / "examples/add/add.c", "cuda", outdir=out, perf=False, budget=300).verified
    lines = (out / "provenance.jsonl").read_text().splitlines()
    for i, ln in enumerate(lines):
        ev = json.loads(ln)
        if ev.get("type") == "repair":
            ev["holes"] = {"hi": 2}
            lines[i] = json.dumps(ev)
    (out / "provenance.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(XPError) as ei:
        replay(out / "provenance.jsonl")
    assert ei.value.code == "XP4006"
