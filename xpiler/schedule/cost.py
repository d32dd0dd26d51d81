"""An analytical cost model: a latency estimate for a program where no hardware can time it
(bang, hip/AMD, cuda on a machine without an NVIDIA GPU, c kernels whose intrinsics would run
emulated). Every figure it gives is labelled ``model:analytic``; it ranks candidates of one
search, it is not a performance claim.

The model walks the entry function once with the sizes of the spec's largest instance:

- every statement runs ``count`` times: the product of the trip counts of the loops around it
  (a loop whose bounds cannot be evaluated counts :data:`UNKNOWN_TRIP` iterations);
- each array element read or written moves its element size in bytes at the level of its
  buffer: global memory (pointer parameters), on-chip memory (``__shared__``/LDS, NRAM/WRAM), or
  registers (other local arrays: free). An access whose index does not change with the innermost
  loop around it is counted once per iteration of the loops outside that one (it stays in a
  register or the L1 across the inner loop);
- a global access inside a loop over the x threads (bound to them, or a grid/block-stride loop
  starting at ``threadIdx.x``) whose index moves by ``s > 1`` elements
  between adjacent threads is uncoalesced: it moves ``min(s * elem, SECTOR)`` bytes per element
  (each thread's element in its own sector); a bound loop with fewer iterations than the launch
  has threads (a tail run ``once``) runs in that fraction of them;
- an ``if`` whose condition reads only scalar parameters the body never assigns (``cols <=
  1024``: a kernel that picks its form by size) runs only the branch taken at the modelled
  instance; any other ``if`` counts both branches;
- each arithmetic operator and math call (a warp shuffle too) counts one operation;
- cuda/hip: each ``__syncthreads()`` a thread runs adds :data:`BARRIER_NS` to the time, spread
  over the machine like the other work (``sync`` below), after the maximum: a block's barriers
  wait for its memory phases rather than overlap them;
- the parallelism is the product of the trip counts of bound loops (threads/blocks, tasks) and of
  loops under an OpenMP ``parallel for``; a machine is saturated at ``saturate`` parallel
  iterations, below that its throughput scales down in proportion.

time = launch + (max(global bytes / DRAM bandwidth, on-chip bytes / on-chip bandwidth,
operations / peak) + sync) / min(1, parallelism * ilp / saturate), sync = barriers run x
BARRIER_NS / saturate (cuda/hip).

``ilp`` is the number of independent accumulators one thread updates: the element count of the
largest register array that is updated in place (``acc[m][n] += ...``), at most
:data:`MAX_ILP`, else 1. A register-blocked matmul thread with a 4x4 tile keeps 16 sums in
flight, which hides latency as 16 threads with one sum each would; without this term the model
rated every register-blocked kernel four times slower than the one-element kernel it replaces,
for having fewer threads.

The machine figures (:data:`MACHINES`) are public round numbers for the target each dialect
stands for here (H200 for cuda, MI250X's GCD for hip, MLU370 for bang, and a two-core x86 CPU
for c); docs/schedule.md gives them and the model's measured rank correlation is reported in
benchmarks/RESULTS.md when it has been measured.
"""
from __future__ import annotations

from dataclasses import dataclass

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

UNKNOWN_TRIP = 16
MAX_ILP = 8
#: cuda/hip: time one ``__syncthreads()`` holds a thread (about 40 cycles at 2 GHz: the block
#: waits for its slowest warp), added to the busy time, not overlapped with it: a block's
#: barriers order its memory phases, so their wait adds to them. Ranks a block reduction's
#: shared-memory tree (``log2 B + 1`` barriers) below the warp-shuffle form (one); a ranking
#: term, not a calibration.
BARRIER_NS = 20.0
#: bytes of one DRAM sector: a warp's access whose adjacent threads are further apart than one
#: element moves up to this much per element (cuda/hip kernels of bound loops)
SECTOR = 32
#: cuda/hip: a global access of at least this many bytes per thread (``float4``) counts
#: :data:`WIDE_FACTOR` of its bytes. On the H200 our scalar elementwise outputs moved ~2.7 TB/s
#: where PyTorch's vectorized kernels moved ~3.4 (benchmarks/RESULTS.md): 4-byte accesses reach
#: about 0.8 of what 16-byte ones do. A ranking term, not a calibration.
WIDE_BYTES = 16
WIDE_FACTOR = 0.8


