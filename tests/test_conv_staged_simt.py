"""Convolutions to cuda / hip from every source layout stage their reused operand on chip
(docs/passes/cache.md, "Convolutions"): NHWC through the row split (output pixels are the rows,
output channels the columns), flat one-thread-per-output loops through flat rows, depthwise
through the per-row form (the channel's filter slice in shared memory / LDS). Pass tests on the
bound c kernels, then migrations that must print ``__shared__`` and verify (emu:simt-cpu, ASan)."""
import pytest

from xpiler.api import migrate
from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding, cache
from xpiler.passes.base import PassError
from xpiler.passes.patterns import common as U
from xpiler.passes.patterns import simt_tile as ST
from xpiler.printers import printer_for

from conftest import EXAMPLES
from _simt_tile_util import bound, verify

MFMA = "__builtin_amdgcn_mfma_f32_16x16x4f32"


def _shared(q, entry):
    return {n.name for n in walk(q.func(entry)) if isinstance(n, N.Decl) and n.scope == "shared"}


def _verify(q, src, dialect, launch, entry):
    from xpiler.migration.driver import _launch_to_spec
    from xpiler.spec import load_spec
    launch = _launch_to_spec(launch, load_spec(str(src) + ".toml"), [p.name for p in q.func(entry).params])
    return verify(q, src, dialect, launch)


def test_nhwc_rows_are_output_pixels():
    _, entry, p = bound("conv2d_nhwc", "cuda")
    with pytest.raises(ST.NotMatmul):              # the plain i / j split does not fit NHWC
        ST.analyse(p, U.kernel_func(p, entry))
    ct = ST.analyse(p, U.kernel_func(p, entry), wider=True)
    pr = printer_for("cuda").expr
    assert (ct.A, ct.B, ct.C) == ("input", "weight", "output") and not ct.per_row
    assert pr(ct.M) == "Ho * Wo" and pr(ct.N_) == "Cout" and pr(ct.K) == "KH * KW * Cin" and pr(ct.batch) == "N"


def test_depthwise_is_the_per_row_form():
    _, entry, p = bound("depthwise_conv2d", "cuda")
    ct = ST.analyse(p, U.kernel_func(p, entry), wider=True)
    pr = printer_for("cuda").expr
    assert ct.per_row and (ct.A, ct.B) == ("weight", "input")
    assert pr(ct.M) == "C" and pr(ct.N_) == "Ho * Wo" and pr(ct.K) == "KH * KW"


@pytest.mark.parametrize("op,dialect,tile", [("conv2d_nhwc", "cuda", 16), ("depthwise_conv2d", "cuda", 16),
                                             ("depthwise_conv2d", "hip", 8)])
def test_conv_stages_on_chip_and_verifies(op, dialect, tile):
    src, entry, p = bound(op, dialect)
    q, launch = cache.apply(p, entry=entry, target=dialect, tile=tile)
    # depthwise (cuda and hip): the filter and the k offsets of the split input index
    # (rowvec_split_body)
    want = {"xp_Ws", "xp_Kt"} if op.startswith("depthwise") else {"xp_As", "xp_Bs"}
    assert _shared(q, entry) == want
    assert any(isinstance(n, N.Barrier) for n in walk(q.func(entry)))
    v = _verify(q, src, dialect, launch, entry)
    assert v.verified and "emu:simt-cpu" in v.substrate, v.failures[:1]


def test_per_row_form_refuses_what_it_does_not_have():
    _, entry, p = bound("depthwise_conv2d", "cuda")
    for params in ({"double": True}, {"tile": 64, "thread_tile": 4, "bk": 8}):
        with pytest.raises(PassError) as e:
            cache.check(p, entry=entry, target="cuda", **params)
        assert e.value.code == "XP4001" and "per-row" in e.value.why
    # a tile of 64 x 64 threads is more than a block may have: refused, not shrunk silently
    with pytest.raises(PassError):
        cache.check(p, entry=entry, target="cuda", tile=64)


CLOBBER = """
void dw(const float *x, const float *w, float *y, int P, int Q, int K) {
    for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k)
                acc += w[p * K + k] * x[(p * Q + q) * K + k];
            y[p] = acc;
        }
}
"""


def test_per_row_form_needs_every_column_in_the_result_index():
    # y[p] is written by every q (the last one wins sequentially): parallel columns would race
    q, _ = binding.apply(parse_text(CLOBBER, "c", "dw.c"), entry="dw", target="cuda")
    with pytest.raises(PassError) as e:
        cache.check(q, entry="dw", target="cuda")
    assert "every row and column loop" in e.value.why


def test_columns_must_be_parallel_in_the_source():
    # q appears in the result index but every q writes y[p] again (output dependence): the column
    # loop is not parallel, so it is not spread over threads
    q, _ = binding.apply(parse_text(CLOBBER.replace("y[p] = acc", "y[p + q * 0] = acc"), "c", "dw.c"),
                         entry="dw", target="cuda")
    with pytest.raises(PassError) as e:
        cache.check(q, entry="dw", target="cuda")
    assert e.value.code == "XP4001" and "not parallel in the source" in e.value.why


@pytest.mark.parametrize("src,dst,mfma", [
    ("conv2d_nhwc/conv2d_nhwc.c", "cuda", False), ("conv2d_nhwc/conv2d_nhwc.cu", "hip", True),
    ("depthwise_conv2d/depthwise_conv2d.hip", "cuda", False),
    # the same plans from the other sources (40 s each): pytest -m long
    pytest.param("conv2d_nhwc/conv2d_nhwc.c", "hip", True, marks=pytest.mark.long),
    pytest.param("conv2d_nhwc/conv2d_nhwc.hip", "cuda", False, marks=pytest.mark.long),
    pytest.param("depthwise_conv2d/depthwise_conv2d.c", "cuda", False, marks=pytest.mark.long)])
def test_conv_migration_stages_in_shared_memory_and_verifies(src, dst, mfma, tmp_path):
    r = migrate(EXAMPLES / src, to=dst, outdir=tmp_path / "o", perf=False)
    assert r.verified and "emu:simt-cpu" in r.verdict.substrate   # a GPU host adds "hw:nvidia-… + "
    assert "__shared__" in r.code and "__syncthreads()" in r.code
    assert (MFMA in r.code) == mfma
