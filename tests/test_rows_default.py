"""Row kernels to cuda / hip bind one block per row by default (issues 13, 15): the default plans
(xpiler/migration/pipeline.py: ``row_plans``) start with binding(rows="block", reduce="shuffle",
block=128, row_kernel=True), probed; the row-kernel rule (passes/block_rows.py:
``check_row_kernel``) refuses elementwise and window kernels with XP4002, and the plans after it
(today's binding) take them unchanged."""
from __future__ import annotations

import json

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.migration.pipeline import REQUIRE, ROW_REGS, ROWS, _finish, plans
from xpiler.passes import binding
from xpiler.passes.base import AlternativeRefused, PassError
from xpiler.printers import print_program

from conftest import EXAMPLES


def _row_step(plan):
    return next((p for n, p in plan if n == "binding" and p.get("row_kernel")), None)


@pytest.mark.parametrize("src,dst,before", [
    ("c", "cuda", None), ("c", "hip", None), ("cuda", "hip", "unthread"), ("hip", "cuda", "unthread"),
    ("bang", "cuda", "unblock"), ("bang", "hip", "unblock")])
def test_the_first_plan_to_simt_binds_rows_to_blocks(src, dst, before):
    ps = plans(src, dst)
    step = _row_step(ps[0])
    assert step == {"target": dst, **ROWS, REQUIRE: True}
    names = [n for n, _ in ps[0]]
    assert names[:2] == ["detensorize", "loop_recovery"]
    # the row held in registers where it is short (passes/row_registers.py), then the direction's usual finish
    assert names[names.index("binding") + 1:] == ["row_registers"] + [n for n, _ in _finish(dst)]
    assert dict(ps[0])["row_registers"] == {"target": dst, **ROW_REGS}
    assert (names[2] if before else "binding") == (before or "binding")
    # every other plan is the direction's own, without the row form, except (c sources) the one
    # that first makes AVX-512 lane loops plain row loops (flatten_lanes rows=True, then this binding)
    rest = ps[2:] if src == "c" else ps[1:]
    if src == "c":
        assert [n for n, _ in ps[1]][:3] == names[:2] + ["flatten_lanes"] and _row_step(ps[1]) == step
    assert not any(_row_step(p) for p in rest)


@pytest.mark.parametrize("src,dst", [("c", "c"), ("c", "bang"), ("cuda", "c"), ("hip", "bang"), ("bang", "c")])
def test_other_directions_have_no_row_plan(src, dst):
    assert not any(_row_step(p) for p in plans(src, dst))


def test_softmax_c_row_kernel_binding():
    prog = parse_file(EXAMPLES / "softmax" / "softmax.c")
    out, launch = binding.apply(prog, entry="softmax", target="cuda", **ROWS)
    assert launch == {"grid": ["rows", 1, 1], "block": [128, 1, 1]}
    assert {n.var: n.binding for n in walk(out.func("softmax")) if isinstance(n, N.For)}["r"] == "blockIdx.x"
    text = print_program(out)
    assert "__shfl_xor_sync(0xffffffffu" in text and "xp_red_m[4]" in text     # one slot per warp


ELEMENTWISE_2D = """void k(const float* x, float* y, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            y[r * cols + c] = x[r * cols + c] * 2.0f;
}
"""

WINDOW = """void k(const float* x, float* y, int n, int w, int kh, int kw)
{
    for (int o = 0; o < n; o++) {
        float m = x[o];
        for (int a = 0; a < kh; a++)
            for (int b = 0; b < kw; b++)
                m = fmaxf(m, x[o + a * w + b]);
        y[o] = m;
    }
}
"""

SHORT_ROW = """void k(const float* x, float* y, int rows)
{
    for (int r = 0; r < rows; r++) {
        float s = 0.0f;
        for (int c = 0; c < 16; c++)
            s += x[r * 16 + c];
        y[r] = s;
    }
}
"""

FLAT_OUTPUTS = """void k(const float* A, const float* B, float* C, int M, int N, int K)
{
    for (int idx = 0; idx < M * N; idx++) {
        int m = idx / N;
        int n = idx % N;
        float acc = 0.0f;
        for (int k = 0; k < K; k++)
            acc += A[m * K + k] * B[k * N + n];
        C[idx] = acc;
    }
}
"""

ROW_SUM = SHORT_ROW.replace("int rows)", "int rows, int cols)").replace("c < 16", "c < cols").replace(
    "r * 16", "r * cols")


