"""Loop recovery of BANG-style kernels: NRAM staging is removed (``passes/decache.py``) and
contiguous per-task slices collapse into one loop over the range (``passes/task_slices.py``).
Each collapse is compiled with gcc and run against the plain recovery (``normalize=False``);
each refusal checks that the task loop (and the buffer) stay, and why."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import loop_recovery
from xpiler.printers import print_program

from test_pass_loop_recovery_normalize import _lib, ptr, recover, top_loops

BLOCK4 = {"dim": [4, 1, 1], "func_type": "block"}
UNION8 = {"dim": [8, 1, 1], "func_type": "union1"}

SLICE = """
    int share = n / taskDim;
    int extra = n % taskDim;
    int count = share + (taskId < extra ? 1 : 0);
    int start = taskId * share + (taskId < extra ? taskId : extra);
"""

STAGED = """
#define CHUNK 64
#define ALIGN 8
__mlu_entry__ void k(const float *x, float *y, int n) {
    __nram__ float buf[CHUNK];
""" + SLICE + """
    for (int off = 0; off < count; off += CHUNK) {
        int valid = count - off < CHUNK ? count - off : CHUNK;
        int padded = (valid + ALIGN - 1) / ALIGN * ALIGN;
        if (padded != valid) {
            for (int i = 0; i < padded; ++i) buf[i] = 0.0f;
        }
        for (int j = 0; j < valid; ++j) buf[j] = x[start + off + j];
        for (int i = 0; i < padded; ++i) {
            const float v = buf[i];
            buf[i] = v > 0.0f ? v : 0.5f * v;
        }
        for (int j = 0; j < valid; ++j) y[start + off + j] = buf[j];
    }
}
"""


def run_both(src, launch, tmp_path, n, nin=1):
    """Outputs of the normalized and the plain recovery for inputs of ``n`` elements."""
    outs = []
    for norm in (True, False):
        text = print_program(recover(src, "bang", launch, norm))
        fn = _lib(text, tmp_path, f"k{int(norm)}_{n}").k
        rng = np.random.default_rng(n)
        xs = [rng.standard_normal(n).astype(np.float32) for _ in range(nin)]
        y = np.full(n, -7.0, np.float32)
        fn(*[ptr(x) for x in xs], ptr(y), ctypes.c_int(n))
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    return outs[0]


def why_not(src, launch):
    prog = parse_text(src, "bang", "k.mlu")
    ok, why = loop_recovery.explain_normalization(prog, entry="k", launch=launch)
    assert not ok
    return why


def arrays(prog):
    return [n.name for n in walk(prog.func("k")) if isinstance(n, N.Decl) and isinstance(n.type, N.Array)]


# ------------------------------------------------------------------------------ collapses
@pytest.mark.parametrize("n", [0, 5, 37, 300, 1001])
def test_staged_chunked_slices_become_one_elementwise_loop(n, tmp_path):
    new = recover(STAGED, "bang", BLOCK4)
    loops = top_loops(new)
    assert len(loops) == 1
    i = loops[0]
    assert i.lo.value == 0 and isinstance(i.hi, N.Var) and i.hi.name == "n" and i.step.value == 1
    assert not arrays(new)                            # the NRAM buffer is gone
    assert not any(isinstance(x, N.For) for x in walk(i.body))
    text = print_program(new)
    assert "x[i]" in text and "y[i]" in text and "task" not in text and "padded" not in text
    y = run_both(STAGED, BLOCK4, tmp_path, n)         # several chunks per task at n = 1001
    assert (y != -7.0).all()


ADD = """
#define CHUNK 16
__mlu_entry__ void k(const float *a, const float *b, float *c, int n) {
    __nram__ float a_buf[CHUNK];
    __nram__ float b_buf[CHUNK];
    __nram__ float c_buf[CHUNK];
    int worker = clusterId * coreDim + coreId;
    int workers = clusterDim * coreDim;
    int share = n / workers;
    int extra = n % workers;
    int count = share + (worker < extra ? 1 : 0);
    int start = worker * share + (worker < extra ? worker : extra);
    for (int off = 0; off < count; off += CHUNK) {
        int valid = count - off < CHUNK ? count - off : CHUNK;
        for (int j = 0; j < valid; ++j) a_buf[j] = a[start + off + j];
        for (int j = 0; j < valid; ++j) b_buf[j] = b[start + off + j];
        for (int j = 0; j < valid; ++j) c_buf[j] = a_buf[j] + b_buf[j];
        for (int j = 0; j < valid; ++j) c[start + off + j] = c_buf[j];
    }
}
"""


def test_union_workers_with_three_buffers_collapse(tmp_path):
    new = recover(ADD, "bang", UNION8)
    assert [lp.var for lp in top_loops(new)] == ["i"] and not arrays(new)
    for n in (3, 8, 130):
        run_both(ADD, UNION8, tmp_path, n, nin=2)


BEGIN_END = """
__mlu_entry__ void k(const float *x, float *y, int n) {
    int per = (n + taskDim - 1) / taskDim;
    int begin = taskId * per;
    int end = begin + per < n ? begin + per : n;
    for (int i = begin; i < end; ++i)
        y[i] = 2.0f * x[i] + 1.0f;
}
"""


def test_begin_end_slices_collapse(tmp_path):
    new = recover(BEGIN_END, "bang", BLOCK4)
    loops = top_loops(new)
    assert len(loops) == 1 and loops[0].hi == N.Var("n") and loops[0].lo.value == 0
    for n in (0, 1, 6, 41):
        run_both(BEGIN_END, BLOCK4, tmp_path, n)


# ------------------------------------------------------------------------------ refusals
def _staged_variant(old, new):
    assert old in STAGED
    return STAGED.replace(old, new)


def test_buffer_read_across_chunks_is_kept():
    # a running value kept in buf between chunks: buf is read before this chunk writes it
    src = _staged_variant("for (int j = 0; j < valid; ++j) buf[j] = x[start + off + j];",
                          "for (int j = 0; j < valid; ++j) buf[j] = buf[j] + x[start + off + j];")
    why = why_not(src, BLOCK4)
    assert "'buf' is read before it is written" in why
    assert "buf" in arrays(recover(src, "bang", BLOCK4))


def test_non_elementwise_compute_loop_is_kept():
    src = _staged_variant("buf[i] = v > 0.0f ? v : 0.5f * v;", "buf[i] = buf[i + 1];")
    assert "not element-wise" in why_not(src, BLOCK4)
    new = recover(src, "bang", BLOCK4)
    assert "buf" in arrays(new)
    assert any(isinstance(x, N.For) and x.var == "task" for x in walk(new.func("k")))


def test_copy_out_over_padded_lanes_is_kept():
    # the copy-out stores padded lanes to global memory: they are not dead
    src = _staged_variant("for (int j = 0; j < valid; ++j) y[start + off + j] = buf[j];",
                          "for (int j = 0; j < padded; ++j) y[start + off + j] = buf[j];")
    assert "may not cover every copied-out lane" in why_not(src, BLOCK4)
    assert "buf" in arrays(recover(src, "bang", BLOCK4))


def test_buffer_used_after_the_chunk_loop_is_kept():
    src = _staged_variant("        for (int j = 0; j < valid; ++j) y[start + off + j] = buf[j];\n    }\n",
                          "        for (int j = 0; j < valid; ++j) y[start + off + j] = buf[j];\n    }\n"
                          "    if (count > 0) y[start] = buf[0];\n")
    assert "used outside the staged block" in why_not(src, BLOCK4)
    assert "buf" in arrays(recover(src, "bang", BLOCK4))


def test_output_read_back_in_the_staged_block_is_kept():
    # y is stored by the copy-out and read by the compute loop: fusing would reorder them
    src = _staged_variant("buf[i] = v > 0.0f ? v : 0.5f * v;", "buf[i] = v + y[start + off + i];")
    assert "both read and written" in why_not(src, BLOCK4)


@pytest.mark.parametrize("start,what", [
    ("int start = taskId * share;", "overlap"),                       # count = share + 1 for some
    ("int start = taskId * (share + 1) + (taskId < extra ? taskId : extra);", "gap"),
])
def test_slices_that_overlap_or_leave_gaps_are_kept(start, what):
    src = STAGED.replace("int start = taskId * share + (taskId < extra ? taskId : extra);", start)
    assert src != STAGED
    why = why_not(src, BLOCK4)
    assert "tile" in why, (what, why)


def test_dependent_iterations_are_kept():
    src = BEGIN_END.replace("y[i] = 2.0f * x[i] + 1.0f;", "y[i + 1] = y[i] + x[i];")
    why = why_not(src, BLOCK4)
    assert "independent" in why


def test_body_reading_the_task_index_is_kept():
    src = BEGIN_END.replace("y[i] = 2.0f * x[i] + 1.0f;", "y[i] = x[i] + (float)taskId;")
    why = why_not(src, BLOCK4)
    assert "task" in why


def test_unstage_false_keeps_the_staging():
    prog = parse_text(STAGED, "bang", "k.mlu")
    new, _ = loop_recovery.apply(prog, entry="k", launch=BLOCK4, unstage=False)
    assert "buf" in arrays(new)


# ------------------------------------------------------------------------------ decache alone
C_STAGED = """
void k(const float *x, float *y, int n) {
    float buf[32];
    float tmp[32];
    for (int off = 0; off < n; off += 32) {
        int valid = n - off < 32 ? n - off : 32;
        for (int j = 0; j < valid; ++j) buf[j] = x[off + j];
        for (int j2 = 0; j2 < 32; ++j2) tmp[j2] = buf[j2] * buf[j2];
        for (int j3 = 0; j3 < valid; ++j3) tmp[j3] += 1.0f;
        for (int j4 = 0; j4 < valid; ++j4) y[off + j4] = tmp[j4] - buf[j4];
    }
}
"""


def test_decache_unstages_a_c_chunk_loop(tmp_path):
    from xpiler.passes import decache
    prog = parse_text(C_STAGED, "c", "k.c")
    fn, notes = decache.unstage(prog.func("k"), prog)
    assert None in notes
    new = prog.with_(items=tuple(fn if it is prog.func("k") else it for it in prog.items))
    assert not arrays(new)
    chunk = [s for s in fn.body.stmts if isinstance(s, N.For)][0]
    lanes = [s for s in chunk.body.stmts if isinstance(s, N.For)]
    assert len(lanes) == 1 and lanes[0].hi == N.Var("valid")
    outs = []
    for name, p in (("new", new), ("old", prog)):
        f = _lib(print_program(p), tmp_path, name).k
        x = np.linspace(-3, 3, 77).astype(np.float32)
        y = np.zeros(77, np.float32)
        f(ptr(x), ptr(y), ctypes.c_int(77))
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[0], np.linspace(-3, 3, 77).astype(np.float32) ** 2 + 1
                               - np.linspace(-3, 3, 77).astype(np.float32), rtol=1e-6)


def test_decache_refuses_a_loop_that_may_not_cover_the_valid_lanes():
    from xpiler.passes import decache
    src = C_STAGED.replace("for (int j2 = 0; j2 < 32; ++j2)", "for (int j2 = 0; j2 < n / 2; ++j2)")
    prog = parse_text(src, "c", "k.c")
    fn, notes = decache.unstage(prog.func("k"), prog)
    assert fn is prog.func("k")
    assert any(n and "may not cover" in n for n in notes)


BEGIN_END_CHUNKS = """
#define CHUNK 32
__mlu_entry__ void k(const float *x, float *y, int n) {
    __nram__ float buf[CHUNK];
    int per = (n + taskDim - 1) / taskDim;
    int begin = taskId * per;
    int end = begin + per < n ? begin + per : n;
    for (int off = begin; off < end; off += CHUNK) {
        int len = end - off < CHUNK ? end - off : CHUNK;
        for (int j = 0; j < len; ++j) buf[j] = x[off + j];
        for (int j = 0; j < CHUNK; ++j) buf[j] = buf[j] * buf[j];
        for (int j = 0; j < len; ++j) y[off + j] = buf[j];
    }
}
"""


def test_begin_end_chunks_with_absolute_offsets_collapse(tmp_path):
    new = recover(BEGIN_END_CHUNKS, "bang", BLOCK4)
    loops = top_loops(new)
    assert len(loops) == 1 and loops[0].hi == N.Var("n") and not arrays(new)
    for n in (0, 3, 200):
        run_both(BEGIN_END_CHUNKS, BLOCK4, tmp_path, n)


def test_more_tasks_than_the_tiling_proof_unrolls_is_refused_at_once():
    # the proof writes a term per task into each query: 4096 tasks held a tuning search for
    # minutes (2026-12-06); above MAX_UNROLLED_TASKS the collapse is refused, and quickly
    import time
    from xpiler.passes.task_slices import MAX_UNROLLED_TASKS
    t0 = time.monotonic()
    why = why_not(BEGIN_END, {"dim": [4096, 1, 1], "func_type": "block"})
    assert f"above {MAX_UNROLLED_TASKS}" in why and time.monotonic() - t0 < 20
    new = recover(BEGIN_END, "bang", {"dim": [MAX_UNROLLED_TASKS, 1, 1], "func_type": "block"})
    assert len(top_loops(new)) == 1      # at the cap it still collapses
