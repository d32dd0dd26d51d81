"""Analyses over the IR (affine access functions, Z3 dependence / legality through the one
dependence module passes/dependence.py, footprints) and the intrinsic registry's reference
semantics."""
import numpy as np
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.affine import Affine, accesses, context_for, to_affine
from xpiler.ir.footprint import footprint, footprints_per_level
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import find_loop
from passes.dependence import carried, check_parallel, interchange_violation

GEMM = """
#define TILE 4
void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    for (int i = 0; i < M; ++i) {
        float* c = C + i * N;
        for (int j = 0; j < N; ++j)
            c[j] = 0.0f;
        for (int k = 0; k < K; ++k)
            for (int j = 0; j < N; ++j)
                c[j] += A[i * K + k] * B[k * N + j];
    }
}
"""


def _prog(src, dialect="c"):
    p = parse_text(src, dialect, "t." + {"c": "c", "cuda": "cu", "bang": "mlu"}[dialect])
    f = p.kernels[0]
    return p, f, context_for(p, f)


def test_affine_with_macros_lets_and_aliases():
    p, f, ctx = _prog(GEMM)
    acc = accesses(f, ctx)
    got = {(a.buffer, a.mode, str(a.indices[0])) for a in acc}
    assert ("C", "w", "N*i + j") in got                      # c = C + i*N resolved to C
    assert ("A", "r", "K*i + k") in got and ("B", "r", "N*k + j") in got
    e = N.BinOp("*", N.Var("TILE"), N.BinOp("+", N.Var("x"), N.Const(2, "int32", "2")))
    assert to_affine(e, ctx) == Affine.of({"x": 4}, 8)       # macro TILE = 4
    assert to_affine(N.BinOp("/", N.Var("x"), N.Const(2, "int32", "2")), ctx) is None
    assert to_affine(N.BinOp("*", N.Var("i"), N.Var("N")), ctx).affine_in({"i"})
    assert not to_affine(N.BinOp("*", N.Var("i"), N.Var("j")), ctx).affine_in({"i", "j"})


def test_dependence_gemm():
    p, f, ctx = _prog(GEMM)
    i = find_loop(f, "i")
    assert check_parallel(p, f, i) is None                   # rows of C are independent
    k = find_loop(f, "k")
    why = check_parallel(p, f, k)
    assert why is not None and why.buffer == "C"             # C[i][j] accumulates over k
    assert interchange_violation(p, f, k, find_loop(k.body, "j")) is None


ROWS_NEST = """
void rows_nest(const float* x, float* out, int N, int H, int K, int C, int W) {
    int Ho = (H - K) / 2 + 1;
    int rows = N * Ho;
    for (int i = 0; i < rows; ++i) {
        int n = i / Ho;
        int ho = i % Ho;
        for (int w = 0; w < W; ++w)
            for (int c = 0; c < C; ++c)
                out[((n * C + c) * Ho + ho) * W + w] = x[i * W + w];
    }
}
"""


def test_dependence_reads_the_definition_of_a_loop_bound():
    # the collapsed row loop of a lifted BANG convolution (issue 15): `i < rows` with `rows = N * Ho`
    # gives Ho > 0 inside the loop, so ho = i % Ho is a digit and the columns c never meet
    p, f, _ = _prog(ROWS_NEST)
    assert check_parallel(p, f, find_loop(f, "c")) is None
    assert check_parallel(p, f, find_loop(f, "i")) is None
    # rows assigned again: its definition is no longer a fact at the loop, nothing is assumed of it
    src = ROWS_NEST.replace("    for (int i = 0;", "    rows = rows + 1;\n    for (int i = 0;")
    p, f, _ = _prog(src)
    assert check_parallel(p, f, find_loop(f, "c")) is not None


