"""``tvm.topi.generic``: the target-independent schedules, each a plain schedule of its outputs.

TVM's generic schedules leave the loop nest as written too; tessel's primitives (or
``tessel.auto_schedule``) then shape it.
"""

from __future__ import annotations

from ...te.tensor import Tensor
from ..te import create_schedule


def _schedule(outs):
    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    return create_schedule([t.op for t in outs])


def __getattr__(name: str):
    if name.startswith("schedule_"):  # schedule_injective, schedule_conv2d_hwcn, schedule_reduce, ...
        return _schedule
    raise AttributeError(f"module 'tvm.topi.generic' has no attribute {name!r}")


__all__ = ["_schedule"]
