"""The runner times a candidate past its warm-up: untimed calls for a while after an idle
wait, counted by time, so that a short kernel is not timed while the cores come back to speed
and a long one is not run again for nothing. The clock here is a fake counting microseconds,
so nothing depends on this machine's speed."""

from __future__ import annotations

import numpy as np

from tessel.tune import runner


class _Kernel:
    """A kernel that takes ``micros`` on the fake clock and copies its input."""

    def __init__(self, micros: int):
        self.micros, self.calls, self.now = micros, 0, 0

    def clock(self) -> int:
        return self.now

    def __call__(self, x, out) -> None:
        self.now += self.micros
        self.calls += 1
        out[:] = x


def test_warm_up_counts_by_time_and_by_calls():
    short, long = _Kernel(200), _Kernel(100_000)  # a 0.2 ms conv, a 100 ms matmul
    assert runner.warm_up(lambda: short([0], [0]), 2, 50_000, clock=short.clock) == 250  # 50 ms of calls
    assert runner.warm_up(lambda: long([0], [0]), 2, 50_000, clock=long.clock) == 2  # the two calls


def test_a_short_candidate_is_warmed_up_and_a_long_one_timed_at_once():
    x = np.arange(4, dtype=np.float32)
    short = _Kernel(200)
    answer = runner.measure(short, [x], [x], 1, 1, 0, 0, warm=50_000, clock=short.clock)
    assert answer == {"costs": [200.0]}
    assert short.calls == 1 + 249 + 1  # checked, warmed until 50 ms from the first call, timed
    long = _Kernel(100_000)
    assert runner.measure(long, [x], [x], 1, 1, 0, 0, warm=50_000, clock=long.clock) == {"costs": [100_000.0]}
    assert long.calls == 2  # checked (longer than the warm-up), timed


def test_a_wrong_candidate_is_not_warmed_up_or_timed():
    x = np.arange(4, dtype=np.float32)
    k = _Kernel(200)
    answer = runner.measure(k, [x], [x + 1], 1, 1, 0, 0, warm=50_000, clock=k.clock)
    assert answer["kind"] == "wrong" and k.calls == 1
