"""numpy reference for the wild silu kernels: y = x * sigmoid(x)."""
import numpy as np


def silu(x, n):
    a = np.asarray(x, dtype=np.float64).reshape(-1)[:n]
    return (a / (1.0 + np.exp(-a))).astype(np.float32)
