"""numpy references for the wild reduce_sum kernels."""
import numpy as np


def row_sums(x, rows, cols):
    """y[r] = sum of row r of x[rows][cols] (float64 inside, float32 out)."""
    return np.asarray(x, dtype=np.float64).reshape(rows, cols).sum(axis=1).astype(np.float32)


def total_sum(x, n):
    """One-element array holding the sum of the first n elements."""
    return np.array([np.asarray(x, dtype=np.float64).reshape(-1)[:n].sum()], dtype=np.float32)


def colsum(a, rows, cols):
    return np.asarray(a, dtype=np.float64).reshape(rows, cols).sum(axis=0).astype(np.float32)


def rowsum_i32(x, cols):
    a = np.asarray(x, dtype=np.int64).reshape(-1, cols)
    return a.sum(axis=1).astype(np.int32)


def rowsum_f32(x, cols):
    a = np.asarray(x, dtype=np.float64).reshape(-1, cols)
    return a.sum(axis=1).astype(np.float32)
