"""C++ sources of the c dialect: the front end reads their C++ spellings into the IR, the c
platform builds them with g++ (C and C++ linkage of the entry), and standard headers a source
uses without including are added with a note."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from xpiler.frontend import dialect_of as fe_dialect_of, parse_text
from xpiler.diagnostics import XPError
from xpiler.examples_index import KERNEL_EXTS
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.platforms.prelude import cxx_reason, missing_headers, prepare_c
from xpiler.printers import print_program
from xpiler.spec import dialect_of

ROOT = Path(__file__).resolve().parent.parent
WILD = ROOT / "examples" / "wild"


def _func(prog, name):
    return next(i for i in prog.items if isinstance(i, N.Func) and i.name == name)


def _intrinsics(prog):
    return [n.name for n in walk(prog.items) if isinstance(n, N.Intrinsic)]


# ------------------------------------------------------------------------------ dialect of a file
@pytest.mark.parametrize("ext", [".cpp", ".cc", ".cxx"])
def test_cpp_extensions_are_the_c_dialect(ext):
    assert dialect_of(Path("k" + ext)) == "c"
    assert fe_dialect_of("k" + ext) == "c"
    assert ext in KERNEL_EXTS


def test_cxx_reason_tells_c_from_cpp():
    assert cxx_reason("void f(float* x) { x[0] = 0; }", "k.c") is None
    assert "extern" in cxx_reason('extern "C" void f(float* x) { x[0] = 0; }', "k.c")
    assert "cast" in cxx_reason("void f(float* x, int i) { x[static_cast<long>(i)] = 0; }", "k.c")
    assert cxx_reason("void f(float* x) { x[0] = 0; }", "k.cpp") == ".cpp file"
    # a C++ word inside a comment or a string does not make the file C++
    assert cxx_reason('// extern "C" and std::max\nvoid f(float* x) { x[0] = 0; }', "k.c") is None


# ------------------------------------------------------------------------------ front end
def test_extern_c_std_auto_static_cast_lower_to_plain_c():
    src = '''#include <cmath>
#include <algorithm>
extern "C" void f(const float* x, float* y, int n) {
    for (auto i = 0; i < n; ++i) {
        auto v = x[i];
        y[i] = std::max(v, 0.0f) + std::exp(v) + static_cast<float>(i) + std::sqrt(2.0);
    }
}
'''
    prog = parse_text(src, "c", "k.cpp")
    f = _func(prog, "f")
    assert f.kind == "kernel"
    loop = next(n for n in walk(f.body) if isinstance(n, N.For))
    assert loop.var == "i" and loop.var_type.dtype == "int32"        # auto i = 0 -> int, a canonical loop
    v = next(n for n in walk(f.body) if isinstance(n, N.Decl) and n.name == "v")
    assert isinstance(v.type, N.Scalar) and v.type.dtype == "float32"  # auto v = x[i] -> float
    names = _intrinsics(prog)
    assert "fmaxf" in names and "expf" in names                       # float arguments pick the f forms
    assert "sqrt" in names and "sqrtf" not in names                   # a double argument keeps sqrt
    assert any(isinstance(n, N.Cast) and n.type.dtype == "float32" for n in walk(f.body))
    out = print_program(prog, "c")
    assert "std::" not in out and "auto" not in out and "static_cast" not in out and 'extern "C"' not in out


def test_std_max_of_ints_is_the_max_intrinsic():
    prog = parse_text("void f(int* y, int a, int b) { y[0] = std::max(a, b); y[1] = std::abs(a); }", "c", "k.cpp")
    assert "max" in _intrinsics(prog)
    assert "fmaxf" not in _intrinsics(prog)


def test_references_become_pointers_or_values():
    src = '''static void acc(float& s, const float& v) { s += v; }
void f(const float* x, float* y, int n) {
    float total = 0.0f;
    for (int i = 0; i < n; ++i) acc(total, x[i]);
    float& out = y[0];
    out = total;
}
'''
    prog = parse_text(src, "c", "k.cpp")
    acc = _func(prog, "acc")
    assert isinstance(acc.params[0].type, N.Pointer)                  # written: by pointer
    assert isinstance(acc.params[1].type, N.Scalar)                   # const &: by value
    text = print_program(prog, "c")
    assert "acc(&total, x[i])" in text.replace("(&(total)", "(&total")
    assert "*s += v" in text
    assert "out = &y[0]" in text.replace("&(y[0])", "&y[0]") and "*out = total" in text


def test_reference_return_is_refused_with_its_id():
    with pytest.raises(XPError) as e:
        parse_text("float& pick(float* x) { return x[0]; }\nvoid f(float* x) { pick(x) = 1.0f; }", "c", "k.cpp")
    assert e.value.code == "XP1105" and e.value.line == 1


def test_namespaces_anonymous_and_named():
    src = '''namespace {
inline float sq(float v) { return v * v; }
}
namespace ops {
float cube(float v) { return v * v * v; }
}
extern "C" void f(const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i) y[i] = sq(x[i]) + ops::cube(x[i]);
}
'''
    prog = parse_text(src, "c", "k.cpp")
    assert _func(prog, "sq").kind == "device"        # anonymous namespace: a file-local helper
    assert _func(prog, "f").kind == "kernel"
    assert "ops::" not in print_program(prog, "c")


def test_nullptr_and_bool_print_as_c():
    prog = parse_text('extern "C" void f(const float* x, float* y) { bool ok = x != nullptr; if (ok) y[0] = x[0]; }',
                      "c", "k.cpp")
    text = print_program(prog, "c")
    assert "nullptr" not in text


def test_auto_without_a_deducible_type_is_xp1141():
    with pytest.raises(XPError) as e:
        parse_text("void f(float* y) { auto v = unknown_fn(); y[0] = v; }", "c", "k.cpp")
    assert e.value.code == "XP1141" and e.value.line == 1


# ------------------------------------------------------------------------------ headers
def test_missing_headers_found_with_line():
    src = "void f(__m512i* a, float* y) {\n  y[0] = M_PI;\n  uint8_t z = 0;\n}\n"
    needs = {n.header: n for n in missing_headers(src, "c")}
    assert needs["immintrin.h"].use == "__m512i" and needs["immintrin.h"].line == 1
    assert needs["math.h"].use == "M_PI" and needs["math.h"].line == 2
    assert "stdint.h" in needs
    # included, defined or only mentioned in a comment: nothing is missing
    assert missing_headers("#include <immintrin.h>\n#include <math.h>\n#include <stdint.h>\n" + src, "c") == []
    assert missing_headers("#define M_PI 3.14159f\nvoid f(float* y) { y[0] = M_PI; }", "c") == []
    assert missing_headers("// uses __m512i and M_PI\nvoid f(float* y) { y[0] = 1; }", "c") == []
    # a variable named half is not the type
    assert missing_headers("__global__ void k(float* y) { for (int half = 4; half > 0; half /= 2) y[half] = 0; }",
                           "cuda") == []


def test_prepare_c_keeps_line_numbers_and_reports_notes():
    src = 'extern "C" void f(float* y) {\n  y[0] = std::tanh(M_PI);\n}\n'
    p = prepare_c(src, "g.cpp")
    body = p.text.split('#line 1 "g.cpp"\n', 1)
    assert body[1] == src                                  # the source follows #line 1 unchanged
    assert "#include <cmath>" in body[0] and "#include <math.h>" in body[0]
    codes = [n.code for n in p.notes("g.cpp")]
    assert codes[0] == "XP2007" and codes.count("XP2006") == 2
    assert all(n.severity == "note" for n in p.notes("g.cpp"))


# ------------------------------------------------------------------------------ builds (few)
needs_gxx = pytest.mark.skipif(not (shutil.which("g++") and shutil.which("gcc")), reason="needs gcc and g++")


@needs_gxx
def test_cpp_source_with_cpp_linkage_builds_and_verifies():
    from xpiler.api import test as xtest
    v = xtest(WILD / "add" / "add_cpp_linkage.cpp", seeds=[0], sanitize=False)
    assert v.verified, v.failures
    assert [n.code for n in v.notes] == ["XP2007"]


@needs_gxx
def test_header_assuming_cpp_source_verifies_with_notes():
    from xpiler.api import test as xtest
    v = xtest(WILD / "gelu" / "gelu_tanh_mpi.cpp", seeds=[0], sanitize=False)
    assert v.verified, v.failures
    notes = {n.fields.get("header") for n in v.notes if n.code == "XP2006"}
    assert notes == {"math.h", "cmath"}
    assert v.to_json()["notes"][0]["severity"] == "note"
