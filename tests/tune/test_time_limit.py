"""A wall-clock limit on tuning and on ``tessel.auto_schedule``: the search stops when it
passes and keeps the best so far (the rules' schedule at the least), the candidates it cut off
are neither counted nor recorded, and a limit that is not a positive number is refused by
name. Nothing here asserts how long anything took."""

from __future__ import annotations

import io
import math
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import TARGETS, check
from kernels import MODES

import tessel
from tessel import te
from tessel.autosched import auto_schedule_result
from tessel.errors import ArgumentError, TuneError
from tessel.tune import Task, tune
from tessel.tune.measure import build_all

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/ lives at the root

from benchmarks import definitions


@pytest.mark.parametrize("target", TARGETS)
def test_a_tiny_limit_still_returns_a_legal_schedule_computing_numpys_values(target):
    d = definitions.layernorm(13, 70)
    r = auto_schedule_result(d.outputs, target=target, budget=8, timeout=1e-3)
    assert r.level == "full" and r.knobs == r.plan.defaults()  # nothing measured in time: the rules' schedule
    ins = d.inputs(np.random.default_rng(5))
    check(r.schedule, d.params + d.outputs, ins, [d.reference(*ins)], targets=(target,), rtol=d.rtol, atol=d.atol)


@pytest.mark.parametrize("bad", [-1, 0, -0.5, math.nan, "3", True, [2]], ids=repr)
def test_a_limit_that_is_not_a_positive_number_is_refused_by_name(bad):
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    with pytest.raises(ArgumentError, match=r"auto_schedule\(timeout=\.\.\.\): give the seconds as a number above zero"):
        tessel.auto_schedule(B, budget=4, timeout=bad)
    with pytest.raises(TuneError, match=r"tune\(time_limit=\.\.\.\)"):
        tune(lambda cfg: (te.create_schedule(B.op), [A, B]), trials=1, time_limit=bad, progress=False)


def test_an_infinite_limit_is_no_limit():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    r = auto_schedule_result(B, budget=0, timeout=math.inf)
    check(r.schedule, r.args, [np.arange(8, dtype="float32") + 1], [2 * (np.arange(8, dtype="float32") + 1)])


def test_builds_after_the_deadline_are_not_started():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    task = Task(lambda cfg: (te.create_schedule(B.op), [A, B]), target="c")
    cfg = task.config_space.get(0)
    answers = build_all(task, [cfg, cfg], 2, 10.0, deadline=time.monotonic() - 1.0)
    assert [a["kind"] for a in answers] == ["limit", "limit"]


def test_the_limit_cuts_a_hanging_build_and_records_only_what_was_measured(tmp_path):
    """The "slow_build" candidate sleeps for ten minutes, longer than its build timeout here,
    so only the limit can end the job this early: it is cut, not recorded as a failure."""
    log = tmp_path / "t.log"
    result = tune("tests/troublesome", (33,), trials=len(MODES), tuner="grid", target="c", log=log,
                  timeout=1.5, build_timeout=600, n_parallel=2, progress=io.StringIO(), time_limit=4.0)
    assert result.timed_out and not result.interrupted
    modes = [r.config["mode"].val for r in result.records]
    assert "slow_build" not in modes and all(r.kind != "limit" for r in result.records)
    assert result.trials == len(result.records) < len(MODES)
    assert len(log.read_text().splitlines()) == len(result.records)
