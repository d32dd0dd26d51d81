"""Reads by statements every thread/task runs, ordered against later stores of the same memory.

* Ordinary binding (one grid-/task-stride loop, ``passes/binding.py``): a prelude statement
  (``float first = y[0];``, ``if (y[0] > 0) return;``) runs in every thread of every block, and
  nothing orders it against the bound loop's iterations in other blocks/tasks.  Binding refuses
  (``check_prelude_reads``) unless the dependence test proves no iteration writes the element read.
* Phases in one block (``passes/phases.py``): ``__syncthreads()`` goes between a statement every
  thread runs that read a buffer and a later phase that stores to that buffer.
* ``rows="block"`` (``passes/block_rows.py``) shares the prelude check.
"""
from __future__ import annotations

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding
from xpiler.passes.base import PassError

PRELUDE_READ = """void k(const float* x, float* y, int n)
{
    float first = y[0];
    for (int i = 0; i < n; i++)
        y[i] = y[i] - first;
}
"""

PRELUDE_DISJOINT = """void k(const float* x, float* y, int n)
{
    float first = y[0];
    for (int i = 1; i < n; i++)
        y[i] = y[i] - first;
}
"""

PRELUDE_GUARD = """void k(const float* x, float* y, int n)
{
    if (y[0] > 0.0f)
        return;
    for (int i = 0; i < n; i++)
        y[i] = x[i];
}
"""

PRELUDE_OTHER_BUFFER = """void k(const float* x, float* y, int n)
{
    float first = x[0];
    for (int i = 0; i < n; i++)
        y[i] = x[i] - first;
}
"""

PHASES_DECL_READ = """void k(const float* x, float* y, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += x[i];
    float m = y[0];
    for (int i = 0; i < n; i++)
        y[i] = x[i] * s + m;
}
"""

PHASES_ONCE_WRITE = """void k(const float* x, float* y, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += x[i];
    float m = y[0];
    y[0] = s * m;
}
"""

PHASES_ALIAS = """void k(const float* x, float* y, int n)
{
    float* out = y;
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += x[i];
    float m = out[0];
    for (int i = 0; i < n; i++)
        y[i] = x[i] * s + m;
}
"""

PHASES_OTHER_BUFFER = """void k(const float* x, float* y, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += x[i];
    float m = x[0];
    for (int i = 0; i < n; i++)
        y[i] = x[i] * s + m;
}
"""

ROWS_PRELUDE = """void k(const float* x, float* y, int rows, int cols)
{
    float first = y[0];
    for (int r = 0; r < rows; r++) {
        float s = 0.0f;
        for (int c = 0; c < cols; c++)
            s += x[r * cols + c];
        for (int c = 0; c < cols; c++)
            y[r * cols + c] = x[r * cols + c] * s - first;
    }
}
"""


def c_prog(text):
    return parse_text(text, "c", "k.c")


def bindings(prog):
    return [n.binding for n in walk(prog.func("k")) if isinstance(n, N.For)]


def top(prog):
    return list(prog.func("k").body.stmts)


def barrier_between(stmts, first, second) -> bool:
    """A block barrier among the top-level statements strictly between ``first`` and ``second``
    (predicates on statements)."""
    a = next(k for k, s in enumerate(stmts) if first(s))
    b = next(k for k, s in enumerate(stmts) if k > a and second(s))
    return any(isinstance(s, N.Barrier) for s in stmts[a + 1:b])


def decl(name):
    return lambda s: isinstance(s, N.Decl) and s.name == name


def loop_writing(buf):
    def pred(s):
        return any(isinstance(n, N.Assign) and isinstance(n.target, N.Index) and
                   isinstance(n.target.base, N.Var) and n.target.base.name == buf
                   for n in walk(s)) and any(isinstance(n, N.For) for n in walk(s))
    return pred


def thread0_store(s):
    return isinstance(s, N.If) and "threadIdx" in repr(s.cond)


# ---------------------------------------------------------------- ordinary (grid-stride) binding
@pytest.mark.parametrize("src,line", [(PRELUDE_READ, 3), (PRELUDE_GUARD, 3)])
@pytest.mark.parametrize("target", ["cuda", "hip", "bang"])
def test_prelude_read_of_a_written_element_is_refused(src, line, target):
    with pytest.raises(PassError) as ei:
        binding.check(c_prog(src), entry="k", target=target, loop="i")
    e = ei.value
    assert e.code == "XP4001", e
    assert f"'y' read at line {line} by every thread/task before loop 'i'" in e.why, e.why


@pytest.mark.parametrize("target", ["cuda", "bang"])
def test_prelude_read_falls_back_to_one_ordered_block_or_task(target):
    """Without a loop given, binding takes the phases form: one block with a barrier after the
    read (cuda), or the sequential body in task 0 (bang)."""
    out, launch = binding.apply(c_prog(PRELUDE_READ), entry="k", target=target)
    if target == "bang":
        assert launch == {"dim": [1, 1, 1], "func_type": "block"}
        assert bindings(out) == ["taskId", None]
    else:
        assert launch == {"grid": [1, 1, 1], "block": [256, 1, 1]}
        assert "global.x" not in bindings(out)
        assert barrier_between(top(out), decl("first"), loop_writing("y"))


