"""Tiramisu's commands in the polyhedral model: each composes onto statements' schedules.

``tessel.schedule.commands`` records the commands; here they act on the time vectors the
model derives from the TE loop structure (``[s0, d0, s1, d1, ..., sn]``, static positions as
ints and loop coordinates as isl functions of the statement's dimensions), before the vectors
become isl maps. So a statement's schedule is the TE nest's 2d+1 map composed with its
commands, and everything that reads the model (dependences, legality, isl code generation)
sees them.

A loop command on stage X rewrites the coordinate of X's loop in every statement inside that
loop: X's own statements and those of stages computed inside it, which move with the loop.
An order (``after``/``before``) rewrites static positions only: the stage takes the anchor's
static positions outside the shared loops and a new one inside the innermost of them, and the
statements after that place move on by one, so that nothing else changes order.

``stored(sch, t, indices)`` is ``store_in``'s effect on accesses: the element a stage's value
lives in.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

import islpy as isl

from ..errors import BoundError, ScheduleError
from ..ir import expr as E
from ..ir.functor import substitute
from ..ir.names import shown
from ..schedule.commands import Order, has_commands
from ..schedule.relations import LoopMap
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from ..te.tensor import Tensor
from .space import DIM

if TYPE_CHECKING:
    from .model import Loop, Model, Statement

Vector = list  # ints (static positions) and isl.PwAff (loop coordinates), one per time dimension


def stored(sch: Schedule, t: Tensor, indices: Sequence[E.PrimExpr]) -> tuple[Tensor, list[E.PrimExpr]]:
    """Where element ``t[indices]`` is stored: ``t`` itself, or the ``store_in`` buffer of its
    stage at the command's indices of ``indices``."""
    st = sch.stage_map.get(t.op)
    home = _home_stage(sch, t)
    if home is not None:  # a definition of a recurrence: its storage is the recurrence's
        st = home
    if st is None or st.storage is None:
        for x in sch.stages:  # one of the arrays taking turns: an element of the tensor standing for them
            k = x.storage.part(t) if x.storage is not None else None
            if k is not None:
                return x.storage.buffer, [E.IntImm(k, "int32"), *indices]
        return t, list(indices)
    sub = {iv.var: i for iv, i in zip(st.op.axis, indices)}
    return st.storage.buffer, [substitute(x, sub) for x in st.storage.indices]


def _home_stage(sch: Schedule, t: Tensor):
    """The stage of the tensor whose storage ``t`` shares (a recurrence's definitions: the last
    one's), when that is another computed stage; else None."""
    storage = getattr(t.op, "storage", None)
    if not callable(storage):
        return None
    home = storage(t)
    if home is t or home.op.is_placeholder:
        return None
    return sch.stage_map.get(home.op)


def check_storage(model: Model) -> None:
    """Refuse a ``store_in`` whose indices leave the buffer for some instance that runs (a
    BoundError with the sizes and the instance), as reads outside a tensor are refused.

    Only elements inside the tensor as written count: an access already outside it (a read at
    sizes where the program reads past a tensor's end) is judged the same with or without the
    command, so the command must not be what refuses it."""
    buffers = {id(st.storage.buffer): st for st in model.sch.stages if st.storage is not None}
    if not buffers:
        return
    ctx = model.context.params()
    for stmt in model.statements:
        conv = stmt.converter
        assert conv is not None
        for acc in stmt.accesses:
            if id(acc.tensor) not in buffers or not acc.exact:
                continue
            where = acc.relation.domain().intersect_params(ctx)
            if acc.inside is not None:
                where = where.intersect(acc.inside)
            pma = isl.PwMultiAff.from_map(acc.relation)
            for k, n in enumerate(acc.tensor.shape):
                idx, size = pma.get_pw_aff(k), conv.aff(n)
                bad = idx.lt_set(conv.const(0)).union(idx.ge_set(size)).intersect(where)
                if not bad.is_empty():
                    raise _outside(model, stmt, acc, k, bad.sample_point(), buffers[id(acc.tensor)])


