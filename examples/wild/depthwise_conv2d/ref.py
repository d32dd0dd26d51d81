"""numpy references for the wild depthwise conv2d kernels."""
import numpy as np


def dwconv3x3_nchw(x, k3, C, H, W):
    """NCHW, one 3x3 filter per channel (k3: [C][3][3]), stride 1, zero padding 1."""
    x = np.asarray(x, dtype=np.float64).reshape(-1, C, H, W)
    f = np.asarray(k3, dtype=np.float64).reshape(C, 3, 3)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros_like(x)
    for i in range(3):
        for j in range(3):
            y += xp[:, :, i:i + H, j:j + W] * f[:, i, j].reshape(1, C, 1, 1)
    return y.astype(np.float32)


def dw_nhwc(x, w, N, H, W, C, M, R, S, stride, pad, OH, OW):
    """NHWC with channel multiplier M: output channel c*M+m uses input channel c; w: [R][S][C*M]."""
    x = np.asarray(x, dtype=np.float64).reshape(N, H, W, C)
    w = np.asarray(w, dtype=np.float64).reshape(R, S, C * M)
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    xr = np.repeat(xp, M, axis=3)                      # channel c*M+m <- c
    y = np.zeros((N, OH, OW, C * M))
    for r in range(R):
        for s in range(S):
            y += xr[:, r:r + stride * (OH - 1) + 1:stride, s:s + stride * (OW - 1) + 1:stride, :] * w[r, s]
    return y.astype(np.float32)


def dwconv_nhwc_valid(x, w, N, H, W, C, KH, KW):
    """Depthwise conv, NHWC x [N][H][W][C], w [KH][KW][C], valid, stride 1 -> [N][OH][OW][C]."""
    x = np.asarray(x, dtype=np.float64).reshape(N, H, W, C)
    w = np.asarray(w, dtype=np.float64).reshape(KH, KW, C)
    OH, OW = H - KH + 1, W - KW + 1
    out = np.zeros((N, OH, OW, C))
    for i in range(KH):
        for j in range(KW):
            out += x[:, i:i + OH, j:j + OW, :] * w[i, j]
    return out.astype(np.float32)
