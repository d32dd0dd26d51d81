"""x86 AVX-512 / VNNI intrinsics as lane loops over small arrays.

A ``__m512`` value becomes ``float[16]``, ``__m512d`` ``double[8]``, ``__m512i`` ``int32_t[16]``
(``__m256i``: ``int32_t[8]``).  Byte and int16 lanes of an integer vector are read and written
through ``uint8_t`` accesses (always legal aliasing), int16 lanes composed from two bytes
(little-endian, as on x86).  Every intrinsic is an exact lane formula:

* masked loads read only the selected lanes (the others are 0, or ``src`` for mask_loadu);
  masked stores write only the selected lanes;
* ``dpbusd``: int32 lane += sum of 4 products u8(a) x s8(b), wrapping modulo 2^32;
  ``dpbusds`` saturates to int32; ``dpwssd``/``dpwssds`` the same with 2 products s16 x s16;
* ``fmadd``/``fnmadd``/``fmsub`` are fused (``fmaf``), ``max``/``min`` return the second
  operand on NaN (``a > b ? a : b``), ``scalef`` is ``a * 2^floor(b)`` (``ldexpf``);
* ``reduce_add_ps``/``reduce_max_ps``: the same pairwise tree as the compiler's sequence
  (lanes i and i+8, then i+4, i+2, i+1), so float sums round identically.

Functions taking or returning vectors get pointer parameters (``float *``) and an output
pointer ``xpd_ret``; call sites pass fresh copies, so a callee writing its parameter never
changes the caller's variable.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk, rewrite

from . import chunk_tail, x86_dot_cols as dot_cols, x86_dot_sum as dot_sum, x86_pack
from .common import (FLOAT, INT, add, assign, b, block, c, cast, cf, cond, decl, ix, loop, mul, ptr,
                     scalar)
from .common import call_name as _name

U8, I8, I16, I32, U32, I64, F64 = (scalar("uint8"), scalar("int8"), scalar("int16"), scalar("int32"),
                                   scalar("uint32"), scalar("int64"), scalar("float64"))

#: vector type -> (element kind, lanes)
VTYPES = {"__m512": ("f32", 16), "__m512d": ("f64", 8), "__m512i": ("i32", 16), "__m256i": ("i32", 8),
          "__m256": ("f32", 8), "__m128": ("f32", 4), "__m128i": ("i32", 4)}
KIND_TYPE = {"f32": FLOAT, "f64": F64, "i32": I32}
LANES = {"f32": 16, "f64": 8, "i32": 16, "i16": 32, "i8": 64, "u8": 64}
SIZE = {"f32": 4, "f64": 8, "i32": 4, "i16": 2, "i8": 1, "u8": 1}
MASK_SPELL = {"__mmask8": ("uint8", "uint8_t"), "__mmask16": ("uint16", "uint16_t"),
              "__mmask32": ("uint32", "uint32_t"), "__mmask64": ("uint64", "uint64_t")}


def is_x86(name: str) -> bool:
    return name.startswith(("_mm512_", "_mm256_", "_mm_"))


def is_amx_tile(name: str) -> bool:
    """An AMX tile intrinsic (``_tile_loadd``, ``_tile_dpbssd``...): no lowering exists for these
    (a tile is 1 KiB of state configured at run time); an xpiler output's XP_USE_AMX path never
    reaches a pass (the front end reads its portable VNNI path, XP1150)."""
    return name.startswith("_tile_")


def _sfx(name):
    return name.rsplit("_", 1)[-1]


#: ordered predicates are C's comparisons (false on NaN); NEQ_UQ is C's != (true on NaN)
CMP_OPS = {"_CMP_GT_OQ": ">", "_CMP_LT_OQ": "<", "_CMP_GE_OQ": ">=", "_CMP_LE_OQ": "<=", "_CMP_EQ_OQ": "==",
           "_CMP_NEQ_UQ": "!="}

KIND_OF_SFX = {"ps": "f32", "pd": "f64", "epi32": "i32", "si512": "i32", "epi8": "i8", "epi16": "i16",
               "si256": "i32"}


def first_lanes(e):
    """k when mask expression ``e`` is ``(1 << k) - 1`` (through integer casts): the mask of the
    first k lanes, whose bit l is ``l < k`` (k from 0 to the shift's width minus one, the range
    where the C shift is defined); also ``k ? (1 << k) - 1 : 0``, the same mask for every such k."""
    def strip(x):
        while isinstance(x, N.Cast) and isinstance(x.type, N.Scalar) and x.type.dtype.startswith(("int", "uint")):
            x = x.expr
        return x
    e = strip(e)
    if isinstance(e, N.Cond) and isinstance(strip(e.else_), N.Const) and strip(e.else_).value == 0:
        # ``k ? (1 << k) - 1 : 0`` (a tail mask guarded against k == 0): the first k lanes as well
        k = first_lanes(e.then)
        return k if k is not None and strip(k) == strip(e.cond) else None
    if isinstance(e, N.BinOp) and e.op == "-" and isinstance(e.rhs, N.Const) and e.rhs.value == 1:
        sh = strip(e.lhs)
        if isinstance(sh, N.BinOp) and sh.op == "<<" and isinstance(sh.lhs, N.Const) and sh.lhs.value == 1:
            return sh.rhs
    return None


class X86:
    def __init__(self, ctx, vfuncs: dict):
        self.ctx = ctx
        self.first_lanes = {}           # mask variable -> k, for a mask of the first k lanes
        self.vfuncs = vfuncs            # name -> (vector param kinds, return kind or None)
        self.vars = {}                  # vector variable -> kind
        self.known_math = {}            # helper function -> scalar math function it computes
        self.splats = {}                # vector constant held as one scalar -> kind (plan_scalars)
        self.accs = {}                  # vector sum accumulator held as one scalar -> kind
        self.dots = set()               # VNNI accumulators only summed: one uint32_t (x86_dot_sum)
        self.fwd = {}                   # their byte-load operands read in place (x86_dot_sum.plan)
        self.masks = set()              # __mmaskN variables (their unused declarations are dropped)

    # ------------------------------------------------------------------ scalar vectors
    def plan_scalars(self, body):
        """Vector variables that need no lanes (``self.splats``, ``self.accs``):

        * a splat: declared once as ``_mm512_set1_ps/pd/epi32(x)`` or ``_mm512_setzero_*()`` and
          never assigned again (nor its address taken): every lane holds the value ``x`` had at
          the declaration, so one scalar of the lane type holds the vector exactly;
        * a sum accumulator: a float vector declared once as ``_mm512_setzero_ps()`` whose only
          uses are ``a = _mm512_add_ps(a, X)`` (either order, ``X`` not reading ``a``) and leaves
          of a ``_mm512_add_ps`` tree under ``_mm512_reduce_add_ps`` whose leaves are all such
          accumulators: only the total of its lanes is ever observed, so one float ``a`` with
          ``a += X[l]`` for each lane holds that total (the float additions regrouped: a sum
          reduction, docs/decisions.md);
        * a VNNI accumulator only summed (``lowering/x86_dot_sum.py``): one ``uint32_t``, with its
          byte-load operands read in place (``self.dots``, ``self.fwd``)."""
        decls, dup = {}, set()
        for n in walk(body):
            if isinstance(n, N.Decl):
                if n.name in decls:
                    dup.add(n.name)
                decls[n.name] = n
            elif isinstance(n, N.For):
                dup.add(n.var)
        assigned = _assigned((body,))
        uses = {}
        for n in walk(body):
            if isinstance(n, N.Var):
                uses[n.name] = uses.get(n.name, 0) + 1
        for name, d in decls.items():
            k = self.vkind_of_type(d.type)
            if k not in ("f32", "f64", "i32") or name in dup or d.init is None:
                continue
            nm = _name(d.init) or ""
            sfx = _sfx(nm) if nm else ""
            zero = nm.startswith("_mm512_setzero_") and len(d.init.args) == 0
            one = nm.startswith("_mm512_set1_") and len(d.init.args) == 1 and KIND_OF_SFX.get(sfx) == k
            if (zero or one) and name not in assigned:
                self.splats[name] = k
            elif zero and k == "f32":
                self.accs[name] = k
        self.dots, self.fwd = dot_sum.plan(body, decls, dup, uses)
        # accumulators: every use accounted for (fixpoint: a reduce tree with a non-accumulator
        # leaf disqualifies all of its leaves)
        while True:
            seen = {a: 0 for a in self.accs}
            bad = set()
            for n in walk(body):
                if isinstance(n, N.Assign) and isinstance(n.target, N.Var) and n.target.name in self.accs:
                    x = self._acc_update(n)
                    if x is None:
                        bad.add(n.target.name)
                    else:
                        seen[n.target.name] += 2
                if _name(n) == "_mm512_reduce_add_ps" and len(n.args) == 1:
                    leaves = self._add_leaves(n.args[0])
                    if leaves is not None and all(x in self.accs for x in leaves):
                        for x in leaves:
                            seen[x] += 1
            bad |= {a for a in self.accs if seen[a] != uses.get(a, 0)}
            if not bad:
                break
            for a in bad:
                del self.accs[a]

    def _acc_update(self, s):
        """X of ``a = _mm512_add_ps(a, X)`` / ``(X, a)`` (X not reading a), else None."""
        a = s.target.name
        v = s.value
        if s.op != "=" or _name(v) != "_mm512_add_ps" or len(v.args) != 2:
            return None
        x, y = v.args
        if isinstance(x, N.Var) and x.name == a:
            other = y
        elif isinstance(y, N.Var) and y.name == a:
            other = x
        else:
            return None
        if any(isinstance(n, N.Var) and n.name == a for n in walk(other)):
            return None
        return other

    def _add_leaves(self, e):
        """Variable names at the leaves of an ``_mm512_add_ps`` tree of variables, else None."""
        if isinstance(e, N.Var):
            return [e.name]
        if _name(e) == "_mm512_add_ps" and len(e.args) == 2:
            l, r = self._add_leaves(e.args[0]), self._add_leaves(e.args[1])
            return None if l is None or r is None else l + r
        return None

    def _acc_sum(self, e):
        if isinstance(e, N.Var):
            return N.Var(e.name)
        return b("+", self._acc_sum(e.args[0]), self._acc_sum(e.args[1]))

    def splat_value(self, init, k):
        et = KIND_TYPE[k]
        if _name(init).startswith("_mm512_setzero_"):
            return cf(0.0) if k == "f32" else N.Const(0.0, "float64", "0.0") if k == "f64" else c(0)
        return cast(et, init.args[0])

    def mask_value(self, e, pre):
        """``_mm512_cmp_ps_mask(a, b, P)`` used as a value: the 16-bit mask, bit l set when the
        lane comparison holds, computed into a fresh ``uint16_t``."""
        t, l = self.ctx.fresh("k"), self.ctx.fresh("l")
        U16 = scalar("uint16")
        pre.append(decl(t, U16, c(0)))
        body = []
        bit = self.mbit(e, N.Var(l), body)
        one = b("<<", N.Const(1, "uint32", "1u"), N.Var(l))
        body.append(N.If(bit, N.Block((assign(N.Var(t), cast(U16, b("|", N.Var(t), one))),))))
        pre.append(loop(l, 0, 16, body))
        return N.Var(t)

    # ------------------------------------------------------------------ helpers
    def refuse(self, why, node=None):
        self.ctx.refuse(why, node)

    def vkind_of_type(self, t):
        t = self.ctx.env.resolve(t)
        if isinstance(t, N.Named) and t.name in VTYPES:
            return VTYPES[t.name][0]
        return None

    def natural(self, e):
        """Element kind a vector expression naturally produces."""
        if isinstance(e, N.Var) and e.name in self.vars:
            return self.vars[e.name]
        if isinstance(e, N.Cond):        # c ? v : w of two vectors of one kind
            kinds = {self.natural(e.then), self.natural(e.else_)}
            if len(kinds) != 1:
                self.refuse(f"a choice between vectors of kinds {' and '.join(sorted(kinds))}")
            return kinds.pop()
        name = _name(e)
        if name in self.vfuncs:
            return self.vfuncs[name][1]
        if name is None:
            self.refuse(f"not a vector expression: {type(e).__name__}")
        if name in ("_mm512_dpbusd_epi32", "_mm512_dpbusds_epi32", "_mm512_dpwssd_epi32", "_mm512_dpwssds_epi32"):
            return "i32"
        if name.startswith("_mm512_cvtepi32_ps"):
            return "f32"
        return KIND_OF_SFX.get(_sfx(name), "i32")

    def mbit(self, m, l, pre=None):
        """Bit ``l`` of mask expression ``m``; a ``_mm512_cmp_ps_mask`` is the lane comparison."""
        if _name(m) == "_mm512_cmp_ps_mask" and pre is not None:
            x, y = (self.lane(v, l, "f32", pre) for v in m.args[:2])
            pred = self.imm_text(m.args[2]).strip()
            if pred == "_CMP_UNORD_Q":
                return b("||", b("!=", x, x), b("!=", y, y))
            if pred not in CMP_OPS:
                self.refuse(f"_mm512_cmp_ps_mask: unsupported predicate {pred}")
            return b(CMP_OPS[pred], x, y)
        if _name(m) and is_x86(_name(m)):
            self.refuse(f"{_name(m)} as a mask")
        k = first_lanes(m) if not isinstance(m, N.Var) else self.first_lanes.get(m.name)
        if k is not None:
            return b("<", l, k)         # the first k lanes: bit l of (1 << k) - 1
        return b("&", b(">>", rewrite(m, _respell_mask_cast), l), 1)

    def byte_of(self, arr, j, const=True):
        return ix(cast(ptr(U8, const=const), arr), j)

    def read_var(self, name, l, view):
        k = self.vars[name]
        if view == k:
            return ix(name, l)
        if k == "i32" and view == "u8":
            return self.byte_of(N.Var(name), l)
        if k == "i32" and view == "i8":
            return cast(I8, self.byte_of(N.Var(name), l))
        if k == "i32" and view == "i16":
            lo = cast(I32, self.byte_of(N.Var(name), mul(2, l)))
            hi = cast(I32, self.byte_of(N.Var(name), add(mul(2, l), 1)))
            return cast(I16, b("|", lo, b("<<", hi, 8)))
        if view == "u8" and k == "f32":
            return self.byte_of(N.Var(name), l)
        self.refuse(f"cannot view a {k} vector as {view} lanes")

    # ------------------------------------------------------------------ lanes
    def lane(self, e, l, view, pre):
        """Scalar expression for lane ``l`` of vector expression ``e`` seen as ``view`` lanes;
        statements it needs first go to ``pre``."""
        if isinstance(e, N.Var):
            if e.name not in self.vars:
                self.refuse(f"'{e.name}' is not a vector variable")
            if e.name in self.accs or e.name in self.dots:
                self.refuse(f"accumulator '{e.name}' read lane by lane")
            if e.name in self.splats:
                if view == self.vars[e.name]:
                    return N.Var(e.name)
                tmp = self.ctx.fresh("v")        # another view: the lanes, from the scalar
                k = self.vars[e.name]
                i = self.ctx.fresh("l")
                pre.append(decl(tmp, N.Array(KIND_TYPE[k], (c(LANES[k]),))))
                pre.append(loop(i, 0, LANES[k], assign(ix(tmp, N.Var(i)), N.Var(e.name))))
                self.vars[tmp] = k
                return self.read_var(tmp, l, view)
            return self.read_var(e.name, l, view)
        if isinstance(e, N.Cast):
            return self.lane(e.expr, l, view, pre)
        if isinstance(e, N.Cond):        # one branch computed, under its condition (compute_into)
            tmp = self.materialize(e, pre)
            return self.read_var(tmp, l, view)
        name = _name(e)
        if name is None:
            self.refuse("unsupported vector expression")
        if name in self.known_math:      # xp_exp512 (tensorize's helper, checked by its text): expf
            arg = self.lane(e.args[0], l, "f32", pre)
            if self.known_math[name] == GELU:     # xp_gelu512(v): 0.5f * v * (1.0f + erff(v * 1/sqrt 2))
                return mul(cf(0.5), arg, add(cf(1.0), self.ctx.math("erff", mul(arg, cf(0.70710678118654752)))))
            return self.ctx.math(self.known_math[name], arg)
        if name in self.vfuncs or name.startswith("_mm512_dp"):
            tmp = self.materialize(e, pre)
            return self.read_var(tmp, l, view)
        shuffled = x86_pack.lane(self, e, name, l, view, pre)
        if shuffled is not None:
            return shuffled
        a = list(e.args)
        op = name[len("_mm512_"):] if name.startswith("_mm512_") else name
        nat = self.natural(e)
        if op.startswith(("setzero", "set1")):
            if op.startswith("setzero"):
                return cf(0.0) if view == "f32" else c(0)
            if view in ("u8", "i8") and nat in ("u8", "i8"):   # a byte splat read as bytes: the byte
                return cast(U8 if view == "u8" else I8, a[0])
            if view != nat:
                tmp = self.materialize(e, pre)
                return self.read_var(tmp, l, view)
            return cast(KIND_TYPE.get(view, I32) if view != "i8" else I8, a[0]) if view != "i16" else cast(I16, a[0])
        if op.startswith(("loadu", "maskz_loadu", "mask_loadu", "load_")):
            return self.load_lane(op, a, l, view, nat, pre)
        if view != nat:
            tmp = self.materialize(e, pre)
            return self.read_var(tmp, l, view)
        L = lambda x: self.lane(x, l, view, pre)
        base = op.rsplit("_", 1)[0]
        if base in ("add", "sub", "mul", "div", "mullo"):
            sym = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mullo": "*"}[base]
            if view == "i32":   # wraparound integer arithmetic
                return cast(I32, b(sym, cast(U32, L(a[0])), cast(U32, L(a[1]))))
            return b(sym, L(a[0]), L(a[1]))
        if base in ("max", "min"):
            x, y = L(a[0]), L(a[1])
            return cond(b(">" if base == "max" else "<", x, y), x, y)
        if base in ("fmadd", "fmsub", "fnmadd", "fnmsub"):
            x, y, z = L(a[0]), L(a[1]), L(a[2])
            if base in ("fnmadd", "fnmsub"):
                x = N.UnOp("-", x)
            if base in ("fmsub", "fnmsub"):
                z = N.UnOp("-", z)
            return self.ctx.math("fmaf" if view == "f32" else "fma", x, y, z)
        if base in ("mask_add", "mask_sub", "mask_mul", "mask_max", "mask_min"):
            src, m, x, y = a
            inner = N.Intrinsic(f"_mm512_{base[5:]}_{_sfx(name)}", (x, y))
            return cond(self.mbit(m, l, pre), self.lane(inner, l, view, pre), L(src))
        if base == "mask_blend":             # lane l: b if bit l of m else a
            m, x, y = a
            return cond(self.mbit(m, l, pre), L(y), L(x))
        if base == "maskz_mov":
            m, x = a
            return cond(self.mbit(m, l, pre), L(x), cf(0.0) if view == "f32" else c(0))
        if base in ("abs", "sqrt") and view in ("f32", "f64"):
            fn = {"abs": "fabs", "sqrt": "sqrt"}[base] + ("f" if view == "f32" else "")
            return self.ctx.math(fn, L(a[0]))
        if base == "roundscale":
            txt = self.imm_text(a[1])
            # numeric immediates: bits 0-1 rounding mode (0 nearest, 1 floor, 2 ceil, 3 trunc),
            # bit 3 suppresses exceptions; bits 4-7 (scale) must be 0
            numeric = {"0": "", "8": "", "1": "NEG_INF", "9": "NEG_INF", "2": "POS_INF", "10": "POS_INF",
                       "3": "TO_ZERO", "11": "TO_ZERO"}
            txt = numeric.get(txt.strip(), txt)
            fn = "truncf" if "TO_ZERO" in txt else "floorf" if "NEG_INF" in txt else "ceilf" if "POS_INF" in txt \
                else "nearbyintf"
            if txt.strip() not in ("",) and not any(k in txt for k in ("TO_NEAREST", "TO_ZERO", "NEG_INF", "POS_INF")):
                self.refuse(f"{name}: unsupported rounding immediate {txt}")
            return self.ctx.math(fn, L(a[0]))
        if base == "scalef":
            return self.ctx.math("ldexpf", L(a[0]), cast(INT, self.ctx.math("floorf", L(a[1]))))
        if op == "cvtepi32_ps":
            return cast(FLOAT, self.lane(a[0], l, "i32", pre))
        if op == "cvtepi8_epi16":
            return cast(I16, self.lane(a[0], l, "i8", pre))
        self.refuse(f"no lowering for {name}")

    def elem_at(self, p, l, et, const=False):
        """Element ``l`` after pointer ``p`` as type ``et``: ``B[i + l]`` when ``p`` is ``&B[i]``
        and B's elements are ``et`` (what loop analyses read best), else ``((et *)p)[l]``."""
        p = _strip_void(p)
        if isinstance(p, N.UnOp) and p.op == "&" and isinstance(p.operand, N.Index):
            el = self.ctx.env.type_of(p.operand)
            if isinstance(el, N.Scalar) and isinstance(et, N.Scalar) and el.dtype == et.dtype:
                return N.Index(p.operand.base, add(p.operand.index, l))
        # P + o1 + o2 ... (or P) with P a pointer to et and integer offsets: P[o1 + o2 ... + l]
        base, offs = p, []
        while isinstance(base, N.BinOp) and base.op == "+":
            offs.insert(0, base.rhs)
            base = base.lhs
        el = self.ctx.env.elem_of(base) if isinstance(base, N.Var) else None

        def integral(o):
            t = self.ctx.env.type_of(o)
            return isinstance(t, N.Scalar) and t.dtype.startswith(("int", "uint"))
        if el is not None and isinstance(et, N.Scalar) and el.dtype == et.dtype and all(integral(o) for o in offs):
            return N.Index(base, add(*offs, l))
        return ix(cast(ptr(et, const=const), p), l)

    def imm_text(self, e):
        if isinstance(e, N.Const):
            return str(e.value)
        return " ".join(n.name for n in walk(e) if isinstance(n, N.Var)) or "?"

    def load_lane(self, op, a, l, view, nat, pre):
        masked = op.startswith(("maskz_", "mask_"))
        if op.startswith("maskz_"):
            m, p = a
            other = cf(0.0) if view == "f32" else c(0)
        elif op.startswith("mask_"):
            src, m, p = a
            other = None
        else:
            p = a[0]
        if view == nat or (nat == "i32" and op.endswith("si512") and view in ("i32",)):
            elem = {"f32": FLOAT, "f64": F64, "i32": I32, "i16": I16, "i8": I8}[view]
            val = self.elem_at(p, l, elem, const=True)
            bit = l
        elif view == "u8":
            val = ix(cast(ptr(U8, const=True), _strip_void(p)), l)
            bit = b("/", l, SIZE[nat])
        else:
            tmp = self.materialize(N.Intrinsic("_mm512_" + op, tuple(a)), pre)
            return self.read_var(tmp, l, view)
        if not masked:
            return val
        if other is None:
            other = self.lane(src, l, view, pre)
        return cond(self.mbit(m, bit, pre), val, other)

    # ------------------------------------------------------------------ materialize
    def materialize(self, e, pre, into=None):
        """Compute vector expression ``e`` into a fresh array (or ``into``); return its name."""
        kind = self.natural(e)
        name = into or self.ctx.fresh("v")
        if into is None:
            n = LANES[kind] if kind in ("f32", "f64", "i32") else 16
            k = kind if kind in ("f32", "f64", "i32") else "i32"
            pre.append(decl(name, N.Array(KIND_TYPE[k], (c(LANES[k]),))))
            self.vars[name] = k
        self.compute_into(name, e, pre)
        return name

    def compute_into(self, name, e, pre):
        k = self.vars[name]
        if isinstance(e, N.Cond):
            # only the branch taken runs: the other may read memory its condition rules out
            # (a masked load of a row past K)
            if any(isinstance(n, (N.Call, N.Intrinsic, N.AssignExpr)) or
                   isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--") for n in walk(e.cond)):
                self.refuse("a vector choice whose condition calls or assigns", e)
            then, els = [], []
            self.compute_into(name, e.then, then)
            self.compute_into(name, e.else_, els)
            pre.append(N.If(e.cond, N.Block(tuple(then)), N.Block(tuple(els))))
            return
        fname = _name(e)
        if fname in self.vfuncs:
            args = []
            for x, pk in zip(e.args, self.vfuncs[fname][0]):
                if pk is not None:
                    args.append(N.Var(self.materialize(x, pre)))   # a fresh copy: callee may write it
                else:
                    args.append(x)
            pre.append(N.ExprStmt(N.Call(fname, tuple(args) + (N.Var(name),))))
            return
        if fname in ("_mm512_dpbusd_epi32", "_mm512_dpbusds_epi32", "_mm512_dpwssd_epi32", "_mm512_dpwssds_epi32"):
            self.dot(name, fname, list(e.args), pre)
            return
        nat = self.natural(e)
        l = self.ctx.fresh("l")
        body = []
        if nat in ("u8", "i8", "i16") or (isinstance(e, (N.Intrinsic, N.Call)) and fname.endswith("si512")
                                          and "load" in fname):
            # byte-wise: exact for any lane width
            val = self.lane(e, N.Var(l), "u8", body)
            pre.append(loop(l, 0, 64 if k != "f64" else 64, body + [assign(self.byte_of(N.Var(name), N.Var(l), False),
                                                                            cast(U8, val))]))
            return
        val = self.lane(e, N.Var(l), k, body)
        pre.append(loop(l, 0, LANES[k], body + [assign(ix(name, N.Var(l)), val)]))

    def dot(self, name, fname, a, pre):
        src, x, y = a
        sat = fname.endswith("s_epi32")
        words = "dpwssd" in fname
        l, s = self.ctx.fresh("l"), self.ctx.fresh("dot")
        body = []
        Vl = N.Var(l)
        if words:
            terms = [b("*", cast(I64, self.lane(x, add(mul(2, Vl), j), "i16", body)),
                     cast(I64, self.lane(y, add(mul(2, Vl), j), "i16", body))) for j in range(2)]
        else:
            terms = [b("*", cast(I32, self.lane(x, add(mul(4, Vl), j), "u8", body)),
                     cast(I32, self.lane(y, add(mul(4, Vl), j), "i8", body))) for j in range(4)]
        sum_ = terms[0]
        for t in terms[1:]:
            sum_ = b("+", sum_, t)
        srcl = self.lane(src, Vl, "i32", body)
        body.append(decl(s, I64, b("+", cast(I64, srcl), cast(I64, sum_))))
        if sat:
            val = cond(b(">", N.Var(s), N.Const(2147483647, "int64", "2147483647LL")), N.Const(2147483647, "int32", "2147483647"),
                       cond(b("<", N.Var(s), N.Const(-2147483648, "int64", "(-2147483647LL - 1)")),
                            N.Const(-2147483648, "int32", "(-2147483647 - 1)"), cast(I32, N.Var(s))))
        else:
            val = cast(I32, cast(U32, N.Var(s)))     # modulo 2^32 (gcc: two's complement)
        tmp = self.ctx.fresh("acc")
        # compute all lanes into a temporary first: src may be the destination
        pre.append(decl(tmp, N.Array(I32, (c(16),))))
        pre.append(loop(l, 0, 16, body + [assign(ix(tmp, Vl), val)]))
        l2 = self.ctx.fresh("l")
        pre.append(loop(l2, 0, 16, assign(ix(name, N.Var(l2)), ix(tmp, N.Var(l2)))))

    # ------------------------------------------------------------------ scalars (reductions)
    def scalar_of(self, e, pre):
        name = _name(e)
        a = e.args
        if name == "_mm512_reduce_add_epi32" and len(a) == 1 and isinstance(a[0], N.Var) and a[0].name in self.dots:
            return cast(I32, N.Var(a[0].name))       # the uint32_t total, modulo 2^32 as the lanes' sum
        if name == "_mm512_reduce_add_ps" and len(a) == 1:
            leaves = self._add_leaves(a[0])
            if leaves is not None and leaves and all(x in self.accs for x in leaves):
                return self._acc_sum(a[0])
        kind = KIND_OF_SFX[_sfx(name)]
        op = name[len("_mm512_reduce_"):].rsplit("_", 1)[0]
        t, w, i = self.ctx.fresh("red"), self.ctx.fresh("w"), self.ctx.fresh("i")
        n = LANES[kind]
        et = KIND_TYPE[kind]
        pre.append(decl(t, N.Array(U32 if kind == "i32" else et, (c(n),))))
        body = []
        val = self.lane(a[0], N.Var(i), kind, body)
        pre.append(loop(i, 0, n, body + [assign(ix(t, N.Var(i)), cast(U32, val) if kind == "i32" else val)]))
        x, y = ix(t, N.Var(i)), ix(t, add(N.Var(i), N.Var(w)))
        if op == "add":
            comb = b("+", x, y)
        elif op == "mul":
            comb = b("*", x, y)
        elif op in ("max", "min"):
            if kind == "i32":
                x, y = cast(I32, x), cast(I32, y)
            comb = cond(b(">" if op == "max" else "<", x, y), x, y)
        else:
            self.refuse(f"no lowering for {name}")
        # pairwise tree: lanes i and i+w for w = n/2, n/4, ..., 1
        pre.append(N.CFor(decl(w, INT, n // 2), b(">", N.Var(w), 0), N.AssignExpr("/=", N.Var(w), c(2)),
                          N.Block((loop(i, 0, N.Var(w), assign(ix(t, N.Var(i)), comb)),))))
        r = ix(t, 0)
        return cast(I32, r) if kind == "i32" else r

    # ------------------------------------------------------------------ statements
    def lower_stmt(self, s, out):
        """Append the lowering of simple statement ``s`` to ``out``."""
        if isinstance(s, N.Decl) and id(s) in self.fwd:
            return                              # read in place by its one update (x86_dot_sum)
        if isinstance(s, N.Decl) and s.name in self.dots:
            self.vars[s.name] = "i32"
            out.append(N.Decl(s.name, U32, N.Const(0, "uint32", "0u"), loc=s.loc))
            return
        if isinstance(s, N.Assign) and isinstance(s.target, N.Var) and s.target.name in self.dots:
            dot_sum.lower_update(self, s, out)
            return
        # horizontal reductions are scalars: compute them first, wherever they sit
        s = rewrite(s, lambda n: self.scalar_of(n, out) if (_name(n) or "").startswith("_mm512_reduce_") else n)
        if isinstance(s, N.Decl):
            k = self.vkind_of_type(s.type)
            if k is not None and (s.name in self.splats or s.name in self.accs):
                self.vars[s.name] = k           # one scalar (plan_scalars)
                t = KIND_TYPE[k].with_(const=s.name in self.splats)
                val = self.splat_value(s.init, k) if s.name in self.splats else cf(0.0)
                out.append(N.Decl(s.name, t, val, loc=s.loc))
                return
            if k is not None:
                self.vars[s.name] = k
                out.append(s.with_(type=N.Array(KIND_TYPE[k], (c(LANES[k]),)), init=None, storage=()))
                if s.init is not None:
                    if isinstance(s.init, N.InitList):
                        self.refuse("vector initializer lists are not supported", s)
                    self.compute_into(s.name, s.init, out)
                return
            t = s.type
            if isinstance(t, N.Scalar) and t.spelling in MASK_SPELL:
                dt, sp = MASK_SPELL[t.spelling]
                s = s.with_(type=t.with_(spelling=sp))
                self.masks.add(s.name)
        if isinstance(s, N.Assign) and isinstance(s.target, N.Var) and s.target.name in self.accs:
            x, l, body = self._acc_update(s), self.ctx.fresh("l"), []
            val = self.lane(x, N.Var(l), "f32", body)
            out.append(loop(l, 0, 16, body + [N.Assign(N.Var(s.target.name), "+=", val, loc=s.loc)]))
            return
        if isinstance(s, N.Assign) and isinstance(s.target, N.Var) and s.target.name in self.vars:
            if s.op != "=":
                self.refuse("compound assignment to a vector", s)
            if any(isinstance(n, N.Var) and n.name == s.target.name for n in walk(s.value)):
                tmp = self.materialize(s.value, out)
                l = self.ctx.fresh("l")
                out.append(loop(l, 0, LANES[self.vars[s.target.name]], assign(ix(s.target.name, N.Var(l)), ix(tmp, N.Var(l)))))
            else:
                self.compute_into(s.target.name, s.value, out)
            return
        if isinstance(s, N.ExprStmt) and _name(s.expr) == "_mm_sfence":
            return                              # store ordering only: the lowered stores are plain
        if isinstance(s, N.ExprStmt) and _name(s.expr) == "_mm512_stream_ps":
            self.store("_mm512_storeu_ps", list(s.expr.args), out)     # a store of the same lanes
            return
        if isinstance(s, N.ExprStmt) and _name(s.expr) and is_x86(_name(s.expr)) and "store" in _name(s.expr):
            self.store(_name(s.expr), list(s.expr.args), out)
            return
        if isinstance(s, N.Return) and s.value is not None and self.ret_name:
            self.compute_into(self.ret_name, s.value, out)
            out.append(N.Return(None, loc=s.loc))
            return
        if isinstance(s, N.ExprStmt) and _name(s.expr) in self.vfuncs:
            self.materialize(s.expr, out)
            return
        # scalar statement: reductions and casts of masks
        pre = []
        s = rewrite(s, lambda n: self.mask_value(n, pre) if _name(n) == "_mm512_cmp_ps_mask" and len(n.args) == 3
                    else n)

        def fn(n):
            nm = _name(n)
            if nm and nm.startswith("_mm512_reduce_"):
                return self.scalar_of(n, pre)
            if isinstance(n, N.Cast) and isinstance(n.type, N.Scalar) and n.type.spelling in MASK_SPELL:
                return _respell_mask_cast(n)
            if nm and is_x86(nm):
                self.refuse(f"{nm} used as a scalar")
            return n
        new = rewrite(s, fn)
        out.extend(pre)
        out.append(new)

    def store(self, name, a, out):
        op = name[len("_mm512_"):]
        masked = op.startswith("mask_")
        if masked:
            p, m, val = a
        else:
            p, val = a
        kind = KIND_OF_SFX[_sfx(name)]
        l = self.ctx.fresh("l")
        body = []
        if kind in ("f32", "i32", "f64") and not name.endswith("si512"):
            et = KIND_TYPE[kind]
            x = self.lane(val, N.Var(l), kind, body)
            st = assign(self.elem_at(p, N.Var(l), et), x)
            bit, n = N.Var(l), LANES[kind]
        else:   # bytes
            x = self.lane(val, N.Var(l), "u8", body)
            st = assign(ix(cast(ptr(U8), _strip_void(p)), N.Var(l)), cast(U8, x))
            bit, n = b("/", N.Var(l), SIZE[kind]), 64
        if masked:
            st = N.If(self.mbit(m, bit, body), st)
        out.append(loop(l, 0, n, body + [st]))


def _respell_mask_cast(n):
    """``(__mmask64)m`` -> ``(uint64_t)m``: a mask cast in the unsigned scalar of its width."""
    if isinstance(n, N.Cast) and isinstance(n.type, N.Scalar) and n.type.spelling in MASK_SPELL:
        return n.with_(type=n.type.with_(spelling=MASK_SPELL[n.type.spelling][1]))
    return n


def _strip_void(p):
    if isinstance(p, N.Cast) and isinstance(p.type, N.Pointer):
        el = p.type.elem
        if isinstance(el, N.Scalar) and el.dtype == "void":
            return p.expr
    return p


def _assigned(stmts) -> set:
    """Names a statement list assigns (plain targets, ++/--, address taken)."""
    out = set()
    for n in walk(tuple(stmts)):
        t = None
        if isinstance(n, (N.Assign, N.AssignExpr)):
            t = n.target
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&"):
            t = n.operand
        elif isinstance(n, (N.For,)):
            out.add(n.var)
        while isinstance(t, (N.Index, N.Member)):
            t = t.base
        if isinstance(t, N.Var):
            out.add(t.name)
    return out


def _drop_unused(body, names):
    """``body`` without the declarations of the mask variables ``names`` that nothing reads
    any more (a tail mask whose every test became ``l < k``), when their initialiser has no
    side effect."""
    used = {n.name for n in walk(body) if isinstance(n, N.Var)}
    dead = set(names) - used

    def pure(e):
        return e is None or not any(isinstance(n, (N.Call, N.Intrinsic, N.AssignExpr)) or
                                    isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--") for n in walk(e))

    def fn(n):
        if isinstance(n, N.Block):
            keep = tuple(s for s in n.stmts if not (isinstance(s, N.Decl) and s.name in dead and pure(s.init)))
            if len(keep) != len(n.stmts):
                return n.with_(stmts=keep)
        return n
    return rewrite(body, fn) if dead else body


def _lower_body(x: X86, stmts) -> tuple:
    saved = dict(x.first_lanes)
    try:
        return _lower_body_in(x, stmts)
    finally:
        x.first_lanes = saved


def _lower_body_in(x: X86, stmts) -> tuple:
    out = []
    stmts = tuple(stmts)
    for pos, s in enumerate(stmts):
        x.ctx.node = s
        # a mask of the first k lanes whose k and whose own value stay fixed in the rest of the block
        if isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and s.init is not None:
            k = first_lanes(s.init)
            if k is not None:
                later = _assigned(stmts[pos + 1:])
                if s.name not in later and not ({n.name for n in walk(k) if isinstance(n, N.Var)} & later) \
                        and not any(isinstance(n, (N.Call, N.AssignExpr)) or
                                    isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--") for n in walk(k)):
                    x.first_lanes[s.name] = k
                else:
                    x.first_lanes.pop(s.name, None)
        elif isinstance(s, N.Decl):
            x.first_lanes.pop(s.name, None)
        if isinstance(s, N.Block):
            out.append(s.with_(stmts=_lower_body(x, s.stmts)))
        elif isinstance(s, N.For):
            out.append(s.with_(body=N.Block(_lower_body(x, s.body.stmts))))
        elif isinstance(s, N.CFor):
            body = s.body.stmts if isinstance(s.body, N.Block) else (s.body,)
            out.append(s.with_(body=N.Block(_lower_body(x, body))))
        elif isinstance(s, N.While):
            body = s.body.stmts if isinstance(s.body, N.Block) else (s.body,)
            out.append(s.with_(body=N.Block(_lower_body(x, body))))
        elif isinstance(s, N.If):
            pre = []
            cnd = s.cond
            if any(_name(n) and is_x86(_name(n)) for n in walk(cnd)):
                x.refuse("an intrinsic in an if condition", s)
            then = N.Block(_lower_body(x, s.then.stmts if isinstance(s.then, N.Block) else (s.then,)))
            els = None
            if s.else_ is not None:
                els = N.Block(_lower_body(x, s.else_.stmts if isinstance(s.else_, N.Block) else (s.else_,)))
            out.append(s.with_(then=then, else_=els))
        else:
            tmp = []
            x.lower_stmt(s, tmp)
            if len(tmp) == 1 or isinstance(s, N.Decl):
                out.extend(tmp)
            else:
                out.append(N.Block(tuple(tmp), loc=s.loc))
    return tuple(out)


#: vector math helpers tensorize writes (passes/patterns/x86_math.py) -> the scalar function each
#: one computes (within 2 ulp, same inf / 0 / NaN; tested there); xp_gelu512 (relative error
#: <= 2.55e-6) lowers to the scalar expression 0.5f * v * (1.0f + erff(v * 0.70710678f))
GELU = "gelu"
KNOWN_HELPERS = {"xp_exp512": "expf", "xp_erf512": "erff", "xp_tanh512": "tanhf", "xp_gelu512": GELU}


def known_helpers(program: N.Program) -> dict:
    """{name: scalar function} of the helper functions whose definition is exactly tensorize's
    (compared node by node with x86_math's text): their calls lower lane-wise to the scalar
    function, the definitions are dropped.  A function of the same name with any other body is
    lowered like any other vector function."""
    from ..patterns import x86_math
    from xpiler.frontend import parse_text
    out = {}
    for f in program.funcs:
        if f.name in KNOWN_HELPERS and f.body is not None:
            ref = [it for it in parse_text("#include <immintrin.h>\n" + x86_math.HELPERS[f.name], "c",
                                           f"{f.name}.c").items if isinstance(it, N.Func)]
            if ref and ref[0].body == f.body and ref[0].params == f.params and ref[0].ret == f.ret:
                out[f.name] = KNOWN_HELPERS[f.name]
    return out


# ------------------------------------------------------------------ mask registers (k0-k7)
#: mask width in bits -> the unsigned scalar that holds it
_MASK_INT = {8: ("uint8", "uint8_t"), 16: ("uint16", "uint16_t"), 32: ("uint32", "uint32_t"),
             64: ("uint64", "uint64_t")}
#: the AVX512F legacy spellings of the 16-bit mask operations
_LEGACY_K = {"_mm512_kand": "_kand_mask16", "_mm512_kor": "_kor_mask16", "_mm512_kxor": "_kxor_mask16",
             "_mm512_kandn": "_kandn_mask16", "_mm512_knot": "_knot_mask16", "_mm512_kxnor": "_kxnor_mask16",
             "_mm512_int2mask": "_cvtu32_mask16", "_mm512_mask2int": "_cvtmask16_u32",
             "_mm512_kortestz": "_kortestz_mask16_u8", "_mm512_kortestc": "_kortestc_mask16_u8"}


def _mask_op(name):
    """(operation, width) of a mask-register intrinsic name, or None."""
    import re
    name = _LEGACY_K.get(name, name)
    m = re.fullmatch(r"_cvtu(?:32|64)_mask(8|16|32|64)", name)
    if m:
        return "to_mask", int(m.group(1))
    m = re.fullmatch(r"_cvtmask(8|16|32|64)_u(?:32|64)", name)
    if m:
        return "to_int", int(m.group(1))
    m = re.fullmatch(r"_(load|store)_mask(8|16|32|64)", name)
    if m:
        return m.group(1), int(m.group(2))
    m = re.fullmatch(r"_k(and|andn|or|xor|xnor|not|add|shiftli|shiftri)_mask(8|16|32|64)", name)
    if m:
        return m.group(1), int(m.group(2))
    m = re.fullmatch(r"_kortest(z|c)_mask(8|16|32|64)_u8", name)
    if m:
        return "ortest" + m.group(1), int(m.group(2))
    return None


def lower_masks(body):
    """The mask-register intrinsics as plain unsigned arithmetic on the mask (bit ``l`` selects
    lane ``l``): ``_cvtu32_mask16(x)`` -> ``(uint16_t)(x)``, ``_kand_mask16(a, b)`` ->
    ``(uint16_t)(a & b)``, ``_load_mask16(p)`` -> ``*p``, ``_store_mask16(p, m);`` -> ``*p = m;``,
    ``_kortestz_mask16_u8(a, b)`` -> ``(uint16_t)(a | b) == 0``.  Every other node is kept."""
    def fn(n):
        if isinstance(n, N.ExprStmt) and _name(n.expr) and (_mask_op(_name(n.expr)) or ("",))[0] == "store":
            p, m = n.expr.args
            t = N.Scalar(*_MASK_INT[_mask_op(_name(n.expr))[1]])
            return N.Assign(N.UnOp("*", cast(ptr(t), p)), "=", cast(t, m), loc=n.loc)
        nm = _name(n) if isinstance(n, (N.Call, N.Intrinsic)) else None
        op = _mask_op(nm) if nm else None
        if op is None:
            return n
        what, width = op
        t = N.Scalar(*_MASK_INT[width])
        a = n.args
        arity = {"to_mask": 1, "to_int": 1, "load": 1, "store": 2, "not": 1, "shiftli": 2, "shiftri": 2}.get(what, 2)
        if len(a) != arity:
            return n
        if what == "to_mask":
            return cast(t, a[0])
        if what == "to_int":
            return cast(U32 if width < 64 else scalar("uint64"), a[0])
        if what == "load":
            return N.UnOp("*", cast(ptr(t, const=True), a[0]))
        if what == "store":
            return n            # only as a statement (above)
        if what == "not":
            return cast(t, N.UnOp("~", a[0]))
        if what in ("ortestz", "ortestc"):
            both = cast(t, b("|", a[0], a[1]))
            return b("==", both, c(0) if what == "ortestz" else c((1 << width) - 1))
        expr = {"and": lambda: b("&", a[0], a[1]), "andn": lambda: b("&", N.UnOp("~", a[0]), a[1]),
                "or": lambda: b("|", a[0], a[1]), "xor": lambda: b("^", a[0], a[1]),
                "xnor": lambda: N.UnOp("~", b("^", a[0], a[1])), "add": lambda: b("+", a[0], a[1]),
                "shiftli": lambda: b("<<", a[0], a[1]), "shiftri": lambda: b(">>", a[0], a[1])}[what]()
        return cast(t, expr)
    return rewrite(body, fn)


def lower_program(program: N.Program, names, Ctx) -> N.Program:
    known = known_helpers(program)
    if known:
        program = program.with_(items=tuple(it for it in program.items
                                            if not (isinstance(it, N.Func) and it.name in known)))
    # functions taking or returning vectors
    vfuncs = {}
    for f in program.funcs:
        env_t = lambda t: VTYPES.get(t.name, (None,))[0] if isinstance(t, N.Named) else None
        kinds = tuple(env_t(p.type) for p in f.params)
        rk = env_t(f.ret)
        if rk is not None or any(kinds):
            vfuncs[f.name] = (kinds, rk)
    items = []
    for it in program.items:
        if isinstance(it, N.Func) and (it.name in vfuncs or it.body is not None):
            ctx = Ctx(program, it, names)
            x = X86(ctx, vfuncs)
            x.known_math = known
            x.ret_name = None
            params = list(it.params)
            ret = it.ret
            if it.name in vfuncs:
                kinds, rk = vfuncs[it.name]
                params = [p.with_(type=ptr(KIND_TYPE[k])) if k else p for p, k in zip(params, kinds)]
                for p, k in zip(params, kinds):
                    if k:
                        x.vars[p.name] = k
                if rk:
                    x.ret_name = "xpd_ret"
                    names.used.add("xpd_ret")
                    x.vars["xpd_ret"] = rk
                    params.append(N.Param("xpd_ret", ptr(KIND_TYPE[rk])))
                    ret = N.Scalar("void", "void")
            body = it.body
            if body is not None:
                body = dot_cols.lift(it, body, names)
                body = lower_masks(body)
                x.plan_scalars(body)
                body = N.Block(_lower_body(x, body.stmts), loc=body.loc)
                body = _drop_unused(body, x.masks)
                from .step_loops import normalize
                body = normalize(body, ctx.env, names)
                body = chunk_tail.join(it, body, names)
            it = it.with_(params=tuple(params), ret=ret, body=body)
        items.append(it)
    return program.with_(items=tuple(items))
