"""Schedule variants of the SIMT CPU emulator (XPS_SCHEDULE, xpiler/runtime/simt/xp_simt.h).

Every schedule must be a valid CUDA execution (nobody passes a __syncthreads() or a warp
collective early), the variation must matter (a real missing-barrier race that the default
order hides is exposed by another schedule), each schedule id must be reproducible, and the
tester must run seed s under schedule s % SIMT_SCHEDULES and name the schedules in its verdict.
"""
from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from xpiler.platforms.cuda import CudaPlatform
from xpiler.platforms.hip import HipPlatform
from xpiler.sandbox import run_limited
from xpiler.verify.tester import SIMT_SCHEDULES, compare_kernels

SCHEDULES = [0, 1, 2, 3, 4, 5, 17]

# Correct kernel: 4 warps, block barriers and shuffles.  Each thread counts its arrival before
# every barrier/collective and checks, once past it, that everybody it waited for has arrived:
# a schedule that lets a thread through early makes `bad` non-zero.
BARRIER_KERNEL = r"""
#include <cuda_runtime.h>
#define NT 128
__device__ int arrived[8];
__device__ int warp_arrived[8][NT / 32];
__device__ int bad;
__global__ void phases(const float* x, float* y) {
  __shared__ float s[NT];
  int t = threadIdx.x, w = t / 32;
  float v = x[blockIdx.x * NT + t];
  for (int k = 0; k < 4; ++k) {
    s[t] = v;
    arrived[2 * k] += 1;
    __syncthreads();
    if (arrived[2 * k] != NT * (int)(blockIdx.x + 1)) bad += 1;
    v = s[(t + 37 * (k + 1)) % NT] + 0.5f * v;
    warp_arrived[k][w] += 1;
    float r = v;
    for (int o = 16; o > 0; o >>= 1) r += __shfl_xor_sync(0xffffffffu, r, o);
    if (warp_arrived[k][w] != 32 * (int)(blockIdx.x + 1)) bad += 1;
    arrived[2 * k + 1] += 1;
    __syncthreads();                              // s[] is rewritten in the next round
    if (arrived[2 * k + 1] != NT * (int)(blockIdx.x + 1)) bad += 1;
    v = v + 0.001f * r;
  }
  y[blockIdx.x * NT + t] = v;
}
"""

# Real bug: red[] is reused without a barrier.  The shuffles of the second warp_sum hide it under
# the default order (every warp reads red[] before any warp is released from its shuffles).
RACE_KERNEL = r"""
#include <cuda_runtime.h>
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__global__ void sums(const float* x, float* y) {
  __shared__ float red[4];
  int t = threadIdx.x, lane = t % 32, w = t / 32;
  float v = x[blockIdx.x * 128 + t];
  float a = warp_sum(v);
  if (lane == 0) red[w] = a;
  __syncthreads();
  float total = red[0] + red[1] + red[2] + red[3];
  float b = warp_sum(v * v);                        // BUG: no __syncthreads() before red[] is reused
  if (lane == 0) red[w] = b;
  __syncthreads();
  float total2 = red[0] + red[1] + red[2] + red[3];
  y[blockIdx.x * 128 + t] = total + total2;
}
"""

# Records the order in which threads pass three points (an execution trace).
TRACE_KERNEL = r"""
#include <cuda_runtime.h>
__device__ int pos;
__global__ void trace(int* log) {
  __shared__ int dummy[64];
  int t = threadIdx.x;
  log[atomicAdd(&pos, 1)] = t;
  dummy[t % 64] = t;
  __syncthreads();
  log[atomicAdd(&pos, 1)] = t;
  int r = __shfl_down_sync(0xffffffffu, t, 1);
  log[atomicAdd(&pos, 1)] = t + 1000 * (r & 1);
}
"""

MAIN = r"""
#include <vector>
int main() {
  const int nb = NBLOCKS, nt = 128, n = nb * nt;
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) hx[i] = (float)((i * 7919) % 97) / 97.0f - 0.5f;
  float *x, *y;
  cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4);
  cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice);
  KERNEL<<<nb, nt>>>(x, y);
  cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i) printf("%.9g\n", hy[i]);
  EXTRA
  return 0;
}
"""


