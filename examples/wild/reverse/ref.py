"""numpy reference for the wild row-reversal kernels."""
import numpy as np


def reverse_rows(x, rows, cols):
    return np.ascontiguousarray(np.asarray(x).reshape(rows, cols)[:, ::-1])
