"""numpy reference of tests/simt_inputs/gemm_tt.c: C = A^T . B^T for A stored [K][M], B [N][K];
float64 sum, rounded once to float32. One outer product per k, no BLAS call: a threaded BLAS
inside the verifier's worker threads can deadlock with its subprocess forks (OpenBLAS's fork
handler waits for its own threads)."""
import numpy as np


def gemm_tt(A, B, M, N, K):
    a = np.asarray(A, dtype=np.float64).reshape(K, M)
    b = np.asarray(B, dtype=np.float64).reshape(N, K)
    c = np.zeros((M, N), dtype=np.float64)
    for k in range(K):
        c += np.outer(a[k, :], b[:, k])
    return c.astype(np.float32)
