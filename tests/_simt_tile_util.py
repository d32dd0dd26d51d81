"""Shared helpers of tests/test_pass_cache_simt.py and tests/test_pass_tensorize_mma.py."""
import tempfile
from pathlib import Path

from xpiler.frontend import parse_file, parse_text
from xpiler.passes import binding
from xpiler.printers import print_program
from xpiler.spec import DIALECT_EXT, load_spec, spec_to_toml
from xpiler.verify.tester import compare_kernels

ROOT = Path(__file__).resolve().parent.parent


def bound(op, dialect):
    """examples/<op>/<op>.c through the binding pass: (source path, entry, program)."""
    src = ROOT / "examples" / op / f"{op}.c"
    entry = load_spec(str(src) + ".toml").entry
    prog, _ = binding.apply(parse_file(src), entry=entry, target=dialect)
    return src, entry, prog


def half_gemm():
    """A scalar half x half -> float gemm (i, j bound to global.y / global.x), spec of gemm_wmma.cu."""
    text = (ROOT / "tests" / "simt_inputs" / "gemm_half_scalar.cu").read_text()
    p = parse_text(text, "cuda", "gemm_half_scalar.cu")
    f = p.func("gemm_wmma")
    li = f.body.stmts[0]
    lj = li.body.stmts[0]
    li = li.with_(binding="global.y", body=li.body.with_(stmts=(lj.with_(binding="global.x"),)))
    nf = f.with_(body=f.body.with_(stmts=(li,)))
    return ROOT / "examples" / "gemm" / "gemm_wmma.cu", p.with_(items=tuple(nf if it is f else it for it in p.items))


def verify(prog, src, dialect, launch, instances=None):
    sp = load_spec(str(src) + ".toml")
    d = Path(tempfile.mkdtemp(prefix="xp-simt-"))
    path = d / f"cand{DIALECT_EXT[dialect]}"
    path.write_text(print_program(prog, dialect))
    cs = sp.with_dialect(dialect, sp.entry, launch)
    ref, fn = sp.reference.split(":")
    cs.reference = f"{(src.parent / ref).resolve()}:{fn}"
    cs.path = path.with_name(path.name + ".toml")
    cs.path.write_text(spec_to_toml(cs))
    return compare_kernels(path, cs, against=(src, sp), instances=instances)
