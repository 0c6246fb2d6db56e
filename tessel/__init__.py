"""tessel: tensor expressions and schedules, lowered through InferBound to native code."""

from . import te
from .bound import infer_bound
from .driver import build, lower
from .errors import (
    ArgumentError, BoundError, BuildError, DefinitionError, InternalError, LowerError,
    ScheduleError, TesselError,
)
from .ir.expr import IterVar, Range
from .schedule import create_schedule

__version__ = "0.1.0"

__all__ = [
    "ArgumentError", "BoundError", "BuildError", "DefinitionError", "InternalError", "IterVar",
    "LowerError", "Range", "ScheduleError", "TesselError", "build", "create_schedule", "infer_bound",
    "lower", "te",
]
