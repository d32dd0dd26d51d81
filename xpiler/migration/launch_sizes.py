"""Launch sizes that no kernel parameter carries, added as parameters of the migrated kernel.

Many public kernels learn a size only from their launch: one block per row
(``softmax<<<rows, 256>>>(x, y, cols)`` with no ``rows`` parameter), or a grid sized from a macro
(``#define N 4099``, grid ``(N + 255) / 256``). A migration that keeps the launch (cuda <-> hip)
does not need the value. One that changes the launch's shape does: loop recovery writes
gridDim/blockDim/taskDim as loop bounds of a kernel without a grid, and those bounds must be
values of the kernel (XP4060 otherwise).

For such a migration the driver appends one ``int`` parameter per uncarried size to the entry
kernel, and one scalar argument to the spec the candidates are tested with (``value`` = the size,
``in_reference = false``: the Python reference does not take it). The parameters go last, so the
spec's arguments stay aligned with the kernel's parameters by position. The source kernel is run
with its own spec, untouched; the tester compares outputs by argument name, so the added scalar
does not disturb the differential test. Everything here is a pure function of the source
program, its spec, the source text and the target, so ``xpiler replay`` re-derives the same
program (docs/decisions.md, "Launch sizes as added parameters").
"""
from __future__ import annotations

import dataclasses
import re

from ..ir import nodes as N
from ..spec import ArgSpec, Spec

_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


def needs_values(src_dialect: str, dst: str) -> bool:
    """Whether a migration ``src_dialect -> dst`` needs the launch sizes as values in the kernel:
    the launch changes shape (not cuda <-> hip, not a same-dialect run) and the source has one
    (a c source has no launch)."""
    if src_dialect == dst or src_dialect == "c":
        return False
    return not (src_dialect in ("cuda", "hip") and dst in ("cuda", "hip"))


def uncarried(spec: Spec, params: list[str]) -> list[str]:
    """The spec's size names (in ``[sizes]`` order) that the launch uses and that no scalar
    parameter carries: what is left of them after the driver writes the launch over the kernel's
    parameters (grid/block/dim entries and ``shared_bytes``). A launch the driver cannot write
    (an expression outside the spec language) gives ``[]``: loop recovery says why."""
    from ..expr import ExprError
    from .driver import _launch_to_params
    try:
        launch = _launch_to_params(spec.launch, spec, params)
    except (ExprError, SyntaxError, KeyError, ValueError):
        return []
    used: set[str] = set()
    for key in ("grid", "block", "dim", "shared_bytes"):
        v = launch.get(key)
        for x in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(x, str):
                used |= set(_IDENT.findall(x))
    return [n for n in spec.sizes if n in used and n not in params]


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    return name


def add_size_params(prog: N.Program, spec: Spec, names: list[str], source_text: str
                    ) -> tuple[N.Program, Spec, list[dict]]:
    """``prog`` with one ``int`` parameter per size in ``names`` appended to the entry kernel,
    the spec with a matching scalar argument appended, and ``[{"param", "arg", "size"}]``.

    The parameter is named after the size unless that identifier occurs anywhere in the source
    text (a macro ``#define N 4099``, a local, a comment word: a parameter ``N`` would be
    macro-expanded or shadow something), then ``xp_<size>`` made fresh. The spec argument has
    the parameter's name made fresh against the spec's argument names."""
    if not names:
        return prog, spec, []
    fn = prog.func(spec.entry)
    in_text = set(_IDENT.findall(source_text))
    taken = in_text | {p.name for p in fn.params}
    arg_names = {a.name for a in spec.args}
    new_params, new_args, added = [], [], []
    for size in names:
        pname = size if size not in taken else _fresh(f"xp_{size}", taken)
        taken.add(pname)
        aname = _fresh(pname, arg_names)
        arg_names.add(aname)
        new_params.append(N.Param(pname, N.Scalar("int32", "int")))
        new_args.append(ArgSpec(name=aname, dtype="int32", role="scalar", value=size, in_reference=False))
        added.append({"param": pname, "arg": aname, "size": size})
    new_fn = fn.with_(params=tuple(fn.params) + tuple(new_params))
    new_spec = dataclasses.replace(spec, args=list(spec.args) + new_args)
    items = _launchers_pass_sizes(prog, spec, added)
    new_prog = prog.with_(items=tuple(new_fn if it is fn else it for it in items))
    return new_prog, new_spec, added


