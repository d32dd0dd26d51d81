"""Issue 12, kernels written elsewhere: (1) BANG copy barriers (``__sync()`` after
``__memcpy_async``) once loop recovery has made the program sequential; (2) ``std::vector``
local scratch buffers in c-dialect C++ read as local arrays by the front end, and the uses of a
vector that are refused (with the member and the line)."""
import subprocess
import sys
from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.frontend.errors import XPError
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.printers import print_program

ROOT = Path(__file__).resolve().parent.parent


def _barriers(prog):
    return [n.kind for n in walk(prog) if isinstance(n, N.Barrier)]


def _recover(prog, entry, launch):
    from xpiler.passes import detensorize, loop_recovery
    prog = detensorize.apply(prog, entry=entry, target="c")
    new, _ = loop_recovery.apply(prog, entry=entry, launch=launch)
    return new


# ------------------------------------------------------------------------------ BANG copy barrier
def test_async_copy_barrier_in_a_task_loop_is_dropped_by_loop_recovery():
    src = ROOT / "examples/wild/add/add_union1_async.mlu"
    prog = parse_file(src)
    assert "copy" in _barriers(prog)            # __sync() after the two __memcpy_async
    new = _recover(prog, "add_union", {"dim": [8, 1, 1], "func_type": "union1"})
    assert _barriers(new) == []
    out = print_program(new, "c")                # XP1113 before: the c printer has no copy barrier
    body = out[out.index("void add_union("):]
    assert "__sync" not in body and "__memcpy" not in body


def test_copy_barrier_as_a_bare_if_body_and_a_fence_are_dropped():
    src = ("__nram__ float buf[64];\n"
           "__mlu_global__ void k(float* x, float* y, int n) {\n"
           "  for (int s = taskId; s * 64 < n; s += taskDim) {\n"
           "    __memcpy_async(buf, x + s * 64, 64 * sizeof(float), GDRAM2NRAM);\n"
           "    if (n > 0) __sync_io();\n"
           "    __bang_mul_scalar(buf, buf, 2.0f, 64);\n"
           "    __sync_compute();\n"
           "    __memcpy(y + s * 64, buf, 64 * sizeof(float), NRAM2GDRAM);\n"
           "  }\n"
           "}\n")
    prog = parse_text(src, "bang", "k.mlu")
    assert sorted(_barriers(prog)) == ["copy", "copy"]
    new = _recover(prog, "k", {"dim": [4, 1, 1], "func_type": "block"})
    assert _barriers(new) == []
    print_program(new, "c")


def test_loop_recovery_still_refuses_an_async_copy_left_in_place():
    # the barrier is only dropped because no asynchronous copy can be left to wait for
    from xpiler.passes import loop_recovery
    from xpiler.passes.base import PassError
    prog = parse_file(ROOT / "examples/wild/add/add_union1_async.mlu")
    with pytest.raises(PassError) as e:
        loop_recovery.apply(prog, entry="add_union", launch={"dim": [8, 1, 1], "func_type": "union1"})
    assert "__memcpy_async" in str(e.value) and "detensorize" in str(e.value)


# ------------------------------------------------------------------------------ std::vector scratch buffers
H = '#include <vector>\n#include <algorithm>\nextern "C" void f(const float* x, float* y, int n) {\n'   # body from line 4


def _c(src):
    out = print_program(parse_text(src, "c", "v.cpp"), "c")
    assert "std" not in out and "vector" not in out
    return out[out.index("void f("):]


def _refused(src, line):
    with pytest.raises(XPError) as e:
        parse_text(src, "c", "v.cpp")
    assert e.value.code == "XP1102" and e.value.line == line, str(e.value)
    return str(e.value)


def test_sized_vector_is_a_local_array_with_its_first_values():
    out = _c(H + "  std::vector<float> v(n, 1.5f);\n  float* p = v.data();\n"
                 "  for (size_t i = 0; i < v.size(); ++i) y[i] = p[i] + v.at(i) + v.front() + v.back();\n}\n")
    assert "const long v_len = n;" in out and "float v[v_len];" in out
    assert "v[v_i] = 1.5f;" in out                            # (n, value): every element starts at value
    assert "float *p = v;" in out and "i < v_len" in out and "v[i] + v[0] + v[v_len - 1]" in out


def test_zero_fill_resize_after_declaration_and_two_declarators():
    out = _c(H + "  std::vector<int> w; w.resize(n);\n  std::vector<float> a(n), b(2 * n);\n"
                 "  for (int i = 0; i < n; ++i) { a[i] = x[i] + w[i]; b[2 * i] = a[i]; }\n  y[0] = b[0];\n}\n")
    assert "int w[w_len];" in out and "w[w_i] = 0;" in out    # std::vector value-initialises: zeros
    assert "const long b_len = 2 * n;" in out and "float b[b_len];" in out and "b[b_i] = 0;" in out


