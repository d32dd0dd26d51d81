"""Z3 sketch repair of failing candidates (issue 14; docs/repair.md).

``repair_kernel(text, dialect, entry, cand_spec, against)`` takes a candidate kernel that fails
its differential test, localizes the regions that may be wrong (localize.py), builds a sketch
with integer holes for each (``xpiler.sketches``), fills the holes with Z3, cheapest change
first, checking each filling on the failing examples and then on the full test, counter-example
guided (solve.py), splices the filled sketch into the IR and prints it in the candidate's
dialect (splice.py). A repair is reported only when the repaired kernel passes the FULL test
against the same source with the same seeds on at least the instances the unrepaired test ran.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .splice import program_hash, reapply

__all__ = ["repair_kernel", "RepairResult", "reapply", "program_hash", "covers", "missing", "rerun_missing",
           "run_set"]


@dataclass
class RepairResult:
    repaired: bool
    text: str | None = None
    verdict: object = None            # the full re-test Verdict of the repaired kernel
    region: dict | None = None        # function, path, line, kind, the original text, the new text
    sketch: str | None = None
    holes: dict = field(default_factory=dict)
    solver: str = "not localized"     # sat | unsat | unknown | timeout | not localized | no sketch
    time_s: float = 0.0
    tried: list = field(default_factory=list)
    checks: int = 0                   # kernels tested (examples or full)
    before: object = None             # the unrepaired full-test Verdict
    filter: dict = field(default_factory=dict)   # the fast filter: used, with ASan, runs; gate tests, seconds
    localization: dict = field(default_factory=dict)   # by: trace | slice (why), the trace's summary
    trace_constraints: int = 0        # trace-derived constraints the winning solve used (0: none)

    def to_json(self) -> dict:
        v = self.verdict
        return {"repaired": self.repaired, "region": self.region, "sketch": self.sketch, "holes": self.holes,
                "solver": self.solver, "time_s": round(self.time_s, 3), "checks": self.checks,
                "filter": self.filter, "localization": self.localization,
                "trace_constraints": self.trace_constraints,
                "tried": self.tried[:40],
                "verdict": None if v is None else {
                    "verified": v.verified, "substrate": v.substrate, "instances": list(v.instances),
                    "seeds": list(v.seeds), "runs": v.runs, "max_abs_error": v.max_abs_error,
                    "max_rel_error": v.max_rel_error, "failures": [f.to_json() for f in v.failures[:3]]},
                "program_hash": program_hash(self.text) if self.text else None}


def _smallest_failure(verdict, spec):
    """(instance, seed) of the cheapest failing run of a verdict (None when no run failed)."""
    fails = [f for f in verdict.failures if f.seed >= 0 and f.instance not in ("-", None)]
    if not fails:
        return None
    sizes = {}
    try:
        for i in spec.instances():
            sizes[i.name] = sum(i.numel(a.name) for a in spec.arrays)
    except Exception:
        pass
    f = min(fails, key=lambda x: (sizes.get(x.instance, 1 << 62), x.seed))
    return f.instance, f.seed


HOLES_ENV = "XPILER_REPAIR_HOLES"
_HOLE_ARRAY = "xp_repair_hole"
_HOLES = 256
_PRELUDE = f"""#include <stdlib.h>
static int {_HOLE_ARRAY}[{_HOLES}];
__attribute__((constructor)) static void {_HOLE_ARRAY}_init(void)
{{
    const char *s = getenv("{HOLES_ENV}");
    int i = 0;
    while (s && *s && i < {_HOLES}) {{
        char *e;
        long v = strtol(s, &e, 10);
        if (e == s)
            break;
        {_HOLE_ARRAY}[i++] = (int)v;
        s = (*e == ',') ? e + 1 : e;
    }}
}}
"""


def _nests(outer, inner) -> bool:
    return len(inner) >= len(outer) and tuple(inner[:len(outer)]) == tuple(outer)


def _holds(kind: str, outer, inner) -> bool:
    """Whether the sketch of region ``outer`` keeps a region nested in it spliced: a statement
    list's sketch interleaves the statements as they are; a loop's sketch rebuilds its bound or
    step from the node as written, so only a region in the loop's body survives it (a div/mod
    inside the bound ``(M + 3) % 4`` would be overwritten: its holes would do nothing)."""
    if kind == "block":
        return True
    return kind in ("bound", "stride") and len(inner) > len(outer) and inner[len(outer)] == "body"


def groups(problems: list, cap: int = 200) -> list[list]:
    """Problems packed into groups that one parametric program holds: no expression region
    inside another one of the same group (a loop or a statement list may hold others: its
    sketch rebuilds only its own fields), at most ``cap`` holes."""
    out: list[list] = []
    for p in problems:
        for g in out:
            if sum(len(q.sketch.holes) for q in g) + len(p.sketch.holes) > cap:
                continue
            ok = True
            for q in g:
                a, b = tuple(q.region.path), tuple(p.region.path)
                if a == b:
                    ok = q.region.kind in ("bound", "stride") and p.region.kind in ("bound", "stride") \
                        and q.region.kind != p.region.kind
                elif _nests(a, b):
                    ok = _holds(q.region.kind, a, b)
                elif _nests(b, a):
                    ok = _holds(p.region.kind, b, a)
                if not ok:
                    break
            if ok:
                g.append(p)
                break
        else:
            out.append([p])
    return out


def _merge(cur, orig, new):
    """A loop or statement-list sketch's replacement applied over ``cur`` (the node after the
    regions nested in it were spliced): only the fields the sketch changed are taken."""
    from xpiler.ir import nodes as N
    if isinstance(orig, N.For):
        ch = {f: getattr(new, f) for f in ("lo", "hi", "step") if getattr(new, f) is not getattr(orig, f)}
        return cur.with_(**ch)
    if isinstance(orig, N.Block):
        # the barrier sketch interleaves its guarded barriers with the statements as they are now
        it = iter(cur.stmts)
        olds = set(map(id, orig.stmts))
        return cur.with_(stmts=tuple(next(it) if id(s) in olds else s for s in new.stmts))
    return new


def parametric(prog, group: list, dialect: str, write):
    """One build for every assignment of every sketch of ``group``: the holes read from an array
    the run fills from the environment (the harness passes the environment on). Returns
    (file, {id(problem): offset of its first hole}) or None when it cannot be printed."""
    from xpiler.ir import nodes as N
    from xpiler.printers import print_program
    from .localize import get_at, set_at
    offs, k = {}, 0
    for p in group:
        offs[id(p)] = k
        k += len(p.sketch.holes)
    if k > _HOLES:
        return None
    new = prog
    for p in sorted(group, key=lambda q: -len(q.region.path)):
        o = offs[id(p)]
        hv = {h.name: N.Index(N.Var(_HOLE_ARRAY), N.Const(o + i, "int32", str(o + i)))
              for i, h in enumerate(p.sketch.holes)}
        try:
            rep = p.sketch.instantiate(hv)
            new = set_at(new, p.region.path, _merge(get_at(new, p.region.path), p.region.node, rep))
        except Exception:
            return None
    try:
        t = print_program(new, dialect)
    except Exception:
        return None
    return write(_PRELUDE + t), offs


LOOKAHEAD = 12   # problems the search order looks ahead for another group to build in the background

WAS = "was-"   # an instance the unrepaired test derived, re-run on the repaired kernel under this prefix


def _key(sizes: dict) -> tuple:
    return tuple(sorted((str(k), int(v)) for k, v in (sizes or {}).items()))


def missing(after, before) -> tuple[list, list]:
    """What the repaired kernel's test ``after`` lacks of the unrepaired test ``before``:
    (derived instances of ``before`` — dicts with name and sizes — whose sizes ``after`` did not
    run, names of spec instances ``after`` did not run). A derived boundary instance is matched
    by its SIZES, not its name: boundary names are numbered per test (``boundary-1`` of the
    repaired kernel may be other sizes than ``boundary-1`` of the unrepaired one)."""
    if before is None:
        return [], []
    bder = {d["name"]: d for d in (getattr(before, "derived", None) or []) if "sizes" in d}
    ader = {d["name"]: d for d in (getattr(after, "derived", None) or []) if "sizes" in d}
    ran = set(after.instances)
    have = {_key(d["sizes"]) for n, d in ader.items() if n in ran}
    miss_d, miss_s = [], []
    for i in before.instances:
        if i in bder:
            if _key(bder[i]["sizes"]) not in have:
                miss_d.append(bder[i])
        elif i not in ran or i in ader:   # a spec instance: the same spec, so the same name
            miss_s.append(i)
    return miss_d, miss_s


def covers(after, before) -> bool:
    """The repaired kernel's test is at least the unrepaired one: the same seeds, every spec
    instance, and every derived boundary instance's sizes (run under any name: the repaired
    kernel's own derivation, or ``was-<name>`` with the unrepaired sizes)."""
    if before is None:
        return True
    md, ms = missing(after, before)
    return list(after.seeds) == list(before.seeds) and not md and not ms


