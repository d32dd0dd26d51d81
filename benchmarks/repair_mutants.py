#!/usr/bin/env python3
"""Planted-bug benchmark for Z3 sketch repair (issue 14; docs/repair.md).

1. Verified migrations: each (example, target) pair of PAIRS is migrated with ``repair=False``
   into WORK/migrations/ (kept between runs); only verified outputs are used.
2. Mutants: each output is parsed and mutated in its IR at regions chosen with a fixed random
   seed: wrong coefficient, off-by-one bound, off-by-one guard, wrong stride, swapped div/mod,
   wrong copy size, wrong reduction init, missing barrier. Printed in the output's dialect.
3. Each mutant is tested as a migration tests a candidate (against the source kernel and the
   spec's reference, seeds 0 1 2, AddressSanitizer, 20 s per run), stopping at its first failing
   run; one that still passes is discarded and counted.
4. Each failing mutant goes to ``repair_kernel`` (budget 30 s); repaired = its full re-test
   passed on at least the unrepaired test's instances and seeds.

    python benchmarks/repair_mutants.py [--limit N] [--shard K/N] [--per-kind N] [--json OUT]
    python benchmarks/repair_mutants.py --aggregate R.json... --classes benchmarks/results/uncaught_mutants.json

A mutant that still passes its test is not repaired; ``--classes`` (the output of
``benchmarks/uncaught_mutants.py``) says which of those are equivalent to the original (proven
or argued) and which are missed bugs, and the table counts them in separate columns. The
issue's rate stays *repaired and verified / planted* (planted unchanged); beside it, the rate
over the non-equivalent mutants: repaired and verified / (planted - equivalent).

Without repair (--no-repair) no mutant is repaired: 0% by construction (a failing candidate is
dropped), so that column is stated, not run.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from xpiler.diagnostics import XPError  # noqa: E402
from xpiler.frontend import parse_text  # noqa: E402
from xpiler.ir import nodes as N  # noqa: E402
from xpiler.printers import print_program  # noqa: E402
from xpiler.repair import covers, repair_kernel  # noqa: E402
from xpiler.repair.localize import get_at, regions, set_at  # noqa: E402
from xpiler.sketches import affine_index as AI, reduction_init as RI  # noqa: E402
from xpiler.sketches._base import add_const  # noqa: E402
from xpiler.spec import DIALECT_EXT, load_spec  # noqa: E402
from xpiler.verify.tester import compare_kernels  # noqa: E402

PAIRS = [(f"examples/{k}/{k}.{e}", to) for k, e, tos in [
    ("add", "c", ("cuda", "hip", "bang")), ("relu", "c", ("cuda", "hip", "bang")),
    ("softmax", "c", ("cuda", "hip", "bang")), ("gemv", "c", ("cuda", "bang")), ("gemm", "c", ("cuda", "hip", "bang")),
    ("layernorm", "c", ("cuda", "bang")), ("sigmoid", "c", ("cuda",)), ("avgpool2d", "c", ("cuda", "bang")),
    ("conv1d", "c", ("cuda", "hip")), ("rmsnorm", "c", ("hip",)),
    ("add", "cu", ("c",)), ("gemm", "cu", ("c",)), ("softmax", "cu", ("c",)), ("gemv", "hip", ("c",)),
    ("softmax", "mlu", ("cuda",)), ("add", "mlu", ("hip",))] for to in tos]

RUN_LIMIT = 20.0   # xpiler.migration.driver.RUN_LIMIT_FLOOR_S

KINDS = ["wrong coefficient", "off-by-one bound", "off-by-one guard", "wrong stride", "swapped div/mod",
         "wrong copy size", "wrong reduction init", "missing barrier"]


def migrated(work: Path) -> list[dict]:
    """The verified outputs (migrated once, kept in WORK/migrations)."""
    from xpiler.migration.driver import migrate
    out = []
    for src, to in PAIRS:
        s = ROOT / src
        if not s.is_file():
            continue
        d = work / "migrations" / f"{s.parent.name}_{s.suffix[1:]}_to_{to}"
        done = d / "done.json"
        if not done.is_file():
            try:
                r = migrate(s, to, outdir=d, perf=False, budget=240, repair=False, force=True)
                rec = {"verified": r.verified, "output": str(r.output_path), "spec": str(r.spec_path)}
            except XPError as e:
                rec = {"verified": False, "why": f"{e.code} {e.message[:100]}"}
            d.mkdir(parents=True, exist_ok=True)
            done.write_text(json.dumps(rec))
        rec = json.loads(done.read_text())
        print(f"migration {src} -> {to}: {'verified' if rec['verified'] else 'NOT verified'}", flush=True)
        if rec["verified"]:
            out.append({"source": s, "to": to, **rec})
    return out


def _mutations(prog, entry, dialect, rng):
    """(kind, description, mutated program) candidates of one program."""
    regs = regions(prog, entry, dialect)
    by = defaultdict(list)
    for r in regs:
        by[r.kind].append(r)
    out = []

    def put(kind, r, new_node, what):
        out.append((kind, f"{what} at line {r.line}", set_at(prog, r.path, new_node)))

    for r in by["index"]:
        dec = AI.terms(r.node)
        if dec and dec[0]:
            ts, k = dec
            i = rng.randrange(len(ts))
            ts = [list(t) for t in ts]
            ts[i][0] += rng.choice([-1, 1]) if ts[i][0] != 1 else 1
            put("wrong coefficient", r, AI.rebuild(ts, k), "coefficient of a term")
    for r in by["bound"]:
        put("off-by-one bound", r, r.node.with_(hi=add_const(r.node.hi, rng.choice([-1, 1]))), "loop bound")
    for r in by["guard"]:
        e = r.node
        flip = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
        put("off-by-one guard", r, rng.choice([N.BinOp(flip[e.op], e.lhs, e.rhs),
                                               N.BinOp(e.op, e.lhs, add_const(e.rhs, rng.choice([-1, 1])))]), "guard")
    for r in by["stride"]:
        s = r.node.step
        put("wrong stride", r, r.node.with_(step=rng.choice([add_const(s, 1), N.BinOp("*", s, AI.const(2))])),
            "loop step")
    for r in by["divmod"]:
        e = r.node
        put("swapped div/mod", r, N.BinOp("%" if e.op == "/" else "/", e.lhs, e.rhs), "div/mod")
    for r in by["copy"]:
        c = r.node
        args = list(c.args)
        sz = args[2]
        if isinstance(sz, N.BinOp) and sz.op == "*" and isinstance(sz.rhs, N.SizeOf):
            args[2] = N.BinOp("*", add_const(sz.lhs, -1), sz.rhs)
        else:
            args[2] = add_const(sz, -4)
        put("wrong copy size", r, c.with_(args=tuple(args)), "copy size")
    for r in by["init"]:
        ch = RI.choices(r.node)[1:]
        put("wrong reduction init", r, rng.choice(ch), "reduction init")
    for r in by["block"]:
        b = r.node
        bars = [i for i, s in enumerate(b.stmts) if isinstance(s, N.Barrier) and s.kind == "block"]
        if bars:
            i = rng.choice(bars)
            put("missing barrier", r, b.with_(stmts=b.stmts[:i] + b.stmts[i + 1:]), "barrier")
    return out


def _slug(kind: str) -> str:
    return kind.replace(" ", "_").replace("/", "")


def mutant_id(source, to: str, kind: str, n: int) -> str:
    """A mutant's ID: the source file's name with its extension (``add.mlu``: two sources of one
    operator can migrate to the same target and print to the same output name), the target, the
    kind, and its number among that output's mutants of that kind. It depends on nothing but
    these (not on the work directory, the shard or the order of PAIRS)."""
    return f"{Path(source).name}-{to}-{_slug(kind)}-{n}"


def mutants(outs: list[dict], per_kind: int, seed: int = 14) -> list[dict]:
    """The planted-bug corpus, in a fixed order; every mutant's ``id`` is unique (checked)."""
    rows = []
    for o in outs:
        out = Path(o["output"])
        spec = load_spec(o["spec"])
        dialect = spec.dialect
        text = out.read_text()
        try:
            prog = parse_text(text, dialect, str(out))
        except XPError:
            continue
        rng = random.Random(f"{seed}:{out.name}:{o['to']}")
        cands = _mutations(prog, spec.entry, dialect, rng)
        by = defaultdict(list)
        for kind, what, mp in cands:
            by[kind].append((what, mp))
        for kind in KINDS:
            picks = by[kind][:]
            rng.shuffle(picks)
            n = 0
            for what, mp in picks:
                if n >= per_kind:
                    break
                try:
                    mt = print_program(mp, dialect)
                except Exception:
                    continue
                if mt == print_program(prog, dialect):
                    continue
                rows.append({"id": mutant_id(o["source"], o["to"], kind, n),
                             "legacy_id": f"{out.stem}-{o['to']}-{_slug(kind)}-{n}",
                             "kind": kind, "dialect": dialect, "what": what, "text": mt, "output": str(out),
                             "spec": o["spec"], "source": str(o["source"])})
                n += 1
    ids = [r["id"] for r in rows]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"mutant IDs are not unique: {dup[:5]}")
    for k, r in enumerate(rows):
        r["index"] = k
    return rows


