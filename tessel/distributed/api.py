"""``tessel.distributed.build`` and ``plan``: a schedule distributed on compute stages goes to
the kernel of one call (``kernel.py``, ``plan.py``); one whose distributed stage is a recurrence
or a scan over time goes to the step loop (``timeloop.py``), which runs a kernel of the first
kind per step. Kept apart so that neither machinery imports the other's entry point."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import DistributedError, DistributionError
from ..schedule.schedule import Schedule
from ..te.tensor import Tensor
from . import kernel as _kernel
from . import plan as _plan
from .comm import Comm, world
from .plan import Plan, Transfer
from .steps import distributed_recurrence
from .timeloop import StepKernel, StepPlan, step_plans


def plan(s: Schedule, args: list[Tensor], ranks: int, sizes: dict | None = None, *,
         shapes: dict | None = None, multi_hop: bool = False, overlap: bool = False,
         placement: dict[str, int | None] | None = None, grid: tuple[int, int] | None = None) -> Plan | StepPlan:
    """The communication plan of ``s`` on ``ranks`` ranks (see ``plan.plan``); of a recurrence or
    scan over time, a :class:`StepPlan`: one plan per class of steps."""
    if ranks >= 1 and distributed_recurrence(s) is not None:
        if overlap or grid is not None:
            raise DistributionError("a distributed recurrence over time: overlap= and grid= are for a kernel of "
                                    "one step")
        sp, plans, _ = step_plans(s, ranks, _plan._bind(args, sizes or {}, shapes or {}), placement, multi_hop)
        return StepPlan(sp, plans)
    return _plan.plan(s, args, ranks, sizes, shapes=shapes, multi_hop=multi_hop, overlap=overlap,
                      placement=placement, grid=grid)


def build(s: Schedule, args: list[Tensor], comm: Comm | None = None, target: str = "c", *,
          multi_hop: bool = False, deterministic: bool = False, overlap: bool = False,
          transfers: Callable[[Plan], list[Transfer]] | None = None,
          placement: dict[str, int | None] | None = None,
          grid: tuple[int, int] | None = None) -> _kernel.DistKernel:
    """This rank's kernel of the distributed schedule ``s`` over ``comm`` (see ``kernel.build``
    for the options); of a recurrence or scan over time, a :class:`StepKernel` whose call runs
    every step, each after its halo exchange."""
    if distributed_recurrence(s) is None:
        return _kernel.build(s, args, comm, target, multi_hop=multi_hop, deterministic=deterministic,
                             overlap=overlap, transfers=transfers, placement=placement, grid=grid)
    if s.history is None:
        raise DistributedError("tessel.distributed.build needs a schedule that records its steps "
                               "(te.create_schedule makes one)")
    if overlap or transfers is not None or grid is not None:
        raise DistributionError("a distributed recurrence over time runs its steps with the derived messages; "
                                "overlap=, transfers= and grid= are for a kernel of one step (build without them)")
    return StepKernel(s, args, comm or world(), target, multi_hop, placement)
