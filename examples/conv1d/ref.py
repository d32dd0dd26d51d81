"""Reference for conv1d: valid (unpadded) 1-D convolution, batched, with stride.

input [N][Cin][L], weight [Cout][Cin][KW] -> output [N][Cout][Lo], Lo = (L - KW) // stride + 1.
As in deep-learning frameworks this is a cross-correlation (the filter is not flipped):
    output[n][co][lo] = sum_{ci, k} input[n][ci][lo*stride + k] * weight[co][ci][k]
"""
import numpy as np


def conv1d(input, weight, N, Cin, L, Cout, KW, stride):
    """Loop-over-taps formulation, float64 accumulation, float32 result."""
    x = np.asarray(input, dtype=np.float64).reshape(N, Cin, L)
    w = np.asarray(weight, dtype=np.float64).reshape(Cout, Cin, KW)
    Lo = (L - KW) // stride + 1
    out = np.zeros((N, Cout, Lo), dtype=np.float64)
    last = (Lo - 1) * stride + 1          # end (exclusive) of the strided slice for tap 0
    for k in range(KW):
        # taps[n][ci][lo] = x[n][ci][lo*stride + k]
        taps = x[:, :, k:k + last:stride]
        out += np.einsum("ncl,oc->nol", taps, w[:, :, k])
    return out.astype(np.float32)


def _conv1d_loops(x, w, stride):
    """Second formulation: plain scalar loops (slow; small data only)."""
    N, Cin, L = x.shape
    Cout, _, KW = w.shape
    Lo = (L - KW) // stride + 1
    out = np.zeros((N, Cout, Lo), dtype=np.float64)
    for n in range(N):
        for co in range(Cout):
            for lo in range(Lo):
                s = 0.0
                for ci in range(Cin):
                    for k in range(KW):
                        s += float(x[n, ci, lo * stride + k]) * float(w[co, ci, k])
                out[n, co, lo] = s
    return out


def conv1d_selfcheck():
    """Cross-check conv1d() against explicit loops on small random cases."""
    rng = np.random.default_rng(1234)
    for (N, Cin, L, Cout, KW, stride) in [(1, 3, 9, 2, 3, 1), (2, 2, 12, 3, 4, 3), (1, 1, 5, 1, 5, 2)]:
        x = rng.standard_normal((N, Cin, L)).astype(np.float32)
        w = rng.standard_normal((Cout, Cin, KW)).astype(np.float32)
        got = conv1d(x, w, N, Cin, L, Cout, KW, stride)
        want = _conv1d_loops(x, w, stride)
        assert got.shape == want.shape, (got.shape, want.shape)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5), np.abs(got - want).max()


if __name__ == "__main__":
    conv1d_selfcheck()
    print("conv1d reference self-check passed")
