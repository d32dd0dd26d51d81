"""Kernel specs (DESIGN §3.1): load, validate, and expand into concrete instances.

A spec is a TOML file beside the kernel.  Beyond the contract's minimum keys it may name
sizes (``[sizes]``) used by shapes, scalar values and launch dimensions, and list further
instances (``[[shapes]]``) that override some sizes.  ``Spec.instances()`` returns one
``Instance`` per size binding, with every expression evaluated and checked.

Every problem found is an ``XPError`` with its own ID, the file and the line; all problems of
one file are reported together (``XPErrors``).
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .diagnostics import XPError, XPErrors
from .dtypes import DTYPES, DEFAULT_TOL, NUMPY, is_float
from .expr import ExprError, evaluate, names_in

DIALECTS = ("cuda", "hip", "bang", "c")
ROLES = ("in", "out", "inout", "scalar")
FUNC_TYPES = {"block": 0, "union1": 1, "union2": 2, "union4": 4, "union8": 8}
EXTENSIONS = {".cu": "cuda", ".cuh": "cuda", ".hip": "hip", ".mlu": "bang", ".c": "c", ".cc": "c", ".cpp": "c", ".cxx": "c"}
DIALECT_EXT = {"cuda": ".cu", "hip": ".hip", "bang": ".mlu", "c": ".c"}
MAX_ELEMENTS = 1 << 28
#: all arrays of one instance together: inputs, outputs, the reference's copies and the child's
#: copies must fit in the test's memory limit (4 GiB) several times over
MAX_INSTANCE_BYTES = 1 << 30
#: launch limits (CUDA compute capability 9.0, the SIMT emulator, HIP on CDNA, the BANG emulator)
GRID_MAX = (2**31 - 1, 65535, 65535)
BLOCK_MAX = (1024, 1024, 64)
BLOCK_THREADS_MAX = 1024
SHARED_BYTES_MAX = {"cuda": 232448, "hip": 65536}   # 227 KiB per block (H100/H200); 64 KiB LDS (AMD)
BANG_TASKS_MAX = 65536

_TOP_KEYS = {"entry", "dialect", "sizes", "shapes", "launch", "args", "reference", "tolerance", "name", "description",
             "notes", "variant", "op", "test", "preconditions"}
_TEST_KEYS = {"derive_boundaries", "constraints"}   # [test]: docs/spec.md, xpiler/verify/boundaries.py
_ARG_KEYS = {"name", "dtype", "shape", "role", "value", "range", "integral", "permutation_axis", "in_reference",
             "description"}


@dataclass(frozen=True)
class ArgSpec:
    name: str
    dtype: str
    role: str
    shape: tuple | None = None
    value: Any = None
    range: tuple[float, float] | None = None
    integral: bool = False
    permutation_axis: int | None = None
    line: int | None = None
    #: passed to the Python reference (false: a scalar the kernel takes but the reference does
    #: not, e.g. a launch size a migration added as a parameter; xpiler/migration/launch_sizes.py)
    in_reference: bool = True

    @property
    def is_array(self) -> bool:
        return self.role != "scalar"


@dataclass(frozen=True)
class Instance:
    """One concrete kernel instance: all sizes known."""
    spec: "Spec"
    name: str
    sizes: dict[str, int]
    shapes: dict[str, tuple[int, ...]]
    scalars: dict[str, int | float]
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    shared_bytes: int = 0
    dim: tuple[int, int, int] | None = None
    func_type: str | None = None

    @property
    def args(self) -> list[ArgSpec]:
        return self.spec.args

    def numel(self, name: str) -> int:
        n = 1
        for d in self.shapes[name]:
            n *= d
        return n

    def describe(self) -> str:
        return self.name + "(" + ", ".join(f"{k}={v}" for k, v in self.sizes.items()) + ")"

    def to_json(self) -> dict:
        return {"name": self.name, "sizes": dict(self.sizes),
                "shapes": {k: list(v) for k, v in self.shapes.items()}, "scalars": dict(self.scalars),
                "grid": list(self.grid) if self.grid else None, "block": list(self.block) if self.block else None,
                "shared_bytes": self.shared_bytes, "dim": list(self.dim) if self.dim else None,
                "func_type": self.func_type}


@dataclass
class Spec:
    path: Path | None
    entry: str
    dialect: str
    args: list[ArgSpec]
    sizes: dict[str, int] = field(default_factory=dict)
    shapes: list[dict[str, Any]] = field(default_factory=list)
    launch: dict[str, Any] = field(default_factory=dict)
    reference: str | None = None
    tolerance: dict[str, float] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    test: dict[str, Any] = field(default_factory=dict)   # [test]: derive_boundaries, constraints
    #: [preconditions]: scalar argument name -> ((op, integer), ...), e.g. {"stride": ((">=", 1),)};
    #: what every call of the kernel satisfies (docs/spec.md, "Preconditions")
    preconditions: dict[str, tuple] = field(default_factory=dict)

    # -- queries -------------------------------------------------------------------------------
    def arg(self, name: str) -> ArgSpec:
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def arrays(self) -> list[ArgSpec]:
        return [a for a in self.args if a.is_array]

    @property
    def outputs(self) -> list[ArgSpec]:
        return [a for a in self.args if a.role in ("out", "inout")]

    def tolerance_for(self, dtype: str) -> tuple[float, float]:
        rtol, atol = DEFAULT_TOL.get(dtype, (0.0, 0.0))
        return float(self.tolerance.get("rtol", rtol)), float(self.tolerance.get("atol", atol))

    def instances(self, names: list[str] | None = None) -> list[Instance]:
        out = [self._instance("base", dict(self.sizes))]
        for sh in self.shapes:
            sizes = dict(self.sizes)
            sizes.update({k: v for k, v in sh.items() if k != "name"})
            out.append(self._instance(sh["name"], sizes))
        if names:
            out = [i for i in out if i.name in names]
        return out

    def instance_with(self, name: str, sizes: dict[str, int]) -> Instance:
        """The instance for a full size binding that is not one of the spec's own (a derived
        boundary instance, or the same sizes for a migration's source spec); XPErrors if invalid."""
        return self._instance(name, dict(sizes))

    @property
    def derive_boundaries(self) -> bool:
        """``[test] derive_boundaries`` (default true): add instances at the loops' boundaries."""
        return bool(self.test.get("derive_boundaries", True))

    def constraints_hold(self, sizes: dict[str, int]) -> bool:
        """Whether ``sizes`` satisfies every ``[test] constraints`` entry ("K % 4 == 0")."""
        for c in self.test.get("constraints", ()):
            try:
                if not _constraint_holds(c, sizes):
                    return False
            except ExprError:
                return False
        return not self.precondition_failures(sizes)

    def precondition_failures(self, sizes: dict[str, int]) -> list[str]:
        """The ``[preconditions]`` that a size binding breaks ("stride = 0, not >= 1"); a scalar
        whose value cannot be evaluated breaks them all."""
        out = []
        for name, conds in self.preconditions.items():
            try:
                v = evaluate(self.arg(name).value, sizes)
            except (ExprError, KeyError):
                v = None
            for op, k in conds:
                try:
                    kv = k if isinstance(k, int) else evaluate(self.arg(k).value, sizes)
                except (ExprError, KeyError):
                    kv = None
                if v is None or kv is None or not _CMP_FN[op](v, kv):
                    out.append(f"{name} = {v}, not {op} {k}" + ("" if isinstance(k, int) else f" = {kv}"))
        return out

    def with_dialect(self, dialect: str, entry: str | None = None, launch: dict | None = None) -> "Spec":
        """A copy for another dialect (used by migration to write the output's spec)."""
        return Spec(path=None, entry=entry or self.entry, dialect=dialect, args=list(self.args),
                    sizes=dict(self.sizes), shapes=[dict(s) for s in self.shapes],
                    launch=dict(launch or {}), reference=self.reference, tolerance=dict(self.tolerance),
                    raw=dict(self.raw), test=dict(self.test), preconditions=dict(self.preconditions))

    # -- internals -----------------------------------------------------------------------------
    def _instance(self, name: str, sizes: dict[str, int]) -> Instance:
        errors: list[XPError] = []
        f = str(self.path) if self.path else None

        def ev(expr, where_line, ctx):
            try:
                return evaluate(expr, sizes)
            except ExprError as e:
                if e.kind == "unknown":
                    errors.append(XPError("XP1014", file=f, line=where_line, name=e.name, expr=expr))
                else:
                    errors.append(XPError("XP1013", file=f, line=where_line, expr=expr, detail=e.detail))
                return None

        shapes: dict[str, tuple[int, ...]] = {}
        scalars: dict[str, int | float] = {}
        for a in self.args:
            if a.is_array:
                dims = []
                for d in a.shape or ():
                    v = ev(d, a.line, a.name)
                    if v is None:
                        continue
                    if not isinstance(v, int) or v < 1:
                        errors.append(XPError("XP1007", file=f, line=a.line, arg=a.name,
                                              value=f"{d} = {v} in instance '{name}'"))
                        continue
                    dims.append(v)
                shapes[a.name] = tuple(dims)
                n = 1
                for d in dims:
                    n *= d
                if n > MAX_ELEMENTS:
                    errors.append(XPError("XP1026", file=f, line=a.line, arg=a.name, count=n, limit=MAX_ELEMENTS))
            else:
                v = ev(a.value, a.line, a.name)
                if v is None:
                    continue
                if not is_float(a.dtype) and not (isinstance(v, int) or float(v).is_integer()):
                    errors.append(XPError("XP1027", file=f, line=a.line, arg=a.name, dtype=a.dtype, value=v))
                    continue
                scalars[a.name] = v if is_float(a.dtype) else int(v)

        def dims3(key):
            vals = self.launch.get(key)
            if vals is None:
                return None
            out = []
            for v in vals:
                r = ev(v, _find_line(self.text, key, "launch"), key)
                if r is None:
                    return None
                if not isinstance(r, int) or r < 1:
                    errors.append(XPError("XP1012", file=f, line=_find_line(self.text, key, "launch"),
                                          key=f"{key} in instance '{name}'", value=r))
                    return None
                out.append(r)
            return tuple(out)

        for why in self.precondition_failures(sizes):
            errors.append(XPError("XP4291", file=f, line=_find_line(self.text, why.split(" ")[0], "preconditions"),
                                  instance=name, detail=why))

        grid, block, dim = dims3("grid"), dims3("block"), dims3("dim")
        shared = 0
        if "shared_bytes" in self.launch:
            sv = ev(self.launch["shared_bytes"], _find_line(self.text, "shared_bytes", "launch"), "shared_bytes")
            shared = int(sv or 0)
        if errors:
            raise XPErrors(errors)
        return Instance(self, name, sizes, shapes, scalars, grid, block, shared, dim,
                        self.launch.get("func_type"))


