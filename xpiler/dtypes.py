"""The element types a spec may name, and their numpy / C spellings."""
from __future__ import annotations

import numpy as np

DTYPES = ("float32", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64")

#: numpy storage dtype (bfloat16 is stored as its 16 raw bits in uint16)
NUMPY = {
    "float32": np.float32, "float16": np.float16, "bfloat16": np.uint16,
    "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
}

#: C type used by generated harnesses (the kernel sees the same bytes)
C_TYPE = {
    "float32": "float", "float16": "_Float16", "bfloat16": "uint16_t",
    "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
}

#: bytes of one element of each scalar dtype the IR spells (a superset of DTYPES: the IR also
#: meets float64, the unsigned widths, bool and char); the one table the passes' on-chip budgets,
#: the cast-pointer lanes (xpiler/ir/lanes.py) and the builtin vector layouts read
ELEM_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int8": 1, "uint8": 1, "int16": 2,
              "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "char": 1, "bool": 1}

FLOATS = ("float32", "float16", "bfloat16")

#: default tolerances per dtype (rtol, atol); ints compare exactly
DEFAULT_TOL = {
    "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2),
}


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def itemsize(dtype: str) -> int:
    return np.dtype(NUMPY[dtype]).itemsize


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bfloat16 bits."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    rounding = ((u >> 16) & 1) + 0x7FFF
    return ((u + rounding) >> 16).astype(np.uint16)


def to_compute(dtype: str, arr: np.ndarray) -> np.ndarray:
    """Values of a stored array as float64/int64 for comparison."""
    if dtype == "bfloat16":
        return bf16_to_f32(arr).astype(np.float64)
    if is_float(dtype):
        return arr.astype(np.float64)
    return arr.astype(np.int64)


def from_compute(dtype: str, arr: np.ndarray) -> np.ndarray:
    if dtype == "bfloat16":
        return f32_to_bf16(np.asarray(arr, dtype=np.float32))
    return np.asarray(arr).astype(NUMPY[dtype])
