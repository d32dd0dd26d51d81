"""How the polynomial coefficients of ``xp_erf512`` and ``xp_tanh512``
(:mod:`passes.patterns.x86_math`) were obtained.

Not imported by the compiler: run ``python -m passes.patterns.x86_math_fit`` to recompute and
print them (numpy only, float64, deterministic).

erf
---
erf is odd, so only a = |x| is approximated and the sign of x is put back at the end.

* ``a < 1``: ``erf(a) = a * P(a*a)``, P of degree 6, fitted for the smallest *relative* error
  of erf/a over t = a*a in [0, 1] (so the result keeps full relative precision down to the
  smallest and denormal inputs: erf(a) ~ 2/sqrt(pi) * a there).
* ``1 <= a``: ``erf(a) = 1 - exp(Q(a - 1))``, Q of degree 7 fitted to log(erfc(a)) on
  [1, 3.92], weighted by erfc(a) so that the *absolute* error of erf is the one minimised
  (erf >= 0.84 there, so absolute and relative error are alike).  a is clamped to 3.92 first:
  erfc(3.92) = 1.6e-8 is below half an ulp of 1.0f, so every larger a gives exactly 1.0f,
  as erff does.

The fit: weighted least squares on 4000 Chebyshev points of the interval, then Lawson's
iteration (the weights are multiplied by the current error each round), which drives the
least-squares fit towards the equal-ripple (minimax) one.  The float64 fit errors are ~1e-9
(range 1, relative) and ~2e-11 (range 2, absolute); the float32 helper's error is dominated
by rounding and is measured in tests/test_vector_erf.py.

tanh
----
tanh is odd too; a = |x|.

* ``a < 0.625``: ``tanh(a) = a * T(a*a)``, T of degree 6, fitted for the smallest relative
  error of tanh/a over t in [0, 0.390625] (float64 fit error ~1.4e-10).
* ``0.625 <= a``: ``tanh(a) = 1 - 2 / (e**(2a) + 1)`` (an identity, no fit), a clamped to 9.02:
  1 - tanh(9.02) < 2**-25, so every larger a gives exactly 1.0f.

gelu
----
``xp_gelu512`` computes gelu(v) = v * Phi(v) (Phi the normal distribution function) without erf:
with a = |v| and h = Phi(-a) = erfc(a / sqrt(2)) / 2, gelu(v) = v * (1 - h) for v >= 0 and v * h
for v < 0 (no 1 + erf cancellation for negative v).  h is written as R(a)**16: R = h**(1/16)
is smooth and slowly varying (about exp(-a*a/32)), so one polynomial of degree 6 per unit
interval of a fits it to float32 precision.  a is clamped to [0, 16): 16 intervals, i = floor(a),
s = a - i in [0, 1), R = G_i(s); the 16 coefficient sets are picked per lane by a permute.
Beyond a = 14.4 gelu(-a) rounds to -0 in float32 (the negative branch clamps v to -16 so that
huge negative v also gives -0).  Each G_i: Lawson fit for the smallest relative error over s,
then the coefficients rounded to float32 one at a time (constant term first) with the
remaining ones refitted after each rounding, which keeps the rounded polynomial at ~5e-8
relative error (naive rounding of all: up to 1.4e-7).  h's relative error is 16 times R's.
"""
from __future__ import annotations

import math

import numpy as np

SPLIT = 1.0
CLAMP = 3.92
DEG_SMALL = 6
DEG_LARGE = 7
TANH_SPLIT = 0.625
DEG_TANH = 6


def _lawson(t, f, deg, weight, rounds=60):
    A = np.vander(t, deg + 1, increasing=True)
    w = np.ones_like(t)
    for _ in range(rounds):
        sw = np.sqrt(w) * weight
        c, *_ = np.linalg.lstsq(A * sw[:, None], f * sw, rcond=None)
        e = np.abs((A @ c - f) * weight)
        w = w * e
        w /= w.sum()
    return c, float(np.max(np.abs((A @ c - f) * weight)))


def _cheb(lo, hi, n=4000):
    return 0.5 * (hi + lo) + 0.5 * (hi - lo) * np.cos(np.linspace(0.0, math.pi, n))


def fit():
    """(P coefficients, Q coefficients, fit errors), lowest degree first."""
    erf = np.vectorize(math.erf)
    erfc = np.vectorize(math.erfc)
    a = _cheb(0.0, SPLIT)
    a = a[a > 0]
    f = erf(a) / a
    p, ep = _lawson(a * a, f, DEG_SMALL, 1.0 / f)
    a = _cheb(SPLIT, CLAMP)
    q, eq = _lawson(a - SPLIT, np.log(erfc(a)), DEG_LARGE, erfc(a))
    return p, q, (ep, eq)


def fit_tanh():
    """(T coefficients, fit error), lowest degree first."""
    a = _cheb(0.0, TANH_SPLIT)
    a = a[a > 0]
    f = np.tanh(a) / a
    return _lawson(a * a, f, DEG_TANH, 1.0 / f)


GELU_INTERVALS = 16
DEG_GELU = 6


def _lawson_basis(A, f, weight, rounds=60):
    w = np.ones(len(f))
    for _ in range(rounds):
        sw = np.sqrt(w) * weight
        c, *_ = np.linalg.lstsq(A * sw[:, None], f * sw, rcond=None)
        e = np.abs((A @ c - f) * weight)
        w = w * e
        w /= w.sum()
    return c


def fit_gelu(intervals=None):
    """([G_i for i in intervals (default all 16)] each lowest degree first, already float32
    values; max relative error of the rounded polynomials against Phi(-a)**(1/16), evaluated in
    float64).  Each interval's fit is independent of the others."""
    erfc = np.vectorize(math.erfc)
    s = _cheb(0.0, 1.0, 2000)
    A = np.vander(s, DEG_GELU + 1, increasing=True)
    out, worst = [], 0.0
    for i in (range(GELU_INTERVALS) if intervals is None else intervals):
        f = (0.5 * erfc((i + s) / math.sqrt(2.0))) ** (1.0 / 16.0)
        fixed = []
        for k in range(DEG_GELU + 1):      # round one coefficient, refit the rest
            r = f - A[:, :k] @ np.array(fixed) if fixed else f
            c = _lawson_basis(A[:, k:], r, 1.0 / f)
            fixed.append(float(np.float32(c[0])))
        out.append(fixed)
        worst = max(worst, float(np.max(np.abs(A @ np.array(fixed) / f - 1.0))))
    return out, worst


def c_literals(coeffs):
    """Each coefficient rounded to float32 and written so that it reads back to that float."""
    out = []
    for c in coeffs:
        s = f"{float(np.float32(c)):.9g}"
        out.append(s + ("f" if any(ch in s for ch in ".e") else ".0f"))
    return out


if __name__ == "__main__":
    p, q, errs = fit()
    print("P:", ", ".join(c_literals(p)))
    print("Q:", ", ".join(c_literals(q)))
    print("fit errors (float64):", errs)
    t, et = fit_tanh()
    print("T:", ", ".join(c_literals(t)))
    print("tanh fit error (float64):", et)
    g, eg = fit_gelu()
    for k in range(DEG_GELU + 1):
        print(f"G[{k}]:", ", ".join(c_literals([gi[k] for gi in g])))
    print("gelu fit error (float32 coefficients, relative, of h**(1/16)):", eg)
