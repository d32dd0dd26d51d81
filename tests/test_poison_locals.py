"""Test builds on the CPU start every automatic variable as a byte pattern (gcc's
-ftrivial-auto-var-init=pattern: 0xFE bytes), in the c dialect and the SIMT emulator, so a read of
a local array slot a kernel never wrote shows in its results instead of whatever the stack held.
The planted ``gemv.hip-c-wrong_stride-1`` (``done[t] = 0`` for even t only) passed its test
before this: the stack held zeros (docs/verification.md, "Uninitialised reads")."""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from xpiler.platforms.harness import POISON_LOCALS, read_outputs, write_job
from xpiler.spec import load_spec

HERE = Path(__file__).resolve().parent / "poison"
PATTERN_FLOAT = struct.unpack("<f", b"\xfe\xfe\xfe\xfe")[0]     # -1.69e38
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None,
                                reason="gcc/g++ not installed")


def _run(plat, src: Path, work: Path, sanitize: bool, timing: int = 0) -> dict:
    spec = load_spec(Path(str(src) + ".toml"))
    kw = {"timing": timing} if timing else {}
    exe = plat.build(src, spec, work, sanitize=sanitize, **kw)
    inst = spec.instances()[0]
    jd = work / f"job-{src.stem}-{int(sanitize)}"
    write_job(jd, inst, {"x": np.arange(8, dtype=np.float32) + 1.0,
                         "yf": np.zeros(8, np.float32), "yp": np.zeros(8, np.float32)})
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    p = subprocess.run([str(exe), str(jd)], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    return read_outputs(jd, inst)


@pytest.mark.parametrize("sanitize", [False, True])
def test_c_local_arrays_start_as_the_pattern(tmp_path, sanitize):
    from xpiler.platforms.c import CPlatform
    out = _run(CPlatform(), HERE / "unset_c.c", tmp_path, sanitize)
    assert (out["yf"] == 254.0).all(), out["yf"]          # an unsigned char flag never set: 0xFE
    assert (out["yp"] == PATTERN_FLOAT).all(), out["yp"]  # a float partial never set: -1.7e38


@pytest.mark.parametrize("sanitize", [False, True])
def test_simt_thread_local_arrays_start_as_the_pattern(tmp_path, sanitize):
    from xpiler.platforms.cuda import CudaPlatform
    out = _run(CudaPlatform(), HERE / "unset_cu.cu", tmp_path, sanitize)
    assert (out["yf"] == 254.0).all(), out["yf"]
    assert (out["yp"] == PATTERN_FLOAT).all(), out["yp"]


def test_timing_builds_are_not_poisoned():
    from xpiler.platforms.c import CPlatform
    assert POISON_LOCALS in CPlatform()._flags(False)
    assert POISON_LOCALS not in CPlatform()._flags(False, timing=5)


def test_a_compiler_without_the_flag_builds_as_before():
    from xpiler.platforms.harness import poison_locals_flags
    assert poison_locals_flags("gcc") == [POISON_LOCALS]               # gcc 12 here
    assert poison_locals_flags("no-such-compiler-xp4230") == []
