"""detensorize: every intrinsic family lowered to loops in the same dialect, verified by
running the result against the original kernel on its own substrate; refused cases carry
XP4001 and the source line."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

import xpiler

try:
    from xpiler.passes import detensorize
    from xpiler.passes.base import PassError
except ImportError:  # running from a source tree that is not installed: map passes/ in
    _shim = Path(tempfile.mkdtemp(prefix="xpd-shim-"))
    os.symlink(Path(__file__).resolve().parent.parent / "passes", _shim / "passes")
    xpiler.__path__.append(str(_shim))
    from xpiler.passes import detensorize
    from xpiler.passes.base import PassError

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.printers import print_program
from xpiler.spec import load_spec, parse_spec, spec_to_toml
from xpiler.verify.tester import compare_kernels

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"


def _verify(src: Path, text: str, spec=None):
    spec = spec or load_spec(str(src) + ".toml")
    work = Path(tempfile.mkdtemp(prefix="xpd-test-"))
    cand = work / src.name
    cand.write_text(text)
    cspec = parse_spec(spec.text, None) if spec.text else spec
    if cspec.reference:
        f, fn = cspec.reference.split(":")
        cspec.reference = f"{(src.parent / f).resolve()}:{fn}"
    cspec.path = Path(str(cand) + ".toml")
    cspec.path.write_text(spec_to_toml(cspec))
    return compare_kernels(cand, cspec, against=(src, spec), seeds=(0,), jobs=1)


def _code_only(text: str) -> str:
    """The program text without comments (examples explain their intrinsics in comments)."""
    import re
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def _lower_example(rel: str):
    src = EX / rel
    spec = load_spec(str(src) + ".toml")
    prog = parse_file(src, spec.dialect)
    out = detensorize.apply(prog, entry=spec.entry, target=None)
    assert out.dialect == prog.dialect
    assert [s for s in detensorize.intrinsic_sites(out) if s[0] is not None] == []
    text = print_program(out, prog.dialect)
    return src, text, spec


# ------------------------------------------------------------------ examples, one per family
@pytest.mark.parametrize("rel,must_not_contain", [
    ("gemm/gemm.mlu", ["__bang_matmul", "__memcpy(", "__bang_add"]),            # matmul, strided memcpy
    ("layernorm/layernorm.mlu", ["__bang_cycle_mul", "__bang_sum", "__bang_rsqrt"]),
    ("conv2d_nhwc/conv2d_nhwc.mlu", ["__bang_conv"]),
    ("gemm/gemm_wmma.cu", ["wmma::", "fragment"]),                              # WMMA
    ("gemm/gemm_mfma_f16.hip", ["__builtin_amdgcn_mfma"]),                      # MFMA f16
    ("gemv/gemv.hip", ["__shfl_down"]),                                         # wave64 shuffle
    ("layernorm/layernorm.cu", ["__shfl_down_sync"]),                           # if-converted warp reduction
    ("gemm/gemm_vnni.c", ["_mm512_", "__m512i"]),                               # VNNI u8 x s8
    ("softmax/softmax_avx512.c", ["_mm512_", "__m512 "]),                       # fnmadd/scalef/reductions
])
def test_example_lowered_and_verified(rel, must_not_contain):
    src, text, spec = _lower_example(rel)
    code = _code_only(text)
    for s in must_not_contain:
        assert s not in code, s
    v = _verify(src, text, spec)
    assert v.verified, (v.failures[0].message if v.failures else v)


# ------------------------------------------------------------------ structure
BANG_COPY = """
#include <bang.h>
#define N 256
__nram__ float buf[N];
__nram__ half hbuf[N];
extern "C" __mlu_global__ void k(float *x, half *h, float *y, int n) {
    __memcpy(buf, x, n * sizeof(float), GDRAM2NRAM);
    __memcpy(hbuf, h, n * 2, GDRAM2NRAM);
    __bang_add(buf, buf, buf, N);
    __memcpy(y, buf, n * sizeof(float), NRAM2GDRAM, 8 * sizeof(float), 4 * sizeof(float), 3);
}
"""


def test_memcpy_typed_and_byte_forms():
    prog = parse_text(BANG_COPY, "bang", "k.mlu")
    out = detensorize.apply(prog, entry="k", target="c")
    text = print_program(out, "bang")
    assert "__memcpy" not in text and "__bang_add" not in text
    assert "buf[" in text and "x[" in text                    # element loop (float = float, n * sizeof(float))
    assert "(uint8_t *)" in text or "(uint8_t*)" in text      # half <- bytes 'n * 2': byte loop
    # strided: segnum + 1 = 4 segments, strides in elements
    loops = [n for n in walk(out) if isinstance(n, N.For)]
    assert any(isinstance(l.hi, N.Const) and l.hi.value == 4 for l in loops)
    assert "* 8 +" in text and "* 4 +" in text


def test_keep_native_when_target_is_the_same_dialect():
    prog = parse_text(BANG_COPY, "bang", "k.mlu")
    with pytest.raises(PassError) as e:
        detensorize.apply(prog, entry="k", target="bang")
    assert e.value.code == "XP4002"
    out = detensorize.apply(prog, entry="k", target="bang", keep_native=False)
    assert "__memcpy" not in print_program(out, "bang")
    assert {"target": "bang", "keep_native": False} in detensorize.candidates(prog, "bang")


def test_nothing_to_do():
    prog = parse_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n", "cuda", "k.cu")
    with pytest.raises(PassError) as e:
        detensorize.check(prog, entry="k", target="hip")
    assert e.value.code == "XP4002"
    assert detensorize.candidates(prog, "hip") == []


# ------------------------------------------------------------------ refusals (code + location)
def test_refuses_collective_in_thread_dependent_loop():
    src = ("__global__ void k(float *x, int n) {\n"
           "    float v = 0.0f;\n"
           "    for (int i = threadIdx.x; i < n; i += 32) {\n"
           "        v += __shfl_xor_sync(0xffffffff, x[i], 1);\n"
           "    }\n"
           "    x[threadIdx.x] = v;\n"
           "}\n")
    prog = parse_text(src, "cuda", "k.cu")
    with pytest.raises(PassError) as e:
        detensorize.apply(prog, entry="k", target="hip")
    assert e.value.code == "XP4001"
    assert e.value.line == 4
    assert "thread-dependent" in e.value.why


def test_overlapping_matmul_goes_through_a_temporary():
    # in place (dst is lhs): read all, then write -- the loops fill an NRAM temporary first
    # (tests/test_bang_inplace.py runs such lowerings against the emulator)
    src = ("#include <bang.h>\n__nram__ float a[1024];\n__wram__ float w[1024];\n"
           "extern \"C\" __mlu_global__ void k(float *x) {\n"
           "    __bang_matmul(a, a, w, 4, 8, 32);\n"
           "}\n")
    prog = parse_text(src, "bang", "k.mlu")
    out = detensorize.apply(prog, entry="k", target="c")
    tmps = [d for d in walk(out) if isinstance(d, N.Decl) and d.scope == "nram" and d.name.startswith("xpd_t")]
    assert len(tmps) == 1


def test_refuses_mfma_inside_an_expression():
    src = ("typedef float floatx4 __attribute__((ext_vector_type(4)));\n"
           "__global__ void k(const float *a, float *c) {\n"
           "    floatx4 acc = {0.0f, 0.0f, 0.0f, 0.0f};\n"
           "    acc = acc + __builtin_amdgcn_mfma_f32_16x16x4f32(a[threadIdx.x], a[threadIdx.x], acc, 0, 0, 0);\n"
           "    c[threadIdx.x] = acc[0];\n"
           "}\n")
    prog = parse_text(src, "hip", "k.hip")
    with pytest.raises(PassError) as e:
        detensorize.apply(prog, entry="k", target="cuda")
    assert e.value.code == "XP4001" and e.value.line == 4


# ------------------------------------------------------------------ x86 integer exactness
VNNI_SAT = r"""
#include <immintrin.h>
#include <stdint.h>
void dots(const uint8_t *a, const int8_t *b, const int32_t *c, int32_t *out, int32_t *outs) {
    __m512i va = _mm512_loadu_si512((const void *)a);
    __m512i vb = _mm512_loadu_si512((const void *)b);
    __m512i vc = _mm512_loadu_si512((const void *)c);
    _mm512_storeu_si512((void *)out, _mm512_dpbusd_epi32(vc, va, vb));
    _mm512_storeu_si512((void *)outs, _mm512_dpbusds_epi32(vc, va, vb));
}
"""
VNNI_SPEC = """
entry = "dots"
dialect = "c"
[[args]]
name = "a"
dtype = "uint8"
shape = [64]
role = "in"
[[args]]
name = "b"
dtype = "int8"
shape = [64]
role = "in"
[[args]]
name = "c"
dtype = "int32"
shape = [16]
role = "in"
value = [2147483000, -2147483000, 2147483000, -2147483000, 0, 1, 2, 3, 2147483647, -2147483648, 5, 6, 7, 8, 9, 10]
[[args]]
name = "out"
dtype = "int32"
shape = [16]
role = "out"
[[args]]
name = "outs"
dtype = "int32"
shape = [16]
role = "out"
"""


def test_vnni_wraparound_and_saturation_exact(tmp_path):
    src = tmp_path / "dots.c"
    src.write_text(VNNI_SAT)
    (tmp_path / "dots.c.toml").write_text(VNNI_SPEC)
    spec = load_spec(tmp_path / "dots.c.toml")
    prog = parse_file(src, "c")
    out = detensorize.apply(prog, entry="dots", target="cuda")
    text = print_program(out, "c")
    assert "_mm512_" not in text
    v = _verify(src, text, spec)
    assert v.verified, (v.failures[0].message if v.failures else v)
