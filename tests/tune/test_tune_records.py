"""Tuning records: they round-trip, a torn line is skipped, a rerun resumes, and
apply_history_best builds a template with the recorded best."""

from __future__ import annotations

import io
import json

import numpy as np
from helpers import rand
from kernels import matmul

import tessel
from tessel.tune import (
    ApplyHistoryBest,
    ConfigEntity,
    Record,
    Task,
    apply_history_best,
    get_config,
    load,
    template,
    tune,
)
from tessel.tune import records as R


def test_records_round_trip_and_a_torn_line_is_skipped(tmp_path):
    task = Task(matmul, (8, 4, 8))
    recs = [Record(task.workload, task.target_key, task.config(i), [1e-3 * (i + 1)], None, None, 5.0)
            for i in (3, 11)]
    recs.append(Record(task.workload, task.target_key, task.config(2), [], "boom", "build", 6.0))
    log = tmp_path / "r.log"
    R.append(log, recs)
    with open(log, "a") as f:
        f.write('{"workload": "half a line')  # a crash in the middle of a write
    back = list(load(log))
    assert [(r.config, r.costs, r.error, r.kind) for r in back] == [(r.config, r.costs, r.error, r.kind) for r in recs]
    assert R.best(back, task.workload).config == task.config(3)
    assert all(json.loads(line)["version"] == 1 for line in log.read_text().splitlines()[:3])


def test_a_rerun_with_the_same_log_skips_what_was_measured(tmp_path):
    log = tmp_path / "m.log"
    first = tune(matmul, (8, 6, 8), trials=3, tuner="random", log=log, progress=False, seed=1)
    assert first.trials == 3 and len(first.records) == 3
    second = tune(matmul, (8, 6, 8), trials=5, tuner="random", log=log, progress=False, seed=1)
    assert second.trials == 5 and len(second.records) == 2
    before = {r.config.index for r in first.records}
    assert not before & {r.config.index for r in second.records}
    assert len(list(load(log))) == 5
    # the best of the whole job, resumed part included
    assert second.cost <= first.cost


@template("tests/records/scale")
def scale(n: int):
    cfg = get_config()
    cfg.define_knob("factor", [2, 4, 8])
    A = tessel.te.placeholder((n,), name="A")
    B = tessel.te.compute((n,), lambda i: A[i] * 3.0, name="B")
    s = tessel.te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=cfg["factor"].val)
    return s, [A, B]


def test_apply_history_best_builds_with_the_recorded_best(tmp_path):
    task = Task("tests/records/scale", (20,))
    costs = {0: 3e-3, 1: 1e-3, 2: 2e-3}
    log = tmp_path / "h.log"
    R.append(log, [Record(task.workload, task.target_key, task.config(i), [c]) for i, c in costs.items()])
    R.append(log, [Record(task.workload, task.target_key, task.config(2), [], "failed", "run")])
    with apply_history_best(str(log)) as history:
        assert isinstance(history, ApplyHistoryBest)
        s, args = scale(20)
    assert s[args[1]].relations[-1].factor.value == 4  # factor 4: the cheapest record
    s, args = scale(20)  # outside: the fallback (the first value)
    assert s[args[1]].relations[-1].factor.value == 2
    a, out = rand(20), np.zeros(20, "float32")
    tessel.build(s, args, target="c")(a, out)
    np.testing.assert_allclose(out, a * 3.0, rtol=1e-6)


def test_tune_returns_a_schedule_that_computes_the_product():
    result = tune(matmul, (10, 6, 12), trials=4, tuner="grid", progress=io.StringIO())
    assert isinstance(result.config, ConfigEntity) and np.isfinite(result.cost) and result.gflops > 0
    a, b, out = rand(10, 6), rand(6, 12, seed=4), np.zeros((10, 12), "float32")
    result.build()(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4)
