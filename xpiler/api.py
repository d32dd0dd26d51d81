"""The Python API (DESIGN §3.3) for framework integrators; the CLI is a thin layer over it.

No global state: every call takes what it needs as arguments.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from .diagnostics import XPError, XPErrors
from .signature import check_signature
from .source_text import read_source
from .spec import check_reference
from .spec import DIALECTS, Spec, _find_line, declared_dialect, default_spec_path, dialect_of, load_spec
from .verify.tester import Verdict, compare_kernels


def _check_dialect(src: Path, spec_dialect: str | None, line: int | None, spec_path) -> None:
    d = dialect_of(src)
    if d is not None and spec_dialect in DIALECTS and d != spec_dialect:
        raise XPError("XP1023", spec=spec_dialect, src=d, file=spec_path, line=line)


def _resolve(src: str | Path, spec: str | Path | Spec | None) -> tuple[Path, Spec]:
    src = Path(src)
    if not src.is_file():
        raise XPError("XP1201", path=src, file=src)
    read_source(src)        # XP1108 for a source that is not UTF-8 text (as `xpiler parse` says)
    if isinstance(spec, Spec):
        s = spec
        check_reference(s)  # load_spec checks it for a spec file (XP1019)
    else:
        sp = Path(spec) if spec else default_spec_path(src)
        try:
            s = load_spec(sp)
        except XPError as e:
            # a spec for another dialect fails that dialect's checks (XP1010, ...): the mismatch first
            try:
                _check_dialect(src, *declared_dialect(sp), sp)
            except XPError as mismatch:
                raise XPErrors([mismatch] + list(getattr(e, "errors", [e]))) from None
            raise
    _check_dialect(src, s.dialect, _find_line(s.text, "dialect") if s.text else None, s.path)
    check_signature(src, s)
    return src, s


def test(src: str | Path, spec: str | Path | Spec | None = None, *, seeds: Sequence[int] = (0, 1, 2),
         instances: list[str] | None = None, sanitize: bool = True, timeout: float = 120.0, mem_mb: int = 4096,
         jobs: int = 2, progress: Callable[[int, int], None] | None = None) -> Verdict:
    """Run ``src`` on the best substrate here against its spec's reference; return the verdict.

    The verdict names its substrate (``hw:…`` or ``emu:…``), the seeds and instances run, and
    the largest absolute and relative errors seen.
    """
    from .migration.driver import check_run_options
    check_run_options(jobs=jobs, timeout=timeout)
    if not list(seeds):
        raise XPError("XP1223", flag="--seeds", value=0, want="at least one seed")
    src, s = _resolve(src, spec)
    if instances:
        known = [i.name for i in s.instances()]
        for name in instances:
            if name not in known:
                raise XPError("XP1224", name=name, names=", ".join(known), file=s.path)
    return compare_kernels(src, s, seeds=seeds, instances=instances, sanitize=sanitize, timeout=timeout,
                           mem_mb=mem_mb, jobs=jobs, progress=progress)


def migrate(src: str | Path, to: str, spec: str | Path | None = None, *, outdir: str | Path = "out",
            llm: str | None = None, proposer: str = "symbolic", budget: float = 600.0, tune: bool = False,
            seed: int = 0, jobs: int = 2, resume: str | Path | None = None, progress=None,
            perf: bool = True, timeout: float = 120.0, force: bool = False, max_evals: int | None = None,
            tune_sizes: dict | None = None, cluster=None, emit_asm: bool = False, repair: bool = True):
    """Migrate ``src`` to dialect ``to`` and verify it (DESIGN §3.3).

    Returns a :class:`xpiler.migration.MigrationResult`: ``verified``, ``code``, ``output_path``,
    ``report_path``, ``log_path``, ``latency`` and ``perf`` (kernel vs reference latency, measured
    only on a hardware substrate: native C, or cuda on an NVIDIA GPU; ``perf=False`` skips it),
    ``diagnostics``. A result that is
    not verified wrote its best candidate with ``.unverified`` in the name.

    The source is tested alone first (a failing or hanging source, or a reference that raises,
    is refused with XP1220/XP1221/XP1222 and nothing is migrated). ``budget`` (seconds) is a
    wall-clock cap on the whole migration, tests, LLM calls and a pass still running at the
    deadline included (it stops at its next check, xpiler/deadline.py; XP4020 says what was
    cut and where); ``timeout`` caps one child run (each candidate's limit is derived from the source's
    measured run time, at most this).

    Into ``outdir``, xpiler writes only files it can prove it wrote (their hashes are kept in
    ``outdir/.xpiler-output``): any other file of the same name, or one edited since, is refused
    with XP1204 before anything is written, unless ``force=True``. The source, spec and
    reference are never overwritten (XP1208), not even with ``force``.

    ``tune=True`` searches, after the plan verified a kernel, for a faster verified one (MCTS over
    the target passes' steps, xpiler/schedule/; ``max_evals`` candidates at most, within
    ``budget``; ``seed`` makes the search repeatable; latencies are taken on the spec's largest
    instance, or on it with ``tune_sizes`` (e.g. ``{"rows": 4096, "cols": 1024}``) put over its
    sizes); candidates are tested ``jobs`` at a time, or on a Dask cluster: ``cluster`` is a
    ``distributed.Client`` or a scheduler address; docs/schedule.md.

    ``emit_asm=True`` writes the verified kernel's assembly beside it (PTX and, with cuobjdump,
    SASS for sm_90; AMDGPU gfx90a/gfx1100; x86-64) and records it in the log and the report
    (``result.asm``); a tool that is missing is a note (XP4130), never a changed verdict.

    ``repair=False`` drops a failing candidate at once instead of handing it to Z3 sketch repair
    (docs/repair.md; the ablation).
    """
    from .migration.driver import migrate as _migrate
    return _migrate(src, to, spec, outdir, proposer=proposer, llm=llm, budget=budget, tune=tune, seed=seed,
                    jobs=jobs, resume=resume, progress=progress, perf=perf, timeout=timeout, force=force,
                    max_evals=max_evals, tune_sizes=tune_sizes, cluster=cluster, emit_asm=emit_asm,
                    repair=repair)


def load(src: str | Path, spec: str | Path | Spec | None = None, *, sanitize: bool = False,
         timeout: float = 120.0):
    """Build ``src`` for the best substrate here and return it as a callable.

    ``k = xpiler.load("out/add.mlu", spec="out/add.mlu.toml"); c = k(a, b, c)`` runs the kernel
    with numpy arrays (torch CPU tensors are accepted) and returns its out/inout arrays; numpy
    output arrays passed in are filled too. ``k.substrate`` names where it ran.
    """
    from .kernel import Kernel
    src, s = _resolve(src, spec)
    return Kernel(src, s, sanitize=sanitize, timeout=timeout)
