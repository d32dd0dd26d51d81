"""numpy references for the wild gelu kernels: exact (erf) and tanh-approximation GELU."""
import math

import numpy as np

_erf = np.vectorize(math.erf)


def gelu_erf(x, n):
    x = np.asarray(x)
    a = x.astype(np.float64).reshape(-1)[:n]
    return (0.5 * a * (1.0 + _erf(a / math.sqrt(2.0)))).astype(x.dtype)


def gelu_tanh(inp, N):
    a = np.asarray(inp, dtype=np.float64).reshape(-1)[:N]
    return (0.5 * a * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (a + 0.044715 * a ** 3)))).astype(np.float32)


def bias_gelu_erf(x, bias, rows, cols):
    """y = gelu_erf(x + bias[col]) over x[rows][cols] (float64 inside)."""
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols) + np.asarray(bias, dtype=np.float64).reshape(1, cols)
    return (0.5 * a * (1.0 + _erf(a / math.sqrt(2.0)))).astype(np.float32)
