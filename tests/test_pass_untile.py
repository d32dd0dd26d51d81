"""untile: a recovered shared-memory tiled matmul back to the plain contraction, and refusals."""
import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.passes import binding, loop_recovery, untile
from xpiler.passes.base import PassError
from xpiler.passes.patterns import common as U
from xpiler.passes.patterns import simt_tile as ST
from xpiler.printers import printer_for, print_program
from xpiler.spec import load_spec

from conftest import EXAMPLES

# what loop recovery makes of examples/gemm/gemm.cu (16x16 tiles, zero padding)
TILED = """
void gemm(const float *A, const float *B, float *C, int M, int N, int K) {
    for (int by = 0; by < (M + 16 - 1) / 16; ++by) {
        for (int bx = 0; bx < (N + 16 - 1) / 16; ++bx) {
            float As[16][16];
            float Bs[16][16];
            float acc[256];
            for (int ty = 0; ty < 16; ++ty)
                for (int tx = 0; tx < 16; ++tx)
                    acc[ty * 16 + tx] = 0.0f;
            for (int k0 = 0; k0 < K; k0 += 16) {
                for (int ty = 0; ty < STAGE_ROWS; ++ty) {
                    for (int tx = 0; tx < 16; ++tx) {
                        const int row = by * 16 + ty;
                        const int col = bx * 16 + tx;
                        As[ty][tx] = (row < M && k0 + tx < K) ? A_COPY : 0.0f;
                        Bs[ty][tx] = (B_GUARD) ? B[(k0 + ty) * N + col] : 0.0f;
                    }
                }
                for (int ty = 0; ty < 16; ++ty)
                    for (int tx = 0; tx < 16; ++tx)
                        for (int kk = 0; kk < 16; ++kk)
                            acc[ty * 16 + tx] += As[ty][KK] * Bs[KK][tx];
            }
            for (int ty = 0; ty < 16; ++ty) {
                for (int tx = 0; tx < 16; ++tx) {
                    const int row = by * 16 + ty;
                    const int col = bx * 16 + tx;
                    if (row < M && col < N)
                        C[row * N + col] = acc[ty * 16 + tx];
                }
            }
        }
    }
}
"""
OK = {"STAGE_ROWS": "16", "A_COPY": "A[row * K + k0 + tx]", "B_GUARD": "k0 + ty < K && col < N", "KK": "kk"}


def _prog(**change):
    text = TILED
    for k, v in {**OK, **change}.items():
        text = text.replace(k, v)
    return parse_text(text, "c", "tiled.c")


def _plain(p):
    return print_program(untile.apply(p, entry="gemm"), "c")


def test_tiled_gemm_becomes_the_plain_contraction():
    out = _plain(_prog())
    assert "As" not in out and "k0" not in out and "by" not in out
    assert "for (int i = 0; i < M; ++i)" in out and "for (int j = 0; j < N; ++j)" in out
    assert "for (int k = 0; k < K; ++k)" in out and "A[i * K + k]" in out
    q, _ = binding.apply(untile.apply(_prog(), entry="gemm"), entry="gemm", target="hip")
    ct = ST.analyse(q, U.kernel_func(q, "gemm"))
    pr = printer_for("c").expr
    assert (ct.A, ct.B, ct.C) == ("A", "B", "C") and (pr(ct.M), pr(ct.N_), pr(ct.K)) == ("M", "N", "K")


def test_recovered_bmm_cu_flattens_batch_and_rows():
    src = EXAMPLES / "bmm" / "bmm.cu"
    sp = load_spec(str(src) + ".toml")
    p, _ = loop_recovery.apply(parse_file(src), entry=sp.entry,
                               launch={"grid": ["(N + 15) / 16", "(M + 15) / 16", "batch"], "block": [16, 16, 1]})
    q = untile.apply(p, entry=sp.entry)
    out = print_program(q, "c")
    assert "for (int t = 0; t < batch * M; ++t)" in out and "int b = t / M;" in out
    q, _ = binding.apply(q, entry=sp.entry, target="hip")
    ct = ST.analyse(q, U.kernel_func(q, sp.entry))
    assert ct.batch is not None and (ct.A, ct.B, ct.C) == ("A", "B", "C")


@pytest.mark.parametrize("change,why", [
    ({"A_COPY": "2.0f * A[row * K + k0 + tx]"}, "not a plain"),
    ({"KK": "15 - kk"}, "order of the sum"),
    ({"STAGE_ROWS": "8"}, "every element"),
    ({"B_GUARD": "col < N"}, "past K"),
], ids=["staged-value-not-a-copy", "k-order-changed", "tile-partly-staged", "b-not-padded-past-k"])
def test_refusals(change, why):
    with pytest.raises(PassError) as e:
        untile.apply(_prog(**change), entry="gemm")
    assert e.value.code == "XP4001" and why in e.value.why and "k0" in e.value.why


def test_copy_guard_only_needs_to_hold_where_outputs_are_stored():
    # B staged without 'col < N': for stored outputs (col < N) the copy is the same element
    assert "B[k * N + j]" in _plain(_prog(B_GUARD="k0 + ty < K")).replace("j + k * N", "k * N + j")


def test_tile_array_read_across_tiles_is_refused():
    # As is staged after it is read: the compute nest reads the previous tile's values
    text = TILED
    for k, v in OK.items():
        text = text.replace(k, v)
    a = text.index("                for (int ty = 0; ty < 16; ++ty) {\n                    for (int tx = 0; tx < 16; ++tx) {\n                        const int row")
    b = text.index("                for (int ty = 0; ty < 16; ++ty)\n                    for (int tx = 0; tx < 16; ++tx)\n                        for (int kk")
    c = text.index("            }\n            for (int ty = 0; ty < 16; ++ty) {\n                for (int tx")
    swapped = text[:a] + text[b:c] + text[a:b] + text[c:]
    with pytest.raises(PassError) as e:
        untile.apply(parse_text(swapped, "c", "x.c"), entry="gemm")
    assert e.value.code == "XP4001"


def test_accumulator_shared_between_threads_is_refused():
    p = parse_text(TILED.replace("acc[ty * 16 + tx]", "acc[tx]").replace(
        *list(OK.items())[0]).replace(*list(OK.items())[1]).replace(*list(OK.items())[2]).replace(
        *list(OK.items())[3]), "c", "x.c")
    with pytest.raises(PassError) as e:
        untile.apply(p, entry="gemm")
    assert e.value.code == "XP4001" and "shared between threads" in e.value.why


def test_no_tile_loop_is_nothing_to_do():
    p = parse_file(EXAMPLES / "gemm" / "gemm.c")
    with pytest.raises(PassError) as e:
        untile.apply(p, entry="gemm")
    assert e.value.code == "XP4002"
