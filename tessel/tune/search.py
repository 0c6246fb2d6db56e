"""The model-guided search (:class:`ModelTuner`, AutoTVM's ``XGBTuner`` under its own name).

Each batch: simulated annealing over the knob indices, scored by a small model on the knob
values (cheap: thousands of points per batch), keeps the best unvisited points it passes;
those are lowered (in forked children, in parallel) and ranked by the main model on their
loop features; the batch is the top of that ranking plus an epsilon of random configs.
Until enough measurements exist to train on, batches are random.
"""

from __future__ import annotations

import math

import numpy as np

from .measure import MeasureResult, build_all
from .model import GBTModel
from .tuner import Tuner


class ModelTuner(Tuner):
    def __init__(self, task, seed: int = 0, batch_size: int = 8, epsilon: float = 0.1, walkers: int = 24,
                 steps: int = 40, pool_factor: int = 2, n_parallel: int | None = None):
        super().__init__(task, seed=seed, batch_size=batch_size)
        self.epsilon, self.walkers, self.steps, self.pool_factor = epsilon, walkers, steps, pool_factor
        self.n_parallel = n_parallel or 2
        self.knob_model = GBTModel(n_trees=25, seed=seed)
        self.loop_model = GBTModel(n_trees=30, seed=seed)
        self._ranked: dict[int, list[float]] = {}

    @property
    def known_features(self) -> dict[int, list[float]]:
        return self._ranked

    def update(self, results: list[MeasureResult]) -> None:
        super().update(results)
        with_feats = [r for r in self.results if r.features is not None]
        costs = [r.cost for r in self.results]
        if len(self.results) >= 4 and any(r.ok for r in self.results):
            self.knob_model.fit([r.config.get_flatten_feature() for r in self.results], costs)
        if len(with_feats) >= 4 and any(r.ok for r in with_feats):
            self.loop_model.fit([r.features for r in with_feats], [r.cost for r in with_feats])

    def next_batch(self, n: int) -> list[int]:
        if not self.knob_model.trained or not self.loop_model.trained:
            return self._random_unvisited(n, set())
        n_random = min(n, max(1, round(self.epsilon * n))) if n > 1 else 0
        pool = self._anneal(self.pool_factor * (n - n_random))
        ranked = self._rank(pool)
        chosen = ranked[: n - n_random]
        return chosen + self._random_unvisited(n - len(chosen), set(chosen))

    def _score(self, points: list[int]) -> np.ndarray:
        return self.knob_model.predict([self.space.get(i).get_flatten_feature() for i in points])

    def _starts(self) -> list[int]:
        good = sorted((r for r in self.results if r.ok), key=lambda r: r.cost)[: self.walkers // 2]
        starts = [r.config.index for r in good]
        return starts + [int(self.rng.integers(len(self.space))) for _ in range(self.walkers - len(starts))]

    def _anneal(self, keep: int) -> list[int]:
        """The ``keep`` best-scored unvisited points simulated annealing passes through."""
        dims = self.space.dims
        points = self._starts()
        scores = self._score(points)
        seen: dict[int, float] = {}
        for step in range(self.steps):
            temp = max(1e-3, 1.0 - step / self.steps) * 0.1
            moved = [self._neighbour(p, dims) for p in points]
            new = self._score(moved)
            accept = (new >= scores) | (self.rng.random(len(new)) < np.exp(np.minimum(new - scores, 0.0) / temp))
            for k in np.flatnonzero(accept):
                points[k], scores[k] = moved[k], new[k]
            for p, sc in zip(moved, new, strict=True):
                if p not in self.visited and self.space.is_index_valid(p):
                    seen[p] = float(sc)
        best = sorted(seen, key=lambda p: -seen[p])
        return best[:keep]

    def _neighbour(self, point: int, dims: list[int]) -> int:
        knobs = self.space.point2knob(point)
        movable = [d for d, size in enumerate(dims) if size > 1]
        if not movable:
            return point
        d = movable[int(self.rng.integers(len(movable)))]
        knobs[d] = int(self.rng.integers(dims[d]))
        return self.space.knob2point(knobs)

    def _rank(self, pool: list[int]) -> list[int]:
        """``pool`` best first by the loop-feature model (lowered in forked children)."""
        if not pool:
            return []
        answers = build_all(self.task, [self.space.get(i) for i in pool], self.n_parallel, 30.0, "features",
                            deadline=self.deadline)
        scored = []
        self._ranked = {}
        for i, a in zip(pool, answers, strict=True):
            if "features" in a:
                self._ranked[i] = a["features"]
                scored.append((float(self.loop_model.predict([a["features"]])[0]), i))
            else:
                scored.append((-math.inf, i))  # it does not even lower: measured last, if at all
        return [i for _, i in sorted(scored, key=lambda t: -t[0])]
