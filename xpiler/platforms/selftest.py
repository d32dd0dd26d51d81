"""Substrate self-tests: a tiny bundled kernel per dialect, built and run the way candidates are.

``xpiler doctor`` runs them so that a substrate that cannot run code here (an emulator that
crashes under this machine's compiler, a missing runtime) is reported as broken, instead of
every candidate of a migration failing its tests for a reason that has nothing to do with it.
The kernels (``runtime/selftest/``) use what every migration relies on: shared memory, barriers
and warp/wave shuffles on the SIMT emulator, NRAM copies and vector ops on the BANG emulator,
OpenMP loops in C; inputs are integer-valued so the sums are exact.
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .harness import RUNTIME_DIR

SELFTEST_DIR = RUNTIME_DIR / "selftest"
SELFTEST_EXT = {"cuda": ".cu", "hip": ".hip", "bang": ".mlu", "c": ".c"}


@dataclass
class SelfTest:
    dialect: str
    substrate: str
    ok: bool
    detail: str
    seconds: float


@contextmanager
def _env(name: str, value: str | None):
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def selftest_source(dialect: str) -> Path:
    return SELFTEST_DIR / f"selftest{SELFTEST_EXT[dialect]}"


def run_selftest(dialect: str, *, emulator: bool = True, timeout: float = 60.0) -> SelfTest:
    """Build the dialect's self-test kernel with and without AddressSanitizer and run it once
    each against its reference.  ``emulator=True`` keeps cuda on the SIMT emulator even where a
    GPU is present (``emulator=False``: the substrate a migration would pick)."""
    from ..diagnostics import XPError
    from ..verify.tester import compare_kernels
    src = selftest_source(dialect)
    t0 = time.time()
    substrate, problems = "?", []
    with _env("XPILER_SUBSTRATE", "emu" if emulator else os.environ.get("XPILER_SUBSTRATE")):
        for sanitize in (True, False):
            try:
                v = compare_kernels(src, src.with_name(src.name + ".toml"), seeds=(0,), sanitize=sanitize,
                                    timeout=timeout, jobs=1)
            except XPError as e:
                problems.append(f"{e.code} {e.message}")
                continue
            substrate = v.substrate
            if not v.verified:
                f = v.failures[0] if v.failures else None
                what = "with AddressSanitizer" if v.sanitized else "without AddressSanitizer"
                msg = f"{f.code} {f.message}" if f else "no result"
                log = (f.log or "").strip().splitlines() if f else []
                first = next((ln.strip() for ln in log if "ERROR" in ln or "error" in ln), "")
                problems.append(f"{what}: {msg}" + (f" [{first[:160]}]" if first else ""))
    dt = time.time() - t0
    if problems and dialect != "c" and not asan_links():
        from .base import emulator_cxx
        cxx = emulator_cxx()
        ver = cxx.rsplit("-", 1)[-1] if cxx.rsplit("-", 1)[-1].isdigit() else "N"
        problems.insert(0, f"{cxx} cannot link an AddressSanitizer program (its sanitizer runtime is missing: "
                           f"for clang++-{ver} install libclang-rt-{ver}-dev, or unset XPILER_CXX)")
    if problems:
        return SelfTest(dialect, substrate, False, "; ".join(problems), dt)
    return SelfTest(dialect, substrate, True, f"self-test passed (ASan and plain builds, {dt:.1f} s)", dt)


def asan_links(cxx: str | None = None) -> bool:
    """Whether the emulator compiler (``XPILER_CXX`` or g++) links a program with
    ``-fsanitize=address`` here (a clang without its runtime package cannot)."""
    import subprocess
    import tempfile
    from .base import emulator_cxx, which
    cxx = cxx or emulator_cxx()
    if not which(cxx):
        return False
    with tempfile.TemporaryDirectory(prefix="xpiler-asan-") as d:
        Path(d, "t.cpp").write_text("int main() { return 0; }\n")
        try:
            p = subprocess.run([cxx, "-fsanitize=address", "t.cpp", "-o", "t"], cwd=d, capture_output=True,
                               timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return p.returncode == 0