def _build(tmp_path: Path, plat, name: str, kernel: str, main: str) -> Path:
    src = tmp_path / f"{name}.cu"
    src.write_text(kernel)
    cpp = tmp_path / f"{name}_main.cpp"
    cpp.write_text(plat.prepare(kernel + "\n" + textwrap.dedent(main), str(src)))
    exe = tmp_path / name
    subprocess.run(["g++", *plat.emu_flags(False), str(cpp), "-o", str(exe)], check=True, capture_output=True)
    return exe


def _run(exe: Path, schedule: int) -> list[str]:
    oc = run_limited([str(exe)], timeout_s=60, env={"XPS_SCHEDULE": str(schedule)})
    assert oc.ok, f"schedule {schedule}: rc={oc.rc} {oc.stderr[-1500:]}"
    return oc.stdout.split()


def _x(nblocks: int) -> np.ndarray:
    i = np.arange(nblocks * 128)
    return ((i * 7919) % 97).astype(np.float32) / np.float32(97.0) - np.float32(0.5)


def test_every_schedule_respects_barriers_and_collectives(tmp_path):
    main = MAIN.replace("NBLOCKS", "2").replace("KERNEL", "phases").replace(
        "EXTRA", 'int hb; cudaMemcpyFromSymbol(&hb, bad, sizeof(int)); printf("bad %d\\n", hb);')
    exe = _build(tmp_path, CudaPlatform(), "phases", BARRIER_KERNEL, main)
    x = _x(2).reshape(2, 128).astype(np.float64)
    # numpy model of the kernel
    v = x.copy()
    for k in range(4):
        s = v.copy()
        v = s[:, (np.arange(128) + 37 * (k + 1)) % 128] + 0.5 * v
        r = v.reshape(2, 4, 32).sum(axis=2).repeat(32, axis=1)
        v = v + 0.001 * r
    outs = {}
    for sch in SCHEDULES:
        out = _run(exe, sch)
        assert out[-2:] == ["bad", "0"], f"schedule {sch}: a thread passed a barrier or collective early"
        outs[sch] = np.array([float(t) for t in out[:-2]])
        np.testing.assert_allclose(outs[sch], v.ravel(), rtol=1e-5, atol=1e-5, err_msg=f"schedule {sch}")


def test_race_hidden_by_default_order_is_exposed_by_other_schedules(tmp_path):
    main = MAIN.replace("NBLOCKS", "2").replace("KERNEL", "sums").replace("EXTRA", "")
    exe = _build(tmp_path, CudaPlatform(), "sums", RACE_KERNEL, main)
    x = _x(2).reshape(2, 128).astype(np.float64)
    want = (x.sum(axis=1) + (x * x).sum(axis=1)).repeat(128)
    ok = {}
    for sch in SCHEDULES:
        got = np.array([float(t) for t in _run(exe, sch)])
        ok[sch] = bool(np.allclose(got, want, rtol=1e-5, atol=1e-5))
    assert ok[0], "the default order should hide this race (it is the documented blind spot)"
    assert not ok[1] and not ok[2], f"schedules 1 and 2 must expose the race: {ok}"
    assert not all(ok[s] for s in SCHEDULES if s >= 3), f"no random schedule exposed the race: {ok}"


