"""Binding with ``rows="block"`` (passes/block_rows.py): a row loop's iterations on thread blocks,
its column loops over the block's threads with block reductions.  Legal row kernels verify on
the SIMT emulator; recurrences and cross-row dependences are refused; the tuner is offered the
form through ``binding.candidates``."""
from __future__ import annotations

from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding
from xpiler.passes.base import PassError
from xpiler.printers import print_program

EX = Path(__file__).resolve().parents[1] / "examples"


def c_prog(text):
    return parse_text(text, "c", "k.c")


def bindings(prog, name):
    return {n.var: n.binding for n in walk(prog.func(name)) if isinstance(n, N.For)}


def test_softmax_rows_on_blocks_columns_on_threads():
    prog = parse_file(EX / "softmax" / "softmax.c")
    out, launch = binding.apply(prog, entry="softmax", target="cuda", rows="block", block=128)
    assert launch == {"grid": ["rows", 1, 1], "block": [128, 1, 1]}
    assert bindings(out, "softmax")["r"] == "blockIdx.x"
    assert [n.binding for n in walk(out.func("softmax")) if isinstance(n, N.For) and n.var == "c"] == \
        ["threadIdx.x"] * 3
    text = print_program(out)
    # one shared array per reduction (max, sum), sized by the block, declared once per kernel
    assert "__shared__ float xp_red_m[128];" in text and "__shared__ float xp_red_sum[128];" in text
    assert "m = xp_red_m[0];" in text and "sum = sum + xp_red_sum[0];" in text
    # the default binding of the same program is unchanged: one row per thread
    plain, plain_launch = binding.apply(prog, entry="softmax", target="cuda")
    assert bindings(plain, "softmax")["r"] == "global.x" and plain_launch["grid"][0] == "(rows + 255) / 256"


def test_store_outside_the_column_loops_runs_in_thread_zero():
    prog = parse_file(EX / "gemv" / "gemv.c")
    out, launch = binding.apply(prog, entry="gemv", target="hip", loop="i", rows="block", block=512,
                                grid_cap=1024)
    text = print_program(out)
    assert launch == {"grid": ["min(M, 1024)", 1, 1], "block": [512, 1, 1]}
    assert "if (threadIdx.x == 0) {\n            y[i] = acc;" in text
    assert "#pragma omp" not in text


@pytest.mark.parametrize("kernel,target", [("softmax", "cuda"), ("gemv", "hip")])
def test_block_rows_verify_on_the_emulator(tmp_path, kernel, target):
    """grid_cap=2 makes the blocks stride over the rows (the specs have up to 256 rows); the
    column counts of the specs are below and above the block size."""
    from xpiler.migration.driver import migrate
    params = {"target": target, "rows": "block", "block": 128, "grid_cap": 2}
    r = migrate(EX / kernel / f"{kernel}.c", target, outdir=tmp_path / "out", jobs=1, perf=False,
                pipeline=[("binding", params)])
    assert r.verified, [str(d) for d in r.diagnostics]
    assert [s.params for s in r.steps] == [params]
    code = r.output_path.read_text()
    assert "= blockIdx.x;" in code and "+= gridDim.x)" in code and "__syncthreads();" in code


PREFIX = """void k(const float* x, float* y, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        y[r * cols] = x[r * cols];
        for (int c = 1; c < cols; c++)
            y[r * cols + c] = y[r * cols + c - 1] + x[r * cols + c];
    }
}
"""

RUNNING = """void k(const float* x, float* y, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        float s = 0.0f;
        for (int c = 0; c < cols; c++)
            s = s * 0.5f + x[r * cols + c];
        y[r] = s;
    }
}
"""

CROSS_ROW = """void k(const float* x, float* y, int rows, int cols)
{
    for (int r = 1; r < rows; r++) {
        float s = 0.0f;
        for (int c = 0; c < cols; c++)
            s += x[r * cols + c];
        y[r] = y[r - 1] + s;
    }
}
"""


@pytest.mark.parametrize("src,line,words", [
    (PREFIX, 5, "loop 'c' is a recurrence"),          # a scan over the row's columns
    (RUNNING, 5, "loop 'c' is a recurrence"),         # a running value that is no reduction
    (CROSS_ROW, 3, "loop 'r' carries a dependence"),  # row r reads what row r - 1 wrote
])
def test_refusals_name_the_loop(src, line, words):
    with pytest.raises(PassError) as ei:
        binding.apply(c_prog(src), entry="k", target="cuda", loop="r", rows="block")
    e = ei.value
    assert e.code == "XP4001" and words in e.why and e.line == line, (e.why, e.line)


def test_rows_block_is_for_simt_targets_only():
    prog = parse_file(EX / "softmax" / "softmax.c")
    for target in ("bang", "c"):
        with pytest.raises(PassError) as ei:
            binding.apply(prog, entry="softmax", target=target, rows="block")
        assert "cuda/hip thread blocks" in ei.value.why
    with pytest.raises(PassError) as ei:
        binding.apply(prog, entry="softmax", target="cuda", rows="lane")
    assert "rows='lane'" in ei.value.why


def test_candidates_offer_block_rows_where_legal():
    prog = parse_file(EX / "layernorm" / "layernorm.c")
    cands = binding.candidates(prog, "hip")
    rows = [c for c in cands if c.get("rows") == "block" and "reduce" not in c]
    assert sorted((c["block"], c["grid_cap"] or 0) for c in rows) == \
        sorted((b, cap or 0) for b in (128, 256, 512) for cap in (None, 1024))
    # each also with the warp-shuffle reductions (tests/test_reduce_shuffle.py)
    assert sorted((c["block"], c["grid_cap"] or 0) for c in cands if c.get("reduce") == "shuffle") == \
        sorted((c["block"], c["grid_cap"] or 0) for c in rows)
    assert all(c["loop"] == "r" and c["target"] == "hip" for c in rows)
    assert any("rows" not in c for c in cands)            # one row per thread stays a candidate
    for c in rows[:1]:                                    # each applies
        out, _ = binding.apply(prog, entry="layernorm", **c)
        assert bindings(out, "layernorm")["r"] == "blockIdx.x"
    # not offered where the row body is a recurrence, nor for bang / c
    assert not [c for c in binding.candidates(c_prog(PREFIX), "cuda") if c.get("rows")]
    assert not [c for c in binding.candidates(prog, "bang") + binding.candidates(prog, "c") if c.get("rows")]
