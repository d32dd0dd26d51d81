"""Host code of c origin (a c source's own launcher, e.g. an earlier c output's <entry>_host)
translated to cuda/hip/bang host code through the host API table (xpiler/migration/host_c.py).
Unit tests on small c texts: no build, no run (the whole chains gelu.cu -> c -> cuda/hip/bang are
in benchmarks/RESULTS.md)."""
from __future__ import annotations

import pytest

from xpiler.diagnostics import XPError
from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.migration.host import attach_host, migrate_host_ex
from xpiler.migration.host_c import split_c_launchers
from xpiler.printers import print_program

KERNEL = """#include <stdlib.h>
#include <string.h>
void k(const float *x, float *y, int n) {
    for (int i = 0; i < n; ++i) y[i] = 2.0f * x[i];
}
"""
# the statement forms people write: a cast malloc in a declaration, a null check, calloc,
# p = malloc(n) without a cast, a host scratch buffer the kernel never sees
LAUNCHER = """void k_host(const float *x, float *y, int n) {
    size_t bytes = (size_t)n * sizeof(float);
    float *d_x = (float *)malloc(bytes);
    if (!d_x) return;
    float *d_y = calloc(n, sizeof(float));
    float *t;
    t = malloc(bytes);
    memcpy(t, x, bytes);
    memcpy(d_x, t, bytes);
    k(d_x, d_y, n);
    memcpy(y, d_y, bytes);
    free(t);
    free(d_x);
    free(d_y);
}
"""
LAUNCH = {"grid": ["(n + 255) / 256", 1, 1], "block": [256, 1, 1]}
LAUNCH_BANG = {"dim": [4, 1, 1], "func_type": "block"}


def _host(launcher: str, dst: str):
    prog = parse_text(KERNEL + launcher, "c", "t.c")
    kernel_prog, host_prog = split_c_launchers(prog, "k")
    funcs, diags = migrate_host_ex(host_prog, dst, "k", LAUNCH_BANG if dst == "bang" else LAUNCH, ["x", "y", "n"])
    return kernel_prog, funcs, diags


def test_launcher_is_not_a_kernel_for_the_passes():
    prog = parse_text(KERNEL + LAUNCHER, "c", "t.c")
    assert prog.func("k_host").kind == "kernel"          # the c front end's reading
    kernel_prog, host_prog = split_c_launchers(prog, "k")
    assert [f.name for f in kernel_prog.funcs] == ["k"]
    h = host_prog.func("k_host")
    assert h.kind == "host" and any(isinstance(s, N.Launch) for s in h.body.stmts)
    assert split_c_launchers(parse_text(KERNEL, "c", "t.c"), "k")[1] is None


@pytest.mark.parametrize("dst,api,h2d,d2h,ok", [
    ("cuda", "cuda", "cudaMemcpyHostToDevice", "cudaMemcpyDeviceToHost", "cudaSuccess"),
    ("hip", "hip", "hipMemcpyHostToDevice", "hipMemcpyDeviceToHost", "hipSuccess"),
    ("bang", "cnrt", "cnrtMemcpyHostToDev", "cnrtMemcpyDevToHost", "cnrtSuccess"),
])
def test_c_launcher_translates(dst, api, h2d, d2h, ok):
    kernel_prog, funcs, diags = _host(LAUNCHER, dst)
    assert diags == []
    text = print_program(attach_host(kernel_prog, funcs, dst), dst)
    body = text[text.index("void k_host"):]
    # device buffers: allocated through the runtime, the null check keeps its meaning
    assert f"if ({api}Malloc((void **)&d_x, bytes) != {ok})" in body and "d_x = 0;" in body
    assert f"{api}Malloc((void **)&d_y, " in body and f"{api}Memset(d_y, 0, " in body
    assert "calloc" not in body
    assert f"{api}Memcpy(d_x, " in body and h2d in body
    assert f"{api}Memcpy(y, d_y, bytes, {d2h})" in body
    assert f"{api}Free(d_x);" in body and f"{api}Free(d_y);" in body
    # the host scratch buffer stays host memory, with the cast C++ needs
    assert "t = (float *)malloc(bytes);" in body and "memcpy(t, x, bytes);" in body and "free(t);" in body
    assert body.count("malloc(") == 1 and body.count("memcpy(") == 1
    assert ("k<<<" in body) if dst != "hip" else ("hipLaunchKernelGGL(k," in body)


def test_c_to_c_keeps_the_c_host_code():
    kernel_prog, funcs, diags = _host(LAUNCHER, "c")
    body = print_program(attach_host(kernel_prog, funcs, "c"), "c")
    body = body[body.index("void k_host"):]
    assert "float *d_x = (float *)malloc(bytes);" in body and "k(d_x, d_y, n);" in body
    assert "cuda" not in body


@pytest.mark.parametrize("launcher,what", [
    # a host pointer handed straight to the kernel: there is no device copy of it
    ("void k_host(const float *x, float *y, int n) {\n    k(x, y, n);\n}\n", "'x' is given to the kernel"),
    # a device buffer written on the host
    ("void k_host(const float *x, float *y, int n) {\n    float *d = malloc(n * sizeof(float));\n"
     "    float *e = malloc(n * sizeof(float));\n    d[0] = 1.0f;\n    k(d, e, n);\n"
     "    memcpy(y, e, n * sizeof(float));\n    free(d);\n    free(e);\n}\n", "device buffer 'd' is used on the host"),
])
def test_untranslatable_c_host_code_is_XP4102(launcher, what):
    with pytest.raises(XPError) as ei:
        _host(launcher, "cuda")
    e = ei.value
    assert e.code == "XP4102" and what in e.message and e.line is not None and e.line > 4


def test_allocation_inside_the_condition():
    """``if ((p = malloc(n)) == NULL)`` and ``if (!(t = malloc(n)))``: the device allocation goes
    before the test (it is the condition's first evaluation), the host one gets its cast."""
    launcher = """void k_host(const float *x, float *y, int n) {
    size_t bytes = (size_t)n * sizeof(float);
    float *d, *e, *t;
    if ((d = malloc(bytes)) == NULL) return;
    if (!(e = (float *)malloc(bytes))) { free(d); return; }
    if (!(t = malloc(bytes))) return;
    memcpy(d, x, bytes);
    k(d, e, n);
    memcpy(t, e, bytes);
    memcpy(y, t, bytes);
    free(t); free(d); free(e);
    d = NULL;
}
"""
    kernel_prog, funcs, diags = _host(launcher, "cuda")
    text = print_program(attach_host(kernel_prog, funcs, "cuda"), "cuda")
    body = text[text.index("void k_host"):]
    assert "if (cudaMalloc((void **)&d, bytes) != cudaSuccess)" in body and "if (d == NULL)" in body
    assert "if (cudaMalloc((void **)&e, bytes) != cudaSuccess)" in body and "if (!e)" in body
    assert "if (!(t = (float *)malloc(bytes)))" in body
    assert "cudaMemcpy(t, e, bytes, cudaMemcpyDeviceToHost)" in body and "memcpy(y, t, bytes);" in body
    assert "cudaFree(d);" in body and "d = NULL;" in body     # free(p); p = NULL; is not a host use
    # short-circuited: the allocation is not always evaluated, so it cannot be moved out
    with pytest.raises(XPError, match="allocated inside an expression"):
        _host(launcher.replace("if ((d = malloc(bytes)) == NULL)", "if (n > 0 && (d = malloc(bytes)) == NULL)"),
              "cuda")
