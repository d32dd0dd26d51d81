"""bfloat16 contraction -> hip: ``__builtin_amdgcn_mfma_f32_16x16x16bf16_1k`` under ``XP_USE_MFMA``
(passes/patterns/simt_tile.py ``mfma_body(bf16=True)``, passes/patterns/mfma_variant.py).

The printed form (guard without gfx908, shortx4 bit patterns, plain per-lane path), the emulated
builtin's order contract (float products added to c in ascending k, the order of the plain path),
and both variant builds of the output verifying against gemm_bf16.cu on emu:simt-cpu."""
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from xpiler.frontend import parse_text
from xpiler.passes import binding, tensorize
from xpiler.passes.base import PassError
from xpiler.printers import print_program

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _simt_tile_util import verify                                   # noqa: E402
from test_simt_emulator import make_spec, run, write_src             # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BUILTIN = "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k"

# the contraction loop recovery and untile leave of gemm_bf16.cu (c dialect; the cuda spelling of
# bfloat16, printed hip_bfloat16 on hip)
PLAIN = """void gemm_bf16(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M, int N, int K) {
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k)
                acc += (float)A[i * K + k] * (float)B[k * N + j];
            C[i * N + j] = acc;
        }
    }
}
"""


@pytest.fixture(scope="module")
def bf16_hip():
    p, _ = binding.apply(parse_text(PLAIN, "c", "gemm_bf16.c"), entry="gemm_bf16", target="hip")
    q, launch = tensorize.apply(p, entry="gemm_bf16", target="hip")
    return p, q, launch, print_program(q, "hip")


def _branches(text):
    lines = text.splitlines()
    i = lines.index("#if XP_USE_MFMA")
    e = lines.index("#else", i)
    return lines[i + 1:e], lines[e + 1:lines.index("#endif", e)]


def test_bf16_contraction_prints_the_bf16_mfma_under_a_guard_without_gfx908(bf16_hip):
    _, _, launch, text = bf16_hip
    guard = text[text.index("#ifndef XP_USE_MFMA"):]
    cond = guard.splitlines()[1]
    assert "defined(__gfx90a__)" in cond and "defined(__gfx942__)" in cond and "gfx908" not in cond
    assert "#include <hip/hip_bfloat16.h>" in text
    assert "typedef short shortx4 __attribute__((ext_vector_type(4)));" in text
    assert "__shared__ unsigned short xp_As[256];" in text
    assert "(unsigned short)(__float_as_uint((float)A[" in text        # the value's bits: its float's upper half
    on, off = _branches(text)
    assert any(f"xp_acc = {BUILTIN}(xp_a, xp_bv, xp_acc, 0, 0, 0);" in ln for ln in on)
    assert any("xp_a[xp_e] = (short)xp_As[xp_li * 16 + 4 * xp_g + xp_e];" in ln for ln in on)
    assert off and not any("__builtin_amdgcn" in ln for ln in off)
    assert any("__uint_as_float((unsigned)xp_As[(4 * xp_g + xp_eq) * 16 + xp_kq] << 16) * xp_bq" in ln for ln in off)
    assert launch["block"] == [64, 1, 1]


def test_a_program_whose_guard_selects_gfx908_is_refused(bf16_hip):
    from xpiler.ir import nodes as N
    from xpiler.passes.patterns import mfma_variant as MV
    p = bf16_hip[0]
    guard = [N.Directive(t, "define" if t.startswith("#define") else "cond") for t in MV.guard().splitlines()]
    with pytest.raises(PassError) as e:
        tensorize.apply(p.with_(items=tuple(guard) + p.items), entry="gemm_bf16", target="hip")  # gfx908 named
    assert e.value.code == "XP4002" and "gfx908" in e.value.why


