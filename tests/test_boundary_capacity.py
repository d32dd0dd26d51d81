"""Derived boundary instances for row-block BANG kernels (2026-12-05, eighth session;
docs/verification.md, "Derived boundary instances"): a capacity divided by a size gets an
instance where one row fills more than half the buffer (capdiv); a strided loop that no instance
sweeps twice is searched up to the branch cap (its sweep grows with the size until a capacity
binds); a unit-step loop that only a fallback runs, and that runs one trip on the fallback's
instance, gets a second trip. Each mutant below passes the spec's instances and every instance
the derivation added before these changes, and is caught by the new one."""
from __future__ import annotations

import textwrap
from pathlib import Path

from xpiler.api import test as xtest
from xpiler.spec import load_spec
from xpiler.verify.boundaries import derive_for_files
from xpiler.verify.tester import compare_kernels

REF = '''import numpy as np


def scale(x, rows, cols):
    return (np.asarray(x, dtype=np.float32).reshape(-1)[:rows * cols] * np.float32(2.0)).astype(np.float32)
'''

# the shape of the migrated softmax/layernorm/gemv c -> bang kernels: r_rows rows of r_pad floats
# per NRAM block, a task sweeps taskDim blocks; a scalar fallback for rows past the buffer
ROWS_MLU = '''#include <bang.h>

extern "C" __mlu_global__ void scale(const float *x, float *y, int rows, int cols) {
    __nram__ float buf[16384];
    int r_pad = (cols + 31) / 32 * 32;
    if (r_pad <= 16384) {
        int r_rows = max(1, min(16384 / r_pad, (rows + taskDim - 1) / taskDim));
        for (int r_r = taskId * r_rows; r_r < rows; r_r += taskDim * r_rows) {
            int r_n = min(r_rows, rows - r_r);
            __memcpy(buf, x + r_r * cols, cols * sizeof(float), GDRAM2NRAM, r_pad * sizeof(float), cols * sizeof(float), r_n - 1);
            __bang_mul_scalar(buf, buf, 2.0f, r_n * r_pad);
            __memcpy(y + r_r * cols, buf, cols * sizeof(float), NRAM2GDRAM, cols * sizeof(float), r_pad * sizeof(float), r_n - 1);
        }
    } else {
        if (taskId == 0) {
            for (int r = 0; r < rows; ++r) {
                for (int c = 0; c < cols; ++c) {
                    y[r * cols + c] = 2.0f * x[r * cols + c];
                }
            }
        }
    }
}
'''

SPEC = '''entry = "scale"
dialect = "bang"

[sizes]
rows = 8
cols = 64

[[shapes]]
name = "odd"
rows = 5
cols = 37

[[shapes]]
name = "wide"
rows = 3
cols = 300

[[shapes]]
name = "tall"
rows = 33
cols = 16

[launch]
dim = [4, 1, 1]
func_type = "union1"

[[args]]
name = "x"
dtype = "float32"
shape = ["rows", "cols"]
role = "in"

[[args]]
name = "y"
dtype = "float32"
shape = ["rows", "cols"]
role = "out"

[[args]]
name = "rows"
dtype = "int32"
role = "scalar"
value = "rows"

[[args]]
name = "cols"
dtype = "int32"
role = "scalar"
value = "cols"

[reference]
python = "ref.py:scale"
'''


def _write(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / "ref.py").write_text(REF)
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    (tmp_path / (name + ".toml")).write_text(SPEC)
    return p


def _derived(p: Path) -> list:
    return derive_for_files(p, load_spec(str(p) + ".toml"))


def _caught_by(p: Path, kind_text: str):
    """The mutant passes the spec's instances; the test with derived instances fails on the
    derived instance whose reason says ``kind_text``."""
    spec = load_spec(str(p) + ".toml")
    assert compare_kernels(p, spec, seeds=(0, 1, 2), jobs=1, derive_boundaries=False).verified
    v = xtest(p, str(p) + ".toml", seeds=(0, 1, 2), jobs=1, timeout=60)
    assert not v.verified
    name = v.failures[0].instance
    d = next(d for d in v.derived if d["name"] == name)
    assert any(kind_text in r for r in d["reasons"]), d
    return v


def test_good_kernel_gets_the_new_instances_and_verifies(tmp_path):
    good = _write(tmp_path, "scale.mlu", ROWS_MLU)
    ds = _derived(good)
    why = " | ".join(r for d in ds for r in d.reasons)
    # capdiv: one row of r_pad > 8192 fills the buffer (cols = 8193 -> r_pad = 8224)
    cap = [d for d in ds if "fills the buffer" in " ".join(d.reasons)]
    assert cap and 8160 < cap[0].sizes["cols"] <= 16384 and cap[0].sizes["rows"] >= 5
    # the row-block sweep: a second sweep needs rows > taskDim * (16384 / r_pad), past the usual cap
    assert any("one element past a whole sweep" in r and "r_r +=" in r for d in ds for r in d.reasons), why
    # the fallback's row loop runs a second trip on the fallback's instance
    assert any("runs a second trip" in r for d in ds for r in d.reasons), why
    assert xtest(good, str(good) + ".toml", seeds=(0, 1, 2), jobs=1, timeout=60).verified


