"""numpy reference for the rmsnorm examples.

rmsnorm(x, gamma, rows, cols, eps) -> y:
    y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * gamma[c]
float64 inside, float32 out.
"""
import numpy as np


def rmsnorm(x, gamma, rows, cols, eps):
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    g = np.asarray(gamma, dtype=np.float64).reshape(cols)
    ms = (a * a).mean(axis=1, keepdims=True)
    y = a / np.sqrt(ms + float(eps)) * g
    return y.astype(np.float32)


def _rmsnorm_loops(x, gamma, rows, cols, eps):
    """Second formulation: explicit loops, norm via the 2-norm (||x||_2 / sqrt(cols))."""
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    y = np.empty((rows, cols))
    for r in range(rows):
        rms = np.sqrt(np.linalg.norm(a[r]) ** 2 / cols + eps)
        for c in range(cols):
            y[r, c] = a[r, c] * float(gamma[c]) / rms
    return y.astype(np.float32)


def rmsnorm_selfcheck():
    rng = np.random.default_rng(5)
    for rows, cols in [(3, 8), (5, 37), (2, 1)]:
        x = rng.uniform(-10, 10, size=(rows, cols)).astype(np.float32)
        g = rng.uniform(-2, 2, size=cols).astype(np.float32)
        p = rmsnorm(x, g, rows, cols, 1e-5)
        q = _rmsnorm_loops(x, g, rows, cols, 1e-5)
        assert np.allclose(p, q, rtol=1e-5, atol=1e-6), (rows, cols)
    # with gamma=1 the output rows have mean square ~1 (eps is negligible here)
    x = rng.uniform(1, 10, size=(3, 50)).astype(np.float32)
    y = rmsnorm(x, np.ones(50, np.float32), 3, 50, 1e-5).astype(np.float64)
    assert np.allclose((y * y).mean(axis=1), 1.0, atol=1e-5)
    return True


if __name__ == "__main__":
    rmsnorm_selfcheck()
    print("rmsnorm ref ok")