def run_set(verdict) -> list:
    """The test set a verdict ran, comparable across candidates: spec instance names and, for
    derived instances, ``sizes:k=v,...`` (their names are numbered per test)."""
    der = {d["name"]: d for d in (getattr(verdict, "derived", None) or []) if "sizes" in d}
    return sorted(("sizes:" + ",".join(f"{k}={v}" for k, v in _key(der[i]["sizes"]))) if i in der else i
                  for i in verdict.instances)


def _with_shapes(spec, extra: list):
    import dataclasses
    return dataclasses.replace(spec, shapes=list(spec.shapes) + extra)


def rerun_missing(after, before, path, spec, against, *, use_reference, seeds, jobs, timeout, deadline=None):
    """When a passing test of the repaired kernel lacks boundary instances the unrepaired test
    derived (a loop's step or bound changed, so other boundaries are derived, or the same name
    now means other sizes), those are run on the repaired kernel with the unrepaired sizes as
    ``was-<name>``; ``after`` is updated in place to cover both (or to fail) and returned.
    Used by the repair's own gate and by the driver's re-test of a repaired candidate."""
    from xpiler.spec import Spec, load_spec
    from xpiler.verify.tester import compare_kernels
    if not after.verified:
        return after
    miss, _ = missing(after, before)
    if not miss:
        return after
    extra = [{"name": WAS + d["name"], **d["sizes"]} for d in miss]
    sspec = against[1] if isinstance(against[1], Spec) else load_spec(against[1])
    v2 = compare_kernels(path, _with_shapes(spec, extra), against=(against[0], _with_shapes(sspec, extra)),
                         use_reference=use_reference, seeds=seeds, instances=[e["name"] for e in extra], jobs=jobs,
                         timeout=timeout, deadline=deadline, stop_on_failure=True, derive_boundaries=False)
    ran = [d for d in miss if WAS + d["name"] in v2.instances]
    after.instances = list(after.instances) + [WAS + d["name"] for d in ran]
    after.derived = list(getattr(after, "derived", None) or []) + [
        {"name": WAS + d["name"], "base": d.get("base"), "sizes": dict(d["sizes"]), "changed": d.get("changed", {}),
         "reasons": [f"the unrepaired test's {d['name']}, re-run with its sizes"], "was": d["name"]} for d in ran]
    after.runs += v2.runs
    after.failures += v2.failures
    after.max_abs_error = max(after.max_abs_error, v2.max_abs_error)
    after.max_rel_error = max(after.max_rel_error, v2.max_rel_error)
    after.verified = after.verified and v2.verified and len(ran) == len(miss)
    return after


