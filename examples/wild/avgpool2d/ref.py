"""numpy references for the wild avgpool kernels (NHWC, no padding)."""
import numpy as np


def avgpool_nhwc_2x2(x, batch):
    x = np.asarray(x, dtype=np.float32)
    b, h, w, c = x.shape
    ho, wo = (h - 2) // 2 + 1, (w - 2) // 2 + 1
    v = x[:, :ho * 2, :wo * 2, :].astype(np.float64).reshape(b, ho, 2, wo, 2, c)
    return v.mean(axis=(2, 4)).astype(np.float32)


def _pool_nchw(x, planes, H, W, kh, kw, sh, sw, how):
    """Window pooling over [planes][H][W], no padding; how: np.mean/np.max/np.min/np.sum."""
    x = np.asarray(x).reshape(planes, H, W)
    OH, OW = (H - kh) // sh + 1, (W - kw) // sw + 1
    wins = np.stack([x[:, i:i + sh * (OH - 1) + 1:sh, j:j + sw * (OW - 1) + 1:sw]
                     for i in range(kh) for j in range(kw)], axis=0)
    return how(wins.astype(np.float64), axis=0)


def avg_pool2d_nchw(inp, NC, H, W, OH, OW, kh, kw, sh, sw):
    return _pool_nchw(inp, NC, H, W, kh, kw, sh, sw, np.mean).astype(np.float32)


def avgpool_2x2(inp, H, W):
    planes = np.asarray(inp).size // (H * W)
    return _pool_nchw(inp, planes, H, W, 2, 2, 2, 2, np.mean).astype(np.float32)


def avgpool_flat(x, N, C, H, W, OH, OW, K, S):
    """NCHW average pooling, square window K, stride S, no padding."""
    return _pool_nchw(x, N * C, H, W, K, K, S, S, np.mean).astype(np.float32).reshape(N, C, OH, OW)


def avgpool_nhwc_2x2_f16(x, N, H, W, C):
    """2x2 / stride 2 mean, NHWC float16 (float64 inside, rounded once)."""
    a = np.asarray(x, dtype=np.float16).reshape(N, H, W, C).astype(np.float64)
    ho, wo = H // 2, W // 2
    v = a[:, :2 * ho, :2 * wo, :].reshape(N, ho, 2, wo, 2, C)
    return v.mean(axis=(2, 4)).astype(np.float16)


def avgpool_nchw_pad(x, P, H, W, k, s, pad, OH, OW):
    """k x k average pool with zero padding, divisor always k*k (count_include_pad), [P][H][W]."""
    a = np.pad(np.asarray(x, dtype=np.float64).reshape(P, H, W), ((0, 0), (pad, pad), (pad, pad)))
    wins = [a[:, i:i + s * (OH - 1) + 1:s, j:j + s * (OW - 1) + 1:s] for i in range(k) for j in range(k)]
    return (np.sum(np.stack(wins), axis=0) / (k * k)).astype(np.float32)
