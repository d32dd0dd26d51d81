"""numpy references for the wild avgpool kernels (NHWC, no padding)."""
import numpy as np


def avgpool_nhwc_2x2(x, batch):
    x = np.asarray(x, dtype=np.float32)
    b, h, w, c = x.shape
    ho, wo = (h - 2) // 2 + 1, (w - 2) // 2 + 1
    v = x[:, :ho * 2, :wo * 2, :].astype(np.float64).reshape(b, ho, 2, wo, 2, c)
    return v.mean(axis=(2, 4)).astype(np.float32)