# ---------------------------------------------------------------------------------------------
def _find_line(text: str, key: str, table: str | None = None, index: int = 0) -> int | None:
    """Best-effort line of ``key = ...`` inside ``[table]`` (or the index-th ``[[table]]``)."""
    if not text:
        return None
    lines = text.splitlines()
    start = 0
    if table is not None:
        seen = -1
        start = None
        for i, ln in enumerate(lines):
            s = ln.strip()
            if s in (f"[{table}]", f"[[{table}]]"):
                seen += 1
                if seen == index:
                    start = i + 1
                    break
        if start is None:
            return None
    pat = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for i in range(start, len(lines)):
        s = lines[i].strip()
        if i > start and table is not None and s.startswith("["):
            if i != start:
                break
        if pat.match(lines[i]):
            return i + 1
    if table is not None:
        return start  # the table header line
    return None


def _table_line(text: str, table: str, index: int = 0) -> int | None:
    seen = -1
    for i, ln in enumerate(text.splitlines()):
        if ln.strip() in (f"[{table}]", f"[[{table}]]"):
            seen += 1
            if seen == index:
                return i + 1
    return None


def default_spec_path(src: Path) -> Path:
    """The spec beside a kernel: ``add.cu.toml`` (unambiguous when one folder holds a kernel in
    several dialects), else ``add.toml`` (DESIGN §3.1)."""
    src = Path(src)
    full = src.with_name(src.name + ".toml")
    if full.is_file():
        return full
    return src.with_suffix(".toml")


