"""Tiramisu's communication commands at the schedule level: ``s.barrier()`` and ``s.transfer``
(send/recv), recorded steps, replayed, printed, and checked against the derived plan."""

from __future__ import annotations

import numpy as np
import pytest
from distributed_cases import heat2d, heat2d_ref, heat2d_time, one_process

from tessel import DistributionError, ScheduleError
from tessel import distributed as dist


def _run(s, args, ranks, g, steps=2, barriers=None):
    def body(c):
        if barriers is not None:
            real = c.barrier
            c.barrier = lambda: (barriers.append(c.rank), real())[1]
        k = dist.build(s, args, c)
        a = k.scatter("A", g if c.rank == 0 else None)
        b = k.empty_like(a, "B")
        for _ in range(steps):
            k(a, b)
            a, b = b, a
        return k.gather(a)

    return dist.run_ranks(body, ranks)[0]


def test_a_barrier_is_a_recorded_step_run_at_every_call():
    s, args = heat2d(13, 9)
    s.barrier(after="exchange")
    s.barrier(after="compute")
    assert "s.barrier(after='exchange')" in s.python() and "s.barrier(after='compute')" in s.python()
    assert s.history.replay().messaging == (("barrier", "exchange"), ("barrier", "compute"))
    g = np.random.default_rng(1).random((13, 9))
    seen: list[int] = []
    out = _run(s, args, 3, g, steps=2, barriers=seen)
    assert np.abs(out - heat2d_ref(g, 2)).max() < 1e-12
    assert sorted(seen) == [0] * 4 + [1] * 4 + [2] * 4  # two barriers a call, two calls, every rank
    with pytest.raises(ScheduleError, match=r"barrier\(after='kernel'\)"):
        s.barrier(after="kernel")


def test_a_barrier_runs_at_every_step_of_a_time_loop():
    s, args = heat2d_time(3, 9, 5)
    s.barrier()
    g = np.random.default_rng(2).random((9, 5))
    seen: list[int] = []

    def body(c):
        real = c.barrier
        c.barrier = lambda: (seen.append(c.rank), real())[1]
        k = dist.build(s, args, c)
        a, w = k.scatter("A", g if c.rank == 0 else None), k.empty("h")
        k(a, w)
        return k.gather(w)

    assert np.array_equal(dist.run_ranks(body, 2)[0], one_process(s, args, g))
    assert sorted(seen) == [0] * 4 + [1] * 4  # steps 0..3


def test_hand_written_transfers_replace_the_derived_messages_once_checked():
    s, args = heat2d(13, 9)  # two ranks: rows [0, 7) and [7, 13); the border columns are never read
    s.transfer(args[0], src=0, dst=1, lo=(6, 1), hi=(7, 8))
    s.transfer("A", src=1, dst=0, lo=(7, 1), hi=(8, 8))
    assert "s.transfer(A, src=0, dst=1, lo=(6, 1), hi=(7, 8))" in s.python()
    g = np.random.default_rng(3).random((13, 9))
    assert np.abs(_run(s, args, 2, g) - heat2d_ref(g, 2)).max() < 1e-12
    assert s.history.replay().messaging == s.messaging


@pytest.mark.parametrize("lo,hi,match", [
    ((6, 2), (7, 8), r"rank 1 needs A\[6, 1\] from rank 0 but no message brings it \(B reads A\[i - 1, j\]"),
    ((5, 1), (7, 8), r"rank 1 receives A\[5, 1\], which no instance it runs reads from another rank"),
])
def test_a_transfer_that_does_not_match_the_plan_is_refused_with_a_witness(lo, hi, match):
    s, args = heat2d(13, 9)
    s.transfer("A", 0, 1, lo, hi)
    s.transfer("A", 1, 0, (7, 1), (8, 8))
    with pytest.raises(DistributionError, match=match):
        _run(s, args, 2, np.ones((13, 9)))


def test_transfer_arguments_are_checked():
    s, args = heat2d(13, 9)
    with pytest.raises(ScheduleError, match=r"transfer of 'B': a transfer carries an input"):
        s.transfer("B", 0, 1, (6, 1), (7, 8))
    with pytest.raises(ScheduleError, match=r"two different ranks and a non-empty box"):
        s.transfer("A", 1, 1, (6, 1), (7, 8))
    s.transfer("A", 0, 1, (6, 1), (7, 8))
    with pytest.raises(DistributionError, match=r"declares transfers \(s\.transfer\) and build was given"):
        dist.build(s, args, dist.SelfComm(), transfers=lambda p: [])
