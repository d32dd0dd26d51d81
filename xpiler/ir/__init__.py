"""The xpiler IR: nodes (nodes.py), intrinsic registry with semantics (intrinsics.py),
traversal (visit.py) and analyses (poly.py: the one polynomial model; z3term.py: the one IR -> Z3
translator; affine.py, footprint.py; the dependence test is passes/dependence.py)."""
from .nodes import *  # noqa: F401,F403