def test_dependence_shifted_access_is_carried_and_direction_blocks_interchange():
    src = """
void stencil(float* a, int n, int m) {
    for (int i = 1; i < n; ++i)
        for (int j = 0; j < m - 1; ++j)
            a[i * m + j] = a[(i - 1) * m + j + 1] + 1.0f;
}"""
    p, f, ctx = _prog(src)
    i, j = find_loop(f, "i"), find_loop(f, "j")
    deps = carried(p, f, i)
    assert any(d.kind == "flow" and d.buffer == "a" for d in deps)
    assert check_parallel(p, f, j) is None                   # within a row no conflict
    why = interchange_violation(p, f, i, j)
    assert why is not None and "(<, >)" in why               # direction (<, >)


def test_dependence_even_odd_steps_do_not_conflict():
    src = """
void f(float* a, int n) {
    for (int i = 0; i < n; i += 2)
        a[i + 1] = a[i] * 2.0f;
}"""
    p, f, ctx = _prog(src)
    assert check_parallel(p, f, find_loop(f, "i")) is None
    src2 = src.replace("a[i + 1] = a[i]", "a[i + 2] = a[i]")
    p, f, ctx = _prog(src2)
    assert check_parallel(p, f, find_loop(f, "i")) is not None


def test_scalar_reduction_is_reported():
    src = "float f(const float* a, int n) { float s = 0.0f; for (int i = 0; i < n; ++i) s += a[i]; return s; }"
    p, f, ctx = _prog(src)
    deps = carried(p, f, find_loop(f, "i"))
    assert [d.kind for d in deps] == ["scalar"] and deps[0].reason == "scalar reduction"


def test_intrinsic_effects_in_dependence_and_footprint():
    src = """
__mlu_global__ void k(float* x, float* y, int n) {
    __nram__ float buf[64];
    for (int i = 0; i < n; i += 64) {
        __memcpy(buf, x + i, 64 * sizeof(float), GDRAM2NRAM);
        __bang_active_relu(buf, buf, 64);
        __memcpy(y + i, buf, 64 * sizeof(float), NRAM2GDRAM);
    }
}"""
    p, f, ctx = _prog(src, "bang")
    loop = find_loop(f, "i")
    acc = accesses(loop.body, ctx)
    assert {(a.buffer, a.mode) for a in acc} >= {("buf", "w"), ("buf", "r"), ("x", "r"), ("y", "w")}
    fp = footprint(loop, {"n": 256}, ctx)
    assert fp["buf"].elements == 64
    deps = carried(p, f, loop)
    assert any(d.buffer == "buf" for d in deps)               # one NRAM buffer reused by every iteration


def test_footprints_per_level_gemm():
    p, f, ctx = _prog(GEMM)
    fps = footprints_per_level(f, {"M": 8, "N": 6, "K": 5}, ctx)
    assert fps["i"]["A"].box == [(0, 4)] and fps["i"]["A"].elements == 5     # one row of A
    assert fps["i"]["B"].elements == 30                                       # all of B
    assert fps["k"]["B"].elements == 6 and fps["k"]["C"].elements == 6


# ------------------------------------------------------------------------------ intrinsics
def test_registry_covers_the_contract():
    need = ["wmma::mma_sync", "wmma::load_matrix_sync", "wmma::store_matrix_sync", "wmma::fill_fragment",
            "__builtin_amdgcn_mfma_f32_16x16x4f32", "__builtin_amdgcn_mfma_f32_16x16x16f16",
            "_mm512_dpbusd_epi32", "_mm512_dpbusds_epi32", "_mm512_dpwssd_epi32", "_mm512_fmadd_ps",
            "_mm512_reduce_add_ps", "__memcpy", "__bang_add", "__bang_matmul", "__bang_conv", "__bang_maxpool",
            "__bang_mlp", "__bang_transpose", "__shfl_down_sync", "__shfl_xor", "atomicAdd", "expf"]
    for n in need:
        assert n in REGISTRY and REGISTRY[n].semantics is not None, n
    for d in REGISTRY.values():
        names = {a.name for a in d.args}
        for e in d.effects:
            assert e.arg in names, (d.name, e.arg)


