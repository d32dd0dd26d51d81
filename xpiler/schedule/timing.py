"""Latency of a candidate kernel for the search: measured on hardware where there is some, else
the analytical cost model (xpiler/schedule/cost.py), always labelled with which one it is.

- c: built natively (no AddressSanitizer) and timed inside the harness (3 warm-up calls, then the
  median of ``repeats`` calls) on the spec's largest instance, with OpenMP on
  ``XPILER_TIMING_THREADS`` threads (default 1), bound to their places (:func:`timing_env`). That is a real CPU timing when the
  kernel runs natively here: always on a CPU with AVX-512 VNNI; on another x86-64 CPU only when
  the kernel uses no AVX-512/VNNI/AMX intrinsic (those run through SIMD Everywhere's portable code
  there, which is an emulation, so such a kernel gets the cost model instead).
- cuda: CUDA events on an NVIDIA GPU when one is present (the perf build of the tester).
- hip, bang, and cuda without a GPU: the cost model (label ``model:analytic``).

A measured latency is labelled ``hw:…``; a modelled one ``model:analytic``. The two are never
compared with each other: one search uses one source for all its candidates (:func:`source_for`).

Timed runs of one process take turns (a lock), and those of several processes too when
``XPILER_TIMING_LOCK`` names a lock file: the search's pool builds and tests other candidates at
the same time, and two timed runs side by side would time each other.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

#: intrinsics that only a CPU with AVX-512 (VNNI, AMX) runs natively
_WIDE_SIMD = re.compile(r"\b(_mm512_\w+|__m512\w*|_mm256_dpbusds?_\w+|_mm256_dpwssds?_\w+|_tile_\w+|__mmask(8|16|32|64))\b")
MODEL = "model:analytic"


def native_c_substrate(text: str) -> str | None:
    """The hardware label of a c kernel's timed run here, or None when it would be emulated."""
    from xpiler.platforms.c import CPlatform
    plat = CPlatform()
    if plat._mode() == "native":
        return "hw:cpu-avx512vnni"
    if _WIDE_SIMD.search(text):
        return None
    return "hw:cpu-native"


def source_for(dialect: str, text: str) -> str:
    """Where the latencies of a search over ``dialect`` programs come from (decided once, from the
    start program): a hardware label, or :data:`MODEL`."""
    from xpiler.verify.tester import gpu_substrate
    if dialect == "c":
        return native_c_substrate(text) or MODEL
    if dialect == "cuda":
        return gpu_substrate("cuda") or MODEL
    return MODEL


def largest_instance(spec):
    insts = spec.instances()
    return max(insts, key=lambda i: sum(i.numel(a.name) for a in spec.arrays))


def timing_instance(spec, sizes: dict | None = None):
    """The instance latencies are taken on: the spec's largest, with ``sizes`` (``--tune-sizes``,
    e.g. ``rows=4096,cols=1024``) put over its sizes when given (XPError when they make no valid
    instance)."""
    big = largest_instance(spec)
    if not sizes:
        return big
    return spec.instance_with("tune", {**big.sizes, **sizes})


#: timed runs of this process one at a time (the local pool's threads time candidates too)
_IN_PROCESS = threading.Lock()


@contextlib.contextmanager
def _timing_lock():
    """Timed runs one at a time: always within this process, and across processes when
    ``XPILER_TIMING_LOCK`` names a lock file (several tuning processes, or Dask workers, sharing one
    GPU or CPU would otherwise time each other's load)."""
    with _IN_PROCESS:
        path = os.environ.get("XPILER_TIMING_LOCK")
        if not path:
            yield
            return
        import fcntl
        with open(path, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)


def timing_threads() -> int:
    """OpenMP threads of a timed c run: ``XPILER_TIMING_THREADS``, default 1 (docs/decisions.md,
    2026-12-05: with more threads than idle cores, a run measures the scheduler at its barriers)."""
    try:
        return max(1, int(os.environ.get("XPILER_TIMING_THREADS", "1")))
    except ValueError:
        return 1


def timing_env(dialect: str) -> dict | None:
    """Environment of a timed run: for c, OpenMP on :func:`timing_threads` threads bound to their
    places (``OMP_PROC_BIND``), so that a thread is not moved between cores while timed."""
    if dialect != "c":
        return None
    return {"OMP_NUM_THREADS": str(timing_threads()), "OMP_PROC_BIND": "true"}


def measure_kernel(kernel: Path, spec, *, repeats: int = 7, timeout_s: float = 60.0,
                   sizes: dict | None = None) -> tuple[float | None, str]:
    """Median latency (ms) of ``kernel`` on the timing instance on hardware here, and a note;
    ``(None, why)`` when it could not be timed."""
    from xpiler.platforms import get_platform
    from xpiler.platforms.harness import write_job
    from xpiler.sandbox import run_limited
    from xpiler.verify.inputs import make_inputs
    inst = timing_instance(spec, sizes)
    work = Path(tempfile.mkdtemp(prefix="xpiler-time-"))
    try:
        plat = get_platform(spec.dialect)
        if spec.dialect == "cuda":
            exe = plat.build(Path(kernel), spec, work, sanitize=False, gpu=True, timing=True)
        else:
            exe = plat.build(Path(kernel), spec, work, sanitize=False, timing=repeats)
        job = work / "job"
        write_job(job, inst, make_inputs(inst, 0))
        with _timing_lock():
            oc = run_limited([str(exe), str(job)], timeout_s=timeout_s, mem_mb=None, env=timing_env(spec.dialect))
        m = re.search(r"xpiler-time-ms: ([0-9.eE+-]+)", oc.stdout or "")
        if not oc.ok or not m:
            return None, f"the timed run failed ({oc.reason})"
        return float(m.group(1)), inst.describe()
    except Exception as e:  # a timing failure is a missing latency, never a dead search
        return None, f"not timed: {type(e).__name__}: {str(e)[:200]}"
    finally:
        shutil.rmtree(work, ignore_errors=True)
