"""The cost model: gradient-boosted regression trees on loop features, in NumPy.

Why not xgboost (AutoTVM's choice): it is a large native dependency for a model that sees a
few hundred samples of a few dozen features, where exact greedy splits in NumPy take
milliseconds. The model predicts a candidate's relative speed (the best cost seen divided by
its cost, so 1 is the best and a failure 0) and is used only to rank proposals: the search
measures what it ranks highest, so only the order matters.
"""

from __future__ import annotations

import numpy as np


class _Tree:
    """A regression tree of limited depth, fitted to residuals by exact greedy variance splits."""

    def __init__(self, depth: int, min_leaf: int):
        self.depth, self.min_leaf = depth, min_leaf
        # nodes: (feature, threshold, left, right) for splits, (-1, value, -1, -1) for leaves
        self.nodes: list[tuple[int, float, int, int]] = []

    def fit(self, x: np.ndarray, g: np.ndarray) -> _Tree:
        self.nodes = []
        self._grow(x, g, np.arange(len(g)), 0)
        return self

    def _grow(self, x: np.ndarray, g: np.ndarray, rows: np.ndarray, level: int) -> int:
        node = len(self.nodes)
        self.nodes.append((-1, float(g[rows].mean()), -1, -1))
        if level >= self.depth or len(rows) < 2 * self.min_leaf:
            return node
        split = _best_split(x[rows], g[rows], self.min_leaf)
        if split is None:
            return node
        feat, thr = split
        go_left = x[rows, feat] <= thr
        left = self._grow(x, g, rows[go_left], level + 1)
        right = self._grow(x, g, rows[~go_left], level + 1)
        self.nodes[node] = (feat, thr, left, right)
        return node

    def predict(self, x: np.ndarray) -> np.ndarray:
        out = np.empty(len(x))
        for i, row in enumerate(x):
            n = 0
            while self.nodes[n][0] >= 0:
                feat, thr, left, right = self.nodes[n]
                n = left if row[feat] <= thr else right
            out[i] = self.nodes[n][1]
        return out


def _best_split(x: np.ndarray, g: np.ndarray, min_leaf: int) -> tuple[int, float] | None:
    """The feature and threshold that most reduce the squared error (None: no split helps)."""
    n = len(g)
    total, best, found = g.sum(), 1e-12, None
    for feat in range(x.shape[1]):
        order = np.argsort(x[:, feat], kind="stable")
        xs, gs = x[order, feat], g[order]
        csum = np.cumsum(gs)[:-1]
        k = np.arange(1, n)
        ok = (xs[1:] != xs[:-1]) & (k >= min_leaf) & (n - k >= min_leaf)
        if not ok.any():
            continue
        # the gain of a split, up to a constant: sum_l^2/n_l + sum_r^2/n_r
        gain = csum ** 2 / k + (total - csum) ** 2 / (n - k) - total ** 2 / n
        gain = np.where(ok, gain, -np.inf)
        j = int(np.argmax(gain))
        if gain[j] > best:
            best, found = float(gain[j]), (feat, float((xs[j] + xs[j + 1]) / 2))
    return found


class GBTModel:
    """``fit(features, costs)`` then ``predict(features)``: higher means faster."""

    def __init__(self, n_trees: int = 40, depth: int = 4, rate: float = 0.25, min_leaf: int = 2, seed: int = 0):
        self.n_trees, self.depth, self.rate, self.min_leaf = n_trees, depth, rate, min_leaf
        self.rng = np.random.default_rng(seed)
        self.trees: list[_Tree] = []
        self.base = 0.0

    @staticmethod
    def targets(costs) -> np.ndarray:
        """Relative speed: the best finite cost over each cost (failures, inf, give 0)."""
        c = np.asarray(costs, dtype=float)
        finite = np.isfinite(c) & (c > 0)
        if not finite.any():
            return np.zeros(len(c))
        return np.where(finite, c[finite].min() / np.where(finite, c, 1.0), 0.0)

    def fit(self, features, costs) -> GBTModel:
        x = np.asarray(features, dtype=float)
        y = self.targets(costs)
        self.base = float(y.mean()) if len(y) else 0.0
        pred = np.full(len(y), self.base)
        self.trees = []
        for _ in range(self.n_trees if len(y) >= 2 * self.min_leaf else 0):
            rows = self.rng.random(len(y)) < 0.8  # row subsampling: a little less overfitting on few samples
            if rows.sum() < 2 * self.min_leaf:
                rows[:] = True
            tree = _Tree(self.depth, self.min_leaf).fit(x[rows], (y - pred)[rows])
            pred += self.rate * tree.predict(x)
            self.trees.append(tree)
        return self

    def predict(self, features) -> np.ndarray:
        x = np.asarray(features, dtype=float)
        out = np.full(len(x), self.base)
        for tree in self.trees:
            out += self.rate * tree.predict(x)
        return out

    @property
    def trained(self) -> bool:
        return bool(self.trees)