def test_schedules_are_deterministic_and_distinct(tmp_path):
    main = r"""
    #include <vector>
    int main() {
      int* log; cudaMalloc(&log, 3 * 128 * sizeof(int));
      trace<<<1, 128>>>(log);
      std::vector<int> h(3 * 128);
      cudaMemcpy(h.data(), log, h.size() * sizeof(int), cudaMemcpyDeviceToHost);
      for (int v : h) printf("%d\n", v);
      return 0;
    }
    """
    exe = _build(tmp_path, CudaPlatform(), "trace", TRACE_KERNEL, main)
    traces = {}
    for sch in SCHEDULES:
        a, b = _run(exe, sch), _run(exe, sch)
        assert a == b, f"schedule {sch} is not reproducible"
        traces[sch] = tuple(int(v) for v in a)
        assert sorted(v % 1000 for v in traces[sch]) == sorted(list(range(128)) * 3)
    first = [t[:128] for t in traces.values()]
    assert traces[0][:128] == tuple(range(128))            # default: index order
    assert traces[2][:128] == tuple(range(127, -1, -1))    # reverse
    assert len(set(traces.values())) >= 5, "schedules should give different executions"
    assert len(set(first)) >= 4
    # nobody logs its second point before every thread logged its first (barrier respected)
    for sch, t in traces.items():
        assert set(t[:128]) == set(range(128)), f"schedule {sch}"


def test_hip_wave64_schedules_respect_barriers(tmp_path):
    kernel = BARRIER_KERNEL.replace("#include <cuda_runtime.h>", "#include <hip/hip_runtime.h>") \
        .replace("NT / 32", "NT / 64").replace("t / 32", "t / 64").replace("o = 16", "o = 32") \
        .replace("32 * (int)", "64 * (int)").replace("0xffffffffu", "0xffffffffffffffffull")
    main = MAIN.replace("NBLOCKS", "2").replace("KERNEL", "phases").replace("cuda", "hip").replace(
        "EXTRA", 'int hb; hipMemcpyFromSymbol(&hb, HIP_SYMBOL(bad), sizeof(int), 0, hipMemcpyDeviceToHost); '
                 'printf("bad %d\\n", hb);')
    exe = _build(tmp_path, HipPlatform(), "phases_hip", kernel, main)
    x = _x(2).reshape(2, 128).astype(np.float64)
    v = x.copy()
    for k in range(4):
        s = v.copy()
        v = s[:, (np.arange(128) + 37 * (k + 1)) % 128] + 0.5 * v
        r = v.reshape(2, 2, 64).sum(axis=2).repeat(64, axis=1)
        v = v + 0.001 * r
    for sch in (0, 1, 2, 3, 6):
        out = _run(exe, sch)
        assert out[-2:] == ["bad", "0"], f"schedule {sch}"
        np.testing.assert_allclose(np.array([float(t) for t in out[:-2]]), v.ravel(), rtol=1e-5, atol=1e-5)


def test_tester_runs_seeds_under_schedules_and_names_them(tmp_path, monkeypatch):
    # the emulator's schedules are under test: on a GPU machine the GPU run would also catch seed 0
    monkeypatch.setenv("XPILER_SUBSTRATE", "emu")
    (tmp_path / "sums.cu").write_text(RACE_KERNEL)
    (tmp_path / "ref.py").write_text(textwrap.dedent("""\
        import numpy as np
        def sums(x):
            b = x.reshape(-1, 128).astype(np.float64)
            return (b.sum(axis=1) + (b * b).sum(axis=1)).repeat(128).astype(np.float32)
        """))
    (tmp_path / "sums.toml").write_text(textwrap.dedent("""\
        entry = "sums"
        dialect = "cuda"
        [sizes]
        B = 2
        [launch]
        grid = ["B", 1, 1]
        block = [128, 1, 1]
        [[args]]
        name = "x"
        dtype = "float32"
        shape = ["B*128"]
        role = "in"
        [[args]]
        name = "y"
        dtype = "float32"
        shape = ["B*128"]
        role = "out"
        [reference]
        python = "ref.py:sums"
        [tolerance]
        rtol = 1e-4
        atol = 1e-4
        """))
    v = compare_kernels(tmp_path / "sums.cu", tmp_path / "sums.toml", seeds=(0, 1, 2), sanitize=False, jobs=1)
    assert SIMT_SCHEDULES >= 3
    assert v.to_json()["schedules"] == [0, 1, 2]
    assert not v.verified
    assert {f.seed for f in v.failures} == {1, 2}, [f.message for f in v.failures]
