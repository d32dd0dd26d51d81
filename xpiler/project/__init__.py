"""Whole directories: ``xpiler migrate DIR --to T -o OUT`` (docs/projects.md).

``migrate_project`` finds every kernel file of a tree (discovery.py), migrates each in its own
child process, ``jobs`` at a time or on a Dask cluster (runner.py, worker.py), records each
finished kernel in ``OUT/project-state.jsonl`` so a killed run resumes without losing or
redoing anything (state.py), and writes ``OUT/summary.json`` and ``OUT/summary.html``
(summary.py).
"""
from .runner import ProjectResult, migrate_project

__all__ = ["ProjectResult", "migrate_project"]
