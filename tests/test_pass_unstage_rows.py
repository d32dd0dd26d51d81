"""Row un-staging (``passes/unstage_rows.py``): a BANG row loop over one NRAM-staged padded row
becomes a plain row body over global memory; each mutated source that breaks one obligation is
refused with its diagnostic; softmax.mlu -> cuda / hip binds one block per row by default."""
from __future__ import annotations

from pathlib import Path

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import detensorize, unstage_rows
from xpiler.passes.base import PassError
from xpiler.printers import print_program

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = (ROOT / "examples/softmax/softmax.mlu").read_text()


def _prog(src, name="softmax"):
    prog = parse_text(src, "bang", f"{name}.mlu")
    out = detensorize.apply(prog, entry=name, target="cuda")
    return out[0] if isinstance(out, tuple) else out


def _refusal(src, name="softmax"):
    with pytest.raises(PassError) as e:
        unstage_rows.apply(_prog(src, name), entry=name)
    return e.value


def test_softmax_row_reads_global_memory_and_keeps_its_tail():
    new = unstage_rows.apply(_prog(SOFTMAX), entry="softmax")
    fn = new.func("softmax")
    assert not any(isinstance(it, N.Decl) and it.scope == "nram" for it in new.items)
    assert not any(isinstance(n, N.Var) and n.name in ("row_buf", "red_buf") for n in walk(fn))
    text = print_program(new)
    # the first element: a main lane when cols > 0, else the tail's value
    assert "(0 < cols ? (float)(x + (long)r * cols)[0] : (float)NEG_BIG)" in text
    # the max and the sum keep their tail (NEG_BIG is no identity of the sum once exp'd): each stays
    # one loop over the padded row whose lanes past cols take the tail's value
    assert "for (int xpd_i4 = 1; xpd_i4 < padded; ++xpd_i4) {\n" \
        "            const float xpd_x5 = (float)(xpd_i4 < cols ? (float)(x + (long)r * cols)[xpd_i4] : (float)NEG_BIG);" in text
    assert "for (int xpd_i11 = 0; xpd_i11 < padded; ++xpd_i11) {\n            xpd_acc10 += (float)(xpd_i11 < cols ? " \
        "(float)expf((float)((float)(x + (long)r * cols)[xpd_i11] - xpd_s6)) : (float)expf((float)((float)NEG_BIG - xpd_s6)));" in text
    # the copy-out recomputes the row from x; only the cols valid lanes are stored
    assert "(y + (long)r * cols)[xpd_j14] = (float)((float)expf((float)((float)(x + (long)r * cols)[xpd_j14]" in text
    # the unread index of __bang_max is gone
    assert "xpd_best2" not in text


def test_zero_tail_of_a_sum_is_dropped():
    src = """#include <bang.h>
#define ALIGN 32
__nram__ float buf[8192];
__nram__ float red[32];
extern "C" __mlu_global__ void rsum(const float *x, float *y, int rows, int cols)
{
    int padded = (cols + ALIGN - 1) / ALIGN * ALIGN;
    for (int r = taskId; r < rows; r += taskDim) {
        __bang_write_zero(buf, padded);
        __memcpy(buf, x + (long)r * cols, cols * sizeof(float), GDRAM2NRAM);
        __bang_sum(red, buf, padded);
        y[r] = red[0];
    }
}
"""
    text = print_program(unstage_rows.apply(_prog(src, "rsum"), entry="rsum"))
    assert "buf" not in text.split("rsum(")[1].replace("xpd", "")
    # the zero tail adds nothing to a sum that starts at +0 (dropped); the main lanes read x
    body = text[text.index("void rsum"):]
    assert body.count("for (int") == 2            # rows, then the main lanes only
    assert "< cols;" in body and "< padded;" not in body