def _launchers_pass_sizes(prog: N.Program, spec: Spec, added: list[dict]) -> tuple:
    """``prog.items`` with every host launch of the entry passing the added sizes as its last
    arguments (``host.append_size_args``: the source launch's own component, or a macro), so
    the program still compiles as a whole (intermediate cuda/hip candidates keep their host
    code) and the host migration translates launches that match the kernel. A launcher that
    gives no value for a size is dropped, unless another function calls it (then it stays
    and its candidate will not compile); each entry of ``added`` records the host value as
    ``host`` (the printed expression, or None when a launcher gives none)."""
    from ..diagnostics import XPError
    from ..printers import printer_for
    from .host import append_size_args
    macros = {m.name for m in prog.macros if m.params is None}
    vals = host_size_values(spec, added)
    called = {n.func for f in prog.funcs if f.body is not None for n in _walk(f.body)
              if isinstance(n, N.Call) and isinstance(n.func, str)}
    items, hosts = [], 0
    for it in prog.items:
        if isinstance(it, N.Func) and it.kind == "host" and it.body is not None and any(
                isinstance(n, N.Launch) and n.kernel == spec.entry for n in _walk(it.body)):
            hosts += 1
            try:
                new = append_size_args(it, spec.entry, vals, macros)
            except XPError:
                for a in added:
                    a.setdefault("host", None)
                if it.name in called:
                    items.append(it)
                continue
            launch = next(n for n in _walk(new.body) if isinstance(n, N.Launch) and n.kernel == spec.entry)
            for a, e in zip(added, launch.args[len(launch.args) - len(added):]):
                try:
                    a.setdefault("host", printer_for(prog.dialect).expr(e))
                except Exception:  # noqa: BLE001 -- only the note's text
                    a.setdefault("host", "?")
            items.append(new)
        else:
            items.append(it)
    return tuple(items)


def _walk(node):
    from ..ir.visit import walk
    return walk(node)


def augment(prog: N.Program, spec: Spec, dst: str, source_text: str) -> tuple[N.Program, Spec, list[dict]]:
    """The driver's and replay's one entry point: ``add_size_params`` for the sizes a
    ``spec.dialect -> dst`` migration needs as values and no parameter carries (a no-op,
    ``added == []``, otherwise)."""
    if not needs_values(spec.dialect, dst):
        return prog, spec, []
    try:
        params = [p.name for p in prog.func(spec.entry).params]
    except KeyError:
        return prog, spec, []
    names = uncarried(spec, params)
    return add_size_params(prog, spec, names, source_text)


def describe(added: list[dict]) -> str:
    """``int rows (= size rows), int xp_N (= size N)`` for the XP4061 note, with what the source's
    host launcher passes (``the launcher passes nrows``) or that it gives none (the launcher is
    then left out: a migration to cuda/hip/bang generates one from the spec, as for a c source)."""
    def one(a):
        host = ""
        if "host" in a:
            host = f", the launcher passes {a['host']}" if a["host"] is not None else \
                ", no launcher of the source gives its value: that launcher is left out"
        return f"int {a['param']} (= size {a['size']}{host})"
    return ", ".join(one(a) for a in added)




def host_size_values(spec: Spec, added: list[dict]) -> list[tuple[str, str, int]]:
    """For each added parameter, the source launch component that IS its size:
    ``(size, key, axis)`` with key ``grid``/``block``/``dim`` (the host launcher passes that
    component of the source launch). A size that is not a whole component (``cdiv(N,256)``)
    gives ``(size, "", -1)``: the launcher cannot recover its value from the launch."""
    out = []
    for a in added:
        size, hit = a["size"], ("", -1)
        for key in ("grid", "dim", "block"):
            v = spec.launch.get(key)
            if isinstance(v, (list, tuple)):
                for i, x in enumerate(v):
                    if isinstance(x, str) and x.strip() == size:
                        hit = (key, i)
                        break
            if hit[1] >= 0:
                break
        out.append((size, hit[0], hit[1]))
    return out