def _norm(s: str) -> str:
    return "".join(ch for ch in s if ch not in " \t\n()")


def equivalence_proof(m: dict) -> dict | None:
    """A proof, run now, that mutant ``m`` computes what its output computes for every valid
    instance (so no input can tell them apart and it is not a planted bug), or None.

    * ``Z3 (grid-stride)``: automatic for any mutated step of a grid-stride loop: under the spec's
      launch every thread runs at most one iteration with either step (``uncaught_mutants.grid_stride_check``).
    * ``Z3 (expression)`` / ``enumeration`` / ``enumeration (guarded)``: a claim on file for the
      mutant's ID (``uncaught_mutants.EXPR_PROOFS``, ``RANGE_PROOFS``, ``GUARDED_RANGE_PROOFS``),
      checked now; an expression claim counts only when its expressions occur in the output's and
      the mutant's text, a range claim only when the one changed line is the claimed loop (since
      2026-12-05, tenth session) -- a stale claim does not discard a mutant.
    * ``Z3 (vector split)``: automatic for a mutated split point or tail guard of the c printer's
      vector loop + masked tail (``uncaught_mutants.vector_split_check``): the same lanes at every start.
    * ``Z3 (where the conditions differ)`` / ``enumeration (shuffle lanes)`` / ``Z3 + text (dead
      copy)``: claims on file (``DIFF_PROOFS``, ``SHUFFLE_PROOFS``, ``DEAD_COPY_PROOFS``) checked
      now and tied to the texts: the changed line and the block it guards (resp. the shuffle
      statements and the read of lane 0; every line that names the copied-into buffer) as claimed.

    Mutants only argued equivalent (no check runs) are never discarded."""
    import uncaught_mutants as UM
    spec = load_spec(m["spec"])
    orig = Path(m["output"]).read_text()
    z = UM.grid_stride_check(orig, m["text"], spec) or {}
    if z.get("proven"):
        return {"kind": "Z3 (grid-stride)", "proof": z["proven"]}
    i = m["id"]
    if i in UM.EXPR_PROOFS:
        a, b = UM.EXPR_PROOFS[i][:2]
        if _norm(a) in _norm(orig) and _norm(b) in _norm(m["text"]):
            pr = UM.expr_check(*UM.EXPR_PROOFS[i])
            if pr:
                return {"kind": "Z3 (expression)", "proof": pr}
    if i in UM.RANGE_PROOFS:
        pr = UM.range_check(*UM.RANGE_PROOFS[i], orig_text=orig, mut_text=m["text"])
        if pr:
            return {"kind": "enumeration", "proof": pr}
    if i in UM.GUARDED_RANGE_PROOFS:
        pr = UM.guarded_range_check(*UM.GUARDED_RANGE_PROOFS[i], orig_text=orig, mut_text=m["text"])
        if pr:
            return {"kind": "enumeration (guarded)", "proof": pr}
    pr = UM.vector_split_check(orig, m["text"], spec)
    if pr:
        return {"kind": "Z3 (vector split)", "proof": pr}
    if i in UM.DIFF_PROOFS:
        pr = UM.diff_check(*UM.DIFF_PROOFS[i], orig_text=orig, mut_text=m["text"])
        if pr:
            return {"kind": "Z3 (where the conditions differ)", "proof": pr}
    if i in UM.SHUFFLE_PROOFS:
        pr = UM.shuffle_check(*UM.SHUFFLE_PROOFS[i], orig_text=orig, mut_text=m["text"])
        if pr:
            return {"kind": "enumeration (shuffle lanes)", "proof": pr}
    if i in UM.DEAD_COPY_PROOFS:
        pr = UM.dead_copy_check(*UM.DEAD_COPY_PROOFS[i], orig_text=orig, mut_text=m["text"])
        if pr:
            return {"kind": "Z3 + text (dead copy)", "proof": pr}
    if i in UM.FLAG_PROOFS:
        pr = UM.flag_check(*UM.FLAG_PROOFS[i], orig_text=orig, mut_text=m["text"])
        if pr:
            return {"kind": "enumeration (lane-0 flags)", "proof": pr}
    return None


