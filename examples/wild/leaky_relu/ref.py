"""numpy references for the wild leaky_relu kernels."""
import numpy as np


def leaky_relu_2d(x, y, rows, cols, pitch, slope):
    """y is inout: columns beyond cols (the pitch padding) keep their input values."""
    x = np.asarray(x, dtype=np.float32).reshape(rows, pitch)
    out = np.array(y, dtype=np.float32).reshape(rows, pitch)
    v = x[:, :cols]
    out[:, :cols] = np.where(v >= 0, v, v * np.float32(slope))
    return out


def leaky_relu_inplace(x, n):
    x = np.asarray(x, dtype=np.float32).reshape(-1)[:n]
    return np.where(x < 0, x * np.float32(0.01), x).astype(np.float32)


def leaky_relu_slope_n(x, slope, n):
    """y = x if x >= 0 else slope * x (float32), flat n elements; slope a scalar argument."""
    x = np.asarray(x, dtype=np.float32).reshape(-1)[:n]
    return np.where(x >= 0, x, x * np.float32(slope)).astype(np.float32)
