"""numpy references for the wild gemm kernels: C[M][N] = A[M][K] . B[K][N].

Products use np.einsum (no BLAS): a BLAS call from the tester's worker threads can hang.
"""
import numpy as np


def gemm(A, B, M, N, K):
    a = np.asarray(A, dtype=np.float64).reshape(M, K)
    b = np.asarray(B, dtype=np.float64).reshape(K, N)
    return np.einsum("mk,kn->mn", a, b).astype(np.float32)


def gemm_fixed(a, b):
    return gemm(a, b, 256, 384, 512)


def gemm_tile(A, B, M, N, K, tile):
    return gemm(A, B, M, N, K)


def gemm_s8s32(A, B, M, N, K):
    a = np.asarray(A, dtype=np.int64).reshape(M, K)
    b = np.asarray(B, dtype=np.int64).reshape(K, N)
    return np.einsum("mk,kn->mn", a, b).astype(np.int32)


def gemm_u8s8_bt(A, Bt, M, N, K):
    """uint8 A[M][K] times int8 B given transposed (Bt[N][K]), exact int32 result."""
    a = np.asarray(A, dtype=np.int64).reshape(M, K)
    bt = np.asarray(Bt, dtype=np.int64).reshape(N, K)
    return (a @ bt.T).astype(np.int32)


def gemm_f16_inputs(A, B, M, N, K):
    """A and B rounded to float16 (as the kernel does before the product), float64 product."""
    a = np.asarray(A, dtype=np.float32).reshape(M, K).astype(np.float16)
    b = np.asarray(B, dtype=np.float32).reshape(K, N).astype(np.float16)
    return gemm(a, b, M, N, K)


def gemm_s8_f32(A, B, M, N, K):
    """int8 A[M][K] . int8 B[K][N], exact integer sums returned as float32."""
    return gemm_s8s32(A, B, M, N, K).astype(np.float32)


def gemm_s8_dp4a(A4, B4t, M, N, K4):
    """int8 A[M][K] and B^T[N][K] packed four bytes to an int32 (byte e of word k is element
    4k + e, little-endian), exact int32 product A . B."""
    a = np.ascontiguousarray(np.asarray(A4, dtype=np.int32).reshape(M, K4)).view(np.int8).astype(np.int64)
    bt = np.ascontiguousarray(np.asarray(B4t, dtype=np.int32).reshape(N, K4)).view(np.int8).astype(np.int64)
    return np.einsum("mk,nk->mn", a, bt).astype(np.int32)
