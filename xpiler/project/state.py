"""The project state file, ``OUT/project-state.jsonl``: what a directory run did, one JSON
object a line, appended and flushed as it happens, so that a run killed at any moment leaves
a file from which the next run knows which kernels finished.

Lines:

    {"type": "run",   "run": 1, "time": …, "tool": "xpiler", "version": …, "root": …, "to": …,
     "options": {…}, "options_sha256": …}
    {"type": "start", "run": 1, "rel": "gemm/gemm.cu", "input_sha256": …, "options_sha256": …, "mode": "new"}
    {"type": "done",  "run": 1, "rel": "gemm/gemm.cu", "input_sha256": …, "options_sha256": …,
     "mode": "new", "verdict": "verified", "exit_code": 0, … (the kernel's summary record)}

``input_sha256`` covers the kernel source, its spec and the spec's reference file;
``options_sha256`` the options that change a migration's result (target, proposer, LLM, budget,
timeout, seed, tuning, timing). A torn last line (the writer was killed mid-line) is ignored;
any other unreadable line is reported (XP1243) and ignored.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from ..diagnostics import XPError

STATE_FILE = "project-state.jsonl"


def options_sha256(options: dict) -> str:
    return hashlib.sha256(json.dumps(options, sort_keys=True, default=str).encode()).hexdigest()


def input_sha256(source: Path, spec: Path | None, spec_text: str | None = None) -> str:
    """SHA-256 over the source's bytes, the spec's bytes (or the inferred spec's text) and the
    bytes of the spec's reference file, each length-prefixed."""
    h = hashlib.sha256()

    def part(tag: str, data: bytes):
        h.update(f"{tag}:{len(data)}:".encode())
        h.update(data)
    part("source", Path(source).read_bytes())
    if spec_text is not None:
        part("spec", spec_text.encode())
    elif spec is not None:
        data = Path(spec).read_bytes()
        part("spec", data)
        ref = _reference_of(spec, data)
        if ref is not None and ref.is_file():
            part("reference", ref.read_bytes())
    return h.hexdigest()


def _reference_of(spec: Path, data: bytes) -> Path | None:
    try:
        import tomllib
        obj = tomllib.loads(data.decode("utf-8"))
        py = obj.get("reference", {}).get("python")
    except Exception:   # a broken spec: the migration says why (hashing it is enough here)
        return None
    if not isinstance(py, str) or ":" not in py:
        return None
    return Path(spec).parent / py.rsplit(":", 1)[0]


class ProjectState:
    """Reads the records of earlier runs; appends this run's records."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.done: dict[str, dict] = {}        # rel -> the latest 'done' record
        self.started: dict[str, dict] = {}     # rel -> a 'start' record with no 'done' after it
        self.runs = 0
        self.warnings: list[XPError] = []
        self._f = None
        if self.path.is_file():
            self._read()

    def _read(self) -> None:
        with open(self.path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for i, line in enumerate(lines, 1):
            text = line.strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
                if not isinstance(obj, dict):
                    raise ValueError("not a JSON object")
            except ValueError as e:
                if i == len(lines) and not line.endswith("\n"):
                    continue        # torn last line: the writer was killed while writing it
                self.warnings.append(XPError("XP1243", line=i, path=self.path, why=str(e)[:80], file=self.path))
                continue
            kind, rel = obj.get("type"), obj.get("rel")
            if kind == "run":
                self.runs = max(self.runs, int(obj.get("run", 0) or 0))
            elif kind == "start" and isinstance(rel, str):
                self.started[rel] = obj
            elif kind == "done" and isinstance(rel, str):
                self.done[rel] = obj
                self.started.pop(rel, None)

    def open(self, header: dict) -> int:
        """Start this run's records; returns its run number."""
        self.run = self.runs + 1
        self._f = open(self.path, "a", encoding="utf-8")
        self.append({"type": "run", "run": self.run, "time": round(time.time(), 3), **header})
        return self.run

    def append(self, obj: dict) -> None:
        obj = {"type": obj.get("type"), "run": getattr(self, "run", 0), **obj}
        self._f.write(json.dumps(obj, default=str) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None and not self._f.closed:
            self._f.close()
