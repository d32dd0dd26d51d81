"""numpy references for the softmax examples.

softmax(x, rows, cols) -> y: numerically stable softmax over the last axis of a
[rows][cols] float32 matrix (the row maximum is subtracted before exponentiating).
Accumulation is done in float64 and the result cast back to float32.
"""
import numpy as np


def softmax(x, rows, cols):
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    shifted = a - a.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    y = e / e.sum(axis=1, keepdims=True)
    return y.astype(np.float32)


def _softmax_loops(x, rows, cols):
    """Second formulation: plain loops, log-sum-exp form (y = exp(x - lse))."""
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    y = np.empty((rows, cols))
    for r in range(rows):
        m = max(a[r, c] for c in range(cols))
        s = 0.0
        for c in range(cols):
            s += np.exp(a[r, c] - m)
        lse = m + np.log(s)
        for c in range(cols):
            y[r, c] = np.exp(a[r, c] - lse)
    return y.astype(np.float32)


def softmax_selfcheck():
    rng = np.random.default_rng(7)
    for rows, cols in [(3, 5), (4, 37), (2, 1)]:
        x = rng.uniform(-30, 30, size=(rows, cols)).astype(np.float32)
        a = softmax(x, rows, cols)
        b = _softmax_loops(x, rows, cols)
        assert np.allclose(a, b, rtol=1e-5, atol=1e-7), (rows, cols)
        assert np.allclose(a.sum(axis=1), 1.0, atol=1e-5)
    # shift invariance: adding a per-row constant must not change the result
    x = rng.uniform(-3, 3, size=(4, 9)).astype(np.float32)
    assert np.allclose(softmax(x, 4, 9), softmax(x + 5.0, 4, 9), atol=1e-6)
    return True


if __name__ == "__main__":
    softmax_selfcheck()
    print("softmax ref ok")
