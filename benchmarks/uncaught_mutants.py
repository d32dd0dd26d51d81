#!/usr/bin/env python3
"""Classify the planted mutants that pass the default test (issue 14; docs/repair.md, "Uncaught
mutants").

A planted mutant (``benchmarks/repair_mutants.py``) that passes the default differential test
is either

* **(a) equivalent** on every input the spec allows (a loop bound one past a padded buffer that
  only writes padding, a step that a guard absorbs), or
* **(b) a missed bug**: some allowed instance exposes it, and the default instances (the spec's
  plus the derived boundary instances of ``xpiler/verify/boundaries.py``) do not contain one.

Each uncaught mutant is run under a much stronger test: every size in a small range, sizes just
past each power of two and each multiple of the constants the kernels' text mentions (tile,
block, chunk, NRAM buffer lengths), the largest size the element cap allows, one size at a time
over the spec's smallest instance and its base, seeds 0 1 2 (the three input flavours) — always
against the spec's reference and the source kernel, with AddressSanitizer. Instances on which the
**unmutated** output already fails are dropped (and reported: a verified migration that is wrong
on a size the default test does not run). A mutant that fails any remaining instance is class
(b); the smallest instance (element count) that exposes it is recorded. The rest are class (a)
candidates: "not exposed by N instances" plus the reason (``REASONS``, from reading the code),
and "proven" only where a Z3 check of the claim was run (``PROOFS``).

    python benchmarks/uncaught_mutants.py --results R.json... [--work DIR] [--json OUT] [--ids ID...]
    python benchmarks/uncaught_mutants.py --default-only ...   # only re-run the default test

``--default-only`` re-runs each selected mutant's default test (today's instance derivation) and
reports which are caught now; with ``--results`` pointing at the benchmark's result files, the
mutants that were "still passing" there are selected.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from xpiler.spec import load_spec  # noqa: E402

SEEDS = (0, 1, 2)
MAX_STRONG = 80            # strong-test instances per mutant (smallest first)
SMALL_RANGE = 12           # every value 1..SMALL_RANGE (times the size's common divisor)
CONST_MIN, CONST_MAX = 2, 1 << 15


# ------------------------------------------------------------------------------ strong sizes
def kernel_constants(texts) -> list[int]:
    """Integer literals of the kernels' text (tile, block, chunk and buffer lengths), 2..32768."""
    out = set()
    for t in texts:
        for m in re.finditer(r"(?<![\w.])(\d+)(?![\w.])", t):
            v = int(m.group(1))
            if CONST_MIN <= v <= CONST_MAX:
                out.add(v)
    return sorted(out)


def candidate_values(lo: int, g: int, consts, cap: int) -> list[tuple[int, int]]:
    """Values for one size, each with a priority tier (0 first): one past a kernel constant and
    one past twice it, and ``cap`` (the largest value the caller allows) (tier 0); a multiple (x1,
    x2, x3) of a constant with one more and one less (tier 1); each power of two with one more
    and one less (tier 2); every multiple of ``g`` up to ``SMALL_RANGE * g`` (tier 3). Only multiples of ``g`` in [1, cap] are kept (``g``: what
    every instance of the spec is a multiple of)."""
    g = max(1, g)
    vals: dict = {}

    def add(v, tier):
        if 1 <= v <= cap and v % g == 0:
            vals[v] = min(tier, vals.get(v, tier))
    for c in consts:
        for m in (c, 2 * c):
            add(m + g, 0)
    add(cap - cap % g, 0)
    for c in consts:
        for m in (c, 2 * c, 3 * c):
            for d in (-g, 0, g):
                add(m + d, 1)
    for p in range(1, 16):
        for d in (-g, 0, g):
            add((1 << p) + d, 2)
    for k in range(1, SMALL_RANGE + 1):
        add(g * k, 3)
    return sorted(vals.items())


