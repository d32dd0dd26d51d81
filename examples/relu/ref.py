"""numpy reference for the relu examples: y[i] = max(x[i], 0)."""
import numpy as np


def relu(x, n):
    """Reference used by every dialect's relu kernel (x: float32[n])."""
    x = np.asarray(x, dtype=np.float32).reshape(-1)[:n]
    return np.maximum(x, np.float32(0.0)).astype(np.float32)


def relu_selfcheck():
    """Cross-check relu() against a masking formulation on adversarial values."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(1237).astype(np.float32) * 100
    x[:6] = [0.0, -0.0, 1e-40, -1e-40, 3.4e38, -3.4e38]
    got = relu(x, x.size)
    alt = np.where(x > 0, x, np.float32(0.0)).astype(np.float32)
    # +0 and -0 both compare equal; anything else must match bit for bit
    if not np.array_equal(got, alt):
        raise AssertionError("relu: maximum() and where() formulations disagree")
    if got.dtype != np.float32 or got.shape != (1237,):
        raise AssertionError("relu: wrong dtype or shape")
    if np.any(got < 0):
        raise AssertionError("relu: negative output")
