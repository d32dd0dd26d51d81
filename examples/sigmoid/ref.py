"""numpy reference for the sigmoid examples: y = 1 / (1 + exp(-x))."""
import numpy as np


def sigmoid(x, n):
    """Reference for every dialect's sigmoid kernel (x: float32[n]); float64 inside, no overflow warnings."""
    x64 = np.asarray(x, dtype=np.float64).reshape(-1)[:n]
    with np.errstate(over="ignore"):
        y = 1.0 / (1.0 + np.exp(-x64))
    return y.astype(np.float32)


def sigmoid_selfcheck():
    """Compare with the tanh identity sigmoid(x) = (1 + tanh(x/2)) / 2 and check symmetry."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(3000) * 10, [0.0, 88.0, -88.0, 200.0, -200.0]]).astype(np.float32)
    got = sigmoid(x, x.size).astype(np.float64)
    alt = 0.5 * (1.0 + np.tanh(x.astype(np.float64) * 0.5))
    if not np.allclose(got, alt, rtol=1e-6, atol=1e-7):
        raise AssertionError("sigmoid: exp and tanh formulations disagree")
    if not np.allclose(got + sigmoid(-x, x.size), 1.0, atol=1e-6):
        raise AssertionError("sigmoid: s(x) + s(-x) != 1")
    if np.any(got < 0) or np.any(got > 1):
        raise AssertionError("sigmoid: value outside [0, 1]")
