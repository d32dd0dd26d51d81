"""``xpiler replay LOG [--reverify]``: re-derive a logged migration and check every hash.

The source is re-read and re-parsed, every applied pass event is re-applied with its logged
parameters (LLM-proposed programs are taken from the log's answers), and the printed program
after each step must have the logged hash. The first difference stops the replay with XP4006
naming the event: a changed source, a changed tool, or a tampered log. ``--reverify`` re-runs
the differential tests of the final program on the substrates available now (e.g. a log made
on a CPU-only machine, reverified where a GPU is present).
"""
from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .diagnostics import XPError
from .provenance import read_log, sha256_text
from .spec import DIALECT_EXT, parse_spec, spec_to_toml


@dataclass
class ReplayResult:
    ok: bool
    steps: int
    output_hash: str | None
    reverified: bool | None = None
    substrate: str | None = None
    messages: list[str] = field(default_factory=list)


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def replay(log_path: str | Path, *, reverify: bool = False, source: str | Path | None = None) -> ReplayResult:
    from .frontend import parse_file
    from .migration.driver import _launch_to_params, _launch_to_spec
    from .printers import print_program
    from xpiler.passes.base import get as get_pass

    log_path = Path(log_path)
    try:
        header, events = read_log(log_path)
    except (OSError, ValueError) as e:
        raise XPError("XP4007", path=log_path, why=str(e), file=log_path) from None
    src = Path(source or header["source"])
    if not src.is_file() and not source and header.get("source_rel"):
        src = Path.cwd() / header["source_rel"]   # the log was written in another checkout
        if header.get("spec_rel") and (Path.cwd() / header["spec_rel"]).is_file():
            header = dict(header, spec_path=str(Path.cwd() / header["spec_rel"]))
    if not src.is_file():
        raise XPError("XP1201", path=src, file=src)
    text = src.read_text()
    if sha256_text(text) != header.get("source_sha256"):
        raise XPError("XP4006", seq="header", what="source file", want=header.get("source_sha256", "?")[:16],
                      got=sha256_text(text)[:16], file=src)
    spec = parse_spec(header["spec"], Path(header["spec_path"]) if header.get("spec_path") else None)
    prog = parse_file(src, spec.dialect)
    params = [p.name for p in prog.func(spec.entry).params]
    cur_text = print_program(prog, prog.dialect)
    res = ReplayResult(False, 0, None)
    launch = dict(spec.launch)
    verified_hashes = {e["program_hash"] for e in events if e["type"] == "test" and e.get("verified")}
    cur_step, pre = object(), (prog, cur_text, launch)
    source_state = (prog, cur_text, launch)
    for ev in events:
        if ev["type"] == "note" and ev.get("what") == "next plan":
            prog, cur_text, launch = source_state   # the next plan starts again from the source
            continue
        if ev["type"] == "parse":
            if _h(cur_text) != ev["program_hash"]:
                raise XPError("XP4006", seq=ev["seq"], what="parse", want=ev["program_hash"], got=_h(cur_text))
        elif ev["type"] == "pass" and ev.get("applied"):
            if ev.get("step", ev["seq"]) != cur_step:   # a new step starts from the program adopted so far
                cur_step, pre = ev.get("step", ev["seq"]), (prog, cur_text, launch)
            pre_prog, pre_text, pre_launch = pre
            if _h(pre_text) != ev["in_hash"]:
                raise XPError("XP4006", seq=ev["seq"], what=f"input of {ev['name']}", want=ev["in_hash"],
                              got=_h(pre_text))
            call = dict(ev["params"])
            if ev["name"] == "loop_recovery":
                call.setdefault("launch", _launch_to_params(spec.launch, spec, params))
            if ev.get("proposer", "symbolic") != "symbolic":
                # an LLM-proposed program: the log holds its text (the answer the model gave)
                from .frontend import parse_text
                if "program_text" not in ev:
                    raise XPError("XP4006", seq=ev["seq"], what="LLM program missing from the log", want="-", got="-")
                out = (parse_text(ev["program_text"], ev["dialect"], f"<llm:{ev['name']}>"), ev.get("launch") or pre_launch)
            else:
                out = get_pass(ev["name"]).apply(pre_prog, entry=spec.entry, **call)
            new_prog, new_launch = out if isinstance(out, tuple) else (out, pre_launch)
            new_text = print_program(new_prog, new_prog.dialect)
            if _h(new_text) != ev["out_hash"]:
                raise XPError("XP4006", seq=ev["seq"], what=f"output of {ev['name']}", want=ev["out_hash"],
                              got=_h(new_text))
            if ev["out_hash"] in verified_hashes:
                prog, cur_text, launch = new_prog, new_text, new_launch
            res.steps += 1
        elif ev["type"] == "output":
            if _h(cur_text) != ev["program_hash"] and ev.get("verified"):
                raise XPError("XP4006", seq=ev["seq"], what="final output", want=ev["program_hash"], got=_h(cur_text))
            res.output_hash = ev["program_hash"] if ev.get("verified") else None
    res.ok = True
    if reverify:
        from .verify.tester import compare_kernels
        with tempfile.TemporaryDirectory(prefix="xpiler-reverify-") as tmp:
            path = Path(tmp) / f"replayed{DIALECT_EXT[prog.dialect]}"
            path.write_text(cur_text)
            cspec = spec.with_dialect(prog.dialect, spec.entry, _launch_to_spec(launch, spec, params))
            cspec.path = path.with_name(path.name + ".toml")
            if spec.reference and header.get("spec_path"):
                f, fn = spec.reference.split(":")
                cspec.reference = f"{(Path(header['spec_path']).parent / f).resolve()}:{fn}"
            cspec.path.write_text(spec_to_toml(cspec))
            v = compare_kernels(path, cspec, against=(src, spec), use_reference=bool(cspec.reference))
            res.reverified, res.substrate = v.verified, v.substrate
            res.messages += [f"{f.code}: {f.message}" for f in v.failures[:5]]
    return res
