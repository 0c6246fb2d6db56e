"""The automatic scheduler: ``tessel.auto_schedule(outputs, target=None, budget=0)``.

From the compute definition alone it writes an ordinary schedule by rules in the spirit of
Ansor's sketches and Halide's autoschedulers (:mod:`.plan` decides, :mod:`.rules` writes),
with every number (register tile, panel group, partial sums, strip height, stream chunk) taken
from the Target's model (:mod:`tessel.target.tiles`). With a budget, the knobs are a config
space of ``tessel.tune`` and its search (cost model and measurement) refines them, starting
from the rule-based point (:mod:`.search`).

The result is checked before it is returned: it must lower. A plan tessel refuses falls back
to a plainer one (no register tiles, then only inlining, then the default schedule), so the
answer is always a legal schedule of the same computation.

``timeout`` bounds the search's wall-clock time instead of (or as well as) counting trials: the
search stops when it passes and the best schedule measured so far is returned, the rule-based
one if nothing was measured in time (a floor: the rules' schedule is the first candidate).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..errors import ArgumentError, TesselError
from ..schedule.history import announce
from ..schedule.schedule import Schedule
from ..target import Target, as_target, resolve
from ..te.tensor import Operation, Tensor
from ..tune.api import seconds_limit
from . import report, rules
from .plan import Knob, Plan, make_plan
from .search import refine

__all__ = ["AutoResult", "Knob", "Plan", "auto_schedule", "auto_schedule_result", "make_plan"]

# trials of the tuner's search (0: the rules alone); 16 took 48 CPU seconds on matmul 1024, 215 s of
# wall time on a machine loaded 5-fold: 8 keeps the 3-minute bound with room
DEFAULT_BUDGET = 8
CPU_KINDS = ("c", "python")  # the targets whose schedules the rules write


@dataclass
class AutoResult:
    """What :func:`auto_schedule` did: the schedule, its arguments (inputs, then outputs), the
    plan, the knob values used, the fallback level and the tuner's result, if it searched."""

    schedule: Schedule
    args: list[Tensor]
    plan: Plan
    knobs: dict[str, object]
    level: str
    tuned: object | None = None                 # tessel.tune's TuneResult

    def summary(self) -> list[str]:
        """What was chosen and why: a line for the whole, then one per stage (report.py)."""
        return report.summary(self)

    def report(self) -> str:
        """``schedule.python()`` followed by the summary, as comments."""
        return report.report(self)


def _outputs(outputs) -> list[Tensor]:
    items = outputs if isinstance(outputs, list | tuple) else [outputs]
    out: list[Tensor] = []
    for x in items:
        if isinstance(x, Tensor) and x.op.is_placeholder:
            raise ArgumentError(f"auto_schedule: {x.name} is an input (te.placeholder), which has nothing to "
                                "schedule; pass the tensors te.compute makes from it")
        if isinstance(x, Tensor):
            out.append(x)
        elif isinstance(x, Operation):
            out += list(x.outputs)
        else:
            raise ArgumentError(f"auto_schedule: outputs must be tensors (or operations) made by te.compute; "
                                f"got {type(x).__name__}")
    if not out:
        raise ArgumentError("auto_schedule: no outputs given; pass the tensors the kernel computes")
    return out


def auto_schedule_result(outputs, target: str | Target | None = None, budget: int = DEFAULT_BUDGET,
                         log: str | None = None, progress=False, timeout: float | None = None,
                         sizes: dict | None = None) -> AutoResult:
    """:func:`auto_schedule`, returning the plan, the knob values and the tuner's result too."""
    start = time.monotonic()
    limit = seconds_limit(timeout, "auto_schedule(timeout=...)", ArgumentError)
    outs = _outputs(outputs)
    tgt = resolve(as_target(target))
    if tgt.kind not in CPU_KINDS:
        raise ArgumentError(f"auto_schedule writes CPU schedules (tiles, parallel, vectorize), not {tgt.kind} ones; "
                            f"give target= one of {', '.join(CPU_KINDS)}, or schedule the GPU kernel by hand "
                            "(bind its loops to blockIdx/threadIdx)")
    ops = list({id(t.op): t.op for t in outs}.values())
    plan = make_plan(ops, tgt)
    args = [*plan.graph.inputs(), *outs]
    knobs, tuned = plan.defaults(), None
    left = None if limit is None else limit - (time.monotonic() - start)
    if budget and budget > 1 and plan.knobs and (left is None or left > 0):
        knobs, tuned = refine(plan, lambda kn: (_legal(plan, kn, args)[0], args), budget, log, progress, left,
                              sizes)
    sch, level = _legal(plan, knobs, args)
    announce(sch)  # the schedule the user gets: `tessel explain` and `show` list it
    return AutoResult(sch, args, plan, knobs, level, tuned)


def auto_schedule(outputs, target: str | Target | None = None, budget: int = DEFAULT_BUDGET,
                  log: str | None = None, progress=False, timeout: float | None = None,
                  sizes: dict | None = None) -> Schedule:
    """A schedule for ``outputs`` (tensors of te.compute) on ``target`` (default: this machine).

    ``budget``: trials of the tuner's search around the rule-based schedule (0 or 1: the rules
    alone, nothing measured); ``timeout``: seconds of wall-clock time at most for the search
    (None: no limit; the search stops when it passes and keeps the best so far, the rules'
    schedule if nothing was measured in time); ``log``: a tuning log to record into and resume from;
    ``progress``: the tuner's progress (False: silent, None: stdout, or a stream). The
    schedule's arguments, in order, are the placeholders it reads (as
    ``auto_schedule_result(...).args`` lists them), then the outputs. ``sizes``: the values
    symbolic sizes take while the search measures (``{"n": 1000}``; by default
    ``tessel.tune.task.REPRESENTATIVE_SIZE``): the schedule stays generic in them."""
    return auto_schedule_result(outputs, target, budget, log, progress, timeout, sizes).schedule


def _legal(plan: Plan, knobs: dict, args: list[Tensor]) -> tuple[Schedule, str]:
    """The plan at the first level of :data:`rules.LEVELS` that lowers."""
    from ..driver import lower

    last: TesselError | None = None
    for level in rules.LEVELS:
        s = rules.build(plan, knobs, level)
        try:
            lower(s, args)
        except TesselError as err:
            last = err
            continue
        return s, level
    assert last is not None
    raise last
