"""The dependence check run after every command, and at ``verify``: refusals with a repair.

A command (``after``, ``shift``, ``skew``, ``reverse``, ``interchange``, ``store_in``, ...)
changes statement schedules; right after it, every dependence of the program order must still
run source first (``poly.order.order_conflicts``). When one does not, the command is refused with a
:class:`~tessel.schedule.legality.Violation` of kind ``dependence-order``: the dependence it
breaks (kind, source, sink, tensor, distance vectors) with a concrete pair of instances, and,
where tessel finds one, a fix computed from the dependences -- the shifts that make a fusion
legal, or the deepest loop where it is possible (``legalize_fusion``); the skew that keeps every
dependence (``wavefront``). A fix is offered only after its steps, replayed onto the schedule
as it was before the command, leave it legal (``proposals.record``).
"""

from __future__ import annotations

import warnings
from typing import Any

import islpy as isl

from ..bound.infer import UNBOUNDED_READER
from ..errors import ScheduleError, TesselError, TesselWarning
from ..ir import expr as E
from ..poly.analysis import analysis
from ..poly.commands import check_storage
from ..poly.legality import Conflict, distance_text
from ..poly.order import Overwrite, fold_conflicts, order_conflicts
from ..schedule.commands import Order
from ..schedule.fixes import FixBuilder, Names, choose
from ..schedule.kinds import INLINE
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from ..schedule.violation import Violation, ViolationKind
from .proposals import Proposal, legalize_fusion, proposing, quiet, record, wavefront

#: a schedule of more computed stages than this has its commands' dependences checked once, by
#: ``verify`` at build, not after each command: each check builds the model of every stage, so
#: checking each of many commands costs the square of the program's size (adi's time loop
#: written out over 32 steps: 192 stages and as many store_in, minutes before the build began)
EAGER_CHECK_STAGES = 40


def check_command(sch: Schedule, stage: Stage, command: Any) -> None:
    """Refuse ``command`` (just applied to ``stage``) if the schedules now break a dependence
    it is answerable for (``involved``); the whole schedule is checked again at ``verify``, with
    the storage choices (a fold or a fresh buffer is declared before or after the fusion that
    makes it legal, so it is judged on the finished schedule). An isl.Error (no model while a
    tree rule is broken) passes to the caller, which weighs it against the whole check. A large
    schedule's commands are judged at build only (``EAGER_CHECK_STAGES``), which says so once."""
    if _checked_at_build_only(sch, stage, command):
        return
    try:
        found = order_conflicts(sch, involved(stage, command))
    except ScheduleError as err:
        if getattr(err, "rule", None) != UNBOUNDED_READER:
            raise
        # InferBound refused the schedule (attachments that contradict the reads): the model
        # cannot be built, so the command cannot be judged now; the build refuses it, with a fix
        return
    if not found:  # storage choices (folds, fresh buffers) are judged by verify: see order_violations
        return
    if _broken_before(sch, stage, command):  # not this command's doing: the build judges the final schedule
        sch.pending_conditions = (*sch.pending_conditions, (stage.name, (
            f"{command.text()} of {stage.name} was accepted while the schedule already broke a dependence it "
            "answers for")))
        return
    sharing = _legal_if_shared(sch, stage, command)
    if sharing:  # a step on the way to a legal schedule: the final one is checked at build
        names = ", ".join(st.name for st in sharing)
        verb = "runs in the same loops, is" if len(sharing) == 1 else "run in the same loops, are"
        sch.pending_conditions = (*sch.pending_conditions, (stage.name, (
            f"{command.text()} of {stage.name} was accepted as legal only if {names}, which {verb} given it too")))
        return
    v = violation(sch, stage, command, found[0])
    raise v.error(len(found) - 1)


