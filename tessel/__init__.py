"""tessel: tensor expressions and schedules, lowered through InferBound to native code."""

# `import tessel as tvm` accepts the TVM-0.6-era spellings (tvm.placeholder, tvm.compute, tvm.sum ...)
from . import compat, te, viz
from .bound import infer_bound
from .compat import *
from .driver import build, lower
from .errors import (
    ArgumentError,
    BoundError,
    BuildError,
    DefinitionError,
    IndexOverflowError,
    InternalError,
    LowerError,
    ScheduleError,
    TesselError,
    ViewError,
)
from .ir.expr import IterVar, Range
from .runtime.extern import get_global_func, list_global_func_names, register_func, remove_global_func
from .schedule import create_schedule

__version__ = "0.1.0"

__all__ = [
    "ArgumentError", "BoundError", "BuildError", "DefinitionError", "IndexOverflowError", "InternalError", "IterVar",
    "LowerError", "Range", "ScheduleError", "TesselError", "build", "create_schedule", "infer_bound",
    "ViewError", "get_global_func", "list_global_func_names", "lower", "register_func", "remove_global_func", "te", "viz", "compat", *compat.__all__,
]