@dataclass(frozen=True)
class Machine:
    dram_gbs: float          # global memory bandwidth, GB/s
    onchip_gbs: float        # shared memory / LDS / NRAM bandwidth, GB/s
    gflops: float            # fp32 peak, GFLOP/s
    saturate: int            # parallel iterations that keep the whole machine busy
    launch_us: float         # fixed cost of one launch / call


MACHINES = {
    "cuda": Machine(dram_gbs=4800, onchip_gbs=30000, gflops=60000, saturate=132 * 2048, launch_us=3.0),
    "hip": Machine(dram_gbs=1600, onchip_gbs=12000, gflops=24000, saturate=110 * 2560, launch_us=5.0),
    "bang": Machine(dram_gbs=300, onchip_gbs=4000, gflops=12000, saturate=16 * 64, launch_us=10.0),
    "c": Machine(dram_gbs=20, onchip_gbs=200, gflops=100, saturate=2, launch_us=1.0),
}

_ONCHIP = {"shared", "nram", "wram", "sram", "__shared__", "__nram__", "__wram__", "__mlu_shared__"}
_ARITH = {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"}


@dataclass
class Estimate:
    ms: float
    global_bytes: float
    onchip_bytes: float
    ops: float
    parallelism: float
    ilp: int = 1

    def to_json(self) -> dict:
        return {"ms": self.ms, "global_bytes": self.global_bytes, "onchip_bytes": self.onchip_bytes,
                "ops": self.ops, "parallelism": self.parallelism, "ilp": self.ilp}


def _ival(e, env: dict):
    """The integer value of ``e`` under ``env``, or None."""
    if isinstance(e, N.Const) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, N.Var):
        return env.get(e.name)
    if isinstance(e, N.Builtin):     # threadIdx.x, blockDim.x, taskDim, ...: the launch's values
        return env.get(e.name)
    if isinstance(e, N.Cast):
        return _ival(e.expr, env)
    if isinstance(e, N.UnOp) and e.op in ("-", "+"):
        v = _ival(e.operand, env)
        return None if v is None else (-v if e.op == "-" else v)
    if isinstance(e, N.BinOp):
        a, b = _ival(e.lhs, env), _ival(e.rhs, env)
        if a is None or b is None:
            return None
        try:
            return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                    "/": lambda: a // b if isinstance(a, int) and isinstance(b, int) else a / b,
                    "%": lambda: a % b, "<<": lambda: a << b, ">>": lambda: a >> b,
                    "<": lambda: int(a < b), ">": lambda: int(a > b), "<=": lambda: int(a <= b),
                    ">=": lambda: int(a >= b), "==": lambda: int(a == b), "!=": lambda: int(a != b),
                    "&": lambda: a & b, "|": lambda: a | b}[e.op]()
        except (KeyError, ZeroDivisionError, TypeError, ValueError):
            return None
    if isinstance(e, N.Cond):
        c = _ival(e.cond, env)
        return None if c is None else _ival(e.then if c else e.else_, env)
    if isinstance(e, N.Call) and isinstance(e.func, str) and e.func in ("min", "max", "std::min", "std::max") \
            and len(e.args) == 2:
        a, b = _ival(e.args[0], env), _ival(e.args[1], env)
        if a is None or b is None:
            return None
        return min(a, b) if e.func.endswith("min") else max(a, b)
    return None


def _trip(lp: N.For, env: dict) -> float:
    lo, hi, st = _ival(lp.lo, env), _ival(lp.hi, env), _ival(lp.step, env)
    if lo is None or hi is None or not st:
        return UNKNOWN_TRIP
    # fractional: a grid-stride loop whose stride exceeds the range runs in a fraction of the
    # threads, which the walk counts all as running it
    return max(0.0, (hi - lo) / st)