def dialect_of(path: Path) -> str | None:
    return EXTENSIONS.get(path.suffix.lower())


def _bytes(n: int) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def check_limits(spec: Spec) -> None:
    """Refuse instances no substrate can run: launch dimensions beyond the hardware and emulator
    limits, and arrays too large to test (XP1031, XP1032), each with the instance and the key.

    Without this, a grid of 1e11 blocks passed the spec check and failed (or timed out) only
    when a run started, after the build."""
    from .dtypes import itemsize
    errors: list[XPError] = []
    f = str(spec.path) if spec.path else None

    launch_bad: dict[tuple, list[str]] = {}   # (key, value, limit) -> the instances it holds in

    def bad(key, inst, value, limit):
        launch_bad.setdefault((key, str(value), limit), []).append(inst.name)

    for inst in spec.instances():
        if spec.dialect in ("cuda", "hip"):
            if inst.grid:
                for axis, v, m in zip("xyz", inst.grid, GRID_MAX):
                    if v > m:
                        bad("grid", inst, list(inst.grid), f"grid {axis} <= {m}")
            if inst.block:
                for axis, v, m in zip("xyz", inst.block, BLOCK_MAX):
                    if v > m:
                        bad("block", inst, list(inst.block), f"block {axis} <= {m}")
                threads = inst.block[0] * inst.block[1] * inst.block[2]
                if threads > BLOCK_THREADS_MAX and all(v <= m for v, m in zip(inst.block, BLOCK_MAX)):
                    bad("block", inst, f"{list(inst.block)} = {threads} threads",
                        f"{BLOCK_THREADS_MAX} threads per block")
            smax = SHARED_BYTES_MAX[spec.dialect]
            if inst.shared_bytes > smax:
                bad("shared_bytes", inst, inst.shared_bytes, f"{smax} bytes of shared memory per block")
        elif spec.dialect == "bang" and inst.dim:
            tasks = inst.dim[0] * inst.dim[1] * inst.dim[2]
            n = FUNC_TYPES.get(inst.func_type or "block", 0)
            if tasks > BANG_TASKS_MAX:
                bad("dim", inst, f"{list(inst.dim)} = {tasks} tasks", f"taskDim <= {BANG_TASKS_MAX}")
            elif n and tasks % (4 * n):
                bad("dim", inst, f"{list(inst.dim)} = {tasks} tasks",
                    f"a {inst.func_type} launch needs taskDim to be a multiple of {4 * n}")
        total = sum(inst.numel(a.name) * itemsize(a.dtype) for a in spec.arrays)
        if total > MAX_INSTANCE_BYTES:
            names = [sh.get("name") for sh in spec.shapes]
            line = (_table_line(spec.text, "shapes", names.index(inst.name)) if inst.name in names
                    else _table_line(spec.text, "sizes")) if spec.text else None
            errors.append(XPError("XP1032", file=f, line=line, instance=inst.name, size=_bytes(total),
                                  limit=_bytes(MAX_INSTANCE_BYTES)))
    for (key, value, limit), names in launch_bad.items():
        where = f"instance '{names[0]}'" if len(names) == 1 else "instances " + ", ".join(f"'{n}'" for n in names)
        errors.insert(0, XPError("XP1031", file=f, line=_find_line(spec.text, key, "launch"), key=key, value=value,
                                 instances=where, dialect=spec.dialect, limit=limit))
    if errors:
        raise XPErrors(errors)


