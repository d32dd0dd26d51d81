"""Follow-ups of the wild corpus (issue 12): kernel templates in the harness, GCC vector types
in cuda outputs, launch sizes carried by kernel parameters, helper functions inlined before the
analyses."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import xpiler
from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.platforms.harness import harness_callee, main_source, template_arguments
from xpiler.printers import print_program
from xpiler.spec import parse_spec

ROOT = Path(__file__).resolve().parent.parent
WILD = ROOT / "examples" / "wild"


# ------------------------------------------------------------------------------ 1. templates
def test_template_arguments_come_from_the_launcher():
    cu = """
template <int BLOCK, int ITEMS>
__global__ void k(const float* x, float* y, int n) { y[0] = x[0] * BLOCK * ITEMS; }
void host(const float* x, float* y, int n) {
    constexpr int kBlock = 256;
    k<kBlock, 4><<<1, kBlock>>>(x, y, n);
}
"""
    assert template_arguments(cu, "k") == "<256, 4>"
    hip = """
#define TILE 64
template <int T>
__global__ void __launch_bounds__(T) k(float* y) { y[0] = T; }
void host(float* y) { hipLaunchKernelGGL(k<TILE>, dim3(1), dim3(TILE), 0, 0, y); }
"""
    assert template_arguments(hip, "k") == "<64>"
    # every parameter defaulted, no instantiation written: the defaults
    assert template_arguments("template <int B = 128> __global__ void k(float* y) { y[0] = B; }", "k") == "<>"
    # not a template, or a template of another name: the bare name
    assert template_arguments("__global__ void k(float* y) { y[0] = 1; }", "k") is None
    assert harness_callee("template <int B> __device__ float g() { return B; }\n"
                          "__global__ void k(float* y) { y[0] = g<2>(); }", "k") == "k"
    # two different instantiations: nothing is guessed
    two = "template <int B> __global__ void k(float* y) { y[0] = B; }\n" \
          "void h(float* y) { k<1><<<1, 1>>>(y); k<2><<<1, 1>>>(y); }"
    assert template_arguments(two, "k") is None


def test_harness_parenthesizes_a_template_callee():
    spec = parse_spec('entry = "k"\ndialect = "cuda"\n[sizes]\nn = 4\n[launch]\ngrid = [1, 1, 1]\n'
                      'block = [4, 1, 1]\n[[args]]\nname = "y"\ndtype = "float32"\nshape = ["n"]\nrole = "out"\n')
    main = main_source(spec, "kernel.cpp", callee="k<256, 4>")
    # the comma of the template argument list must not split the XP_LAUNCH macro's arguments
    assert "XP_LAUNCH(J, (k<256, 4>), (xp_a0));" in main


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed for the SIMT emulator")
def test_template_kernels_pass_their_own_test(tmp_path):
    # the wild cuda template (constexpr arguments in the launcher) and a hip one (macro argument,
    # hipLaunchKernelGGL): both build and verify on the emulator
    v = xpiler.test(WILD / "silu" / "silu_template.cu", seeds=[0])
    assert v.verified, v.failures
    src = tmp_path / "scale_t.hip"
    src.write_text("""#include <hip/hip_runtime.h>
#define WAVES 2
template <int BLOCK, int PER>
__global__ void scale_t(const float* x, float* y, int n) {
    int i = blockIdx.x * BLOCK * PER + threadIdx.x;
    for (int k = 0; k < PER; ++k, i += BLOCK)
        if (i < n) y[i] = 3.0f * x[i];
}
void launch(const float* x, float* y, int n) {
    hipLaunchKernelGGL(HIP_KERNEL_NAME(scale_t<64, WAVES>), dim3((n + 127) / 128), dim3(64), 0, 0, x, y, n);
}
""")
    (tmp_path / "ref.py").write_text("def scale(x, n):\n    return 3.0 * x\n")
    (tmp_path / "scale_t.hip.toml").write_text("""entry = "scale_t"
