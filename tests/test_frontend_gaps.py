"""Front-end spellings common in public CUDA/HIP code: __launch_bounds__ in every position,
__vector_size__ / ext_vector_type vector typedefs (AMD MFMA code), restrict placements,
#pragma unroll N, helper qualifiers and integer templates instantiated once."""
from __future__ import annotations

from pathlib import Path

import pytest

from xpiler.diagnostics import XPError
from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.printers import print_program

WILD = Path(__file__).resolve().parent.parent / "examples" / "wild"
BODY = "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 0.0f; }"


def _func(prog, name):
    return next(i for i in prog.items if isinstance(i, N.Func) and i.name == name)


@pytest.mark.parametrize("head", [
    "__global__ __launch_bounds__(256) void f(float* x, int n)",
    "__global__ void __launch_bounds__(256, 2) f(float* x, int n)",
    "__launch_bounds__(128)\n__global__ void f(float* x, int n)",
    "#define NT 64\n__global__ void __launch_bounds__(NT) f(float* x, int n)",
])
def test_launch_bounds_any_position(head):
    prog = parse_text(head + " " + BODY, "cuda", "k.cu")
    f = _func(prog, "f")
    assert f.kind == "kernel"
    lb = [a for a in f.attrs if a.startswith("__launch_bounds__")]
    assert len(lb) == 1
    out = print_program(prog, "cuda")
    assert "__launch_bounds__(" in out and "void f(" in out


@pytest.mark.parametrize("decl", [
    "using floatx4 = __attribute__((__vector_size__(4 * sizeof(float)))) float;",
    "typedef float floatx4 __attribute__((__vector_size__(4 * sizeof(float))));",
    "typedef float floatx4 __attribute__((ext_vector_type(4)));",
    "typedef float floatx4 __attribute__((vector_size(16)));",
])
def test_vector_typedefs_are_vectors(decl):
    prog = parse_text(decl + "\n__global__ void f(floatx4* x) { floatx4 v = x[threadIdx.x]; x[threadIdx.x] = v + v; }",
                      "hip", "k.hip")
    td = next(i for i in prog.items if isinstance(i, N.Typedef))
    assert isinstance(td.type, N.Vector) and td.type.n == 4 and td.type.elem.dtype == "float32"
    again = parse_text(print_program(prog, "hip"), "hip", "k2.hip")   # printed form parses back the same
    td2 = next(i for i in again.items if isinstance(i, N.Typedef))
    assert isinstance(td2.type, N.Vector) and td2.type.n == 4


def test_mfma_kernel_with_vector_size_accumulator_parses():
    prog = parse_file(WILD / "gemm" / "gemm_mfma_vs.hip")
    f = _func(prog, "gemm_mfma_16x16")
    assert any(isinstance(n, N.Call) and n.func == "__builtin_amdgcn_mfma_f32_16x16x4f32" or
               isinstance(n, N.Intrinsic) and "mfma" in n.name for n in walk(f.body))
    acc = next(n for n in walk(f.body) if isinstance(n, N.Decl) and n.name == "acc")
    t = acc.type.target if isinstance(acc.type, N.Named) else acc.type
    assert isinstance(t, N.Vector) and t.n == 4


@pytest.mark.parametrize("params", [
    "float* __restrict__ x, const int* __restrict__ idx, int n",
    "float *__restrict__ x, const int * __restrict__ const idx, int n",
    "float* __restrict x, const int* __restrict idx, int n",
])
def test_restrict_placements(params):
    prog = parse_text(f"__global__ void f({params}) {{ int i = threadIdx.x; if (i < n) x[i] = idx[i]; }}", "cuda", "k.cu")
    f = _func(prog, "f")
    assert f.params[0].type.restrict and f.params[1].type.restrict
    assert f.params[1].type.elem.const


def test_pragma_unroll_n_and_helper_qualifiers():
    prog = parse_file(WILD / "rmsnorm" / "rmsnorm_lb.cu")
    helper = _func(prog, "warp_sum")
    assert helper.kind == "device" and "static" in helper.attrs and "__forceinline__" in helper.attrs
    loops = [n for n in walk(prog.items) if isinstance(n, (N.For, N.CFor))]
    assert any("unroll 5" in p for lp in loops for p in lp.pragmas)
    assert any("unroll 8" in p for lp in loops for p in lp.pragmas)
    hd = parse_text("__host__ __device__ inline float h(float v) { return v; }\n"
                    "__global__ void k(float* x) { x[0] = h(x[0]); }", "cuda", "k.cu")
    assert _func(hd, "h").kind == "device" and "__host__" in _func(hd, "h").attrs


def test_integer_template_instantiated_once_is_substituted():
    src = ("template <int BLOCK, int ITEMS>\n"
           "__global__ void k(float* x, int n) { __shared__ float s[BLOCK]; int i = blockIdx.x * BLOCK * ITEMS"
           " + threadIdx.x; if (i < n) { s[threadIdx.x] = x[i]; x[i] = s[threadIdx.x] * ITEMS; } }\n"
           "void host(float* x, int n) {\n  constexpr int kB = 256;\n  k<kB, 4><<<n / 1024, kB>>>(x, n);\n}\n")
    prog = parse_text(src, "cuda", "k.cu")
    out = print_program(prog, "cuda")
    assert "template" not in out and "BLOCK" not in out and "ITEMS" not in out
    assert "s[256]" in out and "k<<<" in out.replace(" ", "")
    launch = next(n for n in walk(prog.items) if isinstance(n, N.Launch))
    assert launch.kernel == "k"


def test_template_defaults_are_used_when_nothing_instantiates():
    prog = parse_text("template <int BS = 128>\n__global__ void k(float* x) { x[threadIdx.x % BS] = 0.0f; }",
                      "cuda", "k.cu")
    assert "% 128" in print_program(prog, "cuda")


@pytest.mark.parametrize("src,code,why", [
    ("template <typename T>\n__global__ void k(T* x) { x[0] = 0; }\n", "XP1103", "template declaration"),
    ("template <int B>\n__global__ void k(float* x) { x[0] = B; }\n", "XP1103", "template declaration"),
    ("template <int B>\n__global__ void k(float* x) { x[0] = B; }\n"
     "void h(float* x) { k<64><<<1, 64>>>(x); k<128><<<1, 128>>>(x); }\n", "XP1140", "instantiations <128>, <64>"),
    ("template <int B>\n__global__ void k(float* x) { x[0] = B; }\n"
     "void h(float* x, int b) { k<b><<<1, 64>>>(x); }\n", "XP1140", "not integer constants"),
])
def test_templates_we_cannot_substitute_say_why(src, code, why):
    with pytest.raises(XPError) as e:
        parse_text(src, "cuda", "k.cu")
    assert e.value.code == code and e.value.line == 1
    assert why in e.value.message
