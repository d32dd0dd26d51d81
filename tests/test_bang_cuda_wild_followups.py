"""Follow-ups of issue 12's wild corpus (BANG -> cuda/hip, cuda -> hip/c/bang):

* un-staging (passes/decache.py) of a chunk whose padding fill writes at an offset
  (``seg_buf + len_al - 64``), whose NRAM buffer was declared in the task loop, and whose
  detensorized op opens braces with a scalar declaration; the buffer then no longer exists;
* privatize (AMDGPU stack limit) sees ``#define SEG (BYTES / sizeof(float))`` as a constant;
* the SIMT emulator's wave barrier (``__builtin_amdgcn_wave_barrier``, binding's form of
  ``__syncwarp`` on hip) is a meeting point of the wavefront's lanes, not a no-op;
* the dependence test splits a copy-out lane over rows of a segment whose length varies
  (passes/segments.py) and still finds overlapping segments;
* the warp lowering knows the type of a struct field (``acc.m``).
"""
from __future__ import annotations

import numpy as np
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import dependence as D
from xpiler.passes import loop_recovery
from xpiler.passes.lowering.common import TypeEnv, struct_fields
from xpiler.printers import print_program

from test_pass_loop_recovery_normalize import _lib, ptr
from test_simt_emulator import make_spec, run, write_src

BLOCK4 = {"dim": [4, 1, 1], "func_type": "block"}


def _recover(src):
    prog = parse_text(src, "bang", "k.mlu")
    from xpiler.passes import detensorize
    r = detensorize.apply(prog, entry="k", target="cuda")
    prog = r[0] if isinstance(r, tuple) else r
    new, _ = loop_recovery.apply(prog, entry="k", launch=BLOCK4)
    return new


def _arrays(prog):
    return [n.name for n in walk(prog) if isinstance(n, N.Decl) and isinstance(n.type, N.Array)]


SEG = """
#define SEG 4096
__nram__ float seg_buf[SEG];
__mlu_global__ void k(const float *x, float *y, float alpha, int n) {
  int nseg = (n + SEG - 1) / SEG;
  for (int s = taskId; s < nseg; s += taskDim) {
    int begin = s * SEG;
    int len = n - begin < SEG ? n - begin : SEG;
    int len_al = (len + 63) / 64 * 64;
    if (len_al > len) {
      __bang_write_value(seg_buf + len_al - 64, 64, 0.0f);
    }
    __memcpy(seg_buf, x + begin, len * sizeof(float), GDRAM2NRAM);
    __bang_mul_scalar(seg_buf, seg_buf, alpha, len_al);
    __memcpy(y + begin, seg_buf, len * sizeof(float), NRAM2GDRAM);
  }
}
"""


def test_offset_fill_and_scalar_braces_are_unstaged(tmp_path):
    prog = _recover(SEG)
    assert _arrays(prog) == []                       # the 16 KiB buffer is gone, also at file scope
    text = print_program(prog)
    k = _lib(text, tmp_path, "seg").k
    n = 9000
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    y = np.full(n, -7.0, np.float32)
    import ctypes
    k(ptr(x), ptr(y), ctypes.c_float(-1.5), ctypes.c_int(n))
    np.testing.assert_allclose(y, x * np.float32(-1.5), rtol=1e-6)


def test_fill_read_without_a_copy_in_keeps_the_buffer():
    # the padded lanes are read after the fill with no unconditional write before: the value
    # passes through the buffer, so the block stays staged
    src = SEG.replace("__memcpy(seg_buf, x + begin, len * sizeof(float), GDRAM2NRAM);", "")
    prog = _recover(src)
    assert "seg_buf" in _arrays(prog)


def test_sizeof_macro_is_a_constant_for_privatize():
    from xpiler.passes.privatize import _const_int
    prog = parse_text("#define SEG ((384 * 1024) / sizeof(float))\n__global__ void k(float *y) { y[0] = SEG; }\n",
                      "cuda", "k.cu")
    m = prog.macro_table()
    assert m["SEG"].expr is not None
    assert _const_int(m["SEG"].expr, m) == 98304


