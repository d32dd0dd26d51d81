"""Manual sections, the code-aware tokenizer and BM25 retrieval (xpiler.retrieval)."""
from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from xpiler.retrieval import (PASSES, TARGETS, ManualError, ManualIndex, load_manuals, parse_front_matter,
                              query_for, retrieve, tokenize)
from xpiler.retrieval.bench import Query, evaluate, load_queries, recall_at
from xpiler.retrieval.corpus import section_from_text
from xpiler.retrieval.index import render

ROOT = Path(__file__).resolve().parent.parent
MANUALS = ROOT / "manuals"
QUERIES = ROOT / "benchmarks" / "retrieval_queries.toml"


@pytest.fixture(scope="module")
def sections():
    return load_manuals(MANUALS, strict=True)


@pytest.fixture(scope="module")
def index(sections):
    return ManualIndex(sections)


@pytest.fixture(scope="module")
def queries():
    return load_queries(QUERIES)


# ----------------------------------------------------------------------------- tokenizer
@pytest.mark.parametrize("text, must", [
    ("__bang_add", ["bang_add", "bang", "add"]),
    ("_mm512_dpbusd_epi32", ["mm512_dpbusd_epi32", "mm512", "dpbusd", "epi32"]),
    ("threadIdx.x", ["threadidx", "thread", "idx", "x"]),
    ("cudaMemcpyHostToDevice", ["cudamemcpyhosttodevice", "cuda", "memcpy", "host", "device"]),
    ("GDRAM2NRAM", ["gdram2nram", "gdram", "nram"]),
    ("__builtin_amdgcn_mfma_f32_16x16x4f32", ["builtin_amdgcn_mfma_f32_16x16x4f32", "mfma", "f32", "16x16x4f32"]),
    ("wmma::mma_sync(acc, a, b, acc)", ["wmma", "mma_sync", "mma", "sync", "acc"]),
    ("HIP_DYNAMIC_SHARED", ["hip_dynamic_shared", "hip", "dynamic", "shared"]),
])
def test_tokenizer_splits_code_names(text, must):
    toks = tokenize(text)
    for t in must:
        assert t in toks, (t, toks)


def test_tokenizer_lowercases_drops_stopwords_and_plurals():
    toks = tokenize("The Barriers of all THREADS in a block")
    assert toks == ["barrier", "barriers", "thread", "threads", "block"]
    # a plain word and its plural meet; short words and -ss words are left alone
    assert tokenize("load") == ["load"] and "load" in tokenize("loads")
    assert tokenize("class") == ["class"] and tokenize("axis") == ["axis"]


def test_tokenizer_keeps_distinct_intrinsics_distinct():
    a, b = set(tokenize("_mm512_dpbusd_epi32")), set(tokenize("_mm512_dpbusds_epi32"))
    assert "dpbusd" in a and "dpbusd" not in b and "dpbusds" in b


# ----------------------------------------------------------------------------- front matter
GOOD = '''---
id: cuda.test.thing   # trailing comment
target: cuda
topic: warp-collectives
signature: "T f(int a, int b = 0); // has: colon and # hash"
passes: [tensorize, "binding"]
extra_key: 'it''s'
---
Body line one.
Body line two.
'''


def test_front_matter_parses_quoted_values_lists_and_comments():
    meta, body = parse_front_matter(GOOD)
    assert meta["id"] == "cuda.test.thing"
    assert meta["signature"] == "T f(int a, int b = 0); // has: colon and # hash"
    assert meta["passes"] == ["tensorize", "binding"]
    assert meta["extra_key"] == "it's"
    assert body == "Body line one.\nBody line two."
    s = section_from_text(GOOD, "x.md")
    assert s.passes == ("tensorize", "binding") and s.extra == {"extra_key": "it's"}


