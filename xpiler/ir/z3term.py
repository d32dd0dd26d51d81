"""The one IR -> Z3 translation of integer expressions and conditions, for every analysis.

:class:`Terms` walks an expression once and builds a Z3 ``Int`` term (:meth:`Terms.int`) or a
Z3 ``Bool`` (:meth:`Terms.bool`). What differs between the analyses is set by the caller, never
by a second translator:

* **names** -- a resolver callback (``names=``) or the :meth:`Terms.name` hook gives the term of a
  variable or builtin;
* **which optional constructs are read** (:attr:`Terms.reads`): ``c ? a : b``, ``min``/``max``,
  a comparison used as an integer, ``<<`` / ``>>`` by a constant, ``bool`` constants, an integer
  used as a condition. A translator that reads fewer constructs refuses (or makes unknown) the
  rest; so a pass that proves less keeps proving exactly what it proved;
* **the policy for an untranslatable term** (:attr:`Terms.policy`):

  - :data:`REFUSE` raises (:meth:`Terms.refusal`, by default :class:`Untranslatable`).
  - :data:`UNKNOWN` returns a term with no constraint at all (:meth:`Terms.unknown` for a leaf
    such as a float constant, an unknown call or a non-integer cast; :meth:`Terms.opaque` for an
    operator the model does not read).

  An unknown is sound for a query whose answer is used only when the solver says ``unsat`` (a
  proof then holds for *every* value of the unknown, so for the real one): "no two iterations
  touch the same element", "this index is in range". It is not sound where a ``sat`` answer or a
  model is used (repair solves for hole values that reproduce examples: an unknown would let any
  filling "agree"), so such callers use ``REFUSE``; the provers of passes/patterns/polyz.py
  refuse too, so that a pass says which term it could not read.

C's truncated ``/`` and ``%`` have one encoding, :func:`c_div` / :func:`c_rem` (pure terms;
see docs/z3term.md and the proof in tests/test_z3term.py that it agrees with the
auxiliary-variable form :func:`c_divmod_facts` on all integers). The dependence analysis
(passes/dependence.py) names the quotient and remainder (``q``, ``r`` with
:func:`c_divmod_facts`) because its cross-iteration lemma speaks of them; that is the same
relation, stated with names.
"""
from __future__ import annotations

import itertools

import z3

from . import nodes as N

#: integer types whose casts the model reads as the value itself (an over-approximation only
#: where the value would wrap, which the programs the analyses read never rely on)
INT_DTYPES = frozenset({"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "char", "bool"})

REFUSE = "refuse"
UNKNOWN = "unknown"

CMP = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
       "==": lambda a, b: a == b, "!=": lambda a, b: a != b}

#: every optional construct :class:`Terms` can read
ALL_READS = frozenset({"bool_const", "cond", "minmax", "cmp_int", "shl", "shr", "int_as_bool"})


class Untranslatable(Exception):
    """A term the translation does not describe, under the :data:`REFUSE` policy."""

    def __init__(self, why, node=None):
        super().__init__(why)
        self.why, self.node = why, node


def c_div(a, b):
    """C's ``a / b`` (truncation toward zero) as a Z3 term; Z3's own ``/`` on integers is
    Euclidean (the floor for ``b > 0``), so each sign case is brought to non-negative operands.
    Unconstrained where ``b == 0`` (undefined in C)."""
    return z3.If(a >= 0, z3.If(b > 0, a / b, -(a / -b)), z3.If(b > 0, -((-a) / b), (-a) / -b))


def c_rem(a, b):
    """C's ``a % b``: ``a - b * (a / b)`` with :func:`c_div`."""
    return a - b * c_div(a, b)


def c_divmod_facts(a, d, q, r) -> list:
    """The same relation with the quotient ``q`` and remainder ``r`` named: ``d != 0``,
    ``a == d*q + r``, ``|r| < |d|`` and ``r`` has the sign of ``a`` (or is 0). For ``d != 0``
    these hold exactly when ``q == c_div(a, d)`` and ``r == c_rem(a, d)``."""
    return [d != 0, a == d * q + r, z3.Implies(a >= 0, r >= 0), z3.Implies(a < 0, r <= 0),
            z3.If(r >= 0, r, -r) < z3.If(d >= 0, d, -d)]


def _int_const(e):
    return isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool)


