"""binding(rows="core") (passes/block_core.py): a BANG task on one thread block; its buffers one
copy per block (``__shared__`` or a device-global slice per block), its leaf loops spread over
the block's threads with barriers around every store, its other loops and scalar code run alike
in every thread, stores outside loops in thread 0."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.migration.stage import Stage
from xpiler.passes import binding
from xpiler.passes.base import PassError
from xpiler.passes.inline_helpers import prepare_source
from xpiler.printers import print_program
from xpiler.schedule.step import Step, StepContext, apply_step

EX = Path(__file__).resolve().parents[1] / "examples"


def _loop_form(path, entry, tasks=8, func_type="block", text=None):
    prog = parse_text(text, "bang", path.name) if text is not None else parse_file(path, "bang")
    prog = prepare_source(prog, entry)
    launch = {"dim": [tasks, 1, 1], "func_type": func_type}
    st = Stage(prog.with_launch(entry, launch), "bang", entry)
    st.text = print_program(prog, "bang")
    ctx = StepContext(dict(launch), [])
    for s in (Step("detensorize", {"target": "cuda"}), Step("loop_recovery", {})):
        st = apply_step(s, st, ctx)
    return st


def test_layernorm_task_becomes_a_block():
    st = _loop_form(EX / "layernorm" / "layernorm.mlu", "layernorm", 16, "union1")
    prog, launch = binding.apply(st.program, entry="layernorm", target="cuda", loop="task", rows="core", block=128)
    assert launch == {"grid": [16, 1, 1], "block": [128, 1, 1]}
    text = print_program(prog, "cuda")
    f = prog.func("layernorm")
    core = next(s for s in f.body.stmts if isinstance(s, N.For))
    assert core.binding == "blockIdx.x"
    # small buffers shared by the block, the large ones a device-global slice per block
    assert "__shared__ float stats[MAX_BLOCK_ROWS];" in text and "__shared__ float red_buf[ALIGN];" in text
    assert "__device__ float xp_core_x_buf[16][BLOCK_FLOATS];" in text
    assert "xp_core_x_buf[blockIdx.x]" in text and "float x_buf[" not in text
    spread = [n for n in walk(core.body) if isinstance(n, N.For) and n.binding == "threadIdx.x"]
    assert len(spread) >= 10
    # the row loops stay sequential, run by every thread
    assert any(isinstance(n, N.For) and n.var == "r0" and n.binding is None for n in walk(core.body))
    # the store of a row's variance is thread 0's, between barriers
    assert "if (threadIdx.x == 0) {\n                    stats[k_1] = red_buf[0] / (float)cols;" in text
    assert text.count("__syncthreads();") > 20


def test_candidates_offer_core_only_where_one_block_per_row_does_not_apply():
    st = _loop_form(EX / "layernorm" / "layernorm.mlu", "layernorm", 16, "union1")
    cands = binding.candidates(st.program, "cuda")
    assert {c.get("rows") for c in cands} >= {"core", None}
    assert all(c["block"] in (128, 256) for c in cands if c.get("rows") == "core")
    c_prog = prepare_source(parse_file(EX / "softmax" / "softmax.c", "c"), "softmax")
    rows = {c.get("rows") for c in binding.candidates(c_prog, "cuda")}
    assert "block" in rows and "core" not in rows


C_TASKS = """#define N 64
void k(const float *x, float *y, int rows, int cols) {
    for (int t = 0; t < 8; ++t) {
        float buf[N];
        int m = 0;
        for (int c = 0; c < cols; ++c) buf[c] = x[t * cols + c];
        STMT
        for (int c = 0; c < cols; ++c) y[t * cols + c] = buf[c] * 2.0f;
    }
}
"""


def _c_task(stmt):
    return prepare_source(parse_text(C_TASKS.replace("STMT", stmt), "c", "tasks.c"), "k")


def test_core_form_of_a_plain_task_loop():
    prog, launch = binding.apply(_c_task(""), entry="k", target="cuda", loop="t", rows="core", block=128)
    text = print_program(prog, "cuda")
    assert launch["grid"] == [8, 1, 1] and "__shared__ float buf[N];" in text
    assert text.count("threadIdx.x") >= 2


@pytest.mark.parametrize("stmt,match", [
    ("if (cols > 4096) break;", "breaks out of its body"),
    ("buf[0] = (float)(m = 1);", "statement run by thread 0 assigns 'm'"),
    ("for (int c = 0; c < cols; ++c) { float tmp[2]; tmp[0] = buf[c]; y[t * cols + c] = tmp[0]; }", "is not declared at the top"),
    ("for (int c = 1; c < cols; ++c) buf[c] = buf[c - 1] + 1.0f;", "recurrence"),
])
def test_refusals(stmt, match):
    with pytest.raises(PassError) as e:
        binding.apply(_c_task(stmt), entry="k", target="cuda", loop="t", rows="core", block=128)
    assert e.value.code == "XP4001" and match in e.value.why, e.value.why


@pytest.mark.parametrize("name,loop", [("gemv", "task"), ("softmax", "r")])
def test_migrates_verifies_and_replays(tmp_path, name, loop):
    """A migration whose binding step is rows='core' verifies (SIMT emulator; also the GPU where
    there is one) and its log replays (the softmax source has an argmax loop: every thread runs it
    alike). rmsnorm.mlu is not used: at a derived boundary size (cols = MAX_COLS + 1) its source
    overruns an NRAM buffer, which the H200 shows as another block's slice being overwritten."""
    from xpiler.migration.driver import migrate
    from xpiler.replay import replay
    r = migrate(EX / name / f"{name}.mlu", "cuda", outdir=tmp_path / "out", jobs=1, perf=False,
                pipeline=[("detensorize", {"target": "cuda"}), ("loop_recovery", {}),
                          ("binding", {"target": "cuda", "loop": loop, "rows": "core", "block": 128,
                                       "grid_cap": None})])
    assert r.verified
    text = r.output_path.read_text()
    assert "blockIdx.x" in text and "__syncthreads();" in text
    events = [json.loads(x) for x in (tmp_path / "out" / "provenance.jsonl").read_text().splitlines()[1:]]
    b = next(e for e in events if e["type"] == "pass" and e["name"] == "binding" and e.get("applied"))
    assert b["params"]["rows"] == "core"
    test = next(e for e in events if e["type"] == "test" and e["program_hash"] == b["out_hash"])
    assert test["verified"] and "emu:simt" in test["substrate"]
    rep = replay(tmp_path / "out" / "provenance.jsonl")
    assert rep.ok if hasattr(rep, "ok") else rep
