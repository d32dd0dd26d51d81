"""BM25 (Okapi, via ``rank-bm25``) over manual sections, one index per target.

A section is indexed as: its id split at dots, its topic, its signature (twice: the names a
kernel actually contains are the strongest evidence), the passes it is tagged with, and its
body. Queries are built by ``query_for(pass, target, apis)``: the pass's name and a few words
describing it on that target, plus the APIs/intrinsics present in the program (each twice).
Ties are broken by id, so results are deterministic.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

from rank_bm25 import BM25Okapi

from .corpus import Section, TARGETS, load_manuals
from .tokenizer import tokenize

PASSES = ("loop_recovery", "binding", "split", "fuse", "reorder", "expansion", "contraction",
          "cache", "pipeline", "tensorize", "detensorize")

_PASS_ALIASES = {
    "loop_recovery": "loop_recovery", "recovery": "loop_recovery", "recover": "loop_recovery",
    "binding": "binding", "bind": "binding", "loop_binding": "binding", "loop_bind": "binding",
    "split": "split", "loop_split": "split", "tile": "split", "tiling": "split",
    "fuse": "fuse", "fusion": "fuse", "loop_fuse": "fuse",
    "reorder": "reorder", "loop_reorder": "reorder", "interchange": "reorder",
    "expansion": "expansion", "expand": "expansion", "loop_expansion": "expansion",
    "contraction": "contraction", "contract": "contraction", "loop_contraction": "contraction",
    "cache": "cache", "cache_read": "cache", "cache_write": "cache", "caching": "cache",
    "pipeline": "pipeline", "pipelining": "pipeline", "software_pipelining": "pipeline",
    "tensorize": "tensorize", "tensorization": "tensorize",
    "detensorize": "detensorize", "detensorization": "detensorize",
}

# Words describing each pass, in general and on one target. Kept short: the APIs in the
# program should dominate the query.
PASS_TERMS = {
    "loop_recovery": "loop recovery sequential for loop parallel index",
    "binding": "bind loop parallel launch",
    "split": "split loop tile factor remainder",
    "fuse": "fuse loops merge",
    "reorder": "reorder loop order contiguous access",
    "expansion": "expansion unroll vector width",
    "contraction": "contraction reduction reduce",
    "cache": "cache stage on-chip buffer tile",
    "pipeline": "pipeline overlap copy compute double buffer",
    "tensorize": "tensorize matrix instruction",
    "detensorize": "detensorize scalar loop semantics",
}
PASS_TARGET_TERMS = {
    ("loop_recovery", "cuda"): "threadIdx blockIdx",
    ("loop_recovery", "hip"): "threadIdx blockIdx",
    ("loop_recovery", "bang"): "taskId taskDim",
    ("loop_recovery", "c"): "for loop",
    ("binding", "cuda"): "thread block grid launch",
    ("binding", "hip"): "thread block grid wavefront launch",
    ("binding", "bang"): "task core cluster launch",
    ("binding", "c"): "omp parallel for thread",
    ("cache", "cuda"): "shared memory __shared__",
    ("cache", "hip"): "LDS __shared__",
    ("cache", "bang"): "NRAM __memcpy GDRAM2NRAM",
    ("cache", "c"): "cache blocking pack",
    ("pipeline", "cuda"): "async copy double buffer",
    ("pipeline", "hip"): "double buffer LDS",
    ("pipeline", "bang"): "__memcpy_async double buffer",
    ("pipeline", "c"): "prefetch",
    ("tensorize", "cuda"): "wmma tensor core",
    ("tensorize", "hip"): "mfma matrix core",
    ("tensorize", "bang"): "tensor vector instruction NRAM WRAM",
    ("tensorize", "c"): "vnni avx512 intrinsic",
    ("contraction", "cuda"): "warp shuffle",
    ("contraction", "hip"): "wavefront shuffle",
    ("contraction", "bang"): "reduce sum",
    ("contraction", "c"): "reduction",
    ("expansion", "c"): "vector mask",
    ("expansion", "bang"): "vector",
}


def normalize_pass(name: str) -> str:
    key = re.sub(r"[\s\-]+", "_", name.strip().lower())
    if key not in _PASS_ALIASES:
        raise ValueError(f"unknown pass {name!r} (known: {', '.join(PASSES)})")
    return _PASS_ALIASES[key]


def query_for(pass_name: str, target: str, apis: list[str] | tuple[str, ...] = ()) -> str:
    """The retrieval query for one pass on one target, given the APIs present in the program."""
    p = normalize_pass(pass_name)
    words = [p.replace("_", " "), PASS_TERMS[p], PASS_TARGET_TERMS.get((p, target), "")]
    apis = [a.strip() for a in apis if a and a.strip()]
    # each API twice: the exact names in the program outweigh the generic pass words
    words += apis + apis
    return " ".join(w for w in words if w)


def _doc_tokens(s: Section) -> list[str]:
    parts = [s.id.replace(".", " "), s.topic.replace("-", " "), s.signature, s.signature,
             " ".join(s.passes), s.body]
    return tokenize("\n".join(parts))


class ManualIndex:
    """BM25 indices over manual sections: one per target and one over all of them."""

    def __init__(self, sections: list[Section]):
        self.sections = list(sections)
        self.by_id = {s.id: s for s in self.sections}
        if len(self.by_id) != len(self.sections):
            raise ValueError("duplicate section ids")
        self._groups: dict[str | None, tuple[list[Section], BM25Okapi | None]] = {}
        for key in list(TARGETS) + [None]:
            group = [s for s in self.sections if key is None or s.target == key]
            bm = BM25Okapi([_doc_tokens(s) for s in group]) if group else None
            self._groups[key] = (group, bm)

    @classmethod
    def from_dir(cls, root: Path | str | None = None, strict: bool = False) -> "ManualIndex":
        return cls(load_manuals(root, strict=strict))

    def targets(self) -> dict[str, int]:
        return {t: len(self._groups[t][0]) for t in TARGETS}

    def search(self, query: str, target: str | None = None, k: int = 3) -> list[tuple[Section, float]]:
        """Top-k (section, score) for a query, restricted to one target (None: all)."""
        if target is not None and target not in TARGETS:
            raise ValueError(f"unknown target {target!r}")
        group, bm = self._groups[target]
        terms = tokenize(query)
        if bm is None or not terms or k <= 0:
            return []
        scores = bm.get_scores(terms)
        order = sorted(range(len(group)), key=lambda i: (-scores[i], group[i].id))
        return [(group[i], float(scores[i])) for i in order[:k] if scores[i] > 0]

    def retrieve(self, query: str, target: str | None, k: int = 3) -> list[Section]:
        return [s for s, _ in self.search(query, target, k)]


@functools.lru_cache(maxsize=4)
def _cached_index(root: str | None) -> ManualIndex:
    return ManualIndex.from_dir(root, strict=False)


def default_index(root: Path | str | None = None, refresh: bool = False) -> ManualIndex:
    """The index over the installed manuals (built once per process; refresh=True rebuilds)."""
    key = str(root) if root is not None else None
    if refresh:
        _cached_index.cache_clear()
    return _cached_index(key)


def retrieve(query: str, target: str, k: int = 3) -> list[Section]:
    """Top-k manual sections of `target` for `query` (see query_for)."""
    return default_index().retrieve(query, target, k)
