"""A field written or read through a pointer (``p->x``) is an access to the element ``*p``
(xpiler/ir/affine.py), so the dependence module (passes/dependence.py) sees a loop that writes
``p->x`` in every iteration as carrying a dependence. Before 2026-12-06 such an access was not
recorded at all and the loop was called parallel."""
import pytest

from xpiler.frontend import parse_text
from xpiler.ir.visit import find_loop
from xpiler.passes.dependence import check_parallel

HEAD = "struct P { float x; float y; };\n"

CARRIED = {
    "every iteration writes p->x": "for (int i = 0; i < n; ++i) { p->x = c[i]; }",
    "p->x accumulated": "for (int i = 0; i < n; ++i) { p->x = p->x + c[i]; }",
    "compound p->x +=": "for (int i = 0; i < n; ++i) { p->x += c[i]; }",
    "write p[i].x, read the next element through ->":
        "for (int i = 0; i < n; ++i) { p[i].x = c[i]; c[i] = (p + i + 1)->x; }",
    "assignment as a value": "for (int i = 0; i < n; ++i) { c[i] = (p->y = c[i]); }",
}

INDEPENDENT = {
    "read only": "for (int i = 0; i < n; ++i) { c[i] = p->x; }",
    "one element per iteration": "for (int i = 0; i < n; ++i) { (p + i)->x = c[i]; }",
}


def _check(body, const=""):
    src = HEAD + f"__global__ void k({const}struct P* p, float* c, int n) {{\n    {body}\n}}"
    prog = parse_text(src, "cuda", "t.cu")
    f = prog.kernels[0]
    return check_parallel(prog, f, find_loop(f, "i"))


@pytest.mark.parametrize("name", sorted(CARRIED))
def test_a_field_written_through_a_pointer_is_a_carried_dependence(name):
    assert _check(CARRIED[name]) is not None


@pytest.mark.parametrize("name", sorted(INDEPENDENT))
def test_distinct_elements_through_a_pointer_stay_parallel(name):
    assert _check(INDEPENDENT[name]) is None
