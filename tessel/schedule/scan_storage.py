"""A scan's state kept in the caller's array, one step over the other (issue 33: durbin's y).

``s[sc].store_in(Y, output=ys)`` writes every step of the scan's state ``ys`` into ``Y``, the
caller's array of one step's shape, each step over the one before: PolyBench's arrays updated in
place step by step, with no temporary of the scan's own and no copy of its last step out. A
scan's update reads the step before, so this is legal exactly when, within a step, nothing reads
an element of the step before after the update has written over it:

* the state's init is one step, and every read of the state in the body is one step back;
* every other stage of the body that reads the state runs before the update, whole: the update
  reads it (so it is computed first in the step), and it is not computed inside the update's
  loops (there it would run between the update's writes);
* the update itself reads the step before only at the element it writes, which it reads before
  writing, whatever its loop order;
* what reads the scan afterwards reads only its last step;
* no other stage reads ``Y`` (its values are overwritten from the first step on), but the init,
  at the element it writes (a state that starts from the caller's values).

The rule is judged when the command is given and again when the schedule is lowered (a later
``compute_at`` or ``compute_inline`` of a body stage may break it); a refusal names the read.
"""

from __future__ import annotations

from typing import Any

from ..arith import Analyzer
from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.functor import collect, structural_equal
from .graph import effective_bodies
from .kinds import INLINE, SCOPE


def store_state(stage: Any, buffer: Any, index: Any, output: Any) -> None:
    """The command: checked, then recorded on the scan's stage (``scan_homes``)."""
    from ..te.tensor import Tensor

    op = stage.op
    k = next((k for k, t in enumerate(op.outputs) if t is output), None) if output is not None else (
        0 if op.num_outputs == 1 else None)
    if k is None:
        names = ", ".join(t.name for t in op.outputs)
        raise ScheduleError(f"stage {stage.name}: store_in of a scan stores one of its states; name it with "
                            f"output= (one of {names}), got {getattr(output, 'name', output)!r}")
    if index is not None:
        raise ScheduleError(f"stage {stage.name}: store_in of a scan's state keeps each step at the state's own "
                            "indices; give no index")
    if not isinstance(buffer, Tensor) or not buffer.op.is_placeholder:
        raise ScheduleError(f"stage {stage.name}: store_in of a scan's state takes the caller's array (a "
                            f"te.placeholder), got {getattr(buffer, 'name', buffer)!r}")
    before = stage.scan_homes
    stage.scan_homes = (*[(j, t) for j, t in before if j != k], (k, buffer))
    why = in_place_refusal(stage.schedule, stage)
    if why is not None:
        stage.scan_homes = before
        raise ScheduleError(f"stage {stage.name}: store_in({buffer.name}, output={op.outputs[k].name}) is refused: "
                            f"{why}; keep the state in its own storage, or fold it to the steps it needs "
                            f"(s[{stage.name}].storage_fold(s[{stage.name}].op.scan_axis, 2))")


def in_place_refusal(sch: Any, stage: Any) -> str | None:
    """Why a state of ``stage``'s scan cannot live in its caller's array (None: every one can)."""
    bodies = effective_bodies(sch)
    for k, home in stage.scan_homes:
        why = _state_refusal(sch, stage, k, home, bodies)
        if why is not None:
            return why
    return None


