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


def sumpool_planes(x, P, H, W, k, s):
    """k x k sum pool, stride s, no padding, [P][H][W] (float64 inside)."""
    a = np.asarray(x, dtype=np.float64).reshape(P, H, W)
    OH, OW = (H - k) // s + 1, (W - k) // s + 1
    wins = [a[:, i:i + s * (OH - 1) + 1:s, j:j + s * (OW - 1) + 1:s] for i in range(k) for j in range(k)]
    return np.sum(np.stack(wins), axis=0).astype(np.float32)
