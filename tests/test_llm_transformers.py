"""The transformers backend with a tiny randomly-initialised model built here (no download).

Its answers are noise: they must be rejected as garbage, logged, and the policy must fall
back to the symbolic rewrite, without a crash. Skipped cleanly when torch/transformers are absent.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

sys.path.insert(0, str(Path(__file__).resolve().parent / "llm_fixtures"))
from helpers import RELU_SRC, relu_context, symbolic_proposer  # noqa: E402

from xpiler.llm import Budget, BackendUnavailable, make_backend  # noqa: E402
from xpiler.proposers.llm_proposer import LLMProposer  # noqa: E402
from xpiler.proposers.policy import PolicyProposer  # noqa: E402


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    """A byte-level BPE tokenizer trained on a few lines and a 1-layer GPT-2 with 32-wide embeddings."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|eos|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([RELU_SRC, "for (int i = 0; i < n; i++) { y[i] = x[i]; }", "split the loop"], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|eos|>", pad_token="<|eos|>")
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=fast.vocab_size, n_positions=512, n_embd=32, n_layer=1, n_head=2,
                     bos_token_id=fast.eos_token_id, eos_token_id=fast.eos_token_id)
    model = GPT2LMHeadModel(cfg)
    d = tmp_path_factory.mktemp("tiny-gpt2")
    model.save_pretrained(d)
    fast.save_pretrained(d)
    return d


def test_tiny_random_model_garbage_is_rejected_and_falls_back(tiny_model_dir):
    events = []
    budget = Budget(max_calls=10, max_tokens=None)
    b = make_backend(f"transformers:{tiny_model_dir}", budget=budget, max_input_tokens=400)
    assert b.name == "transformers" and b.model == str(tiny_model_dir)
    prop = LLMProposer(b, log=events.append, retrieve=False, max_tokens=24)
    pol = PolicyProposer("llm", symbolic=symbolic_proposer(), llm=prop, log=events.append)
    cands = pol.propose("split", RELU_SRC, "c", relu_context())
    assert [c.proposer for c in cands] == ["symbolic"]              # noise never becomes a candidate
    calls = [e for e in events if e["type"] == "llm_call"]
    assert len(calls) == 2                                          # first answer + one retry with feedback
    for ev in calls:
        assert ev["backend"] == "transformers" and ev["verdict"].startswith("rejected_")
        assert ev["tokens"]["in"] > 0 and 0 < ev["tokens"]["out"] <= 24 and isinstance(ev["response"], str)
    assert budget.calls == 2


def test_greedy_decoding_is_deterministic(tiny_model_dir):
    b = make_backend(f"transformers:{tiny_model_dir}", max_input_tokens=400)
    msgs = [{"role": "user", "content": "split the loop"}]
    a1 = b.complete(msgs, max_tokens=12, seed=1).text
    a2 = b.complete(msgs, max_tokens=12, seed=2).text
    assert a1 == a2 and len(a1) > 0


def test_missing_model_directory_is_a_clear_error(tmp_path):
    with pytest.raises(BackendUnavailable, match="not found"):
        make_backend(f"transformers:{tmp_path / 'no-model'}")
