"""The intrinsic registry: every builtin/API call the IR treats as a typed node, defined ONCE.

Each entry says which dialects have it, its signature (argument kinds and dtypes), its
memory effects (which pointer arguments it reads / writes and how many elements or bytes, as
expressions over the other arguments), and a numpy reference semantics function.  The same
definition is meant to drive tensorize / detensorize (match or expand a call by its
semantics), the emulators' tests and the manuals (STYLE.md section 4).

Semantics conventions (``IntrinsicDef.semantics``), per ``category``:

* ``math``    f(*scalars_or_arrays) -> value, elementwise numpy.
* ``vector``  (BANG ``__bang_*``) f(*args) where pointer args are 1-D numpy views starting at
              the pointer (typed by the kernel's element type) and scalar args are numbers; the
              function writes into its output view(s) in place and returns None.
* ``copy``    ``__memcpy`` family: pointer args are uint8 (byte) views; writes dst in place.
* ``x86``     AVX-512: a 512-bit value is a numpy uint8 array of 64 bytes; loads take a byte
              view, stores write one; value ops return a new 64-byte array; reductions a scalar.
* ``warp``    shuffles: f(values[lanes], arg, width=lanes) -> values[lanes] (one call per warp).
* ``wmma``    fragments are whole matrices: fill -> matrix, load(view, ldm, rows, cols, layout) ->
              matrix, mma(a, b, c) -> a @ b + c, store(view, matrix, ldm, layout) writes.
* ``mfma``    f(a[64 lanes, ...], b[64 lanes, ...], c[64, 4]) -> d[64, 4] with the per-lane
              layout of /tmp/briefs simt_api (lane l: i = l % 16, g = l / 16).
* ``atomic``  f(view, value) -> old value; updates view[0] in place.
* ``sync``    no data semantics (barriers are IR Barrier nodes; these are the other syncs).
* ``dot``     packed byte dot products (``__dp4a``): f(a, b, c, unsigned=False) -> 32-bit scalars
              or arrays, elementwise, wrap-around (``passes/lowering/dp4a.py`` lowers them).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str                     # ptr | scalar | vec | frag | enum | imm (compile-time constant)
    dtype: Optional[str] = None   # None: any / the op's element type T


@dataclass(frozen=True)
class Effect:
    arg: str                      # the pointer/fragment argument
    mode: str                     # r | w | rw
    extent: str                   # number of units touched, an expression over the argument names
    unit: str = "elem"            # elem | byte


@dataclass(frozen=True)
class IntrinsicDef:
    name: str                     # registry key = the spelling in source
    dialects: tuple
    category: str
    args: tuple
    ret: Optional[str]            # result dtype/kind (None: void)
    effects: tuple = ()
    semantics: Optional[Callable] = None
    doc: str = ""
    arity: tuple = ()             # accepted argument counts when overloaded (empty: len(args))

    @property
    def spelling(self) -> str:
        return self.name

    def accepts(self, nargs: int) -> bool:
        return nargs in (self.arity or (len(self.args),))

    def extents(self, argvals: dict) -> dict:
        """Evaluate the effect extents for concrete argument values: {arg: (mode, n, unit)}."""
        out = {}
        env = dict(argvals)
        env.update({"min": min, "max": max})
        for e in self.effects:
            out[e.arg] = (e.mode, int(eval(e.extent, {"__builtins__": {}}, env)), e.unit)
        return out


REGISTRY: dict = {}


def _reg(d: IntrinsicDef):
    if d.name in REGISTRY:
        raise ValueError(f"duplicate intrinsic {d.name}")
    REGISTRY[d.name] = d
    return d


SIMT = ("cuda", "hip")
ALL = ("cuda", "hip", "bang", "c")

# ------------------------------------------------------------------------------ math
_MATH1 = {
    "expf": np.exp, "exp": np.exp, "__expf": np.exp, "exp2f": np.exp2, "logf": np.log, "log": np.log,
    "__logf": np.log, "log2f": np.log2, "sqrtf": np.sqrt, "sqrt": np.sqrt, "rsqrtf": lambda x: 1.0 / np.sqrt(x),
    "tanhf": np.tanh, "tanh": np.tanh, "fabsf": np.abs, "fabs": np.abs, "abs": np.abs,
    "sinf": np.sin, "cosf": np.cos, "floorf": np.floor, "ceilf": np.ceil, "roundf": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
    "erff": np.vectorize(math.erf, otypes=[np.float64]), "erf": np.vectorize(math.erf, otypes=[np.float64]),
    "truncf": np.trunc, "__frcp_rn": lambda x: 1.0 / x, "__fsqrt_rn": np.sqrt,
}
_MATH2 = {
    "fmaxf": np.fmax, "fminf": np.fmin, "fmax": np.fmax, "fmin": np.fmin, "max": np.maximum, "min": np.minimum,
    "powf": np.power, "pow": np.power, "__fdividef": lambda a, b: a / b, "fmodf": np.fmod, "atan2f": np.arctan2,
    "__powf": np.power,
}
for _n, _f in _MATH1.items():
    _reg(IntrinsicDef(_n, ALL, "math", (Arg("x", "scalar"),), "T", semantics=_f, doc=f"elementwise {_n}"))
for _n, _f in _MATH2.items():
    _reg(IntrinsicDef(_n, ALL, "math", (Arg("a", "scalar"), Arg("b", "scalar")), "T", semantics=_f,
                      doc=f"elementwise {_n}"))
_reg(IntrinsicDef("fmaf", ALL, "math", (Arg("a", "scalar"), Arg("b", "scalar"), Arg("c", "scalar")), "T",
                  semantics=lambda a, b, c: a * b + c, doc="fused multiply-add"))

# half conversions (CUDA/HIP)
def _bf16_value(x):
    """x rounded to bfloat16 (nearest, ties to even), as float32 (the value a __nv_bfloat16 holds)."""
    from ..dtypes import bf16_to_f32, f32_to_bf16
    return bf16_to_f32(f32_to_bf16(np.asarray(x, dtype=np.float32)))


for _n, _f in {"__float2half": np.float16, "__half2float": np.float32, "__float2half_rn": np.float16,
               "__bfloat162float": np.float32, "__float2bfloat16": _bf16_value, "__float2bfloat16_rn": _bf16_value,
               "__int2float_rn": np.float32, "__float2int_rn": lambda x: np.rint(x).astype(np.int32),
               "__float2int_rz": lambda x: np.trunc(x).astype(np.int32)}.items():
    _reg(IntrinsicDef(_n, SIMT, "math", (Arg("x", "scalar"),), "T", semantics=lambda x, f=_f: f(x),
                      doc="type conversion"))
for _n, _f in {"__hadd": np.add, "__hmul": np.multiply, "__hsub": np.subtract, "__hmax": np.maximum,
               "__hmin": np.minimum, "__hdiv": np.divide}.items():
    _reg(IntrinsicDef(_n, SIMT, "math", (Arg("a", "scalar", "float16"), Arg("b", "scalar", "float16")), "float16",
                      semantics=lambda a, b, f=_f: np.float16(f(np.float16(a), np.float16(b))), doc="half arithmetic"))
_reg(IntrinsicDef("__hfma", SIMT, "math", (Arg("a", "scalar", "float16"), Arg("b", "scalar", "float16"),
                                           Arg("c", "scalar", "float16")), "float16",
                  semantics=lambda a, b, c: np.float16(np.float32(a) * np.float32(b) + np.float32(c))))
_reg(IntrinsicDef("__ldg", SIMT, "math", (Arg("p", "ptr"),), "T", (Effect("p", "r", "1"),),
                  semantics=lambda p: p[0], doc="read-only cached load"))


# ------------------------------------------------------------------------------ warp shuffles
def _shfl_idx(v, src, width=None):
    v = np.asarray(v)
    w = width or len(v)
    lanes = np.arange(len(v))
    base = lanes - lanes % w
    return v[base + (np.asarray(src) % w)]


def _shfl_down(v, d, width=None):
    v = np.asarray(v)
    w = width or len(v)
    lanes = np.arange(len(v))
    src = lanes + d
    ok = (lanes % w) + d < w
    return np.where(ok, v[np.minimum(src, len(v) - 1)], v)


def _shfl_up(v, d, width=None):
    v = np.asarray(v)
    w = width or len(v)
    lanes = np.arange(len(v))
    ok = (lanes % w) >= d
    return np.where(ok, v[np.maximum(lanes - d, 0)], v)


def _shfl_xor(v, m, width=None):
    v = np.asarray(v)
    w = width or len(v)
    lanes = np.arange(len(v))
    src = lanes ^ m
    ok = (src - src % w) == (lanes - lanes % w)
    return np.where(ok, v[np.clip(src, 0, len(v) - 1)], v)


for _sfx, _f in (("", _shfl_idx), ("_down", _shfl_down), ("_up", _shfl_up), ("_xor", _shfl_xor)):
    _reg(IntrinsicDef(f"__shfl{_sfx}_sync", ("cuda", "hip"), "warp",
                      (Arg("mask", "scalar", "uint32"), Arg("var", "scalar"), Arg("arg", "scalar", "int32"),
                       Arg("width", "scalar", "int32")), "T",
                      semantics=lambda v, a, width=None, f=_f: f(v, a, width), arity=(3, 4),
                      doc=f"warp shuffle{_sfx} (mask form); lanes outside the source range keep their value"))
    _reg(IntrinsicDef(f"__shfl{_sfx}", ("hip",), "warp",
                      (Arg("var", "scalar"), Arg("arg", "scalar", "int32"), Arg("width", "scalar", "int32")), "T",
                      semantics=lambda v, a, width=None, f=_f: f(v, a, width), arity=(2, 3),
                      doc=f"HIP wavefront shuffle{_sfx} (no mask)"))
_reg(IntrinsicDef("__ballot_sync", ("cuda",), "warp", (Arg("mask", "scalar"), Arg("pred", "scalar")), "uint32",
                  semantics=lambda pred: int(sum(1 << i for i, p in enumerate(pred) if p)), doc="warp ballot"))


# ------------------------------------------------------------------------------ atomics
def _atomic(op):
    def f(view, val):
        old = view[0].copy()
        view[0] = op(view[0], val)
        return old
    return f


for _n, _op in {"atomicAdd": np.add, "atomicMax": np.maximum, "atomicMin": np.minimum,
                "atomicExch": lambda a, b: b, "atomicSub": np.subtract, "atomicAnd": np.bitwise_and,
                "atomicOr": np.bitwise_or}.items():
    _reg(IntrinsicDef(_n, SIMT, "atomic", (Arg("addr", "ptr"), Arg("val", "scalar")), "T",
                      (Effect("addr", "rw", "1"),), semantics=_atomic(_op), doc=f"atomic read-modify-write ({_n})"))
_reg(IntrinsicDef("atomicCAS", SIMT, "atomic", (Arg("addr", "ptr"), Arg("cmp", "scalar"), Arg("val", "scalar")), "T",
                  (Effect("addr", "rw", "1"),),
                  semantics=lambda v, c, x: (lambda old: (v.__setitem__(0, x) if old == c else None, old)[1])(v[0].copy())))
for _n in ("__bang_atomic_add",):
    _reg(IntrinsicDef(_n, ("bang",), "atomic", (Arg("dst", "ptr"), Arg("src", "ptr"), Arg("val", "scalar"),
                                                Arg("n", "scalar")), None, (Effect("src", "rw", "n"),),
                      doc="BANG atomic add (not in the emulator contract)"))


# ------------------------------------------------------------------------------ WMMA
def _wmma_load(view, ldm, rows, cols, layout="row_major"):
    view = np.asarray(view)
    if layout in ("row_major", "mem_row_major"):
        return np.stack([view[r * ldm: r * ldm + cols] for r in range(rows)]).astype(np.float32)
    return np.stack([view[c * ldm: c * ldm + rows] for c in range(cols)]).T.astype(np.float32)


def _wmma_store(view, mat, ldm, layout="mem_row_major"):
    rows, cols = mat.shape
    for r in range(rows):
        for c in range(cols):
            idx = r * ldm + c if layout in ("row_major", "mem_row_major") else c * ldm + r
            view[idx] = mat[r, c]


_reg(IntrinsicDef("wmma::fill_fragment", ("cuda",), "wmma", (Arg("frag", "frag"), Arg("value", "scalar")), None,
                  (Effect("frag", "w", "1"),), semantics=lambda shape, v: np.full(shape, v, np.float32),
                  doc="every element of the fragment := value"))
_reg(IntrinsicDef("wmma::load_matrix_sync", ("cuda",), "wmma",
                  (Arg("frag", "frag"), Arg("ptr", "ptr"), Arg("ldm", "scalar"), Arg("layout", "enum")), None,
                  (Effect("frag", "w", "1"), Effect("ptr", "r", "ldm * 16")), semantics=_wmma_load, arity=(3, 4),
                  doc="load an m x k (a), k x n (b) or m x n (accumulator) tile with leading dimension ldm"))
_reg(IntrinsicDef("wmma::store_matrix_sync", ("cuda",), "wmma",
                  (Arg("ptr", "ptr"), Arg("frag", "frag"), Arg("ldm", "scalar"), Arg("layout", "enum")), None,
                  (Effect("ptr", "w", "ldm * 16"), Effect("frag", "r", "1")), semantics=_wmma_store,
                  doc="store an accumulator tile"))
_reg(IntrinsicDef("wmma::mma_sync", ("cuda",), "wmma",
                  (Arg("d", "frag"), Arg("a", "frag"), Arg("b", "frag"), Arg("c", "frag")), None,
                  (Effect("d", "w", "1"), Effect("a", "r", "1"), Effect("b", "r", "1"), Effect("c", "r", "1")),
                  semantics=lambda a, b, c: a.astype(np.float32) @ b.astype(np.float32) + c,
                  doc="D = A . B + C on 16x16x16 tiles (float accumulation)"))


# ------------------------------------------------------------------------------ MFMA (gfx90a)
def _mfma_16x16x4f32(a, b, c):
    a, b, c = np.asarray(a, np.float32), np.asarray(b, np.float32), np.asarray(c, np.float32)
    A = np.zeros((16, 4), np.float32)
    B = np.zeros((4, 16), np.float32)
    for lane in range(64):
        i, g = lane % 16, lane // 16
        A[i, g] = a[lane]
        B[g, i] = b[lane]
    C = np.zeros((16, 16), np.float32)
    for lane in range(64):
        i, g = lane % 16, lane // 16
        for e in range(4):
            C[4 * g + e, i] = c[lane, e]
    D = A @ B + C
    return np.array([[D[4 * (l // 16) + e, l % 16] for e in range(4)] for l in range(64)], np.float32)


def _mfma_k16(a, b, c, dt):
    """The 16x16x16 layouts: lane l (i = l % 16, g = l / 16) supplies a[l][e] = A[i][4g+e] and
    b[l][e] = B[4g+e][i] and holds C[4g+e][i] in c[l][e]; returns D = A B + C (16 x 16, ``dt``)
    and the lanes' view of it."""
    A = np.zeros((16, 16), dt)
    B = np.zeros((16, 16), dt)
    C = np.zeros((16, 16), dt)
    for lane in range(64):
        i, g = lane % 16, lane // 16
        for e in range(4):
            A[i, 4 * g + e] = a[lane, e]
            B[4 * g + e, i] = b[lane, e]
            C[4 * g + e, i] = c[lane, e]
    return A @ B + C


