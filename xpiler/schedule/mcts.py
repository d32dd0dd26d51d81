"""Monte Carlo tree search over steps (UCT with progressive widening).

States are programs; an edge is a :class:`~xpiler.schedule.step.Step` legal on its program. The
tree is a transposition graph: a ``networkx.DiGraph`` keyed by program hash, so two step orders
that print the same program share one node, its statistics and its single evaluation.

One iteration:

1. **select**: from the root, while the node has as many children as progressive widening
   allows (``ceil(widen_k * visits ** widen_alpha)``) or no untried step left, go to the child
   with the best UCT score ``mean + c * sqrt(ln(parent visits) / child visits)``;
2. **expand**: take the node's next untried step (the steps are shuffled once per node by the
   seeded generator), apply it; a step the pass refuses is dropped; a program seen before is
   linked, not evaluated again;
3. **evaluate**: reward 0 unless the program verifies, else its speed-up over the root
   (``root latency / latency``, capped at :data:`REWARD_CAP` and scaled to [0, 1]); a program
   whose verdict is a screening test's (``Evaluation.tier == "screen"``: one instance, one seed)
   earns its reward but never becomes the best: only a fully tested one does;
4. **backpropagate** the reward along the path taken.

It stops at the time budget (seconds, a wall-clock cap: no round starts with less left than the
shortest round so far took, nor less than ``min_round_s``; an evaluation the caller reports as cut
by the budget, ``Evaluation.cut``, is no node of the tree and ends the search), at ``max_evals``
evaluations, when the
best latency has not improved for ``patience`` evaluations, or when every node within
``max_depth`` steps has been expanded. The same seed, the same evaluator answers and the same
candidate lists give the same search. :meth:`MCTS.rounds` is the search as a generator (it
yields each round's new programs and takes their evaluations back), which is how the tuner's
strategy (``MCTSStrategy``, tune.py) puts it behind the driver loop; :meth:`MCTS.search` runs it
with an evaluator of its own.
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Callable

import networkx as nx

REWARD_CAP = 8.0


@dataclass
class SearchResult:
    best_hash: str
    best_path: list                 # the steps from the root to the best program
    best_ms: float | None
    root_ms: float | None
    evaluations: int
    iterations: int
    stopped: str                    # why the search ended
    curve: list = field(default_factory=list)   # (evaluations, best latency so far) after each improvement
    graph: nx.DiGraph | None = None

    @property
    def speedup(self) -> float:
        if not self.best_ms or not self.root_ms:
            return 1.0
        return self.root_ms / self.best_ms


class MCTS:
    def __init__(self, *, expand: Callable, apply: Callable, key: Callable, evaluate: Callable | None = None,
                 evaluate_many: Callable | None = None, seed: int = 0, c: float = 1.0, widen_k: float = 1.0,
                 widen_alpha: float = 0.5, max_depth: int = 4, patience: int = 40, on_event: Callable | None = None,
                 prior: Callable | None = None, route: Callable | None = None):
        self.expand_fn, self.apply_fn, self.key = expand, apply, key
        # prior(state) -> a latency estimate (ms) or None: untried steps are expanded best first
        self.prior = prior
        # route(step) -> a label: steps of different routes are taken in turn (each route's best
        # rated first), so that a route the prior rates poorly is still measured early
        self.route = route
        self.applied: dict[tuple, object] = {}      # (node, step key) -> the program the step made
        # for search(); a caller of rounds() evaluates the programs itself (the tuner's strategy)
        self.eval_many_fn = evaluate_many or (lambda states: [evaluate(st) for st in states])
        self.rng = random.Random(seed)
        self.c, self.widen_k, self.widen_alpha = c, widen_k, widen_alpha
        self.max_depth, self.patience = max_depth, patience
        self.on_event = on_event or (lambda **kw: None)
        self.g = nx.DiGraph()
        self.states: dict[str, object] = {}
        self.untried: dict[str, list] = {}
        self.parent: dict[str, tuple] = {}   # first discovery: hash -> (parent hash, step)

    # -- the tree ---------------------------------------------------------------------------
    def _add(self, state, depth: int, ev) -> str:
        h = self.key(state)
        self.states[h] = state
        lat = ev.latency_ms if ev.verified else None
        self.g.add_node(h, visits=0, value=0.0, depth=depth, verified=ev.verified, latency_ms=lat)
        return h

    def _steps(self, h: str) -> list:
        if h not in self.untried:
            if self.g.nodes[h]["depth"] >= self.max_depth or not self.g.nodes[h]["verified"]:
                self.untried[h] = []   # a failing program is a dead end: nothing is built on it
            else:
                steps = sorted(self.expand_fn(self.states[h]), key=lambda s: s.key)
                self.rng.shuffle(steps)
                if self.prior is not None:
                    steps = self._by_prior(h, steps)
                self.untried[h] = steps
        return self.untried[h]

    def _by_prior(self, h: str, steps: list) -> list:
        """``steps`` ordered so that ``pop()`` takes the one whose program the prior rates fastest
        (a step the pass refuses, or the prior cannot rate, comes last; ties keep the shuffled
        order). The programs are kept for the walk that expands them."""
        rated = []
        for i, step in enumerate(steps):
            state = self.apply_fn(self.states[h], step)
            self.applied[(h, step.key)] = state
            est = None
            if state is not None:
                try:
                    est = self.prior(state)
                except Exception:   # a prior is advice: a failure only loses the ordering
                    est = None
            rated.append((math.inf if est is None else est, -i, step))
        rated.sort(key=lambda t: (t[0], t[1]))
        order = [st for _, _, st in rated]          # best first
        if self.route is not None:
            # the prior compares programs of one route; across routes (a BANG kernel re-launched
            # with more tasks reads as another program to the model) the best of each is tried in
            # turn, the routes in the order of their best step
            groups: dict = {}
            for st in order:
                groups.setdefault(self.route(st), []).append(st)
            order = [g[i] for i in range(max(map(len, groups.values()), default=0))
                     for g in groups.values() if i < len(g)]
        return order[::-1]                          # pop() takes from the end

    def _allowed(self, h: str) -> int:
        return max(1, math.ceil(self.widen_k * max(1, self.g.nodes[h]["visits"]) ** self.widen_alpha))

    def _uct(self, parent: str, child: str) -> float:
        n = self.g.nodes[child]
        if n["visits"] == 0:
            return float("inf")
        mean = n["value"] / n["visits"]
        return mean + self.c * math.sqrt(math.log(max(1, self.g.nodes[parent]["visits"])) / n["visits"])

    def _reward(self, h: str, root_ms: float | None) -> float:
        n = self.g.nodes[h]
        if not n["verified"] or not n["latency_ms"] or not root_ms:
            return 0.0
        return min(REWARD_CAP, root_ms / n["latency_ms"]) / REWARD_CAP

    # -- the search -------------------------------------------------------------------------
    def _select(self, rh: str, pending: dict, pend_children: dict):
        """One walk from the root: ``("new", path, parent, step, state, hash)`` for a program to
        evaluate, or ``("old", path)`` when the walk ended on a known program."""
        path, h = [rh], rh
        while True:
            steps = self._steps(h)
            kids = list(self.g.successors(h))
            if steps and len(kids) + pend_children.get(h, 0) < self._allowed(h):
                step = steps.pop()
                state = self.applied.pop((h, step.key)) if (h, step.key) in self.applied else \
                    self.apply_fn(self.states[h], step)
                if state is None:
                    continue                      # refused by the pass: try the next step
                ch = self.key(state)
                if ch == h or ch in pending:
                    continue                      # changed nothing / already being evaluated
                if ch in self.g:                  # a transposition: link it, do not evaluate again
                    if not self.g.has_edge(h, ch) and not nx.has_path(self.g, ch, h):
                        self.g.add_edge(h, ch, step=step.describe())
                    return ("old", path + [ch])
                return ("new", path + [ch], h, step, state, ch)
            if not kids:
                return ("old", path)              # a leaf with nothing left to try
            h = max(sorted(kids), key=lambda k: self._uct(path[-1], k))
            path.append(h)

    def search(self, root, root_eval, *, budget_s: float, max_evals: int, batch: int = 1,
               min_round_s: float = 0.0) -> SearchResult:
        """The whole search with this object's own evaluator (``evaluate`` / ``evaluate_many``);
        :meth:`rounds` is the same search for a caller that evaluates the programs itself."""
        from .strategy import answer_all
        return answer_all(self.rounds(root, root_eval, budget_s=budget_s, max_evals=max_evals, batch=batch,
                                      min_round_s=min_round_s),
                          lambda todo: self.eval_many_fn([state for _, _, state in todo]))

    def rounds(self, root, root_eval, *, budget_s: float, max_evals: int, batch: int = 1,
               min_round_s: float = 0.0):
        """The search as a generator: each round yields the new programs of its walks as
        ``(parent key, step, program)`` and takes their :class:`Evaluation` back, in that order;
        it returns the :class:`SearchResult`.

        ``batch``: walks per round; their new programs are evaluated together (in parallel when
        the evaluator has a pool). Nodes on a walk count its visit at once (a virtual loss), so the
        walks of one round spread over the tree; with ``batch=1`` this is plain sequential UCT.
        ``budget_s`` is a wall-clock cap: no round starts with less of it left than
        ``max(min_round_s, the shortest round with new programs so far)`` (such a round would be
        cut before it ends); the caller cuts a round that runs into it (its evaluations come back
        with ``cut``: they are dropped, not counted, and the search stops)."""
        t_end = time.monotonic() + budget_s
        shortest = None         # the shortest round with new programs so far (seconds)
        rh = self._add(root, 0, root_eval)
        root_ms = root_eval.latency_ms
        best_h, best_ms = rh, root_ms
        curve = [(0, root_ms)]
        evals = iters = since_best = 0
        stopped = "budget"
        while True:
            if time.monotonic() + max(min_round_s, shortest or 0.0) >= t_end:
                stopped = "time budget"
                break
            if evals >= max_evals:
                stopped = "evaluation budget"
                break
            if since_best >= self.patience:
                stopped = f"no improvement in {self.patience} evaluations"
                break
            iters += 1
            walks, pending, pend_children = [], {}, {}
            for _ in range(max(1, min(batch, max_evals - evals))):
                w = self._select(rh, pending, pend_children)
                for n in w[1]:
                    if n in self.g:
                        self.g.nodes[n]["visits"] += 1     # counted now: the next walk goes elsewhere
                if w[0] == "new":
                    pending[w[5]] = w
                    pend_children[w[2]] = pend_children.get(w[2], 0) + 1
                walks.append(w)
            new = [w for w in walks if w[0] == "new"]
            t_round = time.monotonic()
            results = (yield [(w[2], w[3], w[4]) for w in new]) if new else []
            if new:
                took = time.monotonic() - t_round
                shortest = took if shortest is None else min(shortest, took)
            cut = False
            for w, ev in zip(new, results):
                _, path, h, step, state, ch = w
                if getattr(ev, "cut", False):
                    # the budget ended its evaluation: no node, no reward, not a failure; the walk
                    # counts up to its parent only
                    cut = True
                    w[1].pop()
                    self.on_event(kind="not_evaluated", node=ch, parent=h, step=step, evaluation=ev, evals=evals)
                    continue
                evals += 1
                since_best += 1
                self._add(state, self.g.nodes[h]["depth"] + 1, ev)
                self.g.nodes[ch]["visits"] += 1
                self.parent[ch] = (h, step)
                if not nx.has_path(self.g, ch, h):
                    self.g.add_edge(h, ch, step=step.describe())
                self.on_event(kind="evaluate", node=ch, parent=h, step=step, evaluation=ev, evals=evals)
                # only a fully tested program becomes the best (a screened one earns its reward only)
                if ev.verified and ev.latency_ms is not None and getattr(ev, "tier", "full") == "full" \
                        and (best_ms is None or ev.latency_ms < best_ms):
                    best_h, best_ms, since_best = ch, ev.latency_ms, 0
                    curve.append((evals, best_ms))
            for w in walks:
                r = self._reward(w[1][-1], root_ms)
                for n in w[1]:
                    self.g.nodes[n]["value"] += r
            if cut:
                stopped = "time budget"
                break
            if not new and self._exhausted(rh):
                stopped = "search space exhausted"
                break
        return SearchResult(best_h, self._path_to(best_h), best_ms, root_ms, evals, iters, stopped, curve, self.g)

    def _exhausted(self, rh: str) -> bool:
        """True when no node reachable from the root has an untried step."""
        for h in nx.descendants(self.g, rh) | {rh}:
            if self._steps(h):
                return False
        return True

    def _path_to(self, h: str) -> list:
        steps = []
        while h in self.parent:
            h, step = self.parent[h]
            steps.append(step)
        return steps[::-1]
