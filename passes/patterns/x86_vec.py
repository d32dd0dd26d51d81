"""AVX-512 loop vectorizer for tensorize on the ``c`` dialect (float32, 16 lanes).

One loop ``L`` (``for (j = lo; j < hi; j++)``, unit step, bounds invariant in the body) is run
16 iterations at a time: lane ``l`` of every vector value is what iteration ``j + l`` computes.
Its body may hold

* float locals (each becomes an ``__m512`` register private to the 16 lanes),
* int locals that do not depend on ``j`` (kept scalar: the same in every lane; int lets that do
  depend on ``j`` are substituted into the indices that use them),
* stores ``T[idx] (op)= E`` where ``idx`` advances by exactly 1 per iteration of ``j`` (checked on
  the index expression: +, -, and products by integer constants only),
* inner loops and ``if``s whose bounds / conditions do not depend on ``j`` (kept scalar, their
  bodies translated lane-wise: this is what vectorizes ``for j { acc = 0; for k acc += a[k] *
  b[k*N + j]; c[j] = acc; }`` over the output column), and
* reductions into a float scalar declared outside ``L`` (``s += E``, ``s = fmaxf(s, E)``,
  ``fminf``), only when the body has no inner loop: a vector of 16 partial results, folded
  with ``_mm512_reduce_add_ps`` / ``_mm512_reduce_max_ps`` / ``_mm512_reduce_min_ps``.

Legality (the loop is left alone otherwise): lanes must not communicate.  Every array written
in ``L`` is read or written in ``L`` only at exactly the same subscript, so lane ``l`` touches
only its own elements; a value read at a subscript that does not depend on ``j`` (broadcast)
comes from an array ``L`` does not write; local pointers are followed to the parameter or array
they point into, and an access through a pointer whose target is unknown stops the match.
Distinct pointer parameters are taken to be distinct buffers (as the tensorize page says).

Each stored / accumulated value is checked twice: structurally (the translation table below)
and by evaluating the scalar expression (``scalar_eval``) and the vector expression (numpy
lane semantics) on the same probe values.

    a+b a-b a*b a/b -> _mm512_add/sub/mul/div_ps      -a -> a * -1 (keeps -0 and NaN)
    fmaxf fminf max min -> _mm512_max/min_ps (operands ordered so a NaN in the loop's value is
    dropped like fmaxf does; when both operands vary, lanes where the first is NaN are blended
    to the second)     (x > y ? x : y) -> _mm512_max_ps(x, y) exactly     fabsf -> _mm512_abs_ps
    sqrtf -> _mm512_sqrt_ps (correctly rounded, as sqrtf)     expf -> xp_exp512 (x86_math)
    erff -> xp_erf512, tanhf -> xp_tanh512 (x86_math; <= 2 ulp, every float32 input checked)
    0.5 * x * (1 + erff(x * M_SQRT1_2)) and its other spellings (x86_gelu) -> xp_gelu512(x)
    (x86_math; relative error <= 2.55e-6, cheaper than the erf form)
    (float)(a > b) -> _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(...), 1)
    c ? a : b (c varies, a and b read no memory) -> _mm512_mask_blend_ps
    anything that does not depend on j -> _mm512_set1_ps(the scalar expression)
"""
from __future__ import annotations

import math

import numpy as np

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, walk

from . import common as U
from . import scalar_eval as SE
from . import x86_gelu

LANES = 16
M512 = N.Named("__m512")
MASK = N.Named("__mmask16")
BIN = {"+": "_mm512_add_ps", "-": "_mm512_sub_ps", "*": "_mm512_mul_ps", "/": "_mm512_div_ps"}
MAXMIN = {"fmaxf": "max", "fmax": "max", "max": "max", "fminf": "min", "fmin": "min", "min": "min"}
UNARY = {"fabsf": "_mm512_abs_ps", "fabs": "_mm512_abs_ps", "sqrtf": "_mm512_sqrt_ps", "sqrt": "_mm512_sqrt_ps",
         "expf": "xp_exp512", "exp": "xp_exp512", "__expf": "xp_exp512",
         "erff": "xp_erf512", "erf": "xp_erf512", "tanhf": "xp_tanh512", "tanh": "xp_tanh512"}