def _outside(model: Model, stmt: Statement, acc, k: int, p: isl.Point, owner: Stage) -> BoundError:
    names = {isl_name: v.name for v, isl_name in model.params.items()}
    sizes = [f"{names.get(p.get_space().get_dim_name(DIM.param, j), '?')} = "
             f"{p.get_coordinate_val(DIM.param, j).to_python()}" for j in range(p.get_space().dim(DIM.param))]
    at = [f"{v.name} = {p.get_coordinate_val(DIM.set, j).to_python()}" for j, v in enumerate(stmt.dim_vars)]
    verb = "writes" if acc.write else "reads"
    buf, cmd = acc.tensor, "storage_fold" if owner.storage.folded else "store_in"
    fix = ("fold a dimension whose accesses stay inside it" if owner.storage.folded
           else "give store_in an index inside the buffer, or a larger buffer")
    return BoundError(f"stage {shown(owner.name)} is stored in {shown(buf.name)} ({cmd}), whose index {k} "
                      f"leaves its shape ({', '.join(str(x) for x in buf.shape)}): for {', '.join(sizes + at)} "
                      f"{stmt.label()} {verb} {acc.text} there; {fix}")


def apply_commands(sch: Schedule, statements: list[Statement], vectors: dict[int, Vector]) -> None:
    """Compose every command of ``sch`` onto the vectors of the placed ``statements`` (but those
    ``loop_values`` composed onto a stage's loops before a split of them)."""
    if not has_commands(sch):
        return
    placed = [s for s in statements if id(s) in vectors]
    for st in sch.stages:
        early = early_commands(st)
        for cmd in st.commands:
            if any(cmd is c for c in early):
                continue
            moved: dict[int, int] = {}
            for stmt in placed:
                if any(lp.stage is st for lp in stmt.loops):
                    _loop_command(st, cmd, stmt, vectors[id(stmt)], moved)
    for o in sch.orders:
        _order(o, placed, vectors)


# ---- loop commands followed by TE primitives ---------------------------------------------------
def early_commands(st: Stage) -> list:
    """The loop commands of ``st`` a TE primitive acted on afterwards (``tile`` after ``skew``:
    the tile splits the skewed loops), with the commands before them on the same loops: they
    change the values the loops count, before the relations that split them (``loop_values``)."""
    if not st.commands:
        return []
    busy = {id(i) for rel in st.relations for i in rel.inputs}
    out: list = []
    for cmd in reversed(st.commands):
        ivs = {id(v) for v in cmd.inputs}
        if ivs & busy:
            out.insert(0, cmd)
            busy |= ivs
    return out


def loop_values(st: Stage, rmap, value: dict) -> None:
    """Extend ``value`` (root -> its coordinates) to ``st``'s loops as ``pass_down_time`` does,
    with the early commands (``early_commands``) composed in where they were given: each acts on
    its loops' values once they exist, before a relation splits them. A split of a loop runs its
    values in order whatever they are, so the split loops run the skewed, shifted or reversed
    order; a fuse, an interchange or a stage computed inside them would not, and is refused."""
    from ..schedule.dataflow import descendants

    pending = early_commands(st)
    if pending:
        _refuse_early(st, pending, descendants(st, [v for c in pending for v in c.inputs]))
    for rel in st.relations:
        while pending and all(v in value for v in pending[0].inputs):
            _value_command(st, pending.pop(0), rmap, value)
        rel.time_down(rmap, value)
    for cmd in pending:
        _value_command(st, cmd, rmap, value)


