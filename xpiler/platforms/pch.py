"""Precompiled forms of the emulators' forced-include headers (gcc/g++ only).

Every emulated build of a SIMT or BANG kernel starts with ``-include xp_simt.h`` / ``xp_bang.h``:
about a thousand lines of C++ and the standard headers under them, parsed again for every candidate
(on this project's 2-core host: 1.2 of a bang build's 1.4 s). ``precompiled(argv, inputs)`` returns
the same command with that ``-include`` pointed at a stub in the cache whose ``.gch`` was made once
with exactly the build's other flags. The stub's only line includes the real header, so where gcc
finds the ``.gch`` unusable (another compiler version, a flag it checks) it reads the header as
before: the built program is the same either way, only the time differs. ``XPILER_PCH=0`` turns it
off; any failure to make a ``.gch`` falls back to the plain command.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

from .. import deadline
from .base import cache_root, content_key, tree_digest

_GCC = re.compile(r"^(g\+\+|gcc)(-\d+)?$")


def _compile_flags(argv: list[str], inputs: set[str]) -> list[str]:
    """``argv``'s flags without the compiler, the input files, ``-o FILE`` and ``-l`` libraries."""
    out, skip = [], False
    for a in argv[1:]:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a in inputs or a.startswith("-l"):
            continue
        else:
            out.append(a)
    return out


def precompiled(argv: list[str], inputs: set[str]) -> list[str]:
    """``argv`` with its ``-include HEADER`` replaced by a precompiled stub, or ``argv`` unchanged
    (not gcc, no forced include, ``XPILER_PCH=0``, or the ``.gch`` could not be made)."""
    if os.environ.get("XPILER_PCH", "1") == "0" or not _GCC.match(Path(argv[0]).name):
        return argv
    try:
        i = argv.index("-include")
    except ValueError:
        return argv
    header = Path(argv[i + 1])
    if not header.is_absolute() or not header.is_file():
        return argv
    flags = _compile_flags(argv[:i] + argv[i + 2:], inputs)
    dirs = [header.parent] + [Path(f[2:]) for f in flags if f.startswith("-I") and Path(f[2:]).is_dir()]
    key = content_key("pch", shutil.which(argv[0]) or argv[0], str(header), " ".join(flags),
                      *(tree_digest(d) for d in dirs))
    folder = cache_root() / "pch" / key
    stub = folder / header.name
    if not (folder / (header.name + ".gch")).is_file() and not _make(argv[0], flags, header, folder):
        return argv
    return argv[:i + 1] + [str(stub)] + argv[i + 2:]


def _make(compiler: str, flags: list[str], header: Path, folder: Path) -> bool:
    """Write the stub and its ``.gch`` into ``folder`` (built aside and renamed into place, so a
    parallel build never sees half a file). False where the compiler refuses."""
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}-{threading.get_ident()}")
    tmp.mkdir(parents=True, exist_ok=True)
    stub = tmp / header.name
    stub.write_text(f'#include "{header}"\n')
    lang = "c++-header" if "++" in Path(compiler).name else "c-header"
    try:
        p = subprocess.run([compiler, *flags, "-x", lang, str(stub), "-o", str(stub) + ".gch"],
                           capture_output=True, text=True, timeout=deadline.cap(300))
        ok = p.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if ok:
        try:
            tmp.rename(folder)
        except OSError:   # another process made the same one first
            pass
    shutil.rmtree(tmp, ignore_errors=True)
    return ok and (folder / (header.name + ".gch")).is_file()
