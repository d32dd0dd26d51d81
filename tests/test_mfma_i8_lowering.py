"""hip __builtin_amdgcn_mfma_i32_16x16x16i8 in sources: the registry entry's semantics (the f16
lane layout with signed bytes packed four to an int, int32 sums wrapping), detensorize's
exchange form (passes/lowering/mfma.py; the lift refuses it with a reason), and our own hip
output for conv2d_nhwc_vnni.c migrated again to cuda, verified exactly on the SIMT emulator."""
import numpy as np
import pytest

from xpiler.api import migrate
from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import walk
from xpiler.passes import detensorize
from xpiler.passes.lowering import mfma_lift
from xpiler.passes.lowering.simt import varying_names

from conftest import EXAMPLES

I8 = "__builtin_amdgcn_mfma_i32_16x16x16i8"


def _pack(A, B):
    """Lane l (i = l % 16, g = l / 16): byte e of a = A[i][4g+e], of b = B[4g+e][i]."""
    a = np.zeros(64, np.int64)
    b = np.zeros(64, np.int64)
    for lane in range(64):
        i, g = lane % 16, lane // 16
        for e in range(4):
            a[lane] |= (int(A[i, 4 * g + e]) & 0xFF) << (8 * e)
            b[lane] |= (int(B[4 * g + e, i]) & 0xFF) << (8 * e)
    return a, b


def test_registered_semantics_follow_the_lane_layout_and_wrap():
    d = REGISTRY[I8]
    assert d.dialects == ("hip",) and d.category == "mfma" and d.ret == "intx4"
    rng = np.random.default_rng(8)
    A = rng.integers(-128, 128, (16, 16))
    B = rng.integers(-128, 128, (16, 16))
    A[0, :] = -128
    B[:, 0] = -128                             # the largest products, negative bytes
    C = rng.integers(-2**31, 2**31, (16, 16))
    C[0, 0] = 2**31 - 1                        # this sum wraps past INT_MAX
    a, b = _pack(A, B)
    c = np.array([[C[4 * (l // 16) + e, l % 16] for e in range(4)] for l in range(64)])
    D = (A @ B + C + 2**31) % 2**32 - 2**31
    want = np.array([[D[4 * (l // 16) + e, l % 16] for e in range(4)] for l in range(64)])
    got = d.semantics(a, b, c)
    assert got.dtype == np.int32 and np.array_equal(got, want)
    assert D[0, 0] < 0                         # it did wrap
    # a swapped A/B layout gives something else
    assert not np.array_equal(d.semantics(b, a, c), want)


SRC = """typedef int intx4 __attribute__((ext_vector_type(4)));
__global__ void k(const int *a, const int *b, int *d) {
    const int l = threadIdx.x;
    const int av = a[l];
    const int bv = b[l];
    intx4 acc = {0, 0, 0, 0};
    __syncthreads();
    acc = __builtin_amdgcn_mfma_i32_16x16x16i8(av, bv, acc, 0, 0, 0);
    __syncthreads();
    for (int e = 0; e < 4; ++e) d[4 * l + e] = acc[e];
}
"""


def test_exchange_form_with_byte_extraction_and_no_lift():
    prog = parse_text(SRC, "hip", "k.hip")
    assert any(isinstance(n, N.Intrinsic) and n.name == I8 for n in walk(prog))
    f = prog.func("k")
    lifts, why = mfma_lift.plan(f, varying_names(f))
    assert not lifts and any("exchange form only" in r for r in why.values())
    low = detensorize.apply(prog, entry="k", target="cuda")
    assert not any(isinstance(n, N.Intrinsic) and n.name == I8 for n in walk(low))
    shared = [n for n in walk(low) if isinstance(n, N.Decl) and n.scope == "shared"]
    assert len(shared) == 2 and all(n.type.elem.dtype == "int32" for n in shared)
    casts = [n for n in walk(low) if isinstance(n, N.Cast) and isinstance(n.type, N.Scalar)
             and n.type.dtype == "int8"]
    assert len(casts) == 2                     # one byte of A, one of B per product


@pytest.mark.long     # a round trip of two migrations (53 s)
def test_own_hip_output_migrates_back_to_cuda_and_verifies(tmp_path):
    src = EXAMPLES / "conv2d_nhwc" / "conv2d_nhwc_vnni.c"
    h = migrate(src, to="hip", outdir=tmp_path / "h", perf=False)
    assert h.verified and I8 in h.code
    r = migrate(h.output_path, to="cuda", outdir=tmp_path / "c", perf=False)
    assert r.verified and "emu:simt-cpu" in r.verdict.substrate, [str(d) for d in r.diagnostics][:2]
    # the hip output carries its MFMA step under XP_USE_MFMA: read back, the portable #else branch is
    # kept (XP1150, frontend/variant_guards.py), so neither the builtin nor its lowering is in the output
    assert I8 not in r.code and "XP_USE_MFMA" not in r.code
    assert any(d.code == "XP1150" for d in r.diagnostics), [str(d) for d in r.diagnostics][:3]


@pytest.mark.parametrize("to,substrate", [("cuda", "emu:simt-cpu"),
                                          # (int8 -> c and -> bang: also test_dp4a_lowering, test_bang_matmul_i8)
                                          pytest.param("c", "c-host", marks=pytest.mark.long),
                                          pytest.param("bang", "emu:bang-cpu", marks=pytest.mark.long)])
def test_wild_int8_mfma_gemm_migrates_and_verifies(to, substrate, tmp_path):
    if substrate == "c-host":   # native AVX-512 VNNI where the CPU has it, else SIMD Everywhere
        from xpiler.platforms.c import CPlatform
        substrate = CPlatform().substrate()
    src = EXAMPLES / "wild" / "gemm" / "gemm_int8_mfma.hip"
    r = migrate(src, to=to, outdir=tmp_path / "o", perf=False)
    assert r.verified and substrate in r.verdict.substrate, [str(d) for d in r.diagnostics][:2]
    assert I8 + "(" not in r.code