def _refuse_early(st: Stage, cmds: list, moved: set[int]) -> None:
    what = ", ".join(c.text() for c in cmds)
    for c in cmds:
        if c.places != tuple(range(len(c.inputs))):  # it moves loops, which a split does not follow
            raise ScheduleError(f"stage {st.name}: {c.text()} was given before a split or fuse of its loops, which "
                                f"then would not follow the interchanged loops; give the split before the interchange, "
                                f"or reorder the split loops instead of interchanging")
    for rel in st.relations:
        # a relation of one loop (a split, a rebase) runs its values in order; a fuse of two does not
        if any(id(i) in moved for i in rel.inputs) and len(rel.inputs) != 1:
            raise ScheduleError(f"stage {st.name}: a {rel.kind} of {', '.join(i.name for i in rel.inputs)} after "
                                f"{what}: a fused loop would not run the transformed order; fuse before the "
                                f"command, or split (tile) the loops instead")
    for other in st.schedule.stages:
        if other.attach_stage is st and id(other.attach_ivar) in moved:
            raise ScheduleError(f"stage {other.name} is computed inside {st.name}'s loop {other.attach_ivar.name}, "
                                f"which was split after {what}: its copies cannot follow the transformed loops; "
                                f"compute it at a loop outside them, or give the command after the split")


def _value_command(st: Stage, cmd: LoopMap, rmap, value: dict) -> None:
    """``cmd`` on the coordinates ``value`` gives ``st``'s loops (one each)."""
    got = [value.get(v) for v in cmd.inputs]
    if any(g is None or len(g) != 1 for g in got):
        raise ScheduleError(f"stage {st.name}: {cmd.text()} acts on a loop fused over a symbolic extent, which "
                            f"has no single coordinate; fuse loops of constant extent")
    cmd.time_down(rmap, value)


# ---- loop commands ---------------------------------------------------------------------------
def _find(st: Stage, stmt: Statement, iv: E.IterVar) -> Loop | None:
    for lp in stmt.loops:
        if lp.stage is st and lp.iter_var is iv:
            if lp.width != 1:
                raise ScheduleError(f"stage {st.name}: loop {iv.name} fuses loops of symbolic extent, which the "
                                    "time-space map keeps as several coordinates; commands need a single loop "
                                    "(fuse loops of constant extent, or give the command before the fuse)")
            return lp
    return None


def _loop_command(st: Stage, cmd: LoopMap, stmt: Statement, vec: Vector, moved: dict[int, int]) -> None:
    """``cmd``'s map on the coordinates of its loops in one statement's time vector: the
    statement's own loops, or those of a stage it is computed inside."""
    conv = stmt.converter
    assert conv is not None
    lps = [_find(st, stmt, v) for v in cmd.inputs]
    if all(lp is None for lp in lps):
        return
    if any(lp is None for lp in lps):
        inside = next(v for v, lp in zip(cmd.inputs, lps) if lp is not None)
        missing = next(v for v, lp in zip(cmd.inputs, lps) if lp is None)
        raise ScheduleError(f"stage {st.name}: {cmd.text()} moves loops {' and '.join(v.name for v in cmd.inputs)} "
                            f"together, but {stmt.label()} runs inside {inside.name} and not inside {missing.name} "
                            "(it is computed between them); compute it outside both loops, or inside the inner one")
    coupled = any(k for row_k, row in enumerate(cmd.matrix) for col, k in enumerate(row) if col != row_k)
    if coupled and any(b.pos != a.pos + 2 for a, b in pairwise(lps)):
        raise ScheduleError(f"stage {st.name}: {cmd.text()} needs two consecutive loops, {cmd.inputs[0].name} just "
                            f"outside {cmd.inputs[1].name}; reorder or interchange them first")
    # a loop shared by several statements moves once: ``moved`` keeps where it was
    where = [moved.setdefault(id(lp), lp.pos) for lp in lps]
    for k, lp in enumerate(lps):  # a loop shared with another statement must land in one place for both
        went = moved.setdefault((id(lp), "to"), where[cmd.places[k]])
        if went != where[cmd.places[k]] or where[k] >= len(vec):
            raise ScheduleError(
                f"stage {st.name}: {cmd.text()} moves loop {lp.name}, which {stmt.label()} shares with another "
                f"statement of {st.name} (a reduction's init and its update share the loops outside the first "
                f"reduction loop), to where each has a loop of its own; give the command to loops on one side of "
                f"the reduction loop, or reorder the loops first")
    old = [vec[p] for p in where]
    for k, lp in enumerate(lps):
        lp.pos = where[cmd.places[k]]
        terms = [x.scale_val(_val(m)) for m, x in zip(cmd.matrix[k], old) if m]
        value = terms[0] if len(terms) > 1 or cmd.matrix[k][k] != 1 else old[k]
        for t in terms[1:]:
            value = value.add(t)
        vec[lp.pos] = value.add(conv.const(cmd.offset[k])) if cmd.offset[k] else value
    if cmd.places != tuple(range(len(lps))):
        stmt.loops.sort(key=lambda lp: lp.pos)


