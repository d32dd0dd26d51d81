"""The Python API: test, load (callable kernels), and the bundled demo script."""
import shutil
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
    assert e.value.code == "XP1206"


def test_load_size_without_instance_is_a_diagnostic():
    k = xpiler.load(EXAMPLES / "relu" / "relu.c")
    with pytest.raises(xpiler.XPError) as e:
        k(np.zeros(3, np.float32), np.zeros(3, np.float32))
    assert e.value.code == "XP1206"


def test_test_returns_typed_verdict():
    v = xpiler.test(EXAMPLES / "add" / "add.c", seeds=[0])
    assert v.verified and v.substrate and v.seeds == [0]


def test_api_demo_runs():
    import os
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, str(EXAMPLES / "api_demo.py")], capture_output=True, text=True, timeout=300,
                       cwd=ROOT, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verify: VERIFIED on " in p.stdout and "softmax on " in p.stdout


class _FakeDeviceArray:
    """Has __cuda_array_interface__ like a CuPy array (never dereferenced in these tests)."""
    def __init__(self, n, typestr="<f4"):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": typestr, "data": (0, False), "version": 3,
                                         "strides": None}


def test_load_mixed_host_and_device_arrays_is_a_diagnostic():
    k = xpiler.load(EXAMPLES / "relu" / "relu.c")
    with pytest.raises(xpiler.XPError) as e:
        k(np.zeros(4, np.float32), _FakeDeviceArray(4))
    assert e.value.code == "XP1206" and "some arrays are on a CUDA device" in e.value.message


def test_load_device_arrays_need_a_simt_kernel():
    k = xpiler.load(EXAMPLES / "relu" / "relu.c")
    with pytest.raises(xpiler.XPError) as e:
        k(_FakeDeviceArray(4), _FakeDeviceArray(4))
    assert e.value.code == "XP1206" and "cannot take CUDA device arrays" in e.value.message


def test_load_device_arrays_of_the_wrong_type_or_size_are_refused_before_any_launch():
    k = xpiler.load(EXAMPLES / "relu" / "relu.cu")
    n = k.spec.instances()[0].numel("x")
    with pytest.raises(xpiler.XPError) as e:
        k(_FakeDeviceArray(n, "<f8"), _FakeDeviceArray(n))
    assert e.value.code == "XP1206" and "'x' is float64 on the device, the kernel takes float32" in e.value.message
    with pytest.raises(xpiler.XPError) as e:
        k(_FakeDeviceArray(n + 1), _FakeDeviceArray(n + 1))
    assert e.value.code == "XP1206" and "match no instance" in e.value.message


def test_device_launcher_source_casts_pointers_and_uses_the_callers_stream():
    from xpiler.gpu_call import library_source
    from xpiler.spec import load_spec
    spec = load_spec(EXAMPLES / "gemm" / "gemm.cu.toml")
    src = library_source(spec, "kernel.cu", "cuda")
    assert 'extern "C" int xp_launch(' in src
    assert "gemm<<<grid, block, shared, (cudaStream_t)stream>>>(xp_a0, xp_a1, xp_a2, xp_a3, xp_a4, xp_a5)" in src
    assert "xp_anyptr xp_a0{ptr[0]}" in src and "int32_t xp_a3 = (int32_t)(is[3]);" in src
    assert "cudaMemcpy" not in src      # device arrays are never copied through the host


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_device_launcher_library_compiles_with_nvcc():
    from xpiler.gpu_call import build_library
    from xpiler.spec import load_spec
    lib = build_library(EXAMPLES / "softmax" / "softmax.cu", load_spec(EXAMPLES / "softmax" / "softmax.cu.toml"), "cuda")
    assert lib.is_file() and lib.read_bytes()[:4] == b"\x7fELF"


def _cuda_torch():
    try:
        import torch
    except ImportError:
        return None
    from xpiler.verify.tester import gpu_substrate
    return torch if torch.cuda.is_available() and gpu_substrate("cuda") else None


@pytest.mark.skipif(_cuda_torch() is None, reason="needs an NVIDIA GPU, nvcc and torch with CUDA")
def test_load_runs_on_torch_cuda_tensors_without_host_copies():
    torch = _cuda_torch()
    from xpiler.spec import load_spec
    spec = load_spec(EXAMPLES / "gemm" / "gemm.cu.toml")
    inst = spec.instances()[0]
    M, N, K = (inst.scalars[s] for s in ("M", "N", "K"))
    k = xpiler.load(EXAMPLES / "gemm" / "gemm.cu")
    assert k.substrate.startswith("hw:nvidia")
    A = torch.randn(M, K, device="cuda")
    B = torch.randn(K, N, device="cuda")
    C = torch.full((M, N), float("nan"), device="cuda")
    out = k(A, B, C)
    assert out is C and out.is_cuda
    torch.testing.assert_close(C, A @ B, rtol=1e-4, atol=1e-4)
    # the numpy path on the same kernel gives the same result (it runs on the GPU too)
    c_host = k(A.cpu().numpy(), B.cpu().numpy(), np.zeros((M, N), np.float32))
    np.testing.assert_allclose(c_host, C.cpu().numpy(), rtol=1e-5, atol=1e-5)
