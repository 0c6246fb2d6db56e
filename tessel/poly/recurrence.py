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
from .space import DIM, NotAffine, point_values


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
    """Refuse a read of a recurrence's element that nothing has written when it is read: the
    definitions run one after the other, so a value a *later* definition gives (a boundary
    written last) does not exist yet for an earlier one; and a reader after the recurrence may
    ask for a point no definition covers. Either would see uninitialized memory. A recurrence
    written in place reads its input there instead, which is its meaning. Judged on the
    recurrence's own elements: with its storage folded or moved, on the schedule without that
    choice (a fold changes where values live, not which exist)."""
    unfolded: list = []  # the model without storage choices, built once for every recurrence that needs it
    for mine in _recurrences(model):
        if mine[0].stage.op.base.op.is_placeholder:
            continue  # in place: an element not written yet holds the input
        everyone, context = model.statements, model.context
        if any(_storage_chosen(model, s) for s in mine):
            if not unfolded:
                plain = model.sch.copy(record=False)
                for st in plain.stages:
                    if storage_choice(plain, st):
                        st.storage = None
                unfolded.append((plain, build(plain)))
            plain, bare = unfolded[0]
            want = {model.sch.stages.index(s.stage) for s in mine}
            everyone, context = bare.statements, bare.context
            mine = [s for s in everyone if plain.stages.index(s.stage) in want]
        _unwritten_reads(mine, everyone, context)


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


def _unwritten_reads(mine: list[Statement], everyone: list[Statement], context: isl.Set) -> None:
    """Each read of the storage ``mine`` (a recurrence's statements) write, by any statement,
    against the writes that run before it."""
    writers = [(w, w.writes[0].relation) for w in mine if w.writes and w.schedule is not None]
    if not writers:
        return
    storage = writers[0][1].get_tuple_name(DIM.out)
    context = context.intersect_params(_not_empty(mine[-1]))
    for stmt in everyone:
        if stmt.schedule is None:
            continue
        own = stmt.writes[0].relation if stmt.writes else None
        for acc in stmt.reads:
            if acc.relation.get_tuple_name(DIM.out) != storage:
                continue
            if stmt.role in ("update", "finish") and own is not None and acc.relation.is_equal(own):
                continue  # a reduction's accumulator: read and written by the same instance
            bad = _read_before_written(stmt, acc, writers, context)
            if bad is not None:
                _refuse_unwritten(stmt, acc, mine, writers, bad)


def _not_empty(last: Statement) -> isl.Set:
    """The sizes for which the recurrence's tensor has elements: a read of an empty tensor has
    no element to be inside of (the bounds check leaves it to the caller, and so does this)."""
    conv, out = last.converter, None
    try:
        for n in last.stage.op.output(0).shape:
            here = conv.aff(n).ge_set(conv.const(1)).params()
            out = here if out is None else out.intersect(here)
    except NotAffine:
        return isl.Set.universe(last.domain.get_space().params())
    return out if out is not None else isl.Set.universe(last.domain.get_space().params())


def _read_before_written(stmt: Statement, acc, writers: list, context: isl.Set) -> isl.Set | None:
    """The instances of ``stmt`` whose read ``acc`` finds no write of its element before it."""
    written = None
    for w, wrel in writers:
        pairs = acc.relation.apply_range(wrel.reverse())  # reader -> writer of the element read
        timed = pairs.apply_domain(stmt.schedule).apply_range(w.schedule).intersect_params(context)
        earlier = timed.intersect(isl.Map.lex_gt(timed.get_space().domain()))  # the writer ran before
        got = earlier.domain().apply(stmt.schedule.reverse())
        written = got if written is None else written.union(got)
    reads = acc.relation.domain().intersect_params(context)
    bad = reads.subtract(written) if written is not None else reads
    return None if bad.is_empty() else bad


def _refuse_unwritten(stmt: Statement, acc, mine: list[Statement], writers: list, bad: isl.Set) -> None:
    vals = point_values(bad.sample_point(), DIM.set, len(stmt.dim_vars))
    at = ", ".join(f"{shown(v.name)} = {x}" for v, x in zip(stmt.dim_vars, vals))
    name, later = shown(stmt.stage.name), _writer_after(acc, writers, bad)
    rec = shown(mine[-1].stage.op.definitions[-1].op.name)
    if not any(stmt is s for s in mine):
        raise ScheduleError(
            f"stage {name} reads {shown(acc.text)} where no definition of recurrence {rec} writes (for {at}): it "
            f"would read uninitialized memory. Cover those points with a definition (its where=), or read only "
            f"the points the definitions write")
    if later is stmt:
        by = (f"; {name}'s own loops write it, but only after the read in the order the schedule gives them "
              f"(undo the reorder, tile or split that changed it)")
    elif later is not None:
        by = f"; {shown(later.stage.name)} writes it, but runs after {name} (definitions run one after the other)"
    else:
        by = ""
    todo = ("Run the loops so that what is read is written first" if later is stmt else
            f"Give that value in {name} itself or in a definition before it (a boundary as a select in the same "
            f"definition), or read it from another tensor")
    raise ScheduleError(f"recurrence {name} reads {shown(acc.text)} where nothing has written that element yet "
                        f"(for {at}){by}: the read would see uninitialized memory. {todo}")


def _writer_after(acc, writers: list, bad: isl.Set) -> Statement | None:
    """The statement that writes the element a refused read wants, if one does (later)."""
    for w, wrel in writers:
        if not acc.relation.intersect_domain(bad).apply_range(wrel.reverse()).is_empty():
            return w
    return None


def _check_self_reads(model: Model, stmt: Statement) -> None:
    if stmt.schedule is None or not stmt.writes or _storage_chosen(model, stmt):
        return
    write = stmt.writes[0].relation
    sched = stmt.schedule
    for acc in stmt.reads:
        if acc.relation.get_tuple_name(DIM.out) != write.get_tuple_name(DIM.out):
            continue
        if stmt.role in ("update", "finish") and acc.relation.is_equal(write):
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
        _check_input_read_first(model, mine, base)
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


def _check_input_read_first(model: Model, mine: list[Statement], base) -> None:
    """A stage that reads the input an in-place recurrence overwrites means the input's values,
    so it must run before the recurrence starts. The stage order puts every such reader that
    does not need the recurrence first (``te.operation.stage_order``); one that needs both, or
    that a schedule moved after it, would read the results (silently, before this check)."""
    times = [s.domain.apply(s.schedule) for s in mine if s.schedule is not None]
    if not times:
        return
    every = times[0]
    for t in times[1:]:
        every = every.union(t)
    started = every.lexmin().apply(isl.Map.lex_le(every.get_space()))  # from the first instance on
    for other in model.statements:
        if any(other is s for s in mine) or other.schedule is None:
            continue
        if not any(a.tensor is base for a in other.reads):
            continue
        if other.domain.apply(other.schedule).intersect(started).intersect_params(model.context).is_empty():
            continue
        name, rec = shown(other.stage.name), shown(mine[-1].stage.op.definitions[-1].op.name)
        raise ScheduleError(
            f"stage {name} reads {shown(base.name)}, the input that recurrence {rec} overwrites in place, but runs "
            f"after the recurrence starts: it would read the results instead of the input. It needs the "
            f"recurrence's results too (or was placed after it), so it cannot run first: write the recurrence "
            f"into a tensor of its own (leave out inplace=), or read the input in a stage of its own that needs "
            f"nothing of {rec}")


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
