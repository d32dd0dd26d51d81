#!/usr/bin/env python3
"""Build one kernel for the SIMT emulator (wave64 and wave32, with and without AddressSanitizer)
and run it under each ASan setting and schedule, printing every crash.

    python benchmarks/asan_probe.py examples/relu/relu.hip examples/relu/relu.hip.toml

Made to find the gcc 13 crash (benchmarks/RESULTS.md, "Hardening"): with
detect_stack_use_after_return=1 every run crashed before the fix, on gcc 12 as on gcc 13.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from xpiler.spec import load_spec
from xpiler.platforms import get_platform
from xpiler.platforms.harness import write_job
from xpiler.verify.inputs import make_inputs
src = Path(sys.argv[1]); spec = load_spec(sys.argv[2])
plat = get_platform(spec.dialect)
inst = spec.instances(None)[0]
for wave in (64, 32):
    plat.wave = wave
    for san in (True, False):
        d = Path(tempfile.mkdtemp())
        try:
            exe = plat.build(src, spec, d, sanitize=san)
        except Exception as e:
            print("BUILD FAIL", wave, san, str(e)[:2000]); continue
        for aopt in ([""] if not san else ["", "detect_stack_use_after_return=0", "detect_stack_use_after_return=1"]):
          for sch in (None, "1"):
            job = Path(tempfile.mkdtemp()); write_job(job, inst, make_inputs(inst, 0))
            env = dict(os.environ)
            if san: env["ASAN_OPTIONS"] = "exitcode=98:detect_leaks=0:" + aopt
            if sch: env["XPS_SCHEDULE"] = sch
            p = subprocess.run([str(exe), str(job)], env=env, capture_output=True, text=True, timeout=120)
            print(f"wave={wave} asan={san} opts={aopt!r} sched={sch} rc={p.returncode}")
            if p.returncode: print(p.stderr[:2500])
