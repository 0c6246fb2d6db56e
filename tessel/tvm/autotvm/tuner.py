"""``autotvm.tuner``: the tuners, under AutoTVM's names and ``tune`` signature."""

from __future__ import annotations

from ...tune import search
from ...tune import tuner as base
from .._names import missing_names
from .callback import ProgressBar


class _Autotvm:
    """``tuner.tune(n_trial, measure_option, early_stopping, callbacks)`` as AutoTVM has it:
    progress is shown when a ``callback.progress_bar`` is among the callbacks."""

    def tune(self, n_trial, measure_option=None, early_stopping=None, callbacks=(), si_prefix="G"):
        bars = [c for c in callbacks if isinstance(c, ProgressBar)]
        rest = [c for c in callbacks if not isinstance(c, ProgressBar)]
        return super().tune(int(n_trial), measure_option, early_stopping, rest,
                            progress=bars[0].stream if bars else False)

    def load_history(self, data_set, min_seed_records: int = 500) -> None:
        """Take earlier records of this task (a log path or records) as measured already."""
        if isinstance(data_set, str):
            self.resume(data_set)


class XGBTuner(_Autotvm, search.ModelTuner):
    """AutoTVM's XGBTuner: tessel's model-guided search (gradient-boosted trees in NumPy)."""

    def __init__(self, task, plan_size: int = 64, feature_type: str = "itervar", loss_type: str = "reg",
                 num_threads=None, optimizer: str = "sa", diversity_filter_ratio=None, log_interval: int = 50):
        super().__init__(task)


GATuner = XGBTuner  # a model-guided search stands in for the genetic one


class RandomTuner(_Autotvm, base.RandomTuner):
    def __init__(self, task, range_idx=None):
        super().__init__(task)


class GridSearchTuner(_Autotvm, base.GridSearchTuner):
    def __init__(self, task, range_idx=None):
        super().__init__(task)


__all__ = ["GATuner", "GridSearchTuner", "RandomTuner", "XGBTuner"]

# a name AutoTVM has and tessel does not says so (NotOfferedError), with what to use
__getattr__ = missing_names(__name__)
