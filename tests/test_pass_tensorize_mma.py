"""tensorize on cuda/hip: MFMA 16x16x4f32 (hip float32) and WMMA (cuda, half inputs only)."""
import pytest

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import cache, tensorize
from xpiler.passes.base import PassError

from _simt_tile_util import bound, half_gemm, verify

MFMA = "__builtin_amdgcn_mfma_f32_16x16x4f32"


def intrinsics(prog, entry):
    return {n.name for n in walk(prog.func(entry)) if isinstance(n, N.Intrinsic)} | \
        {n.func for n in walk(prog.func(entry)) if isinstance(n, N.Call) and isinstance(n.func, str)}


@pytest.mark.parametrize("op,via_cache", [("gemm", True), ("bmm", False)])
def test_hip_float_matmul_becomes_mfma_and_verifies(op, via_cache):
    src, entry, p = bound(op, "hip")
    if via_cache:
        p, _ = cache.apply(p, entry=entry, target="hip", tile=16)
    assert tensorize.applied_ops(p, entry, target="hip") == [MFMA]
    q, launch = tensorize.apply(p, entry=entry, target="hip")
    assert MFMA in intrinsics(q, entry)
    assert any(isinstance(it, N.Typedef) and it.name == "floatx4" for it in q.items)
    assert launch["block"] == [64, 1, 1] and launch["grid"][:2] == ["(N + 15) / 16", "(M + 15) / 16"]
    v = verify(q, src, "hip", launch)       # includes the odd shape (33 x 17 x 45): zero-padded staging
    assert v.verified, v.failures[:1]


def test_cuda_float32_is_refused_never_rounded_to_half():
    src, entry, p = bound("gemm", "cuda")
    with pytest.raises(PassError) as e:
        tensorize.apply(p, entry=entry, target="cuda")
    assert e.value.code == "XP4001" and "half" in e.value.why and e.value.line == 7


@pytest.mark.parametrize("via_cache", [False, True])
def test_cuda_half_matmul_becomes_wmma_and_verifies(via_cache):
    src, p = half_gemm()
    if via_cache:
        p, _ = cache.apply(p, entry="gemm_wmma", target="cuda")
    q, launch = tensorize.apply(p, entry="gemm_wmma", target="cuda")
    names = intrinsics(q, "gemm_wmma")
    assert any("mma_sync" in str(n) for n in names), names
    assert any(isinstance(n, N.Decl) and isinstance(n.type, N.Fragment) for n in walk(q.func("gemm_wmma")))
    assert launch["block"] == [32, 1, 1]
    v = verify(q, src, "cuda", launch)
    assert v.verified, v.failures[:1]


def test_wrong_mfma_layout_fails_verification():
    # swap the lane's A/B operand roles: the program must then fail (the layout is what matters)
    src, entry, p = bound("gemm", "hip")
    q, launch = tensorize.apply(p, entry=entry, target="hip")
    from xpiler.ir.visit import rewrite

    def swap(n):
        if isinstance(n, N.Intrinsic) and n.name == MFMA:
            return n.with_(args=(n.args[1], n.args[0]) + n.args[2:])
        return n
    bad = q.with_(items=tuple(it.with_(body=rewrite(it.body, swap)) if isinstance(it, N.Func) and it.name == entry
                              else it for it in q.items))
    assert not verify(bad, src, "hip", launch, instances=["base"]).verified


def test_non_matmul_is_nothing_to_do():
    src, entry, p = bound("gemv", "hip")
    with pytest.raises(PassError) as e:
        tensorize.check(p, entry=entry, target="hip")
    assert e.value.code == "XP4002"
