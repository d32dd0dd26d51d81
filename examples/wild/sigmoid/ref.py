"""numpy references for the wild sigmoid kernels."""
import numpy as np


def sigmoid(x, n):
    x = np.asarray(x)
    a = x.astype(np.float64).reshape(-1)[:n]
    return (1.0 / (1.0 + np.exp(-a))).astype(x.dtype)


def sigmoid_rows(x, rows, cols):
    return sigmoid(x, rows * cols).reshape(rows, cols)
