"""A loop inside a plain block of a row body (an inlined helper's, or the source's own braces) is
made a statement of the row body before binding's one-block-per-row form plans it
(passes/row_blocks.py), so that such a row kernel takes the default row plan (issue 13/15 row
kernels; the wild corpus's softmax_rows.cpp, layernorm_rows.cpp, layernorm_stats_ref.cpp,
rmsnorm_rows.cpp were bound one thread per row before). A block whose names would change
meaning is kept, and the refusal says which name kept it."""
from __future__ import annotations

import json

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.migration.pipeline import ROWS
from xpiler.passes import binding, row_blocks
from xpiler.passes.base import AlternativeRefused
from xpiler.passes.inline_helpers import prepare_source
from xpiler.printers import print_program

# a wild-style C++ row kernel: the row sum in a helper, inlined as a block holding its loop
HELPER = """
namespace ops {
inline float row_sum(const float* p, int n)
{
    float s = 0.0f;
    for (int j = 0; j < n; ++j) {
        s += p[j];
    }
    return s;
}
}
extern "C" void k(const float* x, float* y, int rows, int cols)
{
    for (int r = 0; r < rows; ++r) {
        const float* p = x + static_cast<long>(r) * cols;
        const float total = ops::row_sum(p, cols);
        const float inv = 1.0f / total;
        for (int j = 0; j < cols; ++j) {
            y[static_cast<long>(r) * cols + j] = p[j] * inv;
        }
    }
}
"""

# the source's own braces, declaring 's', a name the row body declares again after the block
RENAMED = """
void k(const float* x, float* y, int rows, int cols)
{
    for (int r = 0; r < rows; ++r) {
        float t;
        {
            float s = 0.0f;
            for (int j = 0; j < cols; ++j)
                s += x[r * cols + j];
            t = s;
        }
        const float s = t / cols;
        for (int j = 0; j < cols; ++j)
            y[r * cols + j] = x[r * cols + j] - s;
    }
}
"""

# the block's 's' is also declared inside its own loop (shadowed there): no exact rename
SHADOWED = RENAMED.replace("""            for (int j = 0; j < cols; ++j)
                s += x[r * cols + j];""", """            for (int j = 0; j < cols; ++j) {
                float s = x[r * cols + j];
                t = s;
            }""").replace("t = s;\n        }", "t = t + s;\n        }")


def _prog(src, file="k.cpp"):
    return prepare_source(parse_text(src, "c", file), "k")


def _bindings(prog):
    return sorted({(n.var, n.binding) for n in walk(prog.func("k")) if isinstance(n, N.For) and n.binding})


def test_an_inlined_helpers_loop_becomes_a_column_loop():
    out, launch = binding.apply(_prog(HELPER), entry="k", target="cuda", **ROWS)
    assert launch == {"grid": ["rows", 1, 1], "block": [128, 1, 1]}
    assert _bindings(out) == [("j", "threadIdx.x"), ("j_1", "threadIdx.x"), ("r", "blockIdx.x")]
    assert "__shfl_xor_sync(0xffffffffu" in print_program(out)


def test_a_clashing_name_is_renamed_in_the_block():
    prog = _prog(RENAMED, "k.c")
    func = prog.func("k")
    row = next(s for s in func.body.stmts if isinstance(s, N.For))
    new_func, new_row = row_blocks.splice(func, row, binding._fresh_namer(func))
    decls = [s.name for s in new_row.body.stmts if isinstance(s, N.Decl)]
    assert decls == ["t", "s1", "s"], decls          # the block's 's' is 's1' now, the row's own stays
    out, _ = binding.apply(prog, entry="k", target="hip", **ROWS)
    assert ("r", "blockIdx.x") in _bindings(out)


def test_a_block_whose_name_cannot_be_renamed_exactly_is_kept():
    prog = _prog(SHADOWED, "k.c")
    func = prog.func("k")
    row = next(s for s in func.body.stmts if isinstance(s, N.For))
    assert row_blocks.splice(func, row, binding._fresh_namer(func)) is None
    with pytest.raises(AlternativeRefused) as e:
        binding.apply(prog, entry="k", target="cuda", **ROWS)
    assert "a loop inside a block of the row body" in e.value.why
    assert "the block declares 's', also used outside it" in e.value.why, e.value.why


def test_a_block_after_a_pragma_is_left_alone():
    src = RENAMED.replace("        float t;\n        {", "        float t;\n#pragma unroll\n        {")
    prog = _prog(src, "k.c")
    func = prog.func("k")
    row = next(s for s in func.body.stmts if isinstance(s, N.For))
    assert row_blocks.splice(func, row, binding._fresh_namer(func)) is None


SPEC = """entry = "k"
dialect = "c"
[sizes]
rows = 16
cols = 300
[[shapes]]
name = "odd"
rows = 5
cols = 77
[[args]]
name = "x"
dtype = "float32"
shape = ["rows", "cols"]
role = "in"
range = [0.5, 2.0]
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
python = "ref.py:REF"
"""

REF = """import numpy as np
def normalized(x, rows, cols):
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    return (a / a.sum(axis=1, keepdims=True)).astype(np.float32)
def centered(x, rows, cols):
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    return (a - a.mean(axis=1, keepdims=True)).astype(np.float32)
"""


@pytest.mark.slow
@pytest.mark.parametrize("src,ref,name", [(HELPER, "normalized", "k.cpp"), (RENAMED, "centered", "k.c")])
def test_migrates_one_block_per_row_and_verifies(tmp_path, src, ref, name):
    from xpiler.migration.driver import migrate
    (tmp_path / name).write_text(src)
    (tmp_path / "ref.py").write_text(REF)
    (tmp_path / f"{name}.toml").write_text(SPEC.replace("REF", ref))
    r = migrate(tmp_path / name, "cuda", outdir=tmp_path / "out", jobs=1, perf=False)
    assert r.verified and "emu:simt" in r.verdict.substrate, [str(d) for d in r.diagnostics]
    assert any(s.pass_name == "binding" and s.params.get("row_kernel") for s in r.steps), \
        [s.describe() for s in r.steps]
    log = [json.loads(x) for x in (tmp_path / "out" / "provenance.jsonl").read_text().splitlines()]
    assert not [e for e in log if e.get("what") == "plan skipped" and e.get("plan") == 0]
    assert "blockIdx.x" in r.output_path.read_text()
