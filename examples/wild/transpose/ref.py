"""numpy references for the wild transpose kernels."""
import numpy as np


def transpose2d(inp, rows, cols):
    return np.ascontiguousarray(np.asarray(inp, dtype=np.float32).reshape(rows, cols).T)


def nchw_to_nhwc(src, N, C, H, W):
    return np.ascontiguousarray(np.asarray(src, dtype=np.float32).reshape(N, C, H, W).transpose(0, 2, 3, 1))