# one wavefront: D = A B + C with the builtin, and the same sums the plain path takes (P)
ORDER = """\
#include <hip/hip_runtime.h>
typedef float floatx4 __attribute__((ext_vector_type(4)));
typedef short shortx4 __attribute__((ext_vector_type(4)));
__global__ void mfma_bf16(const unsigned short* A, const unsigned short* B, const float* C, float* D, float* P) {
  int l = threadIdx.x, i = l % 16, g = l / 16;
  shortx4 a, b;
  floatx4 acc;
  for (int e = 0; e < 4; ++e) {
    a[e] = (short)A[i * 16 + 4 * g + e];
    b[e] = (short)B[(4 * g + e) * 16 + i];
    acc[e] = C[(4 * g + e) * 16 + i];
  }
  floatx4 d = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, acc, 0, 0, 0);
  for (int e = 0; e < 4; ++e) {
    float s = C[(4 * g + e) * 16 + i];
    for (int k = 0; k < 16; ++k)
      s += __uint_as_float((unsigned)A[(4 * g + e) * 16 + k] << 16) * __uint_as_float((unsigned)B[k * 16 + i] << 16);
    D[(4 * g + e) * 16 + i] = d[e];
    P[(4 * g + e) * 16 + i] = s;
  }
}
"""


def _bf16_bits(x):
    """float32 values that are bfloat16 values (low 16 bits zero) -> their uint16 patterns."""
    u = np.asarray(x, np.float32).view(np.uint32)
    assert not (u & 0xFFFF).any()
    return (u >> 16).astype(np.uint16)


def test_emulated_bf16_mfma_adds_float_products_to_c_in_ascending_k(tmp_path):
    rng = np.random.default_rng(3)
    A = (rng.integers(-64, 64, (16, 16)) * 2.0 ** rng.integers(-3, 4, (16, 16))).astype(np.float32)
    B = (rng.integers(-64, 64, (16, 16)) * 2.0 ** rng.integers(-3, 4, (16, 16))).astype(np.float32)
    # rows where the order of the float sums shows: 2^24 cancelled late, 1s lost or kept by order
    A[0, :3], B[:3, 0] = [2.0 ** 12, 1.0, -2.0 ** 12], [2.0 ** 12, 1.0, 2.0 ** 12]
    A[1, 0], A[1, 15], B[0, 1], B[15, 1] = 1.0, 2.0 ** 12, 1.0, -2.0 ** 12
    C = (rng.standard_normal((16, 16)) * 2.0 ** 20).astype(np.float32)
    C[0, 0], C[1, 1] = 1.0, 2.0 ** 24
    spec = make_spec(tmp_path, "mfma_bf16", "hip",
                     [("A", "bfloat16", "in", [16, 16]), ("B", "bfloat16", "in", [16, 16]), ("C", "float32", "in", [16, 16]),
                      ("D", "float32", "out", [16, 16]), ("P", "float32", "out", [16, 16])], [1, 1, 1], [64, 1, 1])
    oc, outs = run(tmp_path, "hip", write_src(tmp_path, "mfma_bf16.hip", ORDER), spec,
                   {"A": _bf16_bits(A), "B": _bf16_bits(B), "C": C})
    assert oc.ok, oc.stderr
    want = C.copy()
    for k in range(16):                                  # float32 sums, ascending k, starting from c
        want = (want + A[:, k:k + 1] * B[k:k + 1, :]).astype(np.float32)
    assert np.array_equal(outs["D"].view(np.uint32), want.view(np.uint32))
    assert np.array_equal(outs["P"].view(np.uint32), want.view(np.uint32))
    exact = A.astype(np.float64) @ B.astype(np.float64) + C
    assert not np.array_equal(want, exact.astype(np.float32))     # the cases above do depend on the order


def test_both_variant_builds_verify_against_the_source(bf16_hip):
    _, q, launch, _ = bf16_hip
    src = ROOT / "examples" / "gemm" / "gemm_bf16.cu"
    v = verify(q, src, "hip", launch, instances=["odd"])           # ragged M, N and K
    assert v.verified, v.failures[:1]
    assert v.substrate == "emu:simt-cpu[XP_USE_MFMA=1] + emu:simt-cpu[XP_USE_MFMA=0]"