def test_tail_not_refilled_is_refused():
    # without the NEG_BIG fill the tail holds what an earlier row left in NRAM
    src = SOFTMAX.replace("        for (int c = cols; c < padded; ++c)\n            row_buf[c] = NEG_BIG;\n", "")
    assert src != SOFTMAX
    e = _refusal(src)
    assert e.code == "XP4282" and "tail lanes" in e.why


def test_tail_copied_out_is_refused():
    src = SOFTMAX.replace("__memcpy(y + (long)r * cols, row_buf, cols * sizeof(float), NRAM2GDRAM);",
                          "__memcpy(y + (long)r * cols, row_buf, padded * sizeof(float), NRAM2GDRAM);")
    assert src != SOFTMAX
    e = _refusal(src)
    assert e.code == "XP4283" and "global memory" in e.why


def test_partial_store_into_the_main_lanes_is_refused():
    # a store over lanes [1, cols) leaves lane 0 with the old value: no single main value
    src = SOFTMAX.replace("__bang_sub_scalar(row_buf, row_buf, row_max, padded);",
                          "__bang_sub_scalar(row_buf + 1, row_buf + 1, row_max, cols - 1);")
    assert src != SOFTMAX
    e = _refusal(src)
    assert e.code == "XP4281"


LAYERNORM = (ROOT / "examples/layernorm/layernorm.mlu").read_text()


def test_layernorm_block_of_rows_becomes_one_row_per_iteration():
    new = unstage_rows.apply(_prog(LAYERNORM, "layernorm"), entry="layernorm")
    fn = new.func("layernorm")
    assert not any(isinstance(it, N.Decl) and it.scope == "nram" for it in new.items)
    text = print_program(new)
    body = text[text.index("void layernorm"):text.index("layernorm_host")]
    # blocks of rows -> one row per iteration of the task's own range, rows read from global memory
    assert "#pragma xpiler rows(unstaged)\n    for (long r0 = r_begin; r0 < r_end; ++r0) {" in body
    assert "nb" not in body and "block_rows" not in body and "stats" not in body and "x_buf" not in body
    # the early exit is gone (it only skipped an empty row range)
    assert "return" not in body
    # the zero tail of the mean's sum and of the variance's sum is dropped; the variance reads the
    # centred row, the output the scaled row, gamma and beta read from global memory
    assert body.count("< padded") == 0
    assert "y[(long)r0 * cols + xpd_j24] = (float)((float)((float)((float)((float)x[(long)r0 * cols + xpd_j24] - xpd_s10)" \
        " * xpd_s20) * (float)gamma[xpd_j24]) + (float)beta[xpd_j24]);" in body
    loops = [n for n in walk(fn) if isinstance(n, N.For)]
    assert [lp.hi for lp in loops[1:]] == [N.Var("cols")] * 3


RMSNORM = (ROOT / "examples/rmsnorm/rmsnorm.mlu").read_text()


def test_rmsnorm_blocks_dealt_in_turn_become_rows_and_the_sumpool_a_row_sum():
    # rmsnorm.mlu deals blocks of rows to the tasks in turn (step taskDim * block_rows) and sums the
    # squares with __bang_sumpool + a 32-wide __bang_sum: one row per iteration, dealt in turn, and
    # one sum over the row's own elements (the zero tail dropped)
    new = unstage_rows.apply(_prog(RMSNORM, "rmsnorm"), entry="rmsnorm")
    text = print_program(new)
    body = text[text.index("void rmsnorm"):text.index("rmsnorm_host")]
    assert "for (long r0 = taskId; r0 < rows; r0 += taskDim) {" in body
    assert "for (int xpd_i18 = 0; xpd_i18 < cols; ++xpd_i18) {\n            xpd_acc17 += (float)((float)x[(long)r0 * cols " \
        "+ xpd_i18] * (float)x[(long)r0 * cols + xpd_i18]);" in body
    assert "y[(long)r0 * cols + xpd_j26] = (float)((float)((float)x[(long)r0 * cols + xpd_j26] * xpd_s23) * " \
        "(float)gamma[xpd_j26]);" in body
    for b in ("part", "sq_buf", "x_buf", "scale_vec", "block_rows", "xpd_Wo16"):
        assert b not in body
    loop = next(n for n in walk(new.func("rmsnorm")) if isinstance(n, N.For) and n.var == "r0")
    assert loop.pragmas == ()       # a strided row loop: loop recovery's strided form, not the task slices


