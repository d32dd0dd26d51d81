"""numpy reference for the add examples: c[i] = a[i] + b[i] (float32 arithmetic, as the kernels do)."""
import numpy as np


def add(a, b, n):
    """Reference for every dialect's add kernel (a, b: float32[n]). One float32 add is exact-rounded."""
    a = np.asarray(a, dtype=np.float32).reshape(-1)[:n]
    b = np.asarray(b, dtype=np.float32).reshape(-1)[:n]
    return (a + b).astype(np.float32)


def add_selfcheck():
    """Compare with a float64 sum rounded once to float32 (the same value for one addition)."""
    rng = np.random.default_rng(9)
    a = (rng.standard_normal(1237) * 1e3).astype(np.float32)
    b = (rng.standard_normal(1237) * 1e-3).astype(np.float32)
    got = add(a, b, a.size)
    alt = (a.astype(np.float64) + b.astype(np.float64)).astype(np.float32)
    if not np.array_equal(got, alt):
        raise AssertionError("add: float32 and float64-rounded sums disagree")
    if not np.array_equal(add(b, a, a.size), got):
        raise AssertionError("add: not commutative")
    if not np.array_equal(add(a, b, 5), got[:5]):
        raise AssertionError("add: n is not honoured")
