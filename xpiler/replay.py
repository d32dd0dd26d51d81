"""``xpiler replay LOG [--reverify] [--source SRC] [--output FILE]``: re-derive a logged
migration and check it against the log and against the files it wrote.

What replay checks, in this order (docs/provenance.md, "Replay"):

1. the log is complete: schema 2, events numbered 0, 1, ... without a gap, exactly one ``output``
   event, and the closing ``end`` event as its last line (a log cut after its header or half-way,
   or one whose final events were dropped, is refused with XP4008);
2. the header matches what replay re-derives: the source's SHA-256 (XP4006), the spec text parses,
   equals the spec file the log points to when that file is present, and names the source dialect
   and an entry function of the source; every pass run for a target ran for the header's target
   (XP4010);
3. every applied pass event is re-applied with its logged parameters (LLM-proposed programs are
   taken from the log's answers) and the printed program after each step must have the logged
   hash (XP4006); a step that cannot be re-applied at all (edited parameters, an unknown pass, an
   LLM program that does not parse) is XP4009 naming the event;
4. the final output: a verified output is the last adopted program and has the target's dialect;
   the output file's text (with the host launcher when the log shows it verified) is re-derived
   and its SHA-256 must be the one the ``end`` event recorded (XP4006); the end event's program
   hash and verified flag must be the output event's (XP4014);
5. the files on disk (found beside the log by their recorded relative path, else at their
   recorded absolute path; ``--output FILE`` names the output kernel explicitly) must have the
   recorded SHA-256 (XP4011); a file that is gone is said (XP4012 warning) and not compared;
6. the SHA-256 over every line before the end event must be the one the end event recorded
   (XP4013: the log was edited in a way the checks above do not see, e.g. a test event's figures).

Every hash above is recomputed by replay itself, so a log edited consistently (hashes recomputed)
is still refused where the edit changes what the source re-derives to. ``--reverify`` re-runs the
differential tests of the final program on the substrates available now (e.g. a log made on a
CPU-only machine, reverified where a GPU is present).
"""
from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .diagnostics import XPError
from .provenance import SCHEMA_VERSION, lines_sha256, log_lines, read_log, sha256_file, sha256_text
from .spec import DIALECT_EXT, parse_spec, spec_to_toml

#: diagnostics replay raises itself (they pass through the per-event wrapping untouched)
_REPLAY_CODES = {"XP4006", "XP4007", "XP4008", "XP4009", "XP4010", "XP4011", "XP4013", "XP4014", "XP4113"}


@dataclass
class ReplayResult:
    ok: bool
    steps: int
    output_hash: str | None
    verified: bool | None = None          # the logged migration's verdict (replay does not test)
    output_file: Path | None = None       # the output file compared with the re-derived output
    files_checked: list[str] = field(default_factory=list)
    warnings: list[XPError] = field(default_factory=list)
    reverified: bool | None = None
    substrate: str | None = None
    messages: list[str] = field(default_factory=list)
    # the re-derived output as IR (with its launch), the spec every migrated program of this log
    # is tested against (launch sizes added as parameters) and the entry's parameter names: what
    # a caller needs to apply further steps to the output and write a spec for each (e.g.
    # benchmarks/cost_rank.py)
    program: object = None
    kernel_spec: object = None
    kernel_params: list = field(default_factory=list)
    step_context: object = None
    # every program the log's steps re-derived, by printed hash: (program, text)
    derived: dict = field(default_factory=dict)


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _check_complete(log_path: Path, header: dict, events: list) -> tuple[dict, dict]:
    """The output and end events of a complete log, or XP4007/XP4008."""
    schema = header.get("schema")
    if schema != SCHEMA_VERSION:
        if isinstance(schema, int) and schema < SCHEMA_VERSION:
            raise XPError("XP4008", path=log_path, file=log_path,
                          why=f"it was written with log schema {schema}, before logs had a closing `end` event; "
                              "run the migration again to get a log replay can check")
        raise XPError("XP4007", path=log_path, file=log_path, why=f"unknown log schema {schema!r}")
    if not events:
        raise XPError("XP4008", path=log_path, file=log_path,
                      why="it has no events after its header (cut after the header, or the run died at once)")
    for i, ev in enumerate(events):
        if not isinstance(ev, dict) or not isinstance(ev.get("type"), str):
            raise XPError("XP4007", path=log_path, file=log_path, why=f"line {i + 2} is not an event")
        if ev.get("seq") != i:
            raise XPError("XP4008", path=log_path, file=log_path,
                          why=f"line {i + 2} has seq {ev.get('seq')!r} where {i} was due: events are missing "
                              "or out of order (the log was cut or edited)")
    last = events[-1]
    if last["type"] != "end":
        raise XPError("XP4008", path=log_path, file=log_path,
                      why=f"no closing `end` event: the log stops after event {last['seq']} ({last['type']}); "
                          "the run was interrupted or the log was cut")
    ends = [e for e in events if e["type"] == "end"]
    if len(ends) > 1:
        raise XPError("XP4008", path=log_path, file=log_path,
                      why=f"{len(ends)} end events (event {ends[0]['seq']} is not the last)")
    outs = [e for e in events if e["type"] == "output"]
    if len(outs) != 1:
        raise XPError("XP4008", path=log_path, file=log_path,
                      why="no `output` event: the final output is not in the log" if not outs
                      else f"{len(outs)} output events where a migration writes one")
    return outs[0], last


