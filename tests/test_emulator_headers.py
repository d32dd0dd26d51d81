"""The SIMT emulator declares the same standard names with and without AddressSanitizer.

`ptrdiff_t` came only through the sanitizer's headers, so a kernel using it passed `xpiler test`
(ASan build) but failed the migration's source check (plain build) as "the source fails its own
test" (examples/wild/reverse/reverse_rows_ptr.cu)."""
from __future__ import annotations

import pytest

from spec_text import elementwise_spec
from xpiler.verify.tester import compare_kernels

KERNEL = """\
__global__ void shift(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    ptrdiff_t d = (x + i) - x;
    size_t s = (size_t)d;
    if (i < n) y[s] = x[d];
}
"""

SPEC = elementwise_spec("shift", "cuda", n=70, block=32, reference="ref.py:shift")


@pytest.mark.parametrize("sanitize", [True, False])
def test_ptrdiff_t_builds_with_and_without_asan(tmp_path, monkeypatch, sanitize):
    monkeypatch.setenv("XPILER_SUBSTRATE", "emu")
    (tmp_path / "shift.cu").write_text(KERNEL)
    (tmp_path / "shift.cu.toml").write_text(SPEC)
    (tmp_path / "ref.py").write_text("def shift(x, n):\n    return x.copy()\n")
    v = compare_kernels(tmp_path / "shift.cu", tmp_path / "shift.cu.toml", seeds=(0,), sanitize=sanitize, jobs=1)
    assert v.verified, [f.message for f in v.failures]


def test_ptrdiff_t_needs_stddef_even_with_stdlib():
    from xpiler.platforms.prelude import missing_headers
    text = "#include <stdlib.h>\nvoid f(float* a, float* b) { ptrdiff_t d = b - a; size_t s = (size_t)d; a[s] = 0; }\n"
    needs = missing_headers(text, "c")
    assert [(n.header, n.use) for n in needs] == [("stddef.h", "ptrdiff_t")]
    assert missing_headers("#include <stdlib.h>\nvoid f(size_t n) { (void)n; }\n", "c") == []


def test_bang_predefines_survive_leaving_bang():
    """A BANG source's compiler predefines and core-kind queries mean the same after loop recovery
    (examples/wild/relu/relu_half_seg.mlu, mul/mul_scalar_mpu_guard.mlu)."""
    from xpiler.frontend import parse_text
    from xpiler.passes import loop_recovery
    from xpiler.printers import print_program
    src = """#include <bang.h>
#define SEG ((__MLU_NRAM_SIZE__ * 1024 / 4) / sizeof(half))
__mlu_global__ void k(half* x, half* y, int n) {
  if (__is_mpu()) { return; }
  for (int i = taskId; i < n; i += taskDim) { y[i] = x[i] + (half)(SEG > 0 ? 0 : 1); }
}
"""
    prog = parse_text(src, "bang", "k.mlu")
    out = loop_recovery.apply(prog, entry="k", launch={"dim": [4, 1, 1], "func_type": "block"})
    out = out[0] if isinstance(out, tuple) else out
    text = print_program(out, "c")
    assert "#define __MLU_NRAM_SIZE__ 512" in text
    assert "sizeof(_Float16)" in text and "sizeof(half)" not in text
    assert "__is_mpu" not in text


NOINLINE_KERNEL = """\
static __attribute__((__noinline__)) int one() { return 1; }   /* libstdc++ 13's own spelling */
static __attribute__((cold, __noinline__)) int zero() { return 0; }
__device__ __noinline__ float twice(float v) { return 2.0f * v + (float)(one() - 1 + zero()); }
__global__ void shift(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 0.5f * twice(x[i]);
}
"""


def test_noinline_qualifier_and_gcc_attribute_spelling_both_build(tmp_path, monkeypatch):
    """CUDA's ``__noinline__`` qualifier and GCC's ``__attribute__((__noinline__))`` (which libstdc++
    13 writes in <algorithm>'s headers) build in one file. The emulator header used to define
    ``__noinline__`` as a macro, and the GPU machine's gcc 13 failed to compile
    examples/wild/argmax/argmax_rows_iter.cpp -> cuda under the emulator."""
    monkeypatch.setenv("XPILER_SUBSTRATE", "emu")
    (tmp_path / "shift.cu").write_text(NOINLINE_KERNEL)
    (tmp_path / "shift.cu.toml").write_text(SPEC)
    (tmp_path / "ref.py").write_text("def shift(x, n):\n    return x.copy()\n")
    v = compare_kernels(tmp_path / "shift.cu", tmp_path / "shift.cu.toml", seeds=(0,), sanitize=False, jobs=1)
    assert v.verified, [f.message for f in v.failures]


def test_noinline_rewrite_keeps_lines_and_the_attribute_spelling():
    from xpiler.platforms.simt_common import prepare_source
    out = prepare_source(NOINLINE_KERNEL, "k.cu")
    assert out.startswith('#line 1 "k.cu"\n')
    out = out.split("\n", 1)[1]
    assert out.count("\n") == NOINLINE_KERNEL.count("\n")
    assert "__attribute__((__noinline__))" in out and "__attribute__((cold, __noinline__))" in out
    assert "__device__ __attribute__((noinline)) float twice" in out