def split_equivalent(ms: list[dict]) -> tuple[list[dict], list[dict]]:
    """(kept, discarded): the planted corpus without the mutants proven equivalent at build time;
    each discarded row carries ``proof`` ({kind, proof}). IDs are those of the full corpus."""
    kept, gone = [], []
    for m in ms:
        pr = equivalence_proof(m)
        if pr:
            gone.append({**m, "proof": pr})
        else:
            kept.append(m)
    return kept, gone


def run(m: dict, budget: float, work: Path) -> dict:
    spec = load_spec(m["spec"])
    src = Path(m["source"])
    sspec = load_spec(str(src) + ".toml")
    d = work / "mutants" / m["id"]
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"mutant{DIALECT_EXT[spec.dialect]}"
    path.write_text(m["text"])
    t0 = time.time()
    # the per-run limit a migration gives a candidate of a fast source (the driver's floor); the
    # test stops at its first failing run (a mutant that hangs costs one limit, not fifteen)
    v = compare_kernels(path, spec, against=(src, sspec), use_reference=bool(spec.reference), seeds=(0, 1, 2),
                        jobs=1, timeout=RUN_LIMIT, stop_on_failure=True)
    row = {k: m[k] for k in ("id", "legacy_id", "index", "kind", "dialect", "what") if k in m}
    row["test_s"] = round(time.time() - t0, 2)
    row["failing"] = not v.verified
    if v.verified:
        return row
    row["caught_by"] = v.failures[0].code if v.failures else "?"
    r = repair_kernel(m["text"], spec.dialect, spec.entry, spec, (src, sspec), budget_s=budget, failing=v,
                      workdir=d / "repair", jobs=1, run_limit=RUN_LIMIT)
    row.update(repaired=r.repaired, solver=r.solver, sketch=r.sketch, holes=r.holes, time_s=round(r.time_s, 2),
               checks=r.checks, region=r.region, filter=r.filter, tried=r.tried[:40])
    if r.repaired:   # the gate, again, from here: same instances and seeds, verified
        assert r.verdict.verified and covers(r.verdict, v) and r.verdict.seeds == v.seeds
        row["gate_instances"] = len(r.verdict.instances)
        row["gate_was"] = [i for i in r.verdict.instances if i.startswith("was-")]
    return row


