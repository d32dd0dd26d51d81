"""numpy reference for the wild gemv kernels: y = A x."""
import numpy as np


def gemv(A, x, rows, cols):
    a = np.asarray(A, dtype=np.float64).reshape(rows, cols)
    return np.einsum("rc,c->r", a, np.asarray(x, dtype=np.float64).reshape(cols)).astype(np.float32)  # no BLAS


def dot_i8(a, b, n):
    return np.array([np.dot(np.asarray(a, np.int64).reshape(n), np.asarray(b, np.int64).reshape(n))],
                    dtype=np.int32)
