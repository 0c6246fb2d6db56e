"""Inline every stage of a kind at once (TVM's AutoInlineElemWise / Broadcast / Injective):
what an operator library's schedule does first, so that the chain of elementwise stages a
program builds (``k + A - B * C``) runs inside the one stage it feeds.

Each inlines the stages that are computes, not outputs, not yet placed (still at the root,
unsplit) and of the kind asked:

* elementwise: every read of a tensor is at exactly the stage's own axes, in order;
* broadcast: tagged ``broadcast`` and without a reduction;
* injective: without a reduction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..ir import expr as E
from ..ir.functor import collect
from ..te.tensor import ComputeOp
from .kinds import ROOT

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage


def _unscheduled(st: Stage) -> bool:
    return st.attach_type == ROOT and not st.relations and not st.iter_var_attrs


def _elementwise(op: ComputeOp) -> bool:
    axes = [iv.var for iv in op.axis]
    loads = [ld for b in op.body for ld in collect(b, lambda n: isinstance(n, E.ProducerLoad))]
    return all(len(ld.indices) == len(axes) and all(i is v for i, v in zip(ld.indices, axes)) for ld in loads)


def _inline_where(sch: Schedule, kind: Callable[[ComputeOp], bool]) -> None:
    for st in sch.stages:
        if isinstance(st.op, ComputeOp) and not st.is_output and _unscheduled(st) and kind(st.op):
            st.compute_inline()


def auto_inline_elemwise(sch: Schedule) -> None:
    _inline_where(sch, _elementwise)


def auto_inline_broadcast(sch: Schedule) -> None:
    _inline_where(sch, lambda op: not op.reduce_axis and op.tag == "broadcast")


def auto_inline_injective(sch: Schedule) -> None:
    _inline_where(sch, lambda op: not op.reduce_axis)


__all__ = ["auto_inline_broadcast", "auto_inline_elemwise", "auto_inline_injective"]
