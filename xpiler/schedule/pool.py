"""Where candidate jobs run: a local pool of threads (each job's builds and runs are child
processes, so threads are enough to keep several busy), or a Dask cluster (``--cluster ADDRESS``;
the same ``run_candidate`` on its workers). Both return results in the order of the jobs, so a
search over them is the same whichever pool ran it.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ..diagnostics import XPError


class LocalPool:
    def __init__(self, workers: int = 1):
        self.workers = max(1, int(workers))
        self.label = f"local pool of {self.workers}"

    def map(self, fn, items: list) -> list:
        if self.workers == 1 or len(items) <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(min(self.workers, len(items))) as ex:
            return list(ex.map(fn, items))


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

    def map(self, fn, items: list) -> list:
        if not items:
            return []
        futs = self.client.map(fn, items, pure=False)
        return self.client.gather(futs)
