"""A row read through a local alias in one column loop and through its base pointer in another
(an inlined helper's ``row[j]``, ``row = x + base``, and the caller's ``x[base + j]``) is one row
access for row_registers (passes/row_registers.py: ``_row_aliases``), so the row is read into
registers once (wild rmsnorm_rows.cpp: refused as 'no row access ... that two column loops use'
before). Offsets that are not the same text stay apart."""
from __future__ import annotations

import pytest

from xpiler.frontend import parse_text
from xpiler.migration.pipeline import ROWS
from xpiler.passes import binding, row_registers
from xpiler.passes.base import AlternativeRefused
from xpiler.passes.inline_helpers import prepare_source
from xpiler.printers import print_program

SRC = """
#include <cstddef>
inline float mean_square(const float* row, int n)
{
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) {
        acc += row[j] * row[j];
    }
    return acc / n;
}
extern "C" void k(const float* x, const float* w, float* y, int rows, int dim)
{
    for (int r = 0; r < rows; ++r) {
        const std::size_t base = static_cast<std::size_t>(r) * static_cast<std::size_t>(dim);
        const float scale = 1.0f / sqrtf(mean_square(x + base, dim) + 1e-6f);
        for (int j = 0; j < dim; ++j) {
            y[base + OFF] = x[base + OFF] * scale * w[j];
        }
    }
}
"""


def _bound(src, target):
    prog = prepare_source(parse_text(src, "c", "k.cpp"), "k")
    out, launch = binding.apply(prog, entry="k", target=target, **ROWS)
    return out.with_launch("k", launch)


@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_an_alias_and_its_base_are_one_row(target):
    out = row_registers.apply(_bound(SRC.replace("OFF", "j"), target), entry="k", target=target, slots=8)
    fast = print_program(out).split("} else {")[0]
    assert "if (dim <= 1024)" in fast
    assert fast.count("float xp_reg_row[8];") == 1, fast          # one register row, loaded once
    assert fast.count("= row[xp_c") == 1
    assert "x[base + j]" not in fast and "xp_reg_row[xp_s" in fast


def test_a_different_offset_is_another_row():
    # x[base + j + 1] is not the alias's element j: nothing two column loops share
    with pytest.raises(AlternativeRefused, match="two column loops"):
        row_registers.apply(_bound(SRC.replace("y[base + OFF]", "y[base + j]").replace("OFF", "1 + j"), "cuda"),
                            entry="k", target="cuda", slots=8)
