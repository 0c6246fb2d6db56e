"""The cost model learns, the features see the schedule, and the guided search proposes
configs it has not measured."""

from __future__ import annotations

import io

import numpy as np
from kernels import matmul

import tessel
from tessel.tune import GBTModel, ModelTuner, Task
from tessel.tune.features import FEATURE_LENGTH, loop_features


def _rank_correlation(a, b) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def test_the_model_learns_a_synthetic_cost_better_than_chance():
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 4, size=(240, 8))
    cost = 1 + (x[:, 0] - 2) ** 2 + np.abs(x[:, 3] - 1) + 0.5 * x[:, 5] * (x[:, 6] > 2)
    model = GBTModel(seed=1).fit(x[:160], cost[:160])
    held_out = _rank_correlation(model.predict(x[160:]), -cost[160:])  # higher prediction = faster
    assert held_out > 0.6
    # and it is the data that teaches it: shuffled costs teach nothing of the kind
    shuffled = GBTModel(seed=1).fit(x[:160], rng.permutation(cost[:160]))
    assert abs(_rank_correlation(shuffled.predict(x[160:]), -cost[160:])) < held_out - 0.3


def test_failures_are_the_slowest_targets():
    y = GBTModel.targets([2.0, float("inf"), 1.0, 4.0])
    assert list(y) == [0.5, 0.0, 1.0, 0.25]


def test_loop_features_see_vector_loops_and_their_width():
    task = Task(matmul, (16, 8, 32))
    plain_cfg = task.config(0)
    vec_index = next(i for i in range(len(task.config_space))
                     if task.config(i)["vec"].val == 1 and task.config(i)["tile_x"].size[1] == 8)
    feats = []
    for cfg in (plain_cfg, task.config(vec_index)):
        s, args = task.instantiate(cfg)
        feats.append(loop_features(tessel.lower(s, args), task.flop))
    assert all(len(f) == FEATURE_LENGTH for f in feats)
    vec_count = 9 + 2 * 2  # serial, parallel come first; then the count of vectorized loops
    assert feats[0][vec_count] == 0 and feats[1][vec_count] >= 1
    assert feats[1][vec_count + 1] == np.log2(8 + 1)  # 8 lanes


def test_the_guided_search_measures_new_configs_only():
    task = Task(matmul, (12, 8, 16))
    tuner = ModelTuner(task, batch_size=4, seed=3)
    tuner.tune(8, {"n_parallel": 2}, progress=io.StringIO())
    indices = [r.config.index for r in tuner.results]
    assert len(indices) == 8 == len(set(indices))
    assert tuner.knob_model.trained and tuner.loop_model.trained
    assert all(r.ok for r in tuner.results) and tuner.best_cost == min(r.cost for r in tuner.results)
