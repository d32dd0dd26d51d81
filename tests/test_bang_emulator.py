"""The BANG C functional emulator (xpiler/runtime/bang/xp_bang.h + xpiler/platforms/bang.py).

Every operation family is checked against numpy, the task model against its definition, and
every rule the emulator enforces against a kernel that breaks it (exit 97 with its XP30xx code).
Test kernels live in tests/bang/.  One build per kernel serves many runs: sizes, the selected
operation and the launch shape travel in the job folder.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from xpiler.diagnostics import XPError
from xpiler.platforms.bang import BangPlatform, prepare_source
from xpiler.platforms.harness import read_outputs, write_job
from xpiler.spec import load_spec

HERE = Path(__file__).resolve().parent / "bang"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")


# ----------------------------------------------------------------------------------- helpers
class Kernel:
    """A test kernel built once (per sanitize mode); run() takes sizes/scalars/launch overrides."""

    def __init__(self, stem: str, workdir: Path, sanitize: bool = False):
        self.src = HERE / f"{stem}.mlu"
        self.spec = load_spec(HERE / f"{stem}.toml")
        self.workdir = workdir
        self.exe = BangPlatform().build(self.src, self.spec, workdir, sanitize=sanitize)
        self.runs = 0

    def run(self, arrays: dict, scalars: dict | None = None, dim=None, func_type=None, expect_rc=0):
        inst = self.spec.instances()[0]
        shapes = dict(inst.shapes)
        full = {}
        for a in self.spec.arrays:
            v = arrays.get(a.name)
            if isinstance(v, tuple) or v is None:  # an output given by its shape: poison it
                shp = v or shapes[a.name]
                v = np.full(shp, np.nan, np.float32) if a.dtype.startswith("float") \
                    else np.full(shp, 0x7F7F7F7F, np.int32)
            full[a.name] = np.asarray(v)
            shapes[a.name] = tuple(full[a.name].shape)
        sc = dict(inst.scalars)
        sc.update(scalars or {})
        inst = dataclasses.replace(inst, shapes=shapes, scalars=sc, dim=dim or inst.dim,
                                   func_type=func_type or inst.func_type)
        self.runs += 1
        jd = self.workdir / f"job{self.runs}"
        write_job(jd, inst, full)
        env = dict(os.environ, ASAN_OPTIONS="exitcode=98:detect_leaks=0")
        p = subprocess.run([str(self.exe), str(jd)], capture_output=True, text=True, timeout=60, env=env)
        if expect_rc is not None:
            assert p.returncode == expect_rc, p.stderr[-3000:]
        if p.returncode != 0:
            return p
        return read_outputs(jd, inst)


def runtime_code(p) -> str:
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("xpiler-runtime-error: ")]
    assert len(lines) == 1, p.stderr
    return lines[0].split()[1]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("bang")


@pytest.fixture(scope="module")
def vec(work):
    return Kernel("vec_ops", work / "vec")


@pytest.fixture(scope="module")
def tens(work):
    return Kernel("tensor_ops", work / "tens")


def f32(x):
    return np.asarray(x, dtype=np.float32)


def h16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


# --------------------------------------------------------------------- elementwise families
def _erf(x):
    from math import erf
    return np.vectorize(erf)(x.astype(np.float64))


VEC_REF = {
    0: lambda a, b, s: a + b, 1: lambda a, b, s: a - b, 2: lambda a, b, s: a * b,
    3: lambda a, b, s: np.maximum(a, b), 4: lambda a, b, s: np.minimum(a, b), 5: lambda a, b, s: a / b,
    6: lambda a, b, s: a + 2.5, 7: lambda a, b, s: a - 2.5, 8: lambda a, b, s: a * -3.0, 9: lambda a, b, s: a / 4.0,
    10: lambda a, b, s: a + s[np.arange(a.size) % 64], 11: lambda a, b, s: a - s[np.arange(a.size) % 64],
    12: lambda a, b, s: a * s[np.arange(a.size) % 64],
    13: lambda a, b, s: np.exp(a), 14: lambda a, b, s: 1 / a, 15: lambda a, b, s: 1 / a,
    16: lambda a, b, s: np.maximum(a, 0), 17: lambda a, b, s: np.sign(a), 18: lambda a, b, s: 1 / (1 + np.exp(-a)),
    19: lambda a, b, s: 0.5 * a * (1 + _erf(a / np.sqrt(2))),
    20: lambda a, b, s: 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3))),
    21: lambda a, b, s: np.tanh(a), 22: lambda a, b, s: np.sqrt(np.abs(a)), 23: lambda a, b, s: 1 / np.sqrt(np.abs(a)),
    24: lambda a, b, s: a * a, 25: lambda a, b, s: np.abs(a), 26: lambda a, b, s: np.sin(a),
    27: lambda a, b, s: np.zeros_like(a), 28: lambda a, b, s: np.full_like(a, 3.0), 29: lambda a, b, s: np.full_like(a, -1.5),
    30: lambda a, b, s: a * 0.5 + 1.0, 31: lambda a, b, s: a / b, 32: lambda a, b, s: a / 8.0,
}


def test_elementwise_unary_fill_ops_match_numpy(vec):
    rng = np.random.default_rng(1)
    n = 1000  # not a multiple of the chunk or of 64: exercises padding
    a = f32(rng.uniform(-3, 3, n))
    a[5] = 0.0  # sign(0) = 0
    b = f32(rng.uniform(0.5, 2.0, n)) * np.where(rng.random(n) < 0.5, -1, 1).astype(np.float32)
    for op, ref in VEC_REF.items():
        aa = a if op not in (14, 15, 23) else np.where(np.abs(a) < 0.1, 0.5, a).astype(np.float32)
        out = vec.run({"a": aa, "b": b, "out": (n,)}, {"op": op, "n": n})["out"]
        want = ref(aa.astype(np.float64), b.astype(np.float64), b[:64].astype(np.float64))
        np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-6, err_msg=f"op {op}")


def test_half_precision_ops(vec):
    rng = np.random.default_rng(2)
    n = 700
    a = f32(rng.uniform(-2, 2, n))
    b = f32(rng.uniform(-2, 2, n))
    ha, hb = h16(a).astype(np.float64), h16(b).astype(np.float64)
    refs = {100: ha + hb, 101: ha * hb, 102: np.exp(ha), 103: ha * 0.25, 104: 1 / (1 + np.exp(-ha))}
    for op, want in refs.items():
        out = vec.run({"a": a, "b": b, "out": (n,)}, {"op": op, "n": n})["out"]
        np.testing.assert_allclose(out, h16(want), rtol=2e-3, atol=2e-3, err_msg=f"op {op}")
        # results are really rounded to half
        assert np.array_equal(out, h16(out))


def test_vec_ops_with_block_launch_and_many_tasks(vec):
    rng = np.random.default_rng(3)
    n = 3000
    a, b = f32(rng.standard_normal(n)), f32(rng.standard_normal(n))
    out = vec.run({"a": a, "b": b, "out": (n,)}, {"op": 2, "n": n}, dim=(3, 2, 1), func_type="block")["out"]
    np.testing.assert_allclose(out, a * b, rtol=1e-6)
    out = vec.run({"a": a, "b": b, "out": (n,)}, {"op": 0, "n": n}, dim=(4, 2, 1), func_type="union2")["out"]
    np.testing.assert_allclose(out, a + b, rtol=1e-6)


# ------------------------------------------------------------------------- tensor families
def _pool_ref(x, kind, kh, kw, sh, sw):
    H, W, C = x.shape
    Ho, Wo = (H - kh) // sh + 1, (W - kw) // sw + 1
    out = np.empty((Ho, Wo, C))
    for i in range(Ho):
        for j in range(Wo):
            win = x[i * sh:i * sh + kh, j * sw:j * sw + kw, :].astype(np.float64)
            out[i, j] = {"sum": win.sum((0, 1)), "avg": win.mean((0, 1)), "max": win.max((0, 1)),
                         "min": win.min((0, 1))}[kind]
    return out


def test_pools_float_and_half(tens):
    rng = np.random.default_rng(4)
    C, H, W, kh, kw, sh, sw = 32, 7, 6, 3, 2, 2, 1
    x = f32(rng.standard_normal((H, W, C)))
    Ho, Wo = (H - kh) // sh + 1, (W - kw) // sw + 1
    ps = {"p0": C, "p1": H, "p2": W, "p3": kh, "p4": kw, "p5": sh, "p6": sw}
    for op, kind in enumerate(["sum", "avg", "max", "min"]):
        out = tens.run({"x": x.ravel(), "out": (Ho * Wo * C,)}, {"op": op, **ps})["out"]
        np.testing.assert_allclose(out.reshape(Ho, Wo, C), _pool_ref(x, kind, kh, kw, sh, sw), rtol=1e-5, atol=1e-5)
        out = tens.run({"x": x.ravel(), "out": (Ho * Wo * C,)}, {"op": op + 4, **ps})["out"]
        np.testing.assert_allclose(out.reshape(Ho, Wo, C), _pool_ref(h16(x), kind, kh, kw, sh, sw), rtol=5e-3, atol=5e-3)


def test_conv_float_and_half(tens):
    rng = np.random.default_rng(5)
    Cin, H, W, kh, kw, sw, sh, Cout = 5, 6, 7, 3, 2, 2, 1, 4
    x = f32(rng.standard_normal((H, W, Cin)))
    f = f32(rng.standard_normal((Cout, kh, kw, Cin)))
    Ho, Wo = (H - kh) // sh + 1, (W - kw) // sw + 1

    def ref(x, f):
        out = np.zeros((Ho, Wo, Cout))
        for i in range(Ho):
            for j in range(Wo):
                win = x[i * sh:i * sh + kh, j * sw:j * sw + kw, :].astype(np.float64)
                out[i, j] = np.einsum("hwc,ohwc->o", win, f.astype(np.float64))
        return out
    ps = {"p0": Cin, "p1": H, "p2": W, "p3": kh, "p4": kw, "p5": sw, "p6": sh, "p7": Cout}
    arrays = {"x": x.ravel(), "w": f.ravel(), "out": (Ho * Wo * Cout,)}
    out = tens.run(arrays, {"op": 8, **ps})["out"]
    np.testing.assert_allclose(out.reshape(Ho, Wo, Cout), ref(x, f), rtol=1e-4, atol=1e-4)
    out = tens.run(arrays, {"op": 9, **ps})["out"]
    np.testing.assert_allclose(out.reshape(Ho, Wo, Cout), ref(h16(x), h16(f)), rtol=1e-3, atol=1e-3)


def test_matmul_all_forms(tens):
    rng = np.random.default_rng(6)
    M, K, N = 5, 37, 9
    a, b = f32(rng.standard_normal((M, K))), f32(rng.standard_normal((K, N)))
    arrays = {"x": a.ravel(), "w": b.ravel(), "out": (M * N,)}
    dims = {"p0": M, "p1": K, "p2": N}
    out = tens.run(arrays, {"op": 10, **dims})["out"].reshape(M, N)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    hh = h16(a).astype(np.float64) @ h16(b)
    out = tens.run(arrays, {"op": 11, **dims})["out"].reshape(M, N)   # half x half -> float
    np.testing.assert_allclose(out, hh, rtol=1e-4, atol=1e-4)
    out = tens.run(arrays, {"op": 12, **dims})["out"].reshape(M, N)   # half x half -> half
    np.testing.assert_allclose(out, h16(hh), rtol=2e-3, atol=2e-3)
    ai = rng.integers(-128, 128, (M, K)).astype(np.float32)
    bi = rng.integers(-128, 128, (K, N)).astype(np.float32)
    for pos in (0, -3, 2):
        out = tens.run({"x": ai.ravel(), "w": bi.ravel(), "out": (M * N,)},
                       {"op": 13, **dims, "p3": pos})["out"].reshape(M, N)
        want = (ai.astype(np.int64) @ bi.astype(np.int64)).astype(np.float64) * 2.0 ** pos
        np.testing.assert_allclose(out, want, rtol=1e-6)


def test_mlp_transpose_reductions(tens):
    rng = np.random.default_rng(7)
    K, N = 45, 7
    x, wt = f32(rng.standard_normal(K)), f32(rng.standard_normal((N, K)))
    arrays = {"x": x, "w": wt.ravel(), "out": (N,)}
    out = tens.run(arrays, {"op": 14, "p0": K, "p1": N})["out"]
    np.testing.assert_allclose(out, wt.astype(np.float64) @ x, rtol=1e-4, atol=1e-5)
    out = tens.run(arrays, {"op": 15, "p0": K, "p1": N})["out"]
    np.testing.assert_allclose(out, h16(h16(wt).astype(np.float64) @ h16(x)), rtol=3e-3, atol=3e-3)

    H, W = 6, 11
    m = f32(rng.standard_normal((H, W)))
    out = tens.run({"x": m.ravel(), "out": (H * W,)}, {"op": 16, "p0": H, "p1": W})["out"]
    np.testing.assert_array_equal(out.reshape(W, H), m.T)

    n = 96
    v = f32(rng.standard_normal(n))
    out = tens.run({"x": v, "out": (2,)}, {"op": 17, "p0": n})["out"]
    assert out[0] == v.max() and out[1] == float(np.argmax(v))
    out = tens.run({"x": v, "out": (2,)}, {"op": 18, "p0": n})["out"]
    assert out[0] == v.min() and out[1] == float(np.argmin(v))
    out = tens.run({"x": v, "out": (2,)}, {"op": 19, "p0": n})["out"]
    assert abs(out[0] - v.astype(np.float64).sum()) < 1e-4


def test_strided_memcpy_gdram_and_sram(tens):
    rng = np.random.default_rng(8)
    R, Cols, c0, cw, ld = 5, 13, 3, 4, 7
    x = f32(rng.standard_normal((R, Cols)))
    want = np.zeros((R, ld), np.float32)
    want[:, :cw] = 2 * x[:, c0:c0 + cw]
    for op in (20, 21):
        out = tens.run({"x": x.ravel(), "out": (R * ld,)},
                       {"op": op, "p0": R, "p1": Cols, "p2": c0, "p3": cw, "p4": ld})["out"]
        np.testing.assert_array_equal(out.reshape(R, ld), want, err_msg=f"op {op}")


# ------------------------------------------------------------------------------- task model
def _task_table(T, dims, union):
    rows = []
    for t in range(T):
        core_dim = 4 if union else 1
        rows.append([t, T, t % dims[0], (t // dims[0]) % dims[1], t // (dims[0] * dims[1]), dims[0], dims[1], dims[2],
                     t % core_dim, core_dim, t // core_dim, T // core_dim])
    return np.array(rows, np.int32)


@pytest.mark.parametrize("dims,ftype", [((4, 1, 1), "union1"), ((2, 3, 1), "block"), ((4, 2, 2), "union4"),
                                        ((8, 1, 1), "union2"), ((3, 1, 2), "block")])
def test_task_model_builtins(work, dims, ftype):
    k = _kernels(work, "task_model")
    T = dims[0] * dims[1] * dims[2]
    out = k.run({"out": (T, 12)}, dim=dims, func_type=ftype)["out"]
    np.testing.assert_array_equal(out, _task_table(T, dims, ftype != "block"))


_CACHE: dict = {}


def _kernels(work, stem, sanitize=False):
    key = (stem, sanitize)
    if key not in _CACHE:
        _CACHE[key] = Kernel(stem, work / (stem + ("_asan" if sanitize else "")), sanitize=sanitize)
    return _CACHE[key]


def test_launch_shape_rules(work):
    k = _kernels(work, "task_model")
    p = k.run({"out": (6, 12)}, dim=(6, 1, 1), func_type="union1", expect_rc=97)  # 6 is no multiple of 4
    assert runtime_code(p) == "XP3062" and "multiple of 4" in p.stderr
    p = k.run({"out": (8, 12)}, dim=(8, 1, 1), func_type="union4", expect_rc=97)  # union4 needs 16 tasks
    assert runtime_code(p) == "XP3062"


# -------------------------------------------------------------------- SRAM and barriers
def test_sync_cluster_sram_exchange(work):
    k = _kernels(work, "cluster_sync")
    n = 40
    x = f32(np.arange(8 * n).reshape(8, n) * 0.5 - 3)
    out = k.run({"x": x, "out": (8, 2, n)}, {"n": n})["out"]
    for t in range(8):
        cl, c = divmod(t, 4)
        np.testing.assert_array_equal(out[t, 0], x[cl * 4 + (c + 1) % 4])
        want = 2 * x[cl * 4 + (c + 2) % 4]
        want[0] += 1000.0 * cl   # SRAM is per cluster: cluster 1 sees its own flag
        np.testing.assert_array_equal(out[t, 1], want)


def test_sync_all_across_clusters(work):
    k = _kernels(work, "sync_all")
    x = f32(np.arange(8) + 1.0)
    for dims, ft in (((8, 1, 1), "union1"), ((8, 1, 1), "block"), ((8, 1, 1), "union2")):
        out = k.run({"x": x, "scratch": (8,), "out": (8,)}, dim=dims, func_type=ft)["out"]
        np.testing.assert_array_equal(out, 2 * np.roll(x, -1))


# ------------------------------------------------------------------------ rule violations
ERROR_CASES = {
    1: ("XP3050", "lies in GDRAM, not in NRAM"),
    2: ("XP3053", "'big'"),
    3: ("XP3056", "n = 100"),
    4: ("XP3058", "rhs"),
    # 5: a pool over C = 8 floats (32 bytes) is a note now (XP3040, tests/test_emulator_gaps.py)
    6: ("XP3063", "deadlock"),
    7: ("XP3051", "past the end of NRAM"),
    8: ("XP3055", "'huge'"),
    10: ("XP3058", "lies in WRAM, not in NRAM"),
    11: ("XP3051", "destination segment 8"),
    12: ("XP3063", "__sync_cluster"),
    13: ("XP3050", "lies in NRAM, not in GDRAM"),
}


def test_valid_run_of_error_kernel(work):
    k = _kernels(work, "errors")
    x = f32(np.arange(64))
    out = k.run({"x": x, "out": (64,)}, {"which": 0})["out"]
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("which", sorted(ERROR_CASES))
def test_rule_violation_reports_code(work, which):
    k = _kernels(work, "errors")
    code, text = ERROR_CASES[which]
    p = k.run({"x": f32(np.arange(64)), "out": (64,)}, {"which": which}, expect_rc=97)
    assert runtime_code(p) == code, p.stderr
    assert text in p.stderr
    assert "errors.mlu:" in p.stderr   # the user's file and line


def test_error_names_the_source_line(work):
    k = _kernels(work, "errors")
    p = k.run({"x": f32(np.arange(64)), "out": (64,)}, {"which": 3}, expect_rc=97)
    lines = (HERE / "errors.mlu").read_text().splitlines()
    want = next(i + 1 for i, ln in enumerate(lines) if "__bang_add(a, a, b, 100)" in ln)
    assert f"errors.mlu:{want}," in p.stderr


def test_asan_catches_gdram_out_of_bounds_write(work):
    k = _kernels(work, "errors", sanitize=True)
    p = k.run({"x": f32(np.arange(64)), "out": (64,)}, {"which": 9}, expect_rc=98)
    # a write just past an array lands in its guard zone (xp_job.h), which ASan reports as poisoned
    assert "AddressSanitizer" in p.stderr and ("heap-buffer-overflow" in p.stderr or "use-after-poison" in p.stderr)
    ok = k.run({"x": f32(np.arange(64)), "out": (64,)}, {"which": 0})["out"]   # the valid path is clean
    np.testing.assert_array_equal(ok, np.arange(64))


# ------------------------------------------------------------------------------------ CNRT
DRIVER = r'''
#include "kernel.prepared.cpp"
#include <vector>
int main(int argc, char** argv) {
  int n = 1000;
  std::vector<float> x(n), y(n, -99.0f);
  for (int i = 0; i < n; ++i) x[i] = 0.5f * i - 7.0f;
  if (argc > 1) { scale_add_host_wrong(x.data(), y.data(), n); return 0; }
  scale_add_host(x.data(), y.data(), 3.0f, n);
  for (int i = 0; i < n; ++i) printf("%.9g\n", y[i]);
  return 0;
}
'''


def test_cnrt_host_launcher(tmp_path):
    src = HERE / "host_launcher.mlu"
    (tmp_path / "kernel.prepared.cpp").write_text(prepare_source(src.read_text(), src.name))
    (tmp_path / "main.cpp").write_text(DRIVER)
    subprocess.run(["g++", *BangPlatform.compile_flags(False), "main.cpp", "-o", "run"], cwd=tmp_path, check=True)
    p = subprocess.run([str(tmp_path / "run")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    y = np.array(p.stdout.split(), dtype=np.float32)
    x = f32(0.5 * np.arange(1000) - 7.0)
    np.testing.assert_allclose(y, x * 3.0 + 1.0, rtol=1e-6)
    p = subprocess.run([str(tmp_path / "run"), "wrong"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 97 and runtime_code(p) == "XP3065" and "not device memory" in p.stderr


# ------------------------------------------------------------------------ prepare / compile
def test_prepare_keeps_lines_and_rewrites():
    src = (HERE / "host_launcher.mlu").read_text()
    out = prepare_source(src, "host_launcher.mlu")
    body = out.split('#line 1 "host_launcher.mlu"\n', 1)[1]
    assert body.count("\n") == src.count("\n")
    for a, b in zip(src.splitlines(), body.splitlines()):   # untouched lines stay identical
        if "__nram__" not in a and "<<<" not in a:
            assert a == b or a.strip() in ("d_x, d_y,", "alpha, n);")
    assert "<<<" not in body and "xpb_launch_cnrt(dim, ktype, queue, [&]() { scale_add(" in body
    assert "ScopedAlloc" in body and "__nram__ float buf" not in body


def test_prepare_file_scope_shared_and_untouched_contexts():
    src = ('__nram__ float a[16], b[4][8];\n__mlu_shared__ int s[64];\n'
           '__mlu_func__ void f(__nram__ float* p) { p[0] = 1; }\n'
           '// __nram__ float commented[4];\n#define DECL __nram__ float m[4]\n'
           '__mlu_global__ void k() { __wram__ half w[128];\n  __mlu_shared__ char t[8]; }\n')
    out = prepare_source(src, "t.mlu")
    assert out.count("static thread_local") == 3     # a, b, s at file scope: one per core / cluster
    assert "MEM_WRAM" in out and "ScopedAlloc" in out and out.count("MEM_SRAM") == 2
    assert "void f(__nram__ float* p)" in out       # parameters are left to the empty macro
    assert "// __nram__ float commented[4];" in out and "#define DECL __nram__ float m[4]" in out
    assert out.split('#line 1 "t.mlu"\n', 1)[1].count("\n") == src.count("\n")


def test_compile_error_points_at_user_line(tmp_path):
    bad = tmp_path / "bad.mlu"
    bad.write_text("#include <bang.h>\n\nextern \"C\" __mlu_global__ void bad(float* y, int n)\n{\n"
                   "    __nram__ float buf[64];\n    __bang_add(buf, buf, buf, undefined_name);\n}\n")
    spec_text = (HERE / "errors.toml").read_text()  # any spec; the kernel fails before linking
    spec = load_spec(HERE / "errors.toml")
    assert spec_text
    with pytest.raises(XPError) as ei:
        BangPlatform().build(bad, spec, tmp_path, sanitize=False)
    assert ei.value.code == "XP2002" and ei.value.line == 6 and "undefined_name" in ei.value.message


def test_compile_check_strict(tmp_path):
    plat = BangPlatform()
    r = plat.compile_check(HERE / "tensor_ops.mlu")
    assert r["ok"], r["log"]
    bad = tmp_path / "bad.mlu"
    bad.write_text("__mlu_global__ void k(float* y) {\n  __nram__ int buf[64];\n"
                   "  __bang_add(buf, buf, buf, 64);\n}\n")   # __bang_add on int: rejected
    r = plat.compile_check(bad)
    assert not r["ok"] and "float and half" in r["log"] and "bad.mlu:3" in r["log"]


def test_doctor_rows():
    rows = {r[0]: r for r in BangPlatform().doctor()}
    assert rows["emu:bang-cpu"][1] is True
    assert rows["hw:mlu"][1] is False
    assert BangPlatform().substrate() == "emu:bang-cpu"


def test_diagnostics_table_covers_every_runtime_code():
    import re
    from xpiler.diagnostics import TABLE
    root = Path(__file__).resolve().parent.parent / "xpiler" / "runtime" / "bang"
    used = set(re.findall(r'"(XP30\d\d)"', (root / "xp_bang.h").read_text()))
    listed = {ln.split("|")[0] for ln in (root / "DIAGNOSTICS.txt").read_text().splitlines()
              if ln.startswith("XP")}
    assert used and used <= listed, used - listed
    # XP3050-XP3099 stop the run (errors); XP3040-XP3049 are notes the run goes on after
    assert all(c in TABLE and TABLE[c].severity == ("note" if c < "XP3050" else "error") for c in listed)
    assert all("XP3040" <= c <= "XP3099" for c in listed)


def test_manual_sections_have_front_matter():
    folder = Path(__file__).resolve().parent.parent / "manuals" / "bang"
    ids = set()
    files = sorted(folder.glob("*.md"))
    assert len(files) >= 25 and (folder / "emulator.md").is_file()
    for f in files:
        text = f.read_text()
        assert text.startswith("---\n"), f
        head = text.split("---\n")[1]
        keys = dict(ln.split(": ", 1) for ln in head.strip().splitlines())
        assert keys["target"] == "bang" and keys["id"].startswith("bang.") and keys["topic"] and keys["signature"]
        assert keys["id"] not in ids
        ids.add(keys["id"])
        assert len(text.split("---\n", 2)[2].split()) > 40, f   # a real section, not a stub
