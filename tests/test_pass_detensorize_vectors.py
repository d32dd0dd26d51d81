"""detensorize on hip: MFMA operands and accumulators (ext_vector_type values) become plain
arrays, so the lowered kernel is valid cuda too; whole-vector uses next to an MFMA are refused."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import detensorize
from xpiler.passes.base import PassError
from xpiler.printers import print_program
from xpiler.spec import load_spec

EX = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("rel", ["gemm/gemm_mfma.hip", "gemm/gemm_mfma_f16.hip", "bmm/bmm_mfma.hip"])
def test_mfma_vectors_become_arrays(rel):
    src = EX / rel
    spec = load_spec(str(src) + ".toml")
    out = detensorize.apply(parse_file(src), entry=spec.entry, target="cuda")
    assert not [n for n in walk(out) if isinstance(n, N.Vector)]
    assert not [it for it in out.items if isinstance(it, N.Typedef)]
    acc = next(n for n in walk(out.func(spec.entry)) if isinstance(n, N.Decl) and n.name == "acc")
    assert isinstance(acc.type, N.Array) and acc.type.elem.dtype == "float32"
    code = re.sub(r"//[^\n]*", "", print_program(out, "cuda"))
    assert "ext_vector_type" not in code and "vector_size" not in code and "floatx4" not in code


def test_whole_vector_use_next_to_mfma_is_refused():
    src = ("typedef float floatx4 __attribute__((ext_vector_type(4)));\n"
           "__global__ void k(const float *a, float *c) {\n"
           "    floatx4 acc = {0.0f, 0.0f, 0.0f, 0.0f};\n"
           "    acc = __builtin_amdgcn_mfma_f32_16x16x4f32(a[threadIdx.x], a[threadIdx.x], acc, 0, 0, 0);\n"
           "    floatx4 twice = acc;\n"
           "    c[threadIdx.x] = twice[0];\n"
           "}\n")
    with pytest.raises(PassError) as e:
        detensorize.apply(parse_text(src, "hip", "k.hip"), entry="k", target="cuda")
    assert e.value.code == "XP4001" and "acc" in e.value.why


def test_cuda_spells_float16_as_half():
    # nvcc stops with an internal error on _Float16 in device code
    src = EX / "gemm" / "gemm_mfma_f16.hip"
    spec = load_spec(str(src) + ".toml")
    out = detensorize.apply(parse_file(src), entry=spec.entry, target="cuda")
    code = print_program(out.with_(dialect="cuda"), "cuda")
    assert "_Float16" not in re.sub(r"//[^\n]*", "", code) and "const half *A" in code
    assert "#include <cuda_fp16.h>" in code                  # half needs its header
    assert "cuda_fp16.h" not in print_program(out, "hip")    # hip keeps _Float16, no cuda header
