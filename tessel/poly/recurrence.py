"""The order of a recurrence's loops against its reads of itself, decided exactly.

A definition of ``te.recurrence`` reads the tensor as it is when the read happens (see
``te/recurrence.py``): a point its own loops write *before* the read gives the new value, a
point they write *after* it would give the value about to be replaced, which is not what the
definition says. ``te.recurrence`` picks each axis's direction from the constant offsets of
the self-reads; here every self-read is checked, under the schedule as it now is (splits,
reorders, directions), with isl: the pairs (reader instance, writer instance of the element
it reads) with the writer strictly later in time must not exist. A refusal gives one such
pair, so the user sees which read and which loop order clash.

Other stages that touch the storage of a recurrence written in place (``inplace=Img``) must
run before its first definition or after its last: one computed inside a definition's loops
would read the input half overwritten.
"""

from __future__ import annotations

import islpy as isl

from ..errors import ScheduleError
from ..ir.names import shown
from ..schedule.commands import storage_choice
from ..schedule.kinds import INLINE, ROOT
from .model import Model, Statement, build
from .space import DIM, point_values


def check_recurrences(model: Model) -> None:
    """Refuse a definition that reads a point of its tensor written later by its own loops, or
    a stage run inside a recurrence that reads or writes the storage it overwrites."""
    for st in model.sch.stages:  # the model's storage of the definitions is the root's (as lowering has it)
        if getattr(st.op, "definitions", ()) and st.attach_type not in (ROOT, INLINE):
            name = shown(st.name)
            raise ScheduleError(
                f"definition {name} of a recurrence was moved inside another stage's loop, but it must run whole, "
                f"after the definition before it; leave it at the root: s[{name}].compute_root()")
    for stmt in model.statements:
        if getattr(stmt.stage.op, "definitions", ()):
            _check_self_reads(model, stmt)
    _check_reads_written(model)
    _check_interleaving(model)


def _check_reads_written(model: Model) -> None:
    """Refuse a self-read of an element that nothing has written when it is read: the
    definitions run one after the other, so a value a *later* definition gives (a boundary
    written last) does not exist yet for an earlier one, and the read would see uninitialized
    memory. A recurrence written in place reads its input there instead, which is its meaning.
    Judged on the recurrence's own elements: with its storage folded or moved, on the schedule
    without that choice (a fold changes where values live, not which exist)."""
    for mine in _recurrences(model):
        if mine[0].stage.op.base.op.is_placeholder:
            continue  # in place: an element not written yet holds the input
        if any(_storage_chosen(model, s) for s in mine):
            plain = model.sch.copy(record=False)
            for st in plain.stages:
                if storage_choice(plain, st):
                    st.storage = None
            unfolded = build(plain)
            pos = {id(st): k for k, st in enumerate(model.sch.stages)}
            want = {pos[id(s.stage)] for s in mine}
            mine = [s for s in unfolded.statements if plain.stages.index(s.stage) in want]
            context = unfolded.context
        else:
            context = model.context
        _unwritten_reads(mine, context)


def _recurrences(model: Model) -> list[list[Statement]]:
    """The statements of each recurrence, found by the storage its definitions share (one
    tensor; the definitions' tuples are not one object after a round trip through an IR
    document)."""
    groups: dict[int, list[Statement]] = {}
    for stmt in model.statements:
        op = stmt.stage.op
        if getattr(op, "definitions", ()) and getattr(op, "base", None) is not None:
            groups.setdefault(id(op.base.op), []).append(stmt)
    return list(groups.values())


def _unwritten_reads(mine: list[Statement], context: isl.Set) -> None:
    writers = [(w, w.writes[0].relation) for w in mine if w.writes and w.schedule is not None]
    if not writers:
        return
    storage = writers[0][1].get_tuple_name(DIM.out)
    for stmt in mine:
        if stmt.schedule is None:
            continue
        own = stmt.writes[0].relation if stmt.writes else None
        for acc in stmt.reads:
            if acc.relation.get_tuple_name(DIM.out) != storage:
                continue
            if stmt.role == "update" and own is not None and acc.relation.is_equal(own):
                continue  # a reduction's accumulator: read and written by the same instance
            reads = acc.relation.domain().intersect_params(context)
            written = None
            for w, wrel in writers:
                pairs = acc.relation.apply_range(wrel.reverse())  # reader -> writer of the element read
                timed = pairs.apply_domain(stmt.schedule).apply_range(w.schedule).intersect_params(context)
                earlier = timed.intersect(isl.Map.lex_gt(timed.get_space().domain()))  # the writer ran before
                got = earlier.domain().apply(stmt.schedule.reverse())
                written = got if written is None else written.union(got)
            bad = reads.subtract(written) if written is not None else reads
            if bad.is_empty():
                continue
            vals = point_values(bad.sample_point(), DIM.set, len(stmt.dim_vars))
            at = ", ".join(f"{shown(v.name)} = {x}" for v, x in zip(stmt.dim_vars, vals))
            name, later = shown(stmt.stage.name), _writer_after(acc, stmt, writers, bad)
            by = f"; {later} writes it, but runs after {name} (definitions run one after the other)" if later else ""
            raise ScheduleError(
                f"recurrence {name} reads {shown(acc.text)} where nothing has written that element yet (for {at}){by}: "
                f"the read would see uninitialized memory. Give that value in {name} itself or in a definition "
                f"before it (a boundary as a select in the same definition), or read it from another tensor")


