"""numpy references for the wild dense (fully connected) kernels."""
import numpy as np


def _linear(x, W, b, rows, in_f, out_f):
    x = np.asarray(x, dtype=np.float64).reshape(rows, in_f)
    W = np.asarray(W, dtype=np.float64).reshape(out_f, in_f)
    return np.einsum("bi,oi->bo", x, W) + np.asarray(b, dtype=np.float64).reshape(1, out_f)


def linear_relu(inp, weight, bias, B, C, OC, relu):
    y = _linear(inp, weight, bias, B, C, OC)
    if relu:
        y = np.maximum(y, 0.0)
    return y.astype(np.float32)


def dense(x, W, b, batch, in_f, out_f):
    return _linear(x, W, b, batch, in_f, out_f).astype(np.float32)


def dense_relu(x, W, b, batch, in_f, out_f):
    """relu(x W^T + b), W in [out_f][in_f] layout."""
    return np.maximum(_linear(x, W, b, batch, in_f, out_f), 0.0).astype(np.float32)


def dense_u8s8(x, W, bias, batch, in_f, out_f):
    """uint8 x [batch][in_f] . int8 W [out_f][in_f]^T + int32 bias, exact int32."""
    a = np.asarray(x, dtype=np.int64).reshape(batch, in_f)
    w = np.asarray(W, dtype=np.int64).reshape(out_f, in_f)
    return (np.einsum("bi,oi->bo", a, w) + np.asarray(bias, dtype=np.int64).reshape(1, out_f)).astype(np.int32)
