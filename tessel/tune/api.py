"""``tessel.tune(template, args, trials=..., target=..., log=...)``: tuning in one call."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

from ..errors import TuneError
from .records import Record, from_result
from .search import ModelTuner
from .space import ConfigEntity
from .task import Task
from .tuner import GridSearchTuner, RandomTuner, Tuner

TUNERS = {"model": ModelTuner, "xgb": ModelTuner, "random": RandomTuner, "grid": GridSearchTuner}


@dataclass
class TuneResult:
    """The outcome: the best ``config`` (None if nothing succeeded) and its ``cost`` in seconds,
    this job's ``records``, and whether Ctrl-C ``interrupted`` it or its time limit stopped it
    (``timed_out``)."""

    task: Task
    config: ConfigEntity | None
    cost: float
    records: list[Record] = field(default_factory=list)
    interrupted: bool = False
    trials: int = 0
    timed_out: bool = False

    @property
    def gflops(self) -> float:
        return self.task.flop / self.cost / 1e9 if self.config is not None and self.task.flop else math.nan

    def schedule(self):
        """The best config's schedule and tensors (``tessel.build(*result.schedule())``)."""
        if self.config is None:
            raise TuneError(f"tuning {self.task.name} found no config that builds, runs and computes the right "
                            "values; see the records' errors")
        return self.task.instantiate(self.config)

    def build(self, target=None):
        from .. import driver

        sch, tensors = self.schedule()
        return driver.build(sch, list(tensors), target=target or self.task.target)


def seconds_limit(value, where: str, error: type[Exception] = TuneError) -> float | None:
    """``value`` as a time limit in seconds: None (no limit) or a number above zero (inf: no
    limit); anything else is ``error`` naming ``where``, so a typo never means "no limit"."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value) or value <= 0:
        raise error(f"{where}: give the seconds as a number above zero (or None for no limit); got {value!r}")
    return None if math.isinf(value) else float(value)


def tune(template, args=(), *, trials: int = 64, target=None, log=None, tuner: str | Tuner = "model",
         n_parallel: int | None = None, timeout: float = 10.0, build_timeout: float | None = None,
         number: int = 3, repeat: int = 1, reference=None, progress=None, seed: int = 0,
         early_stopping: int | None = None, batch_size: int = 8, time_limit: float | None = None) -> TuneResult:
    """Tune ``template`` (a registered template, its name, a ``f(cfg, *args)`` function or a
    :class:`Task`) on ``args`` for ``target``: measure up to ``trials`` configs (those already in
    ``log`` count and are not measured again), each built with ``build_timeout`` and run with
    ``timeout`` seconds at most, checked against ``reference(*inputs)`` (default: the
    computation without a schedule). ``time_limit``: seconds of wall-clock time for the whole
    job (None: no limit); when it passes, the builds still running are stopped and the best
    measured so far is the result. ``progress``: None (stdout), False, or a stream."""
    limit = seconds_limit(time_limit, "tune(time_limit=...)", TuneError)
    task = template if isinstance(template, Task) else Task(template, args, target)
    if isinstance(tuner, Tuner):
        search = tuner
    elif tuner in TUNERS:
        kwargs = {"n_parallel": n_parallel} if TUNERS[tuner] is ModelTuner else {}
        search = TUNERS[tuner](task, seed=seed, batch_size=batch_size, **kwargs)
    else:
        raise TuneError(f"tune(tuner={tuner!r}): use one of {', '.join(TUNERS)} or a Tuner object")
    if trials < 1:
        raise TuneError(f"tune(trials={trials}): give at least one trial")
    option = {"n_parallel": n_parallel, "build_timeout": build_timeout or max(timeout, 10.0),
              "run_timeout": timeout, "number": number, "repeat": repeat}
    search.tune(trials, option, early_stopping=early_stopping, log=log, progress=progress, reference=reference,
                time_limit=limit)
    best = search.best
    return TuneResult(task, best.config if best else None, best.cost if best else math.inf,
                      [from_result(task, r) for r in search.results[search.resumed:]], search.interrupted,
                      search.trials, search.timed_out)
