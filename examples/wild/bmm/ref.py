"""numpy references for the wild bmm kernels: C[b] = A[b] . B[b]."""
import numpy as np


def bmm(A, B, M, N, K):
    a = np.asarray(A, dtype=np.float64).reshape(-1, M, K)
    b = np.asarray(B, dtype=np.float64).reshape(-1, K, N)
    return np.einsum("bmk,bkn->bmn", a, b).astype(np.float32)  # no BLAS


def bmm_strided(A, sA, B, sB, sC, M, N, K):
    return bmm(A, B, M, N, K)


def bmm_64x128x96(A, B, batch):
    """bmm with the fixed sizes of bmm_matmul_task.mlu: [batch][64][128] . [batch][128][96]."""
    return bmm(A, B, 64, 96, 128)


def bmm_b(A, B, batch, M, N, K):
    """bmm with the batch count passed first."""
    return bmm(A, B, M, N, K)
