"""Loop recovery's normalization (``normalize=True``, the default): partition loops whose only
work is a loop strided by the partition size, or one guarded element per partition index, are
collapsed into loops over the full iteration range.  Each collapse is checked for its shape and,
compiled with gcc, run against the plain recovery (``normalize=False``) on the same inputs;
each refusal checks that the partition loops stay and why."""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import loop_recovery
from xpiler.printers import print_program

GRID = {"grid": ["(n + 255) / 256", 1, 1], "block": [256, 1, 1]}


def recover(src, dialect, launch, normalize=True, entry="k"):
    prog = parse_text(src, dialect, "k." + {"cuda": "cu", "bang": "mlu"}[dialect])
    new, spec_launch = loop_recovery.apply(prog, entry=entry, launch=launch, normalize=normalize)
    assert spec_launch == {} and new.dialect == "c"
    return new


def why_not(src, dialect, launch, entry="k"):
    prog = parse_text(src, dialect, "k." + {"cuda": "cu", "bang": "mlu"}[dialect])
    ok, why = loop_recovery.explain_normalization(prog, entry=entry, launch=launch)
    assert not ok
    return why


def top_loops(prog, entry="k"):
    """The loops at the top of the function body, outermost first, following single nests."""
    out, stmts = [], prog.func(entry).body.stmts
    while True:
        loops = [s for s in stmts if isinstance(s, N.For)]
        if len(loops) != 1:
            return out
        out.append(loops[0])
        stmts = loops[0].body.stmts


