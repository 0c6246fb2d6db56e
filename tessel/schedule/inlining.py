"""Transform propagation and inlining as public tools (seed 003; nvFuser's schedulers use them
instead of computeAt): transform one reference stage, ``s.propagate(ref)`` to every stage,
then ``s.inline_most()``.

* ``propagate(reference, pos, selector)``: replay the reference's first ``pos`` loops along the
  spanning tree that keeps most of them; a stage that already matches is left alone and loops
  an earlier call shared with other stages are never changed (a ScheduleError says so).
* ``s[T].inline_at(pos, best_effort)``: compute T inside its readers' outer ``pos`` loops as the
  loops are now (no replay). The deepest legal position stops at a reduction loop, a vectorized
  loop, a loop of an axis a reader does not map, and a loop a reader does not have in the same
  place; a position is never lowered.
* ``s.inline_most(stages)``: every stage as deep as legal, readers first.
* ``s.inline_all_at(reference, pos, best_effort)``: ``reference``'s position mapped onto every
  stage through the loops they already share with it (can be shallower than inline_most).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..errors import ScheduleError
from .axis_map import Graph
from .checking import checker
from .compute_at_pos import Placer, choose_host, normalize_pos, place_all, span_and_replay
from .dataflow import py_name
from .kinds import INLINE
from .positions import commit
from .transform_replay import matched_prefix

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage


def _trial(sch: Schedule, st: Stage | None = None):
    trial = sch.copy(record=False)
    return trial, (trial.stages[sch.stages.index(st)] if st is not None else None)


def _verified(sch: Schedule, st: Stage, apply, code: str) -> str | None:
    """``code`` if ``apply(copy, st's stage in the copy)`` is accepted on a copy of ``sch``, else
    None: a fix is offered only once it has been seen to work."""
    trial, t = _trial(sch, st)
    try:
        apply(trial, t)
    except ScheduleError:
        return None
    return code


def _position_fix(sch: Schedule, st: Stage, pos, limit: int) -> str | None:
    """A verified fix for ``s[T].inline_at(pos)`` refused with ``limit`` the largest legal
    position: that position, else best effort from ``pos``."""
    name = py_name(st.name)
    return (_verified(sch, st, lambda tr, t: inline_at(tr, t, limit), f"s[{name}].inline_at({limit})")
            or _verified(sch, st, lambda tr, t: inline_at(tr, t, pos, best_effort=True),
                         f"s[{name}].inline_at({pos}, best_effort=True)"))


def _check_legal(trial: Schedule, what: str) -> None:
    found = checker().violations(trial, propose=False)
    if found:
        raise ScheduleError(f"{what}: the result would be illegal: {found[0].explanation}; use a lower position")


def _consumer_refidx(g: Graph, st: Stage, refidx: dict[int, list[int]]) -> None:
    """Each reader's leading loops that already are ``st``'s loops (reference indices)."""
    mine = refidx[id(st)]
    for c in g.consumers[id(st)]:
        idx = matched_prefix(st, c, dict(g.map(st, c).p2c), len(mine))
        refidx[id(c)] = [mine[j] for j in idx]


def inline_at(sch: Schedule, st: Stage, pos, best_effort: bool = False, uninlinable=()) -> int:
    """``s[T].inline_at(pos)``: the position T gets (see the module docstring). Best effort
    lowers the position until it is legal, down to T's present one. ``uninlinable``: loops
    (IterVars) no stage may be computed inside (``max_position.py``)."""
    p = normalize_pos(st, pos, "inline_at")
    if st.is_placeholder:
        raise ScheduleError(f"stage {st.name} is an input placeholder; it is not computed, so it cannot be inlined")
    blocked = frozenset(id(iv) for iv in uninlinable)
    while p > st.compute_at_pos:
        got = _inline_at(sch, st, pos, p, best_effort, blocked)
        if got is not None:
            return got
        p -= 1
    return st.compute_at_pos


def _inline_at(sch: Schedule, st: Stage, pos, p: int, best_effort: bool, blocked: frozenset[int]) -> int | None:
    """T at position ``p`` (or the deepest legal below it that its own loops allow), committed;
    None when best effort must try a lower one."""
    trial, t = _trial(sch, st)
    assert t is not None
    g = Graph(trial)
    if not g.consumers[id(t)]:
        return _output_depth(sch, st, g, t, p, best_effort, blocked)
    refidx: dict[int, list[int]] = {id(t): list(range(p))}
    _consumer_refidx(g, t, refidx)
    host, siblings = choose_host(g, [t], t, refidx)
    placer = Placer(g, refidx, host)
    placer.uninlinable = blocked
    for sib in siblings:
        placer.as_sibling(sib)
    got, why = placer.place(t, p, best_effort)
    if why is not None:
        raise ScheduleError(f"s[{st.name}].inline_at({pos}): invalid position {p} for {st.name}; the largest "
                            f"legal one is {why.limit}: {why.text}", fix=_position_fix(sch, st, pos, why.limit))
    if got <= st.compute_at_pos:
        return st.compute_at_pos
    from .compute_at_pos import share_loops, update_producer_positions

    update_producer_positions(g, [t])
    for sib in siblings:
        bad = share_loops(placer, sib)
        if bad is not None:
            if best_effort:
                return None
            fix = _position_fix(sch, st, pos, bad.limit) if bad.stage is t and bad.limit else None
            raise ScheduleError(f"s[{st.name}].inline_at({pos}): {bad.text}", fix=fix)
    try:
        _check_legal(trial, f"s[{st.name}].inline_at({pos})")
    except ScheduleError:
        if best_effort:
            return None
        raise
    commit(sch, trial)
    return got


def _output_depth(sch: Schedule, st: Stage, g: Graph, t: Stage, p: int, best_effort: bool, blocked) -> int:
    """A stage nothing reads shares no loop, but, as in nvFuser, its position still says how
    deep a reader could be (its own limits: reduction, vectorized, uninlinable, unrolled loops),
    and fixes those loops against later replays, as an inlined stage's are."""
    from .compute_at_pos import self_limit
    from .max_position import inliner_limit

    found = [r for r in (self_limit(g, t, p), inliner_limit(g, t, p, best_effort, blocked)) if r is not None]
    why = min(found, key=lambda r: r.limit) if found else None
    if why is not None and not best_effort:
        raise ScheduleError(f"s[{st.name}].inline_at({p}): invalid position {p} for {st.name}; the largest legal one "
                            f"is {why.limit}: {why.text}", fix=_position_fix(sch, st, p, why.limit))
    got = why.limit if why is not None else p
    if got > st.compute_at_pos and st.attach_type != INLINE:
        st.placement = dataclasses.replace(st.placement, position=got)
    return st.compute_at_pos


def max_position(sch: Schedule, st: Stage, uninlinable=()) -> int:
    """The deepest position ``st`` can take, its readers inlined as deep as legal first (nvFuser's
    ``getMaxPosAll``, which reads the loops the readers will share, not where they are now: a
    producer can share a loop only once the stages between it and the loop's owner do). Worked
    out on a copy: nothing changes."""
    trial = sch.copy(record=False)
    t = trial.stages[sch.stages.index(st)]
    inline_most(trial, Graph(trial).downstream(t), uninlinable)  # a copy shares the IterVars
    return inline_at(trial, t, -1, best_effort=True, uninlinable=uninlinable)


def inline_most(sch: Schedule, stages=None, uninlinable=()) -> dict[str, int]:
    """Every stage (or ``stages``) as deep as legal, readers first; their positions by name.
    Outputs get the depth their own loops allow (nvFuser's full depth); ``uninlinable``: loops
    no stage is computed inside."""
    chosen = [sch[s] for s in stages] if stages is not None else list(sch.stages)
    out: dict[str, int] = {}
    for st in reversed(sch.stages):
        if not any(st is c for c in chosen) or st.is_placeholder or st.attach_type == INLINE:
            continue
        if st.leaf_iter_vars:
            out[st.name] = inline_at(sch, st, -1, best_effort=True, uninlinable=uninlinable)
    return out


def inline_all_at(sch: Schedule, ref: Stage, pos, best_effort: bool = False, uninlinable=()) -> dict[str, int]:
    """``reference``'s first ``pos`` loops mapped onto every stage; each stage computed there
    (``uninlinable``: loops no stage is computed inside)."""
    p = normalize_pos(ref, pos, "inline_all_at")
    caps: dict[str, int] = {}
    while True:
        trial, t = _trial(sch, ref)
        assert t is not None
        g = Graph(trial)
        refidx = _map_everywhere(g, t, p)
        movable = [st for st in trial.stages if not st.is_placeholder and g.consumers.get(id(st)) and id(st) in refidx]
        why = place_all(g, refidx, movable, t, best_effort, caps=caps, uninlinable=frozenset(map(id, uninlinable)))
        if why is None or not best_effort or caps.get(why.stage.name, why.limit + 1) <= why.limit:
            break
        caps[why.stage.name] = why.limit  # a reader it would share refused: lower only that stage
    if why is not None:
        fix = None if best_effort else _verified(
            sch, ref, lambda tr, t: inline_all_at(tr, t, pos, best_effort=True),
            f"s.inline_all_at({py_name(ref.name)}, {pos}, best_effort=True)")
        raise ScheduleError(f"s.inline_all_at({ref.name}, {pos}): {why.stage.name} can be computed at most at "
                            f"position {why.limit}: {why.text}", fix=fix)
    _check_legal(trial, f"s.inline_all_at({ref.name}, {pos})")
    commit(sch, trial)
    return {st.name: st.compute_at_pos for st in sch.stages if not st.is_placeholder}


def _map_everywhere(g: Graph, ref: Stage, pos: int) -> dict[int, list[int]]:
    """Reference loop indices of every stage's leading loops, through the loops they share."""
    refidx: dict[int, list[int]] = {id(ref): list(range(pos))}
    for y, x, root_map in g.spread(ref):
        idx = matched_prefix(y, x, root_map, len(refidx[id(y)]))
        refidx[id(x)] = [refidx[id(y)][j] for j in idx]
    return refidx


def propagate(sch: Schedule, ref: Stage, pos=-1, selector=None, direction: str = "both", to=None) -> list[str]:
    """Replay ``ref``'s first ``pos`` loops onto every connected stage the selector allows.

    ``selector``: None (every stage), tensors/stages that may be changed, or a function
    ``(from_stage, to_stage, direction)`` with direction ``"PasC"`` or ``"CasP"``.
    ``direction``: ``"backward"`` (producers only), ``"forward"`` (readers only) or ``"both"``;
    with ``to``, only the stages between ``ref`` and those (``to`` included) change: nvFuser's
    BoundedDirectionalTransformPropagator. Returns the names of the stages whose loops were
    rebuilt."""
    from .compute_at_pos import Report

    p = normalize_pos(ref, pos, "propagate")
    trial, t = _trial(sch, ref)
    assert t is not None
    g = Graph(trial)
    allow = _both(_selector(trial, sch, selector), _bounded(trial, t, direction, [sch[x] for x in to or ()], sch))
    report = Report(f"s.propagate({ref.name}, {pos})", None, [])
    span_and_replay(g, t, p, [], report, allow)
    _check_legal(trial, f"s.propagate({ref.name}, {pos})")
    commit(sch, trial)
    sch.position_log.append(report)
    return report.replayed


def _both(a, b):
    return lambda y, x, d: a(y, x, d) and b(y, x, d)


def _bounded(trial: Schedule, ref: Stage, direction: str, to: list[Stage], sch: Schedule):
    """The edges a directional propagation takes: backward along producers, forward along
    readers, and with ``to`` only into stages on a path between ``ref`` and one of them."""
    if direction not in ("both", "forward", "backward"):
        raise ScheduleError(f"propagate({ref.name}): direction must be 'both', 'forward' or 'backward', got {direction!r}")
    g = Graph(trial)
    ends = [trial.stages[sch.stages.index(x)] for x in to]
    if direction == "both" and ends:
        raise ScheduleError(f"propagate({ref.name}): a bound (to=) needs direction='forward' or 'backward'")
    between: set[int] | None = None
    if ends:  # on a path from ref to an end: reached from ref, and reaching the end (or it)
        near, back = (g.upstream, g.downstream) if direction == "backward" else (g.downstream, g.upstream)
        between = {id(x) for x in near(ref) for e in ends if x is e or any(x is y for y in back(e))}
    edge = {"backward": "PasC", "forward": "CasP"}.get(direction)
    return lambda y, x, d: (edge is None or d == edge) and (between is None or id(x) in between)


def _selector(trial: Schedule, sch: Schedule, selector):
    if selector is None:
        return lambda y, x, d: True
    if callable(selector):
        live = {id(t): s for t, s in zip(trial.stages, sch.stages)}
        return lambda y, x, d: bool(selector(live[id(y)], live[id(x)], d))
    names = {sch[s].name for s in selector}
    return lambda y, x, d: x.name in names


__all__ = ["inline_all_at", "inline_at", "inline_most", "max_position", "propagate"]
