"""``tvm.container``: TVM's ``Map`` and ``Array``, which tessel's TVM layer returns as Python's own
``dict`` and ``list``/``tuple`` (``isinstance(bounds, tvm.container.Map)`` holds for the dict
``tvm.te.schedule.InferBound`` returns)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class _Kind(type):
    """A TVM container class against which ``isinstance`` tests the Python container it is."""

    kinds: tuple[type, ...]

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, cls.kinds) and not isinstance(obj, str | bytes)


class Map(metaclass=_Kind):
    kinds = (Mapping,)


class Array(metaclass=_Kind):
    kinds = (Sequence,)


__all__ = ["Array", "Map"]
