"""numpy references for the wild layernorm kernels (normalise the last axis, eps = 1e-5)."""
import numpy as np


def layernorm_rows(x, gamma, beta, rows, cols):
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    mean = a.mean(axis=1, keepdims=True)
    var = ((a - mean) ** 2).mean(axis=1, keepdims=True)
    y = (a - mean) / np.sqrt(var + 1e-5) * np.asarray(gamma, np.float64) + np.asarray(beta, np.float64)
    return y.astype(np.float32)
