"""numpy references for the wild batch-norm (inference) kernels."""
import numpy as np


def batchnorm_nchw(x, gamma, beta, mean, var, N, C, HW, eps):
    """y = (x - mean) / sqrt(var + eps) * gamma + beta per channel, x [N][C][HW]."""
    x = np.asarray(x, dtype=np.float64).reshape(N, C, HW)
    g, b, m, v = (np.asarray(t, dtype=np.float64).reshape(1, C, 1) for t in (gamma, beta, mean, var))
    return ((x - m) / np.sqrt(v + float(eps)) * g + b).astype(np.float32)


def batchnorm_nhwc(x, gamma, beta, mean, var, NHW, C, eps):
    """Same, channels last: x [NHW][C]."""
    x = np.asarray(x, dtype=np.float64).reshape(NHW, C)
    g, b, m, v = (np.asarray(t, dtype=np.float64).reshape(1, C) for t in (gamma, beta, mean, var))
    return ((x - m) / np.sqrt(v + float(eps)) * g + b).astype(np.float32)


def bn_infer_nchw(x, mean, var, gamma, beta, total, C, HW, eps):
    a = np.asarray(x, dtype=np.float64).reshape(-1, C, HW)
    sh = (1, C, 1)
    m, v = np.asarray(mean, np.float64).reshape(sh), np.asarray(var, np.float64).reshape(sh)
    g, b = np.asarray(gamma, np.float64).reshape(sh), np.asarray(beta, np.float64).reshape(sh)
    return ((a - m) / np.sqrt(v + float(eps)) * g + b).astype(np.float32)


def bn_apply_nhwc(x, scale, shift, total, C):
    a = np.asarray(x, dtype=np.float64).reshape(-1, C)
    return (a * np.asarray(scale, np.float64) + np.asarray(shift, np.float64)).astype(np.float32)
