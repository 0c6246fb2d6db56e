"""The search: which configs to measure next, and the tuning loop around it.

:class:`ModelTuner` (AutoTVM's XGBTuner, without xgboost) proposes each batch by simulated
annealing over the knobs, guided by a cost model trained on every measurement so far:
a cheap model on the knob values walks the space, the best walkers are lowered and ranked by
the model on loop features, and an epsilon of each batch is random so the model keeps
seeing the unexpected. :class:`RandomTuner` and :class:`GridSearchTuner` are the baselines.

The loop (:meth:`Tuner.tune`) measures batches until the trials are spent or the time limit
passes, records each result (``log=``), shows progress, and on Ctrl-C or at the time limit
stops and keeps the best found so far (candidates the limit cut off are neither counted nor
recorded: a resumed job measures them).
A log that already holds measurements of the same workload and target resumes the job:
those configs count as trials done and are not measured again.
"""

from __future__ import annotations

import math
import tempfile
import time

import numpy as np

from ..errors import TuneError
from . import records as R
from .measure import Measurer, MeasureResult
from .progress import Progress

MEASURABLE = ("c", "python")  # the targets whose kernels the measurer runs (a contract, or in the child)


class MeasureInput:
    """What AutoTVM's callbacks receive beside each result: the task, its target and the config."""

    def __init__(self, task, config):
        self.task, self.target, self.config = task, task.target, config