def _checked_at_build_only(sch: Schedule, stage: Stage, command: Any) -> bool:
    computed = sum(1 for st in sch.stages if not st.is_placeholder and st.attach_type != INLINE)
    if computed <= EAGER_CHECK_STAGES:
        return False
    if not getattr(sch, "_said_checked_at_build", False):
        sch._said_checked_at_build = True  # type: ignore[attr-defined]
        warnings.warn(TesselWarning(
            f"stage {stage.name}: {command.text()} and the commands after it are checked against the program's "
            f"dependences once, when the schedule is built, not one by one: the schedule has {computed} computed "
            f"stages (more than {EAGER_CHECK_STAGES}), and each check models every stage. A command that breaks "
            "a dependence is refused then, with the same witness and fix"), stacklevel=2)
    return True


def _broken_before(sch: Schedule, stage: Stage, command: Any) -> bool:
    """Whether the schedule before ``command`` already broke the dependences it answers for
    (an order given earlier, which a later command may repair): refusing the command for them
    would refuse a step towards a legal schedule (fuzz F18)."""
    swap = getattr(sch, "_before_command", None)
    if swap is None:
        return False
    undo, redo = swap
    undo()
    try:
        return bool(order_conflicts(sch, involved(stage, command)))
    except (isl.Error, ScheduleError):
        return False
    finally:
        redo()


def _legal_if_shared(sch: Schedule, stage: Stage, command: Any) -> list[Stage]:
    """The other stages running in the loops a reshaping command (interchange, skew, reverse)
    changes, when giving them the same command keeps every dependence among them; else [].

    Tiramisu gives such a command to one computation at a time: stages fused by ``after`` are
    interchanged or skewed one call after the other, and between the calls the dependences
    across them run the wrong way. Refusing the first call would refuse a reachable legal
    schedule; the build checks the final one. A shift is not deferred: it sets one stage's
    offset against the others, which shifting them all alike would undo."""
    from dataclasses import fields, replace

    loops = _loops(command)
    if not getattr(command, "reshapes", False) or not all(iv in stage.leaf_iter_vars for iv in loops):
        return []
    group = _fused_with(sch, stage, max(stage.leaf_iter_vars.index(iv) for iv in loops))
    if len(group) == 1:
        return []
    trial = sch.copy(record=False)
    at = {id(iv): stage.leaf_iter_vars.index(iv) for iv in loops}
    for other in group[1:]:
        mine = trial.stages[sch.stages.index(other)]
        moved = {f.name: mine.leaf_iter_vars[at[id(v)]] for f in fields(command)
                 if id(v := getattr(command, f.name)) in at and at[id(v)] < len(mine.leaf_iter_vars)}
        if len(moved) != len(loops):
            return []
        same = replace(command, **moved)
        if not any(_same(same, c) for c in mine.commands):  # not given it already
            mine.commands = (*mine.commands, same)
    pos = {sch.stages.index(st) for st in group}
    try:
        left = order_conflicts(trial, lambda d: _pos(d.source.stage) in pos or _pos(d.sink.stage) in pos)
    except (ScheduleError, isl.Error):
        return []
    return [] if left else group[1:]


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and all(x is y or (not isinstance(x, E.IterVar) and x == y)
                                      for x, y in zip(vars(a).values(), vars(b).values()))


def _fused_with(sch: Schedule, stage: Stage, depth: int) -> list[Stage]:
    """``stage`` and the stages ordered with it (``after``/``before``, in a chain) inside at
    least its first ``depth`` + 1 loops."""
    group = [stage]
    grown = True
    while grown:
        grown = False
        for o in sch.orders:
            level = None if o.level is None else next(
                (k for st in (o.stage, o.anchor) for k, iv in enumerate(st.leaf_iter_vars) if iv is o.level), None)
            ends = [o.stage, o.anchor]
            inside = [any(x is g for g in group) for x in ends]
            if level is not None and level >= depth and inside.count(True) == 1:
                group.append(ends[inside.index(False)])
                grown = True
    return group