def _writer_after(acc, stmt: Statement, writers: list, bad: isl.Set) -> str:
    """The definition that writes the element a refused read wants, if one does (later)."""
    for w, wrel in writers:
        if not acc.relation.intersect_domain(bad).apply_range(wrel.reverse()).is_empty():
            return shown(w.stage.name)
    return ""


def _check_self_reads(model: Model, stmt: Statement) -> None:
    if stmt.schedule is None or not stmt.writes or _storage_chosen(model, stmt):
        return
    write = stmt.writes[0].relation
    sched = stmt.schedule
    for acc in stmt.reads:
        if acc.relation.get_tuple_name(DIM.out) != write.get_tuple_name(DIM.out):
            continue
        if stmt.role == "update" and acc.relation.is_equal(write):
            continue  # a reduction's accumulator: read and written by the same instance
        pairs = acc.relation.apply_range(write.reverse())  # reader -> writer of the element read
        timed = pairs.apply_domain(sched).apply_range(sched).intersect_params(model.context)
        later = timed.intersect(isl.Map.lex_lt(timed.get_space().domain()))
        if later.is_empty():
            continue
        reader = pairs.intersect_domain(later.domain().apply(sched.reverse())).domain()
        pt = reader.sample_point()
        vals = point_values(pt, DIM.set, len(stmt.dim_vars))
        at = ", ".join(f"{shown(v.name)} = {x}" for v, x in zip(stmt.dim_vars, vals))
        name = shown(stmt.stage.name)
        raise ScheduleError(
            f"recurrence {name} reads {shown(acc.text)}, but the loops, in the order the schedule gives them, "
            f"write that element only after the read (for {at}): the read would see the value the definition "
            f"is about to replace. Run the loops so that what is read is written first (undo the reorder or "
            f"split that changed the order), or read the value from another tensor")


def _storage_chosen(model: Model, stmt: Statement) -> bool:
    """Whether the recurrence's storage is a fold or a fresh buffer: its elements are then no
    longer the tensor's, and the self-reads are judged, with every dependence of the program,
    against the final schedule (``order.order_conflicts``) and the storage (``fold_conflicts``)."""
    op = stmt.stage.op
    home = model.sch.stage_map.get(op.storage(op.output(0)).op)
    return home is not None and storage_choice(model.sch, home)


def _check_interleaving(model: Model) -> None:
    """An in-place recurrence's storage touched by a stage that runs between its definitions."""
    for mine in _recurrences(model):
        base = mine[0].stage.op.base
        if not base.op.is_placeholder:
            continue
        storage = next((s.writes[0].relation.get_tuple_name(DIM.out) for s in mine if s.writes), None)
        span = _span(mine)
        for other in model.statements:
            if other in mine or other.schedule is None or span is None:
                continue
            if not any(a.relation.get_tuple_name(DIM.out) == storage for a in other.accesses):
                continue
            times = other.domain.apply(other.schedule)
            if not times.intersect(span).is_empty():
                raise ScheduleError(
                    f"stage {shown(other.stage.name)} reads {shown(base.name)}, which recurrence "
                    f"{shown(mine[0].stage.op.definitions[-1].op.name)} overwrites in place, while the recurrence runs (it was computed "
                    f"inside one of its loops or inlined into it): it would read some elements already replaced. "
                    f"Compute it before: s[{shown(other.stage.name)}].compute_root()")


def _span(stmts: list[Statement]) -> isl.Set | None:
    """The times strictly between the first and the last instance of ``stmts``."""
    times = None
    for s in stmts:
        if s.schedule is None:
            return None
        t = s.domain.apply(s.schedule)
        times = t if times is None else times.union(t)
    if times is None:
        return None
    lo, hi = times.lexmin(), times.lexmax()
    lt = isl.Map.lex_lt(times.get_space())
    return lo.apply(lt).intersect(hi.apply(lt.reverse()))
