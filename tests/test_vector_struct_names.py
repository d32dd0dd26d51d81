"""A program's own typedef named like a cuda/hip builtin vector type (``float4``...), printed for
cuda or hip (xpiler/mappings/vector_types.py): left out where its layout is the builtin's (lanes
x, y, z, w of the element type, the builtin's alignment), else printed as ``xp_<name>`` at the
declaration and every use. The frontend keeps a typedef'd struct's members and attributes; loop
recovery declares a lowered program's vector structs in the IR, aligned like the builtin."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.printers import print_program

HERE = Path(__file__).resolve().parent / "vector_struct_inputs"
EX = Path(__file__).resolve().parents[1] / "examples"


def typedef_lines(text):
    return [ln for ln in text.splitlines() if ln.startswith("typedef")]


def test_frontend_keeps_a_typedef_structs_members_and_alignment():
    prog = parse_file(HERE / "own_float4_aligned.c")
    td = next(i for i in prog.items if isinstance(i, N.Typedef))
    assert isinstance(td.type, N.Struct) and [f.name for f in td.type.fields] == ["x", "y", "z", "w"]
    assert typedef_lines(print_program(prog, "c")) == [
        "typedef struct __attribute__((aligned(16))) { float x; float y; float z; float w; } float4;"]
    # alignas / __align__ on the struct, and an attribute after the closing brace, read the same
    for head in ("struct alignas(16)", "struct __align__(16)"):
        p = parse_text(f"typedef {head} {{ float x, y, z, w; }} float4;\nvoid k(float4* v) {{ v[0].x = 1.0f; }}\n",
                       "c", "k.cpp")
        assert p.items[0].type.attrs == ("__attribute__((aligned(16)))",)


@pytest.mark.parametrize("dialect", ["cuda", "hip"])
def test_same_layout_uses_the_builtin(dialect):
    out = print_program(parse_file(HERE / "own_float4_aligned.c"), dialect)
    assert typedef_lines(out) == []
    assert "const float4 *a4 = (const float4 *)a;" in out and "xp_float4" not in out


@pytest.mark.parametrize("dialect", ["cuda", "hip"])
def test_other_layout_is_renamed_at_every_use(dialect):
    out = print_program(parse_file(HERE / "own_float4.c"), dialect)
    assert typedef_lines(out) == ["typedef struct { float x; float y; float z; float w; } xp_float4;"]
    code = "\n".join(ln for ln in out.splitlines() if not ln.startswith("//"))
    assert not re.search(r"\bfloat4\b", code)
    assert "xp_float4 *y4 = (xp_float4 *)y;" in out


@pytest.mark.parametrize("dialect", ["c", "bang"])
def test_dialects_without_the_builtin_print_the_typedef_as_it_is(dialect):
    out = print_program(parse_file(HERE / "own_float4.c"), dialect)
    assert typedef_lines(out) == ["typedef struct { float x; float y; float z; float w; } float4;"]


def test_fresh_name_avoids_the_programs_names_and_macro_bodies_follow():
    src = ("typedef struct { float x, y; } float2;\n#define TWO(p) ((float2 *)(p))\n"
           "void k(float* a, int xp_float2) { float2 v = TWO(a)[0]; a[xp_float2] = v.x + v.y; }\n")
    out = print_program(parse_text(src, "c", "k.c"), "cuda")
    assert typedef_lines(out) == ["typedef struct { float x; float y; } xp_float2_2;"]
    assert "#define TWO(p) ((xp_float2_2 *)(p))" in out and "xp_float2_2 v" in out


def test_layouts_that_differ_are_renamed():
    for td in ("typedef struct { float x, y, z, w; } float4 __attribute__((aligned(8)));",   # alignment
               "typedef struct __attribute__((packed, aligned(16))) { float x, y, z, w; } float4;",
               "typedef struct __attribute__((aligned(16))) { int x, y, z, w; } float4;",         # element
               "typedef struct __attribute__((aligned(16))) { float a, b, c, d; } float4;"):      # members
        out = print_program(parse_text(td + "\nvoid k(float4* v) { v[0] = v[1]; }\n", "c", "k.c"), "cuda")
        assert "xp_float4" in typedef_lines(out)[0], td


def test_loop_recovered_vector_struct_is_the_builtin_again():
    from xpiler.passes import loop_recovery
    from xpiler.spec import load_spec
    spec = load_spec(EX / "add" / "add_vec4.cu.toml")
    prog = parse_file(EX / "add" / "add_vec4.cu").with_launch("add_vec4", spec.launch)
    low = loop_recovery.apply(prog, entry="add_vec4", launch=prog.launch_dict("add_vec4"))
    low = low[0] if isinstance(low, tuple) else low
    assert "typedef struct __attribute__((aligned(16))) { float x; float y; float z; float w; } float4;" in \
        print_program(low, "c")
    for d in ("cuda", "hip"):
        assert "typedef" not in print_program(low, d)


@pytest.mark.parametrize("src,target,pipeline", [
    (HERE / "own_float4.c", "cuda", [("binding", {"target": "cuda"})]),
    (HERE / "own_float4_aligned.c", "hip", [("binding", {"target": "hip"})]),
    # a whole migration of ~100 s here; its printing: test_loop_recovered_vector_struct_is_the_builtin_again
    pytest.param(EX / "add" / "add_vec4.cu", "cuda",
                 [("loop_recovery", {"normalize": "partition"}), ("binding", {"target": "cuda"})],
                 marks=pytest.mark.long),
])
def test_outputs_compile_and_verify(tmp_path, src, target, pipeline):
    from xpiler.migration.driver import migrate
    r = migrate(src, target, outdir=tmp_path / "out", jobs=1, perf=False, pipeline=pipeline)
    assert r.verified, [str(d) for d in r.diagnostics]
    assert (typedef_lines(r.output_path.read_text()) == []) == ("own_float4.c" not in str(src))