def repair_kernel(text: str, dialect: str, entry: str, cand_spec, against, *, seeds=(0, 1, 2),
                  budget_s: float = 30.0, jobs: int = 1, workdir: Path | None = None,
                  run_limit: float = 60.0, failing=None, deadline: float | None = None,
                  trace: bool = True) -> RepairResult:
    """Repair a failing candidate (see the module docstring). ``cand_spec``: its Spec (or spec
    path); ``against``: (source path, source Spec), the differential oracle. ``failing``: its
    failing full-test Verdict when the caller has it (else it is tested first). Never raises on
    a kernel it cannot handle: the result says why (``solver``). ``trace``: localize and
    constrain the search with a per-store access trace (trace.py; False: the static slice only,
    the A/B of benchmarks/repair_trace_ab.py)."""
    from xpiler.frontend import parse_text
    from xpiler.printers import print_program
    from xpiler.sketches import BUILDERS
    from xpiler.spec import DIALECT_EXT, Spec, load_spec
    from xpiler.verify.tester import compare_kernels

    from .fastcheck import ExampleOracle, FastRunner
    from .localize import localize
    from .solve import cegis, problem
    from .splice import node_text, splice

    t0 = time.time()
    res = RepairResult(False)
    spec = cand_spec if isinstance(cand_spec, Spec) else load_spec(cand_spec)
    seeds = list(seeds)
    use_ref = bool(spec.reference)
    end = t0 + budget_s if deadline is None else min(t0 + budget_s, deadline)
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="xpiler-repair-")
        workdir = Path(tmp.name)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    ext = DIALECT_EXT[dialect]
    counter = [0]
    oracle = None

    def write(t: str) -> Path:
        counter[0] += 1
        p = workdir / f"repair{counter[0]}{ext}"
        p.write_text(t)
        return p

    def background_build(path: Path, sanitize: bool):
        """Compile ``path`` for the emulator in a thread; the build cache is keyed by content, so
        the test that later builds the same file finds the executable there (or, when this build
        failed or is unfinished, builds it itself). Only time is saved; nothing is skipped."""
        def go():
            try:
                from xpiler.platforms import get_platform
                get_platform(spec.dialect).build(path, spec, path.with_name(path.name + "-build"), sanitize=sanitize)
            except Exception:   # the test that needs it builds it and reports the error
                pass
        th = threading.Thread(target=go, daemon=True)
        th.start()
        return th

    prebuilt: dict = {}   # concrete text -> (its file, the thread building it for the gate)
    ahead: dict = {}      # id(group) -> (parametric file, offsets, its background build)

    def prebuild(t: str):
        """The gate's build of a filling that passed the examples (AddressSanitizer, emulator),
        started while the filter runs the rest of the unrepaired test on it."""
        if t not in prebuilt:
            path = write(t)
            prebuilt[t] = (path, background_build(path, True))
            res.filter["prebuilt"] = res.filter.get("prebuilt", 0) + 1

    def full(t: str, gate: bool = False):
        res.checks += 1
        left = end - time.time()
        # a gate stops at its first failing run (a failing gate is rejected whole); a passing
        # gate ran every instance and seed
        if t in prebuilt:
            path, th = prebuilt[t]
            th.join()
        else:
            path = write(t)
        v = compare_kernels(path, spec, against=against, use_reference=use_ref, seeds=seeds, jobs=jobs,
                            timeout=run_limit, deadline=None if left > run_limit * 4 else time.time() + max(left, 1),
                            stop_on_failure=gate)
        if gate and res.before is not None and v.verified and not covers(v, res.before):
            v = rerun_missing(v, res.before, path, spec, against, use_reference=use_ref, seeds=seeds, jobs=jobs,
                              timeout=run_limit)
        return v

    try:
        try:
            prog = parse_text(text, dialect, f"<candidate>{ext}")
            prog.func(entry)
        except Exception as e:   # a candidate the front end cannot read has nothing to localize
            res.solver = "not localized"
            res.tried.append({"error": f"{type(e).__name__}: {str(e)[:200]}"})
            return res
        before = failing if failing is not None else full(text)
        res.before = before
        if before.verified:
            res.solver = "not localized"
            res.tried.append({"error": "the candidate passes its test: nothing to repair"})
            return res
        if before.build_error is not None:
            res.solver = "not localized"
            res.tried.append({"error": f"does not build ({before.build_error.code}): repair needs a run"})
            return res
        first = _smallest_failure(before, spec)
        if first is None:
            res.solver = "not localized"
            res.tried.append({"error": "no failing run to learn from"})
            return res
        examples = [first]
        hang = any(f.code == "XP2103" for f in before.failures)
        pre = None
        if trace and not hang:   # the traced build compiles while the oracle builds the source
            from .trace import instance_of, prepare
            try:
                pre = prepare(prog, entry, dialect, spec, instance_of(spec, before, first[0]), workdir)
            except Exception as e:   # reported by _take_trace
                pre = e
        # the fast filter's oracle (fastcheck.py): inputs and expected outputs per example
        ex_limit = min(run_limit, 20.0, max(3.0, 8 * float(getattr(before, "max_run_s", 0.0) or 0.0)))
        try:
            oracle = ExampleOracle(spec, against, use_ref, before, ex_limit)
        except Exception:   # e.g. the source kernel does not build on the emulator: compare_kernels
            oracle = None
        tr, named = _take_trace(trace and not hang, prog, entry, dialect, spec, oracle, first, workdir, res, pre)
        if hang and trace:
            res.localization["why"] = "a hang: the traced run would not end"
        regs = localize(prog, entry, dialect, before, stores=named, evidence=tr.evidence() if named else None)
        res.filter["localization"] = res.localization.get("by")
        problems = []
        for r in regs:
            for mod in BUILDERS.get(r.kind, []):
                try:
                    sk = mod.build(r)
                except Exception:
                    sk = None
                if sk is not None and sk.holes:
                    problems.append(problem(sk, r))
        if not problems:
            res.solver = "no sketch"
            return res
        if tr is not None:
            _derive_hints(tr, spec, problems, res)

        def run_examples(path) -> bool:
            for inst, seed in examples:
                v = compare_kernels(path, spec, against=against, use_reference=use_ref, seeds=[seed],
                                    instances=[inst], jobs=1, timeout=min(run_limit, 20.0), stop_on_failure=True)
                if v.runs == 0 and not v.failures:
                    continue   # the instance is not derived for this candidate: the full test decides
                if v.build_error is not None:
                    return None
                if not v.verified:
                    return False
            return True

        # the fast filter (fastcheck.py): one build per group, one run per example
        res_stats = {"sanitize": None}
        # every run of the unrepaired test, its failing ones first: the filter before the gate
        failed_pairs = [(f.instance, f.seed) for f in before.failures if f.seed >= 0]
        all_pairs = list(dict.fromkeys(failed_pairs + [(i, s) for i in before.instances for s in seeds]))

        param: dict = {}    # id(problem) -> (group, its parametric build or False)
        for g in groups(problems):
            for p in g:
                param[id(p)] = (g, None)

        def holes_env(g, offs, p, vals):
            hole = [h.orig for q in g for h in q.sketch.holes]
            if p is not None:
                for i, h in enumerate(p.sketch.holes):
                    hole[offs[id(p)] + i] = vals[h.name]
            return ",".join(map(str, hole))

        def build_ahead(g):
            """Once a group's filter is built, the next group the search order will need (among
            the next LOOKAHEAD problems) is printed and compiled in the background, while the
            filter runs on this one; its own fast_build then finds it in the build cache."""
            seen_g = {id(g)}
            for q in problems[:LOOKAHEAD]:
                g2, b2 = param[id(q)]
                if b2 is None and id(g2) not in seen_g and id(g2) not in ahead:
                    b = parametric(prog, g2, dialect, write)
                    if b:
                        ahead[id(g2)] = (*b, background_build(b[0], bool(res_stats["sanitize"])))
                        res.filter["built_ahead"] = res.filter.get("built_ahead", 0) + 1
                    return

        def fast_build(g):
            """(path, offsets, FastRunner or None) of the group's parametric program, or False."""
            tb = time.time()
            if id(g) in ahead:
                path, offs, th = ahead.pop(id(g))
                th.join()
                b = path, offs
            else:
                b = parametric(prog, g, dialect, write)
            res.filter["builds"] = res.filter.get("builds", 0) + 1
            if not b:
                return False
            path, offs = b
            fr = None
            if oracle is not None:
                try:
                    if res_stats["sanitize"] is None:
                        # without AddressSanitizer a bad access may go unseen: when the program
                        # as written passes the first example so, every filter run keeps ASan
                        fr = FastRunner(path, oracle, False)
                        os.environ[HOLES_ENV] = ",".join(str(h.orig) for q in g for h in q.sketch.holes)
                        try:
                            ok = fr.check(examples[:1])
                        finally:
                            os.environ.pop(HOLES_ENV, None)
                        res_stats["sanitize"] = ok is not False
                        res.filter["fast"], res.filter["sanitize"] = True, res_stats["sanitize"]
                        res.checks += 1
                        if res_stats["sanitize"]:
                            fr = FastRunner(path, oracle, True)
                    else:
                        fr = FastRunner(path, oracle, res_stats["sanitize"])
                except Exception:   # the fast path does not apply (a build error): compare_kernels
                    fr = None
            res.filter["build_s"] = round(res.filter.get("build_s", 0.0) + time.time() - tb, 2)
            if fr is not None:
                build_ahead(g)
            return path, offs, fr

        def concrete(p, vals):
            """The filled program's text (None: it does not print, or it is the candidate)."""
            try:
                t = print_program(splice(prog, p.region, p.sketch, vals), dialect)
            except Exception:
                return None
            return None if t == text else t

        def check_examples(p, vals):
            g, built = param[id(p)]
            if built is None:
                built = fast_build(g)
                for q in g:
                    param[id(q)] = (g, built)
            if built:
                ppath, offs, fr = built
                os.environ[HOLES_ENV] = holes_env(g, offs, p, vals)
                res.checks += 1
                try:
                    if fr is not None:
                        ok = fr.check(examples)
                        if ok is False:
                            # refuted by the examples: not printed (a filling that changes
                            # nothing fails as the candidate does); a key of its own for cegis
                            return ("refuted", id(p), tuple(sorted(vals.items()))), False
                        t = concrete(p, vals)
                        if t is None:
                            return None, False
                        if ok:
                            prebuild(t)
                            # the filter before the gate: every run of the unrepaired test on the
                            # parametric build; its first failure joins the examples
                            for pair in all_pairs:
                                if pair in examples:
                                    continue
                                r = fr.run_one(*pair)
                                if r is False:
                                    examples.append(pair)
                                    ok = False
                                    break
                            return t, bool(ok)
                    ok = run_examples(ppath)
                finally:
                    os.environ.pop(HOLES_ENV, None)
                if ok is not None:
                    t = concrete(p, vals)
                    return (t, ok) if t is not None else (None, False)
                for q in g:    # the parametric form does not build: one build per assignment
                    param[id(q)] = (g, False)
            t = concrete(p, vals)
            if t is None:
                return None, False
            res.checks += 1
            ok = run_examples(write(t))
            return t, bool(ok)

        def check_full(t):
            tg = time.time()
            v = full(t, gate=True)
            res.filter["gate_tests"] = res.filter.get("gate_tests", 0) + 1
            res.filter["gate_s"] = round(res.filter.get("gate_s", 0.0) + time.time() - tg, 2)
            if v.verified and covers(v, before):
                return v, None
            cex = _smallest_failure(v, spec)
            if cex is not None and cex not in examples:
                examples.append(cex)
            if v.verified:   # passed on fewer tests than the unrepaired kernel ran: not accepted
                v.verified = False
            return v, cex

        left = end - time.time()
        p, vals, t, v, status = cegis(problems, check_examples, check_full, budget_s=max(0.0, left),
                                      tried=res.tried, seen={text})
        res.solver = status
        if p is not None:
            res.repaired, res.text, res.verdict = True, t, v
            res.sketch = p.sketch.kind
            if p.hints is not None and res.tried and res.tried[-1].get("trace"):
                res.trace_constraints = len(p.hints.used)
            res.holes = {h.name: vals[h.name] for h in p.sketch.holes if vals[h.name] != h.orig}
            res.region = {"function": entry, "path": list(p.region.path), "line": p.region.line,
                          "kind": p.region.kind, "text": node_text(p.region.node, dialect),
                          "new_text": node_text(p.sketch.instantiate(vals), dialect)}
        return res
    finally:
        for th in [th for _, th in prebuilt.values()] + [a[2] for a in ahead.values()]:
            th.join(timeout=120)   # no background build outlives the repair's folder
        if oracle is not None:
            oracle.close()
        res.time_s = time.time() - t0
        if tmp is not None:
            tmp.cleanup()


