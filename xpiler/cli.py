"""The ``xpiler`` command: a thin layer over the Python API (DESIGN §3.2).

Exit codes: 0 success / verified; 3 unresolved or not verified; 2 bad input or usage;
1 internal error or a capability that is not built yet (said plainly).
"""
from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from . import __version__
from .diagnostics import XPError, XPErrors

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_UNRESOLVED = 0, 1, 2, 3


def _err(e: XPError) -> int:
    print(e.format(), file=sys.stderr)
    code = e.code
    if code.startswith("XP1") or "XP4006" <= code <= "XP4019":   # XP4006-4019: replay refused a log
        return EXIT_BAD_INPUT
    if code.startswith("XP9"):
        return EXIT_INTERNAL
    return EXIT_UNRESOLVED if code.startswith("XP2") else EXIT_INTERNAL


def _parse_sizes(text: str) -> dict:
    """``rows=4096,cols=1024`` -> {"rows": 4096, "cols": 1024}; XP1223 for anything else."""
    out = {}
    for part in text.split(","):
        name, eq, val = part.strip().partition("=")
        try:
            if not eq or not name.strip().isidentifier():
                raise ValueError
            out[name.strip()] = int(val.strip())
        except ValueError:
            raise XPError("XP1223", flag="--tune-sizes", value=text, want="NAME=INT pairs separated by commas") from None
    return out


def _not_yet(command: str, why: str) -> int:
    print(XPError("XP1203", command=command, why=why).format(), file=sys.stderr)
    return EXIT_INTERNAL


class _Progress:
    """A one-line progress display on a terminal; silent when stderr is not a TTY (logs, CI)."""

    def __init__(self, label: str, enabled: bool | None = None):
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    def __call__(self, done: int, total: int):
        if self.enabled:
            sys.stderr.write(f"\r{self.label}: {done}/{total}")
            if done >= total:
                sys.stderr.write("\n")
            sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
def cmd_test(a) -> int:
    from .api import test
    src = Path(a.src)
    if a.seeds < 1:
        raise XPError("XP1223", flag="--seeds", value=a.seeds, want="a number of seeds, >= 1")
    v = test(src, spec=a.spec, seeds=list(range(a.seeds)), instances=a.instance or None,
             sanitize=not a.no_asan, timeout=a.timeout, progress=_Progress(f"testing {src.name}"))
    if a.json:
        print(json.dumps(v.to_json(), indent=None))
    else:
        print(v.summary())
        for n in getattr(v, "notes", ()):
            print(f"  {n.location() + ': ' if n.location() else ''}note {n.code}: {n.message}")
        for f in v.failures[:10]:
            print(f"  {f.code}: {f.message}")
            for d in f.first_diffs[:3]:
                print(f"      at {d['index']}: got {d['got']}, expected {d['expected']}")
            if f.log and f.code in ("XP2001", "XP2002", "XP2003", "XP2005", "XP2104", "XP2105", "XP2113", "XP2114",
                                    "XP2115", "XP2116"):
                tail = "\n".join(f.log.strip().splitlines()[:8])
                print("      " + tail.replace("\n", "\n      "))
        if len(v.failures) > 10:
            print(f"  … {len(v.failures) - 10} more failures")
    if v.does_not_compile:   # the user's own kernel was refused by its compiler: bad input (docs/decisions.md)
        return EXIT_BAD_INPUT
    if any(f.code.startswith("XP1") for f in v.failures):   # bad input, e.g. a reference that raises (XP1222)
        return EXIT_BAD_INPUT
    return EXIT_OK if v.verified else EXIT_UNRESOLVED


def cmd_doctor(a) -> int:
    from .platforms import _MODULES, get_platform
    rows = []
    for d in _MODULES:
        try:
            p = get_platform(d)
            for sub, ok, why in p.doctor():
                rows.append((d, sub, ok, why))
        except XPError as e:
            rows.append((d, "-", False, e.message))
    broken = 0
    if not a.quick:
        # a usable-looking substrate that cannot run a tiny kernel here is broken, not "usable"
        from .platforms.selftest import run_selftest
        for d in _MODULES:
            if not any(r[0] == d and r[2] and r[1].startswith("emu:") or r[0] == d == "c" and r[2] for r in rows):
                continue
            st = run_selftest(d)
            broken += not st.ok
            rows.append((d, f"self-test {st.substrate}", st.ok, st.detail if st.ok else "BROKEN: " + st.detail))
    if a.json:
        print(json.dumps([{"dialect": d, "substrate": s, "usable": ok, "detail": w} for d, s, ok, w in rows]))
        return EXIT_UNRESOLVED if broken else EXIT_OK
    print(f"xpiler {__version__} — substrates on this machine")
    for d, s, ok, w in rows:
        print(f"  {'ok ' if ok else ' - '} {d:5s} {s:28s} {w}")
    if broken:
        print(f"{broken} substrate self-test(s) failed: migrations verified there would fail for the substrate's "
              "reason, not the kernel's", file=sys.stderr)
    return EXIT_UNRESOLVED if broken else EXIT_OK


