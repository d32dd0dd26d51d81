"""numpy references for the wild mul kernels."""
import numpy as np


def mul(a, b, n):
    a = np.asarray(a)
    return (a.reshape(-1)[:n].astype(np.float64) * np.asarray(b).reshape(-1)[:n]).astype(a.dtype)


def mul_i8(a, b, n, shift):
    p = np.asarray(a, dtype=np.int32).reshape(-1)[:n] * np.asarray(b, dtype=np.int32).reshape(-1)[:n]
    return np.clip(p >> int(shift), -128, 127).astype(np.int8)


def mul_scalar(x, alpha, n):
    """y = alpha * x over the first n elements (float32)."""
    return (np.asarray(x, dtype=np.float32).reshape(-1)[:n] * np.float32(alpha)).astype(np.float32)