def _val(x: int) -> isl.Val:
    return isl.Val.int_from_si(isl.DEFAULT_CONTEXT, x)


# ---- orders ----------------------------------------------------------------------------------
def _under(stmt: Statement, st: Stage) -> bool:
    return stmt.stage is st or any(lp.stage is st for lp in stmt.loops)


def _shared(o: Order, placed: list[Statement]) -> int:
    """How many outer loops the two stages share: 0 at the root, else the level's depth + 1."""
    if o.level is None:
        return 0
    for stmt in placed:
        for k, lp in enumerate(stmt.loops):
            if lp.iter_var is o.level:
                return k + 1
    raise ScheduleError(f"{o.text()}: loop {o.level.name} is not a loop of the schedule as lowered (it was "
                        "split or fused after the command); give the command after splitting")


def _order(o: Order, placed: list[Statement], vectors: dict[int, Vector]) -> None:
    n = _shared(o, placed)
    p = 2 * n
    mine = [s for s in placed if _under(s, o.stage)]
    theirs = [s for s in placed if _under(s, o.anchor) and len(s.loops) >= n]
    if not theirs:
        raise ScheduleError(f"{o.text()}: {o.anchor.name} has no statement inside {n} loops; choose an outer level")
    short = [s for s in mine if len(vectors[id(s)]) <= p]
    if short:
        raise ScheduleError(f"{o.text()}: {short[0].label()} runs inside fewer than {n} loops, so it cannot share "
                            f"{n} loops with {o.anchor.name}; choose an outer level")
    ref = next((s for s in theirs if s.stage is o.anchor), theirs[0])  # not a stage computed inside it
    prefix = [vectors[id(ref)][k] for k in range(0, p, 2)]
    for s in mine + theirs:
        for lp in s.loops[:n]:
            if lp.width != 1:
                raise ScheduleError(f"{o.text()}: loop {lp.name} of {lp.stage.name} fuses loops of symbolic "
                                    "extent; fuse loops of constant extent to order stages inside it")

    def at_prefix(s: Statement) -> bool:
        v = vectors[id(s)]
        return len(v) > p and all(v[2 * k] == prefix[k] for k in range(n))

    anchors = [vectors[id(s)][p] for s in theirs if at_prefix(s)]
    own = [vectors[id(s)][p] for s in mine]
    if not own or not anchors:
        missing = o.stage if not own else o.anchor
        raise ScheduleError(f"{o.text()}: {missing.name} has no exact place in the polyhedral model here (a loop "
                            "fused over a symbolic extent, or its statements outside the shared loops); give "
                            "the order before fusing such loops, or order at an outer level")
    span = max(own) - min(own) + 1
    base = max(anchors) + 1 if not o.before else min(anchors)
    ids = {id(s) for s in mine}
    for s in placed:
        v = vectors[id(s)]
        if id(s) not in ids and at_prefix(s) and v[p] >= base:
            v[p] += span
    low = min(own)
    for s in mine:
        v = vectors[id(s)]
        for k in range(n):
            v[2 * k] = prefix[k]
        v[p] = base + v[p] - low


__all__ = ["apply_commands", "check_storage", "early_commands", "loop_values", "stored"]