def strong_sizes(spec, other_specs=(), texts=(), max_n: int = MAX_STRONG, cap_elements: int | None = None):
    """Size bindings for the strong test of a kernel with ``spec`` (and the specs of the other
    kernels that must accept them, e.g. the source's): one size at a time moved over the spec's
    smallest instance and over its base instance, every size to a small odd value together,
    filtered to instances every spec accepts (shapes, launch, ``[test] constraints``, the
    divisibility all of the spec's instances share, at most ``cap_elements``: by default 8 times
    the largest instance, at least 2**17 elements); the bases are the smallest instance, the base
    instance, every size at its smallest value in the spec, and every size at 1 (its divisor). The constants are the kernels' integer literals and their products
    with the launch's dimensions (a BANG loop strides by ``taskDim * 8192``). At most ``max_n``,
    by tier (``candidate_values``; the all-odd ones tier 2; in tier 0 each (size, value) first
    on its smallest instance), then element count. Deterministic."""
    from xpiler.verify.boundaries import _elements, _launch_ok
    insts = spec.instances()
    names = list(spec.sizes)
    gcds = {x: 0 for x in names}
    for i in insts:
        for x in names:
            gcds[x] = math.gcd(gcds[x], int(i.sizes.get(x, 0)))
    cap_el = cap_elements or max(8 * max(_elements(i) for i in insts), 1 << 17)
    consts = set(kernel_constants(texts))
    dims = set()
    for i in insts:
        for t in (i.block, i.dim):
            if t:
                dims |= {d for d in t if d > 1} | {math.prod(t)}
    consts |= {c * d for c in list(consts) for d in dims if c * d <= CONST_MAX} | dims
    consts = sorted(consts)

    def ok(sizes):
        if not spec.constraints_hold(sizes):
            return None
        try:
            out = [s.instance_with("probe", sizes) for s in (spec, *other_specs)]
        except Exception:  # noqa: BLE001 - XPErrors: the sizes make a shape or launch invalid
            return None
        if not all(_launch_ok(i) for i in out) or _elements(out[0]) > cap_el:
            return None
        return _elements(out[0])

    found: dict = {}
    smallest = min(insts, key=_elements)
    bases = [dict(smallest.sizes), dict(spec.sizes),
             {x: min(int(i.sizes[x]) for i in insts) for x in names},     # every size at its smallest
             {x: gcds[x] or 1 for x in names}]                            # every size at its divisor (1)
    bases = [b for k, b in enumerate(bases) if b not in bases[:k] and ok(b) is not None]
    for base in bases:
        for x in names:
            g = gcds[x] or 1
            cap = int(base[x])          # the largest valid value: doubling, then a step back
            while cap < (1 << 22) and ok(dict(base, **{x: cap * 2})) is not None:
                cap *= 2
            top = cap
            step = max(g, cap // 64)
            for v in range(cap * 2 - (cap * 2) % g, cap, -step):
                if ok(dict(base, **{x: v})) is not None:
                    top = v
                    break
            for v, tier in candidate_values(int(base[x]), g, consts, top):
                s2 = dict(base, **{x: v})
                n = ok(s2)
                key = tuple(sorted(s2.items()))
                if n is not None and (key not in found or found[key][0] > tier):
                    found[key] = (tier, n, s2, (x, v))
    for v in (1, 3, 5, 7, 17, 33, 65, 129):   # every size odd and small at once
        s2 = {x: max(v - v % (gcds[x] or 1), gcds[x] or 1) for x in names}
        n = ok(s2)
        if n is not None:
            found.setdefault(tuple(sorted(s2.items())), (2, n, s2, None))
    rows = sorted(found.values(), key=lambda r: (r[0], r[1], sorted(r[2].items())))
    first, seen = [], set()     # tier 0: each (size, value) once, on its smallest instance
    for r in rows:
        if r[0] == 0 and r[3] not in seen:
            seen.add(r[3])
            first.append(r)
    rest = [r for r in rows if not any(r is f for f in first)]
    rows = (first + rest)[:max_n]
    return [r[2] for r in sorted(rows, key=lambda r: (r[1], sorted(r[2].items())))]


def inst_name(i: int) -> str:
    """The name of the ``i``-th strong instance (``with_instances``): the first is the spec's base."""
    return "base" if i == 0 else f"s{i}"


def inst_index(name: str) -> int | None:
    if name == "base":
        return 0
    return int(name[1:]) if re.fullmatch(r"s\d+", name) else None


def with_instances(spec, sizes_list):
    """A copy of ``spec`` whose instances are exactly ``sizes_list`` (the first is its base, the
    others named s1, s2, ...: ``inst_name``) and without derived boundary instances."""
    test = dict(spec.test)
    test["derive_boundaries"] = False
    return dataclasses.replace(spec, sizes=dict(sizes_list[0]),
                               shapes=[{"name": f"s{i}", **s} for i, s in enumerate(sizes_list) if i],
                               test=test)


# ------------------------------------------------------------------------------ classification
def classify(orig_fails: dict, mutant_fail, n_instances: int, reason: str | None, proof: str | None,
             counterexample: dict | None = None) -> dict:
    """The verdict on one uncaught mutant from its strong test.

    ``orig_fails``: instance name -> failure of the unmutated output (those instances were not
    used for the mutant); ``mutant_fail``: None when the mutant passed every remaining instance,
    else (instance name, sizes, code, message) of its first (smallest) failure. Class (b) when it
    failed; else class (a): "proven" only with a ``proof`` (a check that was run), otherwise
    "argued" with the reason (or "unexplained" without one). A ``counterexample`` (sizes where a
    Z3 check found the claim of equivalence false) makes a mutant that passed every instance
    run class (b) too, "not run": the instance is too large to run here."""
    if mutant_fail is not None:
        name, sizes, code, msg = mutant_fail
        return {"class": "b", "label": "missed bug", "exposed_by": {"instance": name, "sizes": sizes},
                "code": code, "message": msg[:200]}
    used = n_instances - len(orig_fails)
    if counterexample is not None:
        return {"class": "b", "label": "missed bug (Z3 counterexample, not run)",
                "exposed_by": {"instance": "z3", "sizes": counterexample}, "code": None,
                "message": "the trip sets differ for these sizes (not run: too large for the emulator here)",
                "instances": used}
    if reason and reason.startswith("defect:"):
        return {"class": "b", "label": "missed bug (argued, not exposed)", "reason": reason,
                "exposed_by": None, "instances": used}
    if proof:
        return {"class": "a", "label": "equivalent (proven)", "proof": proof, "reason": reason,
                "instances": used}
    return {"class": "a", "label": "equivalent (argued)" if reason else "unexplained",
            "reason": f"not exposed by {used} instances x {len(SEEDS)} seeds"
                      + (f", reason: {reason}" if reason else ""), "instances": used}


def _run(path, spec, against, sizes_list, stop=True, timeout=20.0):
    from xpiler.verify.tester import compare_kernels
    cs = with_instances(spec, sizes_list)
    ss = with_instances(against[1], sizes_list)
    return compare_kernels(path, cs, against=(against[0], ss), use_reference=bool(spec.reference), seeds=SEEDS,
                           jobs=1, timeout=timeout, stop_on_failure=stop)


def original_failures(out_path, spec, against, sizes_list) -> dict:
    """Instance name -> first failure message of the unmutated output on the strong sizes."""
    v = _run(out_path, spec, against, sizes_list, stop=False)
    fails: dict = {}
    for f in v.failures:
        fails.setdefault(f.instance, f"{f.code} {f.message[:160]}")
    if v.build_error is not None:
        fails["*"] = f"build: {v.build_error}"
    return fails


def load_uncaught(results, work: Path, ids=None):
    """The planted mutants (current migrations in ``work``) that ``results`` recorded as
    passing their test (or those named by ``ids``)."""
    import repair_mutants as RM
    outs = RM.migrated(work)
    ms = RM.mutants(outs, 2)
    if ids:
        return [m for m in ms if m["id"] in ids], ms
    rows = RM.identify(RM._load_rows(results), ms)
    passing = {k for k, r in rows.items() if not r["failing"]}
    return [m for m in ms if m["id"] in passing], ms


def default_test(m: dict, work: Path):
    """The benchmark's own test of a mutant (today's instance derivation): a Verdict."""
    import repair_mutants as RM
    from xpiler.spec import DIALECT_EXT
    from xpiler.verify.tester import compare_kernels
    spec = load_spec(m["spec"])
    src = Path(m["source"])
    sspec = load_spec(str(src) + ".toml")
    d = work / "uncaught" / m["id"]
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"mutant{DIALECT_EXT[spec.dialect]}"
    path.write_text(m["text"])
    return compare_kernels(path, spec, against=(src, sspec), use_reference=bool(spec.reference), seeds=SEEDS,
                           jobs=1, timeout=RM.RUN_LIMIT, stop_on_failure=True)


def proofs_for(m: dict, spec) -> tuple:
    """(proof text or None, Z3 counterexample sizes or None) for one mutant: the grid-stride
    check, then the expression and range checks on file for it."""
    z = grid_stride_check(Path(m["output"]).read_text(), m["text"], spec) or {}
    proof = PROOFS.get(m["id"]) or z.get("proven")
    orig = Path(m["output"]).read_text()
    norm = lambda t: "".join(ch for ch in t if ch not in " \t\n()")   # noqa: E731
    if m["id"] in EXPR_PROOFS and norm(EXPR_PROOFS[m["id"]][0]) in norm(orig) \
            and norm(EXPR_PROOFS[m["id"]][1]) in norm(m["text"]):
        proof = proof or expr_check(*EXPR_PROOFS[m["id"]])
    if m["id"] in RANGE_PROOFS:
        proof = proof or range_check(*RANGE_PROOFS[m["id"]], orig_text=orig, mut_text=m["text"])
    if m["id"] in GUARDED_RANGE_PROOFS:
        proof = proof or guarded_range_check(*GUARDED_RANGE_PROOFS[m["id"]], orig_text=orig, mut_text=m["text"])
    proof = proof or vector_split_check(orig, m["text"], spec)
    if m["id"] in DIFF_PROOFS:
        proof = proof or diff_check(*DIFF_PROOFS[m["id"]], orig_text=orig, mut_text=m["text"])
    if m["id"] in SHUFFLE_PROOFS:
        proof = proof or shuffle_check(*SHUFFLE_PROOFS[m["id"]], orig_text=orig, mut_text=m["text"])
    if m["id"] in DEAD_COPY_PROOFS:
        proof = proof or dead_copy_check(*DEAD_COPY_PROOFS[m["id"]], orig_text=orig, mut_text=m["text"])
    if m["id"] in FLAG_PROOFS:
        proof = proof or flag_check(*FLAG_PROOFS[m["id"]], orig_text=orig, mut_text=m["text"])
    return proof, z.get("counterexample")


def finalize(rows: list[dict], ms: list[dict]) -> list[dict]:
    """Re-label the rows of strong runs whose mutant passed every instance with today's reasons
    and proofs (no run): the verdicts of runs are kept."""
    by = {m["id"]: m for m in ms}
    out = []
    for r in rows:
        if _exposed(r):
            out.append(r)
            continue
        m = by[r["id"]]
        proof, ce = proofs_for(m, load_spec(m["spec"]))
        n = r.get("strong_instances", 0)
        new = classify({i: "" for i in range(r.get("original_fails", 0))}, None, n, REASONS.get(r["id"]), proof, ce)
        out.append({**{k: v for k, v in r.items() if k not in ("class", "label", "reason", "proof", "exposed_by",
                                                                 "code", "message")}, **new})
    return out


def _exposed(r: dict) -> bool:
    return bool(r.get("exposed_by")) and r["exposed_by"].get("instance") not in (None, "z3")


LABELS = ["missed bug", "missed bug (Z3 counterexample, not run)", "missed bug (argued, not exposed)",
          "equivalent (proven)", "equivalent (argued)", "unexplained"]


def summary(rows: list[dict]) -> str:
    """A markdown table: mutants per label, by kind and by dialect."""
    from collections import Counter, defaultdict
    head = "| by | uncaught | " + " | ".join(LABELS) + " |\n|---|---|" + "---|" * len(LABELS)
    lines = [head]
    for key in ("kind", "dialect"):
        g = defaultdict(list)
        for r in rows:
            g[r[key]].append(r)
        for k, rs in sorted(g.items()):
            c = Counter(r["label"] for r in rs)
            lines.append(f"| {key}: {k} | {len(rs)} | " + " | ".join(str(c[x]) for x in LABELS) + " |")
    c = Counter(r["label"] for r in rows)
    lines.append(f"| **all** | {len(rows)} | " + " | ".join(str(c[x]) for x in LABELS) + " |")
    return "\n".join(lines)


def strong_test(m: dict, work: Path, orig_cache: dict, extra_only: bool = False) -> dict:
    from xpiler.spec import DIALECT_EXT
    spec = load_spec(m["spec"])
    src = Path(m["source"])
    sspec = load_spec(str(src) + ".toml")
    out = Path(m["output"])
    texts = [m["text"], out.read_text(), src.read_text()]
    sizes = strong_sizes(spec, (sspec,), texts)
    if extra_only:      # the smallest strong instance and the sizes on file for this mutant
        sizes = sizes[:1]
    sizes += [x for x in EXTRA_SIZES.get(m["id"], []) if x not in sizes]
    key = (str(out), json.dumps(sizes))
    t0 = time.time()
    if key not in orig_cache:
        orig_cache[key] = original_failures(out, spec, (src, sspec), sizes)
    ofails = orig_cache[key]
    keep = [s for i, s in enumerate(sizes) if inst_name(i) not in ofails and "*" not in ofails]
    d = work / "uncaught" / m["id"]
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"mutant{DIALECT_EXT[spec.dialect]}"
    path.write_text(m["text"])
    fail = None
    if keep:
        v = _run(path, spec, (src, sspec), keep)
        if not v.verified:
            f = v.failures[0] if v.failures else None
            k = inst_index(f.instance) if f is not None else None
            if k is not None and k < len(keep):
                fail = (f.instance, keep[k], f.code, f.message)
            else:
                fail = ("-", {}, f.code if f else "?", f.message if f else str(v.build_error))
    proof, ce = proofs_for(m, spec)
    res = classify(ofails, fail, len(sizes), REASONS.get(m["id"]), proof, ce)
    res.update(id=m["id"], kind=m["kind"], dialect=m["dialect"], what=m["what"], strong_instances=len(sizes),
               original_fails=len(ofails), strong_s=round(time.time() - t0, 1))
    if ofails:
        res["original_fail_example"] = next(iter(ofails.items()))
        res["original_fail_sizes"] = [sizes[inst_index(k)] for k in ofails if inst_index(k) is not None][:3]
    return res


# ------------------------------------------------------------------------------ Z3 proofs
_GRID_LOOP = re.compile(r"for \(int (\w+) = \(?blockIdx\.([xyz]) \* blockDim\.\2 \+ threadIdx\.\2\)?; \1 < (\w+); "
                        r"\1 \+= \(?gridDim\.\2 \* blockDim\.\2\)?( \* 2| \+ 1)?\)")


def _z3_expr(text: str, env: dict):
    """A C integer expression over sizes (spec launch / kernel declarations) as a Z3 term:
    ``/`` is integer division (all operands are non-negative here), ``min``/``max`` If-terms."""
    import z3
    ns = dict(env)
    ns["min"] = lambda a, b: z3.If(a < b, a, b)
    ns["max"] = lambda a, b: z3.If(a > b, a, b)
    return eval(text, {"__builtins__": {}}, ns)   # noqa: S307 - spec/kernel expressions of this repo


def grid_stride_check(orig_text: str, mut_text: str, spec) -> dict | None:
    """For a mutated step of a grid-stride loop ``for (v = blockIdx.d * blockDim.d + threadIdx.d;
    v < B; v += gridDim.d * blockDim.d)`` (to ``* 2`` or ``+ 1``): whether, under the spec's
    launch (grid[d], block[d] as functions of the sizes), every thread's trip set {v0, v0 + S, ...}
    ∩ [0, B) is the same for the original step and the mutated one. Z3 checks the claim
    "v0 < B implies v0 + S >= B and v0 + S' >= B" (each thread runs at most one iteration under
    both steps) for all positive sizes; the loop's body is unchanged, so equal trip sets mean the
    same writes. Returns {"proven": text} or {"counterexample": sizes} or None (pattern not met)."""
    import z3
    o_lines, m_lines = orig_text.splitlines(), mut_text.splitlines()
    norm = lambda line: re.sub(r"[()\s]", "", line)   # noqa: E731 - the printer may drop parentheses
    changed = [(a, b) for a, b in zip(o_lines, m_lines) if norm(a) != norm(b)]
    if len(o_lines) != len(m_lines) or len(changed) != 1:
        return None
    mo, mm = _GRID_LOOP.search(changed[0][0]), _GRID_LOOP.search(changed[0][1])
    if not mo or not mm or mo.group(4) or not mm.group(4) or mo.group(1) != mm.group(1):
        return None
    d = "xyz".index(mm.group(2))
    grid, block = spec.launch.get("grid"), spec.launch.get("block")
    if not grid or not block:
        return None
    env = {x: z3.Int(x) for x in spec.sizes}
    facts = [v >= 1 for v in env.values()]
    for a in spec.args:          # kernel parameter -> its value over the sizes (stride = S)
        if a.role == "scalar" and isinstance(a.value, str):
            env[a.name] = _z3_expr(a.value, env)
    bound = mm.group(3)
    if bound not in env:         # a local: int Ho = (H - KH) / stride + 1;
        dm = re.search(r"\bint " + bound + r" = ([^;]+);", orig_text)
        if not dm:
            return None
        env[bound] = _z3_expr(dm.group(1), env)
    gd, bd = _z3_expr(str(grid[d]), env), _z3_expr(str(block[d]), env)
    b, t = z3.Ints("xp_block xp_thread")
    v0 = b * bd + t
    s_orig = gd * bd
    s_mut = s_orig * 2 if mm.group(4).strip() == "* 2" else s_orig + 1
    B = env[bound]
    sol = z3.Solver()
    sol.set("timeout", 10000)
    sol.add(*facts, B >= 1, b >= 0, b < gd, t >= 0, t < bd, v0 < B,
            z3.Or(v0 + s_orig < B, v0 + s_mut < B))
    r = sol.check()
    if r == z3.unsat:
        return {"proven": f"Z3 unsat: under grid[{d}] = {grid[d]}, block[{d}] = {block[d]}, a thread with "
                          f"{mm.group(1)}0 < {bound} has {mm.group(1)}0 + step >= {bound} for the original and "
                          f"the mutated step: one iteration each, the same trip set"}
    if r == z3.sat:
        mdl = sol.model()
        return {"counterexample": {x: mdl.eval(v, model_completion=True).as_long() for x, v in env.items()
                                   if x in spec.sizes}}
    return None


def _c_to_py(expr: str) -> str:
    """A C condition/ternary over integers in Python syntax for ``_z3_expr`` (``&&``, ``||``, ``!``,
    ``a ? b : c`` as If)."""
    e = expr.replace("&&", " & ").replace("||", " | ")
    m = re.fullmatch(r"\s*(.+?)\s*\?\s*(.+?)\s*:\s*(.+?)\s*", e)
    if m:
        return f"If({_c_to_py(m.group(1))}, {m.group(2)}, {m.group(3)})"
    return re.sub(r"([^&|]+)", lambda g: f"({g.group(1).strip()})" if g.group(1).strip() else g.group(1), e)


def expr_check(orig: str, mut: str, defs: dict | None = None, sizes=(), free=()) -> str | None:
    """Whether two integer C expressions (conditions, ternaries) over ``sizes`` (each >= 1, as
    every dimension of a valid instance is) are equal for every such value; ``defs`` gives the
    kernel's locals they use (``r_pad = (cols + 31) / 32 * 32``); ``free``: integers with no
    constraint. Z3; the text of the proof, or
    None when Z3 finds a difference or gives up. ``/`` is integer division (operands >= 0)."""
    import z3
    env = {x: z3.Int(x) for x in sizes}
    facts = [v >= 1 for v in env.values()]
    env.update({x: z3.Int(x) for x in free})
    ns = {"If": z3.If}
    for k, v in (defs or {}).items():
        env[k] = _z3_expr(v, env)
    env.update(ns)

    def term(t):
        r = eval(_c_to_py(t), {"__builtins__": {}}, env)   # noqa: S307 - expressions of this repo
        return r if not isinstance(r, bool) else z3.BoolVal(r)
    a, b = term(orig), term(mut)
    sol = z3.Solver()
    sol.set("timeout", 10000)
    sol.add(*facts, a != b)
    if sol.check() == z3.unsat:
        return (f"Z3 unsat: `{orig}` == `{mut}`" + (f" for all {', '.join(sizes)} >= 1" if sizes else "")
                + ((" and" if sizes else " for") + f" all integers {', '.join(free)}" if free else "")
                + (f" (with {'; '.join(f'{k} = {v}' for k, v in defs.items())})" if defs else ""))
    return None


#: mutant ID -> (expression as written, as mutated, the locals it reads, the sizes): checked by
#: ``expr_check`` during the classification (a guard that is the same on every valid size)
EXPR_PROOFS: dict[str, tuple] = {
    "softmax.c-bang-off-by-one_guard-0": ("r_pad <= 16384 && cols > 0", "r_pad <= 16384 && cols >= 0",
                                          {"r_pad": "(cols + 31) / 32 * 32"}, ("cols",)),
    "softmax.c-bang-off-by-one_guard-1": ("cols > 0", "cols >= 0", {}, ("cols",)),
    "gemv.c-bang-off-by-one_guard-0": ("K <= 131072 && 1 <= 32768 && K <= 32768",
                                       "K <= 131072 && 1 < 32768 && K <= 32768", {}, ("K",)),
    # (written over the output's own names since the seventh session, so the corpus builder can
    # tie the claim to the text and discard the mutant)
    "avgpool2d.c-bang-off-by-one_guard-0": ("xp_p_Wo - xp_p_ow0 < xp_p_run ? xp_p_Wo - xp_p_ow0 : xp_p_run",
                                            "xp_p_Wo - xp_p_ow0 <= xp_p_run ? xp_p_Wo - xp_p_ow0 : xp_p_run",
                                            {}, (), ("xp_p_Wo", "xp_p_ow0", "xp_p_run")),
    "avgpool2d.c-bang-off-by-one_guard-1": ("KW > 0", "KW >= 0", {}, ("KW",)),
    "gemm.cu-c-off-by-one_guard-1": ("16 > 0 ? 16 / 16 * 16 : 0", "16 >= 0 ? 16 / 16 * 16 : 0", {}, ()),
    "add.cu-c-off-by-one_guard-1": ("n > 0 ? n / 16 * 16 : 0", "n > 1 ? n / 16 * 16 : 0", {}, ("n",)),
    # tx_end is the constant 16: the tail `if (tx_end < 16)` holding the mutated statement never runs
    "gemm.cu-c-wrong_coefficient-0": ("16 > 0 ? 16 / 16 * 16 : 0", "16", {}, ()),
}


#: sizes added to one mutant's strong test, chosen by reading its code (too large for the generic
#: cap): where the reading says the mutation does harm
EXTRA_SIZES: dict[str, list[dict]] = {
    # i_rows = min(131072 % K, ...) rows of K floats: 8 rows of 16385 > the 131072-float buffer
    "gemv.c-bang-swapped_divmod-0": [{"M": 29, "K": 16385}],
    # i_rows = min(32768 % N, ...) = 168 rows of N = 200 (or of K = 200) > the 32768-float tile
    "gemm.c-bang-swapped_divmod-0": [{"M": 672, "N": 200, "K": 1}],
    "gemm.c-bang-swapped_divmod-1": [{"M": 672, "N": 1, "K": 200}],
    # run = (3072 / KH - KW) % S + 1 = 73 outputs of stride 100 with KW = 3000: 10200 columns > the buffer
    "avgpool2d.c-bang-swapped_divmod-0": [{"N": 1, "H": 1, "W": 10200, "C": 1, "KH": 1, "KW": 3000, "S": 100}],
    # padded = MAX_COLS = 8192 and two rows: the element past slot 0's row is slot 1's first
    "softmax.mlu-cuda-off-by-one_bound-1": [{"rows": 2, "cols": 8192}],
    # the fallback rows loop (rows > taskDim with cols past the NRAM path)
    "layernorm.c-bang-wrong_stride-1": [{"rows": 5, "cols": 16385}],
    # the scalar fallback (C > 16384 channels) with two output columns / five images
    **{f"avgpool2d.c-bang-{k}": [{"N": 1, "H": 1, "W": 2, "C": 16385, "KH": 1, "KW": 1, "S": 1},
                                 {"N": 5, "H": 1, "W": 1, "C": 16385, "KH": 1, "KW": 1, "S": 1}]
       for k in ("off-by-one_bound-1", "wrong_stride-0", "wrong_stride-1", "wrong_reduction_init-0")},
}
#: mutant ID -> (start, bound as written, bound as mutated, step, step as mutated): a loop with
#: constant bounds whose trip set the mutation does not change (checked by enumeration)
RANGE_PROOFS: dict[str, tuple] = {
    "conv1d.c-hip-off-by-one_bound-1": (0, 16, 15, 4, 4),     # xp_kk < 16 -> < 15, step 4
    "gemm.cu-c-wrong_stride-0": (0, 16, 16, 16, 32),           # tx < tx_end (= 16), step 16 -> 32
}


_FOR = re.compile(r"for \(int (\w+) = (.+?); \1 < (.+?); (?:\+\+\1|\1\+\+|\1 \+= (.+?))\) \{$")


def _const_int(text: str):
    """The value of an integer constant expression (digits, + - * / and parentheses), or None."""
    if not re.fullmatch(r"[\d\s+\-*/()]+", text or ""):
        return None
    try:
        return int(eval(text.replace("/", "//"), {"__builtins__": {}}))   # noqa: S307 - digits and operators only
    except Exception:  # noqa: BLE001
        return None


def _range_tied(orig_text, mut_text, lo, hi, hi2, st, st2):
    """The block of the loop a range claim is about, when the mutant changes exactly one line and
    that line is `for (int v = lo; v < hi; v += st)` -> `... v < hi2 ... st2` as claimed (integer
    constants); else None. (Before 2026-12-05, tenth session, range claims were not tied to the
    text: a claim written for an older output discarded a mutant of another loop with that ID.)"""
    ch = _one_change(orig_text, mut_text)
    if ch is None:
        return None
    lines, i, mline = ch
    a, b = _FOR.match(lines[i]), _FOR.match(mline)
    if not a or not b or a.group(1) != b.group(1):
        return None
    got = [_const_int(x) for x in (a.group(2), a.group(3), b.group(3), a.group(4) or "1", b.group(4) or "1")]
    if got != [lo, hi, hi2, st, st2] or _const_int(b.group(2)) != lo:
        return None
    return _block(lines, i), a.group(1)


def range_check(lo, hi, hi2, st, st2, orig_text=None, mut_text=None) -> str | None:
    if orig_text is not None and _range_tied(orig_text, mut_text, lo, hi, hi2, st, st2) is None:
        return None
    a, b = list(range(lo, hi, st)), list(range(lo, hi2, st2))
    return f"enumerated: both loops run {a}" if a == b else None


#: mutant ID -> (the values of the enclosing constant loop's variable g, start, bound as written, as
#: mutated, step, as mutated): a constant loop whose whole body is guarded by ``v < g``; the trips
#: that pass the guard are enumerated for every g
GUARDED_RANGE_PROOFS: dict[str, tuple] = {
    # for (half = 128; half > 0; half /= 2) for (tid = 0; tid < 256 -> 255; ++tid) if (tid < half)
    "softmax.cu-c-off-by-one_bound-0": ((128, 64, 32, 16, 8, 4, 2, 1), 0, 256, 255, 1, 1),
}


def guarded_range_check(gs, lo, hi, hi2, st, st2, orig_text=None, mut_text=None) -> str | None:
    if orig_text is not None:     # tied: the claimed loop, whose whole body is one `if (v < g) {...}`
        tied = _range_tied(orig_text, mut_text, lo, hi, hi2, st, st2)
        if tied is None or tied[0] is None:
            return None
        (body, _close), v = tied
        gm = re.match(r"if \(" + re.escape(v) + r" < (\w+)\) \{$", body[0]) if body else None
        if not gm or _block(body + ["}"], 0) is None or len(_block(body + ["}"], 0)[0]) != len(body) - 2 \
                or body[-1] != "}":
            return None
    for g in gs:
        if [v for v in range(lo, hi, st) if v < g] != [v for v in range(lo, hi2, st2) if v < g]:
            return None
    return (f"enumerated: for each of the {len(gs)} values g of the enclosing loop ({', '.join(map(str, gs))}) "
            f"both loops run the same trips v < g (the body's guard)")


# ---- claims checked over the text (seventh -> eighth session, 2026-12-05)
def _lines(text: str) -> list[str]:
    """The non-blank lines of a kernel, stripped (the mutants' printer adds blank lines)."""
    return [x.strip() for x in text.splitlines() if x.strip()]


def _one_change(orig_text: str, mut_text: str):
    """(lines of the output, index of the one changed line, mutated line) or None: the mutant
    differs from the output in exactly one non-blank line (parentheses and spaces ignored)."""
    norm = lambda line: re.sub(r"[()\s]", "", line)   # noqa: E731
    a, b = _lines(orig_text), _lines(mut_text)
    if len(a) != len(b):
        return None
    diff = [i for i, (x, y) in enumerate(zip(a, b)) if norm(x) != norm(y)]
    return (a, diff[0], b[diff[0]]) if len(diff) == 1 else None


def _block(lines: list[str], i: int) -> tuple[list[str], int] | None:
    """The statements of the block opened at the end of ``lines[i]`` (``{``) and the index of
    its closing line."""
    if not lines[i].endswith("{"):
        return None
    depth, body = 1, []
    for j in range(i + 1, len(lines)):
        depth += lines[j].count("{") - lines[j].count("}")
        if depth <= 0:
            return body, j
        body.append(lines[j])
    return None


def _z3_int_expr(text: str, env: dict):
    """A C integer expression (``a ? b : c``, ``&&``, ``||``, ``min``/``max``) as a Z3 term whose
    literals are Z3 integers, so ``/`` and ``%`` are integer division and remainder."""
    import z3
    py = re.sub(r"(?<![\w.])(\d+)u?(?![\w.])", r"_I(\1)", _c_to_py(text))
    ns = dict(env, _I=z3.IntVal, If=z3.If, And=z3.And, Or=z3.Or,
              min=lambda a, b: z3.If(a < b, a, b), max=lambda a, b: z3.If(a > b, a, b))
    r = eval(py, {"__builtins__": {}}, ns)   # noqa: S307 - expressions of this repo's outputs
    return z3.BoolVal(r) if isinstance(r, bool) else r


def _size_env(spec) -> dict:
    """Z3 integers for the spec's sizes, and the kernel's scalar parameters as their values."""
    import z3
    env = {x: z3.Int(x) for x in spec.sizes}
    for a in spec.args:
        if a.role == "scalar" and isinstance(a.value, str):
            env[a.name] = _z3_expr(a.value, env)
    return env


#: intrinsics that compute each lane from the same lane of their operands (a masked form of one
#: of these, with the masked-off lanes neither loaded nor stored, computes the same kept lanes)
LANEWISE = frozenset({"_mm512_loadu_ps", "_mm512_storeu_ps", "_mm512_add_ps", "_mm512_sub_ps", "_mm512_mul_ps",
                      "_mm512_div_ps", "_mm512_set1_ps", "_mm512_fmadd_ps", "_mm512_max_ps", "_mm512_min_ps",
                      "_mm512_setzero_ps"})


#: an AVX-512 accumulator started at zero: `__m512 acc = _mm512_setzero_ps();`
_ACC0 = re.compile(r"__m512 (\w+) = _mm512_setzero_ps\(\);$")


def vector_split_check(orig_text: str, mut_text: str, spec) -> str | None:
    """For a mutated split point or tail guard of the c printer's vector loop + masked tail:

        const int END = e;  for (int v = 0; v < END; v += 16) { BODY }
        if (END < E) { const int v = END; __mmask16 tail_mask = (__mmask16)((1u << (E - v)) - 1u); TAIL }

    (since 2026-12-05, tenth session, also the reduction form: accumulators declared between the
    split and the loop as ``__m512 acc = _mm512_setzero_ps();``, BODY ``acc = _mm512_add_ps(acc,
    X)``, the tail ``acc = _mm512_mask_add_ps(acc, tail_mask, acc, X')``: off the mask the
    accumulator keeps its lanes, so the tail is BODY on the masked lanes; the accumulator then
    receives the same addends in the same order either way)

    whether the mutant runs the same trips: Z3 shows that for every valid size and every lane
    start t, the number of lanes computed at t (16 in a vector trip, E - END in the tail) is the
    same for the output's e and guard as for the mutant's, and that both are well formed (END a
    multiple of 16, 0 <= E - END <= 16 whenever the tail runs). TAIL must be BODY with its loads
    and stores masked by ``tail_mask`` and BODY lane-wise only (``LANEWISE``): a trip of L lanes
    then computes the same L lanes either way (a zero mask touches no element). The text of the
    proof, or None (pattern not met, or Z3 finds a difference)."""
    import z3
    ch = _one_change(orig_text, mut_text)
    if ch is None:
        return None
    lines, i, mline = ch
    dre = re.compile(r"const int (\w+) = (.+);$")
    fre = r"for \(int (\w+) = 0; \1 < {end}; \1 \+= 16\) \{{$"
    # the split's declaration: the changed line, or the one before the vector loop of the changed tail
    cands = [i] + [j for j in range(max(0, i - 40), i) if dre.match(lines[j])]
    for d in cands:
        m = dre.match(lines[d])
        if not m:
            continue
        end = m.group(1)
        j = d + 1
        accs = set()      # vector accumulators started at zero between the split and the loop
        while j < len(lines) and (lines[j].startswith("#pragma") or _ACC0.match(lines[j])):
            if _ACC0.match(lines[j]):
                accs.add(_ACC0.match(lines[j]).group(1))
            j += 1
        if j >= len(lines):
            continue
        fm = re.match(fre.format(end=re.escape(end)), lines[j])
        if not fm:
            continue
        v = fm.group(1)
        blk = _block(lines, j)
        if blk is None:
            continue
        body, close = blk
        g = close + 1
        gm = re.match(r"if \(" + re.escape(end) + r" (<|<=) (.+)\) \{$", lines[g]) if g < len(lines) else None
        if not gm or i not in (d, g):
            continue
        E = gm.group(2)
        if g + 2 >= len(lines) or lines[g + 1] != f"const int {v} = {end};" or re.sub(r"\s", "", lines[g + 2]) != re.sub(
                r"\s", "", f"__mmask16 tail_mask = (__mmask16)((1u << ({E} - {v})) - 1u);"):
            return None
        tblk = _block(lines, g)
        if tblk is None:
            return None
        tail = tblk[0][2:]
        # a reduction into an accumulator: `_mm512_mask_OP(acc, tail_mask, acc, X)` keeps acc in the
        # lanes off the mask and is `_mm512_OP(acc, X)` in the others
        unmask = [re.sub(r"_mm512_mask_(\w+)\(([^,]+?), tail_mask, ", r"_mm512_\1(\2, ",
                         re.sub(r"_mm512_mask_(\w+)\((\w+), tail_mask, \2, ",
                                lambda a: f"_mm512_{a.group(1)}({a.group(2)}, " if a.group(2) in accs else a.group(0),
                                re.sub(r"_mm512_maskz_(\w+)\(tail_mask, ", r"_mm512_\1(", t))) for t in tail]
        if unmask != body or any("tail_mask" in t for t in unmask):
            return None
        if not set(re.findall(r"\b_mm\w+(?=\()", " ".join(body))) <= LANEWISE:
            return None
        # the output's (e, op, E) and the mutant's
        mlines = list(lines)
        mlines[i] = mline
        me = dre.match(mlines[d])
        mg = re.match(r"if \(" + re.escape(end) + r" (<|<=) (.+)\) \{$", mlines[g])
        if not me or not mg or me.group(1) != end:
            return None
        env = _size_env(spec)
        # (split, guard operator, guard bound, the bound the tail's mask counts to): the mask line
        # is the output's in both (only the split or the guard is mutated), so a guard moved to
        # `END < E + 1` runs the tail with E - END lanes, 0 when END == E
        try:
            Em = _z3_int_expr(gm.group(2), env)
            variants = [(_z3_int_expr(e_, env), op, _z3_int_expr(E_, env), Em)
                        for e_, op, E_ in ((m.group(2), gm.group(1), gm.group(2)),
                                           (me.group(2), mg.group(1), mg.group(2)))]
        except Exception:  # noqa: BLE001 - an expression over names that are not sizes
            return None
        t = z3.Int("xp_lane_start")
        facts = [z3.Int(x) >= 1 for x in spec.sizes]

        def runs(e, op, E_):
            return e < E_ if op == "<" else e <= E_

        def lanes(e, op, E_, Em_):
            return z3.If(z3.And(t >= 0, t < e, t % 16 == 0), 16, 0) + z3.If(z3.And(runs(e, op, E_), t == e), Em_ - e, 0)
        bad = [z3.Or(e < 0, e % 16 != 0, z3.And(runs(e, op, E_), z3.Or(Em_ - e < 0, Em_ - e > 16)),
                     z3.And(z3.Not(runs(e, op, E_)), Em_ - e != 0))
               for e, op, E_, Em_ in variants]
        sol = z3.Solver()
        sol.set("timeout", 10000)
        sol.add(*facts, z3.Or(*bad, lanes(*variants[0]) != lanes(*variants[1])))
        if sol.check() != z3.unsat:
            return None
        return (f"Z3 unsat: the vector loop `{v} < {end}` (step 16) and its masked tail `if ({end} {gm.group(1)} {E})` "
                f"compute the same lanes at every start for `{end} = {m.group(2)}` and for the mutant's "
                f"`{end} = {me.group(2)}`, tail `if ({end} {mg.group(1)} {mg.group(2)})`, for all sizes >= 1; "
                f"the tail is the loop body with masked loads/stores and the body is lane-wise")
    return None


#: mutant ID -> a claim about the trips (or guarded runs) where the output's condition and the
#: mutant's differ: (condition as written, as mutated, the locals it reads {name: C expression},
#: the sizes (>= 1), other free integers, further facts (C conditions), what holds wherever the
#: two conditions differ (C conditions, checked by Z3), the statements of the block the condition
#: guards exactly as printed (checked against the mutant's text), and why those facts make the
#: differing runs do nothing). The condition is a guard or the bound `v < B` of a loop whose
#: variable only grows: the runs one condition adds are exactly the states where the two differ.
DIFF_PROOFS: dict[str, tuple] = {
    "relu.c-bang-off-by-one_bound-0": (
        "i_c < n", "i_c < n + 1", {"i_len": "min(8192, n - i_c)"}, ("n",), ("i_c",), (),
        ("i_len * 4 == 0", "(i_len + 31) / 32 * 32 == 0"),
        ("int i_len = min(8192, n - i_c);",
         "__memcpy(x_nram, x + i_c, i_len * sizeof(float), GDRAM2NRAM);",
         "__bang_active_relu(y_nram, x_nram, (i_len + 31) / 32 * 32);",
         "__memcpy(y + i_c, y_nram, i_len * sizeof(float), NRAM2GDRAM);"),
        "the trip the mutant adds copies 0 bytes twice and runs the vector op on 0 elements: it does nothing"),
    "gemm.c-cuda-off-by-one_bound-1": (
        "xp_k0 < K", "xp_k0 < K + 1", {}, ("M", "N", "K"), ("xp_k0", "xp_i", "xp_j", "xp_tx", "xp_ty"),
        ("xp_k0 >= 0", "xp_tx >= 0", "xp_ty >= 0", "xp_tx < 16", "xp_ty < 16"),
        ("xp_i >= M || xp_k0 + xp_tx >= K", "xp_k0 + xp_ty >= K || xp_j >= N"),
        ("xp_As[xp_ty * 16 + xp_tx] = (xp_i < M && xp_k0 + xp_tx < K) ? A[(long)xp_i * K + (xp_k0 + xp_tx)] : (float)0;",
         "xp_Bs[xp_ty * 16 + xp_tx] = (xp_k0 + xp_ty < K && xp_j < N) ? B[(long)(xp_k0 + xp_ty) * N + xp_j] : (float)0;",
         "__syncthreads();",
         "for (int xp_kk = 0; xp_kk < 16; ++xp_kk) {",
         "xp_acc += xp_As[xp_ty * 16 + xp_kk] * xp_Bs[xp_kk * 16 + xp_tx];",
         "}",
         "__syncthreads();"),
        "in the trip the mutant adds every thread of the 16 x 16 block stages 0.0f in both tiles, so the "
        "trip adds (+0) * (+0) = +0 to xp_acc sixteen times; xp_acc starts at +0 and a sum is -0 only when "
        "both terms are -0, so xp_acc is never -0 and x + (+0) == x for every other float, NaN and inf "
        "included (IEEE 754): the sums are unchanged (an identity of floats, no range of the data)"),
}


def diff_check(orig, mut, defs, sizes, free, facts, holds, stmts, why, orig_text=None, mut_text=None) -> str | None:
    """The check of a ``DIFF_PROOFS`` claim: Z3 shows every condition of ``holds`` true in each
    state (sizes >= 1, ``facts``) where ``orig`` and ``mut`` differ; with the texts, the claim
    must also be tied to them: the mutant changes ``orig`` into ``mut`` on one line that opens a
    block whose statements are exactly ``stmts``."""
    import z3
    if orig_text is not None:
        ch = _one_change(orig_text, mut_text)
        if ch is None:
            return None
        lines, i, mline = ch
        n = lambda s: re.sub(r"[()\s]", "", s)   # noqa: E731
        if n(orig) not in n(lines[i]) or n(mut) not in n(mline):
            return None
        blk = _block(lines, i)
        if blk is None or [n(s) for s in blk[0]] != [n(s) for s in stmts]:
            return None
    env = {x: z3.Int(x) for x in (*sizes, *free)}
    base = [env[x] >= 1 for x in sizes]
    for k, v in defs.items():
        env[k] = _z3_int_expr(v, env)
    e = lambda s: _z3_int_expr(s, env)   # noqa: E731
    sol = z3.Solver()
    sol.set("timeout", 10000)
    sol.add(*base, *[e(f) for f in facts], e(orig) != e(mut), z3.Or(*[z3.Not(e(h)) for h in holds]))
    if sol.check() != z3.unsat:
        return None
    return (f"Z3 unsat: wherever `{orig}` and `{mut}` differ ({', '.join(sizes)} >= 1"
            + (f"; {', '.join(facts)}" if facts else "") + f"): {'; '.join(holds)}. So {why}")


#: mutant ID -> a claim about an emulated down-shuffle tree (the c form of a warp reduction): the
#: lines that compute the source lane (as in the output; the mutated one is the mutant's), the
#: rows and lanes of the block, the offsets, and the text that reads the result (lane 0 of each
#: row). Checked by enumeration: from the lanes read at the end, back through every offset, each
#: lane whose value is still needed reads the same source lane in the output and in the mutant.
_GEMV_SHFL = ("const int xpd_tid2 = lane + ty * 64 + 0 * 64 * 4;", "const int xpd_lane4 = xpd_tid2 % 64;",
         "const int xpd_sub5 = xpd_lane4 % 64;", "const int xpd_seg6 = xpd_tid2 - xpd_sub5;",
         "const int xpd_src7 = xpd_sub5 + offset;",
              "xpd_sh1[ty * 64 + lane] = xpd_src7 < 64 ? xpd_xch3[xpd_seg6 + xpd_src7] : xpd_xch3[xpd_tid2];")
_GEMV_READ = ("for (int offset = 64 / 2; offset > 0; offset >>= 1) {", "xpd_xch3[xpd_tid2] = sum[ty * 64 + lane];",
              "sum[ty * 64 + lane] += xpd_sh1[ty * 64 + lane];", "if (lane == 0) {", "y[row] = sum[ty * 64 + lane];")
SHUFFLE_PROOFS: dict[str, tuple] = {
    # (the statements, the index of the mutated one and its mutated text, rows, lanes, offsets, reads)
    "gemv.hip-c-off-by-one_guard-1": (
        _GEMV_SHFL, 5, "xpd_sh1[ty * 64 + lane] = xpd_src7 <= 64 ? xpd_xch3[xpd_seg6 + xpd_src7] : xpd_xch3[xpd_tid2];",
        4, 64, (32, 16, 8, 4, 2, 1), _GEMV_READ),
    "gemv.hip-c-swapped_divmod-0": (
        _GEMV_SHFL, 2, "const int xpd_sub5 = xpd_lane4 / 64;", 4, 64, (32, 16, 8, 4, 2, 1), _GEMV_READ),
}


#: mutant ID -> a claim about a block-local flag array that only gates a write of lane 0 (the c
#: form of a wavefront's early exit): (flag array, its length, the row expression and the row
#: guard, the header of the loop holding the writer, the writer's lines, the reader's lines, the
#: store the reader gates). Checked by running the claimed lines (the output's and the mutant's)
#: for every count of valid rows: ``flag_check``.
_GEMV_FLAG_W = ("for (int lane = 0; lane < 64; ++lane) {", "const int row = bx * 4 + ty;", "if (row >= M) {",
                "done[ty * 64 + lane] = 1;", "continue;", "}", "}")
_GEMV_FLAG_R = ("for (int ty = 0; ty < 4; ++ty) {", "for (int lane = 0; lane < 64; ++lane) {",
                "if (!done[ty * 64 + lane]) {", "const int row = bx * 4 + ty;", "if (lane == 0) {",
                "y[row] = sum_row[ty];", "}", "}", "}", "}")
_GEMV_FLAG = ("done", 256, "for (int ty = 0; ty < 4; ++ty) {", _GEMV_FLAG_W, _GEMV_FLAG_R)
FLAG_PROOFS: dict[str, tuple] = {
    "gemv.hip-c-off-by-one_bound-0": _GEMV_FLAG,     # writer: lane < 64 -> 63
    "gemv.hip-c-wrong_coefficient-1": _GEMV_FLAG,    # writer: done[ty * 64 + lane] -> done[63 * ty + lane]
    "gemv.hip-c-wrong_stride-0": _GEMV_FLAG,         # reader: ++lane -> lane += 1 * 2
}


def _find_seq(lines: list[str], seq, start: int = 0) -> int:
    for k in range(start, len(lines) - len(seq) + 1):
        if lines[k:k + len(seq)] == list(seq):
            return k
    return -1


def _run_lines(lines: list[str], env: dict) -> None:
    """Run structured C lines (for with a constant step, if, const int, a store into an array,
    continue) as Python in ``env``; arrays are Python objects there."""
    py, ind = [], 0
    for t in lines:
        fm = _FOR.match(t)
        if fm:
            v, lo, hi, st = fm.group(1), fm.group(2), fm.group(3), fm.group(4) or "1"
            py.append("    " * ind + f"for {v} in range({_c_to_py(lo)}, {_c_to_py(hi)}, {_c_to_py(st)}):")
            ind += 1
        elif t.startswith("if (") and t.endswith(") {"):
            c = re.sub(r"!(?!=)", " not ", t[4:-3])
            py.append("    " * ind + f"if {_c_to_py(c)}:")
            ind += 1
        elif t == "}":
            ind -= 1
        elif t == "continue;":
            py.append("    " * ind + "continue")
        elif re.match(r"const int (\w+) = (.+);$", t):
            m = re.match(r"const int (\w+) = (.+);$", t)
            py.append("    " * ind + f"{m.group(1)} = {_c_to_py(m.group(2))}")
        elif re.match(r"(\w+)\[(.+)\] = (.+);$", t):
            m = re.match(r"(\w+)\[(.+)\] = (.+);$", t)
            py.append("    " * ind + f"_st({m.group(1)!r}, {_c_to_py(m.group(2))}, {_c_to_py(m.group(3))})")
        else:
            raise ValueError(t)
    exec(compile("\n".join(py).replace(" / ", " // "), "<flag>", "exec"), {"__builtins__": {"range": range}}, env)  # noqa: S102


def flag_check(flag, n, outer, writer, reader, orig_text=None, mut_text=None) -> str | None:
    """The check of a ``FLAG_PROOFS`` claim. Tied to the texts: the output has ``outer`` followed by
    ``writer`` and later ``reader``; every other line naming ``flag`` is its declaration or its
    zeroing loop; the mutant changes one line, inside ``writer`` or ``reader``; the lines run name
    M and bx only in ``row = bx * 4 + ty`` and ``row >= M``. Then, since the block depends on M and
    bx only through d = M - 4 * bx >= 1 (and the row index), ``outer`` + ``writer`` and ``reader`` are
    run for d = 1 .. (largest constant loop bound + 1), bx = 0 and 1, from a zeroed flag array, for
    the output's lines and the mutant's: every store of ``flag`` stays inside it and the reader's
    stores (row, what) are the same, in the same order."""
    if orig_text is None:
        return None
    ch = _one_change(orig_text, mut_text)
    if ch is None:
        return None
    lines, i, mline = ch
    w = _find_seq(lines, (outer,) + tuple(writer))
    r = _find_seq(lines, reader, w + 1 if w >= 0 else 0)
    if w < 0 or r < 0 or not (w <= i < w + 1 + len(writer) or r <= i < r + len(reader)):
        return None
    names = re.compile(r"\b" + re.escape(flag) + r"\b")
    ok_other = {f"unsigned char {flag}[{n}];", f"{flag}[t] = 0;"}
    for k, t in enumerate(lines):
        if names.search(t) and not (w <= k < w + 1 + len(writer) or r <= k < r + len(reader)) and t not in ok_other:
            return None
    mlines = list(lines)
    mlines[i] = mline
    bounds = []
    for t in (outer,) + tuple(writer) + tuple(reader):
        if re.search(r"\b(M|bx)\b", t) and t not in ("const int row = bx * 4 + ty;", "if (row >= M) {"):
            return None
        fm = _FOR.match(t)
        if fm and _const_int(fm.group(3)) is not None:
            bounds.append(_const_int(fm.group(3)))
    for t in (mline,):
        fm = _FOR.match(t)
        if fm and _const_int(fm.group(3)) is not None:
            bounds.append(_const_int(fm.group(3)))

    def run(ls, M, bx):
        done = [0] * n
        ys = []

        def _st(arr, idx, val):
            if arr == flag:
                if not 0 <= idx < n:
                    raise IndexError(idx)
                done[idx] = val
            else:
                ys.append((arr, idx, val))
        env = {flag: done, "M": M, "bx": bx, "sum_row": [("sum_row", t) for t in range(64)], "_st": _st}
        _run_lines(ls[w:w + 1 + len(writer)] + ["}"], env)
        _run_lines(ls[r:r + len(reader)], env)
        return ys
    try:
        for bx in (0, 1):
            for d in range(1, max(bounds) + 2):
                if run(lines, 4 * bx + d, bx) != run(mlines, 4 * bx + d, bx):
                    return None
    except (IndexError, ValueError, NameError, TypeError):
        return None
    return (f"enumerated: the flag array {flag}[{n}] only gates the store of lane 0 (`{reader[5]}`); running the "
            f"writer and the reader, as in the output and as mutated, for every d = M - 4 * bx from 1 to "
            f"{max(bounds) + 1} (bx = 0, 1) stores the same rows from the same source and every flag store stays "
            f"inside {flag}")


class _Index:
    """An array whose element i is i: an expression that reads it yields the index it reads."""
    def __getitem__(self, i):
        return ("at", i)


def _shuffle_sources(stmts: list[str], rows: int, width: int, off: int) -> dict:
    """thread -> what the shuffle statements make it read (("at", index) or a value), for one offset."""
    out = {}
    for ty in range(rows):
        for lane in range(width):
            env = {"ty": ty, "lane": lane, "offset": off, "If": lambda c, a, b: a if c else b}
            for s in stmts:
                m = re.match(r"(?:const int (\w+)|[\w\[\] *+]+) = (.+);$", s)
                if not m:
                    raise ValueError(s)
                py = _c_to_py(m.group(2)).replace(" / ", " // ")
                py = re.sub(r"(\w+)\[", lambda g: f"{g.group(1)}[", py)
                val = eval(py, {"__builtins__": {}}, dict(env, **{n: _Index() for n in re.findall(r"(\w+)\[", py)}))  # noqa: S307
                if m.group(1):
                    env[m.group(1)] = val
                else:
                    out[ty * width + lane] = val
    return out


def shuffle_check(stmts, k, mutated, rows, width, offsets, readout, orig_text=None, mut_text=None) -> str | None:
    """The check of a ``SHUFFLE_PROOFS`` claim (enumeration); with the texts, the claim's
    statements must be the output's lines, the mutant must change exactly the ``k``-th into
    ``mutated``, and the reading statements must be in the output."""
    mstmts = list(stmts)
    mstmts[k] = mutated
    if orig_text is not None:
        ch = _one_change(orig_text, mut_text)
        if ch is None:
            return None
        lines, i, mline = ch
        if lines[i] != stmts[k] or mline != mutated or not all(s in lines for s in stmts) \
                or not all(r in lines for r in readout):
            return None
    needed = {ty * width for ty in range(rows)}        # lane 0 of each row is read at the end
    for off in reversed(offsets):
        a = _shuffle_sources(list(stmts), rows, width, off)
        b = _shuffle_sources(mstmts, rows, width, off)
        if mstmts == list(stmts):
            return None
        for t in sorted(needed):
            if a[t] != b[t]:
                return None
        needed |= {a[t][1] for t in needed if isinstance(a[t], tuple)}
    return (f"enumerated: over {rows} rows x {width} lanes and offsets {', '.join(map(str, offsets))}, every lane "
            f"whose value reaches lane 0 of a row reads the same source in the output and in the mutant "
            f"(the lanes the mutation changes are never read back)")


#: mutant ID -> a claim that the mutated copy fills a buffer nothing reads before it is written
#: again: (the buffer, the copy as written, as mutated, the row loop that follows it, the first
#: statement of each row trip that touches the buffer (a whole-row write), the statement after
#: the row loop that reads it (a strided copy of `cols` of each row of `r_pad`)). Checked against
#: the output's text (every line that names the buffer) and by Z3 (each row's read lies inside
#: that row's write: cols <= r_pad); a dead copy of any size is equivalent to the output's.
DEAD_COPY_PROOFS: dict[str, tuple] = {
    "softmax.c-bang-wrong_copy_size-0": (
        "y_nram",
        "__memcpy(y_nram, y + r_r * cols, cols * sizeof(float), GDRAM2NRAM, r_pad * sizeof(float), cols * sizeof(float), r_n - 1);",
        "__memcpy(y_nram, y + r_r * cols, (cols - 1) * sizeof(float), GDRAM2NRAM, r_pad * sizeof(float), cols * sizeof(float), r_n - 1);",
        "for (int r = 0; r < r_n; ++r) {",
        "__bang_sub_scalar(y_nram + r * r_pad, x_nram + r * r_pad, m, r_pad);",
        "__memcpy(y + r_r * cols, y_nram, cols * sizeof(float), NRAM2GDRAM, cols * sizeof(float), r_pad * sizeof(float), r_n - 1);"),
    "layernorm.c-bang-wrong_copy_size-1": (
        "y_nram",
        "__memcpy(y_nram, y + r_r * cols, cols * sizeof(float), GDRAM2NRAM, r_pad * sizeof(float), cols * sizeof(float), r_n - 1);",
        "__memcpy(y_nram, y + r_r * cols, (cols - 1) * sizeof(float), GDRAM2NRAM, r_pad * sizeof(float), cols * sizeof(float), r_n - 1);",
        "for (int r = 0; r < r_n; ++r) {",
        "__bang_sub_scalar(y_nram + r * r_pad, x_nram + r * r_pad, sum / (float)cols, r_pad);",
        "__memcpy(y + r_r * cols, y_nram, cols * sizeof(float), NRAM2GDRAM, cols * sizeof(float), r_pad * sizeof(float), r_n - 1);"),
}


def dead_copy_check(buf, copy, mutated, loop, write, out, orig_text=None, mut_text=None) -> str | None:
    """The check of a ``DEAD_COPY_PROOFS`` claim. In the output's text: the copy, then no line
    naming ``buf`` until the row loop ``loop`` (rows 0..r_n-1, step 1); in its body the first line
    naming ``buf`` is ``write`` at the body's top level (``__bang_*`` with destination
    ``buf + r * r_pad`` over ``r_pad`` elements: the whole row); every later line in the body
    names ``buf`` only as ``buf + r * r_pad`` (an op over r_pad) or ``buf[r * r_pad + c]`` (c in
    [cols, r_pad)), so inside the row; after the loop, up to the end of the block holding the
    copy, only ``out`` names it. Z3: cols <= r_pad = (cols + 31) / 32 * 32 for cols >= 1, so the
    read of ``out`` (cols of each row r < r_n) lies in what the row trips wrote. Without the
    texts only the Z3 part runs."""
    import z3
    if orig_text is not None:
        ch = _one_change(orig_text, mut_text)
        if ch is None:
            return None
        lines, i, mline = ch
        if lines[i] != copy or mline != mutated:
            return None
        names = lambda t: re.search(r"\b" + re.escape(buf) + r"\b", t) is not None   # noqa: E731
        try:
            j = lines.index(loop, i + 1)
        except ValueError:
            return None
        if any(names(t) for t in lines[i + 1:j]):
            return None
        blk = _block(lines, j)
        if blk is None:
            return None
        body, close = blk
        first = next((k for k, t in enumerate(body) if names(t)), None)
        if first is None or body[first] != write or not re.match(
                r"__bang_\w+\(" + re.escape(buf) + r" \+ r \* r_pad, .*, r_pad\);$", write):
            return None
        depth = sum(t.count("{") - t.count("}") for t in body[:first])
        if depth != 0:
            return None
        inside = re.compile(re.escape(buf) + r"(?: \+ r \* r_pad\b|\[r \* r_pad \+ c\])")
        for k, t in enumerate(body[first + 1:], first + 1):
            if not names(t):
                continue
            if len(re.findall(r"\b" + re.escape(buf) + r"\b", t)) != len(inside.findall(t)):
                return None
            if "[r * r_pad + c]" in t and not any(b == "for (int c = cols; c < r_pad; ++c) {" for b in body[:k]):
                return None
            if "+ r * r_pad" in t and not t.rstrip(";").rstrip(")").endswith("r_pad"):
                return None
        outer = None    # the block that holds the copy: from it to its end only `out` names buf
        dep = 0
        for k in range(close + 1, len(lines)):
            dep += lines[k].count("{") - lines[k].count("}")
            if dep < 0:
                outer = k
                break
        if outer is None:
            return None
        after = [t for t in lines[close + 1:outer] if names(t)]
        if after != [out]:
            return None
    cols = z3.Int("cols")
    r_pad = (cols + 31) / 32 * 32
    sol = z3.Solver()
    sol.add(cols >= 1, cols > r_pad)
    if sol.check() != z3.unsat:
        return None
    return (f"Z3 unsat + text: every row trip first writes the whole row of {buf} (`{write}`) and the copy "
            f"out reads cols <= r_pad = (cols + 31) / 32 * 32 of each row (Z3, cols >= 1); nothing else reads "
            f"{buf} in between, so the copy into it is dead whatever its size")


_SHIFT = ("the mutation only changes the row maximum m that softmax subtracts before expf; "
          "softmax(x) = exp(x - m) / sum exp(x - m) for any m, and with the spec's inputs in [-20, 20] "
          "and m' a maximum over a subset of the row (or an initial value below every input), "
          "x - m' <= 40 cannot overflow or underflow expf to 0: only rounding changes")
_BRANCH = ("the guard moves one threshold size from the NRAM path to the scalar fallback (or back); "
           "both branches compute the operator for that size (each verified on sizes past it)")
_DEAD_Y = ("the copy of y into y_nram before the computation is dead: every row of y_nram is "
           "overwritten over r_pad elements (__bang_sub_scalar) before it is stored")
_LANE0 = ("only lane 0's result of the emulated down-shuffle reduction is used; the mutation changes "
          "the values other lanes read")

#: why a mutant no instance exposes is harmless, from reading the mutated code. A reason that
#: starts with "defect:" names a real defect no run shows (class b, "argued, not exposed").
REASONS: dict[str, str] = {
    "relu.c-bang-off-by-one_bound-0": (
        "`i_c < n + 1` adds a trip only where i_c = n (a task's sweep lands exactly on n); there "
        "i_len = min(8192, n - i_c) = 0, so both copies and the vector op have length 0"),
    "softmax.c-hip-wrong_stride-0": _SHIFT,
    "softmax.c-bang-off-by-one_bound-0": _SHIFT,
    "softmax.c-bang-wrong_stride-0": _SHIFT,
    "softmax.cu-c-wrong_coefficient-0": _SHIFT,
    "softmax.cu-c-wrong_reduction_init-1": _SHIFT,
    "softmax.c-bang-wrong_copy_size-0": _DEAD_Y,
    "layernorm.c-bang-wrong_copy_size-1": _DEAD_Y,
    "gemv.c-bang-off-by-one_guard-1": _BRANCH,
    "gemm.c-bang-off-by-one_guard-0": _BRANCH,
    "gemm.c-bang-off-by-one_guard-1": _BRANCH,
    "layernorm.c-bang-off-by-one_guard-0": _BRANCH,
    "layernorm.c-bang-off-by-one_guard-1": _BRANCH,
    "gemm.c-cuda-off-by-one_bound-1": (
        "`xp_k0 < K + 1` adds a k-tile only when K is a multiple of 16, at xp_k0 = K, where both "
        "tile loads are guarded (`xp_k0 + xp_tx < K`) and load 0: the accumulator adds 0 * 0"),
    "gemm.cu-c-swapped_divmod-0": (
        "tx_end = 16 % 16 * 16 = 0: the 16-wide vector loop runs no trip and the masked tail "
        "(`if (tx_end < 16)`) computes all 16 columns"),
    "gemm.cu-c-swapped_divmod-1": (
        "tx_end = 16 % 16 * 16 = 0: the 16-wide vector loop runs no trip and the masked tail "
        "(`if (tx_end < 16)`) computes all 16 columns"),
    "gemv.hip-c-off-by-one_guard-1": _LANE0,
    "softmax.mlu-cuda-off-by-one_bound-1": (
        "defect: the sum reads one element past the padded row; when padded = MAX_COLS (8192) that "
        "is the next slot's first element, which another thread writes (a race; rows = 2, cols = 8192 "
        "ran and passed: the emulator's schedules read it before it is written), else a never-written "
        "element of the zero-initialised buffer"),
    # (eighth session: the mutant is `xpd_x5 > xpd_bv3 - 1`, not `>=` as this said before: the
    # running value can step down by up to 1 per element, so the maximum itself changes)
    "softmax.mlu-cuda-off-by-one_guard-0": (
        "`xpd_x5 > xpd_bv3 - 1` keeps any element within 1 of the running value, so the row "
        "'maximum' can be an element below the maximum (a chain of elements each less than 1 below "
        "the previous); " + _SHIFT),
    "gemm.cu-c-wrong_coefficient-0": ("the mutated statement is in the tail `if (tx_end < 16)`, dead code: "
                                      "tx_end = 16 > 0 ? 16 / 16 * 16 : 0 = 16 (the proof)"),
    "add.cu-c-off-by-one_guard-0": (
        "`i_end <= n` adds the masked tail when i_end = n, with tail_mask = (1 << 0) - 1 = 0: an "
        "AVX-512 masked load/store with an all-zero mask touches no element"),
    "gemv.hip-c-swapped_divmod-0": _LANE0 + " (lane 0 has xpd_lane4 = 0, so / and % agree for it)",
    # (seventh session: this and softmax.cu-c-off-by-one_bound-0 were called "reads partials the
    # mutated loop no longer writes" before; both mutate the max tree at line 31, `for (tid ...)
    # if (tid < half)`, whose partials line 23 wrote: bound-0 is proven by GUARDED_RANGE_PROOFS,
    # this one changes only the maximum)
    "softmax.cu-c-wrong_stride-1": _SHIFT,
    "softmax.cu-c-wrong_stride-0": (
        "defect: the partial-maximum loop runs even tid only, so red[odd] is never written and the "
        "max tree reads it (undefined in C). Before the seventh session the stack garbage there made "
        "the test fail (XP2102); test builds now start locals as gcc's pattern, -1.7e38 for a float, "
        "below every input, so the maximum (and softmax, which cancels it) is unchanged and it passes"),
    "gemm.c-bang-swapped_divmod-0": (
        "defect: i_rows = min(32768 % N, ...) can exceed 32768 / N (M = 672, N = 200, K = 1: 168 rows "
        "of 200 = 33600 floats into C_nram[32768]); until the seventh session the run passed: the "
        "emulator checked a __memcpy against the NRAM segment, not the array, and the overflow landed "
        "in A_nram, loaded after it (now XP4230 at those sizes)"),
    "gemm.c-bang-swapped_divmod-1": (
        "defect: i_rows = min(32768 % K, ...) can exceed 32768 / K (M = 672, N = 1, K = 200: 168 rows "
        "of 200 = 33600 floats into A_nram[32768]); the emulator checked the NRAM segment, not the "
        "array, until the seventh session (now XP4230 at those sizes)"),
    "gemv.c-bang-swapped_divmod-0": (
        "defect: i_rows = min(131072 % K, ...) can exceed 131072 / K (M = 29, K = 16385: 8 rows of "
        "16385 = 131080 floats into A_wram[131072]); the emulator checked the WRAM segment, not the "
        "array, until the seventh session (now XP4230 at those sizes)"),
    "gemv.hip-c-wrong_stride-1": ("defect: `done[t] = 0` for even t only: the other flags are "
                                  "uninitialised (undefined in C); the run saw zeros until test builds "
                                  "started locals as a pattern (seventh session: caught)"),
}
#: mutant ID -> the check that proves it equivalent (run by tests/test_uncaught_mutants.py)
PROOFS: dict[str, str] = {}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/xpiler-repair-bench")
    ap.add_argument("--results", nargs="+", default=sorted(str(p) for p in (ROOT / "benchmarks" / "results").glob(
        "repair_mutants_final_shard*of5.json")))
    ap.add_argument("--ids", nargs="+")
    ap.add_argument("--shard", default=None, help="K/N")
    ap.add_argument("--default-only", action="store_true")
    ap.add_argument("--extra-only", action="store_true",
                    help="the strong test on the smallest strong instance and the EXTRA_SIZES of each mutant only")
    ap.add_argument("--finalize", nargs="+", metavar="JSON",
                    help="run nothing: merge these strong-run files (the last row of a mutant wins) and "
                         "re-label the mutants no instance exposed with today's reasons and proofs")
    ap.add_argument("--json")
    a = ap.parse_args()
    work = Path(a.work)
    sel, ms = load_uncaught(a.results, work, a.ids)
    if a.finalize:
        merged: dict = {}
        for f in a.finalize:     # a later row wins, unless only the earlier one was exposed by a run
            for r in json.loads(Path(f).read_text()):
                if r["id"] not in merged or _exposed(r) or not _exposed(merged[r["id"]]):
                    merged[r["id"]] = r
        order = {m["id"]: i for i, m in enumerate(ms)}
        rows = finalize(sorted(merged.values(), key=lambda r: order.get(r["id"], 1 << 30)), ms)
        from collections import Counter
        for r in rows:
            print(f"{r['id']:50s} [{r['kind']}] {r['label']}: {r.get('exposed_by') or r.get('proof') or r.get('reason', '')}"[:300])
        print(Counter(r["label"] for r in rows))
        print(summary(rows))
        if a.json:
            Path(a.json).write_text(json.dumps(rows, indent=1))
        return 0
    if a.shard:
        k, n = map(int, a.shard.split("/"))
        sel = sel[k::n]
    print(f"{len(ms)} planted, {len(sel)} selected", flush=True)
    rows, cache = [], {}
    for m in sel:
        t0 = time.time()
        if a.default_only:
            v = default_test(m, work)
            r = {"id": m["id"], "kind": m["kind"], "dialect": m["dialect"], "what": m["what"],
                 "caught_by_default": not v.verified, "derived": [d["changed"] for d in v.derived],
                 "code": v.failures[0].code if v.failures else None, "test_s": round(time.time() - t0, 2)}
            print(f"{m['id']:50s} {'CAUGHT' if r['caught_by_default'] else 'passes'} {r['code'] or ''} "
                  f"derived {r['derived']} {r['test_s']} s", flush=True)
        else:
            r = strong_test(m, work, cache, a.extra_only)
            print(f"{m['id']:50s} [{m['kind']}] {m['what']}: {r['label']} "
                  f"{r.get('exposed_by', '')} {r.get('code', '')} ({r['strong_instances']} inst, "
                  f"orig fails {r['original_fails']}, {r['strong_s']} s)", flush=True)
        rows.append(r)
        if a.json:
            Path(a.json).write_text(json.dumps(rows, indent=1))
    if not a.default_only:
        from collections import Counter
        print(Counter(r["label"] for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
