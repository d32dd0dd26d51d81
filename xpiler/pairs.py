"""``xpiler export-pairs LOGS... -o pairs.jsonl|.parquet``: verified (source, target) pairs from
provenance logs, one record per distinct (source, target) pair (docs/dataset.md).

A log gives a pair only when it is the closed log of a finished, verified migration whose files
are still the ones it vouches for. The checks are replay's own (xpiler/replay.py) where they
need no re-derivation: a complete log (header, events numbered without a gap, one ``output``
event, the ``end`` event last: XP4007/XP4008), the digest over its lines (XP4013), the output
file and every assembly file it recorded with their SHA-256 (XP4011), and the source file with
the header's SHA-256. ``replay=True`` (``--replay``) also re-derives every step (the whole of
``xpiler replay``). A log that fails a check is reported (XP4131 with the reason) and counted,
never fatal; a log of an unverified migration is skipped and counted.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__
from .diagnostics import XPError

LOG_NAME = "provenance.jsonl"
RECORD_VERSION = 1


@dataclass
class ExportSummary:
    logs: int = 0
    exported: int = 0
    duplicates: int = 0
    unverified: int = 0
    refused: list = field(default_factory=list)      # XPError XP4131 per refused log
    notes: list = field(default_factory=list)        # XPError notes (an assembly file gone, ...)
    out: Path | None = None
    bytes: int = 0

    def line(self) -> str:
        return (f"{self.exported} pair(s) written to {self.out} ({self.bytes} bytes) from {self.logs} log(s): "
                f"{self.duplicates} duplicate(s), {self.unverified} unverified, {len(self.refused)} refused")


def find_logs(paths: list[str | Path]) -> list[Path]:
    """Each path as given when it is a file; a folder is searched recursively for provenance.jsonl.
    XP1201 for a path that does not exist."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            out += sorted(p.rglob(LOG_NAME))
        else:
            raise XPError("XP1201", path=p, file=p)
    seen, uniq = set(), []
    for p in out:
        k = p.resolve()
        if k not in seen:
            seen.add(k)
            uniq.append(p)
    return uniq


def _refuse(log: Path, e: XPError | str) -> XPError:
    why = f"{e.code}: {e.message}" if isinstance(e, XPError) else e
    return XPError("XP4131", path=log, why=why, file=log)


def _source_of(header: dict, source_root: Path | None) -> Path | None:
    """The logged source, where it is: its recorded path, else its path relative to the working
    directory (or ``source_root``) when the log was written in another checkout."""
    cands = [Path(header["source"])] if isinstance(header.get("source"), str) else []
    rel = header.get("source_rel")
    if isinstance(rel, str):
        cands += [(source_root or Path.cwd()) / rel]
    return next((c for c in cands if c.is_file()), None)


def _final_test(events: list[dict], program_hash: str) -> dict | None:
    """The test that verified the output program (the last one not answered from a cache)."""
    tests = [e for e in events if e.get("type") == "test" and e.get("program_hash") == program_hash
             and e.get("verified")]
    fresh = [e for e in tests if not e.get("cached")]
    return (fresh or tests or [None])[-1]


