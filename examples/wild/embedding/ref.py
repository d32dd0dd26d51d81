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
