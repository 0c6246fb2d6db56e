"""``tvm.topi.tag``: the tags topi's operators carry (``op.tag``), which schedules read to tell
an elementwise stage from a broadcast, an injective or a reduction one."""

from __future__ import annotations

ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
COMM_REDUCE_IDX = "comm_reduce_idx"


def is_broadcast(tag: str) -> bool:
    """Elementwise and broadcast tags (and those that extend them, ``elemwise,...``)."""
    return tag.split(",")[0] in (ELEMWISE, BROADCAST)


def is_injective(tag: str) -> bool:
    """Broadcast-like and injective tags."""
    return is_broadcast(tag) or tag.split(",")[0] == INJECTIVE


__all__ = ["BROADCAST", "COMM_REDUCE", "COMM_REDUCE_IDX", "ELEMWISE", "INJECTIVE", "is_broadcast", "is_injective"]