def _state_refusal(sch: Any, stage: Any, k: int, home: Any, bodies: dict) -> str | None:
    op, ana = stage.op, Analyzer()
    out, state, update = op.outputs[k], op.state_placeholder[k], op.update[k]
    if home.dtype != out.dtype or len(home.shape) != len(out.shape) - 1 or not all(
            ana.can_prove_equal(a, b) for a, b in zip(home.shape, out.shape[1:], strict=True)):
        return (f"{home.name} is {home.dtype}{list(home.shape)}, but a step of {out.name} is "
                f"{out.dtype}{list(out.shape[1:])}")
    if not (isinstance(op.init[k].shape[0], E.IntImm) and op.init[k].shape[0].value == 1):
        return f"its init {op.init[k].name} gives {op.init[k].shape[0]} steps, and {home.name} holds one"
    for other in sch.stages:
        taken = [t for j, t in getattr(other, "scan_homes", ()) if t is home and (other is not stage or j != k)]
        storage = getattr(other, "storage", None)
        if taken or (storage is not None and (storage.buffer is home or storage.part(home) is not None)):
            return f"{home.name} already holds the values of {other.name}"
    body = {id(o) for o in op.body_ops()}
    ustage = sch.stage_map[update.op]
    before_update = _producers(update.op, body)
    for st in sch.stages:
        if st.attach_type == INLINE or st.is_placeholder or st.op not in bodies:
            continue
        loads = [ld for b in bodies[st.op] for ld in collect(b, lambda n: isinstance(n, E.ProducerLoad))]
        why = _home_reads(st, op, k, home, loads, ana)
        if why is not None:
            return why
        mine = [ld for ld in loads if ld.producer is state]
        if not mine:
            continue
        if id(st.op) in body:
            why = _body_reads(st, ustage, update, mine, before_update, ana)
        else:
            why = None  # a state placeholder is read by the body only
        if why is not None:
            return why
    last = E.sub(E.add(op.scan_axis.dom.min, op.scan_axis.dom.extent), 1) if op.scan_axis.dom is not None else None
    for st in sch.stages:
        if st.attach_type == INLINE or st.op not in bodies or id(st.op) in body or st.op is op:
            continue
        for b in bodies[st.op]:
            for ld in collect(b, lambda n: isinstance(n, E.ProducerLoad) and n.producer is out):
                if last is None or not ana.can_prove(E.eq(ld.indices[0], last)):
                    return (f"{st.name} reads {out.name}[{ld.indices[0]}, ...] after the scan, and {home.name} "
                            "keeps only its last step")
    return None


def _home_reads(st: Any, op: Any, k: int, home: Any, loads: list, ana: Analyzer) -> str | None:
    """Only the init may read the caller's array, at the element it writes."""
    reads = [ld for ld in loads if ld.producer is home]
    if not reads:
        return None
    init = op.init[k]
    if st.op is init.op and all(
            len(ld.indices) == len(init.op.axis) - 1 and all(
                structural_equal(i, iv.var) for i, iv in zip(ld.indices, init.op.axis[1:], strict=True))
            for ld in reads):
        return None
    return (f"{st.name} reads {home.name}, which holds {op.outputs[k].name}'s steps: it would see a step's values, "
            f"not the caller's")


def _body_reads(st: Any, ustage: Any, update: Any, loads: list, before_update: set[int], ana: Analyzer) -> str | None:
    state = loads[0].producer
    t = st.op.axis[0].var
    for ld in loads:
        back = ana.simplify(E.sub(t, ld.indices[0]))
        if not (isinstance(back, E.IntImm) and back.value == 1):
            return f"{st.name} reads {state.name}[{ld.indices[0]}, ...], not the step before"
    if st is ustage:
        own = [iv.var for iv in st.op.axis[1:]]
        inside = Analyzer()  # over the update's domain (``i % n`` is ``i`` there)
        for iv in st.op.axis:
            if iv.dom is not None:
                inside.bind(iv.var, iv.dom)
        for ld in loads:
            if not all(structural_equal(i, v) or inside.can_prove_equal(i, v)
                       for i, v in zip(ld.indices[1:], own, strict=True)):
                where = ", ".join(str(i) for i in ld.indices)
                return (f"the update {st.name} reads {state.name}[{where}], another element of the step before, "
                        "which its own loops may have overwritten by then")
        return None
    if id(st.op) not in before_update:
        return f"{st.name} reads {state.name} but {update.name} does not read {st.name}, so nothing runs it first"
    s = st
    while s.attach_type == SCOPE:
        if s.attach_stage is ustage:
            return (f"{st.name} reads {state.name} inside the loops of the update {ustage.name}, between its writes; "
                    f"compute it at the scan's step (s[{st.name}].compute_at(s[scan], scan.op.scan_axis))")
        s = s.attach_stage
    return None


def _producers(op: Any, body: set[int]) -> set[int]:
    """The body's operations ``op`` reads, directly or not (each is computed before it)."""
    seen: set[int] = set()
    todo = [t.op for t in op.input_tensors()]
    while todo:
        o = todo.pop()
        if id(o) in seen or id(o) not in body:
            continue
        seen.add(id(o))
        todo += [t.op for t in o.input_tensors()]
    return seen


__all__ = ["in_place_refusal", "store_state"]
