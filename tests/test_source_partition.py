"""BANG task loops recovered from the source's parallel tasks: binding trusts the source for
global (parameter) buffers only, and still checks everything else."""
from __future__ import annotations

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding, loop_recovery
from xpiler.passes.base import PassError
from xpiler.passes.loop_recovery import SOURCE_PARTITION_PRAGMA

SLICES = """{glob}
void k(const float* x, float* y, int n) {{
    {pragma}
    for (int task = 0; task < 4; ++task) {{
        int per = (n + 3) / 4;
        int b = task * per;
        int e = b + per;
        if (e > n) e = n;
        for (int r = b; r < e; ++r) y[r] = 2.0f * x[r];
        {extra}
    }}
}}
"""


def prog(pragma=True, glob="", extra=""):
    return parse_text(SLICES.format(pragma=f"#pragma {SOURCE_PARTITION_PRAGMA}" if pragma else "",
                                    glob=glob, extra=extra), "c", "k.c")


def test_clamped_slices_are_proved_without_the_source_mark():
    # the clamp `int e = b + per; if (e > n) e = n;` reads as one conditional value (dependence.py's
    # fold_clamps), so the slices are proved disjoint without trusting the source
    out = binding.apply(prog(pragma=False), target="cuda", entry="k")
    out = out[0] if isinstance(out, tuple) else out
    assert any(isinstance(n, N.For) and n.binding for n in walk(out.func("k")))


def test_overlapping_slices_are_refused_without_the_source_mark():
    overlapping = parse_text(SLICES.replace("int e = b + per;", "int e = b + per + 1;").format(
        pragma="", glob="", extra=""), "c", "k.c")
    with pytest.raises(PassError) as e:
        binding.apply(overlapping, target="cuda", entry="k")
    assert e.value.code == "XP4001" and "'y'" in e.value.why


def test_marked_task_loop_binds_and_the_mark_is_consumed():
    out = binding.apply(prog(), target="cuda", entry="k")
    out = out[0] if isinstance(out, tuple) else out
    bound = [n for n in walk(out.func("k")) if isinstance(n, N.For) and n.binding]
    assert bound and all(SOURCE_PARTITION_PRAGMA not in n.pragmas for n in bound)


def test_marked_loop_still_refuses_a_shared_file_scope_buffer():
    with pytest.raises(PassError) as e:
        binding.apply(prog(glob="float g[4];", extra="g[0] = x[b];"), target="cuda", entry="k")
    assert e.value.code == "XP4001" and "'g'" in e.value.why


BANG = """__mlu_global__ void k(const float* x, float* y, int n) {
    int per = (n + taskDim - 1) / taskDim;
    int b = taskId * per;
    int e = b + per;
    if (e > n) e = n;
    for (int r = b; r < e; ++r) y[r] = 2.0f * x[r];
}
"""


def test_loop_recovery_marks_the_bang_task_loop():
    p = parse_text(BANG, "bang", "k.mlu")
    out = loop_recovery.apply(p, entry="k", launch={"dim": [4, 1, 1], "func_type": "block"}, normalize=False)
    out = out[0] if isinstance(out, tuple) else out
    tops = [s for s in out.func("k").body.stmts if isinstance(s, N.For)]
    assert len(tops) == 1 and tops[0].var == "task" and SOURCE_PARTITION_PRAGMA in tops[0].pragmas


def test_helper_on_file_scope_nram_is_inlined_and_its_buffers_made_per_task():
    from pathlib import Path
    from xpiler.frontend import parse_file
    from xpiler.spec import load_spec
    ex = Path(__file__).resolve().parents[1] / "examples" / "bmm"
    spec = load_spec(ex / "bmm.mlu.toml")
    from xpiler.passes import detensorize
    p = detensorize.apply(parse_file(ex / "bmm.mlu", "bang"), entry="bmm", target="cuda")
    p = p[0] if isinstance(p, tuple) else p
    out = loop_recovery.apply(p, entry="bmm", launch=dict(spec.launch))
    out = out[0] if isinstance(out, tuple) else out
    fn = out.func("bmm")
    assert not [n for n in walk(fn.body) if isinstance(n, N.Call) and n.func == "matmul_rows"]
    task = next(s for s in fn.body.stmts if isinstance(s, N.For))
    local = {s.name for s in task.body.stmts if isinstance(s, N.Decl)}
    assert {"a_tile", "b_tile", "c_acc", "c_part", "zero_pad"} <= local
    # no on-chip buffer is shared between tasks any more, so the task loop binds to threads
    out_b = binding.apply(out, target="cuda", entry="bmm")
    out_b = out_b[0] if isinstance(out_b, tuple) else out_b
    bound = [n for n in walk(out_b.func("bmm")) if isinstance(n, N.For) and n.binding]
    assert [n.var for n in bound] == ["task"]
    assert not {it.name for it in out_b.items if isinstance(it, N.Decl)} & {"a_tile", "zero_pad", "c_acc"}
