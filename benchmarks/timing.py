"""How the harness times its contenders: turns in interleaved blocks of calls, each block
started on idle cores and past their warm-up, so that load on a shared machine hits every
contender alike and no contender's thread pool steals the cores from the next one."""

from __future__ import annotations

import time
from collections.abc import Callable

from tessel.tune.runner import warm_up

ROUNDS = 6  # each contender runs in blocks, in alternating order: thread pools must not fight
BLOCK = 3  # timed calls per block, past ROUNDS rounds: more calls make more rounds, not longer blocks
SETTLE_STEP = 0.01  # seconds per look at the process's CPU time while waiting for quiet cores
SETTLE_LIMIT = 2.0  # the longest wait for them (a pool that never sleeps is the peer's cost, not a hang)
QUIET = 0.05  # share of one core the process may use in a step and still count as idle


def settle(step: float = SETTLE_STEP, limit: float = SETTLE_LIMIT, *, cpu=time.process_time, sleep=time.sleep,
           wall=time.monotonic) -> float:
    """Sleep until this process's threads are idle (less than :data:`QUIET` of a core used in
    one ``step``), at most ``limit`` seconds; the seconds waited. Every contender starts its
    block on quiet cores this way, however long the last one's pool spins: NumPy's OpenBLAS
    keeps a core busy for ~100 ms after its last call (``sched_yield`` loops), longer than a
    fixed pause of 50 ms, and the contender after it lost a core for its whole block (the
    2-thread OpenMP kernel then waits at each barrier for a time slice: 3.2 instead of 73 GFLOP/s).
    ``cpu``, ``sleep`` and ``wall`` are the clocks (the process's CPU seconds, a pause, elapsed
    time: a loaded machine oversleeps). It sees this process only: a peer's worker processes
    (MetaSchedule's builders) are gone before the rounds start."""
    start = wall()
    last = cpu()
    while wall() - start < limit:
        t0 = wall()
        sleep(step)
        now = cpu()
        if now - last < QUIET * max(step, wall() - t0):
            break
        last = now
    return wall() - start


def rounds(runners: dict, repeat: int, yardstick: Callable[[], object] | None
           ) -> tuple[dict[str, list[float]], list[float]]:
    """Interleaved blocks of timed calls: every contender in every round, the order reversed
    each round, so a burst of load on the shared machine hits them all alike. ``repeat`` calls
    make ``repeat / BLOCK`` rounds (six at least): the machine's speed moves between blocks
    (the peak loop ran at 102 and at 204 GFLOP/s a second apart), so a median over more rounds
    is less at the mercy of one slow stretch than one over longer blocks. Each block starts
    once the process is quiet (:func:`settle`) and the cores are back to speed (``warm_up``:
    measured with the harness's blocks on conv2d 1x1, 81 and 93 GFLOP/s by the median after two
    untimed calls against 124 and 126 after 50 ms of them; NumPy's 78 and 84 against 116 and
    114). ``yardstick`` (the copy, or the FMA peak loop), if given, is timed right after each
    of tessel's blocks: the bound of tessel's rate under the same load; its times come second."""
    times: dict[str, list[float]] = {name: [] for name in runners}
    yard_times: list[float] = []
    order = list(runners)
    n_rounds = max(ROUNDS, -(-repeat // BLOCK))  # another tenant's load changes between blocks
    per_round = max(2, -(-repeat // n_rounds))
    for rnd in range(n_rounds):
        for name in order if rnd % 2 == 0 else reversed(order):
            fn = runners[name][0]
            settle()  # the previous contender's worker threads stop spinning
            warm_up(fn)  # two untimed calls at least, and 50 ms of them: the cores back to speed
            for _ in range(per_round):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
            if name == "tessel" and yardstick is not None:  # the same thread pool: no pause needed
                yardstick()  # lets the kernel's last writes drain before the yardstick is timed
                for _ in range(per_round):
                    t0 = time.perf_counter()
                    yardstick()
                    yard_times.append(time.perf_counter() - t0)
    return times, yard_times


def between_calls(fn: Callable[[], object], other: Callable[[], object], repeat: int) -> list[float]:
    """Times of ``fn``'s calls, each right after a call of ``other`` (not timed): a kernel as it
    runs in a program that alternates it with NumPy's own work (issue 37: after a NumPy matmul,
    OpenBLAS's worker threads spin for ~100 ms and take the cores the kernel's threads need).
    Unlike :func:`rounds`, nothing waits for the cores to go quiet in between: that is the point."""
    settle()
    warm_up(fn)
    times = []
    for _ in range(max(repeat, 3)):
        other()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times
