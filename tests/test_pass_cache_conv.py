"""cache / tensorize on cuda/hip for convolutions: the nested reduction (ci, kh, kw) and column
(ho, wo) loops flatten into one implicit-GEMM contraction, so the reused weight / input tiles go
through shared memory (LDS) and, on hip, MFMA."""
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding, cache, tensorize
from xpiler.passes.base import PassError
from xpiler.passes.patterns import common as U
from xpiler.passes.patterns import simt_tile as ST
from xpiler.printers import printer_for

from _simt_tile_util import bound, verify

MFMA = "__builtin_amdgcn_mfma_f32_16x16x4f32"


def test_conv2d_is_an_implicit_gemm():
    _, entry, p = bound("conv2d_nchw", "hip")
    ct = ST.analyse(p, U.kernel_func(p, entry))
    pr = printer_for("hip").expr
    assert (ct.A, ct.B, ct.C) == ("weight", "input", "output")
    assert pr(ct.M) == "Cout" and pr(ct.N_) == "Ho * Wo" and pr(ct.K) == "Cin * KH * KW" and pr(ct.batch) == "N"


@pytest.mark.parametrize("op,dialect", [("conv1d", "cuda"), ("conv2d_nchw", "hip")])
def test_conv_stages_tiles_and_verifies(op, dialect):
    src, entry, p = bound(op, dialect)
    q, launch = cache.apply(p, entry=entry, target=dialect)
    assert {n.name for n in walk(q.func(entry)) if isinstance(n, N.Decl) and n.scope == "shared"} == {"xp_As", "xp_Bs"}
    # the launch names kernel parameters only (Lo / Ho * Wo are computed inside the kernel)
    assert "Lo" not in launch["grid"][0] and "Ho" not in launch["grid"][0]
    if dialect == "hip":
        q, launch = tensorize.apply(q, entry=entry, target="hip")
        assert MFMA in {n.name for n in walk(q.func(entry)) if isinstance(n, N.Intrinsic)}
    from xpiler.migration.driver import _launch_to_spec
    from xpiler.spec import load_spec
    launch = _launch_to_spec(launch, load_spec(str(src) + ".toml"), [pp.name for pp in q.func(entry).params])
    v = verify(q, src, dialect, launch)
    assert v.verified, v.failures[:1]


TRIANGLE = """
void tri(const float *A, const float *B, float *C, int M, int N, int K) {
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int r = 0; r < K; ++r)
                for (int s = 0; s < r; ++s)
                    acc += A[i * K * K + r * K + s] * B[(r * K + s) * N + j];
            C[i * N + j] = acc;
        }
    }
}
"""


def test_reduction_nest_that_is_not_rectangular_is_not_flattened():
    p = parse_text(TRIANGLE, "c", "tri.c")
    q, _ = binding.apply(p, entry="tri", target="cuda")
    with pytest.raises(PassError) as e:
        cache.check(q, entry="tri", target="cuda")
    assert "trip count" in e.value.why
