"""References for conv2d_nhwc: valid 2-D convolution (cross-correlation), channels-last.

input [N][H][W][Cin], weight [Cout][KH][KW][Cin] -> output [N][Ho][Wo][Cout],
Ho = (H - KH) // stride + 1, Wo = (W - KW) // stride + 1.

conv2d_nhwc       float32 in / float32 out (float64 accumulation).
conv2d_nhwc_vnni  uint8 input, int8 weight, int32 output: the exact integer sum
                  sum_{kh,kw,ci} int(input) * int(weight). The spec's input ranges keep it
                  inside int32, so the kernel's wrapping int32 adds never overflow.
"""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def _windows_nhwc(x, KH, KW, stride):
    # win[n][y][x][c][kh][kw] = x[n][y*stride+kh][x*stride+kw][c]
    return sliding_window_view(x, (KH, KW), axis=(1, 2))[:, ::stride, ::stride]


def conv2d_nhwc(input, weight, N, H, W, Cin, Cout, KH, KW, stride):
    x = np.asarray(input, dtype=np.float64).reshape(N, H, W, Cin)
    w = np.asarray(weight, dtype=np.float64).reshape(Cout, KH, KW, Cin)
    out = np.einsum("nyxchw,ohwc->nyxo", _windows_nhwc(x, KH, KW, stride), w)
    return out.astype(np.float32)


def conv2d_nhwc_vnni(input, weight, N, H, W, Cin, Cout, KH, KW, stride):
    x = np.asarray(input).reshape(N, H, W, Cin)
    w = np.asarray(weight).reshape(Cout, KH, KW, Cin)
    assert x.dtype == np.uint8 and w.dtype == np.int8, (x.dtype, w.dtype)
    out = np.einsum("nyxchw,ohwc->nyxo", _windows_nhwc(x.astype(np.int64), KH, KW, stride),
                    w.astype(np.int64))
    info = np.iinfo(np.int32)
    assert out.min(initial=0) >= info.min and out.max(initial=0) <= info.max, "int32 overflow"
    return out.astype(np.int32)


def _conv2d_nhwc_loops(x, w, stride):
    """Second formulation: explicit output loops, dot product over (kh, kw, ci)."""
    N, H, W, Cin = x.shape
    Cout, KH, KW, _ = w.shape
    Ho = (H - KH) // stride + 1
    Wo = (W - KW) // stride + 1
    out = np.zeros((N, Ho, Wo, Cout), dtype=np.result_type(x.dtype, w.dtype))
    for n in range(N):
        for ho in range(Ho):
            for wo in range(Wo):
                patch = x[n, ho * stride:ho * stride + KH, wo * stride:wo * stride + KW, :]
                for co in range(Cout):
                    out[n, ho, wo, co] = np.sum(patch * w[co])
    return out


def conv2d_nhwc_selfcheck():
    rng = np.random.default_rng(7)
    for (N, H, W, Cin, Cout, KH, KW, s) in [(1, 6, 5, 3, 4, 3, 3, 1), (2, 9, 7, 2, 3, 2, 3, 2),
                                            (1, 5, 5, 1, 1, 5, 5, 1)]:
        x = rng.standard_normal((N, H, W, Cin)).astype(np.float32)
        w = rng.standard_normal((Cout, KH, KW, Cin)).astype(np.float32)
        got = conv2d_nhwc(x, w, N, H, W, Cin, Cout, KH, KW, s)
        want = _conv2d_nhwc_loops(x.astype(np.float64), w.astype(np.float64), s)
        assert got.shape == want.shape, (got.shape, want.shape)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5), np.abs(got - want).max()


def conv2d_nhwc_vnni_selfcheck():
    rng = np.random.default_rng(8)
    for (N, H, W, Cin, Cout, KH, KW, s) in [(1, 6, 5, 5, 3, 3, 3, 1), (2, 7, 8, 67, 2, 2, 3, 2)]:
        x = rng.integers(0, 256, (N, H, W, Cin)).astype(np.uint8)
        w = rng.integers(-128, 128, (Cout, KH, KW, Cin)).astype(np.int8)
        got = conv2d_nhwc_vnni(x, w, N, H, W, Cin, Cout, KH, KW, s)
        want = _conv2d_nhwc_loops(x.astype(np.int64), w.astype(np.int64), s)
        assert got.dtype == np.int32
        assert np.array_equal(got, want), "vnni reference mismatch"
        # a uint8 x int8 mix-up (treating input as signed) must be detected by this check
        assert not np.array_equal(got, _conv2d_nhwc_loops(x.view(np.int8).astype(np.int64),
                                                          w.astype(np.int64), s))


if __name__ == "__main__":
    conv2d_nhwc_selfcheck()
    conv2d_nhwc_vnni_selfcheck()
    print("conv2d_nhwc reference self-checks passed")
