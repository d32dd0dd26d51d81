"""On a machine with an NVIDIA GPU a cuda kernel is tested on the GPU *and* on the SIMT emulator.

A GPU run has no AddressSanitizer and a single thread schedule, so an out-of-bounds read that lands
inside the allocation, a race or a dropped barrier passes there (seen on the H200: five planted-bug
mutants of tests/mutants passed on the GPU alone). The GPU is simulated here by building the
emulator without ASan for the "hardware" runner, which is exactly the blind spot in question."""
from __future__ import annotations

import textwrap

import pytest

from spec_text import elementwise_spec
from xpiler.platforms.cuda import CudaPlatform
from xpiler.verify import tester

OOB_READ = """\
__global__ void twice(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        // reads one element past the end for the last thread; the value only matters if it is 12345
        if (x[i + 1] == 12345.0f) y[i] = 0.0f; else y[i] = 2.0f * x[i];
    }
}
"""

SPEC = elementwise_spec("twice", "cuda", n=100, block=64, reference="ref.py:twice")


@pytest.fixture
def fake_gpu(monkeypatch):
    """A 'GPU' substrate that is the emulator built without ASan (what a GPU run cannot see)."""
    monkeypatch.setattr(tester, "gpu_substrate", lambda dialect: "hw:nvidia-fake" if dialect == "cuda" else None)
    real = CudaPlatform.build

    def build(self, src, spec, workdir, *, sanitize, gpu=False, timing=False):
        return real(self, src, spec, workdir, sanitize=False if gpu else sanitize)
    monkeypatch.setattr(CudaPlatform, "build", build)


def _files(tmp_path):
    (tmp_path / "twice.cu").write_text(OOB_READ)
    (tmp_path / "twice.cu.toml").write_text(SPEC)
    (tmp_path / "ref.py").write_text(textwrap.dedent("""\
        def twice(x, n):
            return 2.0 * x
        """))
    return tmp_path / "twice.cu", tmp_path / "twice.cu.toml"


def test_gpu_alone_misses_the_out_of_bounds_read(tmp_path, fake_gpu, monkeypatch):
    monkeypatch.setenv("XPILER_SUBSTRATE", "hw")
    v = tester.test_kernel(*_files(tmp_path), seeds=(0,), jobs=1)
    assert v.substrate == "hw:nvidia-fake"
    assert v.verified        # the blind spot the emulator run closes


def test_gpu_and_emulator_both_run_and_the_emulator_catches_it(tmp_path, fake_gpu, monkeypatch):
    monkeypatch.delenv("XPILER_SUBSTRATE", raising=False)
    v = tester.test_kernel(*_files(tmp_path), seeds=(0,), jobs=1)
    assert v.substrate == "hw:nvidia-fake + emu:simt-cpu"
    assert not v.verified
    assert v.sanitized
    assert v.failures and all(f.message.startswith("[emu:simt-cpu]") for f in v.failures)


def test_a_correct_kernel_verifies_on_both(tmp_path, fake_gpu, monkeypatch):
    monkeypatch.delenv("XPILER_SUBSTRATE", raising=False)
    src, spec = _files(tmp_path)
    src.write_text(OOB_READ.replace("x[i + 1] == 12345.0f", "x[i] == 12345.0f"))
    v = tester.test_kernel(src, spec, seeds=(0, 1), jobs=1)
    assert v.verified, [f.message for f in v.failures]
    assert v.substrate == "hw:nvidia-fake + emu:simt-cpu"
    assert v.runs == 2 * 2 * len(v.instances)


def test_a_native_cpu_substrate_runs_once(tmp_path, monkeypatch):
    """Only a GPU gets the emulator beside it: a c kernel on the native CPU substrate (hw:cpu-…) is
    one substrate (on the GPU machine a c verdict once read 'hw:cpu-avx512vnni + hw:cpu-avx512vnni')."""
    from xpiler.platforms import c as CP
    monkeypatch.delenv("XPILER_SUBSTRATE", raising=False)
    monkeypatch.setattr(CP.CPlatform, "substrate", lambda self: "hw:cpu-fake")
    (tmp_path / "twice.c").write_text("void twice(const float* x, float* y, int n) {\n"
                                      "    for (int i = 0; i < n; i++) y[i] = 2.0f * x[i];\n}\n")
    (tmp_path / "twice.c.toml").write_text(elementwise_spec("twice", "c", n=100, reference="ref.py:twice"))
    (tmp_path / "ref.py").write_text("def twice(x, n):\n    return 2.0 * x\n")
    v = tester.test_kernel(tmp_path / "twice.c", tmp_path / "twice.c.toml", seeds=(0,), jobs=1)
    assert v.verified, [f.message for f in v.failures]
    assert v.substrate == "hw:cpu-fake"
    assert v.runs == len(v.instances)
