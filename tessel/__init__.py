"""tessel: tensor expressions and schedules, lowered through InferBound to native code."""

# `import tessel as tvm` accepts the TVM-0.6-era spellings (tvm.placeholder, tvm.compute, tvm.sum ...)
import sys as _sys

from . import check, compat, poly, te, tunables, tune, viz
from . import errors as error  # TVM's tvm.error: TVMError and the classes below
from .autosched import auto_schedule
from .bound import infer_bound
from .compat import *
from .driver import build, lower
from .errors import (
    ArgumentError,
    BoundError,
    BuildError,
    DefinitionError,
    DistributedError,
    DistributionError,
    IndexOverflowError,
    InternalError,
    LowerError,
    ScheduleError,
    TesselError,
    TVMError,
    ViewError,
)
from .ir.expr import IterVar, Range
from .runtime.extern import get_global_func, list_global_func_names, register_func, remove_global_func
from .schedule import create_schedule
from .schedule.checking import wire as _wire

# the schedule asks the checks it needs through the interface it owns; this face, which knows
# both layers, is the one place that connects them (schedule/checking.py says why)
_wire(check.CHECKS)
# likewise the code a pragma brings (import_llvm / import_c) is compiled by the runtime
from .runtime.imported import import_code as _import_code  # noqa: E402
from .schedule import hints as _hints  # noqa: E402

_hints.CODE_IMPORTER = _import_code

# `import tessel.error` and `from tessel.error import TVMError` as with tvm.error (one module, two names)
_sys.modules[__name__ + ".error"] = error

__version__ = "0.1.0"

__all__ = [
    "ArgumentError", "auto_schedule", "BoundError", "BuildError", "DefinitionError", "DistributedError", "DistributionError", "IndexOverflowError",
    "InternalError", "IterVar",
    "LowerError", "Range", "ScheduleError", "TVMError", "TesselError", "error", "build", "create_schedule",
    "get_global_func", "infer_bound", "list_global_func_names", "register_func", "remove_global_func",
    "ViewError", "lower", "te", "tune", "tunables", "viz", "compat", *compat.__all__,
]


def __getattr__(name: str):
    """A TVM spelling that only :mod:`tessel.tvm` has (``tvm.nd``, ``tvm.tir``, ``tvm.device`` ...)
    says where it is, instead of Python's guess from tessel's own names (``nd`` -> ``isnan``)."""
    if not name.startswith("_"):
        from .tvm import _names  # importing it imports tessel.tvm, whose names are asked about

        if name in _names.ADVICE or name in dir(_sys.modules[__name__ + ".tvm"]):  # offered, or explained
            raise _names.not_offered_here(name)
    import sys

    raise AttributeError(f"module 'tessel' has no attribute {name!r}", name=name, obj=sys.modules[__name__])
