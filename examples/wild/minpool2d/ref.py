"""numpy references for the wild minpool2d kernels (no padding)."""
import numpy as np


def _minpool(x, planes, H, W, k, s):
    x = np.asarray(x, dtype=np.float32).reshape(planes, H, W)
    OH, OW = (H - k) // s + 1, (W - k) // s + 1
    wins = [x[:, i:i + s * (OH - 1) + 1:s, j:j + s * (OW - 1) + 1:s] for i in range(k) for j in range(k)]
    return np.min(np.stack(wins), axis=0).astype(np.float32)


def min_pool2d(inp, planes, H, W, k, s, OH, OW):
    return _minpool(inp, planes, H, W, k, s)


def minpool_rows(inp, H, W, k):
    planes = np.asarray(inp).size // (H * W)
    return _minpool(inp, planes, H, W, k, k)


def minpool_nchw_ks(x, N, C, H, W, k, s):
    """k x k min pool, stride s, no padding, NCHW float32."""
    a = np.asarray(x, dtype=np.float32).reshape(N, C, H, W)
    OH, OW = (H - k) // s + 1, (W - k) // s + 1
    wins = [a[:, :, i:i + s * (OH - 1) + 1:s, j:j + s * (OW - 1) + 1:s] for i in range(k) for j in range(k)]
    return np.min(np.stack(wins), axis=0).astype(np.float32)


def minpool_planes(x, P, H, W, k, s):
    """k x k min pool, stride s, no padding, [P][H][W] float32."""
    return _minpool(x, P, H, W, k, s)