def fold_violation(sch: Schedule, lost: Overwrite, propose: bool = True, fixes: dict | None = None) -> Violation:
    """A storage choice that loses a value: a fold too small for the schedule, or a store into a
    tensor whose values are still to be read. ``fixes``: the fix found for a folded stage, by
    stage, shared by its violations (each dependence it breaks is one; the fix, a wider fold,
    is the same for all)."""
    stage = folded = lost.stage
    command, dep = folded.storage, lost.dep
    what = command.text() if hasattr(command, "text") else str(command)
    buf = folded.storage.buffer.name
    if dep is None:
        elsewhere = "a fresh buffer, or storage_fold of its step axis" if getattr(folded.op, "definitions", ()) \
            else "a fresh buffer"
        text = (f"stage {stage.name}: {what} is refused: {lost.reader.label()} reads the values "
                f"{lost.tensor or buf} holds "
                f"when the kernel is called, but {folded.name} has already written over the element it reads "
                f"(for {lost.at}). Store {folded.name} elsewhere ({elsewhere}), or order the loops so that "
                f"every read of {buf} comes first")
    else:
        text = (f"stage {stage.name}: {what} is refused: the {dep.kind} dependence {dep.source.label()} -> "
                f"{dep.sink.label()} (distance {distance_text(dep)}) would read {buf} after another value "
                f"of {(lost.by or folded).name} overwrote the element: the storage holds fewer values than are live at once")
    v = Violation(ViolationKind.DEPENDENCE_ORDER, stage, text, (stage, folded), _loops(command))
    v.dependence = dep  # type: ignore[attr-defined]
    recurrence = bool(getattr(folded.op, "definitions", ()))
    if propose and proposing() and stage is folded and (getattr(command, "folded", False) or recurrence):
        fixes = {} if fixes is None else fixes
        if id(folded) not in fixes:
            fixes[id(folded)] = _wider_fold(undone(sch, stage, command), folded, command)
        fix = fixes[id(folded)]
        if fix is not None:
            v.proposed = fix
            instead = "" if getattr(command, "folded", False) else f" (in a temporary, instead of the {what})"
            v.explanation += f". The least fold that keeps every value until it is read{instead}: {fix.code}"
    return v


def _wider_fold(before: Schedule, st: Stage, cmd: Any) -> Any:
    """``storage_fold`` of the same axis by the least factor (up to 64) that is legal (of a
    recurrence stored elsewhere without a fold, its step axis: its first).

    Each candidate is replayed and checked (``record``), so whatever is offered is legal. The
    search asks the widest first: a fold keeps the values of the last ``f`` steps, and a value
    still read when a wider fold overwrites it is read after a narrower one would have, so when
    the widest is refused none is, and the least is found by bisection (a gramschmidt refusal
    tried all 63 factors: 8.5 s). Were a narrower fold legal where a wider one is not, the fix
    offered would only be wider than it need be."""
    k = next((n for n, x in enumerate(cmd.indices) if isinstance(x, E.FloorMod)), None)
    if cmd.parts:  # arrays taking turns: their first index chooses the array, the rest are the axes'
        k = next((n - 1 for n, x in enumerate(cmd.indices) if n and isinstance(x, E.FloorMod)), None)
        k = 0 if k is None else k
    if k is None and getattr(st.op, "definitions", ()):
        k = 0
    if k is None:
        return None
    axis = st.op.axis[k]
    mine = before.stages[st.schedule.stages.index(st)]
    names = Names(before)
    tried: dict[int, Any] = {}

    def legal(f: int) -> Any:
        if f not in tried:
            code = f"s[{names.stage(mine)}].storage_fold({names.axis(mine, axis)}, {f})"
            tried[f] = record(before, [(mine, "storage_fold", (axis, f))], names, code)
        return tried[f]

    ext = axis.dom.extent if axis.dom is not None else None
    lo, hi = 2, min(64, ext.value) if isinstance(ext, E.IntImm) and ext.value >= 2 else 64  # past the extent: no fold
    if legal(hi) is None:
        return None
    while lo < hi:  # legal(hi) holds; find the least
        mid = (lo + hi) // 2
        if legal(mid) is not None:
            hi = mid
        else:
            lo = mid + 1
    return legal(hi)


