"""numpy reference for the sign examples: y = +1 for x > 0, -1 for x < 0, 0 for x == 0."""
import numpy as np


def sign(x, n):
    """Reference for every dialect's sign kernel (x: float32[n])."""
    x = np.asarray(x, dtype=np.float32).reshape(-1)[:n]
    return np.sign(x).astype(np.float32) + np.float32(0.0)  # + 0.0 turns -0.0 into +0.0


def sign_selfcheck():
    """Compare np.sign with a comparison-based formulation, zeros and tiny values included."""
    rng = np.random.default_rng(5)
    x = rng.integers(-3, 4, size=2000).astype(np.float32)
    x[:6] = [0.0, -0.0, 1e-42, -1e-42, 3e38, -3e38]
    got = sign(x, x.size)
    alt = (x > 0).astype(np.float32) - (x < 0).astype(np.float32)
    if not np.array_equal(got, alt):
        raise AssertionError("sign: np.sign and comparison formulations disagree")
    if not set(np.unique(got).tolist()) <= {-1.0, 0.0, 1.0}:
        raise AssertionError("sign: value outside {-1, 0, 1}")