def declared_dialect(path: str | Path) -> tuple[str | None, int | None]:
    """The ``dialect`` a spec file declares and its line, read leniently: (None, None) when the
    file cannot be read as TOML. Lets a caller name a dialect mismatch before the spec's own
    checks, which judge the spec by its (wrong) dialect (e.g. XP1010 for a missing [launch])."""
    try:
        text = Path(path).read_text()
        raw = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None, None
    d = raw.get("dialect")
    return (d, _find_line(text, "dialect")) if isinstance(d, str) else (None, None)


def load_spec(path: str | Path) -> Spec:
    path = Path(path)
    if not path.is_file():
        raise XPError("XP1001", path=path, file=path)
    from .source_text import read_source
    spec = parse_spec(read_source(path), path)   # XP1108 when not UTF-8 text
    check_limits(spec)
    check_reference(spec)
    return spec


def check_reference(spec: Spec) -> None:
    """XP1019 at the spec's ``python =`` line when the reference file it names does not exist
    (relative to the spec's folder), so a missing file is bad input before anything runs."""
    if not spec.reference:
        return
    base = spec.path.parent if spec.path else Path.cwd()
    ref = base / spec.reference.rsplit(":", 1)[0]
    if not ref.is_file():
        raise XPError("XP1019", value=spec.reference,
                      detail=f"{ref} is {'a folder' if ref.is_dir() else 'not there'}",
                      file=spec.path, line=_find_line(spec.text or "", "python", "reference") if spec.path else None)


