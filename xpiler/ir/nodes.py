"""The single IR of xpiler: immutable (frozen) dataclasses for all four dialects.

One program representation serves cuda, hip, bang and c.  Dialect differences live in
*attributes* (memory scope of a buffer, parallel binding of a loop, barrier kind, launch
style) and are rendered by the per-dialect printers in ``xpiler.printers``.

Every node has ``loc`` (file, line, col of the original source); ``loc`` is excluded from
equality and hashing so structurally equal programs compare equal whatever their origin.
Children are tuples, so nodes are hashable and safe to share between program versions
(transformations build new nodes; see ``xpiler.ir.visit.rewrite``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Optional, Union


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}" if self.col else f"{self.file}:{self.line}"


def _loc():
    return field(default=None, compare=False, repr=False, kw_only=True)


#: per node class, the names of its fields other than ``loc`` (``dataclasses.fields`` rebuilds its
#: tuple on every call, and the analyses walk millions of nodes: the tuner's expansion spent a
#: quarter of its time there)
_CHILD_FIELDS: dict = {}


def child_fields(cls) -> tuple:
    """The field names of node class ``cls`` other than ``loc``, in declaration order."""
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = _CHILD_FIELDS[cls] = tuple(f.name for f in fields(cls) if f.name != "loc")
    return names


class Node:
    """Base of every IR node."""

    def with_(self, **kw):
        return replace(self, **kw)

    def children(self):
        for name in child_fields(type(self)):
            v = getattr(self, name)
            if isinstance(v, Node):
                yield v
            elif isinstance(v, tuple):
                for x in v:
                    if isinstance(x, Node):
                        yield x


# --------------------------------------------------------------------------------- types
#: canonical dtype names of scalars (the spec's names plus what kernels also use)
SCALAR_DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "uint16",
                 "int32", "uint32", "int64", "uint64", "bool", "char", "void")

#: memory scopes of buffers
SCOPES = ("global", "shared", "nram", "wram", "sram", "constant", "local")


class Type(Node):
    pass


@dataclass(frozen=True)
class Scalar(Type):
    dtype: str                      # one of SCALAR_DTYPES
    spelling: str = ""              # the source's spelling ("__half", "int32_t", "unsigned int")
    const: bool = False
    volatile: bool = False
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Pointer(Type):
    elem: Type
    scope: Optional[str] = None     # memory scope of the pointee when known (kernel params: global)
    const: bool = False             # const pointer itself
    restrict: bool = False
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Array(Type):
    elem: Type
    dims: tuple                     # tuple of Expr (None = unsized, e.g. extern __shared__ x[])
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Vector(Type):
    """Short vectors: float4/half2 (CUDA), ext_vector_type typedefs (HIP), __m512i (x86)."""
    elem: Scalar
    n: int
    spelling: str
    const: bool = False
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Fragment(Type):
    """nvcuda::wmma::fragment<kind, m, n, k, elem[, layout]> (m/n/k: Expr, e.g. a macro)."""
    kind: str                       # matrix_a | matrix_b | accumulator
    m: Any
    n: Any
    k: Any
    elem: Type
    layout: Optional[str] = None    # row_major | col_major
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Named(Type):
    """An opaque named type: dim3, cudaStream_t, cnrtQueue_t, a user typedef name..."""
    name: str
    target: Optional[Type] = None   # what a user typedef stands for, when known
    const: bool = False
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Field(Node):
    """One member of a ``Struct``."""
    name: str
    type: Type
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Struct(Type):
    """A struct/union definition a typedef names: ``typedef struct { float x, y; } P;``."""
    kind: str                       # struct | union
    tag: Optional[str]              # None for an anonymous struct
    fields: tuple                   # tuple of Field
    attrs: tuple = ()               # the struct's own attribute text, e.g. '__attribute__((aligned(16)))'
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class FuncType(Type):
    ret: Type
    params: tuple
    loc: Optional[Loc] = _loc()


# ---------------------------------------------------------------------------- expressions
class Expr(Node):
    pass


@dataclass(frozen=True)
class Const(Expr):
    value: Any                      # int | float | bool | str (string/char literal text) | None (nullptr)
    dtype: str = "int32"
    text: str = ""                  # source spelling ("1.0f", "0xffffffffu"); printers keep it
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Var(Expr):
    name: str
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Builtin(Expr):
    """A parallel-model builtin: threadIdx.x, blockDim.y, warpSize, taskId, clusterId, coreDim..."""
    name: str
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class BinOp(Expr):
    op: str
    lhs: Expr
    rhs: Expr
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class UnOp(Expr):
    op: str                         # - + ! ~ * & ++ -- p++ p-- (p = postfix)
    operand: Expr
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Cond(Expr):
    cond: Expr
    then: Expr
    else_: Expr
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Index(Expr):
    base: Expr
    index: Expr
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Member(Expr):
    base: Expr
    field: str
    arrow: bool = False
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Call(Expr):
    func: Any                       # str (a function name) or Expr
    args: tuple
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Intrinsic(Expr):
    """A call whose semantics are defined once in ``xpiler.ir.intrinsics.REGISTRY[name]``."""
    name: str
    args: tuple
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Cast(Expr):
    type: Type
    expr: Expr
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class SizeOf(Expr):
    arg: Any                        # Type or Expr
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class InitList(Expr):
    items: tuple
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class CompoundLit(Expr):
    type: Type
    init: InitList
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class AssignExpr(Expr):
    """An assignment used as a value (``a = b = 0``); statements use Assign."""
    op: str
    target: Expr
    value: Expr
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Comma(Expr):
    exprs: tuple
    loc: Optional[Loc] = _loc()


# ----------------------------------------------------------------------------- statements
class Stmt(Node):
    pass


@dataclass(frozen=True)
class Decl(Stmt):
    """A variable or buffer.  ``scope`` is its memory: local (registers), shared (CUDA/HIP
    __shared__ = LDS), nram / wram / sram (BANG), constant, global (file-scope device data)."""
    name: str
    type: Type
    init: Optional[Expr] = None
    scope: str = "local"
    storage: tuple = ()             # 'static', 'extern', 'constexpr'
    attrs: tuple = ()               # extra qualifier text kept verbatim: '__align__(32)', ...
    ctor: bool = False              # C++ constructor syntax: dim3 grid(a, b, c);
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Assign(Stmt):
    target: Expr
    op: str                         # '=', '+=', '-=', '*=', ...
    value: Expr
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class ExprStmt(Stmt):
    expr: Expr
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Block(Stmt):
    stmts: tuple
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class For(Stmt):
    """Canonical loop: for (var = lo; var < hi; var += step).  ``hi`` is exclusive.

    binding: None (sequential) or a parallel index the iterations are spread over:
    'threadIdx.x'..'blockIdx.z', 'taskId', 'clusterId', 'coreId', 'omp'.  A bound loop
    means: iteration var = lo + b*step for each b of the binding, grid-stride when the
    binding's extent is smaller than the trip count (that is how the printers emit it).
    """
    var: str
    lo: Expr
    hi: Expr
    step: Expr
    body: Block
    binding: Optional[str] = None
    var_type: Optional[Type] = None  # declared in the init (int i = ...), else None
    pragmas: tuple = ()             # pragma texts attached to this loop ('unroll', 'omp parallel for')
    cmp: str = "<"                  # '<' or '<=' as written (hi is stored exclusive either way)
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class CFor(Stmt):
    """A for loop that is not canonical (decreasing, complex condition...)."""
    init: Optional[Any]             # Stmt (Decl/Block of Decls/ExprStmt) or None
    cond: Optional[Expr]
    next: Optional[Expr]
    body: Stmt
    pragmas: tuple = ()
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class While(Stmt):
    cond: Expr
    body: Stmt
    do: bool = False
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    then: Stmt
    else_: Optional[Stmt] = None
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Return(Stmt):
    value: Optional[Expr] = None
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Break(Stmt):
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Continue(Stmt):
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Barrier(Stmt):
    """block (__syncthreads), warp (__syncwarp), cluster (__sync_cluster), all (__sync_all),
    copy (__sync: wait for async copies), fence (__threadfence)."""
    kind: str
    args: tuple = ()
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Launch(Stmt):
    """Host-side kernel launch: k<<<grid, block, shmem, stream>>>(args) or hipLaunchKernelGGL.
    For bang, grid = cnrtDim3_t, block = function type, stream = queue (the <<<>>> order)."""
    kernel: str
    grid: Expr
    block: Expr
    shmem: Optional[Expr] = None
    stream: Optional[Expr] = None
    args: tuple = ()
    style: str = "chevron"          # chevron | ggl
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Pragma(Stmt):
    text: str                       # without '#pragma '
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Comment(Stmt):
    text: str                       # with its // or /* */ markers
    trailing: bool = False          # was at the end of a code line
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Raw(Stmt):
    """Verbatim text the printers re-emit (preprocessor conditionals inside bodies, switch...)."""
    text: str
    loc: Optional[Loc] = _loc()


# ----------------------------------------------------------------------------- top level
@dataclass(frozen=True)
class Param(Node):
    name: str
    type: Type
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Func(Node):
    name: str
    params: tuple
    ret: Type
    body: Optional[Block]           # None for a prototype
    kind: str = "host"              # kernel | device | host
    attrs: tuple = ()               # e.g. ('extern_c', 'static', 'inline', '__forceinline__', '__launch_bounds__(256)')
    loc: Optional[Loc] = _loc()

    def has(self, attr: str) -> bool:
        return any(a == attr or a.startswith(attr + "(") for a in self.attrs)


@dataclass(frozen=True)
class Typedef(Node):
    name: str
    type: Type
    attrs: tuple = ()               # verbatim attribute text, e.g. '__attribute__((ext_vector_type(4)))'
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Directive(Node):
    """A preprocessor line kept in the output: #include, #define, #if..., #pragma at file scope."""
    text: str
    kind: str                       # include | define | pragma | cond | other
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Using(Node):
    text: str                       # 'using namespace nvcuda;'
    loc: Optional[Loc] = _loc()