@pytest.mark.parametrize("old,new,code,why", [
    # a row that reads the task: dealing rows one at a time would change it
    ("scale_vec[k] = red_buf[0] / (float)cols;", "scale_vec[k] = red_buf[0] / (float)cols + taskId;",
     "XP4287", "task builtin"),
    # blocks dealt every other turn: no proof that they cover the rows
    ("r0 += taskDim * block_rows", "r0 += 2 * taskDim * block_rows", "XP4281", "not contiguous"),
    # a 1 x 1 window: padded / 32 output columns per row, no longer one sum per channel of the row
    ("__bang_sumpool(part, sq_buf, ALIGN, nb, padded / ALIGN, 1, padded / ALIGN, 1, padded / ALIGN);",
     "__bang_sumpool(part, sq_buf, ALIGN, nb, padded / ALIGN, 1, 1, 1, 1);", "XP4288", "one 1 x Q window per row"),
    # only half of a row's 32 partial sums are added: not the row's sum
    ("__bang_sum(red_buf, part + k * ALIGN, ALIGN);", "__bang_sum(red_buf, part + k * ALIGN, ALIGN / 2);",
     "XP4288", "partial sums"),
])
def test_rmsnorm_mutations_are_refused(old, new, code, why):
    src = RMSNORM.replace(old, new)
    assert src != RMSNORM
    e = _refusal(src, "rmsnorm")
    assert e.code == code and why in e.why


def test_scratch_row_shared_between_block_loops_is_refused():
    # the squares are written in one loop over the block's rows and summed in another: the second
    # loop would read only the last row's squares
    src = LAYERNORM.replace("""            __bang_square(sq_buf, row, padded);
            __bang_sum(red_buf, sq_buf, padded);
            stats[k] = red_buf[0] / (float)cols;           // biased variance
        }""", """            __bang_square(sq_buf, row, padded);
        }
        for (int k = 0; k < nb; ++k) {
            __bang_sum(red_buf, sq_buf, padded);
            stats[k] = red_buf[0] / (float)cols;           // biased variance
        }""")
    assert src != LAYERNORM
    e = _refusal(src, "layernorm")
    assert e.code == "XP4281" and "scratch buffer" in e.why


def test_tail_not_kept_at_zero_changes_the_variance():
    # without re-zeroing the tail after centring, the tail holds -mean: the variance's tail lanes
    # are kept (no identity), and the row is still exact
    src = LAYERNORM.replace("""            for (int c = cols; c < padded; ++c)
                row[c] = 0.0f;                             // ... but keep the tail at 0
""", "")
    assert src != LAYERNORM
    text = print_program(unstage_rows.apply(_prog(src, "layernorm"), entry="layernorm"))
    body = text[text.index("void layernorm"):text.index("layernorm_host")]
    assert "for (int xpd_i15 = 0; xpd_i15 < padded; ++xpd_i15) {\n            xpd_acc14 += (float)(xpd_i15 < cols ? " in body
    assert ": (float)((float)((float)0 - xpd_s10) * (float)((float)0 - xpd_s10)));" in body


def test_block_tail_copied_out_is_refused():
    src = LAYERNORM.replace("""        __memcpy(y + (long)r0 * cols, x_buf, cols * sizeof(float), NRAM2GDRAM,
                 cols * sizeof(float), padded * sizeof(float), nb - 1);""",
                            """        __memcpy(y + (long)r0 * cols, x_buf, padded * sizeof(float), NRAM2GDRAM,
                 cols * sizeof(float), padded * sizeof(float), nb - 1);""")
    assert src != LAYERNORM
    e = _refusal(src, "layernorm")
    assert e.code == "XP4283"


