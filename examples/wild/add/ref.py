"""numpy references for the wild add kernels."""
import numpy as np


def add(a, b, n):
    a = np.asarray(a)
    return (a.reshape(-1)[:n].astype(np.float64) + np.asarray(b).reshape(-1)[:n]).astype(a.dtype)


def add_half2(x, r, n2):
    """__half2 form: n2 pairs, arrays given as float16[2*n2]."""
    return add(x, r, 2 * n2)


def add_bias_nchw(x, bias, N, C, HW):
    x = np.asarray(x, dtype=np.float32).reshape(N, C, HW)
    return (x + np.asarray(bias, dtype=np.float32).reshape(1, C, 1)).astype(np.float32)


def add_bias_rows(x, bias, rows, C):
    """y[r][c] = x[r][c] + bias[c], float32 [rows][C]."""
    x = np.asarray(x, dtype=np.float32).reshape(rows, C)
    return (x + np.asarray(bias, dtype=np.float32).reshape(1, C)).astype(np.float32)
