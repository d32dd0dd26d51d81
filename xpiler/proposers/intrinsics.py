"""Exact signatures of the intrinsics a prompt may need, found in the program or implied by the target.

The LLM is told these as facts (it must not guess argument orders). Written from the
dialects' documented interfaces; the manuals/ sections give the prose.
"""
from __future__ import annotations

import re

SIGNATURES: dict[str, tuple[str, str]] = {
    # name: (dialect, signature — with a few words on semantics)
    "wmma::load_matrix_sync": ("cuda", "void nvcuda::wmma::load_matrix_sync(fragment<matrix_a|matrix_b,16,16,16,half,row_major|col_major>& f, const half* p, unsigned ldm)"),
    "wmma::mma_sync": ("cuda", "void nvcuda::wmma::mma_sync(fragment<accumulator,16,16,16,float>& d, const fragment<matrix_a,...>& a, const fragment<matrix_b,...>& b, const fragment<accumulator,...>& c)  // d = a*b + c, one warp"),
    "wmma::store_matrix_sync": ("cuda", "void nvcuda::wmma::store_matrix_sync(float* p, const fragment<accumulator,16,16,16,float>& f, unsigned ldm, layout_t mem_row_major|mem_col_major)"),
    "wmma::fill_fragment": ("cuda", "void nvcuda::wmma::fill_fragment(fragment<...>& f, T value)"),
    "__shfl_down_sync": ("cuda", "T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width=warpSize)"),
    "__shfl_xor_sync": ("cuda", "T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width=warpSize)"),
    "__syncthreads": ("cuda", "void __syncthreads()  // block-wide barrier (hip: same name)"),
    "__builtin_amdgcn_mfma_f32_32x32x2f32": ("hip", "floatx16 __builtin_amdgcn_mfma_f32_32x32x2f32(float a, float b, floatx16 c, int cbsz, int abid, int blgp)  // wave64"),
    "__builtin_amdgcn_mfma_f32_16x16x4f32": ("hip", "floatx4 __builtin_amdgcn_mfma_f32_16x16x4f32(float a, float b, floatx4 c, int cbsz, int abid, int blgp)  // wave64, floatx4 = float ext_vector_type(4)"),
    "__builtin_amdgcn_mfma_f32_16x16x16f16": ("hip", "floatx4 __builtin_amdgcn_mfma_f32_16x16x16f16(halfx4 a, halfx4 b, floatx4 c, int cbsz, int abid, int blgp)  // wave64"),
    "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k": ("hip", "floatx4 __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(shortx4 a, shortx4 b, floatx4 c, int cbsz, int abid, int blgp)  // wave64, bfloat16 bit patterns, gfx90a+ (not gfx908)"),
    "__memcpy": ("bang", "void __memcpy(void* dst, const void* src, int bytes, mluMemcpyDirection_t dir)  // dir: GDRAM2NRAM, NRAM2GDRAM, GDRAM2WRAM, NRAM2NRAM, GDRAM2SRAM, SRAM2NRAM…; strided form: (dst, src, seg_bytes, dir, dst_stride_bytes, src_stride_bytes, segnum) copies segnum+1 segments"),
    "__bang_add": ("bang", "void __bang_add(T* dst, const T* a, const T* b, int n)  // NRAM, n elements"),
    "__bang_sub": ("bang", "void __bang_sub(T* dst, const T* a, const T* b, int n)"),
    "__bang_mul": ("bang", "void __bang_mul(T* dst, const T* a, const T* b, int n)"),
    "__bang_mul_scalar": ("bang", "void __bang_mul_scalar(T* dst, const T* src, T scalar, int n)"),
    "__bang_add_scalar": ("bang", "void __bang_add_scalar(T* dst, const T* src, T scalar, int n)"),
    "__bang_active_relu": ("bang", "void __bang_active_relu(T* dst, const T* src, int n)"),
    "__bang_active_exp": ("bang", "void __bang_active_exp(T* dst, const T* src, int n)"),
    "__bang_write_zero": ("bang", "void __bang_write_zero(T* dst, int n)"),
    "__bang_sumpool": ("bang", "void __bang_sumpool(T* dst, const T* src, int C, int H, int W, int kh, int kw, int sh, int sw)  // channels-last, no padding"),
    "__bang_maxpool": ("bang", "void __bang_maxpool(T* dst, const T* src, int C, int H, int W, int kh, int kw, int sh, int sw)"),
    "__bang_matmul": ("bang", "void __bang_matmul(float|half* dst, const half* A_nram, const half* B_wram, int M, int K, int N)  // dst[M][N] = A[M][K] * B[K][N]"),
    "__bang_mlp": ("bang", "void __bang_mlp(T* dst, const T* src, const T* weight_wram, int K, int N, int fix_pos)  // vector x matrix"),
    "__bang_conv": ("bang", "void __bang_conv(T* dst, const T* src, const T* filter_wram, int Cin, int H, int W, int kh, int kw, int sw, int sh, int Cout)  // src channels-last, filter [Cout][kh][kw][Cin]"),
    "__sync_all": ("bang", "void __sync_all()  // barrier over all cores of the task"),
    "_mm512_dpbusd_epi32": ("c", "__m512i _mm512_dpbusd_epi32(__m512i acc, __m512i a_u8, __m512i b_s8)  // each int32 lane += sum of 4 u8*s8 products"),
    "_mm512_dpwssd_epi32": ("c", "__m512i _mm512_dpwssd_epi32(__m512i acc, __m512i a_s16, __m512i b_s16)  // each int32 lane += sum of 2 s16*s16 products"),
    "_mm512_loadu_ps": ("c", "__m512 _mm512_loadu_ps(const void* p)  // 16 floats, unaligned"),
    "_mm512_storeu_ps": ("c", "void _mm512_storeu_ps(void* p, __m512 v)"),
    "_mm512_fmadd_ps": ("c", "__m512 _mm512_fmadd_ps(__m512 a, __m512 b, __m512 c)  // a*b + c"),
    "_mm512_maskz_loadu_ps": ("c", "__m512 _mm512_maskz_loadu_ps(__mmask16 k, const void* p)  // masked tail load"),
    "_mm512_mask_storeu_ps": ("c", "void _mm512_mask_storeu_ps(void* p, __mmask16 k, __m512 v)  // masked tail store"),
}

