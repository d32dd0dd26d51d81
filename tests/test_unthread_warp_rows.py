"""unthread, form 5 (passes/unthread_warp_rows.py): one warp per row. The recovered (ty, lane)
nests (or a 1-D thread loop split into them) with a per-lane partial and a warp-shuffle exchange
become one sequential reduction per row; the exchange is run on abstract values for every set of
warps that leave early, and each read of the partials afterwards must be its row's fold."""
import re

import pytest

from xpiler.frontend import parse_file
from xpiler.passes import detensorize, loop_recovery, unthread
from xpiler.passes.base import PassError
from xpiler.printers import print_program
from xpiler.spec import load_spec, spec_to_toml
from xpiler.verify.tester import compare_kernels

from conftest import EXAMPLES

GEMV_CU = EXAMPLES / "gemv" / "gemv.cu"
GEMV_HIP = EXAMPLES / "gemv" / "gemv.hip"
RMSNORM_CU = EXAMPLES / "rmsnorm" / "rmsnorm.cu"


def _recovered(src):
    sp = load_spec(str(src) + ".toml")
    p = parse_file(src)
    try:
        p = detensorize.apply(p, entry=sp.entry, target="c")
        p = p[0] if isinstance(p, tuple) else p
    except PassError as e:
        if e.code != "XP4002":
            raise
    p, _ = loop_recovery.apply(p, entry=sp.entry, launch=sp.launch)
    return p, sp


def _variant(tmp_path, src, edits):
    text = src.read_text()
    for a, b in edits:
        assert a in text, a
        text = text.replace(a, b)
    out = tmp_path / src.name
    out.write_text(text)
    (tmp_path / (src.name + ".toml")).write_text((src.parent / (src.name + ".toml")).read_text())
    (tmp_path / "ref.py").write_text((src.parent / "ref.py").read_text())
    return out


def _verify_c(tmp_path, prog, src, sp):
    cand = tmp_path / "cand.c"
    # the recovered block loop's bound 'cdiv(M, 4)' (a spec expression) written as C, as the driver does
    cand.write_text(re.sub(r"cdiv\((\w+), (\d+)\)", r"((\1 + \2 - 1) / \2)", print_program(prog, "c")))
    cs = sp.with_dialect("c", sp.entry, {})
    cs.path = tmp_path / "cand.c.toml"
    cs.path.write_text(spec_to_toml(cs))
    return compare_kernels(cand, cs, against=(src, sp), use_reference=False, seeds=(0,))


def _body(q, entry):
    out = print_program(q, "c")
    return out[out.index(f"void {entry}("):]


@pytest.mark.parametrize("src,W", [(GEMV_CU, 32), (GEMV_HIP, 64)])
def test_gemv_warp_rows_become_one_dot_product_per_row_and_verify(tmp_path, src, W):
    p, sp = _recovered(src)
    q = unthread.apply(p, entry="gemv")
    body = _body(q, "gemv")
    for gone in ("xpd_xch", "xpd_sh", "offset", "+= WARP", f"+= {W}"):
        assert gone not in body, gone
    assert "float sum_acc = 0.0f;" in body and "for (int k = 0; k < K; ++k)" in body
    assert "sum_acc += a[k] * x[k];" in body
    # the tail 'if (lane == 0) y[row] = ...' is lane 0's phase (passes/unthread_warp_chain.py): it runs
    # once per row, fused with the dot product; the flags go, and the block and warp loops become
    # one loop over the rows (the early exit 'row >= M' is its bound)
    assert "for (int row = 0; row < M; ++row)" in body and "y[row] = sum_rowv;" in body
    for gone in ("done", "lane", "for (int ty", "for (int bx", "sum_row["):
        assert gone not in body, gone
    v = _verify_c(tmp_path, q, src, sp)          # c natively against the SIMT source (emu:simt-cpu)
    assert v.verified, v.failures[:1]


@pytest.mark.parametrize("edits,kept", [
    # lane 0 writes its own element next to the row's: 'y[row + lane]' with lane = 0 after the phase
    ([("if (lane == 0)\n        y[row] = sum;", "if (0 == lane)\n        y[row + lane] = sum;")], "y[row + 0] = sum_rowv;"),
    # a declaration before the lane-0 test (pure, lane-free): computed once per row
    ([("if (lane == 0)\n        y[row] = sum;", "const int dst = row;\n    if (lane == 0)\n        y[dst] = 0.5f * (sum + sum);")],
     "y[dst] = 0.5f * (sum_rowv + sum_rowv);"),
])
def test_gemv_lane_zero_phase_variants_verify(tmp_path, edits, kept):
    src = _variant(tmp_path, GEMV_CU, edits)
    p, sp = _recovered(src)
    q = unthread.apply(p, entry="gemv")
    body = _body(q, "gemv")
    assert "for (int row = 0; row < M; ++row)" in body and kept in body and "done" not in body, body
    v = _verify_c(tmp_path, q, src, sp)
    assert v.verified, v.failures[:1]


