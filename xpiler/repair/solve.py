"""Z3 over a sketch's holes, counter-example guided (docs/repair.md).

Each sketch becomes a Z3 problem: one Int per hole, its domain, and a cost (the weighted
distance from the program as written). Assignments are taken in order of cost (1, 2, ...), each
level enumerated with blocking clauses, so the smallest change comes first. An assignment is
checked on the examples gathered so far (the failing (instance, seed) pairs: first the smallest
failing run of the unrepaired test); one that passes them is checked on the full test; when the
full test fails, its failing run is added to the examples (the counter-example) and the
assignment is blocked; solving resumes. Each Z3 call has a time limit; each sketch has a bounded
number of checks per cost level; the whole repair has a time budget.

When a trace of the candidate gave constraints drawn from the reference run (trace.py: an
iteration's traced value found once in the expected output pins the element it should have
written), the assignments they allow are tried first (the hint pass); the enumeration then goes
on as before, without them, so a wrong or partial set of constraints costs checks, never a
repair the enumeration would find.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import z3


@dataclass
class SketchProblem:
    sketch: object
    region: object
    solver: z3.Solver
    vars: dict
    cost: object
    status: str = "open"       # open | exhausted | unknown
    hints: object = None       # trace-derived constraints (trace.Hints) or None


def problem(sketch, region, timeout_ms: int = 2000) -> SketchProblem:
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    vs = {}
    terms = []
    for h in sketch.holes:
        v = z3.Int(h.name)
        vs[h.name] = v
        s.add(v >= h.lo, v <= h.hi)
        for x in h.exclude:
            s.add(v != x)
        if h.metric == "abs":
            terms.append(h.weight * z3.If(v >= h.orig, v - h.orig, h.orig - v))
        elif h.metric == "table":
            e = z3.IntVal(h.costs[-1] * h.weight)
            for k in range(len(h.costs) - 2, -1, -1):
                e = z3.If(v == h.lo + k, h.costs[k] * h.weight, e)
            terms.append(e)
        else:
            terms.append(z3.If(v == h.orig, 0, h.weight))
    for c in sketch.extra:
        s.add(c(vs))
    cost = z3.Sum(terms) if terms else z3.IntVal(0)
    return SketchProblem(sketch, region, s, vs, cost)


def models(p: SketchProblem, level: int, limit: int):
    """Up to ``limit`` assignments of exactly ``level`` cost, not blocked before; yields dicts.
    Sets ``p.status`` to "unknown" when Z3 gives up (time limit)."""
    p.solver.push()
    p.solver.add(p.cost == level)
    n = 0
    try:
        while n < limit:
            r = p.solver.check()
            if r == z3.unknown:
                p.status = "unknown"
                return
            if r != z3.sat:
                return
            m = p.solver.model()
            vals = {k: m.eval(v, model_completion=True).as_long() for k, v in p.vars.items()}
            p.solver.add(z3.Or([v != vals[k] for k, v in p.vars.items()]))
            n += 1
            yield vals
    finally:
        p.solver.pop()


def hinted(p: SketchProblem, level: int, limit: int):
    """Up to ``limit`` assignments of exactly ``level`` cost that map every trace example of
    ``p.hints`` to its expected element, counter-example guided: the model of the constraints
    used so far is checked on every example, a violated one joins the constraints and Z3 is
    asked again. Every assignment yielded is blocked for good (the enumeration after the hint
    pass does not check it again)."""
    h = p.hints
    yielded = []
    p.solver.push()
    p.solver.add(p.cost == level)
    for c in h.used:
        p.solver.add(c)
    try:
        rounds = 0
        while len(yielded) < limit and rounds < limit + 32:
            rounds += 1
            r = p.solver.check()
            if r != z3.sat:
                return
            m = p.solver.model()
            vals = {k: m.eval(v, model_completion=True).as_long() for k, v in p.vars.items()}
            bad = h.violated(vals)
            if bad is not None:
                h.used.append(bad)
                p.solver.add(bad)
                continue
            p.solver.add(z3.Or([v != vals[k] for k, v in p.vars.items()]))
            yielded.append(vals)
            yield vals
    finally:
        p.solver.pop()
        for vals in yielded:
            p.solver.add(z3.Or([v != vals[k] for k, v in p.vars.items()]))


def _attempt(p, vals, rec, check_examples, check_full, seen):
    """Check one assignment: the examples (cheap), then the full test. ``(text, verdict)`` when it
    verified, else None (refuted, already seen, or the gate failed: recorded in ``rec``)."""
    text, ok = check_examples(p, vals)
    if text is None or text in seen:
        return None
    seen.add(text)
    rec["checked"] += 1
    if not ok:
        return None
    rec["passed_examples"] += 1
    verdict, _ = check_full(text)
    if verdict is None:
        return None
    if not verdict.verified:
        rec.setdefault("gate_failed", []).append(sorted({f.code for f in verdict.failures})[:3] or ["not covered"])
        return None
    rec["result"] = "sat"
    return text, verdict


MAX_HINTED = 6    # problems whose trace-derived constraints are tried before the enumeration
PER_HINT = 2      # assignments per cost level in the hint pass


def cegis(problems: list, check_examples, check_full, *, budget_s: float, max_level: int = 3,
          per_level: int = 12, tried: list | None = None, seen: set | None = None):
    """Find the cheapest assignment of any sketch that passes the full test.

    ``check_examples(sketch_problem, vals) -> (text, ok)`` runs the examples (cheap); ``text``
    may be any other hashable key for a filling the examples refuted (it is not printed);
    ``check_full(text) -> (verdict, counter_example)`` runs the whole test. Returns
    ``(problem, vals, text, verdict, status)``; status "sat" when one verified, else "timeout",
    "unknown" (a Z3 call gave up and nothing verified) or "unsat" (every sketch exhausted)."""
    t0 = time.time()
    tried = tried if tried is not None else []
    seen = seen if seen is not None else set()
    out_of_time = False
    # the hint pass: the fillings the trace-derived constraints allow, problem by problem in
    # the localization's order, cheapest first; the same checks and the same gate as below
    for p in [q for q in problems if q.hints is not None][:MAX_HINTED]:
        for level in range(1, max_level + 1):
            if time.time() - t0 > budget_s:
                out_of_time = True
                break
            rec = {"sketch": p.sketch.kind, "path": list(p.region.path), "level": level, "checked": 0,
                   "passed_examples": 0, "result": "unsat", "trace": True}
            for vals in hinted(p, level, PER_HINT):
                if time.time() - t0 > budget_s:
                    out_of_time = True
                    rec["result"] = "timeout"
                    break
                got = _attempt(p, vals, rec, check_examples, check_full, seen)
                if got is not None:
                    rec["trace_constraints"] = len(p.hints.used)
                    tried.append(rec)
                    return p, vals, got[0], got[1], "sat"
            rec["trace_constraints"] = len(p.hints.used)
            if rec["checked"] or rec["result"] != "unsat":
                tried.append(rec)
            if out_of_time:
                break
        if out_of_time:
            return None, None, None, None, "timeout"
    for level in range(1, max_level + 1):
        for p in problems:
            if time.time() - t0 > budget_s:
                out_of_time = True
                break
            rec = {"sketch": p.sketch.kind, "path": list(p.region.path), "level": level, "checked": 0,
                   "passed_examples": 0, "result": "unsat"}
            for vals in models(p, level, per_level):
                if time.time() - t0 > budget_s:
                    out_of_time = True
                    rec["result"] = "timeout"
                    break
                got = _attempt(p, vals, rec, check_examples, check_full, seen)
                if got is not None:
                    tried.append(rec)
                    return p, vals, got[0], got[1], "sat"
                # counter-example: the quick set grows, the assignment stays blocked
            else:
                if p.status == "unknown":
                    rec["result"] = "unknown"
            if rec["checked"] or rec["result"] != "unsat":
                tried.append(rec)
            if out_of_time:
                break
        if out_of_time:
            break
    if out_of_time:
        return None, None, None, None, "timeout"
    if any(p.status == "unknown" for p in problems):
        return None, None, None, None, "unknown"
    return None, None, None, None, "unsat"
