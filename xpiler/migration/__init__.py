"""Migration: the pass pipeline, its verification after every step, and the outputs."""
from .driver import MigrationResult, migrate  # noqa: F401