def read_pair(log: str | Path, *, replay: bool = False, source_root: Path | None = None,
              notes: list | None = None) -> dict | None:
    """The pair record of one log; None for a log of an unverified migration. Raises XP4131
    (wrapping the check that failed) for a log that cannot be exported."""
    from .provenance import lines_sha256, log_lines, read_log, sha256_file, sha256_text
    from .replay import _check_complete, _locate
    log = Path(log)
    try:
        header, events = read_log(log)
        raw = log_lines(log)
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise _refuse(log, XPError("XP4007", path=log, why=str(e))) from None
    except AttributeError:
        raise _refuse(log, XPError("XP4007", path=log, why="the first line is not a header object")) from None
    try:
        out_ev, end_ev = _check_complete(log, header, events)
    except XPError as e:
        raise _refuse(log, e) from None
    if not (out_ev.get("verified") is True and end_ev.get("verified") is True):
        return None
    digest = lines_sha256(raw[:-1])
    if len(raw) != len(events) + 1 or digest != end_ev.get("log_sha256"):
        raise _refuse(log, XPError("XP4013", got=digest[:16], want=str(end_ev.get("log_sha256"))[:16]))
    for key in ("source_sha256", "spec", "target", "source_dialect"):
        if not isinstance(header.get(key), str):
            raise _refuse(log, XPError("XP4007", path=log, why=f"the header has no '{key}'"))
    recs = [r for r in (end_ev.get("files") or []) if isinstance(r, dict) and isinstance(r.get("sha256"), str)]
    log_dir = log.resolve().parent

    def checked(rec: dict) -> Path | None:
        p = _locate(rec, log_dir)
        if p is not None and sha256_file(p) != rec["sha256"]:
            raise _refuse(log, XPError("XP4011", path=p, got=sha256_file(p)[:16], want=rec["sha256"][:16]))
        return p

    out_rec = next((r for r in recs if r.get("role") == "output"), None)
    if out_rec is None:
        raise _refuse(log, XPError("XP4014", what="output event", detail="it records no output file"))
    out_p = checked(out_rec)
    if out_p is None:
        raise _refuse(log, f"the output file {out_rec.get('rel') or out_rec.get('path')} is gone: the pair has no "
                           "target text")
    src = _source_of(header, source_root)
    if src is None:
        raise _refuse(log, f"the source {header.get('source')} is not found (give --source-root, the checkout "
                           "the log was written in)")
    src_text = src.read_text(errors="replace")
    if sha256_text(src_text) != header["source_sha256"]:
        raise _refuse(log, XPError("XP4006", seq="header", what="source file", want=header["source_sha256"][:16],
                                   got=sha256_text(src_text)[:16]))
    if replay:
        from .replay import replay as _replay
        try:
            _replay(log, source=src)
        except XPError as e:
            raise _refuse(log, e) from None
        except Exception as e:   # never a dead export
            raise _refuse(log, f"replay failed: {type(e).__name__}: {e}") from None
    spec_rec = next((r for r in recs if r.get("role") == "spec"), None)
    spec_p = checked(spec_rec) if spec_rec else None
    # assembly the run wrote (--emit-asm): each file checked against its recorded hash
    asm_ev = next((e for e in events if e.get("type") == "asm"), None)
    target_asm = None
    if asm_ev is not None:
        target_asm = []
        by_role = {r.get("role"): r for r in recs}
        from .asm import per_kernel
        for a in asm_ev.get("artifacts", []):
            a = dict(a)
            figs = dict(a.get("figures") or {})
            for key in ("kernels", "ptxas"):   # logs written before per-kernel figures became records
                if isinstance(figs.get(key), dict):
                    figs[key] = per_kernel(figs[key])
            a["figures"] = figs
            rec = by_role.get(f"asm:{a.get('label')}")
            if rec is not None:
                p = checked(rec)
                if p is None:
                    a.update(available=False, why=f"the file {rec.get('rel')} is gone", text=None)
                    if notes is not None:
                        notes.append(XPError("XP4132", file=log, what=f"assembly {a.get('label')}",
                                             why=f"{rec.get('rel')} is gone"))
                else:
                    a["text"] = p.read_text(errors="replace")
            else:
                a["text"] = None
            target_asm.append(a)
    test = _final_test(events, out_ev.get("program_hash")) or {}
    host = next((e for e in events if e.get("type") == "test" and e.get("stage") == "host_launcher"), None)
    perf = next((e for e in events if e.get("type") == "perf"), None)
    target_text = out_p.read_text(errors="replace")
    t_sha = sha256_file(out_p)
    s_sha = header["source_sha256"]
    log_bytes = log.read_bytes()
    pass_seq = [e.get("name") for e in events if e.get("type") == "pass" and e.get("applied")
                and e.get("out_hash") in {t.get("program_hash") for t in events if t.get("type") == "test"
                                          and t.get("verified")}]
    return {
        "record_version": RECORD_VERSION,
        "id": hashlib.sha256(f"{s_sha}:{t_sha}".encode()).hexdigest()[:16],
        "source_dialect": header["source_dialect"], "target_dialect": header["target"],
        "source_file": header.get("source_rel") or Path(header.get("source", "?")).name,
        "source_sha256": s_sha, "source_text": src_text,
        "target_file": out_p.name, "target_sha256": t_sha, "target_text": target_text,
        "entry": _entry_of(header["spec"]),
        "spec_text": header["spec"],
        "target_spec_text": spec_p.read_text(errors="replace") if spec_p else None,
        "verified": True,
        "substrate": test.get("substrate"), "instances": test.get("instances"), "seeds": test.get("seeds"),
        "max_abs_error": test.get("max_abs_error"), "max_rel_error": test.get("max_rel_error"),
        "host_launcher_verified": host.get("verified") if host else None,
        "passes": pass_seq,
        "source_asm": None, "target_asm": target_asm,
        "timings": {"migration_s": round(float(end_ev.get("time", 0)) - float(header.get("time", 0)), 3)
                    if end_ev.get("time") and header.get("time") else None,
                    "perf": (perf or {}).get("rows"), "perf_note": (perf or {}).get("note")},
        "provenance_sha256": hashlib.sha256(log_bytes).hexdigest(),
        "log_path": str(log),
        "xpiler_version": header.get("version"), "git": header.get("git"),
        "toolchains": header.get("toolchains"),
        "exported_by": __version__,
        "_src_path": str(src),
    }


