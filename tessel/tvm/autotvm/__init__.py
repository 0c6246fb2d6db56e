"""``tvm.autotvm``: AutoTVM's template API over tessel's tuner (:mod:`tessel.tune`).

A template (``@autotvm.template("name")`` reading ``autotvm.get_config()``) is a tessel
template; ``autotvm.task.create`` makes a :class:`tessel.tune.Task`; the tuners
(``XGBTuner``, ``GATuner``: tessel's model-guided search; ``RandomTuner``,
``GridSearchTuner``) tune with ``measure_option(builder=LocalBuilder(...),
runner=LocalRunner(...))``; ``callback.log_to_file`` writes tessel's records and
``apply_history_best`` builds templates with the best of them. Candidates are built in
parallel processes and run in an isolated one, checked against the unscheduled computation.
"""

from __future__ import annotations

from ...tune.records import apply_history_best
from ...tune.task import get_config, template
from .._names import missing_names
from . import callback, measure, record, task, tuner
from .measure import LocalBuilder, LocalRunner, MeasureInput, MeasureResult, measure_option

__all__ = ["LocalBuilder", "LocalRunner", "MeasureInput", "MeasureResult", "apply_history_best", "callback",
           "get_config", "measure", "measure_option", "record", "task", "template", "tuner"]

# a name AutoTVM has and tessel does not says so (NotOfferedError), with what to use
__getattr__ = missing_names(__name__)
