"""numpy reference for the wild abs kernels: y = |x|."""
import numpy as np


def abs_ref(x, n):
    x = np.asarray(x).reshape(-1)[:n]
    return np.abs(x).astype(x.dtype)