@pytest.mark.parametrize("mutate, msg", [
    (lambda t: t.replace("id: cuda.test.thing   # trailing comment\n", ""), "'id'"),
    (lambda t: t.replace("topic: warp-collectives\n", ""), "'topic'"),
    (lambda t: t.replace('signature: "T f(int a, int b = 0); // has: colon and # hash"', 'signature: ""'), "'signature'"),
    (lambda t: t.replace("target: cuda", "target: opencl"), "unknown target"),
    (lambda t: t.replace("id: cuda.test.thing", "id: hip.test.thing"), "must start with"),
    (lambda t: t.replace("Body line one.\nBody line two.\n", ""), "body is empty"),
    (lambda t: t.replace("passes: [tensorize, \"binding\"]", "passes: [tensorize"), "unterminated list"),
    (lambda t: t.replace("topic: warp-collectives", "topic: a\ntopic: b"), "duplicate key"),
    (lambda t: t[4:], "missing front matter"),
    (lambda t: t.replace("---\nBody", "Body"), "not closed"),
])
def test_front_matter_errors_are_reported(mutate, msg):
    with pytest.raises(ManualError, match=msg):
        section_from_text(mutate(GOOD), "bad.md")


def test_loader_rejects_duplicate_ids_and_wrong_folder(tmp_path):
    (tmp_path / "cuda").mkdir()
    (tmp_path / "cuda" / "a.md").write_text(GOOD)
    (tmp_path / "cuda" / "b.md").write_text(GOOD)
    with pytest.raises(ManualError, match="duplicate id"):
        load_manuals(tmp_path)
    assert [s.id for s in load_manuals(tmp_path, strict=False)] == ["cuda.test.thing"]
    (tmp_path / "hip").mkdir()
    (tmp_path / "hip" / "c.md").write_text(GOOD.replace("cuda.test.thing", "cuda.other"))
    with pytest.raises(ManualError, match="does not match folder"):
        load_manuals(tmp_path, targets=["hip"])


# ----------------------------------------------------------------------------- the manuals
def test_every_section_is_complete_and_ids_are_unique(sections):
    ids = [s.id for s in sections]
    assert len(ids) == len(set(ids))
    for s in sections:
        assert s.id and s.target in TARGETS and s.topic and s.signature and s.body, s.path
        assert Path(s.path).parent.name == s.target
        assert s.id.startswith(s.target + ".")
        for p in s.passes:
            assert p in PASSES, (s.id, p)


def test_section_counts(sections):
    counts = Counter(s.target for s in sections)
    for t in ("cuda", "hip", "c"):
        assert counts[t] >= 40, counts
    assert sum(counts.values()) >= 150, counts


@pytest.mark.parametrize("target", ["cuda", "hip", "c"])
def test_our_sections_are_short_and_file_names_follow_ids(sections, target):
    for s in (x for x in sections if x.target == target):
        assert 100 <= len(s.body) <= 1400, (s.id, len(s.body))
        assert Path(s.path).stem == s.id.replace(".", "_")


def test_required_topics_are_covered(sections):
    ids = {s.id for s in sections}
    required = [
        "cuda.index.builtins", "cuda.smem.static", "cuda.sync.syncthreads", "cuda.shfl.down_sync",
        "cuda.atomic.add", "cuda.wmma.mma_sync", "cuda.launch.limits", "cuda.half.type",
        "hip.wave.size", "hip.wave.wave32_rdna", "hip.lds.shared", "hip.mfma.f32_16x16x4f32",
        "hip.mfma.f32_16x16x16f16", "hip.host.malloc_memcpy", "hip.launch.ggl",
        "c.vnni.dpbusd", "c.vnni.dpbusds", "c.vnni.dpwssd", "c.vnni.dpwssds",
        "c.avx512.masked_load_store", "c.amx.tile_config", "c.openmp.parallel_for",
    ]
    assert not [r for r in required if r not in ids]


def test_mfma_layouts_match_the_emulator_contract(index):
    # the layouts in /tmp/briefs/simt_api.md, which the HIP emulator implements
    f32 = index.by_id["hip.mfma.f32_16x16x4f32"].body
    assert "a = A[i][g]" in f32 and "b = B[g][i]" in f32 and "D[4*g + e][i]" in f32
    f16 = index.by_id["hip.mfma.f32_16x16x16f16"].body
    assert "a[e] = A[i][4*g + e]" in f16 and "b[e] = B[4*g + e][i]" in f16