def involved(stage: Stage, command: Any):
    """Which dependences ``command`` answers for, as Tiramisu's partial check does: an order,
    those between its two stages (a chain of ``then`` built in any order passes through states
    where a third stage is not placed yet); a loop command, those with an end in a statement
    inside the stage's loops (its own, or a stage computed inside them). Stages are matched by
    position: the dependences may come from an identical program analysed before."""
    stages = stage.schedule.stages
    if isinstance(command, Order):
        pair = {stages.index(command.stage), stages.index(command.anchor)}
        return lambda d: _pos(d.source.stage) in pair and _pos(d.sink.stage) in pair
    inside = {k for k, st in enumerate(stages) if _within(st, stage)}
    return lambda d: _pos(d.source.stage) in inside or _pos(d.sink.stage) in inside


def _pos(st: Stage) -> int:
    return st.schedule.stages.index(st)


def _within(st: Stage, outer: Stage) -> bool:
    seen = 0
    while st is not None and seen < 64:
        if st is outer:
            return True
        st, seen = st.attach_stage, seen + 1
    return False


def violation(sch: Schedule, stage: Stage, command: Any, c: Conflict) -> Violation:
    """The refusal of ``command`` for conflict ``c``, with a fix when one is found."""
    src, snk = c.dep.source.stage, c.dep.sink.stage
    involved = tuple(dict.fromkeys(x for x in (stage, _live(sch, src), _live(sch, snk)) if x is not None))
    what = command.text() if hasattr(command, "text") else str(command)
    text = f"stage {stage.name}: {what} is refused: {c.describe()}"
    v = Violation(ViolationKind.DEPENDENCE_ORDER, stage, text, involved, _loops(command))
    v.dependence = c.dep  # type: ignore[attr-defined]
    v.conflict = c  # type: ignore[attr-defined]
    if proposing():
        p = repair(undone(sch, stage, command), stage, command)
        if p is not None and p.fix is not None:
            v.proposed = p.fix
            v.explanation += f". Computed from the dependences: {p.what} is {p.explanation}" if p.possible else \
                f". Computed from the dependences: {p.explanation}"
    return v


def _live(sch: Schedule, st: Any) -> Stage | None:
    """The stage of ``sch`` at the place of a program-order copy's stage ``st``."""
    try:
        return sch.stages[_pos(st)]
    except (ValueError, IndexError, AttributeError):
        return None


def _loops(command: Any) -> tuple[E.IterVar, ...]:
    return tuple(v for v in vars(command).values() if isinstance(v, E.IterVar)) if hasattr(command, "__dict__") \
        else ()


def undone(sch: Schedule, stage: Stage, command: Any) -> Schedule:
    """A copy of ``sch`` without ``command`` (the last command of ``stage``, or its order)."""
    before = sch.copy(record=False)
    mine = before.stages[sch.stages.index(stage)]
    if isinstance(command, Order):
        before.orders = tuple(o for o in before.orders if o.stage is not mine)
    elif mine.commands and mine.commands[-1] is command:
        mine.commands = mine.commands[:-1]
    elif command is getattr(mine, "storage", None):
        mine.storage = None
    return before


def repair(before: Schedule, stage: Stage, command: Any) -> Proposal | None:
    """The commands, computed from the dependences, that do what ``command`` meant legally."""
    st = before.stages[stage.schedule.stages.index(stage)]
    try:
        if isinstance(command, Order):
            return _repair_order(before, command)
        if _couples(command):  # a skew of two loops: the one that keeps every dependence
            p = wavefront(before, st, *command.inputs, parallel=False)
            return p if p.steps else None
    except ScheduleError:
        return None
    return None


def _couples(command: Any) -> bool:
    """A loop command whose map mixes its two loops' values (a skew, whatever its matrix)."""
    m = getattr(command, "matrix", ())
    return len(m) == 2 and (m[0][1] != 0 or m[1][0] != 0)