CMP = {">": "_CMP_GT_OQ", "<": "_CMP_LT_OQ", ">=": "_CMP_GE_OQ", "<=": "_CMP_LE_OQ", "==": "_CMP_EQ_OQ",
       "!=": "_CMP_NEQ_UQ"}
PURE_CALLS = set(MAXMIN) | set(UNARY) | {"rsqrtf", "erff", "erf", "tanhf", "tanh", "logf", "log", "powf"}
INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


class NoVec(Exception):
    """The loop does not have a lane-wise meaning we can prove; the message says why."""


def _I(name, *args):
    return N.Intrinsic(name, tuple(args))


def _f(v):
    return N.Const(float(v), "float32", "")


# ------------------------------------------------------------------------------ program facts
class Facts:
    """What the function declares: element dtypes and roots of pointers / arrays, float scalars."""

    def __init__(self, func):
        self.elem, self.root, self.scalar = {}, {}, {}
        for p in func.params:
            if isinstance(p.type, N.Pointer):
                self.elem[p.name] = U.scalar_dtype(p.type.elem)
                self.root[p.name] = p.name
            else:
                self.scalar[p.name] = U.scalar_dtype(p.type)
        lets = U.decl_lets(func)
        count = {}
        for n in walk(func.body):
            if isinstance(n, N.Decl):
                count[n.name] = count.get(n.name, 0) + 1
        for n in walk(func.body):
            if not isinstance(n, N.Decl) or count[n.name] != 1:
                continue
            if isinstance(n.type, N.Array):
                self.elem[n.name] = U.scalar_dtype(n.type.elem)
                self.root[n.name] = n.name
            elif isinstance(n.type, N.Pointer):
                self.elem[n.name] = U.scalar_dtype(n.type.elem)
                self.root[n.name] = self._root_of(lets.get(n.name)) if n.name in lets else None
            else:
                self.scalar[n.name] = U.scalar_dtype(n.type)
        for n in walk(func.body):      # shadowed / redeclared names are unknown
            if isinstance(n, N.Decl) and count[n.name] != 1:
                self.elem.pop(n.name, None)
                self.root.pop(n.name, None)
                self.scalar.pop(n.name, None)

    def _root_of(self, e):
        while True:
            if isinstance(e, N.Cast):
                e = e.expr
            elif isinstance(e, N.BinOp) and e.op in ("+", "-"):
                e = e.lhs
            elif isinstance(e, N.UnOp) and e.op == "&" and isinstance(e.operand, N.Index):
                e = e.operand.base
            elif isinstance(e, N.Index):
                e = e.base
            else:
                break
        return self.root.get(e.name) if isinstance(e, N.Var) else None

    def base_var(self, e):
        while isinstance(e, N.Index):
            e = e.base
        return e.name if isinstance(e, N.Var) else None


def coef(e, var):
    """How much ``e`` grows when ``var`` grows by 1, when ``e`` is affine in it with an integer
    constant coefficient; None otherwise."""
    e = U.strip_casts(e)
    if not any(isinstance(n, N.Var) and n.name == var for n in walk(e)):
        return 0
    if isinstance(e, N.Var):
        return 1
    if isinstance(e, N.BinOp) and e.op in ("+", "-"):
        a, b = coef(e.lhs, var), coef(e.rhs, var)
        if a is None or b is None:
            return None
        return a + b if e.op == "+" else a - b
    if isinstance(e, N.UnOp) and e.op == "-":
        a = coef(e.operand, var)
        return None if a is None else -a
    if isinstance(e, N.UnOp) and e.op == "+":
        return coef(e.operand, var)
    if isinstance(e, N.BinOp) and e.op == "*":
        for k, x in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            k = U.strip_casts(k)
            if isinstance(k, N.Const) and isinstance(k.value, int) and not isinstance(k.value, bool):
                c = coef(x, var)
                return None if c is None else c * k.value
    return None


