"""Discovery of the example suite: one entry per (kernel file, spec) pair."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .spec import default_spec_path, dialect_of

KERNEL_EXTS = (".cu", ".hip", ".mlu", ".c", ".cpp", ".cc", ".cxx")


@dataclass(frozen=True)
class Example:
    op: str
    dialect: str
    variant: str
    source: Path
    spec: Path

    def to_json(self, instances: list[str] | None = None) -> dict:
        d = {"op": self.op, "dialect": self.dialect, "variant": self.variant, "source": str(self.source),
             "spec": str(self.spec)}
        if instances is not None:
            d["instances"] = instances
        return d


def default_suite() -> Path:
    env = os.environ.get("XPILER_EXAMPLES")
    if env:
        return Path(env)
    cwd = Path.cwd() / "examples"
    if cwd.is_dir():
        return cwd
    return Path(__file__).resolve().parent.parent / "examples"


def discover(suite: Path | None = None, dialects: list[str] | None = None, ops: list[str] | None = None) -> list[Example]:
    suite = Path(suite or default_suite())
    out = []
    if not suite.is_dir():
        return out
    for opdir in sorted(p for p in suite.iterdir() if p.is_dir()):
        op = opdir.name
        if ops and op not in ops:
            continue
        for f in sorted(opdir.iterdir()):
            if f.suffix not in KERNEL_EXTS or not f.is_file():
                continue
            d = dialect_of(f)
            if dialects and d not in dialects:
                continue
            spec = default_spec_path(f)
            if not spec.is_file():
                continue
            stem = f.stem
            variant = stem[len(op) + 1:] if stem.startswith(op + "_") else ("base" if stem == op else stem)
            out.append(Example(op, d, variant or "base", f, spec))
    return out


def readme_markdown(suite: Path | None = None) -> str:
    """The op × dialect × variant table of ``examples/README.md`` (kept current by a test)."""
    exs = discover(suite)
    ops = sorted({e.op for e in exs})
    lines = [
        "# The example suite",
        "",
        "Our own kernels, written for this project: 21 operators in the four dialects, each with a spec",
        "(`<file>.toml`: sizes, at least three instances including an odd one, launch, arguments) and a numpy",
        "reference (`ref.py`). Variants are the hard sources to migrate from: shared-memory/LDS tiling, WMMA,",
        "MFMA, warp/wave shuffles, NRAM/WRAM staging with `__bang_*` ops, AVX-512 and VNNI intrinsics.",
        "",
        "Verify all of them: `python benchmarks/verify_examples.py`; list them: `xpiler bench --list --json`.",
        "This table is generated: `python -m xpiler.examples_index > examples/README.md`.",
        "",
        "| op | cuda | hip | bang | c |",
        "|---|---|---|---|---|",
    ]
    for op in ops:
        cells = []
        for d in ("cuda", "hip", "bang", "c"):
            vs = sorted(e.variant for e in exs if e.op == op and e.dialect == d)
            cells.append(", ".join(vs) if vs else "—")
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    lines += ["", f"{len(exs)} kernels in all."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import sys
    sys.stdout.write(readme_markdown())
