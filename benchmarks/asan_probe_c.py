#!/usr/bin/env python3
"""Verify the half x half -> float c gemm of tests/test_half_matmul.py (micro 5x48, kc 7, mc 10,
nc 48: every edge) under AddressSanitizer three ways, and print the instruction of any crash.

    python benchmarks/asan_probe_c.py

Made for the SEGV that build got on an Intel host with gcc 13 (and not on the AMD host with gcc
12): (1) as the verifier runs it (detect_stack_use_after_return=1), (2) with that option off at
run time, (3) built with ``--param=asan-use-after-return=0``. A crash prints the
faulting instruction (objdump around the module offset that ASan names).
"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import xpiler.sandbox as SB  # noqa: E402
from xpiler.passes import tensorize  # noqa: E402
from xpiler.platforms.c import CPlatform  # noqa: E402
from test_half_matmul import WMMA, half_mm  # noqa: E402
from test_pass_cache import verify  # noqa: E402

print(subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0])
print(subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo"], capture_output=True, text=True).stdout)
prog = tensorize.apply(half_mm(), entry="gemm_wmma", target="c", micro="5x48", kc=7, mc=10, nc=48)
_popen, _flags = SB.subprocess.Popen, CPlatform._flags


def objdump(msg: str):
    m = re.search(r"(/\S+/run)\+0x([0-9a-f]+)", msg)
    if not m:
        return
    off = int(m.group(2), 16)
    p = subprocess.run(["objdump", "-d", "-l", "--no-show-raw-insn", f"--start-address={off - 48:#x}",
                        f"--stop-address={off + 8:#x}", m.group(1)], capture_output=True, text=True)
    print("\n".join(p.stdout.splitlines()[-24:]))


for name, uar_rt, never in (("as verified", "1", False), ("uar off at run time", "0", False),
                            ("built without uar instrumentation", "1", True)):
    def popen(argv, *a, env=None, **k):
        if env and "ASAN_OPTIONS" in env:
            env = {**env, "ASAN_OPTIONS": env["ASAN_OPTIONS"].replace("detect_stack_use_after_return=1",
                                                                        f"detect_stack_use_after_return={uar_rt}")}
        return _popen(argv, *a, env=env, **k)
    SB.subprocess.Popen = popen
    CPlatform._flags = (lambda self, s, t=0: _flags(self, s, t) + (["--param=asan-use-after-return=0"]
                                                                    if never and s else [])) if never else _flags
    v = verify(prog, WMMA, dialect="c", launch={})
    print(f"== {name}: verified={v.verified} substrate={v.substrate}")
    for f in v.failures[:2]:
        msg = getattr(f, "message", str(f))
        print("  ", msg[:600])
        objdump(msg)
SB.subprocess.Popen, CPlatform._flags = _popen, _flags
