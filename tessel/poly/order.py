"""The program's own order, and what a schedule breaks of it.

Every schedule of a program must keep the dependences of the program's order: those of its
statements lowered without loop commands, after/before and storage folds
(:func:`program_order`, cached by content). :func:`order_conflicts` is the dependences that a
schedule's statement schedules break (``legality.py``'s ``conflicts``); :func:`fold_conflicts`
the values a storage choice (a fold, a fresh buffer) would overwrite before their last read.
Both are analyses; what is refused, and which commands repair it, is ``tessel.check``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import islpy as isl

from ..schedule.commands import storage_choice
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from .deps import Dependence
from .legality import Conflict, align, conflicts, lex, time_pairs, union
from .model import Model
from .space import DIM


def order_conflicts(sch: Schedule, involved: Callable[[Any], bool] | None = None) -> list[Conflict]:
    """The dependences of the program order that ``sch`` breaks (``legality.py``), only those
    ``involved(dep)`` accepts when given; empty for a schedule without commands or storage:
    each of its elements is written once, by its own stage, before its readers run (the tree
    rules), so no loop order changes a value -- but a recurrence's, judged on its own reads
    (``recurrence.py``)."""
    from .analysis import analysis

    if not _has_commands(sch):
        return []
    base = program_order(sch, moved(sch))
    deps = base.dependences if involved is None else [d for d in base.dependences if involved(d)]
    if not deps:
        return []
    now = analysis(sch).model
    scheds = {st.name: st.schedule for st in now.statements if st.schedule is not None}
    return conflicts(deps, scheds, now.context)


def fold_conflicts(sch: Schedule) -> list[tuple[Stage, Dependence, isl.Map]]:
    """Values a storage choice (``storage_fold``, ``store_in`` into a fresh buffer) would lose:
    for each flow dependence of the program out of such a stage, the (write time, read time)
    pairs between which another value of the stage is written into the same element, under
    ``sch``'s schedules."""
    from .analysis import analysis

    chosen = [st for st in sch.stages if storage_choice(sch, st)]
    if not chosen:
        return []
    now = analysis(sch).model
    base = program_order(sch, moved(sch))
    scheds = align({x.name: x.schedule for x in now.statements if x.schedule is not None})
    out = []
    for st in chosen:
        group = _sharing(sch, st)
        mine = [x for x in now.statements if _pos(x.stage) in group and x.name in scheds]
        orig = {x.name: x for x in base.model.statements}
        new_w = {x.name: _timed([a for a in x.writes if a.tensor is st.storage.buffer], scheds[x.name]) for x in mine}
        old_w = {x.name: _timed(orig[x.name].writes, scheds[x.name]) for x in mine if x.name in orig}
        every_new, every_old = union(list(new_w.values())), union(list(old_w.values()))
        if every_new is None or every_old is None:
            continue
        n = next(iter(scheds.values())).dim(DIM.out)
        for d in base.dependences:
            src = d.source.name
            if d.kind != "flow" or _pos(d.source.stage) not in group or new_w.get(src) is None or old_w.get(src) is None:
                continue
            # later writes of another value into the element the source wrote
            other = new_w[src].apply_range(every_new.reverse()).subtract(old_w[src].apply_range(every_old.reverse()))
            other = other.intersect(lex(n, "lt"))
            bad = time_pairs(d, scheds).range_product(other).intersect_range(lex(n, "gt").wrap())
            bad = bad.intersect_params(now.context)
            if not bad.is_empty():
                out.append((st, d, bad))
    return out


def _sharing(sch: Schedule, st: Stage) -> set[int]:
    """The positions of ``st`` and of the stages stored with it: a recurrence's definitions
    share the storage of the last one, whose ``store_in`` moves them all."""
    out = {sch.stages.index(st)}
    for k, x in enumerate(sch.stages):
        storage = getattr(x.op, "storage", None)
        if callable(storage) and x.op.num_outputs == 1 and storage(x.op.output(0)).op is st.op:
            out.add(k)
    return out


def _timed(accesses: list, sched: isl.Map) -> isl.Map | None:
    return union([a.relation.apply_domain(sched) for a in accesses])


def _pos(st: Stage) -> int:
    return st.schedule.stages.index(st)


def _has_commands(sch: Schedule) -> bool:
    from ..schedule.commands import has_commands

    return has_commands(sch)


@dataclass(eq=False)
class ProgramOrder:
    """The model of a schedule without its commands or storage choices, and the dependences of
    its statements in the program's own order (``deps.program_dependences``)."""

    model: Model
    dependences: list[Dependence]


#: program-order analyses by content, most recent last (a few: one per schedule being edited)
_BASE: dict = {}


def moved(sch: Schedule) -> frozenset[int]:
    """The positions of the stages whose instances or storage a schedule's commands move: a
    stage given a command, storage or an order, and every stage computed inside its loops.
    A dependence between two other stages is kept by the tree rules whatever the loops."""
    stages = sch.stages
    out = {k for k, st in enumerate(stages) if st.commands or st.storage is not None}
    for st in stages:  # a recurrence's storage moves the storage of all its definitions
        if st.storage is not None:
            out |= _sharing(sch, st)
    out |= {stages.index(x) for o in sch.orders for x in (o.stage, o.anchor)}
    for k, st in enumerate(stages):
        seen, at = 0, st
        while at is not None and seen < len(stages) and k not in out:
            if stages.index(at) in out:
                out.add(k)
            at, seen = at.attach_stage, seen + 1
    return frozenset(out)


def program_order(sch: Schedule, only: frozenset[int] | None = None) -> ProgramOrder:
    """The dependences every schedule of ``sch``'s program must keep, over the statements of
    ``sch`` as lowered without its loop commands, after/before and storage folds, its
    ``store_in`` kept (storing into an input or another tensor is what the program means: an
    in-place update). They are computed in the program's order, not in the TE loop nest's: a
    split or reorder may break one as a command may (a fold is checked apart: ``fold_conflicts``).
    ``only``: just those with an end in the stages at these positions (``moved``)."""
    from ..schedule.commands import commands_key
    from .analysis import analysis, content_key
    from .deps import program_dependences

    plain = sch.copy(record=False)
    for st in plain.stages:
        st.commands = ()
        if storage_choice(sch, st):  # a fold or a fresh buffer saves memory, it means nothing
            st.storage = None
    plain.orders = ()
    ckey = content_key(plain)
    key = None if ckey is None else (ckey, commands_key(plain), only)
    if key is not None and key in _BASE:
        got = _BASE.pop(key)
        _BASE[key] = got
        return got
    model = analysis(plain).model
    got = ProgramOrder(model, program_dependences(model, only))
    if key is not None:
        _BASE[key] = got
        while len(_BASE) > 16:
            del _BASE[next(iter(_BASE))]
    return got


__all__ = ["ProgramOrder", "fold_conflicts", "moved", "order_conflicts", "program_order"]