# ------------------------------------------------------------------------------ the translator
class Lanes:
    def __init__(self, facts: Facts, loop: N.For, body_stmts):
        self.f = facts
        self.j = loop.var
        self.vecs: set = set()          # float locals of the body (now __m512)
        self.local_ints: set = set()    # int locals declared in the body (uniform)
        self.inner: set = set()         # inner loop variables (uniform)
        self.writes: dict = {}          # root -> set of (access text) written
        self.accesses: list = []        # (root, access node) of every array access
        self.leaves: list = []          # (scalar leaf, vector leaf) pairs of the current expression
        self.checks: list = []          # (scalar expr, vector expr) to compare on probes
        self.helpers: set = set()
        self._scan(body_stmts)

    # ---- facts about the body
    def _scan(self, stmts):
        blk = N.Block(tuple(stmts))
        for n in walk(blk):
            if isinstance(n, N.Decl):
                dt = U.scalar_dtype(n.type) if isinstance(n.type, (N.Scalar, N.Named)) else None
                if isinstance(n.type, N.Array):
                    raise NoVec(f"array '{n.name}' declared inside the loop")
                if isinstance(n.type, N.Pointer):
                    raise NoVec(f"pointer '{n.name}' declared inside the loop")
                if dt == "float32":
                    self.vecs.add(n.name)
                elif dt in INT_DTYPES:
                    self.local_ints.add(n.name)
                else:
                    raise NoVec(f"local '{n.name}' of type {dt}")
            elif isinstance(n, N.For):
                self.inner.add(n.var)
            elif isinstance(n, (N.Assign, N.AssignExpr)):
                t = n.target
                if isinstance(t, N.Index):
                    r = self._root(t)
                    self.writes.setdefault(r, set()).add(t)
            elif isinstance(n, (N.CFor, N.While, N.Barrier, N.Raw, N.Return)) or type(n).__name__ in (
                    "Break", "Continue", "Goto", "Label", "Switch"):
                raise NoVec(f"{type(n).__name__} in the loop body")
        inner_rows = {id(n.base) for n in walk(blk) if isinstance(n, N.Index) and isinstance(n.base, N.Index)}
        for n in walk(blk):
            if isinstance(n, N.Index) and id(n) not in inner_rows and self.f.base_var(n) is not None:
                self.accesses.append((self._root(n), n))
        for r, ws in self.writes.items():
            for root, acc in self.accesses:
                if root == r and any(acc != w for w in ws):
                    raise NoVec(f"'{r}' is written and also accessed at another subscript in the loop")

    def _root(self, idx):
        name = self.f.base_var(idx)
        if name is None or name not in self.f.root:
            raise NoVec(f"access through '{name}' whose buffer is unknown")
        r = self.f.root[name]
        if r is None:
            raise NoVec(f"pointer '{name}' points into an unknown buffer")
        return r

    def depends(self, e) -> bool:
        for n in walk(e):
            if isinstance(n, N.Var) and (n.name == self.j or n.name in self.vecs):
                return True
            if isinstance(n, N.Index) and self.f.base_var(n) is not None and \
                    self.f.root.get(self.f.base_var(n)) in self.writes:
                return True
        return False

    def uniform_ok(self, e) -> bool:
        for n in walk(e):
            if isinstance(n, (N.AssignExpr, N.Comma)) or (isinstance(n, N.UnOp) and n.op in ("++", "--", "p++",
                                                                                              "p--")):
                return False
            if isinstance(n, N.Call) and n.func not in PURE_CALLS:
                return False
            if isinstance(n, N.Intrinsic) and n.name not in PURE_CALLS:
                return False
        return True

    # ---- expressions
    def load_ptr(self, idx):
        c = coef(idx.index, self.j)
        if c != 1 or self.f.base_var(idx) is None:
            raise NoVec(f"access {self.f.base_var(idx)}[...] does not advance by one element per iteration")
        if self.depends(idx.base) or any(isinstance(n, N.Var) and n.name in self.vecs for n in walk(idx.index)):
            raise NoVec("subscript depends on a float value")
        if self.f.elem.get(self.f.base_var(idx)) != "float32":
            raise NoVec(f"'{self.f.base_var(idx)}' is not a float32 buffer")
        self._root(idx)
        return N.UnOp("&", idx)

    def vec(self, e, mask):
        if not self.depends(e):
            if not self.uniform_ok(e):
                raise NoVec("impure invariant expression")
            if isinstance(e, N.Const) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
                return _I("_mm512_set1_ps", _f(e.value))
            if (isinstance(e, N.Index) and self.f.elem.get(self.f.base_var(e)) == "float32") or (
                    isinstance(e, N.Var) and self.f.scalar.get(e.name) == "float32"):
                v = _I("_mm512_set1_ps", e)
            else:
                v = _I("_mm512_set1_ps", N.Cast(N.Scalar("float32", "float"), e))
            self.leaves.append((e, v))
            return v
        if isinstance(e, N.Var):
            if e.name in self.vecs:
                self.leaves.append((e, e))
                return e
            raise NoVec(f"'{e.name}' used as a value")
        if isinstance(e, N.Index):
            p = self.load_ptr(e)
            v = _I("_mm512_maskz_loadu_ps", mask, p) if mask is not None else _I("_mm512_loadu_ps", p)
            self.leaves.append((e, v))
            return v
        gx = x86_gelu.match(e, self.depends) if isinstance(e, N.BinOp) and e.op == "*" else None
        if gx is not None:               # exact gelu: one call of the gelu-specific helper
            self.helpers.add("xp_gelu512")
            return _I("xp_gelu512", self.vec(gx, mask))
        if isinstance(e, N.BinOp) and e.op in BIN:
            return _I(BIN[e.op], self.vec(e.lhs, mask), self.vec(e.rhs, mask))
        if isinstance(e, N.UnOp) and e.op == "-":
            return _I("_mm512_mul_ps", self.vec(e.operand, mask), _I("_mm512_set1_ps", _f(-1.0)))
        if isinstance(e, N.UnOp) and e.op == "+":
            return self.vec(e.operand, mask)
        if isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype == "float32":
            if isinstance(e.expr, N.BinOp) and e.expr.op in CMP:
                m = self.cmp(e.expr, mask)
                return _I("_mm512_maskz_mov_ps", m, _I("_mm512_set1_ps", _f(1.0)))
            return self.vec(e.expr, mask)
        if isinstance(e, (N.Intrinsic, N.Call)):
            name = e.name if isinstance(e, N.Intrinsic) else e.func
            if name in MAXMIN and len(e.args) == 2:
                a, b = e.args
                op = f"_mm512_{MAXMIN[name]}_ps"
                if self.depends(a) and self.depends(b):
                    # fmaxf drops a NaN in either operand: max_ps(b, a) drops one in b; lanes
                    # where a is NaN take b
                    va, vb = self.vec(a, mask), self.vec(b, mask)
                    nan_a = _I("_mm512_cmp_ps_mask", va, va, N.Var("_CMP_UNORD_Q"))
                    return _I("_mm512_mask_blend_ps", nan_a, _I(op, vb, va), vb)
                if not self.depends(a):          # keep the varying operand first: NaN in it is dropped
                    a, b = b, a
                return _I(op, self.vec(a, mask), self.vec(b, mask))
            if name in UNARY and len(e.args) == 1:
                if UNARY[name].startswith("xp_"):
                    self.helpers.add(UNARY[name])
                return _I(UNARY[name], self.vec(e.args[0], mask))
            if name == "rsqrtf" and len(e.args) == 1:
                return _I("_mm512_div_ps", _I("_mm512_set1_ps", _f(1.0)), _I("_mm512_sqrt_ps",
                                                                                self.vec(e.args[0], mask)))
            raise NoVec(f"no AVX-512 form of {name}()")
        if isinstance(e, N.Cond):
            c = e.cond
            if isinstance(c, N.BinOp) and c.op in (">", "<") and \
                    ((e.then == c.lhs and e.else_ == c.rhs) or (e.then == c.rhs and e.else_ == c.lhs)):
                big = (c.op == ">") == (e.then == c.lhs)
                # x > y ? x : y is exactly _mm512_max_ps(x, y) (SRC1 > SRC2 ? SRC1 : SRC2, NaN
                # or equal -> y), and a > b ? b : a is b < a ? b : a = _mm512_min_ps(b, a)
                return _I("_mm512_max_ps" if big else "_mm512_min_ps", self.vec(e.then, mask),
                          self.vec(e.else_, mask))
            if isinstance(c, N.BinOp) and c.op in CMP and self.depends(c):
                if any(isinstance(n, N.Index) for n in walk(e.then)) or any(
                        isinstance(n, N.Index) for n in walk(e.else_)):
                    raise NoVec("conditional that reads memory in a branch")
                m = self.cmp(c, mask)
                return _I("_mm512_mask_blend_ps", m, self.vec(e.else_, mask), self.vec(e.then, mask))
            raise NoVec("conditional")
        raise NoVec(type(e).__name__)

    def cmp(self, c, mask):
        if not (self.depends(c.lhs) or self.depends(c.rhs)):
            raise NoVec("invariant comparison")
        return _I("_mm512_cmp_ps_mask", self.vec(c.lhs, mask), self.vec(c.rhs, mask), N.Var(CMP[c.op]))

    def value(self, e, mask):
        """vec(e), recording (e, result) for the probe check."""
        self.leaves = []
        v = self.vec(e, mask)
        self.checks.append((e, v, list(self.leaves)))
        return v

    # ---- statements
    def stmts(self, stmts, mask, top=False):
        out = []
        for s in stmts:
            out.extend(self.stmt(s, mask))
        return out

    def stmt(self, s, mask):
        if isinstance(s, N.Comment):
            return [s]
        if isinstance(s, N.Block):
            return [N.Block(tuple(self.stmts(s.stmts, mask)))]
        if isinstance(s, N.Decl):
            if s.name in self.vecs:
                init = self.value(s.init, mask) if s.init is not None else None
                return [N.Decl(s.name, M512, init, loc=s.loc)]
            if s.init is not None and (self.depends(s.init) or not self.uniform_ok(s.init)):
                raise NoVec(f"int local '{s.name}' depends on the lane")
            return [s]
        if isinstance(s, N.Assign):
            t = s.target
            if isinstance(t, N.Var) and t.name in self.vecs:
                val = s.value if s.op == "=" else N.BinOp(s.op[:-1], t, s.value)
                if s.op != "=" and s.op[:-1] not in BIN:
                    raise NoVec(f"operator {s.op}")
                return [N.Assign(t, "=", self.value(val, mask), loc=s.loc)]
            if isinstance(t, N.Var) and t.name in self.local_ints:
                if self.depends(s.value) or not self.uniform_ok(s.value):
                    raise NoVec(f"int local '{t.name}' depends on the lane")
                return [s]
            if isinstance(t, N.Index):
                if s.op != "=" and s.op[:-1] not in BIN:
                    raise NoVec(f"operator {s.op}")
                val = s.value if s.op == "=" else N.BinOp(s.op[:-1], t, s.value)
                p = self.load_ptr(t)
                v = self.value(val, mask)
                st = _I("_mm512_mask_storeu_ps", p, mask, v) if mask is not None else _I("_mm512_storeu_ps", p, v)
                return [N.ExprStmt(st, loc=s.loc)]
            raise NoVec(f"assignment to '{getattr(t, 'name', '?')}' declared outside the loop")
        if isinstance(s, N.For):
            for e in (s.lo, s.hi, s.step):
                if self.depends(e) or not self.uniform_ok(e):
                    raise NoVec(f"bounds of inner loop '{s.var}' depend on the lane")
            if s.binding is not None:
                raise NoVec(f"inner loop '{s.var}' is bound")
            return [s.with_(body=N.Block(tuple(self.stmts(s.body.stmts, mask))))]
        if isinstance(s, N.If):
            if self.depends(s.cond) or not self.uniform_ok(s.cond):
                raise NoVec("condition depends on the lane")
            then = N.Block(tuple(self.stmts(_stmts(s.then), mask)))
            els = N.Block(tuple(self.stmts(_stmts(s.else_), mask))) if s.else_ is not None else None
            return [s.with_(then=then, else_=els)]
        raise NoVec(type(s).__name__)


