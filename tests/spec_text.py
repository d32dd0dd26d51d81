"""Spec text for the small one-dimensional kernels tests write on the fly (x in, y out, n scalar),
so each test file does not repeat the same TOML."""
from __future__ import annotations


def elementwise_spec(entry: str, dialect: str, *, n: int = 100, block: int | None = None,
                     reference: str | None = None) -> str:
    """``entry(const T* x, T* y, int n)`` over float32 arrays of n elements; SIMT dialects get a
    1-D launch of ``block`` threads per block covering n."""
    lines = [f'entry = "{entry}"', f'dialect = "{dialect}"', "[sizes]", f"n = {n}"]
    if dialect in ("cuda", "hip"):
        lines += ["[launch]", f'grid = ["cdiv(n, {block or 64})", 1, 1]', f"block = [{block or 64}, 1, 1]"]
    for name, role in (("x", "in"), ("y", "out")):
        lines += ["[[args]]", f'name = "{name}"', 'dtype = "float32"', 'shape = ["n"]', f'role = "{role}"']
    lines += ["[[args]]", 'name = "n"', 'dtype = "int32"', 'role = "scalar"', 'value = "n"']
    if reference:
        lines += ["[reference]", f'python = "{reference}"']
    return "\n".join(lines) + "\n"
