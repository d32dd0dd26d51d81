"""Accesses through a pointer cast to another element type (``float4 *c4 = (float4 *)c``): one
element of it is several elements of the buffer (xpiler/ir/lanes.py). The access functions
(xpiler/ir/affine.py) and the one dependence module (passes/dependence.py) count such an access
in the buffer's elements and cover all its lanes, or take its element as unknown."""
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.affine import accesses, context_for
from xpiler.ir.footprint import footprint
from xpiler.ir.lanes import lanes_of
from xpiler.ir.visit import find_loop, walk
from xpiler.passes.dependence import check_parallel, fusion_violation, interchange_violation, privatizable


def _prog(src):
    p = parse_text(src, "cuda", "t.cu")
    return p, p.kernels[0]


def _dep(src, var="i"):
    p, f = _prog(src)
    return check_parallel(p, f, find_loop(f, var))


# for n = 4, iteration 1 writes c[4..7] through the vector pointer, iteration 0 writes c[4]
CONFLICTS = {
    "float4, cast in place": """
__global__ void k(const float* a, float* c, int n) {
    for (int i = 0; i < n; ++i) { ((float4*)c)[i] = ((const float4*)a)[i]; c[n + i] = 0.0f; }
}""",
    "float4 alias": """
__global__ void k(const float* a, float* c, int n) {
    float4* c4 = (float4*)c;
    const float4* a4 = (const float4*)a;
    for (int i = 0; i < n; ++i) { c4[i] = a4[i]; c[n + i] = 0.0f; }
}""",
    "half2 alias": """
__global__ void k(const __half* a, __half* c, int n) {
    __half2* c2 = (__half2*)c;
    for (int i = 0; i < n; ++i) { c2[i] = ((const __half2*)a)[i]; c[n + i] = a[0]; }
}""",
    "int4 reinterpret_cast": """
__global__ void k(int* c, int n) {
    int4* c4 = reinterpret_cast<int4*>(c);
    for (int i = 0; i < n; ++i) { c4[i] = make_int4(1, 2, 3, 4); c[n + i] = 0; }
}""",
    "char4 of char": """
__global__ void k(char* c, int n) {
    char4* c4 = (char4*)c;
    for (int i = 0; i < n; ++i) { c4[i] = make_char4(1, 2, 3, 4); c[n + i] = 0; }
}""",
    "arithmetic after the cast": """
__global__ void k(float* c, int n) {
    for (int i = 0; i < n; ++i) { *((float4*)c + i) = make_float4(0.f, 0.f, 0.f, 0.f); c[n + i] = 1.0f; }
}""",
    "one lane written": """
__global__ void k(float* c, int n) {
    float4* c4 = (float4*)c;
    for (int i = 0; i < n; ++i) { c4[i].y = c4[i + 1].y; }
}""",
    "alias of a shared buffer": """
__global__ void k(float* c) {
    __shared__ float s[256];
    float4* s4 = (float4*)s;
    for (int i = 0; i < 32; ++i) { s4[i] = make_float4(0.f, 0.f, 0.f, 0.f); s[i + 64] = 1.0f; }
    c[threadIdx.x] = s[threadIdx.x];
}""",
}


@pytest.mark.parametrize("name", sorted(CONFLICTS))
def test_vector_element_through_a_cast_covers_all_its_lanes(name):
    d = _dep(CONFLICTS[name])
    assert d is not None and d.buffer in ("c", "s"), name


def test_a_lane_write_is_a_write():
    # iteration i reads v[i + 1].x, which iteration i + 1 writes (it was read as two reads)
    d = _dep("""
__global__ void k(float4* v, int n) {
    for (int i = 0; i < n; ++i) { v[i].x = v[i + 1].x; }
}""")
    assert d is not None and d.buffer == "v"


def test_disjoint_or_same_iteration_lanes_stay_parallel():
    # the scalar writes lie past the vector part, or inside the iteration's own vector
    assert _dep("""
__global__ void k(float* c, int n) {
    float4* c4 = (float4*)c;
    for (int i = 0; i < n; ++i) { c4[i] = make_float4(0.f, 0.f, 0.f, 0.f); c[4 * n + i] = 1.0f; }
}""") is None
    assert _dep("""
__global__ void k(float* c, int n) {
    for (int i = 0; i < n; ++i) { *(float4*)(c + 4 * i) = make_float4(0.f, 0.f, 0.f, 0.f); c[4 * i + 2] = 1.0f; }
}""") is None


def test_a_cast_whose_lanes_are_not_whole_is_an_unknown_element():
    d = _dep("""
__global__ void k(float* c, int n) {
    for (int i = 0; i < n; ++i) { ((char*)c)[i] = 0; c[n + i] = 1.0f; }
}""")
    assert d is not None and d.kind == "unknown"


def test_accesses_and_footprint_count_the_buffer_elements():
    p, f = _prog(CONFLICTS["float4 alias"])
    ctx = context_for(p, f)
    loop = find_loop(f, "i")
    got = {(a.buffer, a.mode, str(a.indices[0]), a.lanes) for a in accesses(loop.body, ctx)}
    assert ("c", "w", "4*i", 4) in got and ("a", "r", "4*i", 4) in got and ("c", "w", "i + n", 1) in got
    fp = footprint(loop, {"i": 2, "n": 16}, ctx)
    assert fp["a"].box == [(8, 11)]                     # a4[2] is a[8..11]
    # without the pointer types the lane count is not known: the element is unknown
    ctx.types = {}
    assert any(a.buffer == "c" and a.indices == (None,) for a in accesses(loop.body, ctx))


