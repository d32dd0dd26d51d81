"""numpy references for the wild relu kernels (float32 and float16)."""
import numpy as np


def relu(x):
    x = np.asarray(x)
    return np.maximum(x, np.zeros((), dtype=x.dtype)).astype(x.dtype)


def relu_n(x, n):
    return relu(np.asarray(x).reshape(-1)[:n])
