"""unblock: a recovered BANG blocked matmul (gemm.mlu, bmm.mlu) back to the plain contraction,
and refusals on altered copies of it."""
import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.passes import binding, detensorize, loop_recovery, unblock
from xpiler.passes.base import PassError
from xpiler.passes.patterns import common as U
from xpiler.passes.patterns import simt_tile as ST
from xpiler.printers import print_program
from xpiler.spec import load_spec

from conftest import EXAMPLES


def _recovered(op):
    src = EXAMPLES / op / f"{op}.mlu"
    sp = load_spec(str(src) + ".toml")
    p = detensorize.apply(parse_file(src), entry=sp.entry, target="hip")
    p = p[0] if isinstance(p, tuple) else p
    p, _ = loop_recovery.apply(p, entry=sp.entry, launch={"dim": sp.launch.get("dim"),
                                                          "func_type": sp.launch.get("func_type")})
    return p, sp.entry


def _text(op):
    p, entry = _recovered(op)
    return print_program(p, "c"), entry


def test_gemm_mlu_becomes_the_plain_contraction():
    p, entry = _recovered("gemm")
    q = unblock.apply(p, entry=entry)
    out = print_program(q, "c")
    out = out[out.index("void gemm"):]
    assert "task" not in out and "a_tile" not in out and "k0" not in out
    assert "for (int i = 0; i < M; ++i)" in out and "for (int k = 0; k < K; ++k)" in out
    q, _ = binding.apply(q, entry=entry, target="hip")
    ct = ST.analyse(q, U.kernel_func(q, entry))
    assert (ct.A, ct.B, ct.C) == ("A", "B", "C") and ct.batch is None


def test_bmm_mlu_flattens_batch_and_rows():
    p, entry = _recovered("bmm")
    out = print_program(unblock.apply(p, entry=entry), "c")
    assert "for (int t = 0; t < batch * M; ++t)" in out and "int b = t / M;" in out and "int i = t % M;" in out
    q, _ = binding.apply(unblock.apply(p, entry=entry), entry=entry, target="hip")
    ct = ST.analyse(q, U.kernel_func(q, entry))
    assert ct.batch is not None and (ct.A, ct.B, ct.C) == ("A", "B", "C")


@pytest.mark.parametrize("old,new,why", [
    ("(A + m0 * K + k0)[", "(A + m0 * K + k0 * 2)[", "beyond i, j, k"),
    ("if (k0 == 0)", "if (k0 == 256)", "first slice"),
    ("(b_tile + nb)[", "(b_tile + (nb - 1))[", "overwrite"),
    ("task < 4;", "task < 3;", "not computed by any task"),
    ("M < r_begin + rows_per_task ? M : r_begin + rows_per_task",
     "M < r_begin + 2 * rows_per_task ? M : r_begin + 2 * rows_per_task", "same row"),
    ("const int kb = BK < K - k0 ? BK : K - k0;", "const int kb = BK;", "extent"),
    ("+ (float)c_part[", "+ (float)c_acc[", "slice sum"),
], ids=["a-copy-shifted", "first-slice-wrong", "pad-over-data", "rows-not-covered", "rows-twice", "k-tail-dropped",
        "slice-sum-wrong"])
def test_refusals(old, new, why, op="gemm"):
    text, entry = _text(op)
    assert old in text, old
    with pytest.raises(PassError) as e:
        unblock.apply(parse_text(text.replace(old, new), "c", "g.c"), entry=entry)
    assert e.value.code == "XP4001" and why in e.value.why


def test_reparsed_text_is_accepted():
    text, entry = _text("gemm")
    unblock.apply(parse_text(text, "c", "g.c"), entry=entry)


def test_no_blocked_matmul_is_nothing_to_do():
    p = parse_text("void f(float *x, int n) { for (int i = 0; i < n; ++i) x[i] = 0.0f; }", "c", "f.c")
    with pytest.raises(PassError) as e:
        unblock.apply(p, entry="f")
    assert e.value.code == "XP4002"


# gemv.mlu: the __bang_mlp form (a WRAM block of rows times an x slice, N = 1) is the blocked
# matmul with one column; unblock proves it through unit column loops and drops them again
def test_gemv_mlu_becomes_the_plain_row_loop():
    p, entry = _recovered("gemv")
    out = print_program(unblock.apply(p, entry=entry), "c")
    out = out[out.index("void gemv"):]
    assert "task" not in out and "w_tile" not in out and "y_acc" not in out and "xpb_" not in out
    body = [ln.strip() for ln in out.splitlines()[1:] if ln.strip() not in ("", "}")]
    assert body[0] == "for (int i = 0; i < M; ++i) {" and body[2] == "for (int k = 0; k < K; ++k) {"
    assert "+= (float)x[k] * (float)A[i * K + k];" in body[3] and body[4].startswith("y[i] = ")
    # and the row-block binding the default cuda / hip plans take applies to it
    from xpiler.migration.pipeline import ROWS
    q, launch = binding.apply(unblock.apply(p, entry=entry), entry=entry, target="hip", **ROWS)
    assert launch == {"grid": ["M", 1, 1], "block": [ROWS["block"], 1, 1]}


@pytest.mark.parametrize("old,new,why", [
    ("if (k0 == 0)", "if (k0 == 2048)", "first slice"),
    ("const int kb = BK < K - k0 ? BK : K - k0;", "const int kb = BK;", "extent"),
    ("const int mb = BM < r_end - m0 ? BM : r_end - m0;", "const int mb = BM;", "row extent"),
    ("task < 4;", "task < 3;", "not computed by any task"),
    ("y_part[xpd_n9] = xpd_acc11;", "y_part[xpd_n9] = xpd_acc11 + 1.0f;", "slice product"),
    ("(float)y_acc[xpd_i12] + (float)y_part[xpd_i12]", "(float)y_acc[xpd_i12] + (float)y_acc[xpd_i12]",
     "slice sum"),
], ids=["first-slice-wrong", "k-tail-dropped", "row-tail-dropped", "rows-not-covered", "slice-product-changed",
        "slice-sum-wrong"])
def test_gemv_refusals(old, new, why):
    test_refusals(old, new, why, "gemv")


def test_gemv_a_write_of_the_accumulator_inside_the_row_block_is_refused():
    # the zero fills before the row block loop are overwritten; a write inside it (here hidden in
    # the initialiser of a let of the k-slice loop) is not one of the slice statements
    text, entry = _text("gemv")
    old = "const int kb = BK < K - k0 ? BK : K - k0;"
    assert old in text
    bad = text.replace(old, old + " float xpw = (y_acc[1] = 1.0f);")
    with pytest.raises(PassError) as e:
        unblock.apply(parse_text(bad, "c", "g.c"), entry=entry)
    assert e.value.code == "XP4001" and "'y_acc' is also written outside" in e.value.why, e.value.why


def test_gemv_reparsed_text_is_accepted():
    text, entry = _text("gemv")
    unblock.apply(parse_text(text, "c", "g.c"), entry=entry)
