"""Verification: input generation, differential comparison, and the test driver."""
from .tester import Verdict, RunFailure, test_kernel, compare_kernels  # noqa: F401