def test_dpbusd_semantics_against_integer_math():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, 64, dtype=np.uint8)
    b = rng.integers(-128, 128, 64, dtype=np.int8)
    src = rng.integers(-1000, 1000, 16, dtype=np.int32)
    out = REGISTRY["_mm512_dpbusd_epi32"].semantics(src.view(np.uint8), a, b.view(np.uint8)).view(np.int32)
    want = src + (a.astype(np.int64) * b.astype(np.int64)).reshape(16, 4).sum(1)
    assert np.array_equal(out, want.astype(np.int32))
    big = np.full(16, 2**31 - 1, np.int32)
    sat = REGISTRY["_mm512_dpbusds_epi32"].semantics(big.view(np.uint8), np.full(64, 255, np.uint8),
                                                     np.full(64, 127, np.int8).view(np.uint8)).view(np.int32)
    assert (sat == 2**31 - 1).all()


def test_mfma_semantics_is_a_matmul_in_the_documented_layout():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((16, 4)).astype(np.float32)
    B = rng.standard_normal((4, 16)).astype(np.float32)
    a = np.array([A[l % 16, l // 16] for l in range(64)], np.float32)
    b = np.array([B[l // 16, l % 16] for l in range(64)], np.float32)
    d = REGISTRY["__builtin_amdgcn_mfma_f32_16x16x4f32"].semantics(a, b, np.zeros((64, 4), np.float32))
    D = A @ B
    for l in range(64):
        for e in range(4):
            assert abs(d[l, e] - D[4 * (l // 16) + e, l % 16]) < 1e-5


def test_bang_semantics_and_effect_extents():
    d = REGISTRY["__bang_maxpool"]
    src = np.arange(4 * 4 * 2, dtype=np.float32)
    dst = np.zeros(2 * 2 * 2, np.float32)
    d.semantics(dst, src, 2, 4, 4, 2, 2, 2, 2)
    x = src.reshape(4, 4, 2)
    assert dst.reshape(2, 2, 2)[1, 0, 1] == x[2:4, 0:2, 1].max()
    ext = d.extents({"dst": None, "src": None, "C": 2, "H": 4, "W": 4, "kh": 2, "kw": 2, "sh": 2, "sw": 2})
    assert ext["dst"] == ("w", 8, "elem") and ext["src"] == ("r", 32, "elem")
    m = REGISTRY["__memcpy"]
    dstb, srcb = np.zeros(32, np.uint8), np.arange(64, dtype=np.uint8)
    m.semantics(dstb, srcb, 4, "GDRAM2NRAM", 8, 16, 2)
    assert list(dstb[:4]) == [0, 1, 2, 3] and list(dstb[8:12]) == [16, 17, 18, 19] and dstb[4] == 0
    assert m.extents({"bytes": 4, "dst_stride": 8, "src_stride": 16, "segnum": 2, "dir": 0})["src"][1] == 36


def test_shfl_semantics():
    v = np.arange(32)
    down = REGISTRY["__shfl_down_sync"].semantics(v, 4)
    assert down[0] == 4 and down[27] == 31 and down[28] == 28
    x = REGISTRY["__shfl_xor_sync"].semantics(v, 1)
    assert x[0] == 1 and x[1] == 0
    wave = REGISTRY["__shfl_down"].semantics(np.arange(64), 32)
    assert wave[0] == 32 and wave[40] == 40


def test_wmma_semantics_round_trip():
    rng = np.random.default_rng(2)
    a = rng.standard_normal(16 * 16).astype(np.float16)
    b = rng.standard_normal(16 * 16).astype(np.float16)
    load, mma, store = (REGISTRY[f"wmma::{n}"].semantics for n in ("load_matrix_sync", "mma_sync",
                                                                      "store_matrix_sync"))
    A, Bc = load(a, 16, 16, 16, "row_major"), load(b, 16, 16, 16, "col_major")
    out = np.zeros(256, np.float32)
    store(out, mma(A, Bc, np.zeros((16, 16), np.float32)), 16, "mem_row_major")
    want = a.reshape(16, 16).astype(np.float32) @ b.reshape(16, 16).T.astype(np.float32)
    assert np.allclose(out.reshape(16, 16), want, atol=1e-3)
