"""The planted-bug corpus (benchmarks/repair_mutants.py) discards a mutant only when a proof of
its equivalence runs at build time: a Z3 check of a grid-stride step (automatic), or a claim on
file for its ID (Z3 over an expression, enumeration of a constant loop) that is checked now and
whose expressions occur in the texts. A mutant no check proves stays planted."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def _bench():
    sp = importlib.util.spec_from_file_location("repair_mutants_bench_eq", ROOT / "benchmarks/repair_mutants.py")
    m = importlib.util.module_from_spec(sp)
    sp.loader.exec_module(m)
    return m


KERNEL = """\
extern "C" __global__ void add(const float *a, const float *b, float *c, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        c[i] = a[i] + b[i];
    }
}
"""

SPEC = """\
entry = "add"
dialect = "cuda"
[sizes]
n = 1000
[[args]]
name = "a"
dtype = "float32"
shape = ["n"]
role = "in"
[[args]]
name = "b"
dtype = "float32"
shape = ["n"]
role = "in"
[[args]]
name = "c"
dtype = "float32"
shape = ["n"]
role = "out"
[[args]]
name = "n"
dtype = "int32"
role = "scalar"
value = "n"
[launch]
grid = ["GRID", 1, 1]
block = [256, 1, 1]
"""


def _mutant(tmp_path, mid, grid, mutated_step, text=KERNEL):
    d = tmp_path / mid
    d.mkdir()
    (d / "add.cu").write_text(text)
    (d / "add.cu.toml").write_text(SPEC.replace("GRID", grid))
    mut = text.replace("i += gridDim.x * blockDim.x", f"i += {mutated_step}")
    assert mut != text
    return {"id": mid, "kind": "wrong stride", "dialect": "cuda", "what": "loop step at line 2", "text": mut,
            "output": str(d / "add.cu"), "spec": str(d / "add.cu.toml")}


def test_grid_stride_step_proven_under_a_covering_grid_is_discarded(tmp_path):
    rm = _bench()
    proven = _mutant(tmp_path, "p-cuda-wrong_stride-0", "(n + 255) / 256", "gridDim.x * blockDim.x + 1")
    capped = _mutant(tmp_path, "q-cuda-wrong_stride-0", "min((n + 255) / 256, 4)", "gridDim.x * blockDim.x + 1")
    kept, gone = rm.split_equivalent([proven, capped])
    assert [g["id"] for g in gone] == [proven["id"]]
    assert gone[0]["proof"]["kind"] == "Z3 (grid-stride)" and "Z3 unsat" in gone[0]["proof"]["proof"]
    assert [k["id"] for k in kept] == [capped["id"]]     # a capped grid: threads loop, steps differ


def test_claims_on_file_count_only_when_checked_and_tied_to_the_text(tmp_path, monkeypatch):
    rm = _bench()
    import uncaught_mutants as UM
    m = _mutant(tmp_path, "e-cuda-wrong_stride-0", "min((n + 255) / 256, 4)", "gridDim.x * blockDim.x + 1")
    # a true claim whose expressions are not in the texts: stale, not a proof of this mutant
    monkeypatch.setitem(UM.EXPR_PROOFS, m["id"], ("n > 0", "n >= 0", {}, ("n",)))
    assert rm.equivalence_proof(m) is None
    # a false claim tied to the text: Z3 finds the difference, not discarded
    monkeypatch.setitem(UM.EXPR_PROOFS, m["id"], ("i < n", "i <= n", {}, ("i", "n")))
    m2 = dict(m, text=m["text"].replace("i < n", "i <= n"))
    assert rm.equivalence_proof(m2) is None
    # a true claim tied to the text
    tied = dict(m, text=m["text"] + "// n > 0 as n >= 0\n")
    (Path(m["output"])).write_text(KERNEL + "// n > 0 as n > 0\n")
    monkeypatch.setitem(UM.EXPR_PROOFS, m["id"], ("n > 0", "n >= 0", {}, ("n",)))
    pr = rm.equivalence_proof(tied)
    assert pr and pr["kind"] == "Z3 (expression)"


def test_guarded_constant_loop_enumeration():
    import uncaught_mutants as UM
    halves = (128, 64, 32, 16, 8, 4, 2, 1)
    # tid < 256 -> tid < 255 under `if (tid < half)`: tid 255 never passes the guard
    assert UM.guarded_range_check(halves, 0, 256, 255, 1, 1)
    # tid < 128 -> tid < 127: tid 127 passes the guard when half = 128
    assert UM.guarded_range_check(halves, 0, 128, 127, 1, 1) is None
    # a step of 2 skips odd tids below half
    assert UM.guarded_range_check(halves, 0, 256, 256, 1, 2) is None
    assert "softmax.cu-c-off-by-one_bound-0" in UM.GUARDED_RANGE_PROOFS