def test_fill_over_begin_end_and_range_for_are_index_loops():
    out = _c(H + "  std::vector<float> acc(n);\n  float s = 0.0f;\n  for (int r = 0; r < 4; ++r) {\n"
                 "    std::fill(acc.begin(), acc.end(), -1.0f);\n    for (int i = 0; i < n; ++i) acc[i] += x[i];\n"
                 "    for (const auto& e : acc) s += e;\n    y[r] = s;\n  }\n}\n")
    assert "acc[acc_i1] = -1.0f;" in out and "for (long acc_k = 0; acc_k < acc_len; ++acc_k)" in out
    assert "s += acc[acc_k];" in out
    # the fill comes first in the loop body and every use follows it there: the zeros of the
    # declaration are never read, and the array is declared in that body (nothing carried across r)
    assert "acc[acc_i] = 0" not in out and out.index("float acc[acc_len];") > out.index("for (int r = 0")


@pytest.mark.parametrize("body", [
    # a read before the fill in the same pass: it sees the declaration's zeros (first pass)
    "  for (int r = 0; r < 4; ++r) {\n    y[r] = acc[0];\n    std::fill(acc.begin(), acc.end(), 1.0f);\n  }\n",
    # a conditional fill
    "  for (int r = 0; r < 4; ++r) {\n    if (r > 0) std::fill(acc.begin(), acc.end(), 1.0f);\n    y[r] = acc[0];\n  }\n",
    # a use after the fill's block (the loop may run zero times)
    "  for (int r = 0; r < n; ++r) {\n    std::fill(acc.begin(), acc.end(), 1.0f);\n    y[r] = acc[0];\n  }\n"
    "  y[0] += acc[1];\n",
])
def test_first_values_kept_unless_the_fill_runs_before_every_use(body):
    out = _c(H + "  std::vector<float> acc(n);\n" + body + "}\n")
    assert "acc[acc_i] = 0;" in out and out.index("float acc[acc_len];") < out.index("for (int r = 0")


def test_helper_reference_parameter_takes_a_pointer_and_the_length():
    src = ("#include <vector>\nnamespace {\n"
           "void zero_then_add(const float* a, std::vector<float>& out, const std::vector<float>& w, int n) {\n"
           "  for (auto& v : out) v = 0.0f;\n"
           "  for (int j = 0; j < n; ++j) out[j] += a[j] * w[j % w.size()];\n}\n}\n"
           'extern "C" void f(const float* x, float* y, int n, int rows) {\n'
           "  std::vector<float> row(n), wt(3, 0.5f);\n"
           "  for (int r = 0; r < rows; ++r) {\n"
           "    zero_then_add(x + r * n, row, wt, n);\n"
           "    for (int j = 0; j < n; ++j) y[r * n + j] = row[j];\n  }\n}\n")
    out = print_program(parse_text(src, "c", "v.cpp"), "c")
    assert "float *out, long out_len, const float *w, long w_len, int n)" in out
    assert "out[out_k] = 0.0f;" in out and "w[j % w_len]" in out
    assert "zero_then_add(x + r * n, row, row_len, wt, wt_len, n);" in out
    # the helper writes every element of `row` before reading one (its first statement on `out`):
    # row's zeros are dead and row is declared in the loop body; wt keeps its 0.5f values
    assert "row[row_i] = 0" not in out and out.index("float row[row_len];") > out.index("for (int r = 0")
    assert "wt[wt_i] = 0.5f;" in out


def test_helper_returning_before_its_full_write_keeps_the_first_values():
    src = ("#include <vector>\n"
           "static void maybe_zero(std::vector<float>& out, int k) {\n  if (k < 0) return;\n"
           "  for (auto& v : out) v = 0.0f;\n}\n"
           'extern "C" void f(float* y, int n, int k) {\n  std::vector<float> row(n);\n'
           "  for (int r = 0; r < 2; ++r) {\n    maybe_zero(row, k);\n    y[r] = row[0];\n  }\n}\n")
    out = print_program(parse_text(src, "c", "v.cpp"), "c")
    assert "row[row_i] = 0;" in out


def test_vector_captured_by_a_lambda_is_passed_as_a_pointer():
    out = print_program(parse_text(
        H + "  std::vector<float> acc(n, 2.0f);\n  auto get = [&](int j) -> float { return acc[j] * acc.size(); };\n"
            "  for (int i = 0; i < n; ++i) y[i] = get(i);\n}\n", "c", "v.cpp"), "c")
    assert "f_get(int j, float *acc, const long acc_len)" in out and "f_get(i, acc, acc_len)" in out