dialect = "hip"
[sizes]
n = 1000
[launch]
grid = ["cdiv(n,128)", 1, 1]
block = [64, 1, 1]
[[args]]
name = "x"
dtype = "float32"
shape = ["n"]
role = "in"
[[args]]
name = "y"
dtype = "float32"
shape = ["n"]
role = "out"
[[args]]
name = "n"
dtype = "int32"
role = "scalar"
value = "n"
[reference]
python = "ref.py:scale"
""")
    v = xpiler.test(src, seeds=[0])
    assert v.verified, v.failures


# ------------------------------------------------------------------------------ 2. vector types
VS4 = """typedef float floatx4 __attribute__((__vector_size__(4 * sizeof(float))));
typedef int intx8 __attribute__((ext_vector_type(8)));
__global__ void k(const float* a, const float* b, float* c, int* d) {
    int i = threadIdx.x;
    floatx4 va = ((const floatx4*)a)[i];
    floatx4 vb = ((const floatx4*)b)[i];
    floatx4 s = va + vb * 2.0f;
    s -= va;
    ((floatx4*)c)[i] = -s;
    intx8 w = ((intx8*)d)[i];
    ((intx8*)d)[i] = (w << 1) ^ w;
}
"""


def test_cuda_prints_gcc_vector_types_as_structs_with_lane_arithmetic():
    prog = parse_text(VS4, "hip", "k.hip")
    out = print_program(prog, "cuda")
    assert "vector_size" not in out and "ext_vector_type" not in out
    assert "struct alignas(16) floatx4" in out and "float x, y, z, w;" in out
    assert "struct alignas(16) intx8" in out and "int v[8];" in out
    assert "operator<<(intx8 a, const intx8& b)" in out
    assert "operator<<" not in out.split("struct alignas(16) intx8")[0]   # no shifts on float lanes
    # hip keeps the clang vector typedef (clang accepts it)
    assert "__vector_size__" in print_program(prog, "hip")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc needed")
def test_cuda_vector_struct_output_compiles_with_nvcc(tmp_path):
    f = tmp_path / "k.cu"
    f.write_text(print_program(parse_text(VS4, "hip", "k.hip"), "cuda"))
    p = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-c", str(f), "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]


# ------------------------------------------------------------------------------ 3. launch sizes
def _spec(launch: str, args: str):
    return parse_spec('entry = "k"\ndialect = "cuda"\n[sizes]\nN = 2\nH = 3\nW = 5\nK = 7\n' + launch + args)


def test_launch_sizes_map_to_parameters_directly_and_through_products():
    from xpiler.migration.driver import _launch_to_params
    args = "".join(f'[[args]]\nname = "{n}"\ndtype = "int32"\nrole = "scalar"\nvalue = "{v}"\n'
                   for n, v in (("npix", "N*H*W"), ("h", "H"), ("w", "W"), ("k", "K")))
    spec = _spec('[launch]\ngrid = ["cdiv(K,32)", "N", 1]\nblock = [32, 4, 1]\n', args)
    out = _launch_to_params(spec.launch, spec, ["npix", "h", "w", "k"])
    assert out["grid"][0] == "((k + 32 - 1) / 32)"
    # N is carried only inside npix = N*H*W, with H and W carried: N = npix / (h * w)
    assert out["grid"][1] == "(npix / (h * w))"


def test_a_launch_size_no_parameter_carries_is_refused_naming_it():
    from xpiler.migration.driver import _launch_to_params
    from xpiler.passes.base import PassError
    from xpiler.passes import loop_recovery
    src = """__global__ void k(const float* x, float* y, int cols) {
    int r = blockIdx.x;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[r * cols + j] = x[r * cols + j];
}
"""
    args = '[[args]]\nname = "cols"\ndtype = "int32"\nrole = "scalar"\nvalue = "W"\n'
    spec = _spec('[launch]\ngrid = ["N", 1, 1]\nblock = [32, 1, 1]\n', args)
    launch = _launch_to_params(spec.launch, spec, ["cols"])
    with pytest.raises(PassError) as e:
        loop_recovery.apply(parse_text(src, "cuda", "k.cu"), entry="k", launch=launch)
    assert e.value.code == "XP4060" and "'N'" in e.value.message and "no kernel parameter carries" in e.value.message


# ------------------------------------------------------------------------------ 4. helpers inlined
def test_index_and_reference_helpers_are_inlined_into_a_c_source():
    from xpiler.passes.inline_helpers import prepare_source
    src = """
static inline long at(int r, int c, int cols) { return (long)r * cols + c; }
static inline void upd(float& m, float v) { m = m > v ? m : v; }
static float row_sum(const float* row, int n) {
    float j = 0.0f;                        /* a local named like a caller's loop variable */
    for (int k = 0; k < n; ++k) j += row[k];
    return j;
}
static int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }
extern "C" void k(const float* x, float* y, int rows, int cols) {
    for (int j = 0; j < rows; ++j) {
        float m = x[at(j, 0, cols)];
        for (int c = 1; c < at(0, cols, 0); ++c) upd(m, x[at(j, c, cols)]);
        float s = row_sum(x + at(j, 0, cols), cols);
        y[j] = m + s + fact(3);
    }
}
"""
    prog = prepare_source(parse_text(src, "c", "k.cpp"), "k")
    fn = prog.func("k")
    called = {n.func for n in walk(fn.body) if isinstance(n, N.Call)}
    # pointer/reference and index helpers are gone; the recursive one stays a call
    assert called == {"fact"}
    assert {f.name for f in prog.funcs} == {"k", "fact"}
    text = print_program(prog, "c")
    # the index helper is an expression, also in the loop bound; *&m folded to m
    assert "x[(long)j * cols + 0]" in text and "c < (long)0 * 0 + cols" in text
    assert "m = m > " in text and "&m" not in text
    # the helper's local j is renamed: the caller's j still indexes y
    assert "y[j] = m + s" in text and "float j_1 = 0.0f" in text


def test_helpers_that_cannot_be_hoisted_stay_calls():
    from xpiler.passes.inline_helpers import prepare_source
    src = """
static float first(const float* p) { float v = p[0]; return v; }
void k(const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i)
        y[i] = (i > 0 && first(x + i) > 0.0f) ? 1.0f : 0.0f;
}
"""
    prog = prepare_source(parse_text(src, "c", "k.c"), "k")
    # under &&, the call may not run: hoisting it would read x[i] when the source does not
    assert any(isinstance(n, N.Call) and n.func == "first" for n in walk(prog.func("k").body))


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed")
def test_c_source_with_helpers_migrates_to_cuda(tmp_path):
    # examples/wild/conv2d/conv2d_nchw.cpp: offset4(...) in every subscript; binding refused it
    # ("output dependence on 'output'") before the helper was inlined
    r = xpiler.migrate(WILD / "conv2d" / "conv2d_nchw.cpp", "cuda", outdir=tmp_path / "o", budget=600, perf=False)
    assert r.verified, r.code
    out = r.output_path.read_text()
    assert "offset4" not in out and "__global__" in out
