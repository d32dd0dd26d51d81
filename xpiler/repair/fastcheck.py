"""Fast example checks for the repair search (docs/repair.md, "Where the time goes").

``compare_kernels`` is the gate; it is also heavy for a filter: every call derives the boundary
instances (parses both kernels), prepares both builds, and runs the source kernel again beside
the candidate. The search calls it for every hole assignment. Here one parametric build is made
once (without AddressSanitizer unless the failure needs it, always on the emulator), the inputs
and the expected outputs of each example (instance, seed) are computed once (the spec's
reference and the source kernel, as the full test compares), and an assignment check is one run
of the built program plus the comparison. It is only a filter: an assignment that passes is
still tested by the full gate (``compare_kernels`` on the concrete program, AddressSanitizer,
every instance and seed).
"""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from xpiler.spec import Spec, load_spec

#: the least a filter run may take before it counts as a hang (a filling that makes a loop run
#: forever costs this much; a run of a right filling that is slower only loses that filling, the
#: gate never sees it). Was 3 s: in the 2026-12-03 runs a stride or guard filling that hangs
#: (``half >= 0`` for ``half > 0`` with ``half /= 2``) cost 3 s of a repair.
FLOOR_S = 1.5


class ExampleOracle:
    """Inputs and expected outputs per (instance, seed), computed once. ``instances``: name ->
    Instance, built from the failing verdict (spec instances and the derived boundary ones)."""

    def __init__(self, spec: Spec, against, use_reference: bool, verdict, timeout: float):
        from xpiler.verify.tester import _Runner
        self.spec, self.use_ref, self.timeout = spec, use_reference, timeout
        self.root = Path(tempfile.mkdtemp(prefix="xpiler-repair-ex-"))
        self.inst = {i.name: i for i in spec.instances()}
        self.src_inst = {}
        self.src = None
        if against:
            sspec = against[1] if isinstance(against[1], Spec) else load_spec(against[1])
            self.sspec = sspec
            self.src = _Runner(Path(against[0]), sspec, False, self.root, timeout, 4096, emulator=True)
            self.src_inst = {i.name: i for i in sspec.instances()}
        for d in getattr(verdict, "derived", None) or []:
            try:
                if d["name"] not in self.inst:
                    self.inst[d["name"]] = spec.instance_with(d["name"], d["sizes"])
                if self.src is not None and d["name"] not in self.src_inst:
                    self.src_inst[d["name"]] = self.sspec.instance_with(d["name"], d["sizes"])
            except Exception:
                pass
        self.cache: dict = {}
        self.src_s = 0.0      # the source kernel's slowest run here

    def limit(self) -> float:
        """A filter run's limit: a candidate that hangs must not cost the full per-run limit on
        every assignment. 20 times the source's slowest run (at least ``FLOOR_S``), at most ``timeout``;
        too short a limit can only reject a candidate, never accept one."""
        if self.src is None or self.src_s <= 0:
            return self.timeout
        return min(self.timeout, max(FLOOR_S, 20 * self.src_s))

    def expected(self, name: str, seed: int):
        """(inputs, [expected outputs per oracle]) or None when this example cannot be prepared."""
        key = (name, seed)
        if key in self.cache:
            return self.cache[key]
        from xpiler.verify.inputs import make_inputs
        from xpiler.verify.oracle import kernel_outputs_as_expected, reference_outputs
        out = None
        inst = self.inst.get(name)
        if inst is not None:
            try:
                arrays = make_inputs(inst, seed)
                exps = []
                if self.use_ref and self.spec.reference:
                    exps.append(reference_outputs(self.spec, inst, arrays))
                if self.src is not None:
                    si = self.src_inst.get(name)
                    if si is None:
                        raise KeyError(name)
                    t0 = time.time()
                    got, _ = self.src.run(si, {k: v.copy() for k, v in arrays.items()}, f"src-{seed}", seed)
                    self.src_s = max(self.src_s, time.time() - t0)
                    if got is None:
                        raise RuntimeError("source run failed")
                    exps.append(kernel_outputs_as_expected(self.sspec, got))
                out = (inst, arrays, exps) if exps else None
            except Exception:
                out = None
        self.cache[key] = out
        return out

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)


class FastRunner:
    """One build of a (parametric) program; ``check(examples)`` runs it on each example."""

    def __init__(self, path: Path, oracle: ExampleOracle, sanitize: bool):
        from xpiler.verify.tester import _Runner
        self.oracle = oracle
        self.sanitize = sanitize
        self.runner = _Runner(Path(path), oracle.spec, sanitize, oracle.root, oracle.timeout, 4096, emulator=True)

    def run_one(self, name: str, seed: int):
        """True (passes), False (fails), None (the example cannot be prepared: not decisive)."""
        from xpiler.verify.tester import _compare
        ex = self.oracle.expected(name, seed)
        if ex is None:
            return None
        inst, arrays, exps = ex
        got, _ = self.runner.run(inst, {k: v.copy() for k, v in arrays.items()}, f"ex-{name}-{seed}", seed,
                                 timeout=self.oracle.limit())
        if got is None:
            return False
        for exp in exps:
            f, _, _ = _compare(self.oracle.spec, inst, seed, got, exp, arrays)
            if f:
                return False
        return True

    def check(self, examples) -> bool | None:
        decided = False
        for name, seed in examples:
            r = self.run_one(name, seed)
            if r is False:
                return False
            decided = decided or r is True
        return True if decided else None
