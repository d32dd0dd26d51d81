"""The schedule layer's search pieces on their own: MCTS on a toy space (determinism, budgets,
transpositions, failing programs as dead ends), the step's JSON form, the cost model's order."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from xpiler.schedule.evaluator import Evaluation
from xpiler.schedule.mcts import MCTS
from xpiler.schedule.step import Step


@dataclass(frozen=True)
class Toy:
    """A state: a tuple of small ints; its 'latency' is a function of the tuple."""
    xs: tuple

    @property
    def hash(self):
        return ",".join(map(str, sorted(self.xs)))   # order-insensitive: two orders, one program


def toy_search(seed=0, max_evals=200, fail=lambda s: False, depth=3, patience=1000):
    calls = []

    def expand(s):
        return [Step("split", {"factor": f}) for f in (1, 2, 3, 4, 5) if f not in s.xs]

    def apply(s, step):
        return Toy(s.xs + (step.params["factor"],))

    def evaluate(s):
        calls.append(s.hash)
        if fail(s):
            return Evaluation(s.hash, False, why="wrong")
        # the best program is {2, 4, 5}: latency 100 - 10 * (2 in xs) - 20 * (4 in xs) - 30 * (5 in xs) ...
        lat = 100.0 - sum({2: 10, 4: 20, 5: 30}.get(x, -5) for x in s.xs)
        return Evaluation(s.hash, True, lat, "model:analytic")

    m = MCTS(expand=expand, apply=apply, evaluate=evaluate, key=lambda s: s.hash, seed=seed, max_depth=depth,
             patience=patience)
    root = Toy(())
    res = m.search(root, Evaluation(root.hash, True, 100.0, "model:analytic"), budget_s=60, max_evals=max_evals)
    return res, calls


def test_mcts_finds_the_best_program_of_a_small_space_and_evaluates_each_program_once():
    res, calls = toy_search()
    assert res.best_ms == 40.0                        # {2, 4, 5}
    assert sorted(s.params["factor"] for s in res.best_path) == [2, 4, 5]
    assert len(calls) == len(set(calls)), "a program reached by two step orders is evaluated once"
    # 1 + 5 + 10 + 10 programs of at most 3 of 5 factors (order-free); the root is not re-evaluated
    assert res.evaluations == len(calls) <= 25
    assert res.stopped == "search space exhausted"
    assert res.speedup == pytest.approx(2.5)
    assert res.curve[0] == (0, 100.0) and res.curve[-1][1] == 40.0


def test_mcts_is_deterministic_for_a_seed_and_honours_max_evals():
    a, ca = toy_search(seed=3, max_evals=7)
    b, cb = toy_search(seed=3, max_evals=7)
    assert ca == cb and a.best_hash == b.best_hash
    assert a.evaluations == 7 and a.stopped == "evaluation budget"


def test_a_program_that_fails_its_tests_is_never_built_on_nor_chosen():
    res, calls = toy_search(fail=lambda s: 5 in s.xs)
    g = res.graph
    failing = [h for h in g if not g.nodes[h]["verified"]]
    assert failing, "programs holding 5 were tried"
    assert all(g.out_degree(h) == 0 for h in failing), "nothing is built on a failing program"
    assert 5 not in [s.params["factor"] for s in res.best_path]
    assert res.best_ms == 70.0                        # {2, 4}: the best among the passing programs


def test_step_json_round_trip_and_description():
    s = Step("split", {"entry": "k", "loop": "i", "factor": 8}, "search", "aa", "bb")
    assert Step.from_json(s.to_json()) == s
    assert s.describe() == "split(entry=k, factor=8, loop=i)"
    assert s.key == Step("split", {"factor": 8, "loop": "i", "entry": "k"}).key


def test_cost_model_orders_work_and_parallelism():
    from xpiler.frontend import parse_text
    from xpiler.schedule.cost import estimate
    src = """
void k(const float *x, float *y, int n) {
    for (int i = 0; i < n; ++i) y[i] = x[i] * 2.0f;
}
void k2(const float *x, float *y, int n) {
    for (int r = 0; r < 4; ++r)
        for (int i = 0; i < n; ++i) y[i] = x[i] * 2.0f + y[i];
}
void kp(const float *x, float *y, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; ++i) y[i] = x[i] * 2.0f;
}
"""
    p = parse_text(src, "c", "<t>")
    a = estimate(p, "k", "c", {"n": 1 << 20})
    b = estimate(p, "k2", "c", {"n": 1 << 20})
    c = estimate(p, "kp", "c", {"n": 1 << 20})
    assert a.global_bytes == 8 * (1 << 20)
    assert b.ms > a.ms > c.ms
    assert estimate(p, "k", "c", {"n": 1 << 22}).ms > a.ms


def test_cost_model_spreads_a_bound_loop_over_the_launch_once():
    # binding's IR marks the loop bound ('global.x'); the launch's threads already count the copies
    from xpiler.frontend import parse_text
    from xpiler.passes import binding
    from xpiler.schedule.cost import estimate, launch_env
    p = parse_text("void k(const float *x, float *y, int n) {\n    for (int i = 0; i < n; ++i) y[i] = x[i] + 1.0f;\n}\n",
                   "c", "<t>")
    bound, launch = binding.apply(p, entry="k", target="cuda", block=256)
    n = 1 << 20
    est = estimate(bound, "k", "cuda", {"n": n}, threads=(n // 256) * 256, env=launch_env((n // 256, 1, 1), (256, 1, 1)))
    assert est.global_bytes == 8 * n and est.ops >= n


def test_cost_model_takes_only_the_branch_a_size_test_picks():
    # a kernel that picks its form by a size parameter (row kernels: ``if (cols <= 1024)`` registers,
    # else the general loop) runs one branch; a test of anything else (an element, a loop
    # variable, a parameter the body assigns) still counts both
    from xpiler.frontend import parse_text
    from xpiler.schedule.cost import estimate
    src = """
void k(const float *x, float *y, int n, int cols) {
    if (cols <= 1024) {
        for (int i = 0; i < n; ++i) y[i] = x[i];
    } else {
        for (int r = 0; r < 4; ++r)
            for (int i = 0; i < n; ++i) y[i] = x[i] + y[i];
    }
}
void e(const float *x, float *y, int n, int cols) {
    for (int i = 0; i < n; ++i) {
        if (x[i] > 0.0f) y[i] = x[i]; else y[i] = 0.0f;
    }
}
void a(const float *x, float *y, int n, int cols) {
    cols = cols + n;
    if (cols <= 1024) {
        for (int i = 0; i < n; ++i) y[i] = x[i];
    } else {
        for (int i = 0; i < n; ++i) y[i] = x[i] + y[i];
    }
}
"""
    p = parse_text(src, "c", "<t>")
    n = 1 << 20
    small = estimate(p, "k", "c", {"n": n, "cols": 1024})
    large = estimate(p, "k", "c", {"n": n, "cols": 4096})
    assert small.global_bytes == 8 * n                      # the copy only
    assert large.global_bytes == 4 * 12 * n                 # the 4 passes only (x, y read, y written)
    assert estimate(p, "e", "c", {"n": n, "cols": 1}).global_bytes == 4 * 4 * n   # x read twice, y written twice
    assert estimate(p, "a", "c", {"n": n, "cols": 1}).global_bytes == 4 * 5 * n    # both branches
