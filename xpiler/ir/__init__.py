"""The xpiler IR: nodes (nodes.py), intrinsic registry with semantics (intrinsics.py),
traversal (visit.py) and analyses (affine.py, dependence.py, footprint.py)."""
from .nodes import *  # noqa: F401,F403