def _lib(text, tmp_path, name):
    if not shutil.which("gcc"):
        pytest.skip("no gcc")
    src = tmp_path / f"{name}.c"
    src.write_text(text)
    so = tmp_path / f"{name}.so"
    r = subprocess.run(["gcc", "-std=gnu11", "-O1", "-shared", "-fPIC", "-DNEG_BIG=-3e38f", str(src), "-o", str(so),
                        "-lm"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + "\n" + text
    return ctypes.CDLL(str(so))


def same_results(src, dialect, launch, tmp_path, make_args, entry="k"):
    """Run the normalized and the plain recovery on the same inputs; outputs must agree."""
    outs = []
    for norm in (True, False):
        text = print_program(recover(src, dialect, launch, norm, entry))
        fn = getattr(_lib(text, tmp_path, f"k{int(norm)}"), entry)
        args, arrays = make_args()
        fn(*args)
        outs.append([a.copy() for a in arrays])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    return outs[0]


def ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def vec_args(n, extra=()):
    def make():
        rng = np.random.default_rng(7)
        x = rng.standard_normal(n).astype(np.float32)
        y = np.full(n, -7.0, np.float32)
        return [ptr(x), ptr(y), ctypes.c_int(n), *extra], [y]
    return make


# ------------------------------------------------------------------------------ collapses
GRID_STRIDE = """
__global__ void k(const float *x, float *y, int n) {
    int step = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = 3.0f * x[i] + 1.0f;
}
"""


def test_grid_stride_loop_collapses_to_one_loop(tmp_path):
    launch = {"grid": ["(n + 255) / 256 < 4 ? (n + 255) / 256 : 4", 1, 1], "block": [256, 1, 1]}
    new = recover(GRID_STRIDE, "cuda", launch)
    loops = top_loops(new)
    assert [lp.var for lp in loops] == ["i"]
    i = loops[0]
    assert isinstance(i.lo, N.Const) and i.lo.value == 0 and isinstance(i.step, N.Const) and i.step.value == 1
    assert isinstance(i.hi, N.Var) and i.hi.name == "n"
    assert "step" not in print_program(new)          # the partition size is no longer needed
    (y,) = same_results(GRID_STRIDE, "cuda", launch, tmp_path, vec_args(3000))  # 3000 > 4 * 256: strides
    assert (y != -7.0).all()


def test_normalize_false_keeps_the_partition_loops():
    new = recover(GRID_STRIDE, "cuda", GRID, normalize=False)
    assert [lp.var for lp in top_loops(new)][:2] == ["bx", "tx"]


BANG_ROWS = """
#define COLS 64
__mlu_entry__ void k(const float *x, float *y, int rows, int cols) {
    __nram__ float buf[COLS];
    int half = cols / 2;
    for (int r = taskId; r < rows; r += taskDim) {
        for (int c = 0; c < cols; ++c)
            buf[c] = x[r * cols + c];
        for (int c = 0; c < cols; ++c)
            y[r * cols + c] = buf[c] + buf[(c + half) % cols];
    }
}
"""


def test_bang_task_strided_rows_collapse_with_private_buffer_inside(tmp_path):
    launch = {"dim": [4, 1, 1], "func_type": "block"}
    new = recover(BANG_ROWS, "bang", launch)
    fn = new.func("k")
    loops = top_loops(new)
    assert loops[0].var == "r" and loops[0].lo.value == 0 and loops[0].step.value == 1
    assert not any(isinstance(n, N.For) and n.var == "task" for n in walk(fn))
    # the NRAM buffer is private to one iteration now; the invariant `half` is computed once
    assert any(isinstance(s, N.Decl) and s.name == "buf" for s in loops[0].body.stmts)
    assert any(isinstance(s, N.Decl) and s.name == "half" for s in fn.body.stmts)

    def make():
        rows, cols = 11, 10
        x = np.arange(rows * cols, dtype=np.float32)
        y = np.zeros(rows * cols, np.float32)
        return [ptr(x), ptr(y), ctypes.c_int(rows), ctypes.c_int(cols)], [y]
    (y,) = same_results(BANG_ROWS, "bang", launch, tmp_path, make)
    x = np.arange(110, dtype=np.float32).reshape(11, 10)
    np.testing.assert_array_equal(y.reshape(11, 10), x + np.roll(x, -5, axis=1))


UNION = """
__mlu_entry__ void k(const float *x, float *y, int n) {
    int worker = clusterId * coreDim + coreId;
    int workers = clusterDim * coreDim;
    for (int i = worker; i < n; i += workers)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""


def test_bang_union_worker_index_collapses(tmp_path):
    launch = {"dim": [8, 1, 1], "func_type": "union1"}
    new = recover(UNION, "bang", launch)
    assert [lp.var for lp in top_loops(new)] == ["i"]
    same_results(UNION, "bang", launch, tmp_path, vec_args(37))


ONE_PER_THREAD = """
__global__ void k(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = x[i] * x[i];
    }
}
"""

ONE_PER_THREAD_RETURN = """
__global__ void k(const float *x, float *y, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= n) return;
    float v = x[i];
    y[i] = v - 1.0f;
}
"""


@pytest.mark.parametrize("src", [ONE_PER_THREAD, ONE_PER_THREAD_RETURN], ids=["if", "return"])
def test_one_element_per_thread_becomes_a_loop_to_the_bound(src, tmp_path):
    new = recover(src, "cuda", GRID)
    loops = top_loops(new)
    assert [lp.var for lp in loops] == ["i"]
    # the grid is cdiv(n, 256) blocks of 256: it covers n, so the bound alone ends the loop
    assert isinstance(loops[0].hi, N.Var) and loops[0].hi.name == "n"
    assert not any(isinstance(n, (N.If, N.Continue)) for n in walk(loops[0].body))
    (y,) = same_results(src, "cuda", GRID, tmp_path, vec_args(300))
    assert (y != -7.0).all()


def test_grid_smaller_than_the_bound_keeps_the_minimum(tmp_path):
    launch = {"grid": [2, 1, 1], "block": [32, 1, 1]}     # 64 threads, whatever n is
    new = recover(ONE_PER_THREAD, "cuda", launch)
    i = top_loops(new)[0]
    assert isinstance(i.hi, N.Cond)                       # min(n, 64)
    (y,) = same_results(ONE_PER_THREAD, "cuda", launch, tmp_path, vec_args(100))
    assert (y[:64] != -7.0).all() and (y[64:] == -7.0).all()


GRID_2D = """
__global__ void k(const float *a, float *b, int M, int N) {
    int row = blockIdx.y * 8 + threadIdx.y;
    int col = blockIdx.x * 16 + threadIdx.x;
    if (row < M && col < N && a[row * N + col] > 0.0f) {
        b[col * M + row] = a[row * N + col];
    }
}
"""


def test_2d_grid_becomes_two_loops_and_keeps_the_data_guard(tmp_path):
    launch = {"grid": ["(N + 15) / 16", "(M + 7) / 8", 1], "block": [16, 8, 1]}
    new = recover(GRID_2D, "cuda", launch)
    loops = top_loops(new)
    assert [lp.var for lp in loops] == ["row", "col"]
    assert loops[0].hi.name == "M" and loops[1].hi.name == "N"
    ifs = [n for n in walk(loops[1].body) if isinstance(n, N.If)]
    # only the data guard stays: the bounds became the loop limits
    assert len(ifs) == 1 and isinstance(ifs[0].cond, N.BinOp) and ifs[0].cond.op == ">"

    def make():
        M, Nn = 19, 23
        a = np.random.default_rng(3).standard_normal(M * Nn).astype(np.float32)
        b = np.zeros(M * Nn, np.float32)
        return [ptr(a), ptr(b), ctypes.c_int(M), ctypes.c_int(Nn)], [b]
    (b,) = same_results(GRID_2D, "cuda", launch, tmp_path, make)
    a = np.random.default_rng(3).standard_normal(19 * 23).astype(np.float32).reshape(19, 23)
    np.testing.assert_array_equal(b.reshape(23, 19), np.where(a > 0, a, 0).T)


VEC_STEP = """
__global__ void k(const float *x, float *y, int n) {
    for (int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x); i < n; i += 4 * blockDim.x * gridDim.x)
        for (int j = i; j < i + 4 && j < n; ++j)
            y[j] = x[j] + 2.0f;
}
"""


def test_strided_loop_with_a_unit_keeps_the_unit_as_step(tmp_path):
    launch = {"grid": [3, 1, 1], "block": [32, 1, 1]}
    new = recover(VEC_STEP, "cuda", launch)
    i = top_loops(new)[0]
    assert i.var == "i" and i.lo.value == 0 and i.step.value == 4
    (y,) = same_results(VEC_STEP, "cuda", launch, tmp_path, vec_args(1001))
    assert (y != -7.0).all()


SETUP = """
__mlu_entry__ void k(const float *x, float *y, int rows, int cols) {
    __nram__ float buf[16];
    int w = cols;
    if (w > 8) w = 8;
    for (int c = 0; c < 16; ++c)
        buf[c] = 0.0f;
    for (int r = taskId; r < rows; r += taskDim) {
        for (int c = 0; c < w; ++c)
            buf[c] = x[r * cols + c];
        float s = 0.0f;
        for (int c = 0; c < 16; ++c)
            s += buf[c];
        y[r] = s;
    }
}
"""


def test_setup_becomes_declarations_and_buffer_fills_repeat_per_iteration(tmp_path):
    launch = {"dim": [4, 1, 1], "func_type": "block"}
    new = recover(SETUP, "bang", launch)
    fn = new.func("k")
    # before the collapsed loop only declarations remain (what binding accepts outside its nest)
    assert all(isinstance(s, (N.Decl, N.For, N.Comment)) for s in fn.body.stmts)
    ws = [s for s in fn.body.stmts if isinstance(s, N.Decl) and s.name.startswith("w")]
    assert [d.name for d in ws][-1] == "w" and isinstance(ws[-1].init, N.Cond)
    r = top_loops(new)[0]
    assert r.var == "r" and any(isinstance(s, N.Decl) and s.name == "buf" for s in r.body.stmts)

    def make():
        rows, cols = 9, 12
        x = np.arange(rows * cols, dtype=np.float32)
        y = np.zeros(rows, np.float32)
        return [ptr(x), ptr(y), ctypes.c_int(rows), ctypes.c_int(cols)], [y]
    (y,) = same_results(SETUP, "bang", launch, tmp_path, make)
    np.testing.assert_array_equal(y, np.arange(108, dtype=np.float32).reshape(9, 12)[:, :8].sum(axis=1))


def test_loop_bound_computed_by_statements_is_not_collapsed():
    src = """
