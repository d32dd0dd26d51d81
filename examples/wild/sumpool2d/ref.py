"""numpy references for the wild sum-pool kernels."""
import numpy as np


def rowsum(x, rows, cols):
    x = np.asarray(x, dtype=np.float32).reshape(rows, cols)
    return x.astype(np.float64).sum(axis=1).astype(np.float32)
