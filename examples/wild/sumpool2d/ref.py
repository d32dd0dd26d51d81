"""numpy references for the wild sum-pool kernels."""
import numpy as np


def rowsum(x, rows, cols):
    x = np.asarray(x, dtype=np.float32).reshape(rows, cols)
    return x.astype(np.float64).sum(axis=1).astype(np.float32)


def sumpool_kxk(x, H, W, k):
    """NCHW planes, k x k window, stride k, no padding."""
    x = np.asarray(x, dtype=np.float64)
    planes = x.size // (H * W)
    OH, OW = H // k, W // k
    a = x.reshape(planes, H, W)[:, :OH * k, :OW * k].reshape(planes, OH, k, OW, k)
    return a.sum(axis=(2, 4)).astype(np.float32)


def sumpool3_nhwc_same(x, N, H, W, C):
    """NHWC, 3x3 window, stride 1, zero padding 1."""
    a = np.asarray(x, dtype=np.float64).reshape(N, H, W, C)
    ap = np.pad(a, ((0, 0), (1, 1), (1, 1), (0, 0)))
    y = np.zeros_like(a)
    for i in range(3):
        for j in range(3):
            y += ap[:, i:i + H, j:j + W, :]
    return y.astype(np.float32)


def sumpool_nhwc_2x2s1(x, N, H, W, C):
    """2x2 window, stride 1, no padding, NHWC float32 sums."""
    a = np.asarray(x, dtype=np.float64).reshape(N, H, W, C)
    return (a[:, :-1, :-1] + a[:, 1:, :-1] + a[:, :-1, 1:] + a[:, 1:, 1:]).astype(np.float32)
