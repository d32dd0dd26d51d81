"""Where candidate jobs run: a local pool of threads (each job's builds and runs are child
processes, so threads are enough to keep several busy), or a Dask cluster (``--cluster ADDRESS``;
the same ``run_candidate`` on its workers). Both return results in the order of the jobs, so a
search over them is the same whichever pool ran it.

``map(fn, items, deadline=...)`` (a ``time.time()`` value) is the search's backstop of its
wall-clock cap: it returns by the deadline, with ``None`` for each job not back by then (the job's
own limits were cut to the search's budget before, evaluator.py ``cap_job``; this catches what
they do not bound, a compiler's build). A job left running that way runs on in a daemon thread
(its child processes keep their own time limits) and its result is dropped.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ..diagnostics import XPError


class LocalPool:
    def __init__(self, workers: int = 1):
        self.workers = max(1, int(workers))
        self.label = f"local pool of {self.workers}"

    def map(self, fn, items: list, deadline: float | None = None) -> list:
        if deadline is not None:
            return _map_until(fn, items, self.workers, deadline)
        if self.workers == 1 or len(items) <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(min(self.workers, len(items))) as ex:
            return list(ex.map(fn, items))


def _map_until(fn, items: list, workers: int, deadline: float) -> list:
    """``fn`` over ``items`` on ``workers`` daemon threads; ``None`` for each item not done by
    ``deadline`` (an item not yet started then is never started)."""
    results: list = [None] * len(items)
    done = [False] * len(items)
    lock, finished = threading.Lock(), threading.Condition()
    nxt = [0]

    def worker():
        while True:
            with lock:
                i = nxt[0]
                if i >= len(items) or time.time() >= deadline:
                    return
                nxt[0] += 1
            try:
                r = fn(items[i])
            except Exception as e:   # as a thread pool would: the error, raised in the caller
                r = e
            with finished:
                results[i], done[i] = r, True
                finished.notify_all()

    for _ in range(max(1, min(workers, len(items)))):
        threading.Thread(target=worker, daemon=True, name="xpiler-candidate").start()
    with finished:
        while not all(done):
            left = deadline - time.time()
            if left <= 0:
                break
            finished.wait(left)
    out = [r if ok else None for r, ok in zip(results, done)]
    for r in out:
        if isinstance(r, Exception):
            raise r
    return out


class DaskPool:
    """``client``: a ``distributed.Client`` or a scheduler address (``tcp://host:8786``)."""

    def __init__(self, client):
        try:
            from distributed import Client
        except ImportError:
            raise XPError("XP1205", detail="--cluster needs Dask distributed: pip install 'xpiler[dist]'") from None
        if isinstance(client, str):
            try:
                client = Client(client, timeout=10)
            except Exception as e:   # an unreachable scheduler is bad input, said plainly
                raise XPError("XP1205", detail=f"cannot reach the Dask scheduler at {client}: {e}") from None
        self.client = client
        try:
            self.workers = max(1, sum(client.nthreads().values()))
        except Exception:
            self.workers = 1
        self.label = f"Dask cluster ({self.workers} worker threads)"

    def map(self, fn, items: list, deadline: float | None = None) -> list:
        if not items:
            return []
        futs = self.client.map(fn, items, pure=False)
        if deadline is None:
            return self.client.gather(futs)
        from distributed import wait
        try:
            wait(futs, timeout=max(0.0, deadline - time.time()))
        except Exception:   # the deadline passed first (a timeout): what is done is kept
            pass
        out = []
        for f in futs:
            if f.status in ("finished", "error"):   # an error is raised here, as gather raises it
                out.append(f.result())
            else:
                f.cancel()
                out.append(None)
        return out
