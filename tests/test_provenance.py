"""Provenance logs: header, flushed events, torn last line, secrets never written."""
import json
import os
import subprocess
import sys

from xpiler.provenance import ProvenanceLog, read_log, redact


def test_header_and_events_round_trip(tmp_path):
    p = tmp_path / "log.jsonl"
    with ProvenanceLog(p, {"target": "cuda", "seeds": [0, 1, 2]}) as log:
        log.event("parse", program_hash="abc")
        log.event("pass", name="split", params={"factor": 4}, applied=True, in_hash="abc", out_hash="def")
    header, events = read_log(p)
    assert header["type"] == "header" and header["schema"] == 2 and header["target"] == "cuda"
    assert header["version"] and "git" in header
    assert [e["type"] for e in events] == ["parse", "pass"]
    assert [e["seq"] for e in events] == [0, 1]


def test_events_survive_a_killed_writer(tmp_path):
    p = tmp_path / "log.jsonl"
    code = (f"from xpiler.provenance import ProvenanceLog\nimport os\n"
            f"log = ProvenanceLog({str(p)!r}, {{}})\n"
            f"log.event('parse', program_hash='a')\nlog.event('pass', name='x', applied=False)\n"
            f"log._f.write('{{\"type\": \"te')\nlog._f.flush()\nos._exit(9)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert r.returncode == 9
    header, events = read_log(p)
    assert [e["type"] for e in events] == ["parse", "pass"]  # torn line ignored, earlier events kept


def test_planted_api_key_never_written(tmp_path, monkeypatch):
    secret = "sk-test-THISISASECRETKEY1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    p = tmp_path / "log.jsonl"
    with ProvenanceLog(p, {"llm": "openai:model", "config": {"api_key": secret, "base_url": "http://127.0.0.1:1"}}) as log:
        log.event("llm_call", prompt=f"use key {secret}", response="ok",
                  headers={"Authorization": f"Bearer {secret}"}, tokens=12)
    text = p.read_text()
    assert secret not in text
    assert "THISISASECRET" not in text
    ev = json.loads(text.splitlines()[1])
    assert ev["tokens"] == 12  # token counts are not secrets


def test_redact_nested():
    obj = {"a": ["Bearer abc.def-123"], "password": "x", "n": 3, "hf": "hf_abcdefghijkl"}
    out = redact(obj, [])
    assert out == {"a": ["<redacted>"], "password": "<redacted>", "n": 3, "hf": "<redacted>"}