def _locate(rec: dict, log_dir: Path) -> Path | None:
    """A file the end event recorded: beside the log by its relative path (the log and its
    outputs copied together, e.g. to another checkout), else at its absolute path."""
    for p in ((log_dir / rec["rel"]) if rec.get("rel") else None, Path(rec["path"]) if rec.get("path") else None):
        if p is not None and p.is_file():
            return p
    return None


def replay(log_path: str | Path, *, reverify: bool = False, source: str | Path | None = None,
           output: str | Path | None = None) -> ReplayResult:
    from .frontend import parse_file
    from .migration.driver import _instance_params, _launch_to_params, _launch_to_spec, _preconditions_to_params
    from .printers import print_program

    log_path = Path(log_path)
    try:
        header, events = read_log(log_path)
        raw = log_lines(log_path)
    except (OSError, ValueError) as e:
        raise XPError("XP4007", path=log_path, why=str(e), file=log_path) from None
    except AttributeError:   # a first line that is JSON but not an object
        raise XPError("XP4007", path=log_path, why="the first line is not a header object", file=log_path) from None

    # 1. a complete log ------------------------------------------------------------------------
    out_ev, end_ev = _check_complete(log_path, header, events)
    for key in ("source", "source_sha256", "spec", "target", "source_dialect"):
        if not isinstance(header.get(key), str):
            raise XPError("XP4007", path=log_path, file=log_path, why=f"the header has no '{key}'")
    if len(raw) != len(events) + 1:
        raise XPError("XP4008", path=log_path, file=log_path,
                      why=f"{len(raw) - len(events) - 1} line(s) after the end event are not events")

    # 2. the header against what is re-derived ---------------------------------------------------
    target = header["target"]
    if target not in DIALECT_EXT:
        raise XPError("XP4010", key="target", detail=f"'{target}' is not a dialect", file=log_path)
    src = Path(source or header["source"])
    spec_file = Path(header["spec_path"]) if header.get("spec_path") else None
    if not src.is_file() and not source and header.get("source_rel"):
        src = Path.cwd() / header["source_rel"]   # the log was written in another checkout
        if header.get("spec_rel") and (Path.cwd() / header["spec_rel"]).is_file():
            spec_file = Path.cwd() / header["spec_rel"]
    if not src.is_file():
        raise XPError("XP1201", path=src, file=src)
    text = src.read_text(errors="replace")
    if sha256_text(text) != header["source_sha256"]:
        raise XPError("XP4006", seq="header", what="source file", want=header["source_sha256"][:16],
                      got=sha256_text(text)[:16], file=src)
    try:
        spec = parse_spec(header["spec"], spec_file)
    except XPError as e:
        raise XPError("XP4010", key="spec", detail=f"the spec text does not parse ({e.code}: {e.message})",
                      file=log_path) from None
    if spec_file is not None and spec_file.is_file():
        on_disk = spec_file.read_text(errors="replace")
        if on_disk != header["spec"]:
            raise XPError("XP4010", key="spec", file=log_path,
                          detail=f"it differs from the spec file {spec_file} (sha256 {sha256_text(on_disk)[:16]}, "
                                 f"the header's text {sha256_text(header['spec'])[:16]})")
    if spec.dialect != header["source_dialect"]:
        raise XPError("XP4010", key="source_dialect", file=log_path,
                      detail=f"'{header['source_dialect']}', but the spec says '{spec.dialect}'")
    for ev in events:
        if ev["type"] == "parse" and ev.get("dialect") != header["source_dialect"]:
            raise XPError("XP4010", key="source_dialect", file=log_path,
                          detail=f"'{header['source_dialect']}', but event {ev['seq']} parsed the source as "
                                 f"{ev.get('dialect')!r}")
        if ev["type"] == "pass" and isinstance(ev.get("params"), dict) and "target" in ev["params"] \
                and ev["params"]["target"] != target:
            raise XPError("XP4010", key="target", file=log_path,
                          detail=f"'{target}', but event {ev['seq']} ({ev.get('name')}) ran for target "
                                 f"{ev['params']['target']!r}")
    try:
        prog = parse_file(src, spec.dialect)
        from xpiler.passes.inline_helpers import prepare_source
        prog = prepare_source(prog, spec.entry)   # as the driver does before the first pass
        from .migration.host_c import split_c_launchers
        prog, host_prog = split_c_launchers(prog, spec.entry)   # a c source's own launcher: host code
        # launch sizes added as parameters, as the driver adds them (xpiler/migration/launch_sizes.py);
        # kspec is the spec of every migrated program, spec the source's own
        from .migration.launch_sizes import augment
        prog, kspec, _ = augment(prog, spec, target, text)
        params = [p.name for p in prog.func(spec.entry).params]
    except KeyError:
        raise XPError("XP4010", key="spec", file=log_path,
                      detail=f"its entry '{spec.entry}' is not a function of {src}") from None
    cur_text = print_program(prog, prog.dialect)
    from .schedule.step import StepContext, apply_program
    step_ctx = StepContext(_launch_to_params(kspec.launch, kspec, params), _instance_params(kspec, params),
                           _preconditions_to_params(kspec, params))

    # 3. re-apply every applied step -------------------------------------------------------------
    res = ReplayResult(False, 0, None)
    prog = prog.with_launch(spec.entry, spec.launch)     # the source's launch, as the driver starts
    verified_hashes = {e.get("program_hash") for e in events if e["type"] == "test" and e.get("verified")
                       and e.get("tier", "full") == "full"}     # a screening test verifies nothing
    cur_step, pre = object(), (prog, cur_text)
    source_state = (prog, cur_text)
    derived = {_h(cur_text): source_state}     # every program the log's steps re-derive, by hash
    for ev in events:
        try:
            if ev["type"] == "note" and ev.get("what") == "next plan":
                prog, cur_text = source_state   # the next plan starts again from the source
                continue
            if ev["type"] == "note" and ev.get("what") == "search from":
                # the tuner's chosen steps start from a program an earlier step re-derived
                if ev.get("program_hash") not in derived:
                    raise XPError("XP4006", seq=ev["seq"], what="start of the tuned steps",
                                  want=ev.get("program_hash"), got="no re-derived program has that hash")
                prog, cur_text = derived[ev["program_hash"]]
                cur_step = object()
                continue
            if ev["type"] == "parse":
                if _h(cur_text) != ev["program_hash"]:
                    raise XPError("XP4006", seq=ev["seq"], what="parse", want=ev["program_hash"], got=_h(cur_text))
            elif ev["type"] == "pass" and ev.get("applied"):
                if ev.get("step", ev["seq"]) != cur_step:   # a new step starts from the program adopted so far
                    cur_step, pre = ev.get("step", ev["seq"]), (prog, cur_text)
                pre_prog, pre_text = pre
                if _h(pre_text) != ev["in_hash"]:
                    raise XPError("XP4006", seq=ev["seq"], what=f"input of {ev['name']}", want=ev["in_hash"],
                                  got=_h(pre_text))
                if ev.get("proposer", "symbolic") not in ("symbolic", "search"):
                    # an LLM-proposed program: the log holds its text (the answer the model gave)
                    from .frontend import parse_text
                    if "program_text" not in ev:
                        raise XPError("XP4006", seq=ev["seq"], what="LLM program missing from the log", want="-",
                                      got="-")
                    # (its launch: the one the log recorded with it, else the input's)
                    new_prog = parse_text(ev["program_text"], ev["dialect"], f"<llm:{ev['name']}>")
                    new_prog = new_prog.with_(launches=pre_prog.launches)
                    if ev.get("launch"):
                        new_prog = new_prog.with_launch(spec.entry, ev["launch"])
                else:   # the migration's own code path (xpiler/schedule/step.py)
                    new_prog = apply_program(pre_prog, spec.entry, ev["name"], dict(ev["params"]), step_ctx)
                new_text = print_program(new_prog, new_prog.dialect)
                if _h(new_text) != ev["out_hash"]:
                    raise XPError("XP4006", seq=ev["seq"], what=f"output of {ev['name']}", want=ev["out_hash"],
                                  got=_h(new_text))
                derived.setdefault(ev["out_hash"], (new_prog, new_text))
                if ev["out_hash"] in verified_hashes or ev.get("proposer") == "search" or ev.get("test") == "deferred":
                    # the tuner's chosen steps are one chain (in/out hashes checked here); its route
                    # through loops passes programs it never tested on their own; so does a plan's
                    # deferred step (docs/passes.md, "Deferred tests"): a later step's test covers it,
                    # and the output must still be a verified program (step 4)
                    prog, cur_text = new_prog, new_text
                res.steps += 1
            elif ev["type"] == "repair" and ev.get("accepted"):
                # a Z3 sketch repair: the logged splice (region, sketch, hole values) re-applied to
                # the failing candidate a step re-derived; no solver runs (docs/repair.md)
                from .frontend import parse_text
                from .repair import reapply
                if ev.get("in_hash") not in derived:
                    raise XPError("XP4006", seq=ev["seq"], what="input of a repair", want=ev.get("in_hash"),
                                  got="no re-derived program has that hash")
                b_prog, b_text = derived[ev["in_hash"]]
                r_prog, r_text = reapply(parse_text(b_text, b_prog.dialect, "<candidate>"),
                                         ev["region"]["function"], b_prog.dialect, ev)
                if _h(r_text) != ev["out_hash"]:
                    raise XPError("XP4006", seq=ev["seq"], what="output of a repair", want=ev["out_hash"],
                                  got=_h(r_text))
                r_prog = r_prog.with_(launches=b_prog.launches)   # the splice keeps the candidate's launch
                derived.setdefault(ev["out_hash"], (r_prog, r_text))
                if ev["out_hash"] in verified_hashes:
                    prog, cur_text = r_prog, r_text
                res.steps += 1
        except XPError as e:
            if e.code in _REPLAY_CODES:
                raise
            raise XPError("XP4009", seq=ev.get("seq"), what=f"{ev['type']} {ev.get('name', '')}".strip(),
                          why=f"{e.code}: {e.message}", file=log_path) from None
        except Exception as e:   # a tampered event must never surface as an internal error
            raise XPError("XP4009", seq=ev.get("seq"), what=f"{ev.get('type')} {ev.get('name', '')}".strip(),
                          why=f"{type(e).__name__}: {e}", file=log_path) from None

    # 4. the final output, re-derived ------------------------------------------------------------
    verified = out_ev.get("verified") is True
    ohash = out_ev.get("program_hash")
    if verified:
        if _h(cur_text) != ohash or ohash not in verified_hashes:
            raise XPError("XP4006", seq=out_ev["seq"], what="final verified output", want=ohash, got=_h(cur_text))
        final = (prog, cur_text)
        if prog.dialect != target:
            raise XPError("XP4010", key="target", file=log_path,
                          detail=f"'{target}', but the verified output re-derives as a {prog.dialect} program")
    else:
        if ohash not in derived:
            raise XPError("XP4006", seq=out_ev["seq"], what="final output (no step of the log re-derives it)",
                          want=ohash, got="-")
        final = derived[ohash]
    expected = final[1]
    host_ev = next((e for e in events if e["type"] == "test" and e.get("stage") == "host_launcher"
                    and e.get("verified")), None)
    if verified and host_ev is not None:
        # the file holds the kernel with its migrated host launcher (verified by running it)
        try:
            from .migration.host import attach_host, migrate_host
            fprog, _ = final
            flaunch = fprog.launch_dict(spec.entry)
            hl = flaunch if flaunch != dict(spec.launch) else _launch_to_params(kspec.launch, kspec, params)
            kparams = [p.name for p in fprog.func(spec.entry).params]
            funcs = migrate_host(host_prog or source_state[0], target, spec.entry, hl, kparams, spec=kspec,
                                 source_entry=spec.entry, diagnostics=[])
            expected = print_program(attach_host(fprog, funcs, target), target) if funcs else expected
        except XPError as e:
            raise XPError("XP4009", seq=host_ev["seq"], what="host launcher", why=f"{e.code}: {e.message}",
                          file=log_path) from None
        except Exception as e:
            raise XPError("XP4009", seq=host_ev["seq"], what="host launcher", why=f"{type(e).__name__}: {e}",
                          file=log_path) from None
        if _h(expected) != host_ev.get("program_hash"):
            raise XPError("XP4006", seq=host_ev["seq"], what="host launcher", want=host_ev.get("program_hash"),
                          got=_h(expected))
    if end_ev.get("program_hash") != ohash:
        raise XPError("XP4014", what="output event", file=log_path,
                      detail=f"program hash {end_ev.get('program_hash')} vs {ohash}")
    if end_ev.get("verified") is not verified:
        raise XPError("XP4014", what="output event", file=log_path,
                      detail=f"verified {end_ev.get('verified')!r} vs {verified!r}")
    recs = end_ev.get("files") if isinstance(end_ev.get("files"), list) else []
    recs = [r for r in recs if isinstance(r, dict) and isinstance(r.get("sha256"), str)]
    out_rec = next((r for r in recs if r.get("role") == "output"), None)
    if out_rec is None:
        raise XPError("XP4014", what="output event", file=log_path, detail="it records no output file")
    if out_ev.get("path") and out_rec.get("path") and Path(out_ev["path"]).name != Path(out_rec["path"]).name:
        raise XPError("XP4014", what="output event", file=log_path,
                      detail=f"output file {out_rec['path']} vs {out_ev['path']}")
    if out_rec["sha256"] != sha256_text(expected):
        raise XPError("XP4006", seq=end_ev["seq"], what=f"output file {Path(out_rec.get('path', '?')).name} "
                      "as the end event recorded it", want=out_rec["sha256"][:16], got=sha256_text(expected)[:16])

    # 5. the files on disk -------------------------------------------------------------------------
    log_dir = log_path.resolve().parent
    for rec in recs:
        if rec.get("role") == "output" and output is not None:
            p = Path(output)
            if not p.is_file():
                raise XPError("XP1201", path=p, file=p)
        else:
            p = _locate(rec, log_dir)
        if p is None:
            res.warnings.append(XPError("XP4012", role=rec.get("role", "?"), path=rec.get("path") or rec.get("rel"),
                                        file=log_path))
            continue
        got = sha256_file(p)
        if got != rec["sha256"]:
            raise XPError("XP4011", path=p, got=got[:16], want=rec["sha256"][:16], file=p)
        res.files_checked.append(str(p))
        if rec is out_rec:
            res.output_file = p

    # 6. nothing else in the log was edited ----------------------------------------------------------
    digest = lines_sha256(raw[:-1])
    if digest != end_ev.get("log_sha256"):
        raise XPError("XP4013", got=digest[:16], want=str(end_ev.get("log_sha256"))[:16], file=log_path)

    res.ok, res.output_hash, res.verified = True, ohash, verified
    prog, cur_text = final
    res.program, res.kernel_spec, res.kernel_params = prog, kspec, list(params)
    res.step_context, res.derived = step_ctx, derived
    launch = prog.launch_dict(spec.entry)
    if reverify:
        from .verify.tester import compare_kernels
        with tempfile.TemporaryDirectory(prefix="xpiler-reverify-") as tmp:
            path = Path(tmp) / f"replayed{DIALECT_EXT[prog.dialect]}"
            path.write_text(cur_text)
            cspec = kspec.with_dialect(prog.dialect, spec.entry, _launch_to_spec(launch, kspec, params))
            cspec.path = path.with_name(path.name + ".toml")
            if spec.reference and spec_file is not None:
                f, fn = spec.reference.split(":")
                cspec.reference = f"{(spec_file.parent / f).resolve()}:{fn}"
            cspec.path.write_text(spec_to_toml(cspec))
            v = compare_kernels(path, cspec, against=(src, spec), use_reference=bool(cspec.reference))
            res.reverified, res.substrate = v.verified, v.substrate
            res.messages += [f"{f.code}: {f.message}" for f in v.failures[:5]]
    return res