@dataclass(frozen=True)
class Macro(Node):
    """A #define, with its body parsed as an expression when it is one (for analyses)."""
    name: str
    params: Optional[tuple]         # None: object-like
    body: str
    expr: Optional[Expr] = None
    expanded: bool = False          # the front end expanded its uses before parsing
    loc: Optional[Loc] = _loc()


def _frozen(v):
    """A launch value made hashable: lists become tuples (recursively)."""
    if isinstance(v, (list, tuple)):
        return tuple(_frozen(x) for x in v)
    return v


def _thawed(v):
    """A launch value as the spec and the provenance log write it: tuples become lists."""
    if isinstance(v, tuple):
        return [_thawed(x) for x in v]
    return v


@dataclass(frozen=True)
class LaunchConfig(Node):
    """How one kernel of the program is launched: the spec's ``[launch]`` keys, held by the
    program (:attr:`Program.launches`) so a program and its launch are one value.

    ``entries`` keeps every key in the order it was written, each value as written: an int, or an
    expression text (a dimension in the spec's size names as the source's spec gives it, or in
    the kernel's parameter names once a pass sized it: ``"max((n + 255) / 256, 1)"``), or a
    3-tuple of those (``grid``, ``block``, ``dim``). The spelling is kept exactly, because it is
    what the migrated spec and the provenance log write (docs/decisions.md, 2026-12-04 seventh
    session). The usual keys have accessors: ``grid``, ``block``, ``shared_bytes`` (cuda/hip);
    ``dim``, ``func_type`` (bang)."""
    kernel: str
    entries: tuple = ()             # ((key, value), ...) in the order written

    @classmethod
    def from_dict(cls, kernel: str, launch: dict) -> "LaunchConfig":
        return cls(kernel, tuple((str(k), _frozen(v)) for k, v in (launch or {}).items()))

    def as_dict(self) -> dict:
        """The launch as the spec's ``[launch]`` table (lists, the written order)."""
        return {k: _thawed(v) for k, v in self.entries}

    def get(self, key: str, default=None):
        for k, v in self.entries:
            if k == key:
                return v
        return default

    @property
    def grid(self):
        return self.get("grid")

    @property
    def block(self):
        return self.get("block")

    @property
    def shared_bytes(self):
        return self.get("shared_bytes")

    @property
    def dim(self):
        return self.get("dim")

    @property
    def func_type(self):
        return self.get("func_type")