def _lanes(D, dt):
    return np.array([[D[4 * (l // 16) + e, l % 16] for e in range(4)] for l in range(64)], dt)


def _mfma_16x16x16f16(a, b, c):
    f = np.float32
    return _lanes(_mfma_k16(np.asarray(a, f), np.asarray(b, f), np.asarray(c, f), f), f)


def _mfma_16x16x16i8(a, b, c):
    """Lane l supplies the signed bytes A[i][4g+e] / B[4g+e][i] packed in one int (byte e);
    D = A B + C in int32 sums that wrap modulo 2^32."""
    def signed_bytes(w):
        x = (np.asarray(w, np.int64)[:, None] >> (8 * np.arange(4))) & 0xFF
        return x - 256 * (x >> 7)
    D = _mfma_k16(signed_bytes(a), signed_bytes(b), np.asarray(c, np.int64), np.int64) & 0xFFFFFFFF
    return _lanes(np.where(D >= 2**31, D - 2**32, D), np.int32)


_reg(IntrinsicDef("__builtin_amdgcn_mfma_f32_16x16x4f32", ("hip",), "mfma",
                  (Arg("a", "scalar", "float32"), Arg("b", "scalar", "float32"), Arg("c", "vec", "floatx4"),
                   Arg("cbsz", "imm"), Arg("abid", "imm"), Arg("blgp", "imm")), "floatx4",
                  semantics=_mfma_16x16x4f32, doc="D(16x16) = A(16x4) B(4x16) + C over a wavefront of 64 lanes"))
_reg(IntrinsicDef("__builtin_amdgcn_mfma_f32_16x16x16f16", ("hip",), "mfma",
                  (Arg("a", "vec", "halfx4"), Arg("b", "vec", "halfx4"), Arg("c", "vec", "floatx4"),
                   Arg("cbsz", "imm"), Arg("abid", "imm"), Arg("blgp", "imm")), "floatx4",
                  semantics=_mfma_16x16x16f16, doc="D(16x16) = A(16x16) B(16x16) + C, half inputs, float accumulate"))
def _mfma_16x16x16bf16_1k(a, b, c):
    """Lane l supplies A[i][4g+e] / B[4g+e][i] as bfloat16 bit patterns (four shorts); each is
    widened to float exactly (bits << 16); D = A B + C in float."""
    def widen(w):
        bits = (np.asarray(w, np.int64) & 0xFFFF).astype(np.uint32) << 16
        return bits.view(np.float32)
    f = np.float32
    return _lanes(_mfma_k16(widen(a), widen(b), np.asarray(c, f), f), f)


_reg(IntrinsicDef("__builtin_amdgcn_mfma_f32_16x16x16bf16_1k", ("hip",), "mfma",
                  (Arg("a", "vec", "shortx4"), Arg("b", "vec", "shortx4"), Arg("c", "vec", "floatx4"),
                   Arg("cbsz", "imm"), Arg("abid", "imm"), Arg("blgp", "imm")), "floatx4",
                  semantics=_mfma_16x16x16bf16_1k,
                  doc="D(16x16) = A(16x16) B(16x16) + C, bfloat16 bit patterns four to a shortx4 (the f16 lane "
                      "layout), float accumulate; gfx90a and later (not gfx908)"))
_reg(IntrinsicDef("__builtin_amdgcn_mfma_i32_16x16x16i8", ("hip",), "mfma",
                  (Arg("a", "scalar", "int32"), Arg("b", "scalar", "int32"), Arg("c", "vec", "intx4"),
                   Arg("cbsz", "imm"), Arg("abid", "imm"), Arg("blgp", "imm")), "intx4",
                  semantics=_mfma_16x16x16i8,
                  doc="D(16x16) = A(16x16) B(16x16) + C, signed bytes packed four to an int (the f16 lane "
                      "layout), int32 sums wrapping modulo 2^32"))


# ------------------------------------------------------------------------------ packed byte dot products
def _dp4a(a, b, c, unsigned=False):
    """c + the four products of the bytes of a and b (byte e = bits 8e..8e+7), each byte sign-
    extended (int overload) or zero-extended (unsigned overload); the sum wraps modulo 2^32."""
    a = np.asarray(a, np.int64) & 0xFFFFFFFF
    b = np.asarray(b, np.int64) & 0xFFFFFFFF
    s = np.asarray(c, np.int64) & 0xFFFFFFFF
    for e in range(4):
        x, y = (a >> (8 * e)) & 0xFF, (b >> (8 * e)) & 0xFF
        if not unsigned:
            x, y = x - ((x & 0x80) << 1), y - ((y & 0x80) << 1)
        s = (s + x * y) & 0xFFFFFFFF
    return (s.astype(np.uint32) if unsigned else s.astype(np.uint32).view(np.int32))


_reg(IntrinsicDef("__dp4a", ("cuda",), "dot",
                  (Arg("a", "scalar"), Arg("b", "scalar"), Arg("c", "scalar")), "T", semantics=_dp4a,
                  doc="sm_61+: c + four byte products of a and b; __dp4a(int, int, int) -> int sign-extends the "
                      "bytes, __dp4a(unsigned, unsigned, unsigned) -> unsigned zero-extends them (semantics: "
                      "unsigned=True); the 32-bit sum wraps around (char4/uchar4 forms not taken)"))


# ------------------------------------------------------------------------------ x86 AVX-512
def _v(x, dt):
    return np.asarray(x, np.uint8).view(dt)


def _b(x):
    return np.ascontiguousarray(x).view(np.uint8).copy()


def _dpbusd(src, a, b, saturate=False):
    s = _v(src, np.int32).astype(np.int64)
    prod = (_v(a, np.uint8).astype(np.int64) * _v(b, np.int8).astype(np.int64)).reshape(16, 4).sum(1)
    r = s + prod
    r = np.clip(r, -2**31, 2**31 - 1) if saturate else ((r + 2**31) % 2**32) - 2**31
    return _b(r.astype(np.int32))


def _dpwssd(src, a, b, saturate=False):
    s = _v(src, np.int32).astype(np.int64)
    prod = (_v(a, np.int16).astype(np.int64) * _v(b, np.int16).astype(np.int64)).reshape(16, 2).sum(1)
    r = s + prod
    r = np.clip(r, -2**31, 2**31 - 1) if saturate else ((r + 2**31) % 2**32) - 2**31
    return _b(r.astype(np.int32))


X3 = (Arg("src", "vec", "__m512i"), Arg("a", "vec", "__m512i"), Arg("b", "vec", "__m512i"))
_reg(IntrinsicDef("_mm512_dpbusd_epi32", ("c",), "x86", X3, "__m512i", semantics=_dpbusd,
                  doc="16 int32 lanes: src + sum of 4 (u8 a x s8 b) products, wrapping"))
_reg(IntrinsicDef("_mm512_dpbusds_epi32", ("c",), "x86", X3, "__m512i",
                  semantics=lambda s, a, b: _dpbusd(s, a, b, True), doc="as dpbusd, saturating"))
_reg(IntrinsicDef("_mm512_dpwssd_epi32", ("c",), "x86", X3, "__m512i", semantics=_dpwssd,
                  doc="16 int32 lanes: src + sum of 2 (s16 a x s16 b) products, wrapping"))
_reg(IntrinsicDef("_mm512_dpwssds_epi32", ("c",), "x86", X3, "__m512i",
                  semantics=lambda s, a, b: _dpwssd(s, a, b, True), doc="as dpwssd, saturating"))

_X86_DT = {"ps": np.float32, "pd": np.float64, "epi32": np.int32, "epi8": np.int8, "epi16": np.int16,
           "epi64": np.int64, "si512": np.uint8, "epu8": np.uint8}
for _t, _dt in (("ps", np.float32), ("epi32", np.int32), ("si512", np.uint8), ("pd", np.float64)):
    _n = 64 // np.dtype(_dt).itemsize
    _reg(IntrinsicDef(f"_mm512_loadu_{_t}", ("c",), "x86", (Arg("p", "ptr"),), "__m512",
                      (Effect("p", "r", "64", "byte"),), semantics=lambda p: _b(np.asarray(p, np.uint8)[:64]),
                      doc="unaligned 64-byte load"))
    _reg(IntrinsicDef(f"_mm512_storeu_{_t}", ("c",), "x86", (Arg("p", "ptr"), Arg("v", "vec")), None,
                      (Effect("p", "w", "64", "byte"),),
                      semantics=lambda p, v: p.__setitem__(slice(0, 64), _b(v)), doc="unaligned 64-byte store"))
for _t in ("ps", "epi32", "si512", "pd"):
    _reg(IntrinsicDef(f"_mm512_load_{_t}", ("c",), "x86", (Arg("p", "ptr"),), "__m512",
                      (Effect("p", "r", "64", "byte"),), semantics=lambda p: _b(np.asarray(p, np.uint8)[:64]),
                      doc="aligned 64-byte load"))
    _reg(IntrinsicDef(f"_mm512_store_{_t}", ("c",), "x86", (Arg("p", "ptr"), Arg("v", "vec")), None,
                      (Effect("p", "w", "64", "byte"),),
                      semantics=lambda p, v: p.__setitem__(slice(0, 64), _b(v)), doc="aligned 64-byte store"))

_reg(IntrinsicDef("_mm512_stream_ps", ("c",), "x86", (Arg("p", "ptr"), Arg("v", "vec")), None,
                  (Effect("p", "w", "64", "byte"),),
                  semantics=lambda p, v: p.__setitem__(slice(0, 64), _b(v)),
                  doc="non-temporal 64-byte store (64-byte aligned address; ordered by _mm_sfence)"))
_reg(IntrinsicDef("_mm_sfence", ("c",), "x86", (), None, semantics=lambda: None,
                  doc="store fence: earlier stores, non-temporal ones included, become visible first"))


def _masked_load(dt):
    size = np.dtype(dt).itemsize

    def f(k, p):
        n = 64 // size
        src = np.asarray(p, np.uint8)
        out = np.zeros(64, np.uint8)
        for i in range(n):
            if (int(k) >> i) & 1:
                out[i * size:(i + 1) * size] = src[i * size:(i + 1) * size]
        return out
    return f


for _t, _dt in (("epi8", np.int8), ("ps", np.float32), ("epi32", np.int32), ("epi16", np.int16)):
    _reg(IntrinsicDef(f"_mm512_maskz_loadu_{_t}", ("c",), "x86", (Arg("k", "scalar"), Arg("p", "ptr")), "__m512",
                      (Effect("p", "r", "popcount(k)", "elem"),), semantics=_masked_load(_dt),
                      doc="masked load; masked-off lanes are zero and not read"))


def _mask_store(dt):
    size = np.dtype(dt).itemsize

    def f(p, k, v):
        vb = _b(v)
        for i in range(64 // size):
            if (int(k) >> i) & 1:
                p[i * size:(i + 1) * size] = vb[i * size:(i + 1) * size]
    return f


for _t, _dt in (("ps", np.float32), ("epi32", np.int32), ("epi8", np.int8)):
    _reg(IntrinsicDef(f"_mm512_mask_storeu_{_t}", ("c",), "x86", (Arg("p", "ptr"), Arg("k", "scalar"),
                                                                  Arg("v", "vec")), None,
                      (Effect("p", "w", "popcount(k)", "elem"),), semantics=_mask_store(_dt),
                      doc="masked store of the selected lanes"))


def _lanewise(dt, op):
    return lambda a, b: _b(op(_v(a, dt), _v(b, dt)).astype(dt))


for _t, _dt in (("ps", np.float32), ("epi32", np.int32), ("pd", np.float64)):
    for _op, _f in (("add", np.add), ("sub", np.subtract), ("mul" if _t != "epi32" else "mullo", np.multiply),
                    ("max", np.maximum), ("min", np.minimum)):
        _reg(IntrinsicDef(f"_mm512_{_op}_{_t}", ("c",), "x86", (Arg("a", "vec"), Arg("b", "vec")), "__m512",
                          semantics=_lanewise(_dt, _f), doc=f"lanewise {_op}"))
_reg(IntrinsicDef("_mm512_div_ps", ("c",), "x86", (Arg("a", "vec"), Arg("b", "vec")), "__m512",
                  semantics=_lanewise(np.float32, np.divide), doc="lanewise divide"))
_reg(IntrinsicDef("_mm512_fmadd_ps", ("c",), "x86", (Arg("a", "vec"), Arg("b", "vec"), Arg("c", "vec")), "__m512",
                  semantics=lambda a, b, c: _b((_v(a, np.float32) * _v(b, np.float32) + _v(c, np.float32))
                                               .astype(np.float32)), doc="lanewise a*b+c"))
for _t, _dt in (("ps", np.float32), ("epi32", np.int32), ("pd", np.float64)):
    _reg(IntrinsicDef(f"_mm512_reduce_add_{_t}", ("c",), "x86", (Arg("a", "vec"),), _t,
                      semantics=lambda a, dt=_dt: _v(a, dt).sum(dtype=dt), doc="horizontal sum"))
    _reg(IntrinsicDef(f"_mm512_reduce_max_{_t}", ("c",), "x86", (Arg("a", "vec"),), _t,
                      semantics=lambda a, dt=_dt: _v(a, dt).max(), doc="horizontal max"))
    _reg(IntrinsicDef(f"_mm512_reduce_min_{_t}", ("c",), "x86", (Arg("a", "vec"),), _t,
                      semantics=lambda a, dt=_dt: _v(a, dt).min(), doc="horizontal min"))
    _reg(IntrinsicDef(f"_mm512_set1_{_t}", ("c",), "x86", (Arg("x", "scalar"),), "__m512",
                      semantics=lambda x, dt=_dt: _b(np.full(64 // np.dtype(dt).itemsize, x, dt)),
                      doc="broadcast"))
for _t in ("ps", "si512", "pd"):
    _reg(IntrinsicDef(f"_mm512_setzero_{_t}", ("c",), "x86", (), "__m512",
                      semantics=lambda: np.zeros(64, np.uint8), doc="all-zero vector"))
for _t in ("epi8", "epi16"):
    _dt = np.int8 if _t == "epi8" else np.int16
    _reg(IntrinsicDef(f"_mm512_set1_{_t}", ("c",), "x86", (Arg("x", "scalar"),), "__m512",
                      semantics=lambda x, dt=_dt: _b(np.full(64 // np.dtype(dt).itemsize, x, dt)),
                      doc="broadcast"))
_reg(IntrinsicDef("_mm512_cvtepi32_ps", ("c",), "x86", (Arg("a", "vec"),), "__m512",
                  semantics=lambda a: _b(_v(a, np.int32).astype(np.float32)), doc="int32 -> float lanes"))
_reg(IntrinsicDef("_mm512_cvtepi8_epi16", ("c",), "x86", (Arg("a", "vec", "__m256i"),), "__m512i",
                  semantics=lambda a: _b(np.asarray(a, np.uint8)[:32].view(np.int8).astype(np.int16)),
                  doc="sign-extend 32 int8 -> 32 int16"))
_reg(IntrinsicDef("_mm256_loadu_si256", ("c",), "x86", (Arg("p", "ptr"),), "__m256i",
                  (Effect("p", "r", "32", "byte"),), semantics=lambda p: np.asarray(p, np.uint8)[:32].copy(),
                  doc="unaligned 32-byte load"))


def _maskz_load_256_epi16(k, p):
    src = np.asarray(p, np.uint8)
    out = np.zeros(32, np.uint8)
    for i in range(16):
        if (int(k) >> i) & 1:
            out[2 * i:2 * i + 2] = src[2 * i:2 * i + 2]
    return out


# a half panel of the register-tiled gemm (passes/patterns/x86_gemm.py): 16 masked 16-bit
# lanes (AVX512BW+VL), widened exactly to 16 floats (AVX512F)
_reg(IntrinsicDef("_mm256_maskz_loadu_epi16", ("c",), "x86", (Arg("k", "scalar"), Arg("p", "ptr")), "__m256i",
                  (Effect("p", "r", "popcount(k)", "elem"),), semantics=_maskz_load_256_epi16,
                  doc="masked load of 16 16-bit lanes; masked-off lanes are zero and not read"))
_reg(IntrinsicDef("_mm512_cvtph_ps", ("c",), "x86", (Arg("a", "vec", "__m256i"),), "__m512",
                  semantics=lambda a: _b(np.asarray(a, np.uint8)[:32].view(np.float16).astype(np.float32)),
                  doc="16 half -> 16 float lanes (exact)"))


# ------------------------------------------------------------------------------ BANG
def _elt(op):
    def f(dst, a, b, n):
        dst[:n] = op(a[:n], b[:n])
    return f


def _elt_scalar(op):
    def f(dst, src, s, n):
        dst[:n] = op(src[:n], s)
    return f


def _unary(op):
    def f(dst, src, n):
        dst[:n] = op(src[:n].astype(np.float32))
    return f


V3 = (Arg("dst", "ptr"), Arg("a", "ptr"), Arg("b", "ptr"), Arg("n", "scalar", "int32"))
E3 = (Effect("dst", "w", "n"), Effect("a", "r", "n"), Effect("b", "r", "n"))
for _n, _op in {"__bang_add": np.add, "__bang_sub": np.subtract, "__bang_mul": np.multiply,
                "__bang_maxequal": np.maximum, "__bang_minequal": np.minimum, "__bang_div": np.divide}.items():
    _reg(IntrinsicDef(_n, ("bang",), "vector", V3, None, E3, semantics=_elt(_op), arity=(4, 5),
                      doc=f"dst[i] = a[i] {_n[7:]} b[i], i < n (n*sizeof(T) % 128 == 0)"))
VS = (Arg("dst", "ptr"), Arg("src", "ptr"), Arg("s", "scalar"), Arg("n", "scalar", "int32"))
ES = (Effect("dst", "w", "n"), Effect("src", "r", "n"))
for _n, _op in {"__bang_add_scalar": np.add, "__bang_sub_scalar": np.subtract, "__bang_mul_scalar": np.multiply,
                "__bang_div_scalar": np.divide, "__bang_add_const": np.add, "__bang_mul_const": np.multiply}.items():
    _reg(IntrinsicDef(_n, ("bang",), "vector", VS, None, ES, semantics=_elt_scalar(_op),
                      doc="dst[i] = src[i] op s, i < n"))


def _cycle(op):
    def f(dst, src, seg, n, seg_n):
        idx = np.arange(n) % seg_n
        dst[:n] = op(src[:n], seg[idx])
    return f


for _n, _op in {"__bang_cycle_add": np.add, "__bang_cycle_sub": np.subtract, "__bang_cycle_mul": np.multiply}.items():
    _reg(IntrinsicDef(_n, ("bang",), "vector", (Arg("dst", "ptr"), Arg("src", "ptr"), Arg("seg", "ptr"),
                                                Arg("n", "scalar"), Arg("seg_n", "scalar")), None,
                      (Effect("dst", "w", "n"), Effect("src", "r", "n"), Effect("seg", "r", "seg_n")),
                      semantics=_cycle(_op), doc="dst[i] = src[i] op seg[i % seg_n]"))


def _gelu_exact(x):
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


U = (Arg("dst", "ptr"), Arg("src", "ptr"), Arg("n", "scalar", "int32"))
EU = (Effect("dst", "w", "n"), Effect("src", "r", "n"))
for _n, _op in {"__bang_active_exp": np.exp, "__bang_active_recip": lambda x: 1.0 / x, "__bang_recip": lambda x: 1.0 / x,
                "__bang_active_relu": lambda x: np.maximum(x, 0), "__bang_active_sign": np.sign,
                "__bang_active_sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "__bang_active_gelu": _gelu_exact,
                "__bang_active_gelup": _gelu_tanh, "__bang_active_tanh": np.tanh, "__bang_sqrt": np.sqrt,
                "__bang_rsqrt": lambda x: 1.0 / np.sqrt(x), "__bang_square": np.square, "__bang_abs": np.abs,
                "__bang_sin": np.sin}.items():
    _reg(IntrinsicDef(_n, ("bang",), "vector", U, None, EU, semantics=_unary(_op), doc="dst[i] = f(src[i]), i < n"))
_reg(IntrinsicDef("__bang_float2half_rn", ("bang",), "vector", U, None, EU,
                  semantics=lambda d, s, n: d.__setitem__(slice(0, n), s[:n].astype(np.float16)), doc="float -> half"))
_reg(IntrinsicDef("__bang_half2float", ("bang",), "vector", U, None, EU,
                  semantics=lambda d, s, n: d.__setitem__(slice(0, n), s[:n].astype(np.float32)), doc="half -> float"))
_reg(IntrinsicDef("__bang_write_zero", ("bang",), "vector", (Arg("dst", "ptr"), Arg("n", "scalar")), None,
                  (Effect("dst", "w", "n"),), semantics=lambda d, n: d.__setitem__(slice(0, n), 0), doc="dst[:n] = 0"))
_reg(IntrinsicDef("__bang_write_value", ("bang",), "vector", (Arg("dst", "ptr"), Arg("n", "scalar"),
                                                              Arg("value", "scalar")), None,
                  (Effect("dst", "w", "n"),), semantics=lambda d, n, v: d.__setitem__(slice(0, n), v),
                  doc="dst[:n] = value"))
_reg(IntrinsicDef("__memset_nram", ("bang",), "vector", (Arg("dst", "ptr"), Arg("n", "scalar"),
                                                         Arg("value", "scalar")), None,
                  (Effect("dst", "w", "n"),), semantics=lambda d, n, v: d.__setitem__(slice(0, n), v),
                  doc="dst[:n] = value"))


def _argreduce(fn, argfn):
    def f(dst, src, n):
        dst[0] = fn(src[:n])
        dst[1] = argfn(src[:n])
    return f


_reg(IntrinsicDef("__bang_max", ("bang",), "vector", U, None, (Effect("dst", "w", "2"), Effect("src", "r", "n")),
                  semantics=_argreduce(np.max, np.argmax), doc="dst[0] = max, dst[1] = its index"))
_reg(IntrinsicDef("__bang_min", ("bang",), "vector", U, None, (Effect("dst", "w", "2"), Effect("src", "r", "n")),
                  semantics=_argreduce(np.min, np.argmin), doc="dst[0] = min, dst[1] = its index"))
_reg(IntrinsicDef("__bang_sum", ("bang",), "vector", U, None, (Effect("dst", "w", "1"), Effect("src", "r", "n")),
                  semantics=lambda d, s, n: d.__setitem__(0, s[:n].astype(np.float32).sum()), doc="dst[0] = sum"))


def _pool(red, avg=False):
    def f(dst, src, C, H, W, kh, kw, sh, sw):
        Ho, Wo = (H - kh) // sh + 1, (W - kw) // sw + 1
        x = src[:H * W * C].reshape(H, W, C)
        out = np.empty((Ho, Wo, C), dtype=np.float64)
        for i in range(Ho):
            for j in range(Wo):
                win = x[i * sh:i * sh + kh, j * sw:j * sw + kw].astype(np.float64)
                out[i, j] = red(win.reshape(-1, C), axis=0) / (kh * kw if avg else 1)
        dst[:Ho * Wo * C] = out.reshape(-1)
    return f


POOL = (Arg("dst", "ptr"), Arg("src", "ptr"), Arg("C", "scalar"), Arg("H", "scalar"), Arg("W", "scalar"),
        Arg("kh", "scalar"), Arg("kw", "scalar"), Arg("sh", "scalar"), Arg("sw", "scalar"))
EPOOL = (Effect("dst", "w", "((H - kh) // sh + 1) * ((W - kw) // sw + 1) * C"), Effect("src", "r", "H * W * C"))
for _n, _r, _avg in (("__bang_sumpool", np.sum, False), ("__bang_maxpool", np.max, False),
                     ("__bang_minpool", np.min, False), ("__bang_avgpool", np.sum, True)):
    _reg(IntrinsicDef(_n, ("bang",), "vector", POOL, None, EPOOL, semantics=_pool(_r, _avg),
                      doc="channels-last pooling, no padding: src [H][W][C] -> dst [Ho][Wo][C]"))


def _conv(dst, src, flt, Cin, H, W, kh, kw, sw, sh, Cout):
    Ho, Wo = (H - kh) // sh + 1, (W - kw) // sw + 1
    x = src[:H * W * Cin].reshape(H, W, Cin).astype(np.float64)
    w = flt[:Cout * kh * kw * Cin].reshape(Cout, kh, kw, Cin).astype(np.float64)
    out = np.zeros((Ho, Wo, Cout))
    for i in range(Ho):
        for j in range(Wo):
            patch = x[i * sh:i * sh + kh, j * sw:j * sw + kw]
            out[i, j] = np.tensordot(w, patch, axes=([1, 2, 3], [0, 1, 2]))
    dst[:Ho * Wo * Cout] = out.reshape(-1)


_reg(IntrinsicDef("__bang_conv", ("bang",), "vector",
                  (Arg("dst", "ptr"), Arg("src", "ptr"), Arg("filter", "ptr"), Arg("Cin", "scalar"),
                   Arg("H", "scalar"), Arg("W", "scalar"), Arg("kh", "scalar"), Arg("kw", "scalar"),
                   Arg("sw", "scalar"), Arg("sh", "scalar"), Arg("Cout", "scalar")), None,
                  (Effect("dst", "w", "((H - kh) // sh + 1) * ((W - kw) // sw + 1) * Cout"),
                   Effect("src", "r", "H * W * Cin"), Effect("filter", "r", "Cout * kh * kw * Cin")),
                  semantics=_conv, doc="valid conv, src [H][W][Cin] (NRAM), filter [Cout][kh][kw][Cin] (WRAM)"))


def _matmul(dst, lhs, rhs, M, K, N, pos=None):
    a = lhs[:M * K].reshape(M, K).astype(np.float64 if pos is None else np.int64)
    b = rhs[:K * N].reshape(K, N).astype(np.float64 if pos is None else np.int64)
    r = a @ b
    if pos is not None:
        r = r.astype(np.float64) * (2.0 ** pos)
    dst[:M * N] = r.reshape(-1)


_reg(IntrinsicDef("__bang_matmul", ("bang",), "vector",
                  (Arg("dst", "ptr"), Arg("lhs", "ptr"), Arg("rhs", "ptr"), Arg("M", "scalar"), Arg("K", "scalar"),
                   Arg("N", "scalar"), Arg("pos", "scalar")), None,
                  (Effect("dst", "w", "M * N"), Effect("lhs", "r", "M * K"), Effect("rhs", "r", "K * N")),
                  semantics=_matmul, arity=(6, 7),
                  doc="dst[M][N] = lhs[M][K] (NRAM) . rhs[K][N] (WRAM); int8 form scales by 2^pos"))
_reg(IntrinsicDef("__bang_mlp", ("bang",), "vector",
                  (Arg("dst", "ptr"), Arg("src", "ptr"), Arg("weight", "ptr"), Arg("K", "scalar"), Arg("N", "scalar"),
                   Arg("fix_pos", "scalar")), None,
                  (Effect("dst", "w", "N"), Effect("src", "r", "K"), Effect("weight", "r", "N * K")),
                  semantics=lambda d, s, w, K, N, fp=None: d.__setitem__(
                      slice(0, N), w[:N * K].reshape(N, K).astype(np.float64) @ s[:K].astype(np.float64)),
                  arity=(5, 6), doc="dst[n] = sum_k src[k] * weight[n][k]"))
_reg(IntrinsicDef("__bang_transpose", ("bang",), "vector",
                  (Arg("dst", "ptr"), Arg("src", "ptr"), Arg("H", "scalar"), Arg("W", "scalar")), None,
                  (Effect("dst", "w", "H * W"), Effect("src", "r", "H * W")),
                  semantics=lambda d, s, H, W: d.__setitem__(slice(0, H * W), s[:H * W].reshape(H, W).T.reshape(-1)),
                  doc="src [H][W] -> dst [W][H]"))

# newer spellings and further ops of public BANG code (emulator: runtime/bang/xp_bang.h)
for _n, _op in {"__bang_sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "__bang_relu": lambda x: np.maximum(x, 0),
                "__bang_exp": np.exp, "__bang_log": np.log, "__bang_active_log": np.log, "__bang_tanh": np.tanh,
                "__bang_gelu": _gelu_exact, "__bang_active_abs": np.abs, "__bang_active_sqrt": np.sqrt,
                "__bang_active_rsqrt": lambda x: 1.0 / np.sqrt(x), "__bang_cos": np.cos, "__bang_pow2": np.exp2,
                "__bang_not": lambda x: (x == 0).astype(np.float32)}.items():
    _reg(IntrinsicDef(_n, ("bang",), "vector", U, None, EU, semantics=_unary(_op), doc="dst[i] = f(src[i]), i < n"))
_REL = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal}
for _n, _op in dict({"__bang_maximum": np.maximum, "__bang_minimum": np.minimum,
                     "__bang_and": lambda a, b: ((a != 0) & (b != 0)).astype(np.float32),
                     "__bang_or": lambda a, b: ((a != 0) | (b != 0)).astype(np.float32)},
                    **{f"__bang_{k}": (lambda a, b, f=f: f(a, b).astype(np.float32)) for k, f in _REL.items()}).items():
    _reg(IntrinsicDef(_n, ("bang",), "vector", V3, None, E3, semantics=_elt(_op),
                      doc="dst[i] = a[i] op b[i] (relations give 1.0 / 0.0)"))
for _n, _op in dict({"__bang_maxeq_scalar": np.maximum, "__bang_mineq_scalar": np.minimum},
                    **{f"__bang_{k}_scalar": (lambda a, s, f=f: f(a, s).astype(np.float32))
                       for k, f in _REL.items()}).items():
    _reg(IntrinsicDef(_n, ("bang",), "vector", VS, None, ES, semantics=_elt_scalar(_op),
                      doc="dst[i] = src[i] op s (relations give 1.0 / 0.0)"))
for _n, _op in {"__bang_cycle_maxequal": np.maximum, "__bang_cycle_minequal": np.minimum}.items():
    _reg(IntrinsicDef(_n, ("bang",), "vector", (Arg("dst", "ptr"), Arg("src", "ptr"), Arg("seg", "ptr"),
                                                Arg("n", "scalar"), Arg("seg_n", "scalar")), None,
                      (Effect("dst", "w", "n"), Effect("src", "r", "n"), Effect("seg", "r", "seg_n")),
                      semantics=_cycle(_op), doc="dst[i] = op(src[i], seg[i % seg_n])"))


def _reduce_sum(dst, src, n):
    L = 128 // src.dtype.itemsize
    g = n // L
    dst[:g] = src[:g * L].astype(np.float64).reshape(g, L).sum(axis=1)


_reg(IntrinsicDef("__bang_reduce_sum", ("bang",), "vector", U, None,
                  (Effect("dst", "w", "max(n // 32, 1)"), Effect("src", "r", "n")), semantics=_reduce_sum,
                  doc="dst[g] = sum of the g-th 128-byte group of src"))
for _n in ("__bang_argmax", "__bang_argmin"):
    _reg(IntrinsicDef(_n, ("bang",), "vector", U, None, (Effect("dst", "w", "2"), Effect("src", "r", "n")),
                      doc="dst[0] = max (min); the 4 bytes after it = its index as uint32"))

MEMCPY_DIRS = ("GDRAM2NRAM", "NRAM2GDRAM", "GDRAM2WRAM", "NRAM2WRAM", "NRAM2NRAM", "GDRAM2SRAM", "SRAM2NRAM",
               "NRAM2SRAM", "SRAM2GDRAM", "GDRAM2GDRAM", "SRAM2WRAM")


def _memcpy(dst, src, nbytes, direction, dst_stride=None, src_stride=None, segnum=None):
    if dst_stride is None:
        dst[:nbytes] = src[:nbytes]
        return
    for s in range(segnum + 1):
        dst[s * dst_stride: s * dst_stride + nbytes] = src[s * src_stride: s * src_stride + nbytes]


for _n in ("__memcpy", "__memcpy_async"):
    _reg(IntrinsicDef(_n, ("bang",), "copy",
                      (Arg("dst", "ptr"), Arg("src", "ptr"), Arg("bytes", "scalar"), Arg("dir", "enum"),
                       Arg("dst_stride", "scalar"), Arg("src_stride", "scalar"), Arg("segnum", "scalar")), None,
                      (Effect("dst", "w", "bytes if dst_stride is None else dst_stride * segnum + bytes", "byte"),
                       Effect("src", "r", "bytes if src_stride is None else src_stride * segnum + bytes", "byte")),
                      semantics=_memcpy, arity=(4, 7),
                      doc="copy bytes in direction dir; strided form copies segnum+1 segments"))


# ------------------------------------------------------------------------------ lookup
WMMA_SHORT = {k.split("::", 1)[1]: k for k in REGISTRY if k.startswith("wmma::")}


def canonical_name(name: str, dialect: str) -> Optional[str]:
    """Registry key for a called name in a dialect, or None for an ordinary call."""
    d = REGISTRY.get(name)
    if d is not None and (dialect in d.dialects or d.category == "math"):
        return name
    if dialect == "cuda" and name in WMMA_SHORT:
        return None  # unqualified (using namespace nvcuda::wmma): kept as a plain call
    return None


def lookup(name: str) -> IntrinsicDef:
    return REGISTRY[name]


def effects_of(name: str) -> tuple:
    d = REGISTRY.get(name)
    return d.effects if d else ()