# the matrix/vector units a tensorize pass may target, per dialect
TENSOR_UNITS: dict[str, list[str]] = {
    "cuda": ["wmma::load_matrix_sync", "wmma::mma_sync", "wmma::store_matrix_sync", "wmma::fill_fragment"],
    "hip": ["__builtin_amdgcn_mfma_f32_16x16x4f32", "__builtin_amdgcn_mfma_f32_16x16x16f16"],
    "bang": ["__bang_matmul", "__bang_mlp", "__bang_conv", "__bang_add", "__bang_mul", "__memcpy"],
    "c": ["_mm512_dpbusd_epi32", "_mm512_dpwssd_epi32", "_mm512_fmadd_ps", "_mm512_loadu_ps",
          "_mm512_maskz_loadu_ps", "_mm512_mask_storeu_ps"],
}

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_:]*")


def intrinsics_in(text: str) -> list[str]:
    """Names from SIGNATURES that the program calls (``nvcuda::wmma::x`` and ``wmma::x`` both count)."""
    found = []
    for name in SIGNATURES:
        short = name.split("::")[-1]
        pat = re.escape(short) if "::" in name else r"(?<![A-Za-z0-9_])" + re.escape(name)
        if re.search(pat + r"\s*\(", text) or (name.startswith("__sync") and name in text):
            found.append(name)
    return found


def signatures_for(text: str, target: str, pass_name: str, extra: list[str] | None = None) -> list[str]:
    """Signature lines for the intrinsics in play: those the program calls, those named in ``extra``,
    and for tensorize the target's matrix/vector units."""
    names = list(dict.fromkeys(intrinsics_in(text) + list(extra or [])
                               + (TENSOR_UNITS.get(target, []) if pass_name == "tensorize" else [])))
    return [f"{n}: {SIGNATURES[n][1]}" for n in names if n in SIGNATURES]
