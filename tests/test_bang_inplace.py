"""In-place BANG calls (dst overlapping a source) in detensorize and the emulator.

The emulator (runtime/bang/xp_bang.h) reads every operand of a __bang_* op before it writes the
destination; detensorize's loops must compute the same: elementwise ops and pools stream when
dst IS the source (each output only reads inputs at or after its own index), conv / mlp /
matmul / transpose go through an NRAM temporary, a destination at another offset of the same
buffer is refused (XP4001)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import detensorize
from xpiler.passes.base import PassError
from xpiler.printers import print_program
from xpiler.spec import load_spec, parse_spec, spec_to_toml
from xpiler.verify.tester import compare_kernels

ROOT = Path(__file__).resolve().parent.parent
WILD = ROOT / "examples" / "wild"


def _lower(rel: str):
    src = WILD / rel
    spec = load_spec(str(src) + ".toml")
    prog = parse_file(src, "bang")
    return src, spec, detensorize.apply(prog, entry=spec.entry, target="cuda")


def _temps(prog):
    return [d for d in walk(prog) if isinstance(d, N.Decl) and d.scope == "nram" and d.name.startswith("xpd_t")]


def _bang_calls(prog):
    return [n for n in walk(prog) if isinstance(n, (N.Call, N.Intrinsic))
            and str(getattr(n, "func", getattr(n, "name", ""))).startswith("__bang_")]


@pytest.mark.parametrize("rel,temps", [("add/add_inplace.mlu", 0), ("avgpool2d/avgpool_inplace.mlu", 0),
                                       ("mlp/mlp_inplace.mlu", 1), ("conv2d_nhwc/conv_inplace.mlu", 1),
                                       ("sumpool2d/rowsum_onechannel.mlu", 0)])
def test_inplace_calls_are_lowered(rel, temps):
    _, _, out = _lower(rel)
    assert not _bang_calls(out)
    assert len(_temps(out)) == temps


def _verify_lowered(rel: str):
    src, spec, out = _lower(rel)
    work = Path(tempfile.mkdtemp(prefix="xp-inplace-"))
    cand = work / src.name
    cand.write_text(print_program(out))
    cspec = parse_spec(spec.text, None)
    f, fn = cspec.reference.split(":")
    cspec.reference = f"{(src.parent / f).resolve()}:{fn}"
    cspec.path = Path(str(cand) + ".toml")
    cspec.path.write_text(spec_to_toml(cspec))
    return compare_kernels(cand, cspec, against=(src, spec), seeds=(0,), jobs=1)


@pytest.mark.parametrize("rel", ["mlp/mlp_inplace.mlu", "avgpool2d/avgpool_inplace.mlu"])
def test_lowered_inplace_kernel_matches_the_emulator(rel):
    v = _verify_lowered(rel)
    assert v.verified, [f.message for f in v.failures]


def test_shifted_overlap_is_refused():
    src = ("#include <bang.h>\n__nram__ float a[256];\n__nram__ float b[256];\n"
           "__mlu_global__ void k(float *x) {\n"
           "    __bang_add(a + 32, a, b, 64);\n"
           "}\n")
    prog = parse_text(src, "bang", "k.mlu")
    with pytest.raises(PassError) as e:
        detensorize.apply(prog, entry="k", target="cuda")
    assert e.value.code == "XP4001" and e.value.line == 5
    assert "different offset" in e.value.why


def test_exact_alias_elementwise_streams():
    src = ("#include <bang.h>\n__nram__ float a[256];\n__nram__ float b[256];\n"
           "__mlu_global__ void k(float *x) {\n"
           "    __bang_add(a, a, b, 64);\n    __bang_sigmoid(b, b, 64);\n    __bang_ge(a, a, b, 64);\n"
           "}\n")
    out = detensorize.apply(parse_text(src, "bang", "k.mlu"), entry="k", target="cuda")
    assert not _bang_calls(out) and not _temps(out)
