"""A repaired kernel is never accepted on fewer tests than an unrepaired one (issue 14;
docs/repair.md, "Splice and gate"): derived boundary instances are compared by their sizes (their
names are numbered per test), the unrepaired test's boundary sizes the repaired test did not
derive are re-run as ``was-<name>``, and the migration driver's own re-test of a repaired
candidate does that too."""
from __future__ import annotations

import json
from pathlib import Path

from xpiler.spec import load_spec
from xpiler.verify.tester import Verdict

ROOT = Path(__file__).resolve().parent.parent


def _v(instances, derived, verified=True):
    return Verdict(verified, "emu", "k", [0, 1, 2], list(instances),
                   derived=[{"name": n, "base": "default", "sizes": s, "changed": s} for n, s in derived])


def test_a_boundary_of_the_same_name_but_other_sizes_is_not_covered():
    from xpiler.repair import covers, missing, run_set
    before = _v(["default", "odd", "boundary-1"], [("boundary-1", {"n": 37})], verified=False)
    after = _v(["default", "odd", "boundary-1"], [("boundary-1", {"n": 41})])
    assert not covers(after, before)
    md, ms = missing(after, before)
    assert [d["sizes"] for d in md] == [{"n": 37}] and ms == []
    assert run_set(after) != run_set(before)
    # the unrepaired sizes run under another name cover it
    after2 = _v(["default", "odd", "boundary-1", "was-boundary-1"],
                [("boundary-1", {"n": 41}), ("was-boundary-1", {"n": 37})])
    assert covers(after2, before) and not missing(after2, before)[0]
    # a spec instance the repaired test did not run, or other seeds, is never covered
    assert not covers(_v(["default", "boundary-1"], [("boundary-1", {"n": 37})]), before)
    other_seeds = _v(["default", "odd", "boundary-1"], [("boundary-1", {"n": 37})])
    other_seeds.seeds = [0, 1]
    assert not covers(other_seeds, before)


TRAP = """void add(const float* a, const float* b, float* c, int n)
{
    for (int i = 0; i < n; i++)
        c[i] = (n == 37) ? 0.0f : a[i] + b[i];
}
"""


def test_the_rerun_fails_a_repair_that_is_wrong_on_the_unrepaired_sizes(tmp_path):
    """A kernel right on every spec instance but wrong at n = 37: when the unrepaired test ran a
    boundary instance with n = 37, the repaired kernel's test is not verified."""
    from xpiler.repair import covers, rerun_missing
    from xpiler.verify.tester import compare_kernels
    src = ROOT / "examples/add/add.c"
    spec = load_spec(str(src) + ".toml")
    k = tmp_path / "add.c"
    k.write_text(TRAP)
    after = compare_kernels(k, spec, against=(src, spec), seeds=[0, 1, 2], jobs=1, timeout=20)
    assert after.verified        # the spec's own sizes do not see the trap
    before = _v(list(after.instances) + ["boundary-7"], [("boundary-7", {"n": 37})], verified=False)
    assert not covers(after, before)
    rerun_missing(after, before, k, spec, (src, spec), use_reference=True, seeds=[0, 1, 2], jobs=1, timeout=20)
    assert "was-boundary-7" in after.instances
    assert not after.verified and any(f.instance == "was-boundary-7" for f in after.failures)


def _plant_bound_bug(monkeypatch):
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


def test_the_driver_retests_a_repaired_candidate_on_the_unrepaired_boundary_sizes(tmp_path, monkeypatch):
    """The failing candidate's test derives a boundary instance ``boundary-9`` with n = 37; the
    repaired program's test derives ``boundary-9`` with n = 41 (as a changed loop derives other
    boundaries). The driver must run the repaired program on n = 37 too before accepting it."""
    import xpiler.verify.tester as tester
    from xpiler.migration.driver import migrate
    from xpiler.verify.boundaries import Derived
    _plant_bound_bug(monkeypatch)
    real_derived = tester._derived

    def derived(candidate, spec, against, names):
        out = real_derived(candidate, spec, against, names)
        name = Path(candidate).name
        if spec.dialect != "cuda" or (names and "boundary-9" not in names):
            return out
        n = 41 if ("_repaired" in name or name.startswith("repair")) else 37
        return out + [Derived("boundary-9", "default", {"n": n}, {"n": n}, ["test"])]
    monkeypatch.setattr(tester, "_derived", derived)

    runs: dict = {}
    real_run = tester._Runner.run

    def run(self, inst, arrays, tag, seed=0, timeout=None):
        runs.setdefault(self.src.name, set()).add((inst.sizes.get("n"), seed))
        return real_run(self, inst, arrays, tag, seed, timeout)
    monkeypatch.setattr(tester._Runner, "run", run)

    out = tmp_path / "o"
    r = migrate(ROOT / "examples/add/add.c", "cuda", outdir=out, perf=False, budget=300)
    evs = [json.loads(ln) for ln in (out / "provenance.jsonl").read_text().splitlines()]
    rep = [e for e in evs if e["type"] == "repair"]
    assert len(rep) == 1 and rep[0]["accepted"], rep
    assert r.verified
    tests = [e for e in evs if e["type"] == "test"]
    failing = next(e for e in tests if e["program_hash"] == rep[0]["in_hash"])
    assert not failing["verified"] and "boundary-9" in failing["instances"]
    # what actually ran: every (n, seed) of the unrepaired candidate's test ran on the repaired file
    unrep = next(k for k in runs if k.startswith("step") and k.endswith(".cu") and "_repaired" not in k
                 and k.startswith(failing["stage"]))
    repd = next(k for k in runs if k.endswith("_repaired.cu"))
    assert (37, 0) in runs[unrep] and (41, 0) in runs[repd]
    assert runs[unrep] <= runs[repd], sorted(runs[unrep] - runs[repd])
    # the driver's combined re-test of the repaired program: its own instances plus was-boundary-9
    was = [e for e in tests if e["stage"].endswith("_repaired_was")]
    assert len(was) == 1 and was[0]["was"] == ["was-boundary-9"] and was[0]["verified"]
    assert was[0]["program_hash"] == rep[0]["out_hash"]