class _Model:
    def __init__(self, fn: N.Func, sizes: dict, dtypes: dict):
        self.env = dict(sizes)
        self.global_ptrs = {p.name for p in fn.params if isinstance(p.type, N.Pointer)}
        self.levels = {}          # local buffer name -> "onchip" | "register"
        self.elem = dict(dtypes)  # buffer -> element bytes
        self.g = self.o = self.ops = 0.0
        self.par = 1.0
        self.threads = 1
        self.reg_elems: dict[str, int] = {}   # register array -> its element count (constant dims)
        self.ilp = 1
        self.saturate = 1         # parallel iterations that fill the machine (set by estimate)
        self.xvars: list = []     # variables of the loops bound to the x threads, outermost first
        self.defs: dict = {}      # scalar -> its initializer (for the thread stride of an index)
        self.sync = 0.0           # block barriers run, summed over the threads (BARRIER_NS each)
        self.wide = False         # cuda/hip: 16-byte global accesses count WIDE_FACTOR of their bytes
        self.uniform: set = set()  # scalar parameters never assigned (uniform conditions, _uniform_test)

    def _bytes(self, t) -> int:
        from xpiler.dtypes import itemsize
        while isinstance(t, (N.Pointer, N.Array)):
            t = t.elem
        try:
            if isinstance(t, N.Vector):
                return itemsize(t.elem.dtype) * t.n
            return itemsize(t.dtype) if isinstance(t, N.Scalar) else 4
        except Exception:
            return 4

    def stmt(self, s, count: float, inner: list):
        if isinstance(s, N.Block):
            for x in s.stmts:
                self.stmt(x, count, inner)
        elif isinstance(s, N.For):
            n = _trip(s, self.env)
            if s.binding is None and 0 < n < 1 and not self._per_thread(s):
                # a sequential loop whose step exceeds its range still runs once (a loop split
                # by a large factor: the fraction is for grid-stride loops, run by some threads)
                n = 1.0
            if s.binding is not None and self.threads > 1:
                # a bound loop of a launched kernel: its iterations are spread over the launch,
                # whose threads/tasks the walk already counts; each runs its share (a loop with
                # fewer iterations than the launch has threads, e.g. a tail run ``once``, runs in
                # that fraction of them)
                ext = self._extent(s.binding)
                n = n / ext if n < ext else float(-(-n // ext))
                if 0 < n < 1:
                    # ... and only that fraction of the machine is busy: its work is weighted by
                    # how much longer it takes there than on the whole launch (``estimate``
                    # divides all work by the whole launch's share of the machine)
                    full, part = min(1.0, self.threads / self.saturate), min(1.0, self.threads * n / self.saturate)
                    n *= full / part
            elif s.binding is not None or any("parallel" in p for p in s.pragmas):
                self.par *= max(1.0, n)
            self.expr(s.lo, count, inner)
            self.expr(s.hi, count * (n + 1), inner)
            # inner bounds over this loop's variable are evaluated at its first iteration
            lo, saved = _ival(s.lo, self.env), self.env.get(s.var)
            if lo is not None:
                self.env[s.var] = lo
            # a loop over the x threads: bound by binding, or (as printed and parsed again, the way
            # a candidate is tested) a grid- or block-stride loop starting at threadIdx.x
            xbound = self.threads > 1 and (s.binding in ("global.x", "threadIdx.x") or any(
                isinstance(n, N.Builtin) and n.name == "threadIdx.x" for n in walk(s.lo)))
            if xbound:
                self.xvars.append((s.var, N.Builtin("threadIdx.x") if s.binding else s.lo))
            self.stmt(s.body, count * n, inner + [s.var])
            if xbound:
                self.xvars.pop()
            if lo is not None:
                if saved is None:
                    self.env.pop(s.var, None)
                else:
                    self.env[s.var] = saved
        elif isinstance(s, (N.CFor, N.While)):
            self.stmt(s.body, count * UNKNOWN_TRIP, inner + ["?"])
        elif isinstance(s, N.If):
            self.expr(s.cond, count, inner)
            taken = self._address_test(s.cond)
            if taken is None:
                taken = self._uniform_test(s.cond)
            if taken is not None:
                # a test of pointer addresses (vectorize_simt's alignment test): the buffers a
                # launch gets are aligned (cudaMalloc: 256 bytes), so only the taken branch runs
                branch = s.then if taken else s.else_
                if branch is not None:
                    self.stmt(branch, count, inner)
                return
            self.stmt(s.then, count, inner)
            if s.else_ is not None:
                self.stmt(s.else_, count, inner)
        elif isinstance(s, N.Decl):
            if isinstance(s.type, N.Array):
                self.levels[s.name] = "onchip" if (s.scope or "").lower() in _ONCHIP or any(
                    a in _ONCHIP for a in s.attrs) else "register"
                self.elem[s.name] = self._bytes(s.type)
                if self.levels[s.name] == "register":
                    n, t = 1, s.type
                    while isinstance(t, N.Array) and n:
                        for d in t.dims or (None,):
                            n = n * d.value if isinstance(d, N.Const) and isinstance(d.value, int) else 0
                        t = t.elem
                    self.reg_elems[s.name] = n
            elif isinstance(s.type, N.Scalar) and s.init is not None:
                self.defs.setdefault(s.name, s.init)
                v = _ival(s.init, self.env)
                if v is not None:
                    self.env.setdefault(s.name, v)
            if s.init is not None:
                self.expr(s.init, count, inner)
        elif isinstance(s, N.Assign):
            self.access(s.target, count, inner, write=True)
            if s.op != "=":
                self.ops += count
                base = s.target
                while isinstance(base, N.Index):
                    base = base.base
                if isinstance(base, N.Var) and self.reg_elems.get(base.name):
                    self.ilp = max(self.ilp, min(MAX_ILP, self.reg_elems[base.name]))
            self.expr(s.value, count, inner)
        elif isinstance(s, N.Barrier) and s.kind == "block":
            self.sync += count
        elif isinstance(s, N.ExprStmt):
            self.expr(s.expr, count, inner)
        elif isinstance(s, N.Return) and s.value is not None:
            self.expr(s.value, count, inner)

    def _uniform_test(self, cond):
        """The value of a condition over the entry's scalar parameters only (``cols <= 1024``: a
        kernel choosing its form by the problem's size), the same in every thread and known for
        the instance modelled: only the taken branch runs. None for any other condition."""
        nodes = list(walk(cond))
        if any(isinstance(n, (N.Builtin, N.Index, N.Call, N.Intrinsic, N.AssignExpr)) for n in nodes):
            return None
        names = {n.name for n in nodes if isinstance(n, N.Var)}
        if not names or not names <= self.uniform:
            return None
        v = _ival(cond, self.env)
        return None if v is None else bool(v)

    def _address_test(self, cond):
        """The value of a condition over pointer parameters' addresses (``((size_t)x & 15) == 0``)
        with every pointer parameter at an aligned address; None for any other condition."""
        names = {n.name for n in walk(cond) if isinstance(n, N.Var)}
        if not names & self.global_ptrs:
            return None
        v = _ival(cond, {**self.env, **{p: 0 for p in self.global_ptrs}})
        return None if v is None else bool(v)

    def access(self, e, count: float, inner: list, write: bool = False):
        if isinstance(e, N.Index):
            base = e.base
            while isinstance(base, N.Index):
                base = base.base
            width = None
            if isinstance(base, N.Cast) and isinstance(base.type, N.Pointer):
                # ((const float4 *)x)[v]: the element is the cast's pointee, the buffer x
                width = self._bytes(base.type.elem)
                while isinstance(base, N.Cast):
                    base = base.expr
            name = base.name if isinstance(base, N.Var) else None
            used = {n.name for n in walk(e) if isinstance(n, N.Var)}
            c = count
            if inner and inner[-1] != "?" and inner[-1] not in used:
                # the same element across the innermost loop: kept in a register / the L1
                c = count / max(1.0, self._trips_of_innermost(inner))
            elem = width or self.elem.get(name, 4)
            nbytes = elem * c
            level = "global" if name in self.global_ptrs else self.levels.get(name, "global")
            if level == "global":
                stride = self._thread_stride(e.index)
                if stride > 1:       # uncoalesced: each thread's element in its own sector
                    nbytes *= min(stride * elem, SECTOR) / elem
                elif self.wide and elem >= WIDE_BYTES:
                    nbytes *= WIDE_FACTOR
                self.g += nbytes
            elif level == "onchip":
                self.o += nbytes
            self.expr(e.index, count, inner)
            if isinstance(e.base, N.Index):
                self.access(e.base, 0.0, inner)
        elif isinstance(e, N.UnOp) and e.op == "*":
            self.g += 4 * count
        else:
            self.expr(e, count, inner)

    def _thread_stride(self, index) -> int:
        """Elements between the addresses of adjacent threads (``threadIdx.x`` one apart) for this
        index, inside the innermost loop over the x threads; 0 when unknown. That loop's variable
        is its first value (``blockIdx.x * blockDim.x + threadIdx.x``), and scalars declared from
        it (``int i = v * 16``) are substituted first."""
        if not self.xvars:
            return 0
        from xpiler.ir.visit import substitute
        var, first = self.xvars[-1]
        subst = {**{k: v for k, v in self.defs.items() if k != var}, var: first}
        e = index
        for _ in range(5):
            names = {n.name for n in walk(e) if isinstance(n, N.Var)} & set(subst)
            if not names:
                break
            e = substitute(e, {k: subst[k] for k in names})
        env = {k: v for k, v in self.env.items() if k not in subst}
        a, b = _ival(e, {**env, "threadIdx.x": 0}), _ival(e, {**env, "threadIdx.x": 1})
        return abs(int(b - a)) if isinstance(a, int) and isinstance(b, int) else 0

    def _extent(self, binding: str) -> float:
        """How many threads/tasks a loop bound to ``binding`` is spread over."""
        axis = binding.rsplit(".", 1)[-1] if "." in binding else "x"
        if binding.startswith("threadIdx"):
            return float(self.env.get(f"blockDim.{axis}", 1))
        if binding.startswith("blockIdx"):
            return float(self.env.get(f"gridDim.{axis}", 1))
        if binding.startswith("global"):
            return float(self.env.get(f"gridDim.{axis}", 1) * self.env.get(f"blockDim.{axis}", 1))
        if binding.startswith("task"):
            return float(self.env.get("taskDim", 1))
        return float(self.threads)

    def _call(self, name: str, args, count: float):
        """A call: one operation, except the BANG copies (their byte count, at global level when
        one side is a global pointer) and vector instructions (one operation per element: their
        last integer argument)."""
        if name.startswith("__memcpy") and len(args) >= 3:
            n = _ival(args[2], self.env) or 0
            names = {x.name for a in args[:2] for x in walk(a) if isinstance(x, N.Var)}
            if names & self.global_ptrs:
                self.g += n * count
            else:
                self.o += n * count
            return
        if name.startswith("__bang_"):
            ints = [v for v in (_ival(a, self.env) for a in args) if isinstance(v, int)]
            self.ops += count * (ints[-1] if ints else 1)
            self.o += count * 8 * (ints[-1] if ints else 1)
            return
        self.ops += count

    def _per_thread(self, lp) -> bool:
        """The loop's start or step reads a thread/block index or launch size (directly or
        through a scalar declared from one): a grid- or block-stride loop."""
        for e in (lp.lo, lp.step):
            for n in walk(e):
                if isinstance(n, N.Builtin) or isinstance(n, N.Var) and n.name in self.defs and any(
                        isinstance(m, N.Builtin) for m in walk(self.defs[n.name])):
                    return True
        return False

    def _trips_of_innermost(self, inner: list) -> float:
        return self._last_trip.get(inner[-1], UNKNOWN_TRIP) if hasattr(self, "_last_trip") else UNKNOWN_TRIP

    def expr(self, e, count: float, inner: list):
        if e is None or count == 0:
            return
        if isinstance(e, N.Index):
            self.access(e, count, inner)
            return
        if isinstance(e, N.BinOp) and e.op in _ARITH:
            self.ops += count
        elif isinstance(e, (N.Call, N.Intrinsic)):
            name = e.func if isinstance(e, N.Call) and isinstance(e.func, str) else getattr(e, "name", "")
            self._call(str(name), e.args, count)
        elif isinstance(e, N.AssignExpr):
            self.access(e.target, count, inner, write=True)
            self.expr(e.value, count, inner)
            return
        for ch in _children(e):
            self.expr(ch, count, inner)


def _children(e):
    for name in ("lhs", "rhs", "operand", "cond", "then", "else_", "expr", "base", "index", "value", "target"):
        v = getattr(e, name, None)
        if isinstance(v, N.Expr):
            yield v
    for name in ("args", "exprs", "items"):
        for v in getattr(e, name, ()) or ():
            if isinstance(v, N.Expr):
                yield v


def launch_env(grid=None, block=None, tasks=None) -> dict:
    """Values of the index builtins for the cost model: every thread/task is modelled as the first
    one (indices 0, so a grid-stride or block-stride loop gets the first thread's trip count),
    dimensions as launched."""
    env = {}
    for name, dims in (("gridDim", grid), ("blockDim", block)):
        for axis, v in zip("xyz", dims or (1, 1, 1)):
            env[f"{name}.{axis}"] = int(v)
    for axis in "xyz":
        env[f"threadIdx.{axis}"] = env[f"blockIdx.{axis}"] = 0
    n = 1
    for v in tasks or (1,):
        n *= int(v)
    env.update({"taskId": 0, "taskIdX": 0, "taskIdY": 0, "taskIdZ": 0, "taskDim": n, "coreId": 0, "clusterId": 0,
                "coreDim": 4, "clusterDim": max(1, n // 4)})
    return env


def estimate(program: N.Program, entry: str, dialect: str, sizes: dict, threads: int = 1, *,
             env: dict | None = None) -> Estimate:
    """The modelled latency of ``entry`` (and the figures it comes from) for ``sizes`` (the
    integer scalars of one instance, keyed by the entry's parameter names). ``threads``: the
    launch's threads (grid x block) or tasks for a SIMT / BANG kernel, whose body runs once in
    each."""
    fn = program.func(entry)
    # warpSize: 32 on NVIDIA, 64 on the AMD GPU hip stands for here (MI250X, wave64)
    warp = {"cuda": 32, "hip": 64}.get(dialect)
    m = _Model(fn, {**({"warpSize": warp} if warp else {}), **(env or {}), **sizes}, {})
    for p in fn.params:
        m.elem[p.name] = m._bytes(p.type)
    # the trip count of each loop variable, for the "same element across the innermost loop" rule
    m.threads = max(1, threads)
    # scalar parameters the body never assigns: a condition over them alone is uniform
    from xpiler.passes.dependence import assigned_names
    m.uniform = {p.name for p in fn.params if isinstance(p.type, N.Scalar)} - assigned_names(fn.body)
    m.wide = dialect in ("cuda", "hip")
    m.saturate = MACHINES.get(dialect, MACHINES["c"]).saturate
    m._last_trip = {lp.var: _trip(lp, m.env) for lp in walk(fn.body) if isinstance(lp, N.For)}
    m.stmt(fn.body, float(max(1, threads)), [])
    m.par *= max(1, threads)
    mach = MACHINES.get(dialect, MACHINES["c"])
    busy = max(m.g / (mach.dram_gbs * 1e9), m.o / (mach.onchip_gbs * 1e9), m.ops / (mach.gflops * 1e9))
    if dialect in ("cuda", "hip"):
        busy += m.sync * BARRIER_NS * 1e-9 / mach.saturate
    share = min(1.0, m.par * m.ilp / mach.saturate)
    ms = (mach.launch_us * 1e-6 + busy / max(share, 1e-9)) * 1e3
    return Estimate(ms, m.g, m.o, m.ops, m.par, m.ilp)
