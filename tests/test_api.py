"""The Python API: test, load (callable kernels), and the bundled demo script."""
import subprocess
import sys

import numpy as np
import pytest

import xpiler
from conftest import EXAMPLES, ROOT


def test_load_c_kernel_fills_outputs():
    k = xpiler.load(EXAMPLES / "relu" / "relu.c")
    x = np.linspace(-2, 2, 1237, dtype=np.float32)
    y = np.full_like(x, np.nan)
    out = k(x, y)
    assert np.array_equal(out, np.maximum(x, 0)) and np.array_equal(y, out)
    assert k.substrate.startswith(("hw:cpu", "emu:simde"))


def test_load_wrong_arity_is_a_diagnostic():
    k = xpiler.load(EXAMPLES / "relu" / "relu.c")
    with pytest.raises(xpiler.XPError) as e:
        k(np.zeros(4, np.float32))
    assert e.value.code == "XP1205"


def test_load_size_without_instance_is_a_diagnostic():
    k = xpiler.load(EXAMPLES / "relu" / "relu.c")
    with pytest.raises(xpiler.XPError) as e:
        k(np.zeros(3, np.float32), np.zeros(3, np.float32))
    assert e.value.code == "XP1205"


def test_test_returns_typed_verdict():
    v = xpiler.test(EXAMPLES / "add" / "add.c", seeds=[0])
    assert v.verified and v.substrate and v.seeds == [0]


def test_api_demo_runs():
    p = subprocess.run([sys.executable, str(EXAMPLES / "api_demo.py")], capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "VERIFIED on emu:simt-cpu" in p.stdout
