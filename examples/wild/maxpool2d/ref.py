"""numpy references for the wild maxpool2d kernels."""
import numpy as np


def maxpool2d_2x2(x, P, H, W):
    """2x2 window, stride 2, no padding (trailing odd row/column dropped)."""
    a = np.asarray(x, dtype=np.float32).reshape(P, H, W)
    OH, OW = H // 2, W // 2
    a = a[:, :2 * OH, :2 * OW].reshape(P, OH, 2, OW, 2)
    return a.max(axis=(2, 4)).astype(np.float32)


def maxpool3x3s2p1(x, planes, H, W, OH, OW):
    """3x3 window, stride 2, padding 1 (padding never wins), any dtype."""
    x = np.asarray(x)
    a = x.reshape(planes, H, W).astype(np.float64)
    ap = np.pad(a, ((0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    wins = [ap[:, i:i + 2 * (OH - 1) + 1:2, j:j + 2 * (OW - 1) + 1:2] for i in range(3) for j in range(3)]
    return np.max(np.stack(wins), axis=0).astype(x.dtype)


def maxpool_i8_nhwc(x, N, H, W, C):
    a = np.asarray(x, dtype=np.int8).reshape(N, H, W, C)
    OH, OW = H // 2, W // 2
    a = a[:, :2 * OH, :2 * OW, :].reshape(N, OH, 2, OW, 2, C)
    return a.max(axis=(2, 4)).astype(np.int8)


def maxpool_nhwc_3s2(x, N, H, W, C):
    """3x3 window, stride 2, no padding, NHWC float32."""
    a = np.asarray(x, dtype=np.float32).reshape(N, H, W, C)
    OH, OW = (H - 3) // 2 + 1, (W - 3) // 2 + 1
    wins = [a[:, i:i + 2 * (OH - 1) + 1:2, j:j + 2 * (OW - 1) + 1:2, :] for i in range(3) for j in range(3)]
    return np.max(np.stack(wins), axis=0).astype(np.float32)


def maxpool_nhwc_ks(x, N, H, W, C, k, s):
    """k x k window, stride s, no padding, NHWC float32."""
    a = np.asarray(x, dtype=np.float32).reshape(N, H, W, C)
    OH, OW = (H - k) // s + 1, (W - k) // s + 1
    wins = [a[:, i:i + s * (OH - 1) + 1:s, j:j + s * (OW - 1) + 1:s, :] for i in range(k) for j in range(k)]
    return np.max(np.stack(wins), axis=0).astype(np.float32)
