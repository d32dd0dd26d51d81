"""The SIMT CPU emulator (xpiler/runtime/simt/xp_simt.h) and the cuda/hip platforms.

Every kernel here is compiled through the platform's ``build()`` with the lead's harness
(job folder in, out.bin back) and compared with numpy; error cases check the XP30xx line and
exit status 97 of the runtime.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from xpiler.diagnostics import XPError
from xpiler.platforms.cuda import CudaPlatform
from xpiler.platforms.harness import read_outputs, write_job
from xpiler.platforms.hip import HipPlatform
from xpiler.platforms.simt_common import mask_code, prepare_source
from xpiler.sandbox import run_limited
from xpiler.spec import parse_spec

KERNELS = Path(__file__).resolve().parent / "simt"
PLATFORMS = {"cuda": CudaPlatform(), "hip": HipPlatform()}


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------

def make_spec(tmp_path: Path, entry: str, dialect: str, args: list[tuple], grid, block, shared: int = 0,
              sizes: dict | None = None):
    """args: (name, dtype, role, shape-or-value)"""
    lines = [f'entry = "{entry}"', f'dialect = "{dialect}"', "[sizes]"]
    for k, v in (sizes or {"N": 1}).items():
        lines.append(f"{k} = {v}")
    lines += ["[launch]", f"grid = {list(grid)}", f"block = {list(block)}"]
    if shared:
        lines.append(f"shared_bytes = {shared}")
    for name, dtype, role, x in args:
        lines += ["[[args]]", f'name = "{name}"', f'dtype = "{dtype}"', f'role = "{role}"']
        if role == "scalar":
            lines.append(f"value = {x}")
        else:
            lines.append(f"shape = {list(x)}")
    text = "\n".join(lines) + "\n"
    p = tmp_path / f"{entry}.toml"
    p.write_text(text)
    return parse_spec(text, p)


def run(tmp_path: Path, dialect: str, src: Path, spec, arrays: dict, *, sanitize: bool = False, timeout: float = 60):
    plat = PLATFORMS[dialect]
    exe = plat.build(src, spec, tmp_path / "work", sanitize=sanitize)
    inst = spec.instances()[0]
    jobdir = tmp_path / f"job{len(list(tmp_path.glob('job*')))}"
    full = {}
    for a in spec.args:
        if a.is_array:
            full[a.name] = arrays[a.name] if a.name in arrays else np.full(inst.shapes[a.name], np.nan, np.float32)
    write_job(jobdir, inst, full)
    oc = run_limited([str(exe), str(jobdir)], cwd=jobdir, timeout_s=timeout, mem_mb=4096, sanitized=sanitize)
    outs = read_outputs(jobdir, inst) if oc.ok else None
    return oc, outs


def write_src(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def runtime_error(oc) -> str:
    m = re.search(r"xpiler-runtime-error: (XP\d{4}) (.*)", oc.stderr)
    assert m, f"no runtime-error line; rc={oc.rc} stderr={oc.stderr[-2000:]}"
    assert oc.rc == 97, oc
    return m.group(1) + " " + m.group(2)


def compile_with_main(tmp_path: Path, plat, src: Path, main: str, sanitize=False) -> Path:
    """Kernel file + our own main(): for host launchers, which the harness does not call."""
    text = plat.prepare(src.read_text(), str(src)) + "\n" + textwrap.dedent(main)
    cpp = tmp_path / (src.stem + "_main.cpp")
    cpp.write_text(text)
    exe = tmp_path / (src.stem + "_main")
    subprocess.run(["g++", *plat.emu_flags(sanitize), str(cpp), "-o", str(exe)], check=True, capture_output=True)
    return exe


# ---------------------------------------------------------------------------------------------
# prepare()
# ---------------------------------------------------------------------------------------------

def test_prepare_rewrites_launches_and_keeps_lines():
    src = textwrap.dedent("""\
        #include <cuda_runtime.h>
        // a comment with k<<<1, 2>>>(x) inside must stay
        const char* s = "k<<<a,b>>>(c)";
        extern __shared__ __align__(16) float dyn[];
        typedef float floatx4 __attribute__((ext_vector_type(4)));
        using halfx4 = _Float16 __attribute__((ext_vector_type(4)));
        void host(float* x, int n, cudaStream_t st) {
          scale<float, 4><<<dim3((n + 255) / 256), 256, 0, st>>>(x,
                                                               n);
          other<<<1, 32>>>(x, (n > 2 ? 1 : 2));
          static __shared__ int bad;
        }
        """)
    out = prepare_source(src, "t.cu")
    assert out.startswith('#line 1 "t.cu"\n')
    body = out.split("\n", 1)[1]
    assert body.count("\n") == src.count("\n"), "line numbers must not move"
    lines = body.split("\n")
    assert "k<<<1, 2>>>(x)" in lines[1] and '"k<<<a,b>>>(c)"' in lines[2]
    assert "float* const& dyn = reinterpret_cast<float* const&>(::xps::g_dyn_smem);" in lines[3]
    assert "vector_size((4) * sizeof(float))" in lines[4] and "floatx4" in lines[4]
    assert "typedef _Float16 halfx4 __attribute__((vector_size((4) * sizeof(_Float16))))" in lines[5]
    assert lines[7].strip().startswith("::xps::launch(::xps::cfg(dim3((n + 255) / 256), 256, 0, st), [&]() { scale<float, 4>(x,")
    assert lines[9].strip() == "::xps::launch(::xps::cfg(1, 32), [&]() { other(x, (n > 2 ? 1 : 2)); });"
    assert lines[10].strip().startswith("__shared__ int bad;") and "::xps::shared_register(&bad, sizeof(bad))" in lines[10]


def test_mask_code_blanks_comments_and_strings():
    t = 'a /* x<<<y */ "s<<<" // c<<<\nb'
    m = mask_code(t)
    assert len(m) == len(t) and "<<<" not in m and m.endswith("\nb")


def test_compile_error_points_at_user_line(tmp_path):
    src = write_src(tmp_path, "broken.cu", """\
        #include <cuda_runtime.h>
        __global__ void k(float* y, int n) {
          int i = threadIdx.x;
          y[i] = undefined_name + 1;
        }
        """)
    spec = make_spec(tmp_path, "k", "cuda", [("y", "float32", "out", [32]), ("n", "int32", "scalar", 32)], [1, 1, 1],
                     [32, 1, 1])
    with pytest.raises(XPError) as ei:
        PLATFORMS["cuda"].build(src, spec, tmp_path / "w", sanitize=False)
    assert ei.value.code == "XP2001" and ei.value.line == 4 and "undefined_name" in ei.value.message
    assert ei.value.file and ei.value.file.endswith("broken.cu")


# ---------------------------------------------------------------------------------------------
# barriers, shared memory, atomics
# ---------------------------------------------------------------------------------------------

def test_block_reverse_static_shared(tmp_path):
    n = 300  # 3 blocks, the last one partial (44 threads have work)
    spec = make_spec(tmp_path, "block_reverse", "cuda",
                     [("x", "float32", "in", [n]), ("y", "float32", "out", [n]), ("n", "int32", "scalar", n)],
                     [3, 1, 1], [128, 1, 1])
    x = np.arange(n, dtype=np.float32)
    oc, outs = run(tmp_path, "cuda", KERNELS / "reverse.cu", spec, {"x": x})
    assert oc.ok, oc.stderr
    want = np.concatenate([x[0:128][::-1], x[128:256][::-1], x[256:][::-1]])
    np.testing.assert_array_equal(outs["y"], want)


def test_dynamic_shared_memory(tmp_path):
    bs, nb = 64, 3
    n = bs * nb
    spec = make_spec(tmp_path, "dyn_shared", "cuda",
                     [("x", "float32", "in", [n]), ("out", "float32", "out", [n]), ("n", "int32", "scalar", n)],
                     [nb, 1, 1], [bs, 1, 1], shared=2 * bs * 4)
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    oc, outs = run(tmp_path, "cuda", KERNELS / "dyn_shared.cu", spec, {"x": x})
    assert oc.ok, oc.stderr
    xb = x.reshape(nb, bs)
    t = np.arange(bs)
    want = xb[:, (t + 1) % bs] * 2 + (xb[:, bs - 1 - t] + 1)
    np.testing.assert_allclose(outs["out"].reshape(nb, bs), want, rtol=1e-6)


def test_dynamic_shared_overflow_caught_by_asan(tmp_path):
    # same kernel, but the launch gives only half the shared memory it uses
    bs = 64
    spec = make_spec(tmp_path, "dyn_shared", "cuda",
                     [("x", "float32", "in", [bs]), ("out", "float32", "out", [bs]), ("n", "int32", "scalar", bs)],
                     [1, 1, 1], [bs, 1, 1], shared=bs * 4)
    oc, _ = run(tmp_path, "cuda", KERNELS / "dyn_shared.cu", spec, {"x": np.ones(bs, np.float32)}, sanitize=True)
    assert oc.reason == "asan" and "heap-buffer-overflow" in oc.stderr


def test_atomics(tmp_path):
    n, nbins = 1000, 7
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 500, n).astype(np.int32)
    vals = rng.standard_normal(n).astype(np.float32)
    spec = make_spec(tmp_path, "atomics", "cuda",
                     [("keys", "int32", "in", [n]), ("vals", "float32", "in", [n]), ("hist", "int32", "inout", [nbins]),
                      ("fstats", "float32", "inout", [2]), ("istats", "int32", "inout", [7]),
                      ("n", "int32", "scalar", n), ("nbins", "int32", "scalar", nbins)],
                     [4, 1, 1], [256, 1, 1])
    istats0 = np.array([-1, 10**9, 0, -1, 100, 0, 0], np.int32)
    oc, outs = run(tmp_path, "cuda", KERNELS / "atomics.cu", spec,
                   {"keys": keys, "vals": vals, "hist": np.zeros(nbins, np.int32),
                    "fstats": np.array([0, -1e30], np.float32), "istats": istats0})
    assert oc.ok, oc.stderr
    np.testing.assert_array_equal(outs["hist"], np.bincount(keys % nbins, minlength=nbins))
    assert abs(outs["fstats"][0] - vals.astype(np.float64).sum()) < 1e-3
    assert outs["fstats"][1] == vals.max()
    bits = np.bitwise_or.reduce(np.left_shift(1, keys % 31).astype(np.int64)).astype(np.int32)
    assert list(outs["istats"]) == [keys.max(), keys.min(), bits, np.int32(-1) & ~bits, 100 - 2 * n, 7, n]


def test_early_exit_threads_do_not_block_barriers(tmp_path):
    src = write_src(tmp_path, "early.cu", """\
        #include <cuda_runtime.h>
        __global__ void early(const float* x, float* y, int n) {
          __shared__ float s[256];
          int t = threadIdx.x;
          if (t >= n) return;                 // most of the block leaves at once
          s[t] = x[t];
          for (int k = 0; k < 3; ++k) {       // barriers among the survivors only
            __syncthreads();
            float v = s[(t + 1) % n];
            __syncthreads();
            s[t] = v;
          }
          __syncthreads();
          y[t] = s[t];
        }
        """)
    n = 37
    spec = make_spec(tmp_path, "early", "cuda",
                     [("x", "float32", "in", [n]), ("y", "float32", "out", [n]), ("n", "int32", "scalar", n)],
                     [1, 1, 1], [256, 1, 1])
    x = np.arange(n, dtype=np.float32)
    oc, outs = run(tmp_path, "cuda", src, spec, {"x": x})
    assert oc.ok, oc.stderr
    np.testing.assert_array_equal(outs["y"], np.roll(x, -3))


def test_deadlock_detected_not_hung(tmp_path):
    src = write_src(tmp_path, "dead.cu", """\
        #include <cuda_runtime.h>
        __global__ void dead(float* y) {
          float v = threadIdx.x;
          if (threadIdx.x < 16)
            v = __shfl_down_sync(0xffffffff, v, 1);   // needs lanes 16..31 too
          else
            __syncthreads();                          // ... which wait here for lanes 0..15
          y[threadIdx.x] = v;
        }
        """)
    spec = make_spec(tmp_path, "dead", "cuda", [("y", "float32", "out", [32])], [1, 1, 1], [32, 1, 1])
    oc, _ = run(tmp_path, "cuda", src, spec, {}, timeout=20)
    assert not oc.timed_out
    msg = runtime_error(oc)
    assert msg.startswith("XP3001") and "dead.cu:5" in msg and "dead.cu:7" in msg


def test_barrier_divergence_detected(tmp_path):
    src = write_src(tmp_path, "div.cu", """\
        #include <cuda_runtime.h>
        __global__ void div(float* y) {
          if (threadIdx.x < 64) {
            __syncthreads();
          } else {
            __syncthreads();
          }
          y[threadIdx.x] = 1.0f;
        }
        """)
    spec = make_spec(tmp_path, "div", "cuda", [("y", "float32", "out", [128])], [1, 1, 1], [128, 1, 1])
    oc, _ = run(tmp_path, "cuda", src, spec, {})
    msg = runtime_error(oc)
    assert msg.startswith("XP3002") and "div.cu:4" in msg and "div.cu:6" in msg


def test_invalid_launch_configuration(tmp_path):
    spec = make_spec(tmp_path, "block_reverse", "cuda",
                     [("x", "float32", "in", [8]), ("y", "float32", "out", [8]), ("n", "int32", "scalar", 8)],
                     [1, 1, 1], [2048, 1, 1])
    oc, _ = run(tmp_path, "cuda", KERNELS / "reverse.cu", spec, {"x": np.zeros(8, np.float32)})
    assert runtime_error(oc).startswith("XP3004")


def test_stack_overflow_reported(tmp_path):
    src = write_src(tmp_path, "big.cu", """\
        #include <cuda_runtime.h>
        __global__ void big(float* y, int n) {
          volatile float local[300000];       // 1.2 MB of local memory per thread
          for (int i = 0; i < n; ++i) local[i * 997 % 300000] = i;
          y[threadIdx.x] = local[5];
        }
        """)
    spec = make_spec(tmp_path, "big", "cuda", [("y", "float32", "out", [4]), ("n", "int32", "scalar", 3000)],
                     [1, 1, 1], [4, 1, 1])
    oc, _ = run(tmp_path, "cuda", src, spec, {})
    assert runtime_error(oc).startswith("XP3007")


# ---------------------------------------------------------------------------------------------
# warp / wavefront collectives
# ---------------------------------------------------------------------------------------------

def _shfl_src(dialect: str) -> str:
    if dialect == "cuda":
        f = dict(idx="__shfl_sync(0xffffffff, v, {a}, {w})", up="__shfl_up_sync(0xffffffff, v, {a}, {w})",
                 down="__shfl_down_sync(0xffffffff, v, {a}, {w})", xor="__shfl_xor_sync(0xffffffff, v, {a}, {w})")
        inc = "#include <cuda_runtime.h>"
    else:
        f = dict(idx="__shfl(v, {a}, {w})", up="__shfl_up(v, {a}, {w})", down="__shfl_down(v, {a}, {w})",
                 xor="__shfl_xor(v, {a}, {w})")
        inc = "#include <hip/hip_runtime.h>"
    body = []
    for k, (kind, a, w) in enumerate(SHFL_CASES):
        body.append(f"  out[{k} * n + i] = {f[kind].format(a=a, w=w)};")
    body = "\n".join(body)
    return f"""{inc}
