"""The program's own order, and what a schedule breaks of it.

Every schedule of a program must keep the dependences of the program's order: those of its
statements lowered without loop commands, after/before and storage folds
(:func:`program_order`, cached by content). :func:`order_conflicts` is the dependences that a
schedule's statement schedules break (``legality.py``'s ``conflicts``); :func:`fold_conflicts`
the values a storage choice (a fold, a fresh buffer, an input written in place) would overwrite
before their last read.
Both are analyses; what is refused, and which commands repair it, is ``tessel.check``'s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import islpy as isl

from ..ir.names import shown
from ..schedule.commands import storage_choice
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from .deps import Dependence
from .legality import Conflict, align, conflicts, lex, time_pairs, union
from .model import Model
from .space import DIM, point_values


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


@dataclass(eq=False)
class Overwrite:
    """A value a storage choice loses: the value of ``dep`` (a flow dependence of the program),
    or, with ``reader`` instead, an element of the buffer's own (an input's value) that
    ``reader`` reads at ``at`` after ``stage``'s ``store_in`` wrote over it; ``by``: the stage
    whose write lost ``dep``'s value. ``bad``: the
    (read time, write time) pairs, or the (write time, other write time) pairs of ``dep``."""

    stage: Stage
    bad: isl.Map
    dep: Dependence | None = None
    reader: Any = None
    at: str = ""
    by: Stage | None = None  # the stage whose write overwrote the value
    tensor: str = ""  # the input ``reader`` reads, where it is not the buffer (one of arrays taking turns)


def fold_conflicts(sch: Schedule) -> list[Overwrite]:
    """Values a storage choice (``storage_fold``, ``store_in`` into a fresh buffer, into an input
    or into another tensor) would lose, under ``sch``'s schedules: for each flow dependence of
    the program (its meaning has no storage choice, ``program_order``) out of a statement that
    now writes into a chosen buffer, the (write time, read time) pairs between which another
    value is written into the same element; and the reads of an input's own values after a
    ``store_in`` into that input wrote over them."""
    from .analysis import analysis

    chosen = [st for st in sch.stages if storage_choice(sch, st)]
    if not chosen:
        return []
    now = analysis(sch).model
    base = program_order(sch, moved(sch))
    scheds = align({x.name: x.schedule for x in now.statements if x.schedule is not None})
    if not scheds:
        return []
    orig = {x.name: x for x in base.model.statements}
    n = next(iter(scheds.values())).dim(DIM.out)
    out: list[Overwrite] = []
    for buf in {id(st.storage.buffer): st.storage.buffer for st in chosen}.values():
        pos = {id(st): k for k, st in enumerate(sch.stages)}
        groups = [(st, _sharing(sch, st)) for st in chosen if st.storage.buffer is buf]
        owner = {x.name: st for st, group in groups for x in now.statements if pos.get(id(x.stage)) in group}
        new_w = {x.name: w for x in now.statements if x.name in scheds
                 and (w := _timed([a for a in x.writes if a.tensor is buf], scheds[x.name])) is not None}
        old_w = {k: w for k in new_w if k in orig and (w := _timed(orig[k].writes, scheds[k])) is not None}
        every_new = union(list(new_w.values()))
        first = next(st for st in chosen if st.storage.buffer is buf)
        if every_new is None:
            continue
        others: dict[str, isl.Map] = {}  # per source statement: one for all of its dependences
        for d in base.dependences:
            src = d.source.name
            if d.kind != "flow" or src not in old_w:
                continue
            if src not in others:
                # later writes of another value into the element the source wrote (writes that shared
                # the element in the program's own storage wrote the same value: a reduction's steps)
                tensor = old_w[src].get_tuple_name(DIM.out)
                same = union([w for w in old_w.values() if w.get_tuple_name(DIM.out) == tensor])
                other = new_w[src].apply_range(every_new.reverse()).subtract(old_w[src].apply_range(same.reverse()))
                others[src] = other.intersect(lex(n, "lt"))
            other = others[src]
            bad = time_pairs(d, scheds).range_product(other).intersect_range(lex(n, "gt").wrap())
            bad = bad.intersect_params(now.context)
            if not bad.is_empty():
                by = next((x.stage for x in now.statements if x.name in new_w and not new_w[src].apply_range(
                    new_w[x.name].reverse()).intersect(other).is_empty()), None)
                out.append(Overwrite(owner.get(src, first), bad, dep=d, by=by))
        if buf.op.is_placeholder:
            parts = _part_names(sch, base, first.storage.parts)
            out += _inputs_overwritten(buf, first, orig, new_w, owner, scheds, n, now.context, parts)
    return out


def _part_names(sch: Schedule, base: ProgramOrder, parts: tuple) -> dict[str, tuple[int, str]]:
    """The isl names the arrays taking turns have in the program's own model, each with its
    slot. That model may be an identical program's (cached by content), so each array is found
    by its stage's position."""
    at = {id(st.op): k for k, st in enumerate(sch.stages)}
    stages = base.model.sch.stages
    out = {}
    for k, t in enumerate(parts):
        pos = at.get(id(t.op))
        name = base.model.namer.known(stages[pos].op.output(0)) if pos is not None else None
        if name is not None:
            out[name] = (k, t.name)
    return out


