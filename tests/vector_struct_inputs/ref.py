"""numpy reference of the vector-struct test kernels: y = a + b elementwise in float32."""
import numpy as np


def add(a, b, n):
    return (np.asarray(a, dtype=np.float32)[:n] + np.asarray(b, dtype=np.float32)[:n]).astype(np.float32)