def cmd_bench(a) -> int:
    from .examples_index import discover
    if a.list:
        from .spec import load_spec
        for ex in discover(Path(a.suite) if a.suite else None, [a.src_dialect] if a.src_dialect else None):
            try:
                insts = [i.name for i in load_spec(ex.spec).instances()]
            except XPError:
                insts = None
            obj = ex.to_json(insts)
            print(json.dumps(obj) if a.json else f"{ex.op:22s} {ex.dialect:5s} {ex.variant:10s} {ex.source}")
        return EXIT_OK
    # migrate every selected example to every selected target and verify (symbolic, no tuning)
    import tempfile
    import time as _time
    from .api import migrate
    rows = []
    dsts = [a.dst_dialect] if a.dst_dialect else ["cuda", "hip", "bang", "c"]
    for ex in discover(Path(a.suite) if a.suite else None, [a.src_dialect] if a.src_dialect else None):
        for dst in dsts:
            if dst == ex.dialect:
                continue
            t0 = _time.time()
            with tempfile.TemporaryDirectory(prefix="xpiler-bench-") as tmp:
                try:
                    r = migrate(ex.source, to=dst, spec=ex.spec, outdir=Path(tmp) / "out")
                    ok, why = r.verified, "" if r.verified else (r.diagnostics[0].code if r.diagnostics else "?")
                except XPError as e:
                    ok, why = False, e.code
            row = {"source": str(ex.source), "to": dst, "verified": ok, "seconds": round(_time.time() - t0, 2),
                   "reason": why}
            rows.append(row)
            if not a.json:
                print(f"{'PASS' if ok else 'FAIL'} {ex.source} -> {dst} {row['seconds']}s {why}")
    if a.json:
        print(json.dumps(rows))
    else:
        print(f"{sum(r['verified'] for r in rows)} / {len(rows)} migrations verified")
    return EXIT_OK if all(r["verified"] for r in rows) else EXIT_UNRESOLVED


def cmd_parse(a) -> int:
    try:
        from .parse_cmd import parse_main
    except ImportError as e:
        return _not_yet("parse", f"the front end is not installed ({e})")
    return parse_main(a)


def cmd_spec(a) -> int:
    from .infer import infer_spec
    if not a.infer:
        print("xpiler spec: give --infer SRC", file=sys.stderr)
        return EXIT_BAD_INPUT
    text, notes = infer_spec(Path(a.infer))
    sys.stdout.write(text)
    for n in notes:
        print(n.format(), file=sys.stderr)
    return EXIT_OK


def cmd_migrate(a) -> int:
    from .api import migrate
    if Path(a.src).is_dir():   # a whole tree: every kernel file in it (xpiler/project/, docs/projects.md)
        from .project.cli import cmd_migrate_dir
        return cmd_migrate_dir(a, _parse_sizes)
    if a.proposer != "symbolic" or a.llm:
        if a.proposer == "symbolic" and a.llm:
            print("note: --llm given with --proposer symbolic; the LLM is not asked", file=sys.stderr)
    if a.cluster and not (a.tune and not a.no_tune):
        print("note: --cluster is used by --tune only (candidate evaluation); nothing is tuned here", file=sys.stderr)
    tty = sys.stderr.isatty()

    def progress(msg: str):
        if tty:
            sys.stderr.write(f"\r\033[K{msg}")
            sys.stderr.flush()

    r = migrate(a.src, to=a.to, spec=a.spec, outdir=a.outdir, llm=a.llm, proposer=a.proposer, budget=a.budget,
                tune=a.tune and not a.no_tune, seed=a.seed, jobs=a.jobs, timeout=a.timeout, resume=a.resume,
                progress=progress, perf=not a.no_perf, force=a.force, max_evals=a.max_evals,
                tune_sizes=_parse_sizes(a.tune_sizes) if a.tune_sizes else None,
                cluster=a.cluster if a.tune and not a.no_tune else None, emit_asm=a.emit_asm,
                repair=not a.no_repair)
    if tty:
        sys.stderr.write("\r\033[K")
    if r.verified:
        dropped = [d for d in r.diagnostics if d.code == "XP4003"]
        for d in r.diagnostics:
            if d.code not in ("XP4003", "XP4001"):
                print(d.format(), file=sys.stderr)
        if dropped:
            print(f"note: {len(dropped)} candidate step(s) failed their tests and were dropped (see the report)",
                  file=sys.stderr)
    else:
        for d in r.diagnostics:
            print(d.format(), file=sys.stderr)
    if r.verified:
        print(f"VERIFIED: {r.output_path} ({r.verdict.substrate if r.verdict else '?'}); spec {r.spec_path}; "
              f"report {r.report_path}; log {r.log_path}")
    else:
        print(f"UNRESOLVED: best candidate {r.output_path}; report {r.report_path}; log {r.log_path}")
    return r.exit_code


