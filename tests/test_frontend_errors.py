"""Malformed and unsupported inputs: each gives its XP11xx code with a location, never a traceback."""
import subprocess
import sys
from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.frontend.errors import TABLE, XPError
from xpiler.ir import nodes as N
from xpiler.printers import print_program

ROOT = Path(__file__).resolve().parent.parent

CASES = [
    # (name, dialect, source, code, line, construct word expected in the message)
    ("template", "cuda", "template <typename T>\n__global__ void k(T* a) {}\n", "XP1103", 1, "template"),
    ("class", "cuda", "int x;\nclass Foo { int a; };\n", "XP1102", 2, "class"),
    ("lambda", "cuda", "void h() {\n  auto f = [=](int x) { return x; };\n}\n", "XP1142", 2, "by value"),
    ("lambda_nocapture", "hip", "void h(int* p) {\n  g([](int x) { return x; });\n}\n", "XP1104", 2, "lambda"),
    ("throw", "c", "void f(int n) {\n  if (n < 0) throw 1;\n}\n", "XP1102", 2, "exception"),
    ("try", "cuda", "void f() {\n  try { g(); } catch (...) {}\n}\n", "XP1102", 2, "exception"),
    ("virtual", "cuda", "struct S {\n  virtual void f();\n};\n", "XP1102", 2, "virtual"),
    ("operator", "hip", "float4 operator+(float4 a, float4 b);\n", "XP1102", 1, "operator"),
    ("reference", "cuda", "__device__ void f(float&& x) { x = 1.0f; }\n", "XP1105", 1, "reference"),
    ("namespace", "cuda", "__global__ void k(float* a) {\n  a[0] = thrust::max(1.0f, 2.0f);\n}\n", "XP1106", 2, "thrust"),
    ("launch_unclosed", "cuda", "void h(float* a) {\n  k<<<1, 32(a);\n}\n", "XP1111", 2, "launch"),
    ("launch_no_args", "cuda", "void h(float* a) {\n  k<<<1, 32>>>;\n}\n", "XP1111", 2, "launch"),
    ("syntax", "cuda", "__global__ void k(float* a) {\n  a[0] = 1.0f\n  a[1] = 2.0f;\n}\n", "XP1101", 3, "syntax"),
    ("unterminated_comment", "c", "void f() {}\n/* never closed\n", "XP1115", 2, "comment"),
    ("bad_fragment", "cuda", "__global__ void k() {\n  wmma::fragment<wmma::matrix_q, 16, 16> f;\n}\n",
     "XP1110", 2, "fragment"),
    ("unbalanced_paren", "bang", "__mlu_global__ void k(float* a) {\n  __memcpy(a, a, 4, NRAM2NRAM;\n}\n",
     "XP1107", 2, "unbalanced '('"),
    ("empty", "c", "/* only a comment */\n", "XP1114", 1, "empty"),
    ("static_cast_unclosed", "cuda", "__device__ int f(float x) {\n  return static_cast<int(x);\n}\n",
     "XP1107", 2, "unbalanced"),
]


@pytest.mark.parametrize("name,dialect,src,code,line,word", CASES, ids=[c[0] for c in CASES])
def test_malformed_input_gives_its_code(name, dialect, src, code, line, word):
    with pytest.raises(XPError) as ei:
        parse_text(src, dialect, f"{name}.x")
    e = ei.value
    assert e.code == code, str(e)
    assert e.code in TABLE
    assert e.file == f"{name}.x"
    if line is not None:
        assert e.line == line, str(e)
    assert word.lower() in str(e).lower()


def test_unknown_dialect_and_missing_file(tmp_path):
    with pytest.raises(XPError) as ei:
        parse_file(tmp_path / "k.f90")
    assert ei.value.code == "XP1109"
    with pytest.raises(XPError) as ei:
        parse_file(tmp_path / "missing.cu")
    assert ei.value.code == "XP1108"


def test_printer_refuses_constructs_of_another_dialect():
    prog = parse_text("__global__ void k(float* a) {\n  __shared__ float t[32];\n  t[threadIdx.x] = a[0];\n}\n",
                      "cuda", "k.cu")
    with pytest.raises(XPError) as ei:
        print_program(prog, "c")
    assert ei.value.code == "XP1113"
    # a bound loop prints in SIMT dialects, not in bang
    loop = N.For("i", N.Const(0, "int32", "0"), N.Var("n"), N.Const(1, "int32", "1"),
                 N.Block((N.Assign(N.Index(N.Var("a"), N.Var("i")), "=", N.Const(0, "int32", "0")),)),
                 binding="threadIdx.x", var_type=N.Scalar("int32", "int"))
    f = N.Func("k", (N.Param("a", N.Pointer(N.Scalar("float32", "float"))), N.Param("n", N.Scalar("int32", "int"))),
               N.Scalar("void", "void"), N.Block((loop,)), "kernel")
    p = N.Program("cuda", (f,), "gen.cu")
    assert "i += blockDim.x" in print_program(p, "cuda")
    with pytest.raises(XPError) as ei:
        print_program(p, "bang")
    assert ei.value.code == "XP1113"


@pytest.mark.parametrize("src,code", [("template <int N> void f() {}\n", "XP1103"),
                                      ("void f() { int x = ; }\n", "XP1101")])
def test_cli_reports_without_traceback(tmp_path, src, code):
    f = tmp_path / "bad.cu"
    f.write_text(src)
    r = subprocess.run([sys.executable, "-m", "xpiler", "parse", str(f)], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 2
    assert code in r.stderr and "Traceback" not in r.stderr + r.stdout
    assert f"{f}:1" in r.stderr


def test_diagnostics_table_rows_are_well_formed():
    rows = [l for l in (ROOT / "xpiler/frontend/DIAGNOSTICS.txt").read_text().splitlines() if l.startswith("XP")]
    assert len(rows) >= 10
    for r in rows:
        code, sev, msg, hint = r.split("|", 3)
        assert 1100 <= int(code[2:]) <= 1199 and sev in ("error", "warning", "note") and msg and hint


def test_mutated_examples_never_raise_anything_but_xperror():
    """A small deterministic fuzz: token deletions/insertions in real kernels."""
    import random
    from xpiler.frontend import dialect_of
    random.seed(7)
    files = sorted(p for ext in ("cu", "hip", "mlu", "c") for p in (ROOT / "tests" / "frontend_inputs").glob(f"*.{ext}"))
    junk = ["{", "}", "(", ")", "<<<", ">>>", "<", ">", ";", "template", "::", "&", "[", "]", "/*", "\n#if 1\n",
            "wmma::fragment<", "static_cast<", 'extern "C" {', "__shared__", "auto", "}}", "#define X"]
    for _ in range(300):
        f = random.choice(files)
        toks = f.read_text().split(" ")
        for _ in range(random.randint(1, 3)):
            i = random.randrange(len(toks))
            r = random.random()
            if r < 0.3:
                del toks[i]
            elif r < 0.7:
                toks.insert(i, random.choice(junk))
            else:
                toks[i] = toks[random.randrange(len(toks))]
        try:
            prog = parse_text(" ".join(toks), dialect_of(f), "m" + f.suffix)
            print_program(prog)
        except XPError as e:
            assert e.code.startswith("XP11")