def parse_spec(text: str, path: Path | None = None) -> Spec:
    f = str(path) if path else "<spec>"
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise XPError("XP1002", detail=str(e), file=f, line=int(m.group(1)) if m else None) from None
    errors: list[XPError] = []

    for key in raw:
        if key not in _TOP_KEYS:
            pass  # unknown keys are tolerated (warning collected by `warnings_for`)
    entry = raw.get("entry")
    if not isinstance(entry, str) or not entry:
        errors.append(XPError("XP1003", key="entry", file=f, line=_find_line(text, "entry") or 1))
    dialect = raw.get("dialect")
    if dialect is None:
        errors.append(XPError("XP1003", key="dialect", file=f, line=1))
    elif dialect not in DIALECTS:
        errors.append(XPError("XP1004", value=dialect, file=f, line=_find_line(text, "dialect")))

    sizes_raw = raw.get("sizes", {})
    sizes: dict[str, int] = {}
    if not isinstance(sizes_raw, dict):
        errors.append(XPError("XP1013", expr="[sizes]", detail="[sizes] must be a table", file=f, line=_table_line(text, "sizes")))
        sizes_raw = {}
    for k, v in sizes_raw.items():
        if isinstance(v, bool) or not isinstance(v, int):
            errors.append(XPError("XP1025", name=k, value=v, file=f, line=_find_line(text, k, "sizes")))
        else:
            sizes[k] = v

    shapes = raw.get("shapes", [])
    seen_names = {"base"}
    if not isinstance(shapes, list):
        errors.append(XPError("XP1013", expr="[[shapes]]", detail="shapes must be an array of tables", file=f))
        shapes = []
    for i, sh in enumerate(shapes):
        line = _table_line(text, "shapes", i)
        if not isinstance(sh, dict) or "name" not in sh:
            errors.append(XPError("XP1021", index=i + 1, file=f, line=line))
            continue
        if sh["name"] in seen_names:
            errors.append(XPError("XP1029", name=sh["name"], file=f, line=line))
        seen_names.add(sh["name"])
        for k, v in sh.items():
            if k == "name":
                continue
            if isinstance(v, bool) or not isinstance(v, int):
                errors.append(XPError("XP1025", name=k, value=v, file=f, line=_find_line(text, k, "shapes", i)))
            elif k not in sizes:
                errors.append(XPError("XP1014", name=k, expr=f"[[shapes]] '{sh['name']}'", file=f,
                                      line=_find_line(text, k, "shapes", i)))

    args_raw = raw.get("args")
    args: list[ArgSpec] = []
    if not isinstance(args_raw, list) or not args_raw:
        errors.append(XPError("XP1003", key="args", file=f, line=1))
        args_raw = []
    names = set()
    for i, a in enumerate(args_raw):
        line = _table_line(text, "args", i)
        if not isinstance(a, dict) or "name" not in a:
            errors.append(XPError("XP1028", index=i + 1, file=f, line=line))
            continue
        name = a["name"]
        if name in names:
            errors.append(XPError("XP1015", arg=name, file=f, line=line))
        names.add(name)
        dtype = a.get("dtype")
        if dtype is None:
            errors.append(XPError("XP1003", key=f"args[{i}].dtype ({name})", file=f, line=line))
        elif dtype not in DTYPES:
            errors.append(XPError("XP1005", value=dtype, arg=name, file=f, line=_find_line(text, "dtype", "args", i)))
        role = a.get("role")
        if role is None:
            errors.append(XPError("XP1003", key=f"args[{i}].role ({name})", file=f, line=line))
        elif role not in ROLES:
            errors.append(XPError("XP1006", value=role, arg=name, file=f, line=_find_line(text, "role", "args", i)))
        shape = a.get("shape")
        if role in ("in", "out", "inout"):
            if shape is None or not isinstance(shape, list) or not shape:
                errors.append(XPError("XP1008", arg=name, file=f, line=line))
                shape = None
            else:
                for d in shape:
                    if isinstance(d, bool) or not isinstance(d, (int, str)):
                        errors.append(XPError("XP1013", expr=repr(d), detail="extents are integers or expressions",
                                              file=f, line=_find_line(text, "shape", "args", i)))
                    elif isinstance(d, int) and d < 1:
                        errors.append(XPError("XP1007", arg=name, value=d, file=f, line=_find_line(text, "shape", "args", i)))
                    else:
                        for n in names_in(d):
                            if n not in sizes:
                                errors.append(XPError("XP1014", name=n, expr=d, file=f, line=_find_line(text, "shape", "args", i)))
        if role == "scalar" and "value" not in a:
            errors.append(XPError("XP1009", arg=name, file=f, line=line))
        value = a.get("value")
        if role == "scalar" and isinstance(value, str):
            for n in names_in(value):
                if n not in sizes:
                    errors.append(XPError("XP1014", name=n, expr=value, file=f, line=_find_line(text, "value", "args", i)))
        rng = a.get("range")
        if rng is not None:
            if (not isinstance(rng, list) or len(rng) != 2 or not all(isinstance(x, (int, float)) for x in rng)
                    or rng[0] > rng[1]):
                errors.append(XPError("XP1022", arg=name, key="range", value=rng, file=f, line=_find_line(text, "range", "args", i)))
                rng = None
        pax = a.get("permutation_axis")
        if pax is not None and (not isinstance(pax, int) or shape is None or not (0 <= pax < len(shape))):
            errors.append(XPError("XP1022", arg=name, key="permutation_axis", value=pax, file=f,
                                  line=_find_line(text, "permutation_axis", "args", i)))
            pax = None
        in_ref = a.get("in_reference", True)
        if not isinstance(in_ref, bool):
            errors.append(XPError("XP1022", arg=name, key="in_reference", value=in_ref, file=f,
                                  line=_find_line(text, "in_reference", "args", i)))
            in_ref = True
        args.append(ArgSpec(name=name, dtype=dtype or "float32", role=role or "in",
                            shape=tuple(shape) if shape else None, value=value,
                            range=tuple(rng) if rng else None, integral=bool(a.get("integral", False)),
                            permutation_axis=pax, line=line, in_reference=in_ref))

    launch = raw.get("launch", {}) or {}
    if dialect in ("cuda", "hip"):
        missing = [k for k in ("grid", "block") if k not in launch]
        if missing:
            errors.append(XPError("XP1010", dialect=dialect, keys=" and ".join(missing), file=f,
                                  line=_table_line(text, "launch") or 1))
    if dialect == "bang":
        missing = [k for k in ("dim", "func_type") if k not in launch]
        if missing:
            errors.append(XPError("XP1010", dialect=dialect, keys=" and ".join(missing), file=f,
                                  line=_table_line(text, "launch") or 1))
        ft = launch.get("func_type")
        if ft is not None and ft not in FUNC_TYPES:
            errors.append(XPError("XP1018", value=ft, file=f, line=_find_line(text, "func_type", "launch")))
    for key in ("grid", "block", "dim"):
        if key in launch:
            v = launch[key]
            if not isinstance(v, list) or len(v) != 3:
                errors.append(XPError("XP1011", key=key, value=v, file=f, line=_find_line(text, key, "launch")))
            else:
                for d in v:
                    if isinstance(d, int) and d < 1:
                        errors.append(XPError("XP1012", key=key, value=d, file=f, line=_find_line(text, key, "launch")))
                    for n in names_in(d):
                        if n not in sizes:
                            errors.append(XPError("XP1014", name=n, expr=d, file=f, line=_find_line(text, key, "launch")))

    reference = None
    ref = raw.get("reference")
    if ref is not None:
        py = ref.get("python") if isinstance(ref, dict) else None
        if not isinstance(py, str) or ":" not in py:
            errors.append(XPError("XP1019", value=py, detail="expected 'file.py:function'", file=f,
                                  line=_find_line(text, "python", "reference")))
        else:
            reference = py
    tol = raw.get("tolerance", {}) or {}
    tolerance = {}
    for k, v in tol.items():
        if k not in ("rtol", "atol") or isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            errors.append(XPError("XP1020", key=k, value=v, file=f, line=_find_line(text, k, "tolerance")))
        else:
            tolerance[k] = float(v)
    test = _parse_test_table(raw.get("test"), text, f, sizes, errors)
    preconditions = _parse_preconditions(raw.get("preconditions"), text, f, args, errors)

    if errors:
        raise XPErrors(errors)
    spec = Spec(path=path, entry=entry, dialect=dialect, args=args, sizes=sizes, shapes=list(shapes),
                launch=dict(launch), reference=reference, tolerance=tolerance, raw=raw, text=text, test=test,
                preconditions=preconditions)
    spec.instances()  # evaluate every instance now so bad expressions surface at load time
    return spec


