"""Issue 12, kernels written elsewhere: (1) BANG copy barriers (``__sync()`` after
``__memcpy_async``) once loop recovery has made the program sequential; (2) ``std::vector``
local scratch buffers in c-dialect C++ read as local arrays by the front end, and the uses of a
vector that are refused (with the member and the line)."""
import subprocess
import sys
from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.frontend.errors import XPError
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.printers import print_program

ROOT = Path(__file__).resolve().parent.parent


def _barriers(prog):
    return [n.kind for n in walk(prog) if isinstance(n, N.Barrier)]


def _recover(prog, entry, launch):
    from xpiler.passes import detensorize, loop_recovery
    prog = detensorize.apply(prog, entry=entry, target="c")
    new, _ = loop_recovery.apply(prog, entry=entry, launch=launch)
    return new


# ------------------------------------------------------------------------------ BANG copy barrier
def test_async_copy_barrier_in_a_task_loop_is_dropped_by_loop_recovery():
    src = ROOT / "examples/wild/add/add_union1_async.mlu"
    prog = parse_file(src)
    assert "copy" in _barriers(prog)            # __sync() after the two __memcpy_async
    new = _recover(prog, "add_union", {"dim": [8, 1, 1], "func_type": "union1"})
    assert _barriers(new) == []
    out = print_program(new, "c")                # XP1113 before: the c printer has no copy barrier
    body = out[out.index("void add_union("):]
    assert "__sync" not in body and "__memcpy" not in body


def test_copy_barrier_as_a_bare_if_body_and_a_fence_are_dropped():
    src = ("__nram__ float buf[64];\n"
           "__mlu_global__ void k(float* x, float* y, int n) {\n"
           "  for (int s = taskId; s * 64 < n; s += taskDim) {\n"
           "    __memcpy_async(buf, x + s * 64, 64 * sizeof(float), GDRAM2NRAM);\n"
           "    if (n > 0) __sync_io();\n"
           "    __bang_mul_scalar(buf, buf, 2.0f, 64);\n"
           "    __sync_compute();\n"
           "    __memcpy(y + s * 64, buf, 64 * sizeof(float), NRAM2GDRAM);\n"
           "  }\n"
           "}\n")
    prog = parse_text(src, "bang", "k.mlu")
    assert sorted(_barriers(prog)) == ["copy", "copy"]
    new = _recover(prog, "k", {"dim": [4, 1, 1], "func_type": "block"})
    assert _barriers(new) == []
    print_program(new, "c")


def test_loop_recovery_still_refuses_an_async_copy_left_in_place():
    # the barrier is only dropped because no asynchronous copy can be left to wait for
    from xpiler.passes import loop_recovery
    from xpiler.passes.base import PassError
    prog = parse_file(ROOT / "examples/wild/add/add_union1_async.mlu")
    with pytest.raises(PassError) as e:
        loop_recovery.apply(prog, entry="add_union", launch={"dim": [8, 1, 1], "func_type": "union1"})
    assert "__memcpy_async" in str(e.value) and "detensorize" in str(e.value)


# ------------------------------------------------------------------------------ end to end
def _migrate(src: Path, to: str, out: Path):
    return subprocess.run([sys.executable, "-m", "xpiler", "migrate", str(src), "--to", to, "-o", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)


def _verified_output(tmp_path, kernel, to):
    r = _migrate(ROOT / "examples/wild" / kernel, to, tmp_path / "out")
    assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr
    outs = [p for p in (tmp_path / "out").iterdir() if p.suffix in (".hip", ".c", ".cu", ".mlu")]
    assert len(outs) == 1 and ".unverified" not in outs[0].name
    return "\n".join(l for l in outs[0].read_text().splitlines() if not l.lstrip().startswith("//"))


def test_bang_async_copy_kernel_migrates_to_cuda(tmp_path):
    code = _verified_output(tmp_path, "add/add_union1_async.mlu", "cuda")
    assert "__sync" not in code and "__memcpy" not in code