WAVE = """
#include <hip/hip_runtime.h>
__device__ void tail(volatile float *s, int tid) {
    for (int k = 32; k > 0; k >>= 1) {
        float v = s[tid] + s[tid + k];
        __builtin_amdgcn_wave_barrier();
        s[tid] = v;
        __builtin_amdgcn_wave_barrier();
    }
}
__global__ void wsum(const float *x, float *out) {
    __shared__ float s[256];
    int tid = threadIdx.x;
    s[tid] = x[blockIdx.x * 256 + tid];
    __syncthreads();
    for (int h = 128; h > 32; h >>= 1) {
        if (tid < h) s[tid] += s[tid + h];
        __syncthreads();
    }
    if (tid < 32) tail(s, tid);
    if (tid == 0) out[blockIdx.x] = s[0];
}
"""


@pytest.mark.parametrize("schedule", ["0", "2"])
def test_wave_barrier_orders_the_lanes_of_a_wavefront(tmp_path, monkeypatch, schedule):
    monkeypatch.setenv("XPS_SCHEDULE", schedule)     # index order and reverse order
    src = write_src(tmp_path, "wsum.hip", WAVE)
    spec = make_spec(tmp_path, "wsum", "hip", [("x", "float32", "in", [512]), ("out", "float32", "out", [2])],
                     [2, 1, 1], [256, 1, 1])
    x = np.random.default_rng(0).integers(-8, 8, 512).astype(np.float32)
    oc, outs = run(tmp_path, "hip", src, spec, {"x": x})
    assert oc.ok, oc.stderr
    np.testing.assert_array_equal(outs["out"], x.reshape(2, 256).sum(axis=1))


def test_wave_barrier_missing_is_still_caught(tmp_path, monkeypatch):
    # without the barriers the lanes run one after another: reverse order gives a wrong sum
    monkeypatch.setenv("XPS_SCHEDULE", "2")
    src = write_src(tmp_path, "wsum.hip", WAVE.replace("__builtin_amdgcn_wave_barrier();", ""))
    spec = make_spec(tmp_path, "wsum", "hip", [("x", "float32", "in", [512]), ("out", "float32", "out", [2])],
                     [2, 1, 1], [256, 1, 1])
    x = np.random.default_rng(0).integers(-8, 8, 512).astype(np.float32)
    oc, outs = run(tmp_path, "hip", src, spec, {"x": x})
    assert oc.ok, oc.stderr
    assert not np.array_equal(outs["out"], x.reshape(2, 256).sum(axis=1))


BANDS = """
void k(const float *t, float *y, int N, int OH, int OW, int C, int band) {
    const int bands = (OH + band - 1) / band;
    for (int job = 0; job < N * bands; ++job) {
        const int n = job / bands;
        const int oh0 = (job % bands) * band;
        const int rows = OH - oh0 < ROWS_BOUND ? OH - oh0 : ROWS_BOUND;
        for (int j = 0; j < rows * OW * C; ++j)
            y[((size_t)n * OH + oh0) * OW * C + j] = t[j];
    }
}
"""


def _carried(src):
    prog = parse_text(src, "c", "k.c")
    fn = prog.func("k")
    loop = next(l for l in walk(fn) if isinstance(l, N.For) and l.var == "job")
    return D.carried(prog, fn, loop)


def test_segments_of_rows_are_disjoint():
    assert _carried(BANDS.replace("ROWS_BOUND", "band")) == []


def test_overlapping_segments_are_a_dependence():
    # one row more than the band: consecutive jobs write the first row of the next band too
    deps = _carried(BANDS.replace("ROWS_BOUND", "band + 1"))
    assert [d.buffer for d in deps] == ["y"]


def test_segment_longer_than_its_rows_is_a_dependence():
    deps = _carried(BANDS.replace("ROWS_BOUND", "band").replace("j < rows * OW * C", "j < rows * OW * C + C"))
    assert [d.buffer for d in deps] == ["y"]


def test_struct_field_types():
    assert struct_fields("typedef struct { float a, b; unsigned int c; } P;")["P"]["c"].dtype == "uint32"
    prog = parse_text("struct MaxSum { float m; float s; };\n"
                      "__global__ void k(float *y) { MaxSum acc = {0.0f, 1.0f}; y[0] = acc.m; }\n", "cuda", "k.cu")
    env = TypeEnv.of(prog, prog.func("k"))
    member = next(n for n in walk(prog.func("k")) if isinstance(n, N.Member))
    assert env.type_of(member).dtype == "float32"
