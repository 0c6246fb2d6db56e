"""``autotvm.task.space``: config spaces and their entities (:mod:`tessel.tune.space`)."""

from __future__ import annotations

from ....tune.space import (
    AnnotateEntity,
    AnnotateSpace,
    ConfigEntity,
    ConfigSpace,
    FallbackConfigEntity,
    OtherOptionEntity,
    OtherOptionSpace,
    ReorderEntity,
    ReorderSpace,
    SplitEntity,
    SplitSpace,
    VirtualAxis,
)
from ..._names import missing_names

__all__ = ["AnnotateEntity", "AnnotateSpace", "ConfigEntity", "ConfigSpace", "FallbackConfigEntity",
           "OtherOptionEntity", "OtherOptionSpace", "ReorderEntity", "ReorderSpace", "SplitEntity", "SplitSpace",
           "VirtualAxis"]

__getattr__ = missing_names(__name__)
