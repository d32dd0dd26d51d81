"""unthread, chained one-warp-per-row reductions (passes/unthread_warp_chain.py with form 5):
softmax_shfl.cu (max, then the sum of exp(x - max), then the write) and layernorm.hip (mean, then
the variance, then the write) become one row loop with three plain loops, and verify; a second
reduction that reads the first one's partial before its exchange, and an exchange that misses
lanes, are refused."""
import pytest

from xpiler.passes import unthread
from xpiler.passes.base import PassError

from conftest import EXAMPLES
from test_unthread_warp_rows import _body, _recovered, _refused, _verify_c

SOFTMAX_SHFL = EXAMPLES / "softmax" / "softmax_shfl.cu"
LAYERNORM_HIP = EXAMPLES / "layernorm" / "layernorm.hip"


def test_softmax_shfl_becomes_one_row_loop_and_verifies(tmp_path):
    p, sp = _recovered(SOFTMAX_SHFL)
    q = unthread.apply(p, entry="softmax")
    body = _body(q, "softmax")
    for gone in ("xpd_xch", "xpd_sh", "done", "+= WARP", "tx_w", "m[", "s["):
        assert gone not in body, gone
    assert "for (int row = 0; row < rows; ++row)" in body
    assert "m_acc = fmaxf(m_acc, xr_r[c]);" in body and "float m_rowv = m_acc;" in body
    assert "s_acc += expf(xr_r[c_1] - m_rowv);" in body
    assert "yr[c_2] = expf(xr_r[c_2] - m_rowv) * inv;" in body
    v = _verify_c(tmp_path, q, SOFTMAX_SHFL, sp)   # c natively against the SIMT source (emu:simt-cpu)
    assert v.verified, v.failures[:1]


def test_layernorm_hip_mean_is_one_value_per_row_and_verifies(tmp_path):
    p, sp = _recovered(LAYERNORM_HIP)
    q = unthread.apply(p, entry="layernorm")
    body = _body(q, "layernorm")
    for gone in ("xpd_xch", "wave_allsum_result", "done", "mean[", "+= 64"):
        assert gone not in body, gone
    assert "float mean_rowv = s_rowv / (float)cols;" in body and "float d = xr_r[c_1] - mean_rowv;" in body
    assert "sqrtf(sq_rowv / (float)cols + eps)" in body
    v = _verify_c(tmp_path, q, LAYERNORM_HIP, sp)
    assert v.verified, v.failures[:1]


_RACE = """    float s = 0.0f;
    for (int c = lane; c < cols; c += WARP)
        s += expf(xr[c] - m);
    for (int off = WARP / 2; off > 0; off /= 2)
        m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, off));
"""


@pytest.mark.parametrize("edits,why", [
    # the sum's partial reads the lane's own max before the max's exchange: no fold there
    ([("""    for (int off = WARP / 2; off > 0; off /= 2)
        m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, off));

    float s = 0.0f;
    for (int c = lane; c < cols; c += WARP)
        s += expf(xr[c] - m);
""", _RACE)], "before the strided loop is neither a declaration"),
    # the max's butterfly starts at 8: each lane holds 16 of its warp's 32 partials, read by the sum
    ([("for (int off = WARP / 2; off > 0; off /= 2)\n        m = fmaxf",
       "for (int off = WARP / 4; off > 0; off /= 2)\n        m = fmaxf")],
     "which is not the fold of warp 0's 32 partials (16 of its 32 partials missing"),
    # the sum's butterfly misses the last step (lane ^ 1): the write reads half folds
    ([("for (int off = WARP / 2; off > 0; off /= 2)\n        s +=", "for (int off = WARP / 2; off > 1; off /= 2)\n        s +=")],
     "which is not the fold of warp 0's 32 partials"),
])
def test_chained_refusals(tmp_path, edits, why):
    _refused(tmp_path, SOFTMAX_SHFL, "softmax", edits, why)


def test_layernorm_hip_variance_reading_a_lane_value_is_refused(tmp_path):
    # the variance's partial reads the lane's own sum 's', not the row's mean: 's' is the first
    # reduction's partial, written again by nothing, but read where it holds one lane's part
    edits = [("float d = xr[c] - mean;", "float d = xr[c] - s;")]
    with pytest.raises(PassError) as e:
        _refused_any(tmp_path, edits)
    assert e.value.code == "XP4001" and "which is not the fold of warp 0's 64 partials (63 of its 64 partials " \
        "missing" in e.value.why, e.value.why


