"""numpy references for the self_attention examples.

self_attention(Q, K, V, S, D, scale) -> O      Q, K, V, O: [S][D] float32
    O = softmax(Q K^T * scale) V    (softmax over the key axis, single head)
self_attention_mh(Q, K, V, S, H, D, scale) -> O Q, K, V, O: [S][H][D] (heads interleaved)
    O[:, h, :] = self_attention(Q[:, h, :], K[:, h, :], V[:, h, :]) for every head h.
float64 inside, float32 out.
"""
import numpy as np


def _attend(q, k, v, scale):
    s = (q @ k.T) * float(scale)
    s -= s.max(axis=1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    return p @ v


def self_attention(Q, K, V, S, D, scale):
    q = np.asarray(Q, dtype=np.float64).reshape(S, D)
    k = np.asarray(K, dtype=np.float64).reshape(S, D)
    v = np.asarray(V, dtype=np.float64).reshape(S, D)
    return _attend(q, k, v, scale).astype(np.float32)


def self_attention_mh(Q, K, V, S, H, D, scale):
    q = np.asarray(Q, dtype=np.float64).reshape(S, H, D)
    k = np.asarray(K, dtype=np.float64).reshape(S, H, D)
    v = np.asarray(V, dtype=np.float64).reshape(S, H, D)
    o = np.empty((S, H, D))
    for h in range(H):
        o[:, h, :] = _attend(q[:, h, :], k[:, h, :], v[:, h, :], scale)
    return o.astype(np.float32)


def _attention_loops(q, k, v, scale):
    """Second formulation: one query at a time with an online (streaming) softmax."""
    S, D = q.shape
    out = np.empty((S, D))
    for i in range(S):
        m = -np.inf
        l = 0.0
        acc = np.zeros(D)
        for j in range(S):
            s = float(np.dot(q[i], k[j])) * scale
            m_new = max(m, s)
            corr = np.exp(m - m_new)
            p = np.exp(s - m_new)
            l = l * corr + p
            acc = acc * corr + p * v[j]
            m = m_new
        out[i] = acc / l
    return out


def self_attention_selfcheck():
    rng = np.random.default_rng(3)
    for S, D in [(5, 4), (19, 13), (1, 3)]:
        Q, K, V = (rng.uniform(-2, 2, size=(S, D)).astype(np.float32) for _ in range(3))
        scale = 1.0 / np.sqrt(D)
        a = self_attention(Q, K, V, S, D, scale)
        b = _attention_loops(Q.astype(np.float64), K.astype(np.float64), V.astype(np.float64), scale)
        assert np.allclose(a, b, rtol=1e-5, atol=1e-6), (S, D)
    return True


def self_attention_mh_selfcheck():
    rng = np.random.default_rng(4)
    for S, H, D in [(6, 2, 4), (11, 3, 7)]:
        Q, K, V = (rng.uniform(-2, 2, size=(S, H, D)).astype(np.float32) for _ in range(3))
        a = self_attention_mh(Q, K, V, S, H, D, 0.3)
        for h in range(H):
            b = _attention_loops(*(t[:, h, :].astype(np.float64) for t in (Q, K, V)), 0.3)
            assert np.allclose(a[:, h, :], b, rtol=1e-5, atol=1e-6), (S, H, D, h)
    return True


if __name__ == "__main__":
    self_attention_selfcheck()
    self_attention_mh_selfcheck()
    print("self_attention refs ok")
