"""Host launchers migrated through the mapping table (issue 5 item 3), verified by running
them in the host-launcher test mode."""
from __future__ import annotations

from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.mappings import host_api as H
from xpiler.migration.driver import _launch_to_params
from xpiler.migration.host import (attach_host, instantiate, kind_of, match_call, migrate_host, migrate_host_ex,
                                 template, test_host_launcher)
from xpiler.printers import print_program
from xpiler.spec import DIALECT_EXT, load_spec

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
DIALECTS = ("cuda", "hip", "bang", "c")


# ------------------------------------------------------------------------------ table rows
@pytest.mark.parametrize("row", H.TABLE, ids=lambda r: r.concept)
def test_every_row_renders_in_every_dialect(row):
    for d in DIALECTS:
        if row.forms.get(d) is None:
            assert row.status_for(d) == "unsupported"
            with pytest.raises(KeyError):
                H.render(row, d)
            continue
        text = H.render(row, d, **{k: f"OP_{k}" for k in row.operands})
        assert "$" not in text
        if row.status_for(d) == "supported":       # a partial form may drop operands (a no-op on the CPU)
            for k in row.operands:
                assert f"OP_{k}" in text, (row.concept, d)
        if kind_of(row) in ("call", "value"):
            assert template(row.concept, d) is not None, f"{row.concept}: {d} form does not parse"


def _call_rows():
    return [r for r in H.TABLE if kind_of(r) == "call"]


@pytest.mark.parametrize("row", _call_rows(), ids=lambda r: r.concept)
def test_rows_are_recognised_and_translated(row):
    """A call written in one dialect's form is matched back to ITS row (e.g. the copy
    direction decides between the three copy rows) and instantiated in every other."""
    for src in ("cuda", "hip", "bang"):
        t = template(row.concept, src)
        if t is None:
            continue
        ops = {k: N.Var(f"v_{k}") for k in row.operands}
        call = instantiate(row, src, ops)
        m = match_call(call, src)
        assert m is not None and m[0].concept == row.concept, (src, row.concept, m and m[0].concept)
        assert {k: v for k, v in m[1].items()} == ops
        for dst in DIALECTS:
            if row.forms.get(dst) is None:
                continue
            out = instantiate(row, dst, m[1])
            names = {n.name for n in walk(out) if isinstance(n, N.Var)}
            if row.status_for(dst) == "supported":
                assert {f"v_{k}" for k in row.operands} <= names


def _host_prog(body: str, dialect="cuda"):
    text = ("__global__ void k(float* y, int n) { }\n"
            "void k_host(float* y, int n) {\n" + body + "\n}\n")
    return parse_text(text, dialect, "t.cu")


def test_unsupported_row_is_a_comment_and_XP4101():
    body = ("    cudaEvent_t e;\n"
            "    cudaEventCreate(&e);\n"
            "    k<<<1, 32>>>(y, n);\n")
    funcs, diags = migrate_host_ex(_host_prog(body), "c", "k", {}, ["y", "n"])
    assert [d.code for d in diags] == ["XP4101", "XP4101"]
    assert {d.line for d in diags} == {3, 4}
    assert all(d.file == "t.cu" for d in diags)
    text = print_program(N.Program("c", tuple(funcs), "x.c"), "c")
    assert "XP4101" in text and "cudaEventCreate" in text
    assert "k(y, n);" in text


def test_unknown_api_is_XP4101():
    body = "    cudaFrobnicate(y);\n    k<<<1, 32>>>(y, n);\n"
    out: list = []
    funcs = migrate_host(_host_prog(body), "hip", "k", {"grid": [1, 1, 1], "block": [64, 1, 1]}, ["y", "n"],
                         diagnostics=out)
    assert [d.code for d in out] == ["XP4101"] and out[0].line == 3
    text = print_program(N.Program("hip", tuple(funcs), "x.hip"), "hip")
    assert "hipLaunchKernelGGL(k, dim3(1, 1, 1), dim3(64, 1, 1), 0, 0, y, n);" in text


