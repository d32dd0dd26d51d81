"""Timed runs of candidates: one at a time in a process, and c kernels on a fixed, bound number of
OpenMP threads (xpiler/schedule/timing.py)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import xpiler.schedule.timing as T
from xpiler.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent


def test_c_timed_runs_use_the_timing_thread_count_bound(monkeypatch):
    monkeypatch.delenv("XPILER_TIMING_THREADS", raising=False)
    assert T.timing_env("c") == {"OMP_NUM_THREADS": "1", "OMP_PROC_BIND": "true"}
    monkeypatch.setenv("XPILER_TIMING_THREADS", "2")
    assert T.timing_env("c")["OMP_NUM_THREADS"] == "2"
    monkeypatch.setenv("XPILER_TIMING_THREADS", "many")
    assert T.timing_env("c")["OMP_NUM_THREADS"] == "1"
    assert T.timing_env("cuda") is None


def test_measure_kernel_passes_the_environment_to_the_timed_run(monkeypatch, tmp_path):
    import xpiler.sandbox as S
    seen = []
    real = S.run_limited

    def spy(argv, **kw):
        seen.append(kw.get("env"))
        return real(argv, **kw)
    monkeypatch.setattr(S, "run_limited", spy)
    monkeypatch.delenv("XPILER_TIMING_THREADS", raising=False)
    src = ROOT / "examples" / "relu" / "relu.c"
    ms, note = T.measure_kernel(src, load_spec(src.with_name(src.name + ".toml")), repeats=3)
    assert ms is not None and ms > 0, note
    assert seen and seen[-1] == {"OMP_NUM_THREADS": "1", "OMP_PROC_BIND": "true"}


def test_timed_runs_of_one_process_take_turns(monkeypatch):
    monkeypatch.delenv("XPILER_TIMING_LOCK", raising=False)
    inside, overlap = [0], [False]
    guard = threading.Lock()

    def timed():
        with T._timing_lock():
            with guard:
                inside[0] += 1
                overlap[0] |= inside[0] > 1
            time.sleep(0.05)
            with guard:
                inside[0] -= 1
    threads = [threading.Thread(target=timed) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not overlap[0], "two timed runs overlapped"
