"""Split operand indices of the wide register-blocked form (passes/patterns/simt_kparts.py): a
convolution's implicit-GEMM loaders do no division in their k part (the weight index is proven
``row + k``, the input index ``row + table[k]``), the K past the table keeps the old index, gemm's
loaders are unchanged, and a non-separable index is refused (old loader)."""
import re

import pytest

from xpiler.ir import nodes as N
from xpiler.passes import cache
from xpiler.passes.patterns import simt_kparts as KP
from xpiler.passes.patterns import simt_tile as ST
from xpiler.printers import print_program

from _simt_tile_util import bound, verify


def wide_default(op):
    src, entry, p = bound(op, "cuda")
    q, launch = cache.apply(p, entry=entry, target="cuda", **cache.WIDE_DEFAULT)
    # the launch speaks of the kernel's parameters; the spec names the stride S
    launch = dict(launch, grid=[g.replace("stride", "S") if isinstance(g, str) else g for g in launch["grid"]])
    return src, entry, p, q, launch


def loads(text, buf):
    """The index texts of every ``buf[...]`` read (balanced brackets)."""
    out, i = [], 0
    while True:
        i = text.find(buf + "[", i)
        if i < 0:
            return out
        j, depth = i + len(buf) + 1, 1
        while depth:
            depth += {"[": 1, "]": -1}.get(text[j], 0)
            j += 1
        out.append(text[i + len(buf) + 1:j - 1])
        i = j


def test_conv2d_nchw_loaders_have_no_division_in_k():
    src, entry, p, q, launch = wide_default("conv2d_nchw")
    text = print_program(q, "cuda")
    w = loads(text, "weight")
    assert w and all(re.fullmatch(r"xp_ra\[xp_u\] \+ \(.*xp_c\)", x) for x in w), w
    inp = loads(text, "input")
    fast = [x for x in inp if x.startswith("xp_rb + xp_ktB[")]
    assert len(fast) == 2                              # the first slice and the prefetch
    assert all("/" not in x and "%" not in x for x in fast)
    assert "__shared__ int xp_ktB[4608];" in text and "__syncthreads_or(xp_kbigB)" in text


@pytest.mark.parametrize("op,kinds", [("conv2d_nchw", {"A": "unit", "B": "table"}),
                                      ("conv2d_nhwc", {"A": "table", "B": "unit"}),
                                      ("conv1d", {"A": "unit", "B": "table"})])
def test_conv_splits_verify_including_the_fallback(op, kinds):
    """Every spec shape (stride 2, odd sizes) and the derived instances, K one past the table
    among them (the old index), on the SIMT emulator; nhwc has the table on A."""
    src, entry, p, q, launch = wide_default(op)
    ct = ST.analyse(p, p.func(entry), wider=True)
    assert {w: s.kind for w, s in KP.splits(ct, 16, 64, 256).items()} == kinds
    v = verify(q, src, "cuda", launch)
    assert v.verified, v.failures[:1]
    tab = "xp_tabA" if kinds["A"] == "table" else "xp_tabB"
    assert any(tab in " ".join(d["reasons"]) for d in v.derived), v.derived   # the old-index run
    assert not any("left out" in str(n.to_json()) for n in v.notes)


def test_a_wrong_table_is_caught():
    """The test can fail: a table entry off by one element is not verified."""
    src, entry, p, q, launch = wide_default("conv2d_nchw")
    text = print_program(q, "cuda").replace("xp_ktB[xp_t] = (int)xp_v;", "xp_ktB[xp_t] = (int)xp_v + (xp_t == 5);")
    from xpiler.frontend import parse_text
    bad = parse_text(text, "cuda", "bad.cu")
    assert not verify(bad, src, "cuda", launch, instances=["base"]).verified


def test_gemm_loaders_unchanged():
    """gemm's index has no division in k: no split, the loads are the plain ones."""
    src, entry, p, q, launch = wide_default("gemm")
    ct = ST.analyse(p, p.func(entry), wider=True)
    assert KP.split(ct, "A") is None and KP.split(ct, "B") is None
    text = print_program(q, "cuda")
    assert "xp_kt" not in text and "xp_ra" not in text and "xp_rb" not in text


def test_a_non_separable_index_keeps_the_old_loader():
    """B[(k / 2) * j + k % 2] mixes k and j through a product: not separable, refused."""
    src, entry, p = bound("conv2d_nchw", "cuda")
    ct = ST.analyse(p, p.func(entry), wider=True)
    k, j = N.Var("xp_k"), N.Var("xp_j")
    mixed = N.BinOp("+", N.BinOp("*", N.BinOp("/", k, N.Const(2, "int32", "2")), j),
                    N.BinOp("%", k, N.Const(2, "int32", "2")))
    from dataclasses import replace
    assert KP.split(replace(ct, b_idx=mixed), "B") is None
    assert KP.split(ct, "B") == KP.Split("B", "table", "xp_j")
    assert KP.split(ct, "A") == KP.Split("A", "unit", "xp_i")


def test_hip_keeps_the_old_loaders():
    """On hip the split is not applied (it cost VGPRs and scratch on gfx90a): no table, no row parts."""
    src, entry, p = bound("conv2d_nchw", "hip")
    q, _ = cache.apply(p, entry=entry, target="hip", **cache.WIDE_DEFAULT)
    text = print_program(q, "hip")
    assert "xp_kt" not in text and "xp_ra" not in text and "xp_rb" not in text
    assert any("/" in x for x in loads(text, "input"))
