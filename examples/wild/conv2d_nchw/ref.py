"""numpy references for the wild NCHW conv2d kernels (cross-correlation, zero padding)."""
import numpy as np


def conv2d_nchw(x, w, N, C, H, W, K, R, S, stride=1, pad=0):
    x = np.asarray(x, dtype=np.float64).reshape(N, C, H, W)
    w = np.asarray(w, dtype=np.float64).reshape(K, C, R, S)
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    P = (H + 2 * pad - R) // stride + 1
    Q = (W + 2 * pad - S) // stride + 1
    y = np.zeros((N, K, P, Q))
    for r in range(R):
        for s in range(S):
            win = xp[:, :, r:r + stride * (P - 1) + 1:stride, s:s + stride * (Q - 1) + 1:stride]
            y += np.einsum("nchw,kc->nkhw", win, w[:, :, r, s])
    return y.astype(np.float32)


def conv2d_3x3(inp, filt, N, C, H, W, K, P, Q, stride, pad):
    return conv2d_nchw(inp, filt, N, C, H, W, K, 3, 3, stride, pad)


def conv2d_tile(inp, wt, C, H, W, K, R, S):
    N = np.asarray(inp).size // (C * H * W)
    return conv2d_nchw(inp, wt, N, C, H, W, K, R, S)