def _stmts(s):
    return list(s.stmts) if isinstance(s, N.Block) else [s]


# ------------------------------------------------------------------------------ probe check
_VNP = {"_mm512_add_ps": np.add, "_mm512_sub_ps": np.subtract, "_mm512_mul_ps": np.multiply,
        "_mm512_div_ps": np.divide, "_mm512_max_ps": lambda a, b: np.where(a > b, a, b),
        "_mm512_min_ps": lambda a, b: np.where(a < b, a, b),
        "_mm512_abs_ps": np.abs, "_mm512_sqrt_ps": np.sqrt, "xp_exp512": np.exp,
        "xp_erf512": np.vectorize(math.erf, otypes=[np.float64]), "xp_tanh512": np.tanh,
        "xp_gelu512": np.vectorize(lambda v: 0.5 * v * math.erfc(-v / math.sqrt(2.0)), otypes=[np.float64])}
_CNP = {"_CMP_GT_OQ": np.greater, "_CMP_LT_OQ": np.less, "_CMP_GE_OQ": np.greater_equal,
        "_CMP_LE_OQ": np.less_equal, "_CMP_EQ_OQ": np.equal, "_CMP_NEQ_UQ": np.not_equal,
        "_CMP_UNORD_Q": lambda a, b: np.isnan(a) | np.isnan(b)}


