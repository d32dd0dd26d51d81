"""numpy reference for the layernorm examples.

layernorm(x, gamma, beta, rows, cols, eps) -> y:
    y[r][c] = (x[r][c] - mean_r) / sqrt(var_r + eps) * gamma[c] + beta[c]
with the biased (population) variance over the last axis. float64 inside, float32 out.
"""
import numpy as np


def layernorm(x, gamma, beta, rows, cols, eps):
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    g = np.asarray(gamma, dtype=np.float64).reshape(cols)
    b = np.asarray(beta, dtype=np.float64).reshape(cols)
    mean = a.mean(axis=1, keepdims=True)
    var = ((a - mean) ** 2).mean(axis=1, keepdims=True)
    y = (a - mean) / np.sqrt(var + float(eps)) * g + b
    return y.astype(np.float32)


def _layernorm_loops(x, gamma, beta, rows, cols, eps):
    """Second formulation: one pass of sums (E[x^2] - E[x]^2) in explicit loops."""
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    y = np.empty((rows, cols))
    for r in range(rows):
        s = 0.0
        s2 = 0.0
        for c in range(cols):
            s += a[r, c]
            s2 += a[r, c] * a[r, c]
        mean = s / cols
        var = s2 / cols - mean * mean
        inv = 1.0 / np.sqrt(var + eps)
        for c in range(cols):
            y[r, c] = (a[r, c] - mean) * inv * float(gamma[c]) + float(beta[c])
    return y.astype(np.float32)


def layernorm_selfcheck():
    rng = np.random.default_rng(11)
    for rows, cols in [(3, 8), (5, 37), (1, 2)]:
        x = rng.uniform(-10, 10, size=(rows, cols)).astype(np.float32)
        g = rng.uniform(-2, 2, size=cols).astype(np.float32)
        b = rng.uniform(-2, 2, size=cols).astype(np.float32)
        p = layernorm(x, g, b, rows, cols, 1e-5)
        q = _layernorm_loops(x, g, b, rows, cols, 1e-5)
        assert np.allclose(p, q, rtol=1e-5, atol=1e-5), (rows, cols)
    # with gamma=1, beta=0 every row has mean 0 and (almost) unit variance
    x = rng.uniform(-10, 10, size=(4, 64)).astype(np.float32)
    y = layernorm(x, np.ones(64, np.float32), np.zeros(64, np.float32), 4, 64, 1e-5).astype(np.float64)
    assert np.allclose(y.mean(axis=1), 0.0, atol=1e-5)
    assert np.allclose(y.var(axis=1), 1.0, atol=1e-3)
    return True


if __name__ == "__main__":
    layernorm_selfcheck()
    print("layernorm ref ok")
