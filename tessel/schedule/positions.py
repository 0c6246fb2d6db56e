"""Committing a position-based schedule change, and explaining a refused one.

Every position primitive (``compute_at`` by position, ``inline_at``, ``inline_most``,
``inline_all_at``, ``propagate``) works on a copy of the schedule and hands the copy here when
it is legal; a refusal becomes a ScheduleError with a legality kind and a fix that was replayed
onto a copy of the schedule and shown to work before it is offered.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..errors import ScheduleError

if TYPE_CHECKING:
    from .promises import Refusal
    from .schedule import Schedule
    from .stage import Stage

_STATE = ("all_iter_vars", "leaf_iter_vars", "relations", "iter_var_attrs", "max_producer_pos")


def commit(sch: Schedule, trial: Schedule) -> None:
    """Move what the primitive decided on ``trial`` (a copy of ``sch``) onto ``sch``'s stages.

    The stage objects users hold stay the same; their loops, relations and attachments become
    the copy's."""
    smap = {id(t): s for t, s in zip(trial.stages, sch.stages)}
    for t, s in zip(trial.stages, sch.stages):
        for name in _STATE:
            setattr(s, name, getattr(t, name))
        host = smap.get(id(t.attach_stage)) if t.attach_stage is not None else None
        s.placement = t.placement.moved(host, t.attach_ivar)  # the trial's host is the user's stage
    sch.iv_notes.update(trial.iv_notes)


def outside_positions(st: Stage, iv, what: str):
    """``iv``, after checking that ``what`` (a split or fuse) leaves the loops a position
    primitive fixed alone: the first ``compute_at_pos`` loops of ``st`` are shared with its
    readers and the first ``max_producer_pos`` enclose its producers (nvFuser refuses the same:
    "Cannot split axis within compute at position"). TE's ``compute_at`` by IterVar fixes no
    position, so splitting there stays allowed."""
    k = next((j for j, x in enumerate(st.leaf_iter_vars) if x is iv), None)
    if k is None:
        return iv
    fixed = []
    if k < st.compute_at_pos:
        fixed.append(f"its compute-at position {st.compute_at_pos} (it shares its first {st.compute_at_pos} loops "
                     f"with the stages that read it)")
    if k < st.max_producer_pos:
        fixed.append(f"its max-producer position {st.max_producer_pos} (producers are computed inside its first "
                     f"{st.max_producer_pos} loops)")
    if not fixed:
        return iv
    raise ScheduleError(
        f"stage {st.name}: cannot {what} axis {iv.name}: it is loop {k} of {st.name}, inside {' and '.join(fixed)}; "
        f"the stages sharing it would no longer match. {what.capitalize()} it before the position primitive "
        f"(which replays it onto them), or {what} one of the loops after position "
        f"{max(st.compute_at_pos, st.max_producer_pos)}: "
        f"{', '.join(x.name for x in st.leaf_iter_vars[max(st.compute_at_pos, st.max_producer_pos):]) or 'none'}")


def refuse(sch: Schedule, why: Refusal, producer: Stage, consumer: Stage, pos, p: int) -> ScheduleError:
    """The ScheduleError for a refused ``compute_at`` by position, with a validated fix."""
    from .fixes import FixBuilder, Names, choose
    from .violation import Violation, ViolationKind

    kind = ViolationKind[why.kind]
    where = f"s[{producer.name}].compute_at(s[{consumer.name}], {pos})"
    lead = {
        "RECOMPUTE_REDUCTION": "the stages it moves would need a reduction recomputed",
        "BROADCAST_TWO_WAYS": "one tensor reaches a common reader along two different loops",
        "UNMAPPABLE_AXIS": "a loop cannot be shared",
        "FIXED_LOOPS": "it would disturb loops an earlier call fixed",
    }[why.kind]
    if why.kind == "FIXED_LOOPS":
        text = f"{where}: {lead}: {why.text}"
    else:
        text = (f"{where}: {lead}. {why.stage.name} can be computed at most at position {why.limit} of its own "
                f"loops: {why.text}")
    v = Violation(kind, _live(sch, why.stage), text, tuple(_live(sch, s) for s in why.stages if s is not None),
                  tuple(why.loops))
    if _proposing.active:  # a candidate fix refused in turn: no fixes of fixes
        return v.error()
    names = Names(sch)
    cands = [_reordered(sch, names, why, producer, consumer)]
    cands += [FixBuilder(names).compute_at_pos(producer, consumer, q) for q in range(p - 1, 0, -1)]
    if why.kind == "BROADCAST_TWO_WAYS":
        cands.append(_readers_instead(sch, names, producer, consumer))
    cands.append(FixBuilder(names).compute_at_pos(producer, consumer, p, "best_effort"))
    _proposing.active = True
    try:
        return choose(sch, v, [c for c in cands if c is not None]).error()
    finally:
        _proposing.active = False


class _Proposing(threading.local):
    active = False


_proposing = _Proposing()


def _live(sch: Schedule, st: Stage) -> Stage:
    """The user's stage of the same name (refusals are found on a copy)."""
    return next((s for s in sch.stages if s.name == st.name), st)


def _reordered(sch: Schedule, names, why: Refusal, producer: Stage, consumer: Stage):
    """The refusal's host loops reordered so that a reader shares all the loops it runs in, then
    the same call at the depth of the loops it shares (when the host is the user's consumer)."""
    from .fixes import FixBuilder

    if not why.reorder or why.reorder[0].name != consumer.name:
        return None
    host, order, shared = why.reorder
    live = _live(sch, host)
    now = live.leaf_iter_vars
    if all(a is b for a, b in zip(order, now)) or not all(any(iv is x for x in now) for iv in order):
        return None  # already in that order, or the trial replayed the host's loops
    fix = FixBuilder(names).reorder(live, list(order))
    return fix.compute_at_pos(producer, consumer, shared)


def _readers_instead(sch: Schedule, names, producer: Stage, consumer: Stage):
    """Keep the tensor computed once, at the root, and move its readers instead."""
    from .axis_map import Graph, common_consumer
    from .fixes import FixBuilder

    g = Graph(sch)
    cc = common_consumer(g, producer, consumer)
    if cc is None:
        return None
    fix = FixBuilder(names)
    for r in g.consumers[id(producer)]:
        if r is not cc:
            fix.compute_at_pos(r, cc, -1, "best_effort")
    return fix if fix.lines else None


__all__ = ["commit", "outside_positions", "refuse"]