def _refused_any(tmp_path, edits):
    from test_unthread_warp_rows import _variant
    src = _variant(tmp_path, LAYERNORM_HIP, edits)
    p, _ = _recovered(src)
    unthread.apply(p, entry="layernorm")


def test_a_chain_whose_rows_conflict_stays_unfused(tmp_path):
    # the max of every row also reads row 0 of y, which the write phase of row 0 stores: running each
    # row's phases together would let row 1 read the new y (Z3 finds the anti dependence), so the
    # phases stay separate row loops over the block's warps (not run: y is an output the tester fills
    # with NaN, so this kernel's result is NaN either way)
    from test_unthread_warp_rows import _variant
    src = _variant(tmp_path, SOFTMAX_SHFL, [("m = fmaxf(m, xr[c]);", "m = fmaxf(m, xr[c] + y[c]);")])
    p, sp = _recovered(src)
    q = unthread.apply(p, entry="softmax")
    body = _body(q, "softmax")
    assert "for (int row = 0; row < rows; ++row)" not in body and "if (!done[tx_w2 * 32])" in body
    assert "xpd_xch" not in body and "m_acc = fmaxf(m_acc, xr_r[c] + y[c]);" in body
    assert "for (int c_2 = 0; c_2 < cols; ++c_2)" in body       # the write nest is still one loop per row


# the max goes down a __shfl_down tree (lane 0 holds it) and is broadcast through shared memory
_MAX_XOR = """    for (int off = WARP / 2; off > 0; off /= 2)
        m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, off));
"""
_MAX_SHARED = """    for (int off = WARP / 2; off > 0; off /= 2)
        m = fmaxf(m, __shfl_down_sync(FULL_MASK, m, off));
    if (lane == 0)
        wmax[threadIdx.x / WARP] = m;
    __syncwarp();
    m = wmax[threadIdx.x / WARP];
"""
_SHARED_DECL = [("    int lane = threadIdx.x % WARP;", "    __shared__ float wmax[4];\n    int lane = threadIdx.x % WARP;")]


def test_a_fold_broadcast_through_shared_memory_after_the_barrier_verifies(tmp_path):
    from test_unthread_warp_rows import _variant
    src = _variant(tmp_path, SOFTMAX_SHFL, _SHARED_DECL + [(_MAX_XOR, _MAX_SHARED)])
    p, sp = _recovered(src)
    q = unthread.apply(p, entry="softmax")
    body = _body(q, "softmax")
    assert "wmax" not in body and "for (int row = 0; row < rows; ++row)" in body
    assert "s_acc += expf(xr_r[c_1] - m_rowv);" in body
    v = _verify_c(tmp_path, q, src, sp)
    assert v.verified, v.failures[:1]


@pytest.mark.parametrize("edits,why", [
    # no barrier between lane 0's store and the other lanes' read (a race on the GPU): the read and
    # the sum's partial are in one thread nest with the store, which is no form-5 prefix
    ([(_MAX_XOR, _MAX_SHARED.replace("    __syncwarp();\n", ""))],
     "before the strided loop is neither a declaration"),
    # every warp reads the next warp's slot
    ([(_MAX_XOR, _MAX_SHARED.replace("m = wmax[threadIdx.x / WARP];", "m = wmax[(threadIdx.x / WARP + 1) % 4];"))],
     "which is not the fold of warp 0's 32 partials (32 of its 32 partials missing (partial 0 among them), "
     "partial 32 of another warp)"),
])
def test_shared_memory_broadcast_refusals(tmp_path, edits, why):
    _refused(tmp_path, SOFTMAX_SHFL, "softmax", _SHARED_DECL + edits, why)


def test_softmax_wave64_broadcast_of_lane_0_becomes_one_row_loop_and_verifies(tmp_path):
    # examples/wild: a __shfl_down tree, then __shfl(v, 0) hands lane 0's value to every lane; the
    # helper's result is copied into 'm' at the top of the next nest (a fold copy)
    src = EXAMPLES / "wild" / "softmax" / "softmax_wave64.hip"
    p, sp = _recovered(src)
    q = unthread.apply(p, entry=sp.entry)
    body = _body(q, sp.entry)
    assert "wave_max_result" not in body and "xpd_" not in body and "done" not in body
    assert "for (int row = 0; row < rows; ++row)" in body and "s_acc += expf(xr_r[c_1] - m_rowv);" in body
    v = _verify_c(tmp_path, q, src, sp)
    assert v.verified, v.failures[:1]
