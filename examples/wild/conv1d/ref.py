"""numpy references for the wild conv1d kernels (cross-correlation, [N][C][L] x [OC][C][K])."""
import numpy as np


def conv1d(x, w, N, C, L, OC, K, stride=1, pad=0):
    x = np.asarray(x, dtype=np.float64).reshape(N, C, L)
    w = np.asarray(w, dtype=np.float64).reshape(OC, C, K)
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    OL = (L + 2 * pad - K) // stride + 1
    y = np.zeros((N, OC, OL))
    for k in range(K):
        cols = xp[:, :, k:k + stride * (OL - 1) + 1:stride]          # [N][C][OL]
        y += np.einsum("ncl,oc->nol", cols, w[:, :, k])
    return y.astype(np.float32)


def conv1d_ncl(x, w, N, C, L, OC, K, stride, pad, OL):
    return conv1d(x, w, N, C, L, OC, K, stride, pad)


def conv1d_row(x, w, C, L, OC, K):
    N = np.asarray(x).size // (C * L)
    return conv1d(x, w, N, C, L, OC, K)