@pytest.mark.parametrize("src,line,words", [
    (H + "  std::vector<float> v(n);\n  v.push_back(1.0f);\n  y[0] = v[0];\n}\n", 5, ["push_back", "'v'"]),
    (H + "  std::vector<float> v(n);\n  y[0] = v[0];\n  v.resize(2 * n);\n}\n", 6, ["resize"]),
    (H + "  std::vector<float> v(n);\n  v.insert(v.begin(), 1.0f);\n}\n", 5, ["insert"]),
    (H + "  std::vector<float> v(n);\n  v.erase(v.begin());\n}\n", 5, ["erase"]),
    (H + "  std::vector<float> a(n), b(n);\n  a = b;\n}\n", 5, ["'a' assigned"]),
    (H + "  std::vector<float> a(n);\n  std::vector<float> b(a);\n}\n", 5, ["copy"]),
    (H + "  std::vector<float> a(x, x + n);\n  y[0] = a[0];\n}\n", 4, ["pointer"]),
    (H + "  std::vector<float> a{1.0f, 2.0f};\n}\n", 4, ["'{'"]),
    (H + "  std::vector<float> a;\n  y[0] = 1.0f;\n}\n", 4, ["without a size"]),
    (H + "  std::vector<std::vector<float>> a(n);\n}\n", 4, ["std::vector<std::vector<float>>"]),
    (H + "  std::vector<float> a(n);\n  std::vector<float>& r = a;\n}\n", 5, ["reference"]),
    ("#include <vector>\nstd::vector<float> g;\nextern \"C\" void f(float* y) { y[0] = 1.0f; }\n", 2,
     ["file scope"]),
    ("#include <vector>\nstatic float g(std::vector<float> v) { return v[0]; }\n"
     "extern \"C\" void f(float* y, int n) { std::vector<float> v(n); y[0] = g(v); }\n", 2, ["by value"]),
    # a vector parameter of the entry: the harness passes arrays as pointers
    ("#include <vector>\nextern \"C\" void f(std::vector<float>& y, int n) {\n  for (auto& e : y) e = 1.0f;\n}\n",
     2, ["nothing in the file calls", "T*"]),
])
def test_vector_uses_that_are_refused_name_the_member_and_line(src, line, words):
    msg = _refused(src, line)
    for w in words:
        assert w in msg


def test_vectors_in_cuda_host_code_stay_refused():
    src = ("#include <vector>\n__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n"
           "void h(int n) {\n  std::vector<float> hy(n);\n  float* d;\n  cudaMalloc(&d, n * 4);\n"
           "  k<<<1, 32>>>(d);\n  cudaMemcpy(hy.data(), d, n * 4, cudaMemcpyDeviceToHost);\n}\n")
    with pytest.raises(XPError) as e:
        parse_text(src, "cuda", "k.cu")
    assert e.value.code == "XP1102" and e.value.line == 4


@pytest.mark.parametrize("kernel", ["bmm/bmm_int64_auto.cpp", "deformable_attention/deform_attn_bilinear.cpp",
                                    "batchnorm/batchnorm_nhwc_fold.cpp", "maxpool2d/maxpool_nhwc_limits.cpp",
                                    "self_attention/attention_causal_llmc.cpp"])
def test_wild_vector_kernels_parse(kernel):
    # these were XP1102 'std::vector (a C++ library type ...)'
    out = print_program(parse_file(ROOT / "examples/wild" / kernel), "c")
    code = "\n".join(l for l in out.splitlines() if not l.lstrip().startswith("//"))
    assert "std::" not in code and "vector" not in code and "_len]" in code


# ------------------------------------------------------------------------------ end to end
def _migrate(src: Path, to: str, out: Path):
    return subprocess.run([sys.executable, "-m", "xpiler", "migrate", str(src), "--to", to, "-o", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)


def _verified_output(tmp_path, kernel, to):
    r = _migrate(ROOT / "examples/wild" / kernel, to, tmp_path / "out")
    assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr
    outs = [p for p in (tmp_path / "out").iterdir() if p.suffix in (".hip", ".c", ".cu", ".mlu")]
    assert len(outs) == 1 and ".unverified" not in outs[0].name
    return "\n".join(l for l in outs[0].read_text().splitlines() if not l.lstrip().startswith("//"))


def test_bang_async_copy_kernel_migrates_to_cuda(tmp_path):
    code = _verified_output(tmp_path, "add/add_union1_async.mlu", "cuda")
    assert "__sync" not in code and "__memcpy" not in code


@pytest.mark.parametrize("kernel,to", [
    ("bmm/bmm_int64_auto.cpp", "cuda"),               # a helper's std::vector& parameter, range-for
    ("maxpool2d/maxpool_nhwc_limits.cpp", "hip"),     # std::fill / std::copy over begin()..end()
])
def test_wild_vector_kernels_migrate_and_verify(tmp_path, kernel, to):
    code = _verified_output(tmp_path, kernel, to)
    assert "std::" not in code and "vector" not in code
