"""Oracles: the spec's Python reference, or another kernel run on the same inputs."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from ..diagnostics import XPError
from ..dtypes import bf16_to_f32, to_compute
from ..spec import Instance, Spec

_MODULE_CACHE: dict[str, object] = {}


def load_reference(spec: Spec):
    """The callable named by ``[reference] python = "file.py:function"`` (relative to the spec)."""
    if not spec.reference:
        return None
    file_part, func = spec.reference.rsplit(":", 1)
    base = spec.path.parent if spec.path else Path.cwd()
    path = (base / file_part).resolve()
    if not path.is_file():
        raise XPError("XP1019", value=spec.reference, detail=f"{path} not found", file=spec.path)
    key = str(path)
    mod = _MODULE_CACHE.get(key)
    if mod is None:
        name = f"xpiler_ref_{abs(hash(key))}"
        ms = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(ms)
        sys.modules[name] = mod
        try:
            ms.loader.exec_module(mod)
        except Exception as e:  # the user's file: report, never crash
            sys.modules.pop(name, None)
            raise XPError("XP1222", ref=spec.reference, detail=f"while importing {path.name}: {type(e).__name__}: {e}",
                          file=path, line=_raising_line(e, path)) from None
        _MODULE_CACHE[key] = mod
    fn = getattr(mod, func, None)
    if fn is None:
        raise XPError("XP1019", value=spec.reference, detail=f"no function '{func}' in {path.name}", file=spec.path)
    return fn


def _raising_line(e: BaseException, path: Path | None) -> int | None:
    """The line of ``path`` (the reference file) nearest to where ``e`` was raised."""
    import traceback
    if path is None:
        return None
    if isinstance(e, SyntaxError) and e.lineno:
        return e.lineno
    line = None
    for fr in traceback.extract_tb(e.__traceback__):
        try:
            if Path(fr.filename).resolve() == Path(path).resolve():
                line = fr.lineno
        except OSError:
            continue
    return line


def reference_args(spec: Spec, inst: Instance, arrays: dict[str, np.ndarray]) -> list:
    """The reference function's arguments: copies of the in/inout arrays (bfloat16 widened to
    float32) and the instance's scalars, in the spec's argument order. Arguments with
    ``in_reference = false`` are the kernel's only (a launch size a migration added)."""
    args = []
    for a in spec.args:
        if not a.in_reference:
            continue
        if a.role in ("in", "inout"):
            arr = arrays[a.name]
            args.append(bf16_to_f32(arr) if a.dtype == "bfloat16" else arr.copy())
        elif a.role == "scalar":
            args.append(inst.scalars[a.name])
    return args


_REFERENCE_LOCK = __import__("threading").Lock()


def reference_outputs(spec: Spec, inst: Instance, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Expected out/inout arrays (float64 / int64) from the spec's reference function."""
    fn = load_reference(spec)
    args = reference_args(spec, inst, arrays)
    try:
        # one reference call at a time: the tester's worker threads would otherwise enter a
        # multi-threaded BLAS concurrently (a matmul reference was seen to hang that way)
        with _REFERENCE_LOCK:
            res = fn(*args)
    except Exception as e:  # the user's reference is at fault (bad input), not the kernel
        ref_file = Path(getattr(getattr(fn, "__code__", None), "co_filename", "") or "")
        ref_file = ref_file if ref_file.is_file() else None
        raise XPError("XP1222", ref=spec.reference, detail=f"{type(e).__name__}: {e}", file=ref_file or spec.path,
                      line=_raising_line(e, ref_file) if ref_file else None) from None
    outs = spec.outputs
    if not isinstance(res, (tuple, list)):
        res = (res,)
    if len(res) != len(outs):
        raise XPError("XP2110", got=len(res), want=len(outs), file=spec.path)
    expected = {}
    for a, r in zip(outs, res):
        r = np.asarray(r)
        if r.size != inst.numel(a.name):
            raise XPError("XP2108", detail=f"reference output '{a.name}' has {r.size} elements, "
                                           f"expected {inst.numel(a.name)}", file=spec.path)
        expected[a.name] = r.reshape(inst.shapes[a.name]).astype(np.float64 if r.dtype.kind in "fc" else np.int64)
    return expected


def kernel_outputs_as_expected(spec: Spec, outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {a.name: to_compute(a.dtype, outputs[a.name]) for a in spec.outputs}
