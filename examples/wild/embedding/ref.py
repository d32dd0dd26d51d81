"""numpy references for the wild embedding (gather) kernels."""
import numpy as np


def embedding_lookup(ids, table, tokens, vocab, dim):
    """out[t] = table[ids[t]]; ids outside [0, vocab) give a zero row."""
    ids = np.asarray(ids).reshape(-1)[:tokens].astype(np.int64)
    table = np.asarray(table, dtype=np.float32).reshape(vocab, dim)
    ok = (ids >= 0) & (ids < vocab)
    out = np.zeros((tokens, dim), dtype=np.float32)
    out[ok] = table[ids[ok]]
    return out


def embed_rows4(ids, table, D4):
    """ids int32[T], table float32[V][4*D4] -> out[T][4*D4]."""
    t = np.asarray(table, dtype=np.float32).reshape(-1, 4 * D4)
    return t[np.asarray(ids, dtype=np.int64).reshape(-1)].copy()


def encoder_fwd(ids, wte, wpe, B, T, C):
    wte = np.asarray(wte, dtype=np.float32).reshape(-1, C)
    wpe = np.asarray(wpe, dtype=np.float32).reshape(-1, C)[:T]
    i = np.asarray(ids, dtype=np.int64).reshape(B, T)
    return (wte[i].astype(np.float64) + wpe[None, :, :]).astype(np.float32)