def test_launch_config_substitutes_call_site_arguments():
    body = ("    float* d; cudaMalloc((void**)&d, n * 4);\n"
            "    dim3 grid((n + 127) / 128); dim3 block(128);\n"
            "    k<<<grid, block>>>(d, n * 2);\n"
            "    cudaFree(d);\n")
    funcs = migrate_host(_host_prog(body), "cuda", "k", {"grid": ["(n + 255) / 256", 1, 1], "block": [256, 1, 1]},
                         ["y", "n"])
    text = print_program(N.Program("cuda", tuple(funcs), "x.cu"), "cuda")
    assert "k<<<dim3((n * 2 + 255) / 256, 1, 1), dim3(256, 1, 1)>>>(d, n * 2);" in text
    assert "dim3 grid" not in text and "dim3 block" not in text     # the old configuration is gone
    bang = print_program(N.Program("bang", tuple(migrate_host(
        _host_prog(body), "bang", "k", {"dim": [8, 1, 1], "func_type": "union1"}, ["y", "n"])), "x.mlu"), "bang")
    for piece in ("cnrtDim3_t dim = {8, 1, 1};", "cnrtFunctionType_t ktype = CNRT_FUNC_TYPE_UNION1;",
                  "cnrtQueueCreate(&queue);", "k<<<dim, ktype, queue>>>(d, n * 2);", "cnrtQueueSync(queue);",
                  "cnrtQueueDestroy(queue);", "cnrtMalloc((void **)&d, n * 4);", "cnrtFree(d);"):
        assert piece in bang, piece


# --------------------------------------------------------------------------- end to end
def _combine(src: Path, dst: str, tmp: Path):
    """src's launcher migrated to dst, appended to the dst example kernel of the same op."""
    sspec = load_spec(str(src) + ".toml")
    op = src.parent.name
    tgt = src.parent / f"{op}{DIALECT_EXT[dst]}"
    tspec = load_spec(str(tgt) + ".toml")
    tprog = parse_file(tgt, dst)
    kparams = [p.name for p in tprog.func(tspec.entry).params]
    launch = _launch_to_params(tspec.launch, tspec, kparams)
    diags: list = []
    funcs = migrate_host(parse_file(src, sspec.dialect), dst, tspec.entry, launch, kparams, spec=sspec,
                         diagnostics=diags)
    assert len(funcs) == 1 and funcs[0].name == f"{tspec.entry}_host"
    text = print_program(attach_host(tprog, funcs, dst), dst)
    out = tmp / f"{src.stem}_{sspec.dialect}_to{DIALECT_EXT[dst]}"
    out.write_text(text)
    return out, tspec, sspec, text, diags


CASES = [("relu", s, d) for s in DIALECTS for d in DIALECTS] + [
    ("gemm", "cuda", "bang"), ("gemm", "c", "hip"), ("softmax", "hip", "cuda"), ("softmax", "bang", "c"),
    ("conv2d_nchw", "hip", "cuda"), ("layernorm", "c", "bang"), ("add", "bang", "hip")]


@pytest.mark.parametrize("op,src,dst", CASES)
def test_migrated_launcher_verifies(op, src, dst, tmp_path):
    path, tspec, sspec, text, diags = _combine(EX / op / f"{op}{DIALECT_EXT[src]}", dst, tmp_path)
    assert not diags
    host = text.split(f"{tspec.entry}_host(")[-1]
    runtime = {"cuda": "cudaM", "hip": "hipM", "bang": "cnrtM"}
    for d, prefix in runtime.items():
        assert (prefix in host) == (d == dst), (d, dst)        # only the target's runtime calls remain
    launch_form = {"cuda": "<<<dim3(", "hip": "hipLaunchKernelGGL(", "bang": "cnrtQueueCreate(",
                   "c": f"{tspec.entry}(d"}[dst]
    assert launch_form in host
    v = test_host_launcher(path, tspec, against=(EX / op / f"{op}{DIALECT_EXT[src]}", sspec), seeds=(0, 1),
                           instances=["base", "odd"], jobs=2)
    assert v.verified, (v.summary(), [f.message for f in v.failures[:3]])


def test_host_mode_catches_a_missing_copy_out(tmp_path):
    path, tspec, sspec, text, _ = _combine(EX / "relu" / "relu.cu", "hip", tmp_path)
    broken = tmp_path / "broken.hip"
    broken.write_text(text.replace("hipMemcpy(y, d_y, bytes, hipMemcpyDeviceToHost);", ""))
    assert broken.read_text() != text
    v = test_host_launcher(broken, tspec, seeds=(0,), instances=["base"])
    assert not v.verified and v.failures[0].code == "XP2102"


def test_host_mode_catches_a_too_small_launch(tmp_path):
    """softmax.cu runs one block per row: a launcher with a quarter of the rows' blocks fails."""
    src = EX / "softmax" / "softmax.cu"
    sspec = load_spec(str(src) + ".toml")
    prog = parse_file(src, "cuda")
    kparams = [p.name for p in prog.func(sspec.entry).params]
    launch = _launch_to_params(sspec.launch, sspec, kparams)
    launch["grid"] = [f"({launch['grid'][0]}) / 4", *launch["grid"][1:]]
    funcs = migrate_host(prog, "cuda", sspec.entry, launch, kparams)
    bad = tmp_path / "softmax_small.cu"
    bad.write_text(print_program(attach_host(prog, funcs, "cuda"), "cuda"))
    v = test_host_launcher(bad, sspec, seeds=(0,), instances=["base"])
    assert not v.verified
