"""--proposer policy, replay from a provenance log, backend selection, events and redaction (offline)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "llm_fixtures"))
from fake_openai_server import FakeOpenAI, reply  # noqa: E402
from helpers import RELU_SRC, SYMBOLIC_SPLIT, fixture, make_check, relu_context, symbolic_proposer  # noqa: E402

from xpiler.llm import (BackendUnavailable, Budget, Completion, ReplayMiss, llm_event, make_backend,  # noqa: E402
                        parse_llm_option, prompt_sha256, redact, register_secret)
from xpiler.llm.replay_backend import ReplayBackend  # noqa: E402
from xpiler.proposers.llm_proposer import LLMProposer  # noqa: E402
from xpiler.proposers.policy import PolicyProposer, make_policy  # noqa: E402
from xpiler.proposers.protocol import Candidate, PassContext, Proposer  # noqa: E402


class Scripted:
    """An in-process backend answering from a list (the protocol, without HTTP)."""
    name = "scripted"
    model = "script-1"

    def __init__(self, answers):
        self.answers = list(answers)
        self.seen = []

    def complete(self, messages, *, max_tokens=2048, seed=0):
        self.seen.append((messages, max_tokens, seed))
        if not self.answers:
            raise AssertionError("unexpected LLM call")
        return Completion(self.answers.pop(0), tokens_in=10, tokens_out=5, latency_s=0.001)


CORRECT = fixture("relu_split_correct.md")
WRONG = fixture("relu_split_wrong.md")


def test_symbolic_mode_never_calls_the_llm():
    b = Scripted([])
    pol = PolicyProposer("symbolic", symbolic=symbolic_proposer(), llm=LLMProposer(b, retrieve=False))
    cands = pol.propose("split", RELU_SRC, "c", relu_context())
    assert [c.proposer for c in cands] == ["symbolic"] and b.seen == []
    assert isinstance(pol, Proposer) and isinstance(symbolic_proposer(), Proposer)


def test_both_mode_offers_both_once():
    pol = PolicyProposer("both", symbolic=symbolic_proposer(), llm=LLMProposer(Scripted([CORRECT]), retrieve=False))
    cands = pol.propose("split", RELU_SRC, "c", relu_context())
    assert [c.proposer for c in cands] == ["symbolic", "llm"]
    # an LLM answer identical to the symbolic one (up to whitespace) is offered once
    same = "```c\n" + SYMBOLIC_SPLIT.replace("    ", "\t") + "```"
    pol = PolicyProposer("both", symbolic=symbolic_proposer(), llm=LLMProposer(Scripted([same]), retrieve=False))
    assert [c.proposer for c in pol.propose("split", RELU_SRC, "c", relu_context())] == ["symbolic"]


def test_llm_mode_without_test_hook_orders_llm_then_symbolic_fallback():
    pol = PolicyProposer("llm", symbolic=symbolic_proposer(), llm=LLMProposer(Scripted([WRONG]), retrieve=False))
    cands = pol.propose("split", RELU_SRC, "c", relu_context())
    assert [c.proposer for c in cands] == ["llm", "symbolic"]
    assert cands[0].meta["verdict"] == "candidate" and cands[1].meta["fallback"] is True


def test_llm_mode_passing_llm_candidate_skips_symbolic(tmp_path):
    calls = []
    pol = PolicyProposer("llm", symbolic=symbolic_proposer(calls), llm=LLMProposer(Scripted([CORRECT]), retrieve=False))
    cands = pol.propose("split", RELU_SRC, "c", relu_context(check=make_check(tmp_path)))
    assert [c.proposer for c in cands] == ["llm"] and calls == []


def test_keep_failed_returns_failing_candidates_for_repair_but_policy_does_not(tmp_path):
    prop = LLMProposer(Scripted([WRONG, WRONG]), retrieve=False, keep_failed=True)
    cands = prop.propose("split", RELU_SRC, "c", relu_context(check=make_check(tmp_path)))
    assert len(cands) == 2 and all(c.meta["verdict"] == "failed_test" and "odd" in c.meta["feedback"] for c in cands)
    pol = PolicyProposer("llm", symbolic=symbolic_proposer(),
                         llm=LLMProposer(Scripted([WRONG, WRONG]), retrieve=False, keep_failed=True))
    assert [c.proposer for c in pol.propose("split", RELU_SRC, "c", relu_context(check=make_check(tmp_path)))] \
        == ["symbolic"]


def test_policy_configuration_errors():
    with pytest.raises(ValueError):
        PolicyProposer("llm", symbolic=symbolic_proposer())
    with pytest.raises(ValueError):
        PolicyProposer("fastest", symbolic=symbolic_proposer())
    with pytest.raises(ValueError):
        make_policy("both", symbolic=symbolic_proposer())
    assert make_policy("symbolic", symbolic=symbolic_proposer()).mode == "symbolic"


def test_context_from_mapping_and_spec_entry():
    ctx = PassContext.from_any({"spec": relu_context().spec, "params": {"factor": 4}, "unknown_key": 1})
    assert ctx.entry == "relu" and ctx.params == {"factor": 4}
    with pytest.raises(TypeError):
        PassContext.from_any(42)


def test_retrieval_hook_feeds_excerpts_and_section_ids():
    queries, events = [], []

    def retrieve(query, target, k):
        queries.append((query, target, k))
        return [{"id": "c/openmp/parallel-for", "text": "Distributes iterations over threads."},
                ("c/loops/tail", "Handle the remainder.")]

    b = Scripted([CORRECT])
    prop = LLMProposer(b, retrieve=retrieve, k=3, log=events.append)
    prop.propose("split", RELU_SRC, "c", relu_context(excerpts=None))
    assert queries and queries[0][1:] == ("c", 3) and "split" in queries[0][0]
    assert "[c/openmp/parallel-for]\nDistributes iterations" in b.seen[0][0][1]["content"]
    assert events[0]["section_ids"] == ["c/openmp/parallel-for", "c/loops/tail"]

    def broken(query, target, k):
        raise RuntimeError("index missing")
    events.clear()
    LLMProposer(Scripted([CORRECT]), retrieve=broken, log=events.append).propose("split", RELU_SRC, "c",
                                                                                  relu_context(excerpts=None))
    assert events[0]["verdict"] == "candidate" and "retrieval failed" in events[0]["detail"]


# ---- replay ---------------------------------------------------------------------------------------
def _write_log(path: Path, events: list[dict]):
    with open(path, "w") as f:
        f.write(json.dumps({"type": "header", "tool": "xpiler"}) + "\n")
        f.write(json.dumps({"type": "parse", "seq": 0}) + "\n")
        for e in events:
            f.write(json.dumps(e) + "\n")
        f.write('{"type": "llm_call", "torn')  # a writer killed mid-line


def test_record_over_http_then_replay_offline(tmp_path):
    """A run against the HTTP server is logged; replaying the log gives the same candidates and
    the same event stream (verdicts, hashes), with no server at all."""
    rec = []
    with FakeOpenAI([reply(WRONG), reply(CORRECT)]) as srv:
        b = make_backend("openai:fake-coder-1", base_url=srv.base_url, api_key="sk-recordkey-123456789")
        live = LLMProposer(b, log=rec.append, retrieve=False).propose(
            "split", RELU_SRC, "c", relu_context(check=make_check(tmp_path / "a")))
    log = tmp_path / "provenance.jsonl"
    _write_log(log, rec)
    rep_events = []
    rb = make_backend("replay", log_path=str(log))
    assert isinstance(rb, ReplayBackend) and rb.model == "fake-coder-1" and rb.recorded == 2
    again = LLMProposer(rb, log=rep_events.append, retrieve=False).propose(
        "split", RELU_SRC, "c", relu_context(check=make_check(tmp_path / "b")))
    assert [c.program_text for c in again] == [c.program_text for c in live] and again[0].meta["attempt"] == 1
    assert [(e["prompt_sha256"], e["verdict"]) for e in rep_events] == [(e["prompt_sha256"], e["verdict"]) for e in rec]
    # a prompt the log never saw is a miss (logged), never an invented answer
    miss = []
    rb2 = ReplayBackend(log)
    out = LLMProposer(rb2, log=miss.append, retrieve=False).propose("fuse", RELU_SRC, "c", relu_context())
    assert out == [] and miss[0]["verdict"] == "error_replay_miss"
    with pytest.raises(ReplayMiss):
        rb2.complete([{"role": "user", "content": "never asked"}])


def test_replay_reproduces_recorded_errors_and_order():
    msgs = [{"role": "user", "content": "q"}]
    h = prompt_sha256(msgs)
    evs = [{"type": "llm_call", "prompt_sha256": h, "response": "first", "tokens": {"in": 3, "out": 1}},
           {"type": "llm_call", "prompt_sha256": h, "response": None, "verdict": "error_timeout", "detail": "slow"},
           {"type": "llm_call", "prompt_sha256": h, "response": "third"}]
    rb = ReplayBackend(evs)
    first = rb.complete(msgs)
    assert first.text == "first" and first.tokens_in == 3 and first.meta["replayed"] is True
    from xpiler.llm import BackendTimeout
    with pytest.raises(BackendTimeout):
        rb.complete(msgs)
    assert rb.complete(msgs).text == "third"
    with pytest.raises(ReplayMiss):
        rb.complete(msgs)


# ---- backend selection ----------------------------------------------------------------------------
def test_parse_llm_option():
    assert parse_llm_option("openai:gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert parse_llm_option("llamacpp:/m/a:b.gguf") == ("llamacpp", "/m/a:b.gguf")
    assert parse_llm_option("replay") == ("replay", "")
    for bad in ("", "openai", "claude:x", "transformers:"):
        with pytest.raises(ValueError):
            parse_llm_option(bad)


def test_missing_backends_fail_clearly(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(BackendUnavailable, match="OPENAI_API_KEY"):
        make_backend("openai:gpt-x")
    with pytest.raises(BackendUnavailable, match="replay"):
        make_backend("replay")
    with pytest.raises(BackendUnavailable, match="not found"):
        make_backend(f"replay:{tmp_path / 'none.jsonl'}")
    try:
        import llama_cpp  # noqa: F401
        has_llama = True
    except ImportError:
        has_llama = False
    if not has_llama:
        with pytest.raises(BackendUnavailable, match="llama-cpp-python"):
            make_backend(f"llamacpp:{tmp_path / 'm.gguf'}")
    else:
        with pytest.raises(BackendUnavailable, match="not found"):
            make_backend(f"llamacpp:{tmp_path / 'm.gguf'}")


def test_llamacpp_backend_with_an_injected_model():
    from xpiler.llm.llamacpp_backend import LlamaCppBackend

    class FakeLlama:
        def __init__(self):
            self.kw = None

        def create_chat_completion(self, **kw):
            self.kw = kw
            return {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 1}}

    fl = FakeLlama()
    budget = Budget(max_calls=5, max_tokens=100)
    c = LlamaCppBackend("m.gguf", llama=fl, budget=budget).complete([{"role": "user", "content": "x"}], max_tokens=50, seed=3)
    assert c.text == "hi" and (c.tokens_in, c.tokens_out) == (7, 1)
    assert fl.kw["temperature"] == 0.0 and fl.kw["seed"] == 3 and fl.kw["max_tokens"] == 50 and budget.tokens == 8


# ---- events and secrets ---------------------------------------------------------------------------
def test_llm_event_fields():
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    ev = llm_event(backend="openai", model="m", messages=msgs, response="r", tokens_in=3, tokens_out=4,
                   latency_s=0.25, verdict="candidate", section_ids=["cuda/wmma/mma_sync"], pass_name="tensorize")
    for k in ("type", "backend", "model", "prompt", "prompt_sha256", "section_ids", "response", "tokens",
              "latency_s", "verdict"):
        assert k in ev
    assert ev["type"] == "llm_call" and ev["prompt_sha256"] == prompt_sha256(msgs) and ev["tokens"] == {"in": 3, "out": 4}
    assert json.loads(json.dumps(ev)) == ev


def test_redact_removes_keys_headers_and_registered_values(monkeypatch):
    register_secret("zz-registered-secret-value")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-from-environment-42")
    obj = {"headers": {"Authorization": "Bearer abc.def-ghi", "X-Api-Key": "k1k1k1k1"},
           "api_key": "whatever", "tokens": {"in": 1, "out": 2}, "max_tokens": 9,
           "text": ["sk-abcdefghijklmnop", "hf_ABCDEFGHIJKLMNOP", "see zz-registered-secret-value",
                    "env tok-from-environment-42", "Authorization: Bearer qwertyuiop"], "n": 3}
    r = redact(obj)
    s = json.dumps(r)
    for secret in ("abc.def-ghi", "k1k1k1k1", "whatever", "sk-abcdefghijklmnop", "hf_ABCDEFGHIJKLMNOP",
                   "zz-registered-secret-value", "tok-from-environment-42", "qwertyuiop"):
        assert secret not in s
    assert r["tokens"] == {"in": 1, "out": 2} and r["max_tokens"] == 9 and r["n"] == 3
    assert obj["api_key"] == "whatever"  # a copy; the input is untouched


def test_events_through_the_provenance_writer_replay(tmp_path):
    """The driver's sink is ``lambda ev: plog.event(**ev)``; what it writes replays, secret-free."""
    prov = pytest.importorskip("xpiler.provenance")
    path = tmp_path / "provenance.jsonl"
    key = "sk-provenance-test-key-99887766"
    with prov.ProvenanceLog(path, {"llm": "openai:fake-coder-1"}) as plog:
        with FakeOpenAI([reply("noise, no code"), reply(CORRECT)]) as srv:
            b = make_backend("openai:fake-coder-1", base_url=srv.base_url, api_key=key)
            live = LLMProposer(b, log=lambda ev: plog.event(**ev), retrieve=False).propose(
                "split", RELU_SRC, "c", relu_context())
    text = path.read_text()
    assert key not in text and text.count('"llm_call"') == 2
    again = LLMProposer(make_backend(f"replay:{path}"), retrieve=False).propose("split", RELU_SRC, "c", relu_context())
    assert [c.program_text for c in again] == [c.program_text for c in live] and len(live) == 1