def test_no_nram_does_not_apply():
    src = """#include <bang.h>
extern "C" __mlu_global__ void cp(const float *x, float *y, int n)
{
    for (int i = taskId; i < n; i += taskDim)
        y[i] = x[i];
}
"""
    e = _refusal(src, "cp")
    assert e.code == "XP4002"


# layernorm -> cuda (190 s on a loaded host) and rmsnorm -> cuda: pytest -m long; layernorm.mlu -> cuda
# stays in the default run through test_reduce_shuffle's one-block-per-task test, rmsnorm.mlu through -> hip
@pytest.mark.parametrize("name,target", [("softmax", "cuda"), ("softmax", "hip"),
                                         pytest.param("layernorm", "cuda", marks=pytest.mark.long),
                                         pytest.param("rmsnorm", "cuda", marks=pytest.mark.long), ("rmsnorm", "hip")])
def test_row_kernels_bind_one_block_per_row(tmp_path, name, target):
    from xpiler.migration.driver import migrate
    r = migrate(ROOT / f"examples/{name}/{name}.mlu", target, outdir=tmp_path / "out", jobs=1, perf=False)
    assert r.verified, [str(d) for d in r.diagnostics]
    names = [s.pass_name for s in r.steps]
    assert "unstage_rows" in names
    code = r.output_path.read_text()
    kernel = code.split("__global__")[1].split("_host")[0]
    # the source's comments stay (rmsnorm.mlu's "block b goes to task b % taskDim")
    kernel = "\n".join(line for line in kernel.splitlines() if not line.strip().startswith("//"))
    # one block per row (a grid-stride row loop over blocks), not a 4-iteration task loop
    assert "= blockIdx.x; " in kernel and " < rows; " in kernel and "+= gridDim.x)" in kernel
    assert "task" not in kernel and "xp_priv" not in code
    assert "__shfl_xor" in kernel


ROW_RANGES = """#include <bang.h>
extern "C" __mlu_global__ void rowsum(const float *x, float *y, int rows, int cols)
{
    int per = (rows + taskDim - 1) / taskDim;
    int r_begin = taskId * per;
    int r_end = r_begin + per < rows ? r_begin + per : rows;
    PRAGMA
    for (long r = r_begin; r < r_end; ++r) {
        float acc = 0.0f;
        for (int c = 0; c < cols; ++c)
            acc += x[(long)r * cols + c];
        y[r] = acc;
    }
}
"""


@pytest.mark.parametrize("pragma", [True, False])
def test_task_slices_take_a_marked_row_loop_only(pragma):
    """The task slices collapse contiguous per-task row ranges whose body indexes r * cols + c only
    for a loop that row un-staging marked; any other such loop is refused as before."""
    from xpiler.passes import loop_recovery
    from xpiler.passes.base import AlternativeRefused
    from xpiler.passes.task_slices import ROWS_PRAGMA
    src = ROW_RANGES.replace("PRAGMA", f"#pragma {ROWS_PRAGMA}" if pragma else "")
    prog = parse_text(src, "bang", "rowsum.mlu")
    launch = {"dim": [4, 1, 1], "func_type": "block"}
    if not pragma:
        with pytest.raises(AlternativeRefused) as e:
            loop_recovery.apply(prog, entry="rowsum", launch=launch, normalize="task_slices")
        assert "does not advance by one" in e.value.why
        return
    new = loop_recovery.apply(prog, entry="rowsum", launch=launch, normalize="task_slices")
    new = new[0] if isinstance(new, tuple) else new
    text = print_program(new)
    assert "for (long i = 0; i < rows; ++i) {" in text and "task" not in text.split("void rowsum")[1]
    assert "x[i * cols + c]" in text and "y[i] = acc;" in text
