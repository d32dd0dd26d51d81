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
    if m["id"] in EXPR_PROOFS:
        proof = proof or expr_check(*EXPR_PROOFS[m["id"]])
    if m["id"] in RANGE_PROOFS:
        proof = proof or range_check(*RANGE_PROOFS[m["id"]])
    if m["id"] in GUARDED_RANGE_PROOFS:
        proof = proof or guarded_range_check(*GUARDED_RANGE_PROOFS[m["id"]])
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


def range_check(lo, hi, hi2, st, st2) -> str | None:
    a, b = list(range(lo, hi, st)), list(range(lo, hi2, st2))
    return f"enumerated: both loops run {a}" if a == b else None


#: mutant ID -> (the values of the enclosing constant loop's variable g, start, bound as written, as
#: mutated, step, as mutated): a constant loop whose whole body is guarded by ``v < g``; the trips
#: that pass the guard are enumerated for every g
GUARDED_RANGE_PROOFS: dict[str, tuple] = {
    # for (half = 128; half > 0; half /= 2) for (tid = 0; tid < 256 -> 255; ++tid) if (tid < half)
    "softmax.cu-c-off-by-one_bound-0": ((128, 64, 32, 16, 8, 4, 2, 1), 0, 256, 255, 1, 1),
}


def guarded_range_check(gs, lo, hi, hi2, st, st2) -> str | None:
    for g in gs:
        if [v for v in range(lo, hi, st) if v < g] != [v for v in range(lo, hi2, st2) if v < g]:
            return None
    return (f"enumerated: for each of the {len(gs)} values g of the enclosing loop ({', '.join(map(str, gs))}) "
            f"both loops run the same trips v < g (the body's guard)")


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
    "softmax.mlu-cuda-off-by-one_guard-0": (
        "`xpd_x5 >= xpd_bv3` instead of `>` changes which index of equal maxima is kept "
        "(red_buf[1], never read); the maximum's value is the same"),
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