class Tuner:
    """Base: the tuning loop; subclasses choose ``next_batch``."""

    def __init__(self, task, seed: int = 0, batch_size: int = 8):
        self.task = task
        self.space = task.config_space
        self.rng = np.random.default_rng(seed)
        self.batch_size = batch_size
        self.visited: set[int] = set()
        self.results: list[MeasureResult] = []
        self.best: MeasureResult | None = None
        self.best_cost = math.inf
        self.trials = 0
        self.interrupted = False
        self.timed_out = False  # the time limit stopped the job
        self.deadline: float | None = None  # time.monotonic() at which the job's time limit passes
        self.resumed = 0  # results taken from a log, not measured by this job

    # -- to override -------------------------------------------------------------------------
    def next_batch(self, n: int) -> list[int]:
        raise NotImplementedError

    @property
    def known_features(self) -> dict[int, list[float]]:
        """Features the search computed already (by config index), so builds skip them."""
        return {}

    def has_next(self) -> bool:
        return len(self.visited) < len(self.space)

    def update(self, results: list[MeasureResult]) -> None:
        for res in results:
            self.results.append(res)
            if res.ok and res.cost < self.best_cost:
                self.best, self.best_cost = res, res.cost

    # -- helpers -----------------------------------------------------------------------------
    def _random_unvisited(self, n: int, exclude: set[int]) -> list[int]:
        """Up to ``n`` valid configs neither visited nor in ``exclude``, at random. Draws are
        bounded: where few are left, or a template's filters exclude most of the space (fewer
        valid configs left than asked for among many invalid ones), the space is walked once
        instead, from a random point by a random step prime to its size, listing nothing."""
        size, out = len(self.space), []

        def usable(i: int) -> bool:
            return i not in self.visited and i not in exclude and i not in out and self.space.is_index_valid(i)

        if size - len(self.visited) - len(exclude) > 4 * n:
            for _ in range(64 * n):
                i = int(self.rng.integers(size))
                if usable(i):
                    out.append(i)
                    if len(out) == n:
                        return out
        start, step = int(self.rng.integers(size)), self._step_prime_to(size)
        for k in range(size):
            if len(out) == n:
                break
            i = (start + k * step) % size
            if usable(i):
                out.append(i)
        return out

    def _step_prime_to(self, size: int) -> int:
        """A step that visits every index of ``range(size)`` once, cycling from any start."""
        while size > 2:
            step = int(self.rng.integers(1, size))
            if math.gcd(step, size) == 1:
                return step
        return 1

    def resume(self, log) -> int:
        """Take the log's measurements of this task as done; returns how many."""
        n = 0
        for rec in R.load(log):
            if rec.workload != self.task.workload or rec.target != self.task.target_key:
                continue
            i = rec.config.index
            if 0 <= i < len(self.space) and i not in self.visited and self.space.get(i) == rec.config:
                self.visited.add(i)
                self.update([MeasureResult(self.space.get(i), rec.costs, rec.error, rec.kind)])
                n += 1
        self.trials = self.resumed = n
        return n

    def tune(self, n_trial: int, measure_option: dict | None = None, early_stopping: int | None = None,
             callbacks=(), log=None, progress=None, reference=None, time_limit: float | None = None) -> Tuner:
        """Measure up to ``n_trial`` configs (counting those a resumed ``log`` already holds),
        for ``time_limit`` seconds at most (None: no limit)."""
        self.deadline = None if time_limit is None else time.monotonic() + time_limit
        opts = {**default_measure_option(), **(measure_option or {})}
        if self.task.target.kind not in MEASURABLE:
            raise TuneError(f"tuning {self.task.name}: candidates are measured on this machine's CPU, so the target "
                            f"must be one of {', '.join(MEASURABLE)}, not {self.task.target.kind}; tune for the CPU, "
                            "or write the GPU schedule by hand")
        if log is not None:
            R.check_log(log)
            self.resume(log)
        n_trial = min(n_trial, len(self.space))
        bar = _progress(progress, self.task, n_trial, self.trials)
        with tempfile.TemporaryDirectory(prefix="tessel-tune-") as work:
            measurer = None
            try:
                measurer = Measurer(self.task, work, reference=reference, **opts)
                self._loop(measurer, n_trial, early_stopping, callbacks, log, bar)
            except KeyboardInterrupt:
                self.interrupted = True
            finally:
                if measurer is not None:
                    measurer.close()
                if bar is not None:
                    bar.close("interrupted: keeping the best so far" if self.interrupted else
                              "time limit: keeping the best so far" if self.timed_out else "")
        return self

    def _loop(self, measurer: Measurer, n_trial: int, early_stopping, callbacks, log, bar) -> None:
        since_best = 0
        while self.trials < n_trial and self.has_next():
            if self._out_of_time():
                break
            batch = self.next_batch(min(self.batch_size, n_trial - self.trials))
            if not batch:
                break
            self.visited.update(batch)
            before = self.best_cost
            results = measurer.measure([self.space.get(i) for i in batch], self.known_features, self.deadline)
            cut = [r for r in results if r.error_kind == "limit"]
            if cut:  # the time limit passed mid-batch: those were never measured
                self.timed_out = True
                self.visited.difference_update(r.config.index for r in cut)
                results = [r for r in results if r.error_kind != "limit"]
            self.trials += len(results)
            self.update(results)
            if log is not None:
                R.append(log, [R.from_result(self.task, r) for r in results])
            for cb in callbacks:
                cb(self, [MeasureInput(self.task, r.config) for r in results], results)
            since_best = 0 if self.best_cost < before else since_best + len(results)
            if bar is not None:
                bar.update(self.trials, self.best_cost, sum(not r.ok for r in self.results))
            if early_stopping is not None and since_best >= early_stopping:
                break

    def _out_of_time(self) -> bool:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.timed_out = True
        return self.timed_out


def _progress(progress, task, total: int, done: int) -> Progress | None:
    if progress is False:
        return None
    if isinstance(progress, Progress):
        return progress
    stream = progress if progress not in (None, True) else None
    return Progress(f"tune {task.name}", total, task.flop, done, stream=stream)


def default_measure_option() -> dict:
    return {"n_parallel": None, "build_timeout": 10.0, "run_timeout": 10.0, "number": 3, "repeat": 1}


class RandomTuner(Tuner):
    """Configs drawn at random, never twice."""

    def next_batch(self, n: int) -> list[int]:
        return self._random_unvisited(n, set())


class GridSearchTuner(Tuner):
    """Configs in index order."""

    def __init__(self, task, **kwargs):
        super().__init__(task, **kwargs)
        self._next = 0

    def next_batch(self, n: int) -> list[int]:
        out = []
        while len(out) < n and self._next < len(self.space):
            if self._next not in self.visited and self.space.is_index_valid(self._next):
                out.append(self._next)
            self._next += 1
        return out
