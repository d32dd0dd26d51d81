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


def rmsnorm_vec(x, weight, size):
    """One vector, eps = 1e-5; the output comes first in the signature."""
    return rmsnorm_rows(x, weight, 1, size, 1e-5).reshape(size)


def _rms(x, w, rows, dim, eps):
    a = np.asarray(x, dtype=np.float64).reshape(rows, dim)
    return a / np.sqrt((a * a).mean(axis=1, keepdims=True) + eps) * np.asarray(w, dtype=np.float64).reshape(1, dim)


def rmsnorm_hidden_eps(x, w, hidden, eps):
    rows = np.asarray(x).size // hidden
    return _rms(x, w, rows, hidden, float(eps)).astype(np.float32)


def rmsnorm_f16(x, w, rows, dim):
    return _rms(x, w, rows, dim, 1e-6).astype(np.float16)
