"""numpy references for the wild rmsnorm kernels."""
import numpy as np


def rmsnorm_rows(x, weight, rows, dim, eps=1e-6):
    a = np.asarray(x, dtype=np.float64).reshape(rows, dim)
    ms = (a * a).mean(axis=1, keepdims=True)
    return (a / np.sqrt(ms + eps) * np.asarray(weight, np.float64)).astype(np.float32)


def rmsnorm_rows_eps5(x, weight, rows, dim):
    return rmsnorm_rows(x, weight, rows, dim, 1e-5)


def rmsnorm_dim_eps(x, weight, dim, eps):
    """rmsnorm_rows with the row count taken from the array and eps given."""
    a = np.asarray(x).reshape(-1, dim)
    return rmsnorm_rows(a, weight, a.shape[0], dim, float(eps))
