"""numpy reference for the wild sin kernels (float32 and float16: computed in float32)."""
import numpy as np


def sin_ref(x, n):
    x = np.asarray(x).reshape(-1)[:n]
    return np.sin(x.astype(np.float32)).astype(x.dtype)