_CMP = re.compile(r"(==|!=|<=|>=|<|>)")


def _constraint_holds(c: str, sizes: dict[str, int]) -> bool:
    """Evaluate "EXPR OP EXPR [OP EXPR ...]" (OP one of == != <= >= < >, chained like Python)."""
    parts = _CMP.split(c)
    if len(parts) < 3 or len(parts) % 2 == 0:
        raise ExprError("syntax", "expected EXPR OP EXPR with OP one of == != <= >= < >")
    vals = [evaluate(p, sizes) for p in parts[0::2]]
    ops = parts[1::2]
    cmp = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<=": lambda a, b: a <= b,
           ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b}
    return all(cmp[o](a, b) for o, a, b in zip(ops, vals, vals[1:]))


_CMP_FN = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<=": lambda a, b: a <= b,
           ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b}
_PRECONDITION = re.compile(r"\s*(==|!=|<=|>=|<|>)\s*([+-]?\d+|[A-Za-z_]\w*)\s*")


def _parse_preconditions(t, text: str, f: str, args: list, errors: list) -> dict[str, tuple]:
    """``[preconditions]``: ``stride = ">= 1"``, ``H = ">= KH"`` or ``stride = [">= 1", "<= 8"]``:
    the integer scalar argument compared with an integer or with another integer scalar argument;
    every call of the kernel satisfies it, so the passes' proofs may assume it (XP4290 for a bad
    entry)."""
    if t is None:
        return {}
    line0 = _table_line(text, "preconditions")
    if not isinstance(t, dict):
        errors.append(XPError("XP4290", key="[preconditions]", detail="must be a table", file=f, line=line0))
        return {}
    scalars = {a.name: a for a in args if a.role == "scalar"}
    out: dict[str, tuple] = {}
    for name, v in t.items():
        line = _find_line(text, name, "preconditions") or line0
        a = scalars.get(name)
        if a is None:
            errors.append(XPError("XP4290", key=name, detail="not a scalar argument of the spec", file=f, line=line))
            continue
        if a.dtype not in ("int8", "uint8", "int16", "int32", "int64"):
            errors.append(XPError("XP4290", key=name, detail=f"an integer scalar is required, not {a.dtype}",
                                  file=f, line=line))
            continue
        items = v if isinstance(v, list) else [v]
        conds = []
        for c in items:
            m = _PRECONDITION.fullmatch(c) if isinstance(c, str) else None
            if m is None:
                errors.append(XPError("XP4290", key=name, detail=f"{c!r} is not 'OP INTEGER' or 'OP SCALAR' "
                                      "(OP one of == != < <= > >=)", file=f, line=line))
                continue
            rhs = m.group(2)
            if not re.fullmatch(r"[+-]?\d+", rhs):
                b = scalars.get(rhs)
                if b is None or b.dtype not in ("int8", "uint8", "int16", "int32", "int64"):
                    errors.append(XPError("XP4290", key=name, detail=f"'{rhs}' in {c!r} is not an integer scalar "
                                          "argument of the spec", file=f, line=line))
                    continue
                conds.append((m.group(1), rhs))
            else:
                conds.append((m.group(1), int(rhs)))
        if conds and len(conds) == len(items):
            out[name] = tuple(conds)
    return out


