"""numpy references for the wild NHWC convolution kernels (valid, stride 1)."""
import numpy as np


def conv_nhwc_valid(x, w, batch):
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    w = np.asarray(w, dtype=np.float32).astype(np.float64)      # [Cout][kh][kw][Cin]
    b, h, wd, cin = x.shape
    cout, kh, kw, _ = w.shape
    ho, wo = h - kh + 1, wd - kw + 1
    out = np.zeros((b, ho, wo, cout))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("bhwc,oc->bhwo", x[:, i:i + ho, j:j + wo, :], w[:, i, j, :])
    return out.astype(np.float32)
