"""numpy references for the gemv examples (row-major, y[M] = A[M][K] . x[K]).

gemv(A, x, M, K)       float32 in/out; dot products accumulated in float64, rounded once to float32.
gemv_s16(A, x, M, K)   int16 A and x, int32 y (VNNI dpwssd variant). Integer semantics: each y[i] is
                       the exact integer dot product reduced modulo 2**32 to int32 (two's complement),
                       which is what chained non-saturating dpwssd additions and an int32 horizontal
                       add produce. The specs' ranges (|A|,|x| <= 512, K <= 4100) keep every sum
                       below 2**30, so no wrap happens in tests.

The references loop over k (an axpy per column of A); gemv_selfcheck() compares them with
np.einsum and with per-row Python sums.
"""
import numpy as np


def _column_sum(a, v, K):
    y = np.zeros(a.shape[0], dtype=a.dtype)
    for k in range(K):
        y += a[:, k] * v[k]
    return y


def gemv(A, x, M, K):
    a = np.asarray(A, dtype=np.float64).reshape(M, K)
    v = np.asarray(x, dtype=np.float64).reshape(K)
    return _column_sum(a, v, K).astype(np.float32)


def gemv_s16(A, x, M, K):
    a = np.asarray(A).reshape(M, K)
    v = np.asarray(x).reshape(K)
    for t in (a, v):
        assert t.dtype == np.int16 or np.all((t >= -32768) & (t <= 32767)), "inputs must hold int16 values"
    y = _column_sum(a.astype(np.int64), v.astype(np.int64), K)
    return y.astype(np.int32)  # modulo 2**32, like int32 SIMD lanes


def gemv_selfcheck():
    rng = np.random.default_rng(5)
    for M, K in [(1, 1), (33, 45), (7, 130), (64, 3)]:
        A = rng.uniform(-1, 1, size=(M, K)).astype(np.float32)
        x = rng.uniform(-1, 1, size=K).astype(np.float32)
        got = gemv(A.ravel(), x, M, K)
        want = np.einsum("mk,k->m", A.astype(np.float64), x.astype(np.float64))
        assert got.shape == (M,) and got.dtype == np.float32
        assert np.allclose(got, want, rtol=1e-6, atol=1e-6), (M, K)
        rows = [sum(float(A[i, k]) * float(x[k]) for k in range(K)) for i in range(M)]
        assert np.allclose(got, rows, rtol=1e-6, atol=1e-6), (M, K)

        Aq = rng.integers(-32768, 32768, size=(M, K)).astype(np.int16)
        xq = rng.integers(-32768, 32768, size=K).astype(np.int16)
        exact = [sum(int(Aq[i, k]) * int(xq[k]) for k in range(K)) for i in range(M)]
        wrapped = [((s + 2**31) % 2**32) - 2**31 for s in exact]
        got = gemv_s16(Aq, xq, M, K)
        assert got.dtype == np.int32 and got.tolist() == wrapped, (M, K)
    # gemv is gemm with N = 1: linearity in x
    A = rng.standard_normal((5, 8))
    x1, x2 = rng.standard_normal(8), rng.standard_normal(8)
    assert np.allclose(gemv(A, x1 + x2, 5, 8), gemv(A, x1, 5, 8) + gemv(A, x2, 5, 8), atol=1e-5)
    return True


if __name__ == "__main__":
    gemv_selfcheck()
    print("gemv ref ok")