def test_lane_counts_by_size():
    f4 = N.Vector(N.Scalar("float32"), 4, "float4")
    h2 = N.Vector(N.Scalar("float16"), 2, "__half2")
    assert lanes_of(f4, N.Scalar("float32")) == 4 and lanes_of(h2, N.Scalar("float16")) == 2
    assert lanes_of(N.Vector(N.Scalar("int8"), 4, "char4"), N.Scalar("char")) == 4
    assert lanes_of(N.Scalar("int32"), N.Scalar("float32")) == 1
    assert lanes_of(N.Scalar("char"), N.Scalar("float32")) is None       # a quarter of a float
    assert lanes_of(N.Scalar("float32"), None) is None                    # buffer type unknown


def test_fusion_and_interchange_see_the_lanes():
    # the second loop's iteration j reads c[2n + 4j + 5], which a later iteration of the first
    # writes (n = 4, j = 0: c[13] is c4[3]); as c[i] it would lie past the first loop's range
    p, f = _prog("""
__global__ void k(float* c, float* d, int n) {
    float4* c4 = (float4*)c;
    for (int i = 0; i < n; ++i) c4[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int j = 0; j < n; ++j) d[j] = c[2 * n + 4 * j + 5];
}""")
    loops = [s for s in f.body.stmts if isinstance(s, N.For)]
    assert fusion_violation(p, f, loops[0], loops[1]) is not None
    # (i, j) reads c[32i + 4j - 26], a lane of c4[8(i - 1) + j + 1], which (i - 1, j + 1) writes:
    # direction (<, >); read as c[8i + j] no earlier row reaches it
    p, f = _prog("""
__global__ void k(float* c) {
    float4* c4 = (float4*)c;
    for (int i = 1; i < 8; ++i)
        for (int j = 0; j < 8; ++j) { c4[i * 8 + j] = make_float4(0.f, 0.f, 0.f, 0.f); c[32 * i + 4 * j - 26] += 1.0f; }
}""")
    i = find_loop(f, "i")
    assert interchange_violation(p, f, i, find_loop(i.body, "j")) is not None


def test_a_vector_read_of_a_partly_written_local_is_not_privatizable():
    # t[0] is written in every iteration, but the float4 read takes t[0..3]
    p, f = _prog("""
__global__ void k(float* c, int n) {
    float t[4];
    const float4* t4 = (const float4*)t;
    for (int i = 0; i < n; ++i) { t[0] = c[i]; float4 v = t4[0]; c[i] = v.x + v.w; }
}""")
    ok, why = privatizable(p, f, find_loop(f, "i"))
    assert "t" not in ok and "t" in why


def test_the_odd_tail_after_half2_pairs_is_apart_only_for_odd_n():
    # c2[i] is c[2i], c[2i + 1]; c[n - 1] lies past the pairs only when n is odd: (n & 1) must be
    # read as n mod 2 (passes/dependence_idioms.low_bits), else the tail may meet the last pair
    src = """
__global__ void k(const __half* a, __half* c, int n) {
    __half2* c2 = (__half2*)c;
    int pairs = n / 2;
    for (int i = 0; i < pairs + 1; ++i) {
        if (i < pairs) c2[i] = ((const __half2*)a)[i];
        if (i == pairs && COND) c[n - 1] = a[n - 1];
    }
}"""
    assert _dep(src.replace("COND", "(n & 1)")) is None
    assert _dep(src.replace("COND", "(n & 3) == 1")) is None
    d = _dep(src.replace("COND", "((n & 1) == 0)"))
    assert d is not None and d.buffer == "c"


# a pointer into a row of a two-dimensional array: its buffer is the array (its offset is not
# kept), so a loop writing through it and through the array is not called parallel; before
# 2026-12-06 the pointer was taken for a buffer of its own
ROW_POINTERS = {
    "vector cast of &s[1][0]": "float2* s2 = (float2*)&s[1][0];\n"
        "    for (int i = 0; i < 32; ++i) { s2[i] = make_float2(c[i], c[i]); s[1][2 * i + 2] = 0.0f; }",
    "a row s[1] as a pointer": "float* r = s[1];\n"
        "    for (int i = 0; i < 32; ++i) { r[i + 1] = c[i]; s[1][i] = 0.0f; }",
}


@pytest.mark.parametrize("name", sorted(ROW_POINTERS))
def test_a_pointer_into_a_two_dimensional_array_aliases_it(name):
    src = ("__global__ void k(float* c, int n) {\n    __shared__ float s[4][64];\n    "
           + ROW_POINTERS[name] + "\n}")
    assert _dep(src) is not None


def test_matchers_that_rebuild_an_address_refuse_a_cast_pointer():
    # decache's (p + k)[j] -> p[k + j] and sum-pool's buffer reads rebuild the address in the
    # buffer's elements: through a cast the elements may be wider (float2 over float)
    from types import SimpleNamespace
    from xpiler.passes import dependence as D
    from xpiler.passes.decache import _flat_index
    f = N.Scalar("float32", "float")
    p, k, j = N.Var("p"), N.Var("k"), N.Var("j")
    plain = N.Index(N.BinOp("+", p, k), j)
    cast = N.Index(N.BinOp("+", N.Cast(N.Pointer(N.Vector(f, 2, "float2")), p), k), j)
    ctx = SimpleNamespace(types={"p": N.Pointer(f)})
    assert _flat_index(plain, ctx) == N.Index(p, N.BinOp("+", k, j))
    assert _flat_index(cast, ctx) == cast                     # left as written
    assert D.split_ptr_uncast(cast.base) == (None, None)
    assert D.split_ptr_uncast(plain.base) == ("p", k)
