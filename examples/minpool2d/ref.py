"""numpy reference for the minpool2d examples.

Layout NHWC, no padding: input [N][H][W][C] -> output [N][Ho][Wo][C] with
Ho = (H - KH) // stride + 1 and Wo = (W - KW) // stride + 1; each output is the
minimum over the window.
"""
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def _out_hw(H, W, KH, KW, stride):
    return (H - KH) // stride + 1, (W - KW) // stride + 1


def minpool2d(input, N, H, W, C, KH, KW, stride):
    """Reference for every dialect's minpool2d kernel; float64 accumulation, float32 result [N, Ho, Wo, C]."""
    x = np.asarray(input, dtype=np.float64).reshape(N, H, W, C)
    win = sliding_window_view(x, (KH, KW), axis=(1, 2))        # [N, H-KH+1, W-KW+1, C, KH, KW]
    win = win[:, ::stride, ::stride]                            # keep every stride-th window
    return np.min(win, axis=(4, 5)).astype(np.float32)


def _minpool2d_loops(input, N, H, W, C, KH, KW, stride):
    """Second formulation: the plain loop nest, one output element at a time."""
    x = np.asarray(input, dtype=np.float64).reshape(N, H, W, C)
    Ho, Wo = _out_hw(H, W, KH, KW, stride)
    out = np.empty((N, Ho, Wo, C), dtype=np.float64)
    for n in range(N):
        for oh in range(Ho):
            for ow in range(Wo):
                for c in range(C):
                    acc = math.inf
                    for kh in range(KH):
                        for kw in range(KW):
                            v = x[n, oh * stride + kh, ow * stride + kw, c]
                            acc = min(acc, v)
                    out[n, oh, ow, c] = acc
    return out.astype(np.float32)


def minpool2d_selfcheck():
    """Cross-check the windowed reference against the loop nest on the spec-like shapes."""
    rng = np.random.default_rng(13)
    cases = [(1, 8, 8, 16, 2, 2, 2), (1, 9, 7, 3, 3, 3, 2), (2, 6, 11, 5, 2, 3, 1), (1, 5, 5, 2, 5, 5, 1)]
    for (N, H, W, C, KH, KW, s) in cases:
        x = (rng.standard_normal((N, H, W, C)) * 4).astype(np.float32)
        got = minpool2d(x, N, H, W, C, KH, KW, s)
        alt = _minpool2d_loops(x, N, H, W, C, KH, KW, s)
        Ho, Wo = _out_hw(H, W, KH, KW, s)
        if got.shape != (N, Ho, Wo, C):
            raise AssertionError(f"minpool2d: shape {got.shape} != {(N, Ho, Wo, C)}")
        if not np.allclose(got, alt, rtol=1e-6, atol=1e-6):
            raise AssertionError(f"minpool2d: window and loop formulations disagree for {(N, H, W, C, KH, KW, s)}")
