"""Test inputs: random, adversarial and boundary values, honouring the spec's constraints.

Seed ``s`` picks a *flavour* (``s % 3``): 0 = ordinary values, 1 = adversarial (wide
magnitudes, negatives, the extremes of the range), 2 = boundary (zeros, ±1, denormals where
the dtype has them, repeated values) — and a random stream.  Outputs are poisoned (NaN for
floats, a sentinel for integers) so an element the kernel never writes cannot pass.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import NUMPY, f32_to_bf16, is_float
from ..spec import ArgSpec, Instance

FLAVOURS = ("ordinary", "adversarial", "boundary")
INT_POISON = {"int8": 0x5B, "uint8": 0xA5, "int16": 0x5BA5, "int32": -0x3A5B5C5D, "int64": -0x3A5B5C5D5E5F6061}

_DEFAULT_FLOAT_RANGE = {"float32": 4.0, "float16": 2.0, "bfloat16": 2.0}
_ADV_FLOAT_RANGE = {"float32": 100.0, "float16": 8.0, "bfloat16": 8.0}
_INT_RANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
              "int32": (-1000, 1000), "int64": (-1000, 1000)}
_DENORMAL = {"float32": 1e-40, "float16": 3e-6, "bfloat16": 1e-39}


def flavour(seed: int) -> str:
    return FLAVOURS[seed % 3]


def poison(a: ArgSpec, shape) -> np.ndarray:
    if is_float(a.dtype):
        arr = np.full(shape, np.nan, dtype=np.float32)
        if a.dtype == "bfloat16":
            return f32_to_bf16(arr)
        return arr.astype(NUMPY[a.dtype])
    return np.full(shape, INT_POISON[a.dtype], dtype=np.int64).astype(NUMPY[a.dtype])


def _floats(a: ArgSpec, shape, rng: np.random.Generator, fl: str) -> np.ndarray:
    if a.range:
        lo, hi = float(a.range[0]), float(a.range[1])
    else:
        r = (_ADV_FLOAT_RANGE if fl == "adversarial" else _DEFAULT_FLOAT_RANGE)[a.dtype]
        lo, hi = -r, r
    x = rng.uniform(lo, hi, size=shape)
    n = x.size
    flat = x.reshape(-1)
    if fl == "adversarial" and n:
        k = max(1, n // 16)
        idx = rng.choice(n, size=min(k, n), replace=False)
        flat[idx] = rng.choice([lo, hi], size=idx.size)
    elif fl == "boundary" and n:
        k = max(1, n // 8)
        specials = [0.0, 1.0, -1.0, lo, hi]
        if not a.range or (a.range[0] <= _DENORMAL[a.dtype] <= a.range[1]):
            specials.append(_DENORMAL[a.dtype])
        specials = [v for v in specials if lo <= v <= hi] or [lo]
        idx = rng.choice(n, size=min(k, n), replace=False)
        flat[idx] = rng.choice(specials, size=idx.size)
    if a.integral:
        x = np.clip(np.round(x), np.ceil(lo), np.floor(hi))
    x = x.astype(np.float32)
    if a.dtype == "bfloat16":
        return f32_to_bf16(x)
    return x.astype(NUMPY[a.dtype])


def _ints(a: ArgSpec, shape, rng: np.random.Generator, fl: str) -> np.ndarray:
    lo, hi = a.range if a.range else _INT_RANGE[a.dtype]
    lo, hi = int(np.ceil(lo)), int(np.floor(hi))
    x = rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
    flat = x.reshape(-1)
    if fl == "adversarial" and flat.size:
        idx = rng.choice(flat.size, size=max(1, flat.size // 8), replace=False)
        flat[idx] = rng.choice([lo, hi], size=idx.size)
    elif fl == "boundary" and flat.size:
        idx = rng.choice(flat.size, size=max(1, flat.size // 8), replace=False)
        flat[idx] = rng.choice([v for v in (0, 1, -1, lo, hi) if lo <= v <= hi], size=idx.size)
    return x.astype(NUMPY[a.dtype])


def make_inputs(inst: Instance, seed: int) -> dict[str, np.ndarray]:
    """Initial contents of every array argument: inputs drawn, outputs poisoned."""
    rng = np.random.default_rng(seed * 7919 + 17)
    fl = flavour(seed)
    out: dict[str, np.ndarray] = {}
    for a in inst.spec.args:
        if not a.is_array:
            continue
        shape = inst.shapes[a.name]
        if a.role == "out":
            out[a.name] = poison(a, shape)
            continue
        if a.value is not None and not isinstance(a.value, str):
            arr = np.asarray(a.value)
            if arr.size == int(np.prod(shape)):
                out[a.name] = arr.reshape(shape).astype(NUMPY[a.dtype])
                continue
            # a fixed value that does not fit this instance: broadcast a scalar, else tile
            out[a.name] = np.resize(arr, shape).astype(NUMPY[a.dtype])
            continue
        if a.permutation_axis is not None:
            ax = a.permutation_axis
            n = shape[ax]
            perm = np.stack([rng.permutation(n) for _ in range(int(np.prod(shape)) // n)])
            moved = perm.reshape(tuple(s for i, s in enumerate(shape) if i != ax) + (n,))
            out[a.name] = np.moveaxis(moved, -1, ax).astype(NUMPY[a.dtype])
            continue
        out[a.name] = _floats(a, shape, rng, fl) if is_float(a.dtype) else _ints(a, shape, rng, fl)
    return out
