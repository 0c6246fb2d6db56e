"""``autotvm.task``: ``create(name, args, target)`` and the config-space names."""

from __future__ import annotations

from ...tune.space import ConfigEntity, ConfigSpace, FallbackConfigEntity
from ...tune.task import Task, get_config, template
from .._names import missing_names
from ..target import Target


def create(task_name, args=(), target=None, target_host=None) -> Task:
    """The tuning task of the template registered as ``task_name`` on ``args`` for ``target``
    (a TVM target such as ``"llvm"``, or a tessel one)."""
    if isinstance(target, str | Target):
        target = (target if isinstance(target, Target) else Target(target)).tessel
    return Task(task_name, tuple(args), target)


__all__ = ["ConfigEntity", "ConfigSpace", "FallbackConfigEntity", "Task", "create", "get_config", "template"]

# a name AutoTVM has and tessel does not says so (NotOfferedError), with what to use
__getattr__ = missing_names(__name__)
