"""numpy references for the gemm examples (row-major, C[M][N] = A[M][K] . B[K][N]).

gemm(A, B, M, N, K)        float32 in, float32 out; accumulated in float64, rounded once to float32.
gemm_f16(A, B, M, N, K)    float16 A/B (tensor-core / matrix-core variants), float32 out. The float16
                           inputs are widened exactly to float64, so the only difference from the
                           kernel is its float32 accumulation order.
gemm_u8s8(A, B, M, N, K)   uint8 A, int8 B, int32 out (VNNI dpbusd variant). Integer semantics: the
                           exact integer sum, reduced modulo 2**32 to int32 (two's complement) --
                           exactly what a chain of non-saturating dpbusd additions produces. The specs'
                           input ranges keep every sum far inside int32, so no wrap happens in tests.

The main references accumulate one rank-1 update per k (the "loop over K" formulation);
gemm_selfcheck() cross-checks them against np.einsum and a naive triple loop.
"""
import numpy as np


def _rank1_sum(a, b, K):
    """sum_k outer(a[:, k], b[k, :]) in the dtype of a/b (float64 or int64)."""
    c = np.zeros((a.shape[0], b.shape[1]), dtype=a.dtype)
    for k in range(K):
        c += np.outer(a[:, k], b[k, :])
    return c


def gemm(A, B, M, N, K):
    a = np.asarray(A, dtype=np.float64).reshape(M, K)
    b = np.asarray(B, dtype=np.float64).reshape(K, N)
    return _rank1_sum(a, b, K).astype(np.float32)


def gemm_f16(A, B, M, N, K):
    # round to half first (a no-op when the inputs already are float16), then widen exactly
    a = np.asarray(A).astype(np.float16).astype(np.float64).reshape(M, K)
    b = np.asarray(B).astype(np.float16).astype(np.float64).reshape(K, N)
    return _rank1_sum(a, b, K).astype(np.float32)


def _bf16_round(x):
    """float32 values rounded to the nearest bfloat16 (ties to even), as float32."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    u = (u + (((u >> 16) & 1) + 0x7FFF)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def gemm_bf16(A, B, M, N, K):
    # round to bfloat16 first (a no-op for the verifier's inputs, which already are bfloat16
    # values widened to float32), then widen exactly
    a = _bf16_round(A).astype(np.float64).reshape(M, K)
    b = _bf16_round(B).astype(np.float64).reshape(K, N)
    return _rank1_sum(a, b, K).astype(np.float32)


def gemm_u8s8(A, B, M, N, K):
    a = np.asarray(A).reshape(M, K)
    b = np.asarray(B).reshape(K, N)
    assert a.dtype == np.uint8 or np.all((a >= 0) & (a <= 255)), "A must hold uint8 values"
    assert b.dtype == np.int8 or np.all((b >= -128) & (b <= 127)), "B must hold int8 values"
    c = _rank1_sum(a.astype(np.int64), b.astype(np.int64), K)
    return c.astype(np.int32)  # wraps modulo 2**32, like the int32 lanes of dpbusd


def _naive(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = np.zeros((M, N), dtype=np.float64)
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s += float(a[i, k]) * float(b[k, j])
            c[i, j] = s
    return c


def gemm_selfcheck():
    rng = np.random.default_rng(11)
    for M, N, K in [(4, 3, 5), (33, 17, 45), (1, 1, 1), (8, 20, 2)]:
        A = rng.uniform(-1, 1, size=(M, K)).astype(np.float32)
        B = rng.uniform(-1, 1, size=(K, N)).astype(np.float32)
        want = np.einsum("mk,kn->mn", A.astype(np.float64), B.astype(np.float64))
        got = gemm(A.ravel(), B.ravel(), M, N, K)
        assert got.shape == (M, N) and got.dtype == np.float32
        assert np.allclose(got, want, rtol=1e-6, atol=1e-6), (M, N, K)
        if M * N * K <= 4000:
            assert np.allclose(got, _naive(A, B), rtol=1e-6, atol=1e-6), (M, N, K)

        Ah = A.astype(np.float16)
        Bh = B.astype(np.float16)
        want = np.einsum("mk,kn->mn", Ah.astype(np.float64), Bh.astype(np.float64))
        got = gemm_f16(Ah, Bh, M, N, K)
        assert got.dtype == np.float32 and np.allclose(got, want, rtol=1e-6, atol=1e-6), (M, N, K)
        # half rounding really happens when float32 data is passed
        assert np.array_equal(gemm_f16(A, B, M, N, K), got)

        Ab = _bf16_round(A)
        Bb = _bf16_round(B)
        assert not np.array_equal(Ab, A) and np.all(Ab.view(np.uint32) & 0xFFFF == 0)
        want = np.einsum("mk,kn->mn", Ab.astype(np.float64), Bb.astype(np.float64))
        got = gemm_bf16(Ab, Bb, M, N, K)
        assert got.dtype == np.float32 and np.allclose(got, want, rtol=1e-6, atol=1e-6), (M, N, K)
        assert np.array_equal(gemm_bf16(A, B, M, N, K), got)

        Aq = rng.integers(0, 256, size=(M, K)).astype(np.uint8)
        Bq = rng.integers(-128, 128, size=(K, N)).astype(np.int8)
        want = np.einsum("mk,kn->mn", Aq.astype(np.int64), Bq.astype(np.int64))
        got = gemm_u8s8(Aq, Bq, M, N, K)
        assert got.dtype == np.int32 and np.array_equal(got, want), (M, N, K)
    # the int32 result wraps like hardware lanes do: 255*127*K passes 2**31 for K >= 66313
    Aq = np.full((1, 70000), 255, np.uint8)
    Bq = np.full((70000, 1), 127, np.int8)
    assert gemm_u8s8(Aq, Bq, 1, 1, 70000)[0, 0] == np.int64(255 * 127 * 70000 - 2**32)
    # transposition identity: (A.B)^T == B^T.A^T
    A = rng.standard_normal((6, 9)).astype(np.float32)
    B = rng.standard_normal((9, 4)).astype(np.float32)
    assert np.allclose(gemm(A, B, 6, 4, 9).T, gemm(B.T.copy(), A.T.copy(), 4, 6, 9), rtol=1e-6, atol=1e-6)
    return True


if __name__ == "__main__":
    gemm_selfcheck()
    print("gemm ref ok")