#: the sketch that undoes each planted kind
UNDO = {"wrong coefficient": "affine_index", "off-by-one bound": "bound", "off-by-one guard": "guard",
        "wrong stride": "stride", "swapped div/mod": "divmod", "wrong copy size": "copy",
        "wrong reduction init": "reduction_init", "missing barrier": "barrier"}


def _inverse(r: dict) -> bool:
    """The repair used the sketch of the planted kind (not proof it restored the original text)."""
    return r.get("sketch") == UNDO.get(r["kind"])


def _cls(r: dict, classes: dict) -> str:
    """'failing', or for a mutant that passes its test: 'proven' / 'argued' (equivalent),
    'missed' (a bug the test misses), '?' (not classified)."""
    if r["failing"]:
        return "failing"
    c = classes.get(r["id"])
    if c is None:
        return "?"
    if c.get("class") == "a":
        return "proven" if "proven" in c.get("label", "") else "argued"
    return "missed"


def table(rows: list[dict], classes: dict | None = None) -> str:
    """The table; with ``classes`` (uncaught_mutants.py rows by ID) the mutants that pass their
    test are split into equivalent (proven / argued) and missed, and the rate over the
    non-equivalent mutants is added."""
    def pct(a, b):
        return f"{100 * a / b:.0f}%" if b else "-"

    def q(xs, p):
        xs = sorted(xs)
        return f"{xs[min(len(xs) - 1, int(p * len(xs)))]:.1f}" if xs else "-"

    def med(xs):
        return f"{statistics.median(xs):.1f}" if xs else "-"
    cl = classes is not None
    classes = classes or {}
    if cl:
        lines = ["| by | planted | failing (used) | still passing: equivalent proven | equivalent argued | missed bug "
                 "| not classified | repaired and verified | rate (of planted) | rate (of non-equivalent) | "
                 "rate (of failing) | median repair s | p90 repair s |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    else:
        lines = ["| by | planted | failing (used) | still passing (not failing) | repaired and verified | "
                 "rate (of planted) | rate (of failing) | median repair s | p90 repair s |",
                 "|---|---|---|---|---|---|---|---|---|"]

    def row(label, rs):
        f = [r for r in rs if r["failing"]]
        rep = [r for r in f if r.get("repaired")]
        ts = [r["time_s"] for r in rep]
        if not cl:
            return (f"| {label} | {len(rs)} | {len(f)} | {len(rs) - len(f)} | {len(rep)} | {pct(len(rep), len(rs))} | "
                    f"{pct(len(rep), len(f))} | {med(ts)} | {q(ts, 0.9)} |")
        k = defaultdict(int)
        for r in rs:
            k[_cls(r, classes)] += 1
        noneq = len(rs) - k["proven"] - k["argued"]
        return (f"| {label} | {len(rs)} | {len(f)} | {k['proven']} | {k['argued']} | {k['missed']} | {k['?']} | "
                f"{len(rep)} | {pct(len(rep), len(rs))} | {pct(len(rep), noneq)} | {pct(len(rep), len(f))} | "
                f"{med(ts)} | {q(ts, 0.9)} |")
    for label, key in (("kind", "kind"), ("dialect", "dialect")):
        groups = defaultdict(list)
        for r in rows:
            groups[r[key]].append(r)
        for g, rs in sorted(groups.items()):
            lines.append(row(f"{label}: {g}", rs))
    lines.append(row("**all**", rows))
    f = [r for r in rows if r["failing"]]
    rep = [r for r in f if r.get("repaired")]
    allt = [r["time_s"] for r in f if "time_s" in r]
    if allt:
        lines.append(f"\nrepair time over all failing mutants (repaired or not): median {statistics.median(allt):.1f} s")
    if rep:
        fl = [r.get("filter") or {} for r in rep]
        med = lambda xs: statistics.median(xs) if xs else 0.0  # noqa: E731
        build = [x.get("build_s", 0.0) for x in fl]
        gate = [x.get("gate_s", 0.0) for x in fl]
        search = [r["time_s"] - b - g for r, b, g in zip(rep, build, gate)]
        lines.append(f"repaired ones, median parts: parametric build {med(build):.1f} s, search (filter runs, Z3) "
                     f"{med(search):.1f} s, gate (concrete build and full test) {med(gate):.1f} s; "
                     f"median checks {med([r['checks'] for r in rep]):.0f}")
        inv = [r for r in rep if not _inverse(r)]
        lines.append(f"repairs not of the planted kind's sketch: {len(inv)} of {len(rep)} "
                     f"({', '.join(sorted({r['kind'] + ' -> ' + str(r['sketch']) for r in inv})) or '-'})")
    return "\n".join(lines)


def identify(rows: list[dict], ms: list[dict]) -> dict:
    """Rows of result files keyed by the current mutant ID. A row written before IDs were made
    unique carries the old ID (``{output stem}-{target}-{kind}-{n}``, the same for add.c and
    add.mlu migrated to hip); it is matched on that old ID and its ``what`` (the line), which
    tell the two apart (an old ID and line that two current mutants share match neither). A row that matches no current mutant keeps a key of its own. A mutant in
    several rows: the last one counts."""
    by_legacy: dict = {}
    for m in ms:   # an old ID and line two current mutants share is ambiguous: matched to neither
        k = (m["legacy_id"], m["what"])
        by_legacy[k] = None if k in by_legacy else m["id"]
    ids = {m["id"] for m in ms}
    out: dict = {}
    for r in rows:
        if "legacy_id" in r or r["id"] in ids and (r["id"], r["what"]) not in by_legacy:
            key = r["id"]
        else:
            key = by_legacy.get((r["id"], r["what"])) or f"?{r['id']}|{r['what']}"
        out[key] = {**r, "id": key}
    return out


def _load_rows(paths) -> list[dict]:
    rows = []
    for p in paths:
        rows += json.loads(Path(p).read_text())
    return rows


def _load_classes(path) -> dict | None:
    if not path:
        return None
    return {r["id"]: r for r in json.loads(Path(path).read_text())}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/xpiler-repair-bench")
    ap.add_argument("--per-kind", type=int, default=2, help="mutants per kind per migrated output")
    ap.add_argument("--limit", type=int, default=None, help="run only the first N mutants (after --shard)")
    ap.add_argument("--shard", default=None, help="K/N: every N-th mutant from the K-th (0-based)")
    ap.add_argument("--kind", action="append", help="only these mutation kinds")
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--json")
    ap.add_argument("--fresh-cache", action="store_true",
                    help="an empty build cache (XPILER_CACHE) for this run: no build from an earlier run is reused")
    ap.add_argument("--skip-done", nargs="+", default=[], metavar="JSON",
                    help="leave out the mutants these result files already ran (before --shard)")
    ap.add_argument("--only-done", nargs="+", default=[], metavar="JSON",
                    help="only the mutants these result files ran (e.g. to re-run them with newer code)")
    ap.add_argument("--aggregate", nargs="+", metavar="JSON",
                    help="run nothing: the table over these result files, each mutant counted once")
    ap.add_argument("--ids", nargs="+", help="only these mutant IDs")
    ap.add_argument("--keep-equivalent", action="store_true",
                    help="plant every generated mutant (before 2026-12-04's seventh session): do not discard "
                         "the ones proven equivalent at build time")
    ap.add_argument("--discarded-json", metavar="JSON", help="write the discarded mutants and their proofs here")
    ap.add_argument("--classes", metavar="JSON",
                    help="uncaught_mutants.py's classification: the mutants that pass their test split into "
                         "equivalent (proven / argued) and missed")
    a = ap.parse_args()
    work = Path(a.work)
    if a.fresh_cache:
        import os
        import tempfile
        os.environ["XPILER_CACHE"] = tempfile.mkdtemp(prefix="xpiler-cache-", dir=work if work.is_dir() else None)
        print(f"build cache: {os.environ['XPILER_CACHE']} (empty)", flush=True)
    outs = migrated(work)
    ms = mutants(outs, a.per_kind)
    print(f"{len(outs)} verified migrations, {len(ms)} mutants generated", flush=True)
    if not a.keep_equivalent:
        ms_all = ms
        ms, gone = split_equivalent(ms)
        print(f"{len(gone)} discarded as proven equivalent at build time, {len(ms)} planted"
              + "".join(f"\n  discarded {g['id']} [{g['proof']['kind']}]" for g in gone), flush=True)
        if a.discarded_json:
            Path(a.discarded_json).write_text(json.dumps(
                [{k: g[k] for k in ("id", "kind", "dialect", "what", "proof")} for g in gone], indent=1))
    if a.aggregate:
        got = identify(_load_rows(a.aggregate), ms if a.keep_equivalent else ms_all)
        rows = list(got.values())
        stray = [k for k in got if k.startswith("?")]
        if not a.keep_equivalent:
            gone_ids = {g["id"] for g in gone}
            old_rows = rows
            rows = [r for r in rows if r["id"] not in gone_ids]
            rep_all = sum(bool(r.get("repaired")) for r in old_rows)
            print(f"old denominator (every generated mutant planted, as before this session): repaired and verified "
                  f"{rep_all} / {len(ms_all)} = {100 * rep_all / max(len(ms_all), 1):.0f}% "
                  f"({len(old_rows) - len(rows)} rows in these files are of discarded mutants, "
                  f"{sum(bool(r.get('repaired')) for r in old_rows if r['id'] in gone_ids)} of them repaired); "
                  f"new denominator: the {len(ms)} planted, below")
        print(f"{len(rows)} distinct mutants in {len(a.aggregate)} files"
              + (f" ({len(stray)} match no current mutant)" if stray else "")
              + f"; {len(ms) - len(set(r['id'] for r in rows) - set(stray))} of {len(ms)} planted not run")
        print(table(rows, _load_classes(a.classes)))
        return 0
    if a.skip_done:
        done = identify(_load_rows(a.skip_done), ms)
        ms = [m for m in ms if m["id"] not in done]
        print(f"{len(ms)} mutants not run in {' '.join(a.skip_done)}", flush=True)
    if a.only_done:
        done = identify(_load_rows(a.only_done), ms)
        ms = [m for m in ms if m["id"] in done]
        print(f"{len(ms)} mutants run in {' '.join(a.only_done)}", flush=True)
    if a.ids:
        ms = [m for m in ms if m["id"] in a.ids]
    if a.kind:
        ms = [m for m in ms if m["kind"] in a.kind]
    if a.shard:
        k, n = map(int, a.shard.split("/"))
        ms = ms[k::n]
    if a.limit:
        ms = ms[:a.limit]
    rows = []
    for m in ms:
        row = run(m, a.budget, work)
        rows.append(row)
        state = ("still passes (discarded)" if not row["failing"] else
                 f"REPAIRED {row['sketch']} {row['holes']} in {row['time_s']} s ({row['checks']} tests)"
                 if row.get("repaired") else f"not repaired ({row['solver']}, {row['time_s']} s)")
        print(f"{row['id']:55s} [{row['kind']}] {row['what']}: {state}", flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps(rows, indent=1))
    print()
    print(table(rows, _load_classes(a.classes)))
    print("\nwithout repair (--no-repair): 0 repaired by construction (a failing candidate is dropped); not run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
