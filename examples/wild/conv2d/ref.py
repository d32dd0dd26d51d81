"""numpy references for the wild conv2d kernels."""
import numpy as np


def conv2d_nchw(inp, weight, N, C, H, W, K, R, S):
    """Valid (no padding), stride-1 cross-correlation: out[n][k][oh][ow]."""
    x = np.asarray(inp, dtype=np.float64).reshape(N, C, H, W)
    w = np.asarray(weight, dtype=np.float64).reshape(K, C, R, S)
    OH, OW = H - R + 1, W - S + 1
    out = np.zeros((N, K, OH, OW))
    for r in range(R):
        for s in range(S):
            patch = x[:, :, r:r + OH, s:s + OW]            # N C OH OW
            out += np.einsum("nchw,kc->nkhw", patch, w[:, :, r, s])
    return out.astype(np.float32)
