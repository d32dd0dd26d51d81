"""Reference for conv2d_nchw: valid 2-D convolution (cross-correlation) in NCHW layout.

input [N][Cin][H][W], weight [Cout][Cin][KH][KW] -> output [N][Cout][Ho][Wo],
Ho = (H - KH) // stride + 1, Wo = (W - KW) // stride + 1, same stride on both axes.
"""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def conv2d_nchw(input, weight, N, Cin, H, W, Cout, KH, KW, stride):
    """Window-view + einsum formulation, float64 accumulation, float32 result."""
    x = np.asarray(input, dtype=np.float64).reshape(N, Cin, H, W)
    w = np.asarray(weight, dtype=np.float64).reshape(Cout, Cin, KH, KW)
    # win[n][ci][y][x][kh][kw] = x[n][ci][y+kh][x+kw]; keep every stride-th window start
    win = sliding_window_view(x, (KH, KW), axis=(2, 3))[:, :, ::stride, ::stride]
    out = np.einsum("ncyxhw,ochw->noyx", win, w)
    return out.astype(np.float32)


def _conv2d_nchw_loops(x, w, stride):
    """Second formulation: accumulate one filter tap at a time with strided slices."""
    N, Cin, H, W = x.shape
    Cout, _, KH, KW = w.shape
    Ho = (H - KH) // stride + 1
    Wo = (W - KW) // stride + 1
    out = np.zeros((N, Cout, Ho, Wo), dtype=np.float64)
    for n in range(N):
        for co in range(Cout):
            for ci in range(Cin):
                for kh in range(KH):
                    for kw in range(KW):
                        rows = x[n, ci, kh:kh + (Ho - 1) * stride + 1:stride,
                                 kw:kw + (Wo - 1) * stride + 1:stride]
                        out[n, co] += rows.astype(np.float64) * float(w[co, ci, kh, kw])
    return out


def conv2d_nchw_selfcheck():
    """Cross-check conv2d_nchw() against the tap-by-tap formulation."""
    rng = np.random.default_rng(99)
    for (N, Cin, H, W, Cout, KH, KW, s) in [(1, 2, 6, 5, 3, 3, 3, 1), (2, 3, 9, 7, 2, 3, 2, 2),
                                            (1, 1, 4, 4, 1, 4, 4, 3)]:
        x = rng.standard_normal((N, Cin, H, W)).astype(np.float32)
        w = rng.standard_normal((Cout, Cin, KH, KW)).astype(np.float32)
        got = conv2d_nchw(x, w, N, Cin, H, W, Cout, KH, KW, s)
        want = _conv2d_nchw_loops(x, w, s)
        assert got.shape == want.shape, (got.shape, want.shape)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5), np.abs(got - want).max()


if __name__ == "__main__":
    conv2d_nchw_selfcheck()
    print("conv2d_nchw reference self-check passed")
