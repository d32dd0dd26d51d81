"""The example suite: every kernel verifies on its best substrate here; references self-check."""
import importlib.util

import pytest

from conftest import EXAMPLES
from xpiler.examples_index import discover

ALL = discover(EXAMPLES)


def test_suite_covers_all_operators():
    ops = {e.op for e in ALL}
    expected = {"gemm", "gemv", "bmm", "conv1d", "conv2d_nhwc", "conv2d_nchw", "depthwise_conv2d", "relu", "softmax",
                "gelu", "sigmoid", "add", "sign", "maxpool2d", "avgpool2d", "minpool2d", "sumpool2d", "layernorm",
                "rmsnorm", "self_attention", "deformable_attention"}
    assert expected <= ops, sorted(expected - ops)


def test_every_spec_has_three_instances_one_odd():
    from xpiler.spec import load_spec
    for e in ALL:
        insts = load_spec(e.spec).instances()
        assert len(insts) >= 3, e.spec
        assert any(i.name == "odd" for i in insts), e.spec


@pytest.mark.parametrize("ex", ALL, ids=[f"{e.dialect}-{e.source.stem}" for e in ALL])
def test_example_verifies(ex):
    from xpiler.api import test
    v = test(ex.source, ex.spec, seeds=(0, 1, 2), timeout=300)
    assert v.verified, [f.code + " " + f.message + "\n" + f.log[-800:] for f in v.failures[:3]]


def _selfchecks():
    out = []
    for ref in sorted(EXAMPLES.glob("*/ref.py")):
        spec = importlib.util.spec_from_file_location(f"ref_{ref.parent.name}", ref)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name in dir(mod):
            if name.endswith("_selfcheck"):
                out.append(pytest.param(getattr(mod, name), id=f"{ref.parent.name}.{name}"))
    return out


@pytest.mark.parametrize("check", _selfchecks())
def test_reference_selfcheck(check):
    check()


def test_examples_readme_is_current():
    from xpiler.examples_index import readme_markdown
    path = EXAMPLES / "README.md"
    assert path.is_file() and path.read_text() == readme_markdown(EXAMPLES), \
        "examples/README.md is stale: python -m xpiler.examples_index > examples/README.md"
