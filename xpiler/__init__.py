"""xpiler: migrate tensor-operator kernels between CUDA, HIP, BANG C and C/VNNI, and verify
every result by running it."""
__version__ = "0.1.0"

from .api import load, migrate, test  # noqa: E402,F401
from .diagnostics import XPError  # noqa: E402,F401
