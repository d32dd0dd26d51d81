"""Latency of a verified kernel next to a baseline, measured side by side in one run.

Only hardware substrates are timed: native C on this CPU (``hw:cpu-…``) and CUDA on an NVIDIA GPU
(``hw:nvidia-…``). Emulator runs are functional verdicts and never produce a latency (DESIGN §4:
emulator timings are not performance); :func:`measure` then returns no rows and says why.

The baseline is the spec's reference implementation (``ref.py``, numpy) called on the same
inputs in this process, labelled with where it ran ("numpy reference on the host CPU"). It is the
operator's plain library formulation (numpy matmul is OpenBLAS), so the ratio says how the
migrated kernel compares to the obvious library call on this machine; the per-operator PyTorch and
cuBLAS comparisons live in ``benchmarks/`` (cpu_perf.py, gpu_perf.py).

Kernel timing happens inside the harness (3 warm-up calls, then the median of ``repeats`` calls;
CUDA events on a GPU). The instance timed is the largest one in the spec.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .spec import Spec

BASELINE_LABEL = "numpy reference (ref.py) on the host CPU"


@dataclass
class PerfRow:
    instance: str
    shape: str
    substrate: str
    kernel_ms: float
    baseline: str
    baseline_ms: float

    @property
    def speedup(self) -> float:
        """baseline time / kernel time (> 1: the kernel is faster)."""
        return self.baseline_ms / self.kernel_ms if self.kernel_ms > 0 else float("inf")

    def to_json(self) -> dict:
        d = asdict(self)
        d["speedup_vs_baseline"] = self.speedup
        return d


def hardware_substrate(dialect: str, text: str | None = None) -> str | None:
    """The hardware substrate that would time a ``dialect`` kernel here, or None (emulator only).
    With the kernel's ``text``, a c kernel without wide SIMD intrinsics is timed natively on a CPU
    whose c substrate emulates AVX-512 (the tuner's rule: ``schedule.timing.native_c_substrate``)."""
    from .platforms import get_platform
    from .verify.tester import gpu_substrate
    if dialect == "cuda":
        return gpu_substrate("cuda")
    if dialect == "c" and text is not None:
        from .schedule.timing import native_c_substrate
        return native_c_substrate(text)
    if dialect == "c":
        sub = get_platform("c").substrate()
        return sub if sub.startswith("hw:") else None
    return None


def _largest(spec: Spec):
    insts = spec.instances()
    return max(insts, key=lambda i: sum(i.numel(a.name) for a in spec.arrays))


def _time_call(fn, repeats: int) -> float:
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def measure(kernel: Path, spec: Spec, *, repeats: int = 10, timeout_s: float = 120) -> tuple[list[PerfRow], str]:
    """Time ``kernel`` (verified already) and the reference on the spec's largest instance.

    Returns ``(rows, note)``: no rows and the reason in ``note`` when there is no hardware
    substrate for the dialect here, no reference, or the timed run failed."""
    from .verify.inputs import make_inputs
    from .verify.oracle import load_reference, reference_args

    try:
        text = Path(kernel).read_text()
    except (OSError, UnicodeDecodeError):
        text = None
    sub = hardware_substrate(spec.dialect, text)
    if sub is None:
        return [], f"no hardware substrate for {spec.dialect} here (emulator timings are not performance)"
    if not spec.reference:
        return [], "the spec names no reference implementation to compare with"
    inst = _largest(spec)
    from .schedule.timing import measure_kernel   # one timed build-and-run for the report and the tuner
    try:
        kernel_ms, why = measure_kernel(Path(kernel), spec, repeats=repeats, timeout_s=timeout_s)
        if kernel_ms is None:
            return [], why
        arrays = make_inputs(inst, 0)             # the inputs the timed run used (seed 0)
        fn = load_reference(spec)
        args = reference_args(spec, inst, arrays)
        base_ms = _time_call(lambda: fn(*args), repeats)
    except Exception as e:  # a perf measurement never fails a verified migration
        return [], f"not measured: {type(e).__name__}: {str(e)[:200]}"
    return [PerfRow(inst.name, inst.describe(), sub, kernel_ms, BASELINE_LABEL, base_ms)], ""