@dataclass(frozen=True)
class Program(Node):
    dialect: str
    items: tuple                    # in source order: Directive, Using, Typedef, Decl, Func, Comment, Raw
    file: str = "<input>"
    macros: tuple = ()
    #: the launch of each launched kernel (LaunchConfig, at most one per kernel name). Part of the
    #: program's value: two programs that differ only in a launch are different programs
    #: (equality, hash, xpiler.ir.identity.program_key). Passes carry it with ``with_``.
    launches: tuple = ()

    def launch_of(self, kernel: str) -> Optional[LaunchConfig]:
        """The launch of ``kernel``, or None when the program has none for it."""
        for lc in self.launches:
            if lc.kernel == kernel:
                return lc
        return None

    def launch_dict(self, kernel: str) -> dict:
        """The launch of ``kernel`` as the spec's ``[launch]`` table ({} when none)."""
        lc = self.launch_of(kernel)
        return lc.as_dict() if lc is not None else {}

    def with_launch(self, kernel: str, launch) -> "Program":
        """This program with ``kernel`` launched by ``launch`` (a LaunchConfig or a ``[launch]``
        dict); an empty one removes the kernel's launch (a c function has none)."""
        if isinstance(launch, LaunchConfig):
            lc = launch if launch.kernel == kernel else launch.with_(kernel=kernel)
        else:
            lc = LaunchConfig.from_dict(kernel, launch or {})
        keep = (lc,) if lc.entries else ()
        if any(x.kernel == kernel for x in self.launches):     # in place: the order stays
            new = tuple(y for x in self.launches for y in ((keep if x.kernel == kernel else (x,))))
        else:
            new = self.launches + keep
        return self if new == self.launches else self.with_(launches=new)

    @property
    def funcs(self) -> tuple:
        return tuple(i for i in self.items if isinstance(i, Func))

    def func(self, name: str) -> Func:
        for f in self.funcs:
            if f.name == name and f.body is not None:
                return f
        raise KeyError(name)

    @property
    def kernels(self) -> tuple:
        return tuple(f for f in self.funcs if f.kind == "kernel" and f.body is not None)

    @property
    def preamble(self) -> tuple:
        return tuple(i for i in self.items if isinstance(i, (Directive, Using)))

    def macro_table(self) -> dict:
        return {m.name: m for m in self.macros}


Union_ = Union  # re-export for type hints elsewhere