def cmd_export_pairs(a) -> int:
    from .pairs import export_pairs
    s = export_pairs(a.logs, a.output, replay=a.replay, source_asm=not a.no_source_asm, source_root=a.source_root,
                     progress=_Progress("reading logs"))
    for e in s.refused + s.notes:
        print(e.format().split("\n")[0], file=sys.stderr)   # one line per log; the hint once below
    if s.refused:
        print(f"  hint: {s.refused[0].hint}", file=sys.stderr)
    print(s.line())
    return EXIT_BAD_INPUT if s.refused else EXIT_OK   # refused logs are bad input; the rest is written


def cmd_replay(a) -> int:
    from .replay import replay
    r = replay(a.log, reverify=a.reverify, source=a.source, output=a.output)
    for w in r.warnings:
        print(w.format(), file=sys.stderr)
    print(f"replay OK: {r.steps} steps re-derived, output hash {r.output_hash} "
          f"({'verified' if r.verified else 'UNVERIFIED: the logged migration did not verify'}); "
          + (f"{r.output_file} matches the re-derived output" if r.output_file
             else "no output file compared (see the warning)"))
    if r.reverified is not None:
        print(f"reverify on {r.substrate}: {'VERIFIED' if r.reverified else 'FAILED'}")
        for m in r.messages:
            print("  " + m)
        return EXIT_OK if r.reverified else EXIT_UNRESOLVED
    return EXIT_OK if r.verified else EXIT_UNRESOLVED   # an unverified migration replays as unverified


