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


def conv_nhwc_hwio_same(x, w, H, W, C, K, R, S, npix):
    """NHWC input, HWIO weights [R][S][C][K], stride 1, zero padding R//2, S//2 (output H x W)."""
    N = npix // (H * W)
    x = np.asarray(x, dtype=np.float64).reshape(N, H, W, C)
    w = np.asarray(w, dtype=np.float64).reshape(R, S, C, K)
    ph, pw = R // 2, S // 2
    xp = np.pad(x, ((0, 0), (ph, R - 1 - ph), (pw, S - 1 - pw), (0, 0)))
    y = np.zeros((N, H, W, K))
    for r in range(R):
        for s in range(S):
            y += np.einsum("nhwc,ck->nhwk", xp[:, r:r + H, s:s + W, :], w[r, s])
    return y.astype(np.float32)


def qconv_nhwc(x, w, N, H, W, C, K, R, S, mult, shift):
    """int8 NHWC x int8 OHWI [K][R][S][C] -> int32 acc -> (acc * mult) >> shift, saturated to int8."""
    x = np.asarray(x, dtype=np.int64).reshape(N, H, W, C)
    w = np.asarray(w, dtype=np.int64).reshape(K, R, S, C)
    P, Q = H - R + 1, W - S + 1
    acc = np.zeros((N, P, Q, K), dtype=np.int64)
    for r in range(R):
        for s in range(S):
            acc += np.einsum("npqc,kc->npqk", x[:, r:r + P, s:s + Q, :], w[:, r, s, :])
    return np.clip((acc * int(mult)) >> int(shift), -128, 127).astype(np.int8)


def conv_nhwc_strided(x, w, N, H, W, Ci, Co, KH, KW, sh, sw):
    """Valid NHWC convolution with strides: x [N][H][W][Ci], w [Co][KH][KW][Ci] -> [N][Ho][Wo][Co]."""
    x = np.asarray(x, dtype=np.float64).reshape(N, H, W, Ci)
    w = np.asarray(w, dtype=np.float64).reshape(Co, KH, KW, Ci)
    Ho, Wo = (H - KH) // sh + 1, (W - KW) // sw + 1
    out = np.zeros((N, Ho, Wo, Co))
    for i in range(KH):
        for j in range(KW):
            patch = x[:, i:i + sh * (Ho - 1) + 1:sh, j:j + sw * (Wo - 1) + 1:sw, :]
            out += np.einsum("nhwc,oc->nhwo", patch, w[:, i, j, :])
    return out.astype(np.float32)
