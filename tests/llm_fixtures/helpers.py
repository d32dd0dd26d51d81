"""Shared pieces of the LLM tests: the relu program, a real test hook, a stand-in symbolic proposer."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from xpiler.proposers.protocol import Candidate, FunctionProposer, PassContext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RELU_DIR = ROOT / "examples" / "relu"
RELU_SRC = (RELU_DIR / "relu.c").read_text()


def fixture(name: str) -> str:
    return (HERE / name).read_text()


# a correct split by 8 written as the symbolic rewrite would (min() bound instead of a guard);
# it stands in for passes/split.py, which is another issue's work
SYMBOLIC_SPLIT = """void relu(const float* x, float* y, int n)
{
    for (int i0 = 0; i0 < n; i0 += 8) {
        int hi = i0 + 8 < n ? i0 + 8 : n;
        for (int i = i0; i < hi; i++) {
            float v = x[i];
            y[i] = v > 0.0f ? v : 0.0f;
        }
    }
}
"""


def symbolic_proposer(calls: list | None = None) -> FunctionProposer:
    def fn(pass_name, program, target, ctx):
        if calls is not None:
            calls.append(pass_name)
        return [Candidate(SYMBOLIC_SPLIT, "symbolic", pass_name, {"loop": "i", "factor": 8})]
    return FunctionProposer(fn)


def make_check(tmp_path: Path, seen: list | None = None):
    """A test hook that really compiles and runs a candidate against the numpy reference
    (xpiler.test: gcc, instances base/odd/tiny, one seed); returns None or the failure text."""
    import xpiler
    counter = [0]
    Path(tmp_path).mkdir(parents=True, exist_ok=True)

    def check(cand: Candidate):
        counter[0] += 1
        d = Path(tempfile.mkdtemp(prefix=f"cand{counter[0]}-", dir=tmp_path))
        (d / "relu.c").write_text(cand.program_text)
        shutil.copy(RELU_DIR / "relu.c.toml", d / "relu.c.toml")
        shutil.copy(RELU_DIR / "ref.py", d / "ref.py")
        try:
            v = xpiler.test(d / "relu.c", spec=d / "relu.c.toml", seeds=[0], instances=["base", "odd", "tiny"],
                            sanitize=False, timeout=60)
        except Exception as e:  # a build error surfaces as an XPError
            msg = f"{type(e).__name__}: {e}"
            if seen is not None:
                seen.append(msg)
            return msg
        msg = None if v.verified else (v.summary() + "\n" + "\n".join(
            (f.to_json().get("message") or str(f.to_json())) for f in v.failures[:3]))
        if seen is not None:
            seen.append(msg)
        return msg
    return check


def relu_context(**kw) -> PassContext:
    from xpiler.spec import load_spec
    base = dict(entry="relu", source_dialect="c", spec=load_spec(RELU_DIR / "relu.c.toml"),
                params={"loop": "i", "factor": 16}, excerpts=[("c/loops/split", "A split keeps every iteration.")])
    base.update(kw)
    return PassContext(**base)