class _Parser(argparse.ArgumentParser):
    """argparse with our diagnostics: a usage error is XP1205 (exit 2), with the usage line."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        print(XPError("XP1205", detail=f"{self.prog}: {message}").format(), file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="xpiler", description="Migrate tensor-operator kernels between CUDA, HIP, "
                                "BANG C and C/VNNI, and verify every result by running it.")
    p.add_argument("--version", action="version", version=f"xpiler {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    m = sub.add_parser("migrate", help="migrate a kernel to another dialect and verify it")
    m.add_argument("src", help="a kernel file, or a folder: every kernel file below it (docs/projects.md)")
    m.add_argument("--to", required=True, choices=["cuda", "hip", "bang", "c"])
    m.add_argument("--spec")
    m.add_argument("-o", "--outdir", default="out")
    m.add_argument("--llm", metavar="BACKEND:MODEL")
    m.add_argument("--proposer", choices=["symbolic", "llm", "both"], default="symbolic")
    m.add_argument("--budget", type=float, default=600.0, metavar="SECONDS",
                   help="wall-clock cap on the whole migration, tests, running passes and LLM calls included "
                        "(default 600)")
    m.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                   help="the longest one test run may take; candidates get a shorter limit derived from the "
                        "source's measured run time (default 120)")
    m.add_argument("--tune", action="store_true",
                   help="after the kernel verifies, search for a faster verified one (MCTS over the target passes' "
                        "steps, timed on hardware here or by the cost model; within --budget)")
    m.add_argument("--no-tune", action="store_true", help="do not tune (the default; overrides --tune)")
    m.add_argument("--tune-sizes", metavar="NAME=INT,...",
                   help="with --tune: time candidates at these sizes (over the spec's largest instance), "
                        "e.g. rows=4096,cols=1024; correctness is still tested on the spec's instances")
    m.add_argument("--max-evals", type=int, default=None, metavar="N",
                   help="with --tune: test at most N candidates (default 60)")
    m.add_argument("--no-repair", action="store_true",
                   help="drop a candidate that fails its test instead of handing it to Z3 sketch repair "
                        "(docs/repair.md; the ablation)")
    m.add_argument("--no-perf", action="store_true",
                   help="skip timing the verified kernel against its reference (done only on hardware substrates)")
    m.add_argument("--emit-asm", action="store_true",
                   help="write the verified kernel's assembly beside it and record it in the log and report: "
                        "PTX (+ SASS where cuobjdump exists) for sm_90, AMDGPU gfx90a/gfx1100, x86-64 (docs/provenance.md)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--jobs", type=int, default=2,
                   help="test runs at a time; for a folder: kernels migrated at a time, each in its own process")
    m.add_argument("--cluster", metavar="ADDRESS",
                   help="with --tune: evaluate candidates on this Dask scheduler (tcp://host:8786); for a "
                        "folder: migrate its kernels there (the workers must see the same paths); "
                        "needs pip install 'xpiler[dist]'")
    m.add_argument("--resume", metavar="LOG")
    m.add_argument("--force", action="store_true",
                   help="replace files in -o that xpiler did not write, or that were edited since (never the inputs)")
    m.set_defaults(func=cmd_migrate)

    t = sub.add_parser("test", help="run a kernel on the best substrate here and compare with its reference")
    t.add_argument("src")
    t.add_argument("--spec")
    t.add_argument("--json", action="store_true", help="print one JSON object")
    t.add_argument("--seeds", type=int, default=3, help="number of seeds (flavours cycle: ordinary, adversarial, boundary)")
    t.add_argument("--instance", action="append", help="only this instance (repeatable)")
    t.add_argument("--no-asan", action="store_true", help="skip the AddressSanitizer build (faster, less strict)")
    t.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    t.set_defaults(func=cmd_test)

    r = sub.add_parser("replay", help="re-apply a logged migration; same output hash or fail")
    r.add_argument("log")
    r.add_argument("--reverify", action="store_true", help="re-run the tests on the substrates available here")
    r.add_argument("--source", help="the source kernel, when it moved since the log was written")
    r.add_argument("--output", metavar="FILE", help="the output kernel to compare with the re-derived one "
                   "(default: the file the log names, beside the log or at its recorded path)")
    r.set_defaults(func=cmd_replay)

    ep = sub.add_parser("export-pairs", help="verified (source, target, assembly) pairs from provenance logs "
                        "(docs/dataset.md)")
    ep.add_argument("logs", nargs="+", metavar="LOGS", help="provenance.jsonl files, or folders searched for them")
    ep.add_argument("-o", "--output", required=True, metavar="OUT", help="pairs.jsonl, or pairs.parquet (needs pyarrow)")
    ep.add_argument("--replay", action="store_true", help="also re-derive every step of each log (xpiler replay)")
    ep.add_argument("--no-source-asm", action="store_true",
                    help="do not build the source kernels' assembly here (source_asm is then null)")
    ep.add_argument("--source-root", metavar="DIR",
                    help="the checkout the logs were written in, when their sources moved (logged relative paths)")
    ep.set_defaults(func=cmd_export_pairs)

    b = sub.add_parser("bench", help="benchmarks over the example suite (--list: the example instances)")
    b.add_argument("--suite")
    b.add_argument("--from", dest="src_dialect", choices=["cuda", "hip", "bang", "c"])
    b.add_argument("--to", dest="dst_dialect", choices=["cuda", "hip", "bang", "c"])
    b.add_argument("--json", action="store_true")
    b.add_argument("--list", action="store_true")
    b.set_defaults(func=cmd_bench)

    pa = sub.add_parser("parse", help="parse a kernel: show the IR, or print it back (--print)")
    pa.add_argument("src")
    pa.add_argument("--print", dest="print_", action="store_true", help="print the kernel back from the IR")
    pa.add_argument("--to", choices=["cuda", "hip", "bang", "c"], help="with --print: printer to use (default: own dialect)")
    pa.add_argument("--json", action="store_true")
    pa.set_defaults(func=cmd_parse)

    s = sub.add_parser("spec", help="propose a spec from a kernel's host launcher")
    s.add_argument("--infer", metavar="SRC")
    s.set_defaults(func=cmd_spec)

    d = sub.add_parser("doctor", help="which compilers, GPUs and emulators are usable here")
    d.add_argument("--json", action="store_true")
    d.add_argument("--quick", action="store_true", help="list the substrates without running their self-tests")
    d.set_defaults(func=cmd_doctor)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        a = parser.parse_args(argv)
    except SystemExit as e:  # argparse: usage errors exit 2, --help exits 0
        return int(e.code or 0)
    if not getattr(a, "command", None):
        parser.print_help()
        print(XPError("XP1205", detail="no command given").format(), file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return a.func(a)
    except XPErrors as e:
        return _err(e)
    except XPError as e:
        return _err(e)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # never a bare traceback for the user
        print(XPError("XP9001", detail=f"{type(e).__name__}: {e}").format(), file=sys.stderr)
        if __import__("os").environ.get("XPILER_DEBUG"):
            traceback.print_exc()
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
