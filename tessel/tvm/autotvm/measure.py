"""``autotvm.measure_option``, ``LocalBuilder``, ``LocalRunner``: how candidates are measured."""

from __future__ import annotations

from ...tune.measure import MeasureResult
from ...tune.tuner import MeasureInput
from .._names import missing_names


class LocalBuilder:
    """Builds candidates in ``n_parallel`` forked processes, each within ``timeout`` seconds."""

    def __init__(self, timeout: float = 10, n_parallel: int | None = None, build_func="default", **kwargs):
        self.timeout, self.n_parallel = float(timeout), n_parallel


class LocalRunner:
    """Runs each candidate ``repeat`` times ``number`` runs in an isolated process, within ``timeout``."""

    def __init__(self, timeout: float = 10, number: int = 4, repeat: int = 3, min_repeat_ms: int = 0,
                 cooldown_interval: float = 0.1, enable_cpu_cache_flush: bool = False, **kwargs):
        self.timeout, self.number, self.repeat = float(timeout), int(number), int(repeat)


def measure_option(builder=None, runner=None) -> dict:
    """The options of :meth:`tessel.tune.Tuner.tune` from an AutoTVM builder and runner."""
    builder = builder if isinstance(builder, LocalBuilder) else LocalBuilder()
    runner = runner if isinstance(runner, LocalRunner) else LocalRunner()
    return {"n_parallel": builder.n_parallel, "build_timeout": builder.timeout, "run_timeout": runner.timeout,
            "number": runner.number, "repeat": runner.repeat}


__all__ = ["LocalBuilder", "LocalRunner", "MeasureInput", "MeasureResult", "measure_option"]

# a name AutoTVM has and tessel does not says so (NotOfferedError), with what to use
__getattr__ = missing_names(__name__)
