"""Provenance logs (DESIGN §3.4): one JSON object a line, flushed per event.

The first line is the header (schema version, tool version and git revision, source hash,
spec, target, toolchain versions, substrates, seeds, LLM backend and model, configuration);
every later line is one event: ``parse``, ``pass``, ``llm_call``, ``test``, ``repair``,
``tune``, ``output``, ``perf``, ``asm`` (``--emit-asm``), ``note``, and last ``end``, the closing event of a finished run
(:meth:`ProvenanceLog.end`: the SHA-256 of every output file as written, the output program
hash, the verified flag and the SHA-256 of every line before it). Each event carries a sequence
number and a timestamp. A run killed half-way keeps every event up to its last step (each line
is flushed and fsync'ed) but has no ``end`` event, so ``xpiler replay`` refuses it as incomplete.
Secrets never appear: every object goes through :func:`redact` before it is written.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

from . import __version__

SCHEMA_VERSION = 2   # 2: logs of finished runs end with an ``end`` event (replay requires it)
EVENT_TYPES = ("parse", "pass", "llm_call", "test", "repair", "tune", "output", "perf", "asm", "note", "end")

_SECRET_KEYS = re.compile(r"(api[_-]?key|authorization|token|secret|password)", re.I)
_SECRET_VALUES = [re.compile(r"sk-[A-Za-z0-9_\-]{8,}"), re.compile(r"Bearer\s+[A-Za-z0-9._\-]+"),
                  re.compile(r"hf_[A-Za-z0-9]{8,}")]


def _secret_env_values() -> list[str]:
    vals = []
    for k, v in os.environ.items():
        if v and len(v) >= 8 and _SECRET_KEYS.search(k):
            vals.append(v)
    return vals


def redact(obj: Any, _extra: list[str] | None = None) -> Any:
    """A copy of ``obj`` with API keys, tokens and Authorization headers replaced by '<redacted>'."""
    extra = _extra if _extra is not None else _secret_env_values()
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if isinstance(k, str) and _SECRET_KEYS.search(k) and k not in ("tokens", "tokens_in", "tokens_out",
                                                                             "max_tokens"):
                out[k] = "<redacted>"
            else:
                out[k] = redact(v, extra)
        return out
    if isinstance(obj, (list, tuple)):
        return [redact(v, extra) for v in obj]
    if isinstance(obj, str):
        s = obj
        for pat in _SECRET_VALUES:
            s = pat.sub("<redacted>", s)
        for v in extra:
            if v in s:
                s = s.replace(v, "<redacted>")
        return s
    return obj


def sha256_text(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def sha256_file(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def log_lines(path: str | Path) -> list[bytes]:
    """The complete lines of a log as written (no newline; blank lines and a torn last line left out)."""
    data = Path(path).read_bytes()
    lines = [ln for ln in data.split(b"\n")[:-1] if ln.strip()]   # the text after the last newline is torn
    return lines


def lines_sha256(lines: list[bytes]) -> str:
    """The digest the ``end`` event records: SHA-256 over every line before it, each with its newline."""
    h = hashlib.sha256()
    for ln in lines:
        h.update(ln + b"\n")
    return h.hexdigest()


def git_revision() -> str | None:
    try:
        root = Path(__file__).resolve().parent.parent
        p = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        if p.returncode == 0:
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                   capture_output=True, text=True, timeout=5).stdout.strip()
            return p.stdout.strip() + ("+dirty" if dirty else "")
    except Exception:
        pass
    return None


def _version(cmd: list[str]) -> str | None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        out = (p.stdout or p.stderr).strip().splitlines()
        return out[0] if out else None
    except Exception:
        return None


def toolchain_versions() -> dict[str, str | None]:
    return {"gcc": _version(["gcc", "--version"]), "g++": _version(["g++", "--version"]),
            "nvcc": (_version(["nvcc", "--version"]) and
                     next((l for l in subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
                           .splitlines() if "release" in l), None)) if _version(["which", "nvcc"]) else None,
            "clang-15": _version(["clang++-15", "--version"]), "python": platform.python_version()}


class ProvenanceLog:
    """Append-only JSONL writer. ``log.event("pass", name=..., params=...)``."""

    def __init__(self, path: str | Path, header: dict | None = None, *, append: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._seq = 0
        self._digest = hashlib.sha256()   # over every line written so far (the end event records it)
        self._last_output: dict | None = None
        if append and self.path.is_file():
            _, events = read_log(self.path)
            self._seq = (events[-1]["seq"] + 1) if events else 0
            for ln in log_lines(self.path):
                self._digest.update(ln + b"\n")
            self._f = open(self.path, "a", encoding="utf-8")
        else:
            self._f = open(self.path, "w", encoding="utf-8")
            h = {"type": "header", "schema": SCHEMA_VERSION, "tool": "xpiler", "version": __version__,
                 "git": git_revision(), "host": platform.node(), "time": time.time()}
            h.update(header or {})
            self._write(h)

    def _write(self, obj: dict) -> None:
        line = json.dumps(redact(obj), sort_keys=False, default=str)
        self._digest.update(line.encode() + b"\n")
        self._f.write(line + "\n")
        self._f.flush()
        try:
            os.fsync(self._f.fileno())
        except OSError:
            pass

    def event(self, type: str, **fields) -> dict:
        if type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type}")
        ev = {"type": type, "seq": self._seq, "time": round(time.time(), 3), **fields}
        self._seq += 1
        self._write(ev)
        if type == "output":
            self._last_output = ev
        return ev

    def end(self, files: dict[str, str | Path | None], **fields) -> dict:
        """Write the closing event of a finished run: ``files`` maps a role (``output``, ``spec``,
        ``failing_test``) to a file just written (None: not written); each is recorded with its
        absolute path, its path relative to the log's folder and the SHA-256 of its bytes. The
        output program hash and verified flag are those of the last ``output`` event; ``log_sha256``
        covers every line before this one. Replay refuses a log without it."""
        recs = []
        base = self.path.resolve().parent
        for role, p in files.items():
            if p is None or not Path(p).is_file():
                continue
            p = Path(p).resolve()
            recs.append({"role": role, "path": str(p), "rel": os.path.relpath(p, base), "sha256": sha256_file(p)})
        out = self._last_output or {}
        return self.event("end", program_hash=out.get("program_hash"), verified=bool(out.get("verified")),
                          files=recs, log_sha256=self._digest.hexdigest(), **fields)

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_log(path: str | Path) -> tuple[dict, list[dict]]:
    """(header, events) of a log; a torn last line (killed writer) is ignored."""
    header, events = None, []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                break  # the writer died mid-line; everything before is intact
            if i == 0:
                header = obj
            else:
                events.append(obj)
    if header is None or header.get("type") != "header":
        raise ValueError(f"{path}: not an xpiler provenance log (no header line)")
    return header, events


def iter_events(path: str | Path, type: str | None = None) -> Iterator[dict]:
    for ev in read_log(path)[1]:
        if type is None or ev.get("type") == type:
            yield ev