# ----------------------------------------------------------------------------- retrieval
def test_query_for_names_pass_target_words_and_apis():
    q = query_for("Loop Recovery", "bang", ["taskId", "__memcpy"])
    assert q.startswith("loop recovery")
    assert q.count("__memcpy") == 2 and "taskId" in q
    with pytest.raises(ValueError, match="unknown pass"):
        query_for("vectorise-everything", "c", [])


@pytest.mark.parametrize("pass_name, target, apis, first", [
    ("tensorize", "c", ["_mm512_dpbusd_epi32"], "c.vnni.dpbusd"),
    ("tensorize", "c", ["_mm512_dpbusds_epi32"], "c.vnni.dpbusds"),
    ("detensorize", "c", ["_mm512_dpwssd_epi32"], "c.vnni.dpwssd"),
    ("contraction", "cuda", ["__shfl_down_sync"], "cuda.shfl.down_sync"),
    ("contraction", "hip", ["__shfl_down"], "hip.shfl.down"),
    ("tensorize", "hip", ["__builtin_amdgcn_mfma_f32_16x16x4f32"], "hip.mfma.f32_16x16x4f32"),
    ("tensorize", "hip", ["__builtin_amdgcn_mfma_f32_16x16x16f16"], "hip.mfma.f32_16x16x16f16"),
    ("tensorize", "cuda", ["wmma::mma_sync"], "cuda.wmma.mma_sync"),
])
def test_exact_api_query_ranks_its_section_first(index, pass_name, target, apis, first):
    got = index.retrieve(query_for(pass_name, target, apis), target, k=3)
    assert got and got[0].id == first, [s.id for s in got]


def test_retrieve_is_filtered_by_target_and_deterministic(index):
    q = query_for("contraction", "hip", ["__shfl_down_sync", "atomicAdd"])
    for t in TARGETS:
        got = index.retrieve(q, t, k=5)
        assert all(s.target == t for s in got)
    assert [s.id for s in index.retrieve(q, "hip", 5)] == [s.id for s in index.retrieve(q, "hip", 5)]
    assert index.retrieve("", "cuda") == [] and index.retrieve("zzzunknownzzz", "cuda") == []
    with pytest.raises(ValueError):
        index.retrieve(q, "opencl")


def test_module_level_retrieve_uses_installed_manuals():
    got = retrieve(query_for("tensorize", "c", ["_mm512_dpbusd_epi32"]), "c", k=3)
    assert got and got[0].id == "c.vnni.dpbusd" and len(got) <= 3


# ----------------------------------------------------------------------------- benchmark
def test_query_set_is_large_and_spread(queries, index):
    assert len(queries) >= 40
    assert {q.target for q in queries} == set(TARGETS)
    assert {q.pass_name for q in queries} == set(PASSES)
    missing = sorted({e for q in queries for e in q.expected if e not in index.by_id})
    assert not missing, f"expected ids not in manuals/: {missing}"


def test_recall_at_3_on_query_set(index, queries):
    res = evaluate(index, queries)
    assert res["overall"]["recall@3"] >= 0.9, res["overall"]
    for t in TARGETS:
        assert res["per_target"][t]["recall@3"] >= 0.8, (t, res["per_target"][t])


def test_recall_metric_detects_wrong_answers(index, queries):
    # the same queries with their expected ids shuffled among each other must score badly
    ids = [q.expected for q in queries]
    random.Random(7).shuffle(ids)
    wrong = [Query(q.pass_name, q.target, q.apis, q.text, e) for q, e in zip(queries, ids)]
    assert evaluate(index, wrong)["overall"]["recall@3"] < 0.3
    assert recall_at(["a", "b", "c"], ("c",), 1) == 0.0 and recall_at(["a", "b", "c"], ("c",), 3) == 1.0
    assert recall_at(["a", "b", "c"], ("a", "x"), 3) == 0.5


# ----------------------------------------------------------------------------- docs
def test_docs_manuals_index_is_current(sections):
    doc = ROOT / "docs" / "manuals.md"
    assert doc.read_text(encoding="utf-8") == render(sections), \
        "docs/manuals.md is stale: run `python -m xpiler.retrieval.index > docs/manuals.md`"
