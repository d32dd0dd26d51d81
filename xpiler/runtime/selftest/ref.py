"""numpy reference of the substrate self-tests: per-block sums of x, then y = x * 2 + block sum."""
import numpy as np


def selftest(x, n, bs):
    x = np.asarray(x, dtype=np.float32).reshape(-1)[:n]
    nb = (n + bs - 1) // bs
    sums = np.array([x[b * bs:(b + 1) * bs].astype(np.float64).sum() for b in range(nb)], dtype=np.float32)
    y = (x * np.float32(2.0) + np.repeat(sums, bs)[:n]).astype(np.float32)
    return y
