"""A bound row held in registers (passes/row_registers.py): the row plans' step after
binding(rows="block") for cuda / hip. Each row access that two column loops use is read once into
(or written once from) a per-thread register array when the row fits ``slots * block`` columns;
the bound loop stays for longer rows. Refusals name what stands in the way."""
from __future__ import annotations

import json

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.migration.pipeline import ROWS
from xpiler.passes import binding, row_registers
from xpiler.passes.base import AlternativeRefused, PassError
from xpiler.printers import print_program

from conftest import EXAMPLES


def _bound(prog, entry, target="cuda"):
    out, launch = binding.apply(prog, entry=entry, target=target, **ROWS)
    return out.with_launch(entry, launch)


def _count(text, s):
    return text.count(s)


@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_softmax_row_is_read_once_and_written_once(target):
    prog = _bound(parse_file(EXAMPLES / "softmax" / "softmax.c"), "softmax", target)
    out = row_registers.apply(prog, entry="softmax", target=target, slots=8)
    text = print_program(out)
    kernel = text.split("softmax_host")[0]
    fast, slow = kernel.split("} else {")
    assert "if (cols <= 1024)" in fast                         # 8 slots x 128 threads
    assert "float xp_reg_xr[8];" in fast and "float xp_reg_yr[8];" in fast
    # the fast version reads x in one slot loop and writes y in one; the column loops use registers
    assert _count(fast, "= xr[xp_c") == 1 and _count(fast, "yr[xp_c") == 1
    assert "xr[c]" not in fast and "yr[c]" not in fast
    assert "expf(xp_reg_xr[" in fast and "xp_reg_yr[xp_s_3] *= inv" in fast
    # the loop that starts at 1 keeps its start as a guard over the same column -> thread map
    assert "if (c >= 1 && c < cols)" in fast
    assert _count(fast, "#pragma unroll") >= 5
    # the bound loop is kept for longer rows, unchanged
    assert "for (int c = threadIdx.x; c < cols; c += blockDim.x)" in slow and "yr[c] = e;" in slow


def test_one_loop_rows_are_left_alone():
    """gemv reads each element of its row once: nothing to keep (XP4002)."""
    prog = _bound(parse_file(EXAMPLES / "gemv" / "gemv.c"), "gemv")
    with pytest.raises(AlternativeRefused, match="two column loops"):
        row_registers.apply(prog, entry="gemv", target="cuda")


SHARED_ROW = """void k(const float* x, float* y, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        const float* xr = x + (long)r * cols;
        float* yr = y + (long)r * cols;
        float s = 0.0f;
        for (int c = 0; c < cols; c++) { yr[c] = xr[c] * 2.0f; s += xr[c]; }
        for (int c = 0; c < cols; c++) { yr[c] = yr[c] / s; }
        yr[0] = s;
    }
}
"""


def test_a_stored_row_another_statement_touches_stays_in_memory():
    """yr[0] is written by thread 0 after the loops: a register copy would lose it (XP4001)."""
    prog = _bound(parse_text(SHARED_ROW, "c"), "k")
    with pytest.raises(PassError, match="yr\\[0\\]. is not the row's own element") as e:
        row_registers.apply(prog, entry="k", target="cuda")
    assert e.value.code == "XP4001"
    # without that statement the same kernel is taken
    ok = _bound(parse_text(SHARED_ROW.replace("        yr[0] = s;\n", ""), "c"), "k")
    text = print_program(row_registers.apply(ok, entry="k", target="cuda"))
    assert "float xp_reg_yr[8];" in text and "xp_reg_xr" not in text     # xr: read by one loop only


READ_FIRST = """void k(const float* x, float* y, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        float* yr = y + (long)r * cols;
        float s = 0.0f;
        for (int c = 0; c < cols; c++) { s += yr[c]; }
        for (int c = 0; c < cols; c++) { yr[c] = yr[c] - s; }
    }
}
"""


def test_a_stored_row_read_before_its_first_store_is_refused():
    prog = _bound(parse_text(READ_FIRST, "c"), "k")
    with pytest.raises(PassError, match="does not store it first"):
        row_registers.apply(prog, entry="k", target="cuda")


UNEQUAL = """void k(const float* x, float* y, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        const float* xr = x + (long)r * cols;
        float* yr = y + (long)r * cols;
        float s = 0.0f;
        for (int c = 0; c < cols; c++) { s += xr[c]; }
        for (int c = 0; c < cols - 1; c++) { yr[c] = xr[c] / s; }
    }
}
"""


def test_column_loops_with_different_ends_are_refused():
    prog = _bound(parse_text(UNEQUAL, "c"), "k")
    with pytest.raises(AlternativeRefused, match="column loops end at"):
        row_registers.apply(prog, entry="k", target="cuda")


def test_not_a_simt_program():
    prog = parse_file(EXAMPLES / "softmax" / "softmax.c")
    with pytest.raises(AlternativeRefused):
        row_registers.apply(prog, entry="softmax", target="c")


def test_candidates_offer_slot_counts():
    prog = _bound(parse_file(EXAMPLES / "softmax" / "softmax.c"), "softmax")
    cands = row_registers.candidates(prog, "cuda")
    assert [c["slots"] for c in cands] == list(row_registers.SLOTS)


def test_softmax_c_to_cuda_verifies_both_versions(tmp_path):
    """The default migration takes the step, and its test runs a derived instance one column past
    the register version (cols = 1025), so the kept bound loop is tested too."""
    from xpiler.cli import main
    out = tmp_path / "o"
    assert main(["migrate", str(EXAMPLES / "softmax" / "softmax.c"), "--to", "cuda", "-o", str(out)]) == 0
    events = [json.loads(line) for line in (out / "provenance.jsonl").read_text().splitlines()]
    step = next(e for e in events if e.get("type") == "pass" and e.get("name") == "row_registers")
    assert step["applied"] and step["params"]["slots"] == 8
    test = next(e for e in events if e.get("type") == "test" and e.get("program_hash") == step["out_hash"])
    assert test["verified"]
    assert any(d["sizes"].get("cols", 0) > 1024 for d in test.get("derived", []))
    assert "xp_reg_" in (out / "softmax.cu").read_text()


def test_a_column_loop_under_a_condition_is_refused():
    """The step relies on every column loop running for every row (its loads read what the source
    reads); one wrapped in an `if` is refused (XP4002)."""
    from xpiler.passes import dependence as D
    prog = _bound(parse_file(EXAMPLES / "softmax" / "softmax.c"), "softmax")
    f = prog.func("softmax")
    row = next(s for s in f.body.stmts if isinstance(s, N.For) and s.binding == "blockIdx.x")
    blk = next(s for s in row.body.stmts if isinstance(s, N.Block) and any(isinstance(x, N.For) for x in s.stmts))
    guarded = N.If(N.BinOp(">", N.Var("rows"), N.Const(0, "int32", "0")), blk)
    f2 = f.with_(body=D.replace_node(f.body, blk, guarded))
    prog2 = prog.with_(items=tuple(f2 if it is f else it for it in prog.items))
    with pytest.raises(AlternativeRefused, match="under a condition"):
        row_registers.apply(prog2, entry="softmax", target="cuda")