@pytest.mark.parametrize("src,words", [
    (ELEMENTWISE_2D, "no column loop of loop 'r' reduces the row"),   # a map keeps its grid-stride form
    (WINDOW, "column loop 'a' nests a loop (a window, not a row)"),  # pooling / convolution windows
    (SHORT_ROW, "runs 16 times, fewer than the block's 128 threads"),
    (FLAT_OUTPUTS, "loop 'idx' is taken apart by '/'"),                # a matmul, one output per row
])
def test_the_row_kernel_rule_refuses_as_an_alternative(src, words):
    prog = parse_text(src, "c", "k.c")
    binding.apply(prog, entry="k", target="cuda", rows="block")     # legal for the tuner all the same
    with pytest.raises(AlternativeRefused) as e:
        binding.apply(prog, entry="k", target="cuda", **ROWS)
    assert e.value.code == "XP4002" and words in e.value.why, e.value.why


def test_row_kernel_rule_holds_for_a_row_sum():
    out, launch = binding.apply(parse_text(ROW_SUM, "c", "k.c"), entry="k", target="hip", **ROWS)
    assert launch["block"] == [128, 1, 1] and "__shfl_xor(" in print_program(out)


def test_illegal_row_binding_is_an_alternative_refusal_too():
    # a recurrence is refused by rows='block' itself (XP4001); as the row-kernel form, XP4002
    src = ROW_SUM.replace("s += x[r * cols + c];", "s = s * 0.5f + x[r * cols + c];")
    prog = parse_text(src, "c", "k.c")
    with pytest.raises(PassError) as e:
        binding.apply(prog, entry="k", target="cuda", rows="block")
    assert e.value.code == "XP4001"
    with pytest.raises(AlternativeRefused) as e:
        binding.apply(prog, entry="k", target="cuda", **ROWS)
    assert e.value.code == "XP4002" and "recurrence" in e.value.why


def test_row_kernel_qualifies_rows_block_only():
    prog = parse_text(ROW_SUM, "c", "k.c")
    with pytest.raises(AlternativeRefused) as e:
        binding.apply(prog, entry="k", target="cuda", row_kernel=True)
    assert "qualifies rows='block'" in e.value.why


def _migrate(tmp_path, path, to):
    from xpiler.migration.driver import migrate
    r = migrate(path, to, outdir=tmp_path / "out", jobs=1, perf=False)
    assert r.verified, [str(d) for d in r.diagnostics]
    log = [json.loads(x) for x in (tmp_path / "out" / "provenance.jsonl").read_text().splitlines()]
    return r.output_path.read_text(), r, log


@pytest.mark.slow
@pytest.mark.parametrize("path,to", [("softmax/softmax.c", "cuda"), ("gemv/gemv.c", "cuda"),
                                     # layernorm.hip -> cuda: pytest -m long (layernorm.mlu -> cuda in
                                     # test_reduce_shuffle, softmax.c -> cuda here keep the form by default)
                                     pytest.param("layernorm/layernorm.hip", "cuda", marks=pytest.mark.long),
                                     # gemv.mlu -> hip: pytest -m long (gemv.mlu -> cuda runs by default in
                                     # test_pass_binding)
                                     pytest.param("gemv/gemv.mlu", "hip", marks=pytest.mark.long)])
def test_default_migration_of_a_row_kernel_is_one_block_per_row(tmp_path, path, to):
    code, r, _ = _migrate(tmp_path, EXAMPLES / path, to)
    assert any(s.pass_name == "binding" and s.params.get("row_kernel") and s.params.get("rows") == "block"
               for s in r.steps), [s.describe() for s in r.steps]
    assert "= blockIdx.x;" in code and "+= gridDim.x)" in code
    assert ("__shfl_xor_sync(0xffffffffu" if to == "cuda" else "__shfl_xor(") in code


@pytest.mark.slow
@pytest.mark.parametrize("path,to,why", [("relu/relu.c", "cuda", "no loop to spread"),
                                         ("maxpool2d/maxpool2d.cu", "hip", "taken apart by")])
def test_other_kernels_keep_their_binding(tmp_path, path, to, why):
    code, r, log = _migrate(tmp_path, EXAMPLES / path, to)
    skipped = [e for e in log if e.get("what") == "plan skipped" and e.get("plan") == 0]
    assert skipped and "row kernel" in skipped[0]["why"] and why in skipped[0]["why"], skipped
    assert not any(s.params.get("row_kernel") for s in r.steps)
    assert "blockIdx.x * blockDim.x + threadIdx.x" in code
