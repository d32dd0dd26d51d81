"""Ownership of a migration's output folder (``xpiler migrate -o DIR``).

xpiler replaces only files it can prove it wrote. The marker file ``DIR/.xpiler-output`` is a
JSON record of every file a run wrote there and the sha256 of its content when the run ended:

    {"tool": "xpiler", "format": 2, "files": {"relu.cu": "<sha256>", "provenance.jsonl": null, ...}}

A later run may replace a file only when the marker lists it with the hash the file still has.
``null`` means a run claimed the file and did not finish (killed, crashed): the file is still
ours, so ``--resume`` and a plain re-run work after an interruption. Anything else (a file the
marker does not list, or one edited since) is the user's: the run is refused with XP1204
naming the file, before anything is written, unless ``force`` is given. The run's inputs
(source, spec, reference) are never replaced, not even with ``force`` (XP1208).

Scratch files live in a temporary folder outside DIR, removed when the run's OutDir goes.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import weakref
from pathlib import Path

from ..diagnostics import XPError

MARKER = ".xpiler-output"
FORMAT = 2
_LEGACY_HEAD = "written by xpiler migrate"   # the plain-text marker of earlier versions (no hashes)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


class OutDir:
    """The output folder of one run. ``check`` validates everything and writes nothing;
    ``claim`` is called before each write (it creates the folder and records the name);
    ``finish`` records the hashes of what was written."""

    def __init__(self, path: str | Path, *, force: bool = False):
        self.path = Path(path)
        self.force = force
        self.allowed: set[str] = set()
        self.claimed: list[str] = []
        self.files: dict[str, str | None] = {}
        self._opened = False
        self._scratch: Path | None = None

    # -- reading the marker ---------------------------------------------------------------
    def _read_marker(self) -> tuple[dict[str, str | None], str | None]:
        """(files recorded, None) or ({}, why the marker is not ours)."""
        m = self.path / MARKER
        if not m.exists():
            return {}, None
        try:
            text = m.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            return {}, f"unreadable ({type(e).__name__})"
        if text.startswith(_LEGACY_HEAD):
            return {}, None       # an earlier xpiler: ours, but it recorded no hashes
        try:
            obj = json.loads(text)
            files = obj["files"] if obj.get("tool") == "xpiler" else None
        except (ValueError, AttributeError, KeyError, TypeError):
            files = None
        if not isinstance(files, dict):
            return {}, "not an xpiler record"
        return {str(k): (v if isinstance(v, str) else None) for k, v in files.items()}, None

    def owns(self, name: str) -> bool:
        """Whether ``name`` in the folder was written by xpiler and is unchanged since."""
        p = self.path / name
        if name not in self.files:
            return False
        want = self.files[name]
        return want is None or (p.is_file() and sha256_file(p) == want)

    # -- validation (writes nothing) --------------------------------------------------------
    def check(self, names: list[str], inputs: dict[str, Path | None]) -> None:
        """Refuse the run before anything is written: DIR is a file (XP1207); a name to write
        is one of the run's inputs (XP1208, even with force); a name to write exists and is
        not provably ours (XP1204, unless force). ``inputs`` maps a description ('the source
        kernel') to its path."""
        d = self.path
        if d.exists() and not d.is_dir():
            raise XPError("XP1207", file=d, path=d)
        for name in names:
            target = d / name
            for what, p in inputs.items():
                if p is not None and _same_file(target, Path(p)):
                    raise XPError("XP1208", file=p, path=d, name=name, what=what)
        self.allowed = set(names) | {MARKER}
        if not d.is_dir():   # it will be created: the nearest existing folder above must allow that
            up = d.absolute().parent
            while not up.exists() and up != up.parent:
                up = up.parent
            if not up.is_dir():
                raise XPError("XP1209", file=d, path=d, detail=f"{up} is a file, not a folder")
            if not os.access(up, os.W_OK | os.X_OK):
                raise XPError("XP1209", file=d, path=d, detail=f"no permission to create folders in {up}")
            return
        if not os.access(d, os.W_OK | os.X_OK):
            raise XPError("XP1209", file=d, path=d, detail="no permission to write there")
        self.files, bad_marker = self._read_marker()
        if bad_marker and not self.force:
            raise XPError("XP1204", file=d / MARKER, path=d, name=MARKER,
                          why=f"it is xpiler's record of the files it wrote, and this one is {bad_marker}")
        for name in names:
            p = d / name
            if not (p.exists() or p.is_symlink()):
                continue
            if p.is_dir() and not p.is_symlink():
                raise XPError("XP1204", file=p, path=d, name=name, why="it is a folder")
            if self.force or self.owns(name):
                continue
            why = ("xpiler wrote it, but it was changed since" if name in self.files
                   else "xpiler did not write it")
            raise XPError("XP1204", file=p, path=d, name=name, why=why)

    # -- writing ------------------------------------------------------------------------------
    def _save(self) -> None:
        obj = {"tool": "xpiler", "format": FORMAT,
               "note": "files xpiler wrote here and their sha256; null: being written by a run that did not finish. "
                       "xpiler replaces only these, and only while unchanged.",
               "files": dict(sorted(self.files.items()))}
        tmp = self.path / (MARKER + ".tmp")
        tmp.write_text(json.dumps(obj, indent=1) + "\n")
        os.replace(tmp, self.path / MARKER)

    def open(self) -> None:
        if self._opened:
            return
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self._save()
        except OSError as e:
            raise XPError("XP1209", file=self.path, path=self.path, detail=f"{type(e).__name__}: {e.strerror or e}") \
                from None
        self._opened = True

    def claim(self, name: str) -> Path:
        """The path to write ``name`` at, recorded (as being written) in the marker first."""
        if name not in self.allowed:  # every name must have been checked before the run wrote anything
            raise AssertionError(f"xpiler: {name} was not checked before writing into {self.path}")
        self.open()
        p = self.path / name
        if name not in self.claimed:
            self.files[name] = None
            self.claimed.append(name)
            self._save()
            if p.is_symlink():  # replace the link itself (--force), never write through it
                p.unlink()
        return p

    def write_text(self, name: str, text: str) -> Path:
        p = self.claim(name)
        p.write_text(text)
        return p

    def write_bytes(self, name: str, data: bytes) -> Path:
        p = self.claim(name)
        p.write_bytes(data)
        return p

    def copy(self, src: Path, name: str) -> Path:
        p = self.claim(name)
        shutil.copyfile(src, p)
        return p

    def finish(self) -> None:
        """Record the hash of every file this run wrote; forget records of files now gone."""
        if not self._opened:
            return
        for name in list(self.files):
            p = self.path / name
            if not p.is_file():
                del self.files[name]
            elif name in self.claimed:
                self.files[name] = sha256_file(p)
        self._save()

    def scratch(self) -> Path:
        """A scratch folder outside DIR, removed when this object is garbage-collected (the
        run ended, normally or not) or by ``cleanup``."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="xpiler-work-"))
            self._finalizer = weakref.finalize(self, shutil.rmtree, str(self._scratch), True)
        return self._scratch

    def cleanup(self) -> None:
        if self._scratch is not None:
            self._finalizer()


# -- what a migration writes, and what it must never overwrite --------------------------------
def reference_file(spec) -> Path | None:
    """The spec's reference file (``[reference] python = "file.py:fn"``, relative to the spec)."""
    if not spec.reference or spec.path is None:
        return None
    return Path(spec.path).parent / spec.reference.rsplit(":", 1)[0]


def migration_outputs(stem: str, to: str, spec) -> list[str]:
    """Every name a migration of ``stem`` to ``to`` may write into its output folder: the kernel
    and its spec, or an unverified candidate (in any dialect a pass may end in) with its spec
    and failing test; the copied reference; the log; the report and its figures."""
    from ..report import REPORT_FILES
    from ..spec import DIALECT_EXT
    out = f"{stem}{DIALECT_EXT[to]}"
    names = [out, out + ".toml", "provenance.jsonl", *REPORT_FILES]
    for ext in dict.fromkeys(DIALECT_EXT.values()):
        unv = f"{stem}.unverified{ext}"
        names += [unv, unv + ".toml", unv + ".failing_test.py"]
    ref = reference_file(spec)
    if ref is not None:
        names.append(ref.name)
    return names


def migration_inputs(src: Path, spec) -> dict[str, Path | None]:
    return {"the source kernel": Path(src), "the spec": Path(spec.path) if spec.path else None,
            "the spec's reference": reference_file(spec)}