def test_remainder_for_quotient_caught_by_the_capacity_instance(tmp_path):
    """`16384 % r_pad` for `16384 / r_pad`: r_pad = 8224 gives 8160 rows, min(8160, 2) = 2 rows of
    8224 floats, past the 16384-float buffer (XP4230); every r_pad a power of two gives 0 -> 1 row."""
    bad = _write(tmp_path, "scale_mod.mlu", ROWS_MLU.replace("16384 / r_pad", "16384 % r_pad"))
    v = _caught_by(bad, "fills the buffer")
    assert v.failures[0].code in ("XP4230", "XP3051")


def test_wrong_sweep_step_caught_past_the_old_cap(tmp_path):
    """`r_r += taskDim * r_rows + 1` skips a row only on a task's second sweep."""
    bad = _write(tmp_path, "scale_step.mlu", ROWS_MLU.replace("r_r += taskDim * r_rows", "r_r += taskDim * r_rows + 1"))
    _caught_by(bad, "one element past a whole sweep")


def test_fallback_unit_loop_gets_a_second_trip(tmp_path):
    """Every row of the fallback written to row 0 (`y[c]`): the fallback's own instance has
    rows = 1, so only a second trip of its row loop shows it."""
    bad = _write(tmp_path, "scale_fb.mlu", ROWS_MLU.replace("y[r * cols + c] =", "y[c] ="))
    _caught_by(bad, "runs a second trip")


# the gemm.c -> bang output (2026-12-05): the capacity `32768 / N` binds only while K * N <= 131072,
# so N past 16384 needs K small -- one size at a time from the spec's instances never gets there
GEMM_MLU = '''#include <bang.h>

extern "C" __mlu_global__ void gemm(const float *A, const float *B, float *C, int M, int N, int K) {
    __nram__ float C_nram[32768];
    __nram__ float A_nram[32768];
    __wram__ float B_wram[131072];
    if (N <= 32768 && K <= 32768 && K * N <= 131072) {
        int i_rows = max(1, min(min(32768 / N, 32768 / K), (M - 0 + (taskDim - 1)) / taskDim));
        __memcpy(B_wram, B, K * N * sizeof(float), GDRAM2WRAM);
        for (int i_r = taskId * i_rows; i_r < M; i_r += taskDim * i_rows) {
            int i_n = min(i_rows, M - i_r);
            __memcpy(C_nram, C + i_r * N, i_n * N * sizeof(float), GDRAM2NRAM);
            __memcpy(A_nram, A + i_r * K, i_n * K * sizeof(float), GDRAM2NRAM);
            __bang_matmul(C_nram, A_nram, B_wram, i_n, K, N);
            __memcpy(C + i_r * N, C_nram, i_n * N * sizeof(float), NRAM2GDRAM);
        }
    } else {
        for (int i = taskId; i < M; i += taskDim) {
            for (int j = 0; j < N; ++j) {
                float acc = 0.0f;
                for (int k = 0; k < K; ++k) {
                    acc += A[(long)i * K + k] * B[(long)k * N + j];
                }
                C[(long)i * N + j] = acc;
            }
        }
    }
}
'''
GEMM_SPEC = '''entry = "gemm"
dialect = "bang"
[sizes]
M = 64
N = 48
K = 32
[[shapes]]
name = "odd"
M = 33
N = 17
K = 45
[[shapes]]
name = "medium"
M = 128
N = 96
K = 80
[[shapes]]
name = "tiles"
M = 8
N = 260
K = 520
[launch]
dim = [4, 1, 1]
func_type = "union1"
''' + "".join(f'''[[args]]
name = "{n}"
dtype = "float32"
shape = {s}
role = "{r}"
''' for n, s, r in (("A", '["M", "K"]', "in"), ("B", '["K", "N"]', "in"), ("C", '["M", "N"]', "out"))) + "".join(
    f'''[[args]]
name = "{n}"
dtype = "int32"
role = "scalar"
value = "{n}"
''' for n in "MNK")


def test_capacity_reached_with_another_size_at_its_smallest(tmp_path):
    """The planted `32768 % N` (gemm.c -> bang) passed every instance: the capacity target needs
    N > 16384, which the branch allows only with K <= 8. Since the tenth session the capacity
    search also starts from each instance with one other size at its smallest value."""
    k = tmp_path / "gemm.mlu"
    k.write_text(GEMM_MLU.replace("32768 / N", "32768 % N"))
    (tmp_path / "gemm.mlu.toml").write_text(GEMM_SPEC)
    got = derive_for_files(k, load_spec(tmp_path / "gemm.mlu.toml"))
    cap = [d for d in got if any("fills the buffer" in r for r in d.reasons)]
    assert cap, [d.describe() for d in got]
    assert any(d.sizes["N"] > 16384 and d.sizes["K"] * d.sizes["N"] <= 131072 and d.sizes["M"] > 4 for d in cap)
    # the other capacity of the same line too (its own budget: `32768 % K` needs N <= 8)
    k.write_text(GEMM_MLU.replace("32768 / K", "32768 % K"))
    got = derive_for_files(k, load_spec(tmp_path / "gemm.mlu.toml"))
    assert any(d.sizes["K"] > 16384 and d.sizes["K"] * d.sizes["N"] <= 131072 and d.sizes["M"] > 4 for d in got), \
        [d.describe() for d in got]
