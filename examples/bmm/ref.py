"""numpy references for the bmm examples (row-major, C[b][M][N] = A[b][M][K] . B[b][K][N]).

bmm(A, B, batch, M, N, K)       float32 in/out; accumulated in float64, rounded once to float32.
bmm_f16(A, B, batch, M, N, K)   float16 A/B (WMMA variant), float32 out; the half inputs are widened
                                exactly to float64, so only the kernel's float32 accumulation differs.

Each batch is an independent rank-1-update loop over k; bmm_selfcheck() compares against np.einsum
and against numpy's matmul per batch.
"""
import numpy as np


def _bmm64(a, b, batch, M, N, K):
    c = np.zeros((batch, M, N), dtype=np.float64)
    for k in range(K):
        # c[n] += outer(a[n, :, k], b[n, k, :]) for every batch n at once
        c += a[:, :, k, None] * b[:, None, k, :]
    return c


def bmm(A, B, batch, M, N, K):
    a = np.asarray(A, dtype=np.float64).reshape(batch, M, K)
    b = np.asarray(B, dtype=np.float64).reshape(batch, K, N)
    return _bmm64(a, b, batch, M, N, K).astype(np.float32)


def bmm_f16(A, B, batch, M, N, K):
    a = np.asarray(A).astype(np.float16).astype(np.float64).reshape(batch, M, K)
    b = np.asarray(B).astype(np.float16).astype(np.float64).reshape(batch, K, N)
    return _bmm64(a, b, batch, M, N, K).astype(np.float32)


def bmm_selfcheck():
    rng = np.random.default_rng(3)
    for batch, M, N, K in [(1, 1, 1, 1), (3, 17, 33, 19), (2, 4, 5, 6)]:
        A = rng.uniform(-1, 1, size=(batch, M, K)).astype(np.float32)
        B = rng.uniform(-1, 1, size=(batch, K, N)).astype(np.float32)
        want = np.einsum("bmk,bkn->bmn", A.astype(np.float64), B.astype(np.float64))
        got = bmm(A.ravel(), B.ravel(), batch, M, N, K)
        assert got.shape == (batch, M, N) and got.dtype == np.float32
        assert np.allclose(got, want, rtol=1e-6, atol=1e-6), (batch, M, N, K)
        for n in range(batch):  # batches must not mix
            assert np.allclose(got[n], A[n].astype(np.float64) @ B[n].astype(np.float64), rtol=1e-6, atol=1e-6)
        Ah, Bh = A.astype(np.float16), B.astype(np.float16)
        want = np.einsum("bmk,bkn->bmn", Ah.astype(np.float64), Bh.astype(np.float64))
        got = bmm_f16(Ah, Bh, batch, M, N, K)
        assert got.dtype == np.float32 and np.allclose(got, want, rtol=1e-6, atol=1e-6)
        assert np.array_equal(bmm_f16(A, B, batch, M, N, K), got)
    return True


if __name__ == "__main__":
    bmm_selfcheck()
    print("bmm ref ok")