class Terms:
    """IR -> Z3. Subclass (or pass ``policy``/``names``) to set what a caller needs; the hooks are
    :meth:`special`, :meth:`special_bool`, :meth:`name`, :meth:`call`, :meth:`divide`,
    :meth:`shift_right`, :meth:`unknown`, :meth:`opaque` and :meth:`refusal`.

    ``depth`` counts nesting; past :attr:`max_depth` (when set) a term is :meth:`unknown`."""

    policy = REFUSE
    reads = ALL_READS
    int_casts = INT_DTYPES          # casts read as their operand in an integer term
    bool_casts = None               # casts read through in a condition (None: every cast)
    max_depth = None
    int_why = "not integer arithmetic the translation reads"
    bool_why = "not a condition the translation reads"

    def __init__(self, policy=None, names=None, reads=None):
        if policy is not None:
            self.policy = policy
        if reads is not None:
            self.reads = frozenset(reads)
        self.names = names
        self.fresh = itertools.count()

    # ------------------------------------------------------------------ hooks
    def refusal(self, why, node):
        """The exception :data:`REFUSE` raises."""
        return Untranslatable(why, node)

    def unknown(self, e, depth):
        """An unconstrained term for a leaf the model does not describe."""
        if self.policy == REFUSE:
            raise self.refusal(self.int_why, e)
        return z3.Int(f"unk{next(self.fresh)}")

    def opaque(self, e, depth):
        """An unconstrained term for an operator the model does not read."""
        return self.unknown(e, depth)

    def unknown_bool(self, e, depth):
        if self.policy == REFUSE:
            raise self.refusal(self.bool_why, e)
        return z3.Bool(f"ub{next(self.fresh)}")

    def special(self, e, depth):
        """A term for ``e`` read before the generic rules (None: not handled)."""
        return None

    def special_bool(self, e, depth):
        return None

    def name(self, e, depth):
        """The term of a ``Var`` / ``Builtin``: the ``names`` callback's, else unknown."""
        t = self.names(e) if self.names is not None else None
        return t if t is not None else self.unknown(e, depth)

    def call(self, e, depth):
        """A call other than ``min``/``max`` (None: untranslatable)."""
        return None

    def divide(self, e, depth):
        """``e.lhs / e.rhs`` or ``e.lhs % e.rhs`` in C's semantics."""
        a, b = self.int(e.lhs, depth + 1), self.int(e.rhs, depth + 1)
        return c_div(a, b) if e.op == "/" else c_rem(a, b)

    def shift_right(self, e, a, k, depth):
        """``a >> k`` for a constant ``k``: the floor of ``a / 2**k`` (Z3's ``/`` by a positive
        constant floors)."""
        return a / (1 << k)

    # ------------------------------------------------------------------ the walk
    def int(self, e, depth=0):
        """A Z3 ``Int`` term for the integer expression ``e``."""
        if self.max_depth is not None and depth > self.max_depth:
            return self.unknown(e, depth)
        t = self.special(e, depth)
        if t is not None:
            return t
        if isinstance(e, N.Const):
            if isinstance(e.value, bool):
                return z3.IntVal(int(e.value)) if "bool_const" in self.reads else self.unknown(e, depth)
            if isinstance(e.value, int):
                return z3.IntVal(e.value)
            return self.unknown(e, depth)
        if isinstance(e, (N.Var, N.Builtin)):
            return self.name(e, depth)
        if isinstance(e, N.Cast):
            if isinstance(e.type, N.Scalar) and e.type.dtype in self.int_casts:
                return self.int(e.expr, depth + 1)
            return self.unknown(e, depth)
        if isinstance(e, N.UnOp) and e.op in ("-", "+"):
            x = self.int(e.operand, depth + 1)
            return -x if e.op == "-" else x
        if isinstance(e, N.Cond) and "cond" in self.reads:
            c = self.bool(e.cond, depth + 1)
            return z3.If(c, self.int(e.then, depth + 1), self.int(e.else_, depth + 1))
        if isinstance(e, N.Call) and isinstance(e.func, str):
            t = self.call(e, depth)
            if t is not None:
                return t
            if e.func in ("min", "max") and len(e.args) == 2 and "minmax" in self.reads:
                return self._minmax(e.func, e.args, depth)
            return self.unknown(e, depth)
        if isinstance(e, N.Intrinsic) and e.name in ("min", "max") and len(e.args) == 2 and "minmax" in self.reads:
            # std::min / std::max of integers (the front end's intrinsic for non-float operands)
            return self._minmax(e.name, e.args, depth)
        if "cmp_int" in self.reads and (isinstance(e, N.BinOp) and (e.op in CMP or e.op in ("&&", "||"))
                                        or isinstance(e, N.UnOp) and e.op == "!"):
            return z3.If(self.bool(e, depth + 1), z3.IntVal(1), z3.IntVal(0))
        if isinstance(e, N.BinOp):
            if e.op in ("+", "-", "*"):
                a, b = self.int(e.lhs, depth + 1), self.int(e.rhs, depth + 1)
                return a + b if e.op == "+" else a - b if e.op == "-" else a * b
            if e.op in ("/", "%"):
                return self.divide(e, depth)
            if e.op in ("<<", ">>") and isinstance(e.rhs, N.Const) and isinstance(e.rhs.value, int) \
                    and ("shl" if e.op == "<<" else "shr") in self.reads:
                a = self.int(e.lhs, depth + 1)
                if e.op == "<<":
                    return a * (1 << e.rhs.value)
                return self.shift_right(e, a, e.rhs.value, depth)
        return self.opaque(e, depth)

    def _minmax(self, which, args, depth):
        a, b = (self.int(x, depth + 1) for x in args)
        return z3.If(a <= b, a, b) if which == "min" else z3.If(a >= b, a, b)

    def bool(self, e, depth=0):
        """A Z3 ``Bool`` for the condition ``e``."""
        if self.max_depth is not None and depth > self.max_depth:
            return self.unknown_bool(e, depth)
        t = self.special_bool(e, depth)
        if t is not None:
            return t
        if isinstance(e, N.Cast) and (self.bool_casts is None or
                                      isinstance(e.type, N.Scalar) and e.type.dtype in self.bool_casts):
            return self.bool(e.expr, depth + 1)
        if isinstance(e, N.BinOp) and e.op in CMP:
            return CMP[e.op](self.int(e.lhs, depth + 1), self.int(e.rhs, depth + 1))
        if isinstance(e, N.BinOp) and e.op in ("&&", "||"):
            a, b = self.bool(e.lhs, depth + 1), self.bool(e.rhs, depth + 1)
            return z3.And(a, b) if e.op == "&&" else z3.Or(a, b)
        if isinstance(e, N.UnOp) and e.op == "!":
            return z3.Not(self.bool(e.operand, depth + 1))
        if "int_as_bool" in self.reads:
            return self.int(e, depth + 1) != 0
        raise self.refusal(self.bool_why, e)

    def value(self, e, depth=0):
        """A ``Bool`` for a condition-shaped ``e`` (a comparison, ``&&``, ``||``, ``!``, a
        ``bool`` constant), else an ``Int``."""
        if isinstance(e, N.Const) and isinstance(e.value, bool):
            return z3.BoolVal(e.value)
        if isinstance(e, N.BinOp) and (e.op in CMP or e.op in ("&&", "||")) or isinstance(e, N.UnOp) and e.op == "!":
            return self.bool(e, depth)
        return self.int(e, depth)