def _parse_test_table(t, text: str, f: str, sizes: dict[str, int], errors: list) -> dict[str, Any]:
    """``[test]``: ``derive_boundaries = true|false``, ``constraints = ["K % 4 == 0", ...]``."""
    if t is None:
        return {}
    if not isinstance(t, dict):
        errors.append(XPError("XP1013", expr="[test]", detail="[test] must be a table", file=f,
                              line=_find_line(text, "test")))
        return {}
    out: dict[str, Any] = {}
    if "derive_boundaries" in t:
        v = t["derive_boundaries"]
        if not isinstance(v, bool):
            errors.append(XPError("XP1013", expr=f"derive_boundaries = {v!r}", detail="must be true or false",
                                  file=f, line=_find_line(text, "derive_boundaries", "test")))
        else:
            out["derive_boundaries"] = v
    if "constraints" in t:
        cs = t["constraints"]
        line = _find_line(text, "constraints", "test")
        if not isinstance(cs, list) or not all(isinstance(c, str) for c in cs):
            errors.append(XPError("XP1013", expr=f"constraints = {cs!r}",
                                  detail='a list of strings such as "K % 16 == 0"', file=f, line=line))
        else:
            for c in cs:
                try:
                    _constraint_holds(c, {k: v for k, v in sizes.items()})
                except ExprError as e:
                    if e.kind == "unknown":
                        errors.append(XPError("XP1014", name=e.name, expr=c, file=f, line=line))
                    else:
                        errors.append(XPError("XP1013", expr=c, detail=e.detail, file=f, line=line))
            out["constraints"] = list(cs)
    return out