@pytest.mark.parametrize("src", [PRELUDE_DISJOINT, PRELUDE_OTHER_BUFFER])
@pytest.mark.parametrize("target", ["cuda", "bang"])
def test_prelude_read_proved_unwritten_keeps_the_grid_stride_loop(src, target):
    out, launch = binding.apply(c_prog(src), entry="k", target=target)
    assert bindings(out) == ["global.x" if target == "cuda" else "taskId"]
    assert launch.get("grid", [None])[0] != 1 and launch.get("dim", [4])[0] == 4


# ---------------------------------------------------------------- phases in one block
@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_phases_barrier_between_a_uniform_read_and_a_loop_storing_it(target):
    out, launch = binding.apply(c_prog(PHASES_DECL_READ), entry="k", target=target)
    assert launch["grid"] == [1, 1, 1]
    assert barrier_between(top(out), decl("m"), loop_writing("y"))


def test_phases_barrier_between_a_uniform_read_and_a_thread0_store():
    out, _ = binding.apply(c_prog(PHASES_ONCE_WRITE), entry="k", target="cuda")
    assert barrier_between(top(out), decl("m"), thread0_store)


def test_phases_barrier_sees_through_a_local_pointer_alias():
    out, _ = binding.apply(c_prog(PHASES_ALIAS), entry="k", target="cuda")
    assert barrier_between(top(out), decl("m"), loop_writing("y"))


def test_phases_barrier_for_a_read_through_a_pure_macro():
    src = "#define AT(p, i) ((p)[i])\n" + PHASES_DECL_READ.replace("y[0];", "AT(y, 0);")
    out, _ = binding.apply(c_prog(src), entry="k", target="cuda")
    assert barrier_between(top(out), decl("m"), loop_writing("y"))


def test_phases_no_barrier_when_the_read_buffer_is_not_stored():
    out, _ = binding.apply(c_prog(PHASES_OTHER_BUFFER), entry="k", target="cuda")
    assert not barrier_between(top(out), decl("m"), loop_writing("y"))


def test_phases_bang_is_one_sequential_task():
    out, launch = binding.apply(c_prog(PHASES_DECL_READ), entry="k", target="bang")
    assert launch == {"dim": [1, 1, 1], "func_type": "block"}
    assert bindings(out)[0] == "taskId" and set(bindings(out)[1:]) == {None}


# ---------------------------------------------------------------- rows="block"
def test_rows_block_refuses_a_prelude_read_of_a_row_written_element():
    with pytest.raises(PassError) as ei:
        binding.apply(c_prog(ROWS_PRELUDE), entry="k", target="cuda", loop="r", rows="block")
    assert "'y' read at line 3 by every thread/task before loop 'r'" in ei.value.why


def test_rows_block_orders_a_row_read_before_a_store_of_it():
    src = """void k(const float* x, float* y, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        float m = y[r * cols];
        for (int c = 0; c < cols; c++)
            y[r * cols + c] = x[r * cols + c] - m;
    }
}
"""
    out, _ = binding.apply(c_prog(src), entry="k", target="cuda", loop="r", rows="block")
    row = next(s for s in top(out) if isinstance(s, N.For))
    assert barrier_between(list(row.body.stmts), decl("m"), loop_writing("y"))


# ---------------------------------------------------------------- end to end on the emulators
REF = '''import numpy as np


def prelude(x, y, n):
    y = y.copy()
    y[:n] = y[:n] - y[0]
    return y


def phases(x, y, n):
    y = y.copy()
    s = np.float32(x[:n].astype(np.float64).sum())
    y[:n] = x[:n] * s + y[0]
    return y
'''


def _spec(entry, ref):
    lines = [f'entry = "{entry}"', 'dialect = "c"', "[sizes]", "n = 1000"]
    for name, role in (("x", "in"), ("y", "inout")):
        lines += ["[[args]]", f'name = "{name}"', 'dtype = "float32"', 'shape = ["n"]', f'role = "{role}"']
    lines += ["[[args]]", 'name = "n"', 'dtype = "int32"', 'role = "scalar"', 'value = "n"',
              "[reference]", f'python = "{ref}"']
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("src,fn,target", [(PRELUDE_READ, "prelude", "cuda"), (PHASES_DECL_READ, "phases", "hip"),
                                           (PRELUDE_READ, "prelude", "bang")])
def test_migrations_verify(tmp_path, src, fn, target):
    from xpiler.migration.driver import migrate
    (tmp_path / "ref.py").write_text(REF)
    (tmp_path / "k.c").write_text(src)
    (tmp_path / "k.toml").write_text(_spec("k", f"{tmp_path / 'ref.py'}:{fn}"))
    r = migrate(tmp_path / "k.c", target, outdir=tmp_path / "out", jobs=1, perf=False)
    assert r.verified, [str(d) for d in r.diagnostics]