def _repair_order(before: Schedule, cmd: Any) -> Proposal | None:
    pos = {id(x): k for k, x in enumerate(cmd.stage.schedule.stages)}
    late, early = before.stages[pos[id(cmd.stage)]], before.stages[pos[id(cmd.anchor)]]
    if cmd.before:
        late, early = early, late
    if cmd.level is None:
        return None
    level = cmd.level
    if level not in late.leaf_iter_vars:
        k = next((n for n, iv in enumerate(early.leaf_iter_vars) if iv is level), None)
        if k is None or k >= len(late.leaf_iter_vars):
            return None
        level = late.leaf_iter_vars[k]
    return legalize_fusion(before, late, early, level)


def order_violations(sch: Schedule, propose: bool = True) -> list[Violation]:
    """``verify``'s check of the final schedule: each dependence of the program's order it
    breaks (one per dependence), with a pair of instances it runs the wrong way round and, where
    one is found, a fix replayed onto a copy and checked (``choose``)."""
    out = []
    for c in order_conflicts(sch):
        snk = _live(sch, c.dep.sink.stage)
        st = snk if snk is not None else sch.stages[0]
        text = f"stage {st.name}: the schedule breaks a dependence of the program: {c.describe()}"
        ends = {c.dep.source.stage.name, c.dep.sink.stage.name}
        text += "".join(f"; {why}" for name, why in sch.pending_conditions if name in ends)
        v = Violation(ViolationKind.DEPENDENCE_ORDER, st, text, (st,), ())
        v.dependence = c.dep  # type: ignore[attr-defined]
        v.conflict = c  # type: ignore[attr-defined]
        if propose and proposing():
            _propose_order(sch, v, c)
        out.append(v)
    fixes: dict = {}
    for lost in ([] if out or not _in_bounds(sch) else fold_conflicts(sch)):
        out.append(fold_violation(sch, lost, propose, fixes))
    return out


def _propose_order(sch: Schedule, v: Violation, c: Conflict) -> None:
    """The loops of the dependence's stages put back in the program's order (a reorder: what a
    split, tile or reorder changed), kept only if the schedule is legal after it."""
    stages = dict.fromkeys(x for x in (_live(sch, c.dep.sink.stage), _live(sch, c.dep.source.stage)) if x is not None)
    candidates = []
    for st in stages:
        order = program_loop_order(st)
        if order is not None and order != list(st.leaf_iter_vars):
            candidates.append(FixBuilder(Names(sch)).reorder(st, order))
    with quiet():
        choose(sch, v, candidates)
    if v.proposed is not None:
        v.explanation += ". Running the loops in the program's order keeps it (the fix below)"


def program_loop_order(st: Stage) -> list[E.IterVar] | None:
    """``st``'s loops in the order that runs its instances in the program's order: each root
    axis's loops in the axes' order, a split's outer loop before its inner; None where a loop
    is made of several axes (a fuse) and no order of the loops gives it."""
    made = {id(i): rel for rel in st.relations for i in rel.inputs}
    leaves = {id(x) for x in st.leaf_iter_vars}
    out = [o for rel in st.relations if not rel.inputs for o in rel.outputs if id(o) in leaves]  # extent-1 loops

    def walk(iv: E.IterVar) -> bool:
        rel = made.get(id(iv))
        if rel is None:
            if id(iv) in leaves:
                out.append(iv)
            return True
        return len(rel.inputs) == 1 and all(walk(o) for o in rel.outputs)

    if not all(walk(r) for r in st.op.root_iter_vars) or len(out) != len(leaves):
        return None
    return out


def _in_bounds(sch: Schedule) -> bool:
    """Whether every access stays inside its tensor (a store_in leaving its buffer is refused by
    the bounds check, with a witness, before its storage could be judged)."""
    try:
        found = analysis(sch)
        found.check_bounds()
        check_storage(found.model)
    except TesselError:
        return False
    return True



__all__ = ["check_command", "order_violations", "program_loop_order", "repair", "undone", "violation"]