__mlu_entry__ void k(const float *x, float *y, int n) {
    int m = n;
    for (int j = 0; j < 2; ++j)
        m = m - 1;
    for (int i = taskId; i < m; i += taskDim)
        y[i] = x[i];
}
"""
    assert "'m'" in why_not(src, "bang", {"dim": [4, 1, 1], "func_type": "block"})


# ------------------------------------------------------------------------------ refusals
def test_reduction_across_partitions_is_not_collapsed():
    src = """
__global__ void k(const float *x, float *out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(out, x[i]);
}
"""
    assert "reduction" in why_not(src, "cuda", GRID)


def test_per_partition_accumulator_is_not_collapsed():
    src = """
__mlu_entry__ void k(const float *x, float *part, int n) {
    float s = 0.0f;
    for (int i = taskId; i < n; i += taskDim)
        s += x[i];
    part[taskId] = s;
}
"""
    launch = {"dim": [4, 1, 1], "func_type": "block"}
    why = why_not(src, "bang", launch)
    assert "'s'" in why or "partition" in why
    new = recover(src, "bang", launch)
    assert top_loops(new)[0].var == "task"


def test_barrier_between_threads_is_not_collapsed():
    src = """
__global__ void k(const float *x, float *y, int n) {
    __shared__ float t[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    t[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = t[255 - threadIdx.x];
}
"""
    assert "phases" in why_not(src, "cuda", GRID)


def test_per_block_stride_is_not_a_partition_of_the_range():
    src = """
__global__ void k(const float *x, float *y, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        y[i] = x[i];
}
"""
    why = why_not(src, "cuda", {"grid": [2, 1, 1], "block": [64, 1, 1]})
    assert "partition" in why


def test_body_reading_the_thread_index_is_not_collapsed():
    src = """
__global__ void k(const float *x, float *y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = x[i] + (float)threadIdx.x;
}
"""
    assert "partition index" in why_not(src, "cuda", GRID)


def test_data_dependent_early_exit_is_not_a_bounds_guard():
    src = """
__global__ void k(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (x[i] < 0.0f) return;
    y[i] = x[i];
}
"""
    why_not(src, "cuda", GRID)


def test_prologue_store_to_shared_memory_is_not_collapsed():
    src = """
__mlu_entry__ void k(const float *x, float *y, int n) {
    y[0] = 0.0f;
    for (int i = taskId + 1; i < n; i += taskDim)
        y[i] = x[i];
}
"""
    assert "stores to memory" in why_not(src, "bang", {"dim": [4, 1, 1], "func_type": "block"})


def test_buffer_carried_between_two_parts_of_the_work_is_not_collapsed():
    src = """
__mlu_entry__ void k(const float *x, float *y, int n) {
    __nram__ float keep[4];
    for (int i = taskId; i < n; i += taskDim)
        keep[0] = x[i];
    for (int i = taskId; i < n; i += taskDim)
        y[i] = keep[0];
}
"""
    assert "keep" in why_not(src, "bang", {"dim": [4, 1, 1], "func_type": "block"})


# ------------------------------------------------------------------------------ end to end
EX = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize("path, loop", [
    ("softmax/softmax.mlu", "for (int r = 0; r < rows; ++r)"),            # task-strided rows, NRAM inside
    ("maxpool2d/maxpool2d.cu", "for (int idx = 0; idx < total; ++idx)"),   # one element per thread
    ("depthwise_conv2d/depthwise_conv2d.hip", "for (int wo = 0; wo < Wo; ++wo)"),   # 3-D grid, 2-D tiles
])
def test_examples_normalize_and_verify_through_c(path, loop, tmp_path):
    from xpiler.migration.driver import migrate
    from xpiler.passes.base import available
    pipe = [("detensorize", {"target": "c"})] if "detensorize" in available() else []
    pipe.append(("loop_recovery", {}))
    r = migrate(EX / path, "c", outdir=tmp_path / "out", pipeline=pipe)
    assert r.verified, [str(d) for d in r.diagnostics]
    assert loop in r.code
    for gone in ("task", "bx", "tx", "by", "ty"):
        assert f"int {gone} = 0;" not in r.code