def _vev(v, env):
    if id(v) in env:
        return env[id(v)]
    if isinstance(v, N.Var) and v.name in env:
        return env[v.name]
    if isinstance(v, N.Intrinsic):
        a = v.args
        if v.name == "_mm512_set1_ps":
            return np.float64(a[0].value)
        if v.name in _VNP:
            return _VNP[v.name](*[_vev(x, env) for x in a])
        if v.name == "_mm512_cmp_ps_mask":
            return _CNP[a[2].name](_vev(a[0], env), _vev(a[1], env))
        if v.name == "_mm512_maskz_mov_ps":
            return np.where(_vev(a[0], env), _vev(a[1], env), 0.0)
        if v.name == "_mm512_mask_blend_ps":
            return np.where(_vev(a[0], env), _vev(a[2], env), _vev(a[1], env))
    raise SE.NotEvaluable(str(v)[:60])


def same_function(scalar, vector, leaves) -> bool:
    """Evaluate both on probes: each leaf (load, invariant, float local) gets its own probe, and
    leaves that are the same expression (one element read twice, one scalar used twice) the same
    probe: they hold one value in the loop's iteration. (Each occurrence getting its own probe made
    ``(x[i] - m) * (x[i] - m)`` look unlike the loop whenever one node object stood at both places,
    e.g. a value substituted twice by passes/unstage_rows.py, which then stayed scalar.)"""
    pr = SE.probes()
    senv, venv, subst = {}, {}, {}
    first: list = []                       # one representative per distinct leaf expression
    for s, v in leaves:
        k = next((n for n, f in enumerate(first) if f == s), None)
        if k is None:
            k = len(first)
            first.append(s)
        vals = np.roll(pr, 7 * k)
        name = f"__leaf{k}"
        senv[name] = vals
        venv[id(v)] = vals
        if isinstance(v, N.Var):
            venv[v.name] = vals
        subst[id(s)] = N.Var(name)

    def fn(n):
        return subst.get(id(n), n)
    try:
        s_expr = _replace_ids(scalar, subst)
        want = SE.evaluate(s_expr, senv)
        with np.errstate(all="ignore"):
            got = _vev(vector, venv)
    except SE.NotEvaluable:
        return True            # a leaf kind the evaluators do not know: the structural table decides
    return SE.same(got, want)


def _replace_ids(e, subst):
    if id(e) in subst:
        return subst[id(e)]
    if not isinstance(e, N.Node):
        return e
    changes = {}
    for fname in e.__dataclass_fields__:
        val = getattr(e, fname)
        if isinstance(val, N.Node):
            nv = _replace_ids(val, subst)
            if nv is not val:
                changes[fname] = nv
        elif isinstance(val, tuple) and any(isinstance(x, N.Node) for x in val):
            nt = tuple(_replace_ids(x, subst) if isinstance(x, N.Node) else x for x in val)
            if any(a is not b for a, b in zip(nt, val)):
                changes[fname] = nt
    return e.with_(**changes) if changes else e
