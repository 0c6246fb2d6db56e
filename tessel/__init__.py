"""tessel: tensor expressions and schedules, lowered through InferBound to native code."""

from .errors import (
    ArgumentError, BoundError, BuildError, DefinitionError, InternalError, LowerError,
    ScheduleError, TesselError,
)

__version__ = "0.1.0"
