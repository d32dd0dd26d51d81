"""tensorize on c: row dot products taken eight rows at a time (passes/patterns/x86_rows.py), then
vectorized by x86_loops with one __m512 accumulator per row."""
import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import tensorize
from xpiler.passes.patterns import x86_rows
from xpiler.printers import print_program

from test_pass_cache import ROOT, verify

GEMV_C = ROOT / "examples" / "gemv" / "gemv.c"


def _loop(p, entry, var):
    return next(n for n in walk(p.func(entry)) if isinstance(n, N.For) and n.var == var)


def test_gemv_rows_are_jammed_vectorized_and_verify():
    p = parse_file(GEMV_C)
    r = tensorize.apply(p, entry="gemv", target="c")
    out = print_program(r, "c")
    # eight rows per iteration of the OpenMP loop, the last M % 8 rows in a loop as written
    assert "const int i_end = M > 0 ? M / 8 * 8 : 0;" in out
    assert "#pragma omp parallel for\n        for (int i_b = 0; i_b < i_end; i_b += 8)" in out
    assert "for (int i = i_end; i < M; ++i)" in out
    # one accumulator per row in the fused k loop, each folded once
    for i in range(8):
        assert f"acc_{i}_acc = _mm512_add_ps(acc_{i}_acc, _mm512_mul_ps(_mm512_loadu_ps(&a_{i}[k]), " \
               f"_mm512_loadu_ps(&x[k])));" in out
        assert f"acc_{i} += _mm512_reduce_add_ps(acc_{i}_acc);" in out
    assert "y[i_b + 7] = acc_7;" in out
    v = verify(r, GEMV_C, dialect="c", launch={})     # odd M = 33: the remainder loop runs
    assert v.verified, v.failures[:1]


def _c(body, params="const float* A, const float* x, float* y, int M, int K"):
    return parse_text(f"void f({params}) {{\n{body}\n}}", "c", "f.c")


@pytest.mark.parametrize("body,why", [
    # a column of a matrix: the k reads are strided (the loop over j is vectorized instead)
    ("for (int j = 0; j < M; ++j) { float s = 0.0f; for (int k = 0; k < K; ++k) s += A[k * M + j] * x[k]; y[j] = s; }",
     "does not advance by one element per iteration"),
    # each row's own squares: no read shared by the rows
    ("for (int r = 0; r < M; ++r) { float s = 0.0f; for (int k = 0; k < K; ++k) s += A[r * K + k] * A[r * K + k]; y[r] = s; }",
     "no read shared by the rows"),
    # a row stores into the vector the next rows read: the row loop carries a dependence
    ("for (int r = 0; r < M; ++r) { float s = 0.0f; for (int k = 0; k < K; ++k) s += A[r * K + k] * y[k]; y[r] = s; }",
     "carries a dependence"),
    # a second loop after the dot product
    ("for (int r = 0; r < M; ++r) { float s = 0.0f; for (int k = 0; k < K; ++k) s += A[r * K + k] * x[k];"
     " for (int k = 0; k < K; ++k) y[r * K + k] = s; }", "holds 2 loops"),
    # the k bound depends on the row (a triangle)
    ("for (int r = 0; r < M; ++r) { float s = 0.0f; for (int k = 0; k < r; ++k) s += A[r * K + k] * x[k]; y[r] = s; }",
     "depend on the row"),
    # the running sum is read inside the k loop
    ("for (int r = 0; r < M; ++r) { float s = 0.0f; for (int k = 0; k < K; ++k) s += A[r * K + k] * x[k] * s; y[r] = s; }",
     "not sums into the row's accumulators"),
    # a scalar declared outside the row loop is assigned in it
    ("float last = 0.0f; for (int r = 0; r < M; ++r) { float s = 0.0f; for (int k = 0; k < K; ++k)"
     " s += A[r * K + k] * x[k]; last = s; y[r] = s; }", "declared outside it"),
])
def test_refusals_name_the_reason(body, why):
    p = _c(body)
    f = p.func("f")
    loop = next(n for n in f.body.stmts if isinstance(n, N.For))
    with pytest.raises(x86_rows.NoJam) as e:
        x86_rows.jam(p, f, loop)
    assert why in str(e.value), str(e.value)


def test_a_refused_row_loop_is_vectorized_as_before():
    # the strided column form keeps the outer-loop vectorization over j (x86_vec)
    p = _c("for (int j = 0; j < M; ++j) { float s = 0.0f; for (int k = 0; k < K; ++k) s += A[k * M + j] * x[k]; y[j] = s; }")
    out = print_program(tensorize.apply(p, entry="f", target="c"), "c")
    assert "j += 16" in out and "j_b" not in out
