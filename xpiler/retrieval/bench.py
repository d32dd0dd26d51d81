"""Recall@k of the manual index on a query set (benchmarks/retrieval_queries.toml).

A query entry: ``pass``, ``target``, ``apis`` (list), optional ``text`` (extra words) and
``expected`` (section ids). Its recall@k is |expected ∩ top-k| / min(k, |expected|): with
one expected section, recall@1 asks for it first and recall@3 for it among the first three.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .bm25 import ManualIndex, query_for, normalize_pass
from .corpus import TARGETS


@dataclass(frozen=True)
class Query:
    pass_name: str
    target: str
    apis: tuple[str, ...]
    text: str
    expected: tuple[str, ...]

    def query(self) -> str:
        q = query_for(self.pass_name, self.target, list(self.apis))
        return f"{q} {self.text}".strip()


def load_queries(path: Path | str) -> list[Query]:
    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for n, q in enumerate(data.get("query", []), start=1):
        try:
            pass_name = normalize_pass(q["pass"])
            target = q["target"]
            expected = tuple(q["expected"])
        except (KeyError, ValueError) as e:
            raise ValueError(f"{path}: query {n}: {e}") from None
        if target not in TARGETS or not expected:
            raise ValueError(f"{path}: query {n}: bad target or empty expected list")
        out.append(Query(pass_name, target, tuple(q.get("apis", [])), q.get("text", ""), expected))
    return out


def recall_at(retrieved: list[str], expected: tuple[str, ...], k: int) -> float:
    hits = len(set(retrieved[:k]) & set(expected))
    return hits / min(k, len(expected))


def evaluate(index: ManualIndex, queries: list[Query], ks: tuple[int, ...] = (1, 3)) -> dict:
    """{'per_target': {t: {'n', 'recall@k'...}}, 'overall': {...}, 'rows': [...], 'missing': [...]}"""
    kmax = max(ks)
    rows, missing = [], []
    for q in queries:
        for sid in q.expected:
            if sid not in index.by_id:
                missing.append(sid)
        got = [s.id for s in index.retrieve(q.query(), q.target, kmax)]
        rows.append({"query": q, "retrieved": got, **{f"recall@{k}": recall_at(got, q.expected, k) for k in ks}})

    def summary(sel):
        res = {"n": len(sel)}
        for k in ks:
            res[f"recall@{k}"] = sum(r[f"recall@{k}"] for r in sel) / len(sel) if sel else float("nan")
        return res

    per_target = {t: summary([r for r in rows if r["query"].target == t]) for t in TARGETS}
    return {"per_target": per_target, "overall": summary(rows), "rows": rows, "missing": sorted(set(missing))}
