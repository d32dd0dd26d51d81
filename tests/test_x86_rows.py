"""tensorize on c: row dot products taken eight rows at a time (passes/patterns/x86_rows.py), then
vectorized by x86_loops with one __m512 accumulator per row."""
import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import tensorize
from xpiler.passes.patterns import x86_rows
from xpiler.passes.patterns import common as U
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


# ------------------------------------------------------------------ staged copies (x86_staged.py)
from xpiler.passes.patterns import x86_staged

STAGED = """void f(const float* A, const float* x, float* y, int M, int K) {
    float xs[256];
    float ws[64 * 256];
    for (int k0 = 0; k0 < K; k0 += 256) {
        const int kb = 256 < K - k0 ? 256 : K - k0;
        for (int j = 0; j < kb; ++j) xs[j] = (x + k0)[j];
        for (int s = 0; s < M - 1 + 1; ++s)
            for (int j = 0; j < kb; ++j) ws[s * kb + j] = (A + k0)[s * K + j];
        for (int n = 0; n < M; ++n) {
            float acc = 0.0f;
            for (int k = 0; k < kb; ++k) acc += xs[k] * ws[n * kb + k];
            y[n] += acc;
        }
    }
}"""


def _outer(p):
    f = p.func("f")
    return f, next(n for n in walk(f) if isinstance(n, N.For) and n.var == "k0")


def test_staged_copies_are_forwarded_into_their_reads():
    p = parse_text(STAGED, "c", "f.c")
    f, loop = _outer(p)
    new = x86_staged.forward_loop(f, loop)
    out = print_program(p.with_(items=tuple(f.with_(body=U.replace_stmt(f.body, loop, [new])) if it is f else it
                                            for it in p.items)), "c")
    assert "xs[j] =" not in out and "ws[s * kb + j] =" not in out        # both copies gone
    assert "acc += (x + k0)[k] * (A + k0)[n * K + k];" in out, out


@pytest.mark.parametrize("edit,to,stays", [
    # the buffer is read before its copy in the same block (last chunk's values)
    ("const int kb = 256 < K - k0 ? 256 : K - k0;", "const int kb = 256 < K - k0 ? 256 : K - k0; y[0] += xs[0];",
     "xs[j] ="),
    # the source is written in the function: the copy may hold an older value than a later read
    ("y[n] += acc;", "y[n] += acc; ((float*)A)[n] = 0.0f;", "ws[s * kb + j] ="),
    # a read that is not the element the copy put there for the loop's counters (transposed)
    ("acc += xs[k] * ws[n * kb + k];", "acc += xs[k] * ws[k * kb + n];", "ws[s * kb + j] ="),
    # a second write to the buffer
    ("y[n] += acc;", "y[n] += acc; ws[n] = 0.0f;", "ws[s * kb + j] ="),
    # a pointer to the buffer
    ("y[n] += acc;", "y[n] += acc + *(xs + 1);", "xs[j] ="),
    # a variable of the copied value assigned after the copy
    ("ws[s * kb + j] = (A + k0)[s * K + j];", "ws[s * kb + j] = (A + k0 + M)[s * K + j]; M = M + 0;",
     "ws[s * kb + j] ="),
])
def test_staged_copy_refusals(edit, to, stays):
    assert edit in STAGED
    p = parse_text(STAGED.replace(edit, to), "c", "f.c")
    f, loop = _outer(p)
    new = x86_staged.forward_loop(f, loop) or loop       # the other buffer may still be forwarded
    out = print_program(p.with_(items=tuple(f.with_(body=U.replace_stmt(f.body, loop, [new])) if it is f else it
                                            for it in p.items)), "c")
    assert stays in out, out


def test_gemv_mlu_to_c_reads_a_and_x_directly_and_verifies(tmp_path):
    from xpiler.api import migrate
    r = migrate(ROOT / "examples" / "gemv" / "gemv.mlu", "c", outdir=tmp_path / "c", perf=False, force=True)
    assert r.verified
    body = r.code[r.code.index("void gemv("):]
    # the WRAM / NRAM staging copies are gone (the arrays are declared, never used), the dot
    # products read A and x, eight rows at a time
    assert "w_tile[xpd" not in body and "x_chunk[xpd" not in body
    assert "_mm512_loadu_ps(&A[m0 * K + (k0 + (xpd_n6_b * K + xpd_k7))])" in body
    assert "xpd_n6_b += 8" in body
