"""Outputs the real compilers accept (issue 12, "real compiler rejects our output"): a hip
output always includes hip/hip_runtime.h (hipcc, unlike nvcc, adds nothing) and hip_fp16.h
where half is spelled half/__half; a kernel named after a libm function keeps C++ linkage on
GPU targets (extern "C" would clash with the library's C declaration)."""
from __future__ import annotations

from xpiler.frontend import parse_text
from xpiler.printers import print_program
from xpiler.printers.headers import missing_hip_headers


def test_hip_output_without_includes_gets_hip_runtime():
    prog = parse_text("__global__ void k(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = 0.f; }\n",
                      "hip", "k.hip")
    text = print_program(prog, "hip")
    assert "#include <hip/hip_runtime.h>" in text
    assert text.index("#include <hip/hip_runtime.h>") < text.index("__global__")


def test_hip_output_with_half_gets_hip_fp16():
    prog = parse_text("#include <hip/hip_runtime.h>\n"
                      "__global__ void k(__half* x, int n) { int i = threadIdx.x; if (i < n) x[i] = x[i]; }\n",
                      "hip", "k.hip")
    names = [d.text for d in missing_hip_headers(prog)]
    assert names == ["#include <hip/hip_fp16.h>"]
    assert print_program(prog, "hip").count("hip_runtime.h") == 1


def test_hip_program_that_includes_both_gets_nothing_more():
    prog = parse_text("#include <hip/hip_runtime.h>\n#include <hip/hip_fp16.h>\n"
                      "__global__ void k(__half* x) { x[threadIdx.x] = x[0]; }\n", "hip", "k.hip")
    assert missing_hip_headers(prog) == ()


def test_reserved_kernel_name_keeps_cpp_linkage_when_bound():
    from xpiler.passes import binding
    src = 'extern "C" void %s(const float* x, float* y, int n) { for (int i = 0; i < n; ++i) y[i] = x[i]; }\n'
    for name, linkage in (("abs", False), ("copy", True)):
        prog = parse_text(src % name, "c", "k.cpp")
        plan = binding.candidates(prog, "cuda")[0]
        out = binding.apply(prog, entry=name, **plan)
        out = out[0] if isinstance(out, tuple) else out
        text = print_program(out)
        assert f"void {name}(" in text
        assert ('extern "C"' in text) is linkage, text
