"""``xpiler.load``: a kernel file as a Python callable on the best substrate here.

The callable takes the array arguments (numpy arrays, or anything ``numpy.asarray`` accepts,
such as torch CPU tensors) and returns the out/inout arrays; scalars come from the spec's
instance unless given.  Every host call runs in a child process with limits, like a test, on the
best substrate here (for cuda: the NVIDIA GPU when one is present, else the SIMT emulator).

Arrays already on an NVIDIA GPU (torch CUDA tensors, CuPy arrays) are not copied through the host:
the kernel is launched in this process on their device pointers, on the caller's stream
(:mod:`xpiler.gpu_call`), and the out/inout arrays passed in are returned.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

from .diagnostics import XPError
from .dtypes import NUMPY
from .platforms import get_platform
from .platforms.harness import read_outputs, write_job
from .sandbox import run_limited
from .spec import Instance, Spec
from .gpu_call import is_device_array
from .verify.tester import _failure_from_outcome, gpu_substrate


class Kernel:
    """A built kernel. ``k(A, B, C)`` → the out/inout arrays (a tuple, or one array)."""

    def __init__(self, src: Path, spec: Spec, *, sanitize: bool = False, timeout: float = 120.0,
                 mem_mb: int = 4096):
        self.src, self.spec = Path(src), spec
        self.platform = get_platform(spec.dialect)
        self.substrate = self.platform.substrate()
        self.timeout, self.mem_mb, self.sanitize = timeout, mem_mb, sanitize
        self._work = Path(tempfile.mkdtemp(prefix="xpiler-load-"))
        self._device = None
        gpu = gpu_substrate(spec.dialect)
        if gpu:
            self.substrate = gpu
            self.exe = self.platform.build(self.src, spec, self._work, sanitize=False, gpu=True)
        else:
            self.exe = self.platform.build(self.src, spec, self._work, sanitize=sanitize)

    def __repr__(self) -> str:
        return f"<xpiler.Kernel {self.spec.entry} ({self.spec.dialect}) on {self.substrate}>"

    def _instance_for(self, sizes: dict[str, int], scalars: dict) -> Instance:
        """The spec instance whose array sizes are ``sizes`` (element counts by argument name),
        with ``scalars`` overriding its scalar values."""
        for inst in self.spec.instances():
            if all(sizes[a.name] == inst.numel(a.name) for a in self.spec.arrays if a.name in sizes):
                if scalars:
                    inst = Instance(inst.spec, inst.name, inst.sizes, inst.shapes, {**inst.scalars, **scalars},
                                    inst.grid, inst.block, inst.shared_bytes, inst.dim, inst.func_type)
                return inst
        raise XPError("XP1206", detail="the arrays' sizes match no instance of the spec; add one to [[shapes]]")

    def __call__(self, *args, **scalars):
        arrays_spec = self.spec.arrays
        if len(args) != len(arrays_spec):
            raise XPError("XP1206", detail=f"{self.spec.entry} takes {len(arrays_spec)} arrays "
                                            f"({', '.join(a.name for a in arrays_spec)}), got {len(args)}")
        on_device = [is_device_array(x) for x in args]
        if any(on_device):
            if not all(on_device):
                raise XPError("XP1206", detail="some arrays are on a CUDA device and some are not; "
                                               "pass all of them on one device, or all on the host")
            return self._call_on_device(args, scalars)
        arrays = {}
        for a, x in zip(arrays_spec, args):
            if a.role in ("out", "inout") and isinstance(x, np.ndarray) and not x.flags.writeable:
                # it would be left unfilled without a word: refuse before running
                raise XPError("XP1206", detail=f"argument '{a.name}' ({a.role}) is a read-only numpy array, but the "
                                               f"kernel writes it; pass a writeable array (e.g. np.array(x) or x.copy())")
            if hasattr(x, "detach"):  # a torch tensor
                x = x.detach().cpu().numpy()
            arrays[a.name] = np.ascontiguousarray(np.asarray(x), dtype=NUMPY[a.dtype])
        inst = self._instance_for({k: v.size for k, v in arrays.items()}, scalars)
        jobdir = Path(tempfile.mkdtemp(prefix="call-", dir=self._work))
        try:
            write_job(jobdir, inst, arrays)
            # a CUDA context reserves far more address space than any RLIMIT_AS would allow; the GPU
            # bounds device memory itself
            mem = None if self.substrate.startswith("hw:nvidia") else self.mem_mb
            oc = run_limited([str(self.exe), str(jobdir)], cwd=jobdir, timeout_s=self.timeout, mem_mb=mem,
                             sanitized=self.sanitize)
            if not oc.ok:
                f = _failure_from_outcome(oc, inst, -1, self.timeout, self.mem_mb)
                raise XPError(f.code, f.message)
            outs = read_outputs(jobdir, inst)
        finally:
            shutil.rmtree(jobdir, ignore_errors=True)
        res = tuple(outs[a.name] for a in self.spec.outputs)
        # write results back into the caller's numpy output arrays, like a kernel would
        for a, x in zip(arrays_spec, args):
            if a.role in ("out", "inout") and isinstance(x, np.ndarray):
                x[...] = outs[a.name].reshape(x.shape)   # also fills strided (non-contiguous) arrays in place
        return res[0] if len(res) == 1 else res

    def _call_on_device(self, args, scalars):
        """Launch in this process on the arrays' device pointers (no host copies)."""
        if self.spec.dialect not in ("cuda", "hip"):
            raise XPError("XP1206", detail=f"a {self.spec.dialect} kernel cannot take CUDA device arrays")
        from .gpu_call import DeviceLauncher, current_stream, device_dtype, device_numel, device_pointer
        for a, x in zip(self.spec.arrays, args):
            got = device_dtype(x)
            if got != a.dtype:
                raise XPError("XP1206", detail=f"argument '{a.name}' is {got} on the device, the kernel takes {a.dtype}")
        inst = self._instance_for({a.name: device_numel(x) for a, x in zip(self.spec.arrays, args)}, scalars)
        if self._device is None:
            self._device = DeviceLauncher(self.src, self.spec, self.spec.dialect)
        self._device.launch(inst, {a.name: device_pointer(x) for a, x in zip(self.spec.arrays, args)},
                            current_stream(args[0]))
        res = tuple(x for a, x in zip(self.spec.arrays, args) if a.role in ("out", "inout"))
        return res[0] if len(res) == 1 else res

    def close(self):
        shutil.rmtree(self._work, ignore_errors=True)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
