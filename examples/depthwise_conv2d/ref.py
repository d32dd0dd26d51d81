"""Reference for depthwise_conv2d (NCHW): every channel is convolved with its own filter.

input [N][C][H][W], weight [C][KH][KW] -> output [N][C][Ho][Wo],
output[n][c][y][x] = sum_{kh,kw} input[n][c][y*stride+kh][x*stride+kw] * weight[c][kh][kw]
(valid convolution, no padding, channel multiplier 1).
"""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def depthwise_conv2d(input, weight, N, C, H, W, KH, KW, stride):
    x = np.asarray(input, dtype=np.float64).reshape(N, C, H, W)
    w = np.asarray(weight, dtype=np.float64).reshape(C, KH, KW)
    win = sliding_window_view(x, (KH, KW), axis=(2, 3))[:, :, ::stride, ::stride]
    return np.einsum("ncyxhw,chw->ncyx", win, w).astype(np.float32)


def _depthwise_loops(x, w, stride):
    N, C, H, W = x.shape
    _, KH, KW = w.shape
    Ho = (H - KH) // stride + 1
    Wo = (W - KW) // stride + 1
    out = np.zeros((N, C, Ho, Wo), dtype=np.float64)
    for n in range(N):
        for c in range(C):
            for y in range(Ho):
                for xo in range(Wo):
                    s = 0.0
                    for kh in range(KH):
                        for kw in range(KW):
                            s += float(x[n, c, y * stride + kh, xo * stride + kw]) * float(w[c, kh, kw])
                    out[n, c, y, xo] = s
    return out


def depthwise_conv2d_selfcheck():
    rng = np.random.default_rng(5)
    for (N, C, H, W, KH, KW, s) in [(1, 2, 6, 5, 3, 3, 1), (2, 3, 9, 7, 3, 2, 2), (1, 1, 3, 3, 3, 3, 4)]:
        x = rng.standard_normal((N, C, H, W)).astype(np.float32)
        w = rng.standard_normal((C, KH, KW)).astype(np.float32)
        got = depthwise_conv2d(x, w, N, C, H, W, KH, KW, s)
        want = _depthwise_loops(x, w, s)
        assert got.shape == want.shape, (got.shape, want.shape)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5), np.abs(got - want).max()


if __name__ == "__main__":
    depthwise_conv2d_selfcheck()
    print("depthwise_conv2d reference self-check passed")
