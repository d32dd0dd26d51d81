"""numpy references for the wild argmax kernels (first occurrence of the maximum)."""
import numpy as np


def argmax_rows(x, rows, cols):
    """int32 index of the first maximum of every row of x[rows][cols]."""
    return np.argmax(np.asarray(x, dtype=np.float32).reshape(rows, cols), axis=1).astype(np.int32)


def argmax_by_cols(x, cols):
    a = np.asarray(x, dtype=np.float32).reshape(-1, cols)
    return np.argmax(a, axis=1).astype(np.int32)


def argmax_rc(x, rows, cols):
    return np.argmax(np.asarray(x, dtype=np.float32).reshape(rows, cols), axis=1).astype(np.int32)
