"""``tvm.te``: tensor expressions and schedules, which are tessel's own (:mod:`tessel.te`).

Everything public in :mod:`tessel.te` answers here under the same name, including what is
added to it later; the schedule classes come from :mod:`tessel.schedule`.
"""

from __future__ import annotations

import sys

from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from ..te import *  # noqa: F403 (TVM's te is tessel's, name for name)
from ..te import __all__ as _te_all
from . import te_schedule as schedule
from . import te_tensor as tensor
from ._names import missing_names
from .te_schedule import create_schedule

__all__ = [*_te_all, "Schedule", "Stage", "create_schedule", "schedule", "tensor"]

# names of tessel.te that are its own plumbing, not TE vocabulary
_PLUMBING = frozenset({"E", "O", "DTypeLike", "DefinitionError", "EXPORTED", "INTRINSICS", "Intrinsic"})
__getattr__ = missing_names(__name__, ("tessel.te", "tessel.schedule"), hidden=_PLUMBING)

# ``import tvm.te.schedule`` and ``from tvm.te.schedule import InferBound`` find them too
sys.modules[f"{__name__}.schedule"] = schedule
sys.modules[f"{__name__}.tensor"] = tensor
