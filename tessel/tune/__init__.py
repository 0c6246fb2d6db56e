"""Tuning: schedule templates with knobs, searched by measurement and a cost model (``tessel.tune``)."""

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

__all__ = ["AnnotateEntity", "ConfigEntity", "ConfigSpace", "FallbackConfigEntity", "OtherOptionEntity",
           "ReorderEntity", "SplitEntity", "Task", "VirtualAxis", "get_config", "template", "workload_key"]
