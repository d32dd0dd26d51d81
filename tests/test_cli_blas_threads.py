"""The xpiler command computes reference outputs with one OpenBLAS thread (a multi-threaded
OpenBLAS was seen to spin forever in exec_blas from the tester's worker threads); a library
user's process keeps its own setting."""
from __future__ import annotations

import os
import subprocess
import sys

PROBE = ("import sys; sys.argv = [{argv!r}]; import xpiler, os; "
         "print(os.environ.get('OPENBLAS_NUM_THREADS', 'unset'))")


def _probe(argv: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_command_uses_one_blas_thread():
    assert _probe("/usr/local/bin/xpiler") == "1"


def test_library_user_keeps_its_setting():
    assert _probe("train.py") == "unset"