def warnings_for(spec: Spec) -> list[XPError]:
    """Non-fatal findings (unknown keys)."""
    out = []
    f = str(spec.path) if spec.path else None
    for k in spec.raw:
        if k not in _TOP_KEYS:
            out.append(XPError("XP1024", key=k, file=f, line=_find_line(spec.text, k)))
    if isinstance(spec.raw.get("test"), dict):
        for k in spec.raw["test"]:
            if k not in _TEST_KEYS:
                out.append(XPError("XP1024", key=f"test.{k}", file=f, line=_find_line(spec.text, k, "test")))
    for i, a in enumerate(spec.raw.get("args", []) or []):
        if isinstance(a, dict):
            for k in a:
                if k not in _ARG_KEYS:
                    out.append(XPError("XP1024", key=f"args.{k}", file=f, line=_find_line(spec.text, k, "args", i)))
    return out


def spec_to_toml(spec: Spec) -> str:
    """Serialize a spec back to TOML (used for migrated outputs)."""
    def q(v):
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(q(x) for x in v) + "]"
        return repr(v)

    lines = [f"entry = {q(spec.entry)}", f"dialect = {q(spec.dialect)}"]
    if spec.sizes:
        lines += ["", "[sizes]"] + [f"{k} = {v}" for k, v in spec.sizes.items()]
    for sh in spec.shapes:
        lines += ["", "[[shapes]]"] + [f"{k} = {q(v)}" for k, v in sh.items()]
    if spec.launch:
        lines += ["", "[launch]"] + [f"{k} = {q(v)}" for k, v in spec.launch.items()]
    for a in spec.args:
        lines += ["", "[[args]]", f"name = {q(a.name)}", f"dtype = {q(a.dtype)}"]
        if a.shape is not None:
            lines.append(f"shape = {q(list(a.shape))}")
        lines.append(f"role = {q(a.role)}")
        if a.value is not None:
            lines.append(f"value = {q(a.value)}")
        if a.range is not None:
            lines.append(f"range = {q(list(a.range))}")
        if a.integral:
            lines.append("integral = true")
        if a.permutation_axis is not None:
            lines.append(f"permutation_axis = {a.permutation_axis}")
        if not a.in_reference:
            lines.append("in_reference = false")
    if spec.reference:
        lines += ["", "[reference]", f"python = {q(spec.reference)}"]
    if spec.tolerance:
        lines += ["", "[tolerance]"] + [f"{k} = {v!r}" for k, v in spec.tolerance.items()]
    if spec.test:
        lines += ["", "[test]"] + [f"{k} = {q(v)}" for k, v in spec.test.items()]
    if spec.preconditions:
        lines += ["", "[preconditions]"] + [
            f"{k} = {q([f'{op} {n}' for op, n in v]) if len(v) > 1 else q(f'{v[0][0]} {v[0][1]}')}"
            for k, v in spec.preconditions.items()]
    return "\n".join(lines) + "\n"
