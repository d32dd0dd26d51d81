"""numpy reference for the gelu examples, exact form: y = 0.5 * x * (1 + erf(x / sqrt(2)))."""
import math

import numpy as np

# math.erf applied element by element (numpy has no erf of its own)
_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x, n):
    """Reference for every dialect's gelu kernel (x: float32[n]); evaluated in float64."""
    x64 = np.asarray(x, dtype=np.float64).reshape(-1)[:n]
    e = _erf(x64 / math.sqrt(2.0)).astype(np.float64)
    return (0.5 * x64 * (1.0 + e)).astype(np.float32)


def _erf_as(z):
    """Independent erf: Abramowitz & Stegun 7.1.26 rational approximation (|error| <= 1.5e-7)."""
    z = np.asarray(z, dtype=np.float64)
    s = np.sign(z)
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return s * (1.0 - poly * np.exp(-a * a))


def gelu_selfcheck():
    """Compare gelu() with a version built on a different erf, and check known values."""
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.standard_normal(4000) * 3, [0.0, -0.0, 8.0, -8.0, 1e-30]]).astype(np.float32)
    got = gelu(x, x.size).astype(np.float64)
    x64 = x.astype(np.float64)
    alt = 0.5 * x64 * (1.0 + _erf_as(x64 / math.sqrt(2.0)))
    if not np.allclose(got, alt, rtol=1e-6, atol=1e-6):
        raise AssertionError("gelu: math.erf and A&S erf formulations disagree")
    # gelu(x) - gelu(-x) == x exactly in real arithmetic
    odd = gelu(-x, x.size).astype(np.float64)
    if not np.allclose(got - odd, x64, rtol=1e-5, atol=1e-5):
        raise AssertionError("gelu: gelu(x) - gelu(-x) != x")
    if abs(float(gelu(np.float32([1.0]), 1)[0]) - 0.8413447460685429) > 1e-6:
        raise AssertionError("gelu: gelu(1) wrong")