def _entry_of(spec_text: str) -> str | None:
    try:
        import tomllib
        return tomllib.loads(spec_text).get("entry")
    except Exception:
        return None


def _source_asm(rec: dict, src: Path, cache: dict) -> list[dict]:
    """The source kernel's assembly, built here from the logged source file (its includes
    resolve beside it), cached per source hash."""
    key = rec["source_sha256"]
    if key not in cache:
        from .asm import assemble
        cache[key] = [a.to_json(text=True) for a in assemble(src, rec["source_dialect"])]
    return cache[key]


def export_pairs(paths: list[str | Path], out: str | Path, *, replay: bool = False, source_asm: bool = True,
                 source_root: str | Path | None = None, progress=None) -> ExportSummary:
    """Read every log under ``paths`` and write the pairs to ``out`` (``.jsonl``, or ``.parquet``
    when pyarrow is importable). XP1250 when no log is found, XP1251 for an output name that is
    neither, XP1252 for ``.parquet`` without pyarrow, XP1253 when the output cannot be written."""
    out = Path(out)
    fmt = {".jsonl": "jsonl", ".parquet": "parquet"}.get(out.suffix.lower())
    if fmt is None:
        raise XPError("XP1251", path=out, file=out)
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
            import pyarrow.parquet  # noqa: F401
        except ImportError as e:
            raise XPError("XP1252", path=out, why=str(e), file=out) from None
    logs = find_logs(paths)
    if not logs:
        raise XPError("XP1250", paths=", ".join(str(p) for p in paths))
    if out.exists() and out.is_dir():
        raise XPError("XP1253", path=out, detail="it is a folder", file=out)
    s = ExportSummary(logs=len(logs), out=out)
    seen: set = set()
    records = []
    cache: dict = {}
    for i, lg in enumerate(logs):
        if progress:
            progress(i + 1, len(logs))
        try:
            rec = read_pair(lg, replay=replay, source_root=Path(source_root) if source_root else None, notes=s.notes)
        except XPError as e:
            s.refused.append(e if e.code == "XP4131" else _refuse(lg, e))
            continue
        except Exception as e:   # a log no check foresaw: reported, never a dead export
            s.refused.append(_refuse(lg, f"{type(e).__name__}: {e}"))
            continue
        if rec is None:
            s.unverified += 1
            continue
        key = (rec["source_sha256"], rec["target_sha256"])
        if key in seen:
            s.duplicates += 1
            continue
        seen.add(key)
        src_path = Path(rec.pop("_src_path"))
        if source_asm:
            rec["source_asm"] = _source_asm(rec, src_path, cache)
        records.append(rec)
    s.exported = len(records)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "jsonl":
            with open(tmp, "w", encoding="utf-8") as f:
                for r in records:
                    f.write(json.dumps(r, sort_keys=False) + "\n")
        else:
            _write_parquet(records, tmp)
        os.replace(tmp, out)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise XPError("XP1253", path=out, detail=f"{type(e).__name__}: {e.strerror or e}", file=out) from None
    s.bytes = out.stat().st_size
    return s


#: fields stored as JSON text in parquet (nested values whose keys differ between records)
_JSON_FIELDS = ("instances", "seeds", "passes", "source_asm", "target_asm", "timings", "toolchains")


def _write_parquet(records: list[dict], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    rows = [{k: (json.dumps(v) if k in _JSON_FIELDS and v is not None else v) for k, v in r.items()} for r in records]
    pq.write_table(pa.Table.from_pylist(rows), path)
