"""xpiler: migrate tensor-operator kernels between CUDA, HIP, BANG C and C/VNNI, and verify
every result by running it."""
import os as _os
import sys as _sys

if _os.path.basename(_sys.argv[0] if _sys.argv else "") in ("xpiler", "-m") and "numpy" not in _sys.modules:
    # The command computes reference outputs (small numpy calls) from its tester's worker
    # threads. A multi-threaded OpenBLAS was seen to spin forever in exec_blas there, its worker
    # threads gone (self_attention.cu -> bang, a 257 x 13 matmul, 2026-12-03); the command runs
    # them with one BLAS thread. A library user's process keeps its own setting.
    _os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"

# In a source checkout that is not installed, passes/, manuals/ and sketches/ sit beside this
# package; make them importable as xpiler.passes etc. (an install maps them there itself).
_repo = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_repo, "passes", "base.py")) and _repo not in __path__:
    __path__.append(_repo)

from .api import load, migrate, test  # noqa: E402,F401
from .diagnostics import XPError  # noqa: E402,F401