def test_gemv_a_tail_not_spelled_lane_zero_stays_per_lane(tmp_path):
    # 'lane < 1' is lane 0 too, but not the spelling the phase takes: the tail stays a (ty, lane) nest
    # with its flags (still proven and correct), and no row loop replaces the block loop
    src = _variant(tmp_path, GEMV_CU, [("if (lane == 0)\n        y[row] = sum;", "if (lane < 1)\n        y[row] = sum;")])
    p, sp = _recovered(src)
    q = unthread.apply(p, entry="gemv")
    body = _body(q, "gemv")
    assert "for (int lane = 0; lane < 32; ++lane)" in body and "done[" in body
    v = _verify_c(tmp_path, q, src, sp)
    assert v.verified, v.failures[:1]


def test_rmsnorm_1d_thread_loop_is_split_into_warps_and_verifies(tmp_path):
    p, sp = _recovered(RMSNORM_CU)
    q = unthread.apply(p, entry="rmsnorm")
    body = _body(q, "rmsnorm")
    assert "xpd_xch" not in body and "sq[" not in body
    # the output nest becomes a row loop too (passes/unthread_warp_chain.py), fused with the sum's, and
    # the block loop with the warp loop: one loop over the rows
    assert "for (int row = 0; row < rows; ++row)" in body and "for (int c = 0; c < cols; ++c)" in body
    assert "done" not in body and "+= WARP" not in body and "for (int c_1 = 0; c_1 < cols; ++c_1)" in body
    # the row loop's pointer gets its own name (the tail declares 'xr' again), then the tail's equal one goes
    assert "const float *xr_r = x + (long)row * cols;" in body and "sq_acc += xr_r[c] * xr_r[c];" in body
    assert "sqrtf(sq_rowv / (float)cols + eps)" in body and "yr[c_1] = xr_r[c_1] * rrms * gamma[c_1];" in body
    v = _verify_c(tmp_path, q, RMSNORM_CU, sp)
    assert v.verified, v.failures[:1]


@pytest.mark.parametrize("edits,why", [
    # lane 1 holds only part of the row after a __shfl_down tree
    ([("if (lane == 0)\n        y[row] = sum;", "if (lane == 1)\n        y[row] = sum;")],
     "read by thread (0, 1) is element 1, which is not the fold of warp 0's 32 partials"),
    # the tree starts at 8: lanes 16..31 are never folded into lane 0
    ([("for (int offset = WARP / 2; offset > 0", "for (int offset = WARP / 4; offset > 0")],
     "which is not the fold of warp 0's 32 partials"),
    # a non-identity initial value: the exchange adds 32 copies of it
    ([("float sum = 0.0f;", "float sum = 1.0f;")], "the initial value must be the identity 0"),
])
def test_refusals_name_the_reason(tmp_path, edits, why):
    _refused(tmp_path, GEMV_CU, "gemv", edits, why)


@pytest.mark.parametrize("edits,why", [
    # an early exit that depends on the lane: warps would leave in part
    ([("if (row >= rows)\n        return;", "if (row >= rows || lane >= cols)\n        return;")],
     "an early exit 'if (g) { done[ty*W + lane] = 1; continue; }' with 'g' free of the lane"),
    # the butterfly starts at 8: each lane folds only 16 of its warp's 32 partials
    ([("for (int off = WARP / 2; off > 0; off /= 2)", "for (int off = WARP / 4; off > 0; off /= 2)")],
     "which is not the fold of warp 0's 32 partials (16 of its 32 partials missing"),
])
def test_rmsnorm_refusals_after_the_split(tmp_path, edits, why):
    _refused(tmp_path, RMSNORM_CU, "rmsnorm", edits, why)


def _refused(tmp_path, src, entry, edits, why):
    src = _variant(tmp_path, src, edits)
    p, _ = _recovered(src)
    with pytest.raises(PassError) as e:
        unthread.apply(p, entry=entry)
    assert e.value.code == "XP4001" and why in e.value.why, e.value.why


def test_gemv_cu_to_c_reaches_avx512_and_to_bang_verifies(tmp_path):
    from xpiler.api import migrate
    r = migrate(GEMV_CU, "c", outdir=tmp_path / "c", perf=False, force=True)
    assert r.verified and any(s.pass_name == "unthread" for s in r.steps)
    assert "_mm512_reduce_add_ps" in r.code and "xpd_xch" not in r.code
    # eight rows at a time (passes/patterns/x86_rows.py): x loaded once per 16 k for 8 accumulators
    assert "row_b += 8" in r.code and "sum_acc_7_acc = _mm512_add_ps(sum_acc_7_acc" in r.code
    b = migrate(GEMV_CU, "bang", outdir=tmp_path / "bang", perf=False, force=True)
    assert b.verified and any(s.pass_name == "unthread" for s in b.steps)
    # one row loop: the cache pass stages rows of A in WRAM for __bang_mlp
    assert "__bang_mlp(" in b.code and "__wram__" in b.code