TRACE_HINTED = 40   # sketch problems (in localization order) trace constraints are derived for


def _take_trace(on: bool, prog, entry, dialect, spec, oracle, first, workdir, res, pre=None):
    """(Trace or None, paths of the stores it names or None). Records in ``res.localization``
    which localization is used — ``trace`` or ``slice`` — and, for the slice, why. ``pre``: the
    instrumented build started earlier (trace.prepare), or the exception that stopped it."""
    if not on:
        res.localization = {"by": "slice", "why": "trace off"}
        return None, None
    if isinstance(pre, Exception):
        res.localization = {"by": "slice", "why": f"trace failed: {type(pre).__name__}: {str(pre)[:160]}"}
        return None, None
    if oracle is None:
        if pre is not None and pre.build is not None:
            pre.build.join()
        res.localization = {"by": "slice", "why": "no fast oracle (the source kernel does not run here)"}
        return None, None
    from .trace import take
    try:
        tr = take(prog, entry, dialect, spec, oracle, first, workdir, timeout=oracle.limit(), prepared=pre)
    except Exception as e:   # the instrumented build or run failed: the static slice
        if pre is not None and pre.build is not None:
            pre.build.join(timeout=120)   # no background build outlives the repair's folder
        res.localization = {"by": "slice", "why": f"trace failed: {type(e).__name__}: {str(e)[:160]}"}
        return None, None
    named = tr.culprits()
    if not named:
        res.localization = {"by": "slice", "why": "the trace names no store", **tr.summary()}
        return tr, None
    res.localization = {"by": "trace", **tr.summary()}
    return tr, [s.path for s in named]


def _derive_hints(tr, spec, problems, res):
    """Trace-derived constraints (trace.derive) for the index and div/mod problems, in order."""
    from .trace import derive
    n = k = 0
    t0 = time.time()
    for p in problems:
        if p.region.kind not in ("index", "divmod"):
            continue
        k += 1
        if k > TRACE_HINTED:
            break
        try:
            p.hints = derive(tr, spec, p)
        except Exception:   # a constraint Z3 or the translation cannot take: no hints
            p.hints = None
        n += p.hints is not None
    res.localization["hinted"] = n
    res.localization["hint_s"] = round(time.time() - t0, 2)


def to_json_line(r: RepairResult) -> str:
    return json.dumps(r.to_json())
