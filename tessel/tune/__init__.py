"""Tuning: schedule templates with knobs, searched by measurement and a cost model.

``tessel.tune(template, args, trials=..., target=..., log=...)`` tunes (the package is
callable: :func:`tessel.tune.api.tune`); ``tessel.tune.template``, ``get_config``, ``Task``,
the tuners, ``apply_history_best`` and the records are its parts (AutoTVM's, under
``tessel.tvm.autotvm`` in TVM's spellings).
"""

import sys as _sys
import types as _types

from .api import TUNERS, TuneResult, tune
from .measure import MeasureResult
from .model import GBTModel
from .progress import Progress
from .records import ApplyHistoryBest, Record, apply_history_best, load, load_from_file
from .search import ModelTuner
from .space import (
    AnnotateEntity,
    ConfigEntity,
    ConfigSpace,
    FallbackConfigEntity,
    OtherOptionEntity,
    ReorderEntity,
    SplitEntity,
    VirtualAxis,
)
from .task import Task, get_config, template, workload_key
from .tuner import GridSearchTuner, MeasureInput, RandomTuner, Tuner

__all__ = ["TUNERS", "AnnotateEntity", "ApplyHistoryBest", "ConfigEntity", "ConfigSpace", "FallbackConfigEntity",
           "GBTModel", "GridSearchTuner", "MeasureInput", "MeasureResult", "ModelTuner", "OtherOptionEntity",
           "Progress", "RandomTuner", "Record", "ReorderEntity", "SplitEntity", "Task", "TuneResult", "Tuner",
           "VirtualAxis", "apply_history_best", "get_config", "load", "load_from_file", "template", "tune",
           "workload_key"]


class _TuneModule(_types.ModuleType):
    """``tessel.tune(...)`` calls :func:`tune`; ``tessel.tune.X`` is the package's X."""

    def __call__(self, *args, **kwargs):
        return tune(*args, **kwargs)


_sys.modules[__name__].__class__ = _TuneModule