def _into_slot(rel: isl.Map, k: int, name: str) -> isl.Map:
    """A read of one of the arrays taking turns as a read of slot ``k`` of the tensor standing
    for them (``name``)."""
    return rel.insert_dims(DIM.out, 0, 1).fix_val(DIM.out, 0, isl.Val.int_from_si(rel.get_ctx(), k)).set_tuple_name(DIM.out, name)


def _inputs_overwritten(buf: Any, first: Stage, orig: dict, new_w: dict, owner: dict, scheds: dict, n: int,
                        context: isl.Set, parts: dict[str, tuple[int, str]]) -> list[Overwrite]:
    """Reads of the input ``buf``'s own values (in the program's meaning) that run after a
    stage stored into ``buf`` wrote over the element; ``parts``: the arrays ``buf`` stands for
    (by their names in the program's model, with their slots and own names), whose reads are
    reads of it."""
    moved_w = union([w for k, w in new_w.items() if k in owner])
    if moved_w is None:
        return []
    out = []
    # by the tuple name: the program order is cached by content, so its tensors may be those of an
    # earlier, identical program
    tuple_name = next(iter(new_w.values())).get_tuple_name(DIM.out)
    for (name, x), (read, reads) in ((item, group) for item in orig.items() for group in _read_groups(
            item[1], tuple_name, parts)):
        if name not in scheds:
            continue
        timed = union([r.apply_domain(scheds[name]) for r in reads])
        bad = timed.apply_range(moved_w.reverse()).intersect(lex(n, "gt")).intersect_params(context)
        if bad.is_empty():
            continue
        writer = next((owner[k] for k, w in new_w.items() if k in owner and not timed.apply_range(w.reverse())
                       .intersect(lex(n, "gt")).intersect_params(context).is_empty()), None)
        at = bad.domain().apply(scheds[name].reverse()).intersect(x.domain).sample_point()
        vals = point_values(at, DIM.set, len(x.dim_vars))
        where = ", ".join(f"{shown(v.name)} = {k}" for v, k in zip(x.dim_vars, vals))
        out.append(Overwrite(writer or first, bad, reader=x, at=where, tensor=read))
    return out


def _read_groups(x, tuple_name: str, parts: dict[str, tuple[int, str]]) -> list[tuple[str, list[isl.Map]]]:
    """``x``'s reads of the buffer (``tuple_name``) and of each of the arrays it stands for,
    each as reads of the buffer, by the tensor read ("" for the buffer itself)."""
    own = [a.relation for a in x.reads if a.relation.get_tuple_name(DIM.out) == tuple_name]
    out = [("", own)] if own else []
    for got, (k, shown_as) in parts.items():
        rel = [_into_slot(a.relation, k, tuple_name) for a in x.reads if a.relation.get_tuple_name(DIM.out) == got]
        if rel:
            out.append((shown_as, rel))
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
_BASE_LOCK = threading.Lock()  # builds in several threads (run_ranks' ranks) share it


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
    with _BASE_LOCK:
        got = _BASE.pop(key, None) if key is not None else None
        if got is not None:
            _BASE[key] = got
            return got
    model = analysis(plain).model
    got = ProgramOrder(model, program_dependences(model, only))
    if key is not None:
        with _BASE_LOCK:
            _BASE[key] = got
            while len(_BASE) > 16:
                del _BASE[next(iter(_BASE))]
    return got


__all__ = ["Overwrite", "ProgramOrder", "fold_conflicts", "moved", "order_conflicts", "program_order"]
