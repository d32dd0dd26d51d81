"""numpy references for the wild self_attention kernels: O = softmax(Q K^T * scale) V."""
import numpy as np


def _attend(q, k, v, scale):
    s = np.einsum("id,jd->ij", q, k) * float(scale)
    s -= s.max(axis=1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    return np.einsum("ij,jd->id", p, v)


def attention_single(Q, K, V, S, D, scale):
    """Single head, Q/K/V [S][D] float32 (float64 inside)."""
    q, k, v = (np.asarray(t, dtype=np.float64).reshape(S, D) for t in (Q, K, V))
    return _attend(q, k, v, scale).astype(np.float32)


def attention_bhsd(Q, K, V, B, H, S, D, scale):
    """Batched multi-head, [B][H][S][D] layout (float64 inside)."""
    q, k, v = (np.asarray(t, dtype=np.float64).reshape(B * H, S, D) for t in (Q, K, V))
    out = np.stack([_attend(q[i], k[i], v[i], scale) for i in range(B * H)])
    return out.reshape(B, H, S, D).astype(np.float32)


def attention_causal_bhsd(Q, K, V, B, H, S, D, scale):
    """Causal (query i sees keys j <= i), [B][H][S][D]."""
    q, k, v = (np.asarray(t, dtype=np.float64).reshape(B * H, S, D) for t in (Q, K, V))
    mask = np.triu(np.ones((S, S), dtype=bool), 1)
    out = np.empty((B * H, S, D))
    for i in range(B * H):
        s = np.einsum("id,jd->ij", q[i], k[i]) * float(scale)
        s[mask] = -np.inf
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        out[i] = np.einsum("ij,jd->id", p, v[i])
    return out.reshape(B, H, S, D).astype(np.float32)


def attn_rowwise_d64(Q, K, V, BH, S, scale):
    """[BH][S][64] layout (HEAD_DIM fixed at 64 by the kernel)."""
    return attention_bhsd(Q, K, V, 1, BH, S, 64, scale).reshape(BH, S, 64)


def attn_query_group(Q, K, V, S, D, scale):
    BH = np.asarray(Q).size // (S * D)
    return attention_bhsd(Q, K, V, 1, BH, S, D, scale).reshape(BH, S, D)


def mha_heads(q, k, v, heads, seq, dim, scale):
    """[heads][seq][dim] layout, argument order of mha_rows_bang.mlu."""
    return attention_bhsd(q, k, v, 1, heads, seq, dim, scale).reshape(heads, seq, dim)


def mha_tokens(q, k, v, seq, heads, dim):
    """Token rows [seq][heads * dim] (heads side by side), scale 1 / sqrt(dim)."""
    def split(a):
        return np.asarray(a, np.float64).reshape(seq, heads, dim).transpose(1, 0, 2)
    o = attention_bhsd(split(q), split(k), split(v), 1, heads, seq, dim, 1.0 / np.sqrt(dim))
    return o.reshape(heads, seq, dim).transpose(1, 0, 2).reshape(seq, heads * dim).astype(np.float32)
