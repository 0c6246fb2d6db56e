"""The pipeline as data: the named passes that make a bounded schedule's loop nest
(:data:`FRONT_PASSES`, a function of the schedule) and fit it to a target
(:data:`FAST_PASSES`, a function of that IR and the target, then the target's own,
:data:`TARGET_PASSES`), the record of each step, and the instruments that watch them.

``tessel.driver`` runs the lists; a pass is added by adding it to one (its ``made_by`` names
the functions that make its IR, from which ``docs/architecture.md``'s table is generated).
Whatever watches a lowering (the suite's replay check, a profiler) is an :class:`Instrument`
in :data:`INSTRUMENTS`, never a patch of the driver.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .bound.infer import BoundContext
from .ir import expr as E
from .ir import stmt as S
from .ir.functor import free_vars
from .lower import schedule_ops
from .lower.poly_ops import poly_ops
from .passes import (
    index_dtype,
    loop_partition,
    peel_borders,
    simplify_stmt,
    storage_flatten,
    streaming_outputs,
    unroll,
    vectorize,
)
from .passes.base import Pass
from .passes.memory import hoist_allocations, promote_registers
from .poly.empty import remove_empty_loops
from .poly.exact import ExactPlan
from .schedule.commands import has_commands
from .schedule.schedule import Schedule
from .tunables import current

if TYPE_CHECKING:
    from .target import Target


@dataclass
class Step:
    name: str
    ir: S.Stmt
    seconds: float = 0.0  # how long the pass took


@dataclass
class PassContext:
    """What a pass reads besides the IR: the bounded schedule and its exact plan (the front),
    the lowered front and the target (the fast passes); what a pass hands on besides the IR
    (``guards``)."""

    bounded: Bounded | None = None
    plan: ExactPlan | None = None
    assumed: list[E.PrimExpr] = field(default_factory=list)  # the user's assumptions, as expressions
    front: S.PrimFunc | None = None
    target: Target | None = None
    guards: tuple = ()  # index_dtype's index guards of symbolic sizes


class Instrument:
    """Watches the pipeline: each pass as it ends, and each schedule the front has lowered
    (with a way to lower another schedule the same way, which the replay check compares)."""

    def after_pass(self, step: Step) -> None:
        pass

    def after_front(self, sch: Schedule, args: Sequence, func: S.PrimFunc,
                    lower_again: Callable[[Schedule, Sequence], S.PrimFunc]) -> None:
        pass


#: the instruments every lowering reports to (the suite's replay check adds one)
INSTRUMENTS: list[Instrument] = []


@dataclass
class Bounded:
    """A schedule as far as InferBound: what both the interval and the exact lowering start from."""

    ctx: BoundContext
    name: str
    buffers: dict
    params: list[S.Buffer]
    sizes: list[E.Var]
    scalars: tuple = ()
    # simplified expressions (see Analyzer), shared by the interval and the exact lowering,
    # which simplify mostly the same loop nests
    memo: dict = field(default_factory=dict)


def _schedule_ops(_: None, ctx: PassContext) -> S.Stmt:
    b = ctx.bounded
    if has_commands(b.ctx.sch):  # Tiramisu's commands: the whole nest from isl's AST of the model
        return poly_ops(b.ctx, b.buffers)
    return schedule_ops(b.ctx, ctx.plan)


def _fast_sizes(ctx: PassContext) -> list[E.PrimExpr]:
    """The sizes are array extents, never negative: known to the partition, its cut points
    (``(n + 8)//27``) need no clamp at zero; then the user's assumptions."""
    front = ctx.front
    return [E.GE(d, E.IntImm(0, d.dtype)) for b in front.params for d in b.shape
            if not isinstance(d, E.IntImm)] + ctx.assumed


def _empty_loops_removed(stmt: S.Stmt, ctx: PassContext) -> S.Stmt:
    out, removed = remove_empty_loops(stmt, _fast_sizes(ctx))
    return out if removed else stmt


def _index_dtype(stmt: S.Stmt, ctx: PassContext) -> S.Stmt:
    # last, so that it types the very expressions the code generators print (seed 002); the
    # sizes are array extents (never negative), a scalar argument no shape names may be anything
    front = ctx.front
    passed = {id(v) for _, v in front.scalar_args}
    shaped = {id(v) for b in front.params for d in b.shape for v in free_vars(d)}
    stmt, ctx.guards = index_dtype(stmt, [v for v in front.size_vars if id(v) in shaped or id(v) not in passed])
    return stmt


#: the loop nest of a bounded schedule over flat buffers: a function of the schedule
FRONT_PASSES: tuple[Pass, ...] = (
    Pass("schedule_ops", _schedule_ops, (poly_ops, schedule_ops)),
    Pass("simplify_indices", lambda st, ctx: simplify_stmt(st, keep_unit_loops=True, assume=ctx.assumed,
                                                           memo=ctx.bounded.memo), (simplify_stmt,)),
    Pass("storage_flatten", lambda st, ctx: storage_flatten(st, ctx.bounded.buffers), (storage_flatten,)),
    Pass("simplify", lambda st, ctx: simplify_stmt(st, assume=ctx.assumed, memo=ctx.bounded.memo), (simplify_stmt,)),
)
#: guards out of hot loops, then the vector and unroll annotations made real for the target: a
#: function of the front's IR and the target alone, which is what lets ``build`` remember the
#: code generated after them
FAST_PASSES: tuple[Pass, ...] = (
    Pass("loop_partition", lambda st, ctx: loop_partition(st, _fast_sizes(ctx)), (loop_partition,)),
    Pass("remove_empty_loops", _empty_loops_removed, (remove_empty_loops,), only_if_changed=True),
    Pass("peel_borders", lambda st, ctx: peel_borders(st), (peel_borders,), only_if_changed=True),
    Pass("vectorize", lambda st, ctx: vectorize(st, ctx.target, streaming_outputs(st, list(ctx.front.params))),
         (vectorize,)),
    Pass("unroll", lambda st, ctx: unroll(st, max_statements=current().max_unroll_statements), (unroll,)),
    Pass("index_dtype", _index_dtype, (index_dtype,)),
)

#: what a kind of target runs after :data:`FAST_PASSES`: the c target decides where each
#: temporary lives (heap blocks allocated once, small tiles kept in registers) and says so in
#: the IR, which its generator only writes
TARGET_PASSES: dict[str, tuple[Pass, ...]] = {
    "c": (
        Pass("hoist_allocations", lambda st, ctx: hoist_allocations(st), (hoist_allocations,), only_if_changed=True),
        Pass("promote_registers", lambda st, ctx: promote_registers(st), (promote_registers,), only_if_changed=True),
    ),
}


_STANDARD = (FRONT_PASSES, FAST_PASSES, dict(TARGET_PASSES))
#: what the standard passes call, as they were defined: a program that rebinds one of these
#: names here has another pipeline, though the lists are the same
_CALLED = {name: globals()[name] for name in (
    "poly_ops", "schedule_ops", "simplify_stmt", "storage_flatten", "loop_partition", "remove_empty_loops",
    "peel_borders", "vectorize", "streaming_outputs", "unroll", "index_dtype", "hoist_allocations",
    "promote_registers")}


def standard() -> bool:
    """Whether the pipeline is tessel's own (its lists, and the functions they call): code made
    by another pipeline is never remembered on disk (its key could not tell the two apart) and
    an in-process lowering only for the lists it was made with (``lists``)."""
    here = globals()
    return (FRONT_PASSES, FAST_PASSES, TARGET_PASSES) == _STANDARD and all(here[k] is v for k, v in _CALLED.items())


def lists() -> tuple[tuple[Pass, ...], ...]:
    """Every list a lowering may run, the targets' in the order of their kinds."""
    return FRONT_PASSES, FAST_PASSES, *(TARGET_PASSES[k] for k in sorted(TARGET_PASSES))


def run_passes(passes: tuple[Pass, ...], stmt: S.Stmt | None, ctx: PassContext, steps: list[Step]) -> S.Stmt:
    for p in passes:
        start = time.perf_counter()
        out = p.run(stmt, ctx)
        step = Step(p.name, out, time.perf_counter() - start)
        if not (p.only_if_changed and out is stmt):
            steps.append(step)
        for ins in list(INSTRUMENTS):
            ins.after_pass(step)
        stmt = out
    return stmt


__all__ = ["FAST_PASSES", "FRONT_PASSES", "TARGET_PASSES", "INSTRUMENTS", "Bounded", "Instrument", "Pass", "PassContext", "Step", "lists", "run_passes", "standard"]
