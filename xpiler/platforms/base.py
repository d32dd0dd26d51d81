"""What every platform module shares: build caching, compiler invocation, error mapping."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
import subprocess
from pathlib import Path

from ..diagnostics import XPError


def cache_root() -> Path:
    root = Path(os.environ.get("XPILER_CACHE", Path.home() / ".cache" / "xpiler"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def content_key(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def tree_digest(folder: Path) -> str:
    """Hash of every file under ``folder`` (runtime headers), so cached builds follow edits."""
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:24]


def which(name: str) -> str | None:
    return shutil.which(name)


def emulator_cxx() -> str:
    """The C++ compiler that builds the emulators (SIMT, BANG): ``g++`` unless ``XPILER_CXX``
    names another (CI builds the self-tests with the newest clang Debian packages too)."""
    return os.environ.get("XPILER_CXX") or "g++"


_LOC = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:fatal )?error:\s*(?P<msg>.*)$", re.M)


def compile_or_raise(argv: list[str], code: str, src_name: str, cwd: Path, timeout: float = 300,
                     user_file: str | None = None) -> str:
    """Run a compiler; on failure raise ``XPError(code)`` at the first error's location."""
    from .. import deadline   # a migration's --budget cuts a build too (docs/verification.md)
    limit = deadline.cap(timeout)
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        deadline.check("a build")   # the budget, not the kernel, stopped it: not a build failure
        raise XPError(code, detail=f"compiler timed out after {limit:.0f} s", file=user_file) from None
    except FileNotFoundError:
        raise XPError("XP2004", what=argv[0], why="compiler not found") from None
    log = p.stdout + p.stderr
    if p.returncode != 0:
        m = None
        for m2 in _LOC.finditer(log):
            if src_name in m2.group("file") or (user_file and Path(user_file).name in m2.group("file")):
                m = m2
                break
        m = m or _LOC.search(log)
        first = m.group("msg") if m else (log.strip().splitlines() or ["unknown error"])[-1]
        err = XPError(code, detail=first, file=user_file or (m.group("file") if m else None),
                      line=int(m.group("line")) if m else None,
                      col=int(m.group("col")) if m and m.group("col") else None)
        err.log = log  # type: ignore[attr-defined]
        raise err
    return log


def compile_cached(key: str, files: dict[str, str], argv: list[str], code: str, src: Path) -> Path:
    """Build ``run`` from ``files`` with ``argv`` in the build cache under ``key`` (a content
    hash), or return the executable a previous build left there. The build happens in a private
    folder that is renamed into place, so parallel builds of the same key never see a half-written
    executable; a failed build leaves nothing behind and raises ``XPError(code)`` at the user's line."""
    out_dir = cache_root() / "build" / key
    exe = out_dir / "run"
    if exe.is_file():
        return exe
    tmp = out_dir.with_name(key + f".tmp{os.getpid()}-{threading.get_ident()}")
    tmp.mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        (tmp / name).write_text(body)
    from .pch import precompiled   # (pch.py builds on this module)
    try:
        compile_or_raise(precompiled(argv, set(files)), code, src.name, tmp, user_file=str(src))
    except XPError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        tmp.rename(out_dir)
    except OSError:  # another process built the same key first
        shutil.rmtree(tmp, ignore_errors=True)
    return exe


def blank_noncode(text: str, *, preprocessor: bool = False) -> str:
    """``text`` with comments and the contents of string/character literals blanked (and, with
    ``preprocessor``, preprocessor lines with their continuations): same length, newlines kept,
    so textual scans and rewrites never match inside them."""
    out = list(text)
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if at_line_start and c in " \t":
            i += 1
            continue
        if preprocessor and at_line_start and c == "#":  # preprocessor line, with continuations
            j = i
            while j < n:
                if text[j] == "\n" and text[j - 1] != "\\":
                    break
                j += 1
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
            continue
        at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)
