"""The public solvers: which commands make a fusion legal, which skew exposes a wavefront.

``legalize_fusion(s, consumer, producer, axis)`` asks for ``consumer``'s loops down to
``axis`` to be shared with ``producer``'s, ``consumer`` running after ``producer`` inside them
(Tiramisu's ``consumer.after(producer, axis)``). Fused as asked, a consumer may read rows its
producer has not written yet; tessel computes from the exact dependences the least delays
(``shift``) of the consumer's loops that keep every dependence, or, when none exist at that
level, the deepest outer level where they do (``poly/repair.py``).

``wavefront(s, stage, i, j)`` asks for the inner of two consecutive loops to run in parallel:
tessel finds the least skew ``(a, b)`` whose new outer loop ``a*i + b*j`` carries every
dependence, so the inner loop carries none.

Each returns a :class:`Proposal`: the commands as Python (``print(p)``), as recorded steps
(``p.steps``), and ``p.apply(s)``. A proposal is made by calling the commands on a copy of the
schedule and is offered only when that copy passes the checks, so applying it is safe; when no
commands work, ``p.possible`` is False and ``p.explanation`` says why.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import islpy as isl

from ..errors import ScheduleError, TesselError
from ..ir import expr as E
from ..poly.analysis import analysis
from ..poly.model import Model
from ..poly.order import fold_conflicts, order_conflicts, program_order
from ..poly.repair import inner_distances, repair_fusion, skew_factors
from ..schedule.fixes import Fix, Names, try_fix
from ..schedule.history import Step, _HandleMaker, apply_steps
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage


@dataclass(eq=False)
class Proposal:
    """Commands tessel computed and checked against the dependences.

    ``code``: the commands as a user would type them (stages named by ``names``);
    ``steps``: the same commands as recorded steps; ``apply(s)`` runs them on ``s``.
    ``possible`` is False when nothing works, and then ``explanation`` says why."""

    what: str
    possible: bool
    explanation: str
    fix: Fix | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def code(self) -> str:
        return self.fix.code if self.fix is not None else ""

    @property
    def steps(self) -> tuple[Step, ...]:
        return self.fix.steps if self.fix is not None else ()

    @property
    def names(self) -> dict[str, Any]:
        return dict(self.fix.names) if self.fix is not None else {}

    def apply(self, sch: Schedule) -> Schedule:
        """Run the commands on ``sch`` (the schedule they were computed for, or a replay of it);
        a proposal that is not ``possible`` may still carry the nearest legal commands."""
        if self.fix is None:
            raise ScheduleError(f"{self.what}: {self.explanation}", explanation=self.explanation)
        return apply_steps(sch, self.fix.steps)

    def __str__(self) -> str:
        return self.code if self.possible else f"# {self.what}: {self.explanation}"


# ---- where the commands are recorded -----------------------------------------------------
def _stage(sch: Schedule, x: Any) -> Stage:
    if isinstance(x, Stage):
        return x
    try:
        return sch[x]
    except (KeyError, TypeError, TesselError) as err:
        raise ScheduleError(f"{x!r} is not a stage of this schedule: pass s[T] or the tensor T") from err


def _loop_index(st: Stage, axis: E.IterVar) -> int:
    for k, iv in enumerate(st.leaf_iter_vars):
        if iv is axis:
            return k
    raise ScheduleError(f"{axis.name} is not a loop of {st.name} now (its loops: {st._leaf_names()}); "
                        f"pass one of them")


def record(sch: Schedule, calls: list[tuple[Stage, str, tuple]], names: Names, code: str) -> Fix | None:
    """``calls`` (stage, command, arguments) as recorded steps with ``code``, checked by running
    them on a copy of ``sch``: None when a command refuses them (ScheduleError) or the result
    breaks a dependence or another rule."""

    make = _HandleMaker(sch)
    steps = tuple(Step(method, make(st), make(args, st), {}) for st, method, args in calls)
    fix = Fix(steps, code, {k: v for k, v in names.names.items() if k in code})
    with quiet():
        if try_fix(sch, fix, None) != 2:
            return None
        trial = sch.copy(record=False)
        fix.apply(trial)
        if order_conflicts(trial) or fold_conflicts(trial):
            return None
    return fix


_QUIET = threading.local()


@contextmanager
def quiet() -> Iterator[None]:
    """Refusals inside (while a fix is being checked) propose no fix of their own."""
    old = getattr(_QUIET, "on", False)
    _QUIET.on = True
    try:
        yield
    finally:
        _QUIET.on = old


def proposing() -> bool:
    return not getattr(_QUIET, "on", False)


# ---- fusion ----------------------------------------------------------------------------------
def legalize_fusion(sch: Schedule, consumer: Any, producer: Any, axis: E.IterVar) -> Proposal:
    """The commands that fuse ``consumer``'s loops down to ``axis`` (one of its loops) with
    ``producer``'s, consumer after producer, keeping every dependence: the consumer's loops
    delayed by the least shifts that do, at ``axis`` or, when no shift can, at the deepest
    outer loop where one can."""
    b, a = _stage(sch, consumer), _stage(sch, producer)
    level = _loop_index(b, axis)
    model: Model = analysis(sch).model
    deps = program_order(sch).dependences
    a_names = {x.name for x in model.statements if x.stage is a}
    b_names = {x.name for x in model.statements if x.stage is b}
    what = f"fusing {b.name} after {a.name} at {axis.name}"
    levels = []
    for iv in b.leaf_iter_vars[: level + 1]:
        lps = model.loops_of(b, iv)
        if not lps:
            break
        levels.append((lps[0].pos, lps[0].width))
    if not a_names or not b_names or len(levels) != level + 1:
        return Proposal(what, False, f"{b.name} or {a.name} is not in the polyhedral model as loops "
                        f"(unmodelled: {model.unmodelled or 'none'})")
    got = repair_fusion(deps, {x.name: x.schedule for x in model.statements},
                        a_names, b_names, levels, model.context)
    if got is None:  # only separate nests, the consumer's after the producer's, keep them
        names = Names(sch)
        code = f"s[{names.stage(b)}].after(s[{names.stage(a)}], None)"
        return Proposal(what, False, f"no shift makes a fusion of {b.name} after {a.name} legal at any of "
                        f"{b.name}'s loops (a distance along {b.leaf_iter_vars[0].name} has no constant bound): "
                        f"it is possible only at the root, as separate loop nests",
                        record(sch, [(b, "after", (a, None))], names, code), {"level": None, "requested": axis})
    depth, shifts, _ = got
    at = b.leaf_iter_vars[depth]
    names = Names(sch)
    by_loop = {b.leaf_iter_vars[k]: s for k, s in enumerate(shifts) if s}
    sn, an = names.stage(b), names.stage(a)
    lines = [f"s[{sn}].shift({names.axis(b, iv)}, {n})" for iv, n in by_loop.items()]
    lines.append(f"s[{sn}].after(s[{an}], {names.axis(b, at)})")

    calls = [(b, "shift", (iv, n)) for iv, n in by_loop.items()] + [(b, "after", (a, at))]
    fix = record(sch, calls, names, "\n".join(lines))
    if fix is None:
        return Proposal(what, False, "the commands tessel computed were refused when replayed "
                        "(a tessel bug: please report the schedule)")
    moved = f" (at {at.name}, not {axis.name}: no shift makes the fusion at {axis.name} legal)" if at is not axis else ""
    shift_words = ", ".join(f"{b.name}'s {iv.name} shifted by {n}" for iv, n in by_loop.items()) or "no shift needed"
    return Proposal(what, True, f"legal with {shift_words}{moved}", fix,
                    {"level": at, "shifts": {iv: n for iv, n in by_loop.items()}, "requested": axis})


# ---- wavefronts --------------------------------------------------------------------------
def wavefront(sch: Schedule, stage: Any, i: E.IterVar, j: E.IterVar, limit: int = 4,
              parallel: bool = True) -> Proposal:
    """The least skew of the consecutive loops ``i, j`` of ``stage`` after which the outer loop
    carries every dependence and the inner one none, then ``parallel`` on the inner loop; only
    the ``parallel`` when ``j`` carries nothing already. ``parallel=False``: the skew alone
    (the legal skew nearest to what was asked, as a repair of a refused one)."""
    st = _stage(sch, stage)
    ki, kj = _loop_index(st, i), _loop_index(st, j)
    what = f"a wavefront over {st.name}'s loops {i.name}, {j.name}"
    if kj != ki + 1:
        return Proposal(what, False, f"{i.name} and {j.name} must be consecutive loops of {st.name}, {i.name} outside")
    model = analysis(sch).model
    li, lj = model.loops_of(st, i), model.loops_of(st, j)
    if not li or not lj or li[0].width != 1 or lj[0].width != 1:
        return Proposal(what, False, f"{st.name}'s loops {i.name}, {j.name} are not in the polyhedral model")
    if lj[0].pos != li[0].pos + 2:  # an interchange moved them: the leaf order is not the nest's
        return Proposal(what, False, f"{i.name} and {j.name} are not consecutive loops of {st.name}'s nest, "
                        f"{i.name} outside (an interchange moved them)")
    dist = inner_distances(program_order(sch).dependences, {x.name: x.schedule for x in model.statements}, li[0].pos, lj[0].pos)
    names = Names(sch)
    sn = names.stage(st)
    if parallel and (dist is None or dist.intersect(_inner_carried()).is_empty()):
        code = f"s[{sn}].parallel({names.axis(st, j)})"
        return _offer(what, record(sch, [(st, "parallel", (j,))], names, code),
                      f"{j.name} carries no dependence already", {"factors": None})
    ab = skew_factors(dist, limit) if dist is not None else (1, 1)
    if ab is None:
        return Proposal(what, False, f"no skew with factors up to {limit} makes {i.name} carry every dependence "
                        f"(distances {dist})")
    a, b = ab
    lines = [f"s[{sn}].skew({names.axis(st, i)}, {names.axis(st, j)}, {a}, {b})"]
    calls = [(st, "skew", (i, j, a, b))]
    if parallel:
        lines.append(f"s[{sn}].parallel({names.axis(st, j)})")
        calls.append((st, "parallel", (j,)))
    fix = record(sch, calls, names, "\n".join(lines))
    return _offer(what, fix, f"skew by ({a}, {b}): {i.name} then carries every dependence and {j.name} none",
                  {"factors": ab})


def _inner_carried() -> isl.Set:
    return isl.Set("{ [x, y] : x = 0 and y != 0 }")


def _offer(what: str, fix: Fix | None, why: str, details: dict) -> Proposal:
    if fix is None:
        return Proposal(what, False, "the commands tessel computed were refused when replayed "
                        "(a tessel bug: please report the schedule)", details=details)
    return Proposal(what, True, why, fix, details)


__all__ = ["Proposal", "legalize_fusion", "proposing", "quiet", "record", "wavefront"]