__global__ void shfl_all(const float* x, float* out, float* red, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
{body}
  float s = v;
  for (int o = warpSize / 2; o > 0; o >>= 1) s += {f['xor'].format(a='o', w='warpSize').replace('v,', 's,').replace('(v', '(s')};
  red[i] = s;
}}
"""


SHFL_CASES = [("idx", 3, "warpSize"), ("idx", 5, 8), ("up", 1, "warpSize"), ("up", 3, 16), ("down", 2, "warpSize"),
              ("down", 1, 8), ("xor", 1, "warpSize"), ("xor", 6, 4), ("xor", 16, "warpSize")]


def _shfl_model(vals: np.ndarray, kind: str, a: int, width: int, wave: int) -> np.ndarray:
    out = np.empty_like(vals)
    for i in range(len(vals)):
        w0, lane = i - i % wave, i % wave
        base = lane - lane % width
        if kind == "idx":
            src = base + a % width
        elif kind == "up":
            src = lane - a if lane - base >= a else lane
        elif kind == "down":
            src = lane + a if lane - base + a < width else lane
        else:
            src = lane ^ a
            if src >= base + width:
                src = lane
        out[i] = vals[w0 + src]
    return out


@pytest.mark.parametrize("dialect,wave", [("cuda", 32), ("hip", 64)])
def test_shuffles(tmp_path, dialect, wave):
    n = 2 * 128  # two blocks of 128 threads: 4 (cuda) or 2 (hip) warps each
    src = write_src(tmp_path, f"shfl.{'cu' if dialect == 'cuda' else 'hip'}", _shfl_src(dialect))
    nc = len(SHFL_CASES)
    spec = make_spec(tmp_path, "shfl_all", dialect,
                     [("x", "float32", "in", [n]), ("out", "float32", "out", [nc * n]), ("red", "float32", "out", [n]),
                      ("n", "int32", "scalar", n)], [2, 1, 1], [128, 1, 1])
    x = np.arange(n, dtype=np.float32) * 10 + 1
    oc, outs = run(tmp_path, dialect, src, spec, {"x": x})
    assert oc.ok, oc.stderr
    got = outs["out"].reshape(nc, n)
    for k, (kind, a, w) in enumerate(SHFL_CASES):
        width = wave if w == "warpSize" else w
        np.testing.assert_array_equal(got[k], _shfl_model(x, kind, a, width, wave), err_msg=f"{kind} {a} {w}")
    # spot checks written out by hand (independent of the model above)
    down1_w8 = got[SHFL_CASES.index(("down", 1, 8))]
    assert down1_w8[6] == x[7] and down1_w8[7] == x[7] and down1_w8[8] == x[9]
    up1 = got[SHFL_CASES.index(("up", 1, "warpSize"))]
    assert up1[0] == x[0] and up1[1] == x[0] and up1[wave] == x[wave] and up1[wave + 1] == x[wave]
    # butterfly reduction: every lane holds its warp's sum
    sums = x.reshape(-1, wave).sum(axis=1)
    np.testing.assert_allclose(outs["red"], np.repeat(sums, wave), rtol=1e-6)


@pytest.mark.parametrize("dialect,wave", [("cuda", 32), ("hip", 64)])
def test_ballot_any_all(tmp_path, dialect, wave):
    if dialect == "cuda":
        calls = ("__ballot_sync(0xffffffff, p)", "__any_sync(0xffffffff, p)", "__all_sync(0xffffffff, p)")
        inc, ext = "#include <cuda_runtime.h>", "cu"
    else:
        calls = ("__ballot(p)", "__any(p)", "__all(p)")
        inc, ext = "#include <hip/hip_runtime.h>", "hip"
    src = write_src(tmp_path, f"ballot.{ext}", f"""\
        {inc}
        __global__ void ballot(const int* x, long long* b, int* anyall) {{
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          int p = x[i] > 0;
          unsigned long long m = {calls[0]};
          int a = {calls[1]};
          int l = {calls[2]};
          if (threadIdx.x % warpSize == 0) {{
            b[i / warpSize] = (long long)m;
            anyall[2 * (i / warpSize)] = a;
            anyall[2 * (i / warpSize) + 1] = l;
          }}
        }}
        """)
    n = 256
    nw = n // wave
    rng = np.random.default_rng(3)
    x = rng.integers(-5, 5, n).astype(np.int32)
    x[:wave] = 1          # first warp: all true
    x[wave:2 * wave] = 0  # second warp: none true
    spec = make_spec(tmp_path, "ballot", dialect,
                     [("x", "int32", "in", [n]), ("b", "int64", "out", [nw]), ("anyall", "int32", "out", [2 * nw])],
                     [2, 1, 1], [128, 1, 1])
    oc, outs = run(tmp_path, dialect, src, spec, {"x": x, "b": np.zeros(nw, np.int64),
                                                  "anyall": np.zeros(2 * nw, np.int32)})
    assert oc.ok, oc.stderr
    for w in range(nw):
        bits = sum(1 << l for l in range(wave) if x[w * wave + l] > 0)
        assert int(outs["b"][w]) & ((1 << 64) - 1) == bits
        assert outs["anyall"][2 * w] == (bits != 0) and outs["anyall"][2 * w + 1] == (bits == (1 << wave) - 1)


def test_wave64_with_32bit_mask_is_reported(tmp_path):
    src = write_src(tmp_path, "mask.hip", """\
        #include <hip/hip_runtime.h>
        __global__ void mask32(float* y) {
          float v = threadIdx.x;
          v += __shfl_down_sync(0xffffffff, v, 1);   // CUDA habit: lanes 32..63 are not in this mask
          y[threadIdx.x] = v;
        }
        """)
    spec = make_spec(tmp_path, "mask32", "hip", [("y", "float32", "out", [64])], [1, 1, 1], [64, 1, 1])
    oc, _ = run(tmp_path, "hip", src, spec, {})
    msg = runtime_error(oc)
    assert msg.startswith("XP3006") and "mask.hip:4" in msg


# ---------------------------------------------------------------------------------------------
# matrix units and half precision
# ---------------------------------------------------------------------------------------------

def test_wmma_16x16x16(tmp_path):
    M, N, K = 32, 48, 32
    rng = np.random.default_rng(4)
    A = rng.standard_normal((M, K)).astype(np.float16)
    Bt = rng.standard_normal((N, K)).astype(np.float16)  # B stored column-major = B^T row-major
    bias = rng.standard_normal((M, N)).astype(np.float32)
    warps = (M // 16) * (N // 16)
    spec = make_spec(tmp_path, "wmma_gemm", "cuda",
                     [("A", "float16", "in", [M, K]), ("B", "float16", "in", [N, K]), ("bias", "float32", "in", [M, N]),
                      ("C", "float32", "out", [M, N]), ("M", "int32", "scalar", M), ("N", "int32", "scalar", N),
                      ("K", "int32", "scalar", K)], [warps // 2, 1, 1], [64, 1, 1])
    oc, outs = run(tmp_path, "cuda", KERNELS / "wmma.cu", spec, {"A": A, "B": Bt, "bias": bias})
    assert oc.ok, oc.stderr
    want = 2 * (A.astype(np.float64) @ Bt.astype(np.float64).T + bias)
    np.testing.assert_allclose(outs["C"], want, rtol=1e-4, atol=1e-4)


def test_mfma_both_forms_match_numpy(tmp_path):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((16, 4)).astype(np.float32)
    B = rng.standard_normal((4, 16)).astype(np.float32)
    C = rng.standard_normal((16, 16)).astype(np.float32)
    spec = make_spec(tmp_path, "mfma_f32", "hip",
                     [("A", "float32", "in", [16, 4]), ("B", "float32", "in", [4, 16]), ("C", "float32", "in", [16, 16]),
                      ("D", "float32", "out", [16, 16])], [1, 1, 1], [64, 1, 1])
    oc, outs = run(tmp_path, "hip", KERNELS / "mfma.hip", spec, {"A": A, "B": B, "C": C})
    assert oc.ok, oc.stderr
    np.testing.assert_allclose(outs["D"], A.astype(np.float64) @ B + C, rtol=1e-5, atol=1e-5)

    A16 = rng.standard_normal((16, 16)).astype(np.float16)
    B16 = rng.standard_normal((16, 16)).astype(np.float16)
    spec = make_spec(tmp_path, "mfma_f16", "hip",
                     [("A", "float16", "in", [16, 16]), ("B", "float16", "in", [16, 16]), ("C", "float32", "in", [16, 16]),
                      ("D", "float32", "out", [16, 16])], [1, 1, 1], [64, 1, 1])
    oc, outs = run(tmp_path, "hip", KERNELS / "mfma.hip", spec, {"A": A16, "B": B16, "C": C})
    assert oc.ok, oc.stderr
    np.testing.assert_allclose(outs["D"], A16.astype(np.float64) @ B16.astype(np.float64) + C, rtol=1e-5, atol=1e-4)


def test_half_arithmetic(tmp_path):
    src = write_src(tmp_path, "half.cu", """\
        #include <cuda_fp16.h>
        __global__ void halfops(const half* a, const half* b, half* sum, half* prod, float* f, half* fma2, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i >= n) return;
          sum[i] = __hadd(a[i], b[i]);
          prod[i] = __hmul(a[i], b[i]);
          f[i] = __half2float(a[i]) + 0.5f;
          half2 p = __halves2half2(a[i], b[i]);
          half2 q = __hfma2(p, p, __float2half2_rn(1.0f));
          float2 qf = __half22float2(q);
          fma2[i] = __float2half(qf.x - qf.y);
        }
        """)
    n = 100
    rng = np.random.default_rng(6)
    a = rng.uniform(-4, 4, n).astype(np.float16)
    b = rng.uniform(-4, 4, n).astype(np.float16)
    spec = make_spec(tmp_path, "halfops", "cuda",
                     [("a", "float16", "in", [n]), ("b", "float16", "in", [n]), ("sum", "float16", "out", [n]),
                      ("prod", "float16", "out", [n]), ("f", "float32", "out", [n]), ("fma2", "float16", "out", [n]),
                      ("n", "int32", "scalar", n)], [1, 1, 1], [128, 1, 1])
    oc, outs = run(tmp_path, "cuda", src, spec, {"a": a, "b": b})
    assert oc.ok, oc.stderr
    np.testing.assert_array_equal(outs["sum"], (a.astype(np.float32) + b).astype(np.float16))
    np.testing.assert_array_equal(outs["prod"], (a.astype(np.float32) * b).astype(np.float16))
    np.testing.assert_array_equal(outs["f"], a.astype(np.float32) + 0.5)
    qa = (a.astype(np.float32) * a + 1).astype(np.float16).astype(np.float32)
    qb = (b.astype(np.float32) * b + 1).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(outs["fma2"], (qa - qb).astype(np.float16))


# ---------------------------------------------------------------------------------------------
# AddressSanitizer
# ---------------------------------------------------------------------------------------------

def test_asan_catches_global_out_of_bounds(tmp_path):
    src = write_src(tmp_path, "oob.cu", """\
        #include <cuda_runtime.h>
        __global__ void oob(const float* x, float* y, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i <= n) y[i] = x[i];            // off by one: i == n writes past the end
        }
        """)
    n = 100
    spec = make_spec(tmp_path, "oob", "cuda",
                     [("x", "float32", "in", [n + 1]), ("y", "float32", "out", [n]), ("n", "int32", "scalar", n)],
                     [1, 1, 1], [128, 1, 1])
    oc, _ = run(tmp_path, "cuda", src, spec, {"x": np.zeros(n + 1, np.float32)}, sanitize=True)
    # i == n lands in y's guard zone (xp_job.h), poisoned under ASan: the kind reads use-after-poison
    assert oc.reason == "asan" and ("heap-buffer-overflow" in oc.stderr or "use-after-poison" in oc.stderr)
    assert "oob.cu:4" in oc.stderr
    oc, _ = run(tmp_path, "cuda", src, spec, {"x": np.zeros(n + 1, np.float32)}, sanitize=False)
    # without ASan the write still lands in y's guard zone, which the harness checks (XP4280):
    # before the zones (2026-12-05) it went unnoticed, as on a GPU
    assert oc.reason == "runtime-error" and "XP4280" in oc.stderr, (oc.reason, oc.stderr[-500:])


def test_asan_catches_shared_array_overflow(tmp_path):
    src = write_src(tmp_path, "shoob.cu", """\
        #include <cuda_runtime.h>
        __global__ void shoob(const float* x, float* y) {
          __shared__ float s[64];
          s[threadIdx.x + 1] = x[threadIdx.x];   // thread 63 writes s[64]
          __syncthreads();
          y[threadIdx.x] = s[threadIdx.x];
        }
        """)
    spec = make_spec(tmp_path, "shoob", "cuda", [("x", "float32", "in", [64]), ("y", "float32", "out", [64])],
                     [1, 1, 1], [64, 1, 1])
    oc, _ = run(tmp_path, "cuda", src, spec, {"x": np.zeros(64, np.float32)}, sanitize=True)
    assert oc.reason == "asan" and "global-buffer-overflow" in oc.stderr and "shoob.cu:4" in oc.stderr


def test_asan_run_of_a_clean_kernel_passes(tmp_path):
    n = 256
    spec = make_spec(tmp_path, "softmax_rows", "cuda",
                     [("x", "float32", "in", [4, n]), ("y", "float32", "out", [4, n]), ("rows", "int32", "scalar", 4),
                      ("cols", "int32", "scalar", n)], [4, 1, 1], [256, 1, 1])
    x = np.random.default_rng(7).standard_normal((4, n)).astype(np.float32)
    oc, outs = run(tmp_path, "cuda", KERNELS / "softmax_rows.cu", spec, {"x": x}, sanitize=True)
    assert oc.ok, oc.stderr
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(outs["y"], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# host launchers
# ---------------------------------------------------------------------------------------------

def test_cuda_host_launcher(tmp_path):
    main = """
    int main() {
      const int n = 1000;
      static float x[n], y[n];
      for (int i = 0; i < n; ++i) { x[i] = i; y[i] = 1.0f; }
      int rc = saxpy_host(2.0f, x, y, n);
      int bad = 0;
      for (int i = 0; i < n; ++i) bad += y[i] != 2.0f * i + 1.0f;
      printf("rc=%d bad=%d\\n", rc, bad);
      return rc || bad;
    }
    """
    exe = compile_with_main(tmp_path, PLATFORMS["cuda"], KERNELS / "host_launcher.cu", main)
    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "rc=0 bad=0" in p.stdout, p.stdout + p.stderr


def test_hip_host_launcher_with_hipLaunchKernelGGL(tmp_path):
    main = """
    int main() {
      const int rows = 5, cols = 200;
      static float x[rows * cols], out[rows];
      for (int i = 0; i < rows * cols; ++i) x[i] = (float)(i % 17) - 8.0f;
      int rc = row_sum_host(x, out, rows, cols);
      int bad = 0;
      for (int r = 0; r < rows; ++r) { double s = 0; for (int c = 0; c < cols; ++c) s += x[r * cols + c];
                                       bad += fabs(out[r] - s) > 1e-3; }
      printf("rc=%d bad=%d warp=%d\\n", rc, bad, warpSize);
      return rc || bad;
    }
    """
    exe = compile_with_main(tmp_path, PLATFORMS["hip"], KERNELS / "host_launcher.hip", main)
    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "rc=0 bad=0 warp=64" in p.stdout, p.stdout + p.stderr


# ---------------------------------------------------------------------------------------------
# real compilers, doctor, GPU
# ---------------------------------------------------------------------------------------------

def test_doctor_rows():
    ids = [r[0] for r in PLATFORMS["cuda"].doctor()]
    assert ids[0] == "emu:simt-cpu" and "compile:nvcc-sm90" in ids
    hip_ids = [r[0] for r in PLATFORMS["hip"].doctor()]
    assert {"emu:simt-cpu", "compile:amdgcn-gfx90a", "compile:amdgcn-gfx1100"} <= set(hip_ids)
    assert PLATFORMS["cuda"].substrate() == "emu:simt-cpu"


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
def test_nvcc_compile_check(tmp_path):
    r = PLATFORMS["cuda"].compile_check(KERNELS / "wmma.cu")
    assert r["ok"], r["log"]
    res = r["resources"]["_Z9wmma_gemmPK6__halfS1_PKfPfiii"]
    assert res["registers"] > 0
    bad = write_src(tmp_path, "bad.cu", "__global__ void k(float* y) {\n  y[0] = nope;\n}\n")
    r = PLATFORMS["cuda"].compile_check(bad)
    assert not r["ok"] and r["error"]["line"] == 2


@pytest.mark.skipif(not Path("/usr/lib/llvm-15/bin/clang++").exists() or not Path("/usr/include/hip/hip_runtime.h").exists(),
                    reason="clang-15 / HIP headers not installed")
@pytest.mark.parametrize("arch,wave", [("gfx90a", 64), ("gfx1100", 32)])
def test_amdgpu_compile_check(arch, wave):
    src = KERNELS / ("mfma.hip" if arch == "gfx90a" else "host_launcher.hip")
    r = HipPlatform().compile_check(src, arch=arch)
    assert r["ok"], r["log"][-2000:]
    (name, res), *_ = r["resources"].items()
    assert res["vgpr"] > 0 and res["wave"] == wave


@pytest.mark.gpu
def test_gpu_build_runs_on_nvidia(tmp_path):
    n = 300
    spec = make_spec(tmp_path, "block_reverse", "cuda",
                     [("x", "float32", "in", [n]), ("y", "float32", "out", [n]), ("n", "int32", "scalar", n)],
                     [3, 1, 1], [128, 1, 1])
    exe = CudaPlatform().build(KERNELS / "reverse.cu", spec, tmp_path, sanitize=False, gpu=True, timing=True)
    x = np.arange(n, dtype=np.float32)
    inst = spec.instances()[0]
    write_job(tmp_path / "job", inst, {"x": x, "y": np.full(n, np.nan, np.float32)})
    oc = run_limited([str(exe), str(tmp_path / "job")], timeout_s=120, mem_mb=None)
    assert oc.ok, oc.stderr
    assert re.search(r"xpiler-time-ms: [0-9.]+", oc.stdout)
    y = read_outputs(tmp_path / "job", inst)["y"]
    np.testing.assert_array_equal(y[:128], x[:128][::-1])
    np.testing.assert_array_equal(y[256:], x[256:][::-1])


@pytest.mark.gpu
def test_gpu_hip_on_cuda(tmp_path):
    rows, cols = 5, 200
    spec = make_spec(tmp_path, "row_sum", "hip",
                     [("x", "float32", "in", [rows, cols]), ("out", "float32", "out", [rows]),
                      ("cols", "int32", "scalar", cols)], [rows, 1, 1], [64, 1, 1])
    exe = HipPlatform().build(KERNELS / "host_launcher.hip", spec, tmp_path, sanitize=False, gpu=True)
    x = np.random.default_rng(8).standard_normal((rows, cols)).astype(np.float32)
    inst = spec.instances()[0]
    write_job(tmp_path / "job", inst, {"x": x, "out": np.full(rows, np.nan, np.float32)})
    oc = run_limited([str(exe), str(tmp_path / "job")], timeout_s=120, mem_mb=None)
    assert oc.ok, oc.stderr
    out = read_outputs(tmp_path / "job", inst)["out"]
    # on NVIDIA the warp is 32 lanes: a wave64 reduction written with warpSize still sums all columns
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-4, atol=1e-4)


def test_cooperative_groups_tiles(tmp_path):
    spec = make_spec(tmp_path, "k", "cuda", [("x", "float32", "in", [128]), ("out", "float32", "out", [4]),
                                             ("out2", "float32", "out", [128])], [1, 1, 1], [128, 1, 1])
    x = ((np.arange(128) * 37) % 101).astype(np.float32)
    oc, outs = run(tmp_path, "cuda", KERNELS / "coop_groups.cu", spec, {"x": x})
    assert oc.ok, oc.stderr
    np.testing.assert_array_equal(outs["out"], x.reshape(4, 32).sum(axis=1))
    np.testing.assert_array_equal(outs["out2"], np.repeat(x.reshape(8, 16).max(axis=1), 16))


def test_partial_mask_shuffle_in_divergent_code(tmp_path):
    src = write_src(tmp_path, "part.cu", """\
        #include <cuda_runtime.h>
        __global__ void part(const float* x, float* y) {
          int lane = threadIdx.x % 32;
          float v = x[threadIdx.x];
          if (lane < 16) {
            for (int o = 8; o > 0; o >>= 1) v += __shfl_down_sync(0x0000ffffu, v, o, 16);
          } else {
            for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffff0000u, v, o, 16));
          }
          y[threadIdx.x] = v;
        }
        """)
    spec = make_spec(tmp_path, "part", "cuda", [("x", "float32", "in", [64]), ("y", "float32", "out", [64])],
                     [1, 1, 1], [64, 1, 1])
    x = np.random.default_rng(9).integers(-50, 50, 64).astype(np.float32)
    oc, outs = run(tmp_path, "cuda", src, spec, {"x": x})
    assert oc.ok, oc.stderr
    y = outs["y"].reshape(2, 2, 16)
    xs = x.reshape(2, 2, 16)
    np.testing.assert_array_equal(y[:, 0, 0], xs[:, 0].sum(axis=1))   # lane 0 of each half-warp group: sum
    np.testing.assert_array_equal(y[:, 1, :], np.repeat(xs[:, 1].max(axis=1)[:, None], 16, axis=1))


def test_static_shared_is_poisoned_at_every_block_start(tmp_path):
    # The kernel forgets to fill the last slot of its tile.  Block 0 would read zeros and block 1
    # the previous block's data if shared memory were plain static storage; poisoned, every
    # block's last element becomes NaN and the verification catches it.
    src = write_src(tmp_path, "stale.cu", """\
        #include <cuda_runtime.h>
        __global__ void stale(const float* x, float* y) {
          __shared__ float tile[33];
          int t = threadIdx.x;
          tile[t] = x[blockIdx.x * 32 + t];      // tile[32] is never written
          __syncthreads();
          y[blockIdx.x * 32 + t] = tile[t] + tile[t + 1];
        }
        """)
    spec = make_spec(tmp_path, "stale", "cuda", [("x", "float32", "in", [64]), ("y", "float32", "out", [64])],
                     [2, 1, 1], [32, 1, 1])
    x = np.ones(64, np.float32)
    oc, outs = run(tmp_path, "cuda", src, spec, {"x": x})
    assert oc.ok, oc.stderr
    y = outs["y"].reshape(2, 32)
    assert np.isnan(y[:, 31]).all() and (y[:, :31] == 2).all()


def test_spin_lock_with_atomicCAS_and_livelock_report(tmp_path):
    src = write_src(tmp_path, "lock.cu", """\
        #include <cuda_runtime.h>
        __global__ void locked(int* lock, float* total, const float* x) {
          // one thread per warp takes a block-wide lock around a non-atomic update
          if (threadIdx.x % 32 == 0) {
            while (atomicCAS(lock, 0, 1) != 0) { }
            float t = *total;
            __threadfence();                       // lets other threads run inside the critical section
            *total = t + x[blockIdx.x * blockDim.x + threadIdx.x];
            atomicExch(lock, 0);
          }
        }
        __global__ void wait_later(int* flag, float* total, const float* x) {
          if (blockIdx.x == 0) { while (atomicAdd(flag, 0) == 0) { } }   // block 1 sets it: never, here
          else if (threadIdx.x == 0) atomicExch(flag, 1);
          total[0] = x[0];
        }
        """)
    x = np.arange(256, dtype=np.float32)
    args = [("lock", "int32", "inout", [1]), ("total", "float32", "inout", [1]), ("x", "float32", "in", [256])]
    spec = make_spec(tmp_path, "locked", "cuda", args, [2, 1, 1], [128, 1, 1])
    oc, outs = run(tmp_path, "cuda", src, spec, {"lock": np.zeros(1, np.int32), "total": np.zeros(1, np.float32), "x": x})
    assert oc.ok, oc.stderr
    assert outs["total"][0] == x[::32].sum() and outs["lock"][0] == 0
    spec = make_spec(tmp_path, "wait_later", "cuda", args, [2, 1, 1], [32, 1, 1])
    oc, _ = run(tmp_path, "cuda", src, spec, {"lock": np.zeros(1, np.int32), "total": np.zeros(1, np.float32), "x": x},
                timeout=30)
    assert runtime_error(oc).startswith("XP3014")


def test_barrier_reductions_and_warp_reduce(tmp_path):
    src = write_src(tmp_path, "bred.cu", """\
        #include <cuda_runtime.h>
        __global__ void bred(const int* x, int* out) {
          int v = x[threadIdx.x];
          int c = __syncthreads_count(v > 0);
          int a = __syncthreads_and(v > -100);
          int o = __syncthreads_or(v == 7);
          int c2 = __syncthreads_count(v > 3);      // a second round must not mix with the first
          __syncwarp();
          int s = __reduce_add_sync(0xffffffff, v);
          int mx = __reduce_max_sync(0xffffffff, v);
          if (threadIdx.x == 0) { out[0] = c; out[1] = a; out[2] = o; out[3] = c2; }
          if (threadIdx.x % 32 == 0) { out[4 + 2 * (threadIdx.x / 32)] = s; out[5 + 2 * (threadIdx.x / 32)] = mx; }
        }
        """)
    x = np.random.default_rng(10).integers(-10, 10, 96).astype(np.int32)
    x[5] = 7
    spec = make_spec(tmp_path, "bred", "cuda", [("x", "int32", "in", [96]), ("out", "int32", "out", [10])],
                     [1, 1, 1], [96, 1, 1])
    oc, outs = run(tmp_path, "cuda", src, spec, {"x": x, "out": np.zeros(10, np.int32)})
    assert oc.ok, oc.stderr
    o = outs["out"]
    assert list(o[:4]) == [(x > 0).sum(), 1, 1, (x > 3).sum()]
    w = x.reshape(3, 32)
    assert list(o[4:]) == [v for k in range(3) for v in (w[k].sum(), w[k].max())]


def test_asan_catches_local_array_overflow_on_a_fiber_stack(tmp_path):
    src = write_src(tmp_path, "local.cu", """\
        #include <cuda_runtime.h>
        __global__ void local(const int* idx, float* y) {
          float acc[8];
          for (int i = 0; i < 8; ++i) acc[i] = i;
          y[threadIdx.x] = acc[idx[threadIdx.x]];   // idx 8 reads past the local array
        }
        """)
    spec = make_spec(tmp_path, "local", "cuda", [("idx", "int32", "in", [64]), ("y", "float32", "out", [64])],
                     [1, 1, 1], [64, 1, 1])
    idx = np.zeros(64, np.int32)
    oc, outs = run(tmp_path, "cuda", src, spec, {"idx": idx}, sanitize=True)
    assert oc.ok, oc.stderr
    idx[40] = 8
    oc, _ = run(tmp_path, "cuda", src, spec, {"idx": idx}, sanitize=True)
    assert oc.reason == "asan" and "stack-buffer-overflow" in oc.stderr and "local.cu:5" in oc.stderr