def test_unexpected_backend_exception_is_a_logged_failure_not_a_crash():
    class Exploding:
        name, model = "exploding", "x"

        def complete(self, messages, *, max_tokens=2048, seed=0):
            raise RuntimeError("CUDA out of memory (simulated)")

    events = []
    pol = PolicyProposer("llm", symbolic=symbolic_proposer(), llm=LLMProposer(Exploding(), retrieve=False,
                                                                              log=events.append))
    assert [c.proposer for c in pol.propose("split", RELU_SRC, "c", relu_context())] == ["symbolic"]
    assert events[0]["verdict"] == "error" and "out of memory" in events[0]["detail"]


def test_default_retrieval_uses_the_bm25_manuals_when_installed():
    retrieval = pytest.importorskip("xpiler.retrieval")
    if not callable(getattr(retrieval, "retrieve", None)):
        pytest.skip("xpiler.retrieval has no retrieve()")
    events = []
    b = Scripted([CORRECT])
    LLMProposer(b, log=events.append, k=3).propose("split", RELU_SRC, "c", relu_context(excerpts=None))
    ids = events[0]["section_ids"]
    assert 1 <= len(ids) <= 3
    prompt = b.seen[0][0][1]["content"]
    assert all(f"[{i}]" in prompt for i in ids) and "(no manual excerpts retrieved)" not in prompt
