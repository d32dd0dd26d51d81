"""Finding the kernels of a directory tree, and the spec each one is migrated with.

A kernel file is a file whose extension names a dialect (``.cu .hip .mlu .c .cc .cpp .cxx``,
the extensions ``xpiler migrate`` accepts for one file; headers such as ``.cuh`` are not
kernels). Its spec is found by the single-file rule (``add.cu.toml``, else ``add.toml``, beside
it); a kernel without one gets a spec proposed by ``xpiler spec --infer`` when the inference is
complete (no TODO left); otherwise it is listed as needing a spec (XP1242), with the reason.

Not searched: hidden folders, ``__pycache__``, the run's own output folder, and any folder that
is an xpiler output folder (it holds the ``.xpiler-output`` marker), so migrated kernels are
never taken for sources.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..diagnostics import XPError
from ..examples_index import KERNEL_EXTS
from ..migration.outdir import MARKER
from ..spec import default_spec_path, dialect_of


@dataclass
class KernelFile:
    rel: str                       # path relative to the searched folder, with '/' separators
    source: Path                   # absolute path
    dialect: str
    spec: Path | None = None       # the spec beside it, or None
    spec_origin: str = "beside"    # beside | inferred | missing
    inferred_text: str | None = None   # the inferred spec (written into OUT by the runner)
    problem: XPError | None = None     # XP1242: why it cannot be migrated as it is

    @property
    def out_rel(self) -> str:
        """Its output folder, relative to OUT: the tree mirrored, one folder per kernel file
        (named as the file: ``gemm/gemm.cu/``), since a folder may hold one kernel in several
        dialects and each migration writes its own report and log."""
        return self.rel


def _skip_dir(d: Path, skip: list[Path]) -> bool:
    if d.name.startswith(".") or d.name == "__pycache__":
        return True
    if (d / MARKER).exists():
        return True
    try:
        rd = d.resolve()
    except OSError:
        return True
    return any(rd == s for s in skip)


def _infer(f: Path) -> tuple[str | None, str]:
    """(spec text, '') when ``xpiler spec --infer`` proposes a complete, loadable spec; else
    (None, why not)."""
    from ..infer import infer_spec
    from ..spec import load_spec
    try:
        text, notes = infer_spec(f)
    except XPError as e:
        return None, f"`xpiler spec --infer` could not propose one ({e.code}: {e.message})"
    if notes:
        first = notes[0].message
        return None, (f"`xpiler spec --infer` left {len(notes)} TODO(s) to fill in by hand "
                      f"(first: {first})")
    with tempfile.TemporaryDirectory(prefix="xpiler-infer-") as tmp:
        p = Path(tmp) / (f.name + ".toml")
        p.write_text(text)
        try:
            load_spec(p)
        except XPError as e:
            return None, f"the inferred spec does not load ({e.code}: {e.message})"
    return text, ""


def discover(root: str | Path, skip: list[Path] | None = None, infer: bool = True) -> list[KernelFile]:
    """Every kernel file below ``root`` (sorted by relative path), each with its spec or the
    reason it has none."""
    root = Path(root)
    skip = [Path(s).resolve() for s in (skip or [])]
    found: list[KernelFile] = []
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        dirnames[:] = sorted(n for n in dirnames if not _skip_dir(d / n, skip))
        for name in sorted(filenames):
            f = d / name
            if f.suffix.lower() not in KERNEL_EXTS or not f.is_file():
                continue
            dialect = dialect_of(f)
            if dialect is None:
                continue
            rel = f.relative_to(root).as_posix()
            k = KernelFile(rel, f.resolve(), dialect)
            spec = default_spec_path(f)
            if spec.is_file():
                k.spec = spec.resolve()
            elif not infer:
                k.spec_origin = "missing"
                k.problem = XPError("XP1242", name=rel, why=f"no {f.name}.toml or {f.stem}.toml beside it", file=f)
            else:
                text, why = _infer(f)
                if text is not None:
                    k.spec_origin, k.inferred_text = "inferred", text
                else:
                    k.spec_origin = "missing"
                    k.problem = XPError("XP1242", name=rel, file=f,
                                        why=f"no {f.name}.toml or {f.stem}.toml beside it, and {why}")
            found.append(k)
    found.sort(key=lambda k: k.rel)
    return found
