"""numpy references for the wild layernorm kernels (normalise the last axis, eps = 1e-5)."""
import numpy as np


def layernorm_rows(x, gamma, beta, rows, cols):
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    mean = a.mean(axis=1, keepdims=True)
    var = ((a - mean) ** 2).mean(axis=1, keepdims=True)
    y = (a - mean) / np.sqrt(var + 1e-5) * np.asarray(gamma, np.float64) + np.asarray(beta, np.float64)
    return y.astype(np.float32)


def layernorm_with_stats(x, gamma, beta, rows, cols):
    """layernorm_rows plus the per-row mean and 1/sqrt(var + eps) it keeps."""
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    mean = a.mean(axis=1)
    var = ((a - mean[:, None]) ** 2).mean(axis=1)
    return (layernorm_rows(x, gamma, beta, rows, cols), mean.astype(np.float32),
            (1.0 / np.sqrt(var + 1e-5)).astype(np.float32))


def _ln(x, w, b, rows, cols, eps):
    a = np.asarray(x, dtype=np.float64).reshape(rows, cols)
    m = a.mean(axis=1, keepdims=True)
    v = ((a - m) ** 2).mean(axis=1, keepdims=True)
    return (a - m) / np.sqrt(v + eps) * np.asarray(w, dtype=np.float64) + np.asarray(b, dtype=np.float64)


def ln_stats(x, C):
    """Per-row mean and 1/sqrt(var + 1e-5) of x[N][C] (N from the array size)."""
    a = np.asarray(x, dtype=np.float64).reshape(-1, C)
    m = a.mean(axis=1)
    v = ((a - m[:, None]) ** 2).mean(axis=1)
    return m.astype(np.float32), (1.0 / np.sqrt(v + 1e-5)).astype(np.float32)


def layernorm_f16_nc(inp, weight, bias, N, C):
    return _ln(inp, weight, bias, N, C, 1e-5).astype(np.float16)


def layernorm_rows_eps(x, gamma, beta, cols, eps):
    rows = np.asarray(x).size // cols
    return _ln(x, gamma, beta, rows, cols, float(eps)).astype(np.float32)


def layernorm_out_mean_rstd(inp, weight, bias, N, C):
    """y, mean, rstd of layer norm over rows of inp[N][C], eps 1e-5 (llm.c's forward)."""
    y = _ln(inp, weight, bias, N, C, 1e-5).astype(np.float32)
    m, r = ln_stats(inp, C)
    return y, m, r
