"""numpy references for the wild softmax kernels (row-wise over the last axis)."""
import numpy as np


def softmax_rows(x, rows, cols):
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def softmax_rows_cols(x, cols):
    """Same as softmax_rows, the row count taken from the array."""
    a = np.asarray(x).reshape(-1, cols)
    return softmax_rows(a, a.shape[0], cols)


def softmax_vec(x, n):
    """One vector of n elements (binding-reduction corpus)."""
    return softmax_rows(np.asarray(x).reshape(1, n), 1, n).reshape(n)


def _softmax2d(x, rows, cols):
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def softmax_by_cols(inp, ncols):
    """Rows are implied by the array size (one block per row)."""
    a = np.asarray(inp)
    return _softmax2d(a, a.size // ncols, ncols)


def softmax_nc(inp, N, C):
    return _softmax2d(inp, N, C)


def softmax_rc(x, rows, cols):
    return _softmax2d(x, rows, cols)
