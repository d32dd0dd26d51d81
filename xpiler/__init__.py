"""xpiler: migrate tensor-operator kernels between CUDA, HIP, BANG C and C/VNNI, and verify
every result by running it."""
import os as _os

__version__ = "0.1.0"

# In a source checkout that is not installed, passes/, manuals/ and sketches/ sit beside this
# package; make them importable as xpiler.passes etc. (an install maps them there itself).
_repo = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_repo, "passes", "base.py")) and _repo not in __path__:
    __path__.append(_repo)

from .api import load, migrate, test  # noqa: E402,F401
from .diagnostics import XPError  # noqa: E402,F401
