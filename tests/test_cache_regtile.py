"""The cache pass's register-blocked matmul form on cuda/hip (``thread_tile``,
passes/patterns/simt_regtile.py): a block computes a BM x BM tile of C, each thread a TM x TM
sub-tile in registers. Verified on the SIMT emulator for each offered shape; refused for
non-float32 contractions and impossible shapes; the cost model rates it by its accumulators in
flight, so the tuner's prior expands it first."""
import pytest

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import cache
from xpiler.passes.base import PassError
from xpiler.passes.patterns import simt_regtile as RT

from _simt_tile_util import bound, verify


@pytest.mark.parametrize("op,dialect,shape", [("gemm", "cuda", (64, 4, 16)), ("bmm", "hip", (128, 8, 8)),
                                              ("gemm", "hip", (64, 8, 8))])
def test_register_tiles_verify(op, dialect, shape):
    BM, TM, BK = shape
    src, entry, p = bound(op, dialect)
    q, launch = cache.apply(p, entry=entry, target=dialect, tile=BM, thread_tile=TM, bk=BK)
    assert launch["block"] == [BM // TM, BM // TM, 1]
    assert launch["grid"][0] == f"(N + {BM - 1}) / {BM}"
    decls = {n.name: n for n in walk(q.func(entry)) if isinstance(n, N.Decl)}
    assert decls["xp_As"].scope == "shared" and decls["xp_As"].type.dims[0].value == BK * (BM + 1)
    assert decls["xp_Bs"].type.dims[0].value == BK * BM
    assert [d.value for d in decls["xp_acc"].type.dims] == [TM, TM]     # the registers
    v = verify(q, src, dialect, launch)
    assert v.verified, v.failures[:1]


def test_a_short_grid_is_caught():
    """Each block owns its tile: a grid too small leaves C unwritten (the test can fail)."""
    src, entry, p = bound("gemm", "cuda")
    q, launch = cache.apply(p, entry=entry, target="cuda", tile=64, thread_tile=4, bk=16)
    assert not verify(q, src, "cuda", dict(launch, grid=[1, 1, 1]), instances=["medium"]).verified


@pytest.mark.parametrize("shape,words", [((64, 5, 16), "not a multiple"), ((256, 4, 8), "threads per block"),
                                         ((128, 16, 8), "too many accumulators")])
def test_impossible_shapes_are_refused(shape, words):
    src, entry, p = bound("gemm", "cuda")
    BM, TM, BK = shape
    with pytest.raises(PassError) as e:
        cache.apply(p, entry=entry, target="cuda", tile=BM, thread_tile=TM, bk=BK)
    assert e.value.code == "XP4001" and words in e.value.why


def test_only_float32():
    src, entry, p = bound("gemm", "cuda")
    ct, *_ = cache.plan_regtile(p, entry, 64, 4, 16)
    ct.dtypes = dict(ct.dtypes, A="float16")
    assert "float32" in RT.check_shape(ct, 64, 4, 16)


def test_cost_model_prefers_register_tiles():
    """The model counts the accumulators a thread keeps in flight (``ilp``): the 64x64 / 4x4 form
    is rated faster than the one-element 16x16 tile at the perf shape, as the H200 measures."""
    from xpiler.schedule.cost import estimate, launch_env
    src, entry, p = bound("gemm", "cuda")
    sizes = {"M": 1024, "N": 1024, "K": 1024}
    one, _ = cache.apply(p, entry=entry, target="cuda", tile=16)
    reg, _ = cache.apply(p, entry=entry, target="cuda", tile=64, thread_tile=4, bk=16)
    e1 = estimate(one, entry, "cuda", sizes, threads=1024 * 1024, env=launch_env((64, 64, 1), (16, 16, 1)))
    e2 = estimate(reg, entry, "cuda", sizes, threads=65536, env=launch_env((16, 16, 1), (16, 16, 1)))
    assert e1.ilp == 1 and e2.ilp == 8
    assert e2.ms < e1.ms
