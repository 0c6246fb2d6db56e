"""Fixes for illegal schedules, as steps: proposed, validated by replay, rendered as code.

A fix is a short list of :class:`~tessel.schedule.history.Step` records (handles into the
schedule it was proposed for) plus the same calls written as the code a user would type,
``s[B_local].compute_at(s[C], C.op.axis[0])``. Both are made together by :class:`FixBuilder`,
so the text shown is the steps that were checked. A candidate is checked by replaying its
steps onto a cheap copy of the schedule (``Schedule.copy``); a primitive refusing it
(ScheduleError) rules the candidate out, while anything else going wrong is a tessel bug and
surfaces as an InternalError instead of a fix silently left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ..errors import InternalError, TesselError
from ..ir import expr as E
from ..ir.names import python_string
from ..te.reduce import thread_axis
from .checking import checker
from .dataflow import py_name
from .history import AxisRef, OpAxisRef, StageRef, Step, TensorRef, apply_steps

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage
    from .violation import Violation


#: the names of tessel.te that fix code calls, as ``te.<name>``
_TE = SimpleNamespace(thread_axis=thread_axis)


@dataclass(frozen=True)
class Fix:
    """A proposed fix: ``steps`` to apply (``fix.apply(s)``), ``code`` to show, and ``names``
    mapping the identifiers the code uses to the tensors the user holds."""

    steps: tuple[Step, ...]
    code: str
    names: dict[str, Any] = field(default_factory=dict)

    def apply(self, sch: Schedule) -> Schedule:
        return apply_steps(sch, self.steps)


class Names:
    """Identifiers for stages in fix code, mapped to the tensors the user holds."""

    def __init__(self, sch: Schedule):
        self.sch = sch
        self.names: dict[str, Any] = {}
        self._by_stage: dict[int, str] = {}
        self.pos = {id(st): k for k, st in enumerate(sch.stages)}

    def stage(self, st: Stage) -> str:
        if id(st) in self._by_stage:
            return self._by_stage[id(st)]
        base = py_name(st.name)
        name, k = base, 0
        while name in self.names or name in ("s", "te"):
            k += 1
            name = f"{base}_{k}"
        self._by_stage[id(st)] = name
        self.names[name] = st.origin_op.output(0)
        return name

    def axis(self, st: Stage, iv: E.IterVar) -> str:
        """A handle for loop ``iv`` of ``st``: ``C.op.axis[0]`` when the user's own op has it."""
        name = self.stage(st)
        op, origin = st.op, st.origin_op
        for field_name in ("axis", "reduce_axis"):
            cur = getattr(op, field_name, ())
            for k, a in enumerate(cur):
                if a is iv:
                    orig = getattr(origin, field_name, ())
                    if k < len(orig) and orig[k] is iv:
                        return f"{name}.op.{field_name}[{k}]"
                    return f"s[{name}].op.{field_name}[{k}]"
        k = next((n for n, a in enumerate(st.leaf_iter_vars) if a is iv), None)
        if k is not None:
            return f"s[{name}].leaf_iter_vars[{k}]"
        k = next(n for n, a in enumerate(st.all_iter_vars) if a is iv)
        return f"s[{name}].all_iter_vars[{k}]"

    def te(self) -> str:
        """``te`` in fix code: what of tessel.te the code calls (the package's face itself is
        not imported here: it imports the schedule)."""
        self.names["te"] = _TE
        return "te"

    # ---- the same things as handles ------------------------------------------------------
    def ref(self, st: Stage) -> StageRef:
        return StageRef(self.pos[id(st)])

    def axis_ref(self, st: Stage, iv: E.IterVar) -> AxisRef:
        return AxisRef(self.pos[id(st)], next(n for n, a in enumerate(st.all_iter_vars) if a is iv))


class FixBuilder:
    """One candidate fix, built call by call as code and as steps at once."""

    def __init__(self, names: Names):
        self.n = names
        self.lines: list[str] = []
        self.steps: list[Step] = []

    def _add(self, line: str, primitive: str, target: StageRef | None, *args) -> FixBuilder:
        self.lines.append(line)
        self.steps.append(Step(primitive, target, args, {}))
        return self

    def compute_root(self, st: Stage) -> FixBuilder:
        return self._add(f"s[{self.n.stage(st)}].compute_root()", "compute_root", self.n.ref(st))

    def compute_at(self, st: Stage, tgt: Stage, iv: E.IterVar) -> FixBuilder:
        code = f"s[{self.n.stage(st)}].compute_at(s[{self.n.stage(tgt)}], {self.n.axis(tgt, iv)})"
        return self._add(code, "compute_at", self.n.ref(st), self.n.ref(tgt), self.n.axis_ref(tgt, iv))

    def compute_at_pos(self, st: Stage, tgt: Stage, pos: int, mode: str = "standard") -> FixBuilder:
        """``compute_at`` by position (seed 003)."""
        extra = "" if mode == "standard" else f", mode={mode!r}"
        code = f"s[{self.n.stage(st)}].compute_at(s[{self.n.stage(tgt)}], {pos}{extra})"
        self._add(code, "compute_at", self.n.ref(st), self.n.ref(tgt), pos)
        if mode != "standard":
            self.steps[-1].kwargs["mode"] = mode
        return self

    def annotate(self, st: Stage, method: str, iv: E.IterVar) -> FixBuilder:
        code = f"s[{self.n.stage(st)}].{method}({self.n.axis(st, iv)})"
        return self._add(code, method, self.n.ref(st), self.n.axis_ref(st, iv))

    def drop_annotation(self, st: Stage, iv: E.IterVar) -> FixBuilder:
        return self.annotate(st, "serial", iv)

    def split(self, st: Stage, iv: E.IterVar, factor: int) -> FixBuilder:
        """``split(iv, factor=...)``: the inner loop takes over iv's annotation."""
        self.lines.append(f"s[{self.n.stage(st)}].split({self.n.axis(st, iv)}, factor={factor})")
        self.steps.append(Step("split", self.n.ref(st), (self.n.axis_ref(st, iv),), {"factor": factor}))
        return self

    def reorder(self, st: Stage, order: list[E.IterVar]) -> FixBuilder:
        code = f"s[{self.n.stage(st)}].reorder({', '.join(self.n.axis(st, a) for a in order)})"
        return self._add(code, "reorder", self.n.ref(st), *(self.n.axis_ref(st, a) for a in order))

    def bind(self, st: Stage, iv: E.IterVar, tag: str) -> FixBuilder:
        code = f"s[{self.n.stage(st)}].bind({self.n.axis(st, iv)}, {self.n.te()}.thread_axis({python_string(tag)}))"
        return self._add(code, "bind", self.n.ref(st), self.n.axis_ref(st, iv), thread_axis(tag))

    def fuse_bind(self, st: Stage, outer: E.IterVar, inner: E.IterVar, tag: str,
                  handles: tuple[str, str] | None = None) -> FixBuilder:
        """``fuse(outer, inner)`` and bind the fused loop to ``tag`` (the fused loop is the next
        IterVar the stage makes, so its handle is known before the fix is applied); ``handles``:
        names the code gave the two loops earlier (see ``name_axes``)."""
        n = self.n.stage(st)
        fused = AxisRef(self.n.pos[id(st)], len(st.all_iter_vars))
        a, b = handles or (self.n.axis(st, outer), self.n.axis(st, inner))
        self._add(f"fused = s[{n}].fuse({a}, {b})", "fuse",
                  self.n.ref(st), self.n.axis_ref(st, outer), self.n.axis_ref(st, inner))
        return self._add(f"s[{n}].bind(fused, {self.n.te()}.thread_axis({python_string(tag)}))", "bind",
                         self.n.ref(st), fused, thread_axis(tag))

    def name_axes(self, st: Stage, named: dict[str, E.IterVar]) -> FixBuilder:
        """Lines of code only (no step): give loops a name before a reorder moves their positions."""
        for var, iv in named.items():
            self.lines.append(f"{var} = {self.n.axis(st, iv)}")
        return self

    def rfactor_then(self, st: Stage, iv: E.IterVar, method: str) -> FixBuilder:
        """``B_rf = s.rfactor(B, iv)`` then ``method`` on B.rf's factored axis (B.rf takes B's place)."""
        n, k = self.n.stage(st), self.n.pos[id(st)]
        self._add(f"{n}_rf = s.rfactor({n}, {self.n.axis(st, iv)})", "rfactor", None,
                  TensorRef(k, 0), self.n.axis_ref(st, iv))
        return self._add(f"s[{n}_rf].{method}(s[{n}_rf].op.axis[0])", method, StageRef(k),
                         OpAxisRef(k, "axis", 0))

    def build(self) -> Fix:
        code = "\n".join(self.lines)
        return Fix(tuple(self.steps), code, {k: x for k, x in self.n.names.items() if _mentions(code, k)})


def _mentions(code: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", code) is not None


def try_fix(sch: Schedule, fix: Fix, target: Violation | None) -> int:
    """Replay ``fix`` onto a copy: 2 when the copy is legal, 1 when ``target``'s problem is gone, 0 else."""

    trial = sch.copy(record=False)
    try:
        fix.apply(trial)
        left = checker().violations(trial, propose=False)
    except InternalError:
        raise
    except TesselError:  # a primitive refused the candidate: it is not a fix here
        return 0
    except Exception as err:
        raise InternalError(f"checking the fix {fix.code!r} failed inside tessel: {type(err).__name__}: {err}") from err
    if not left:
        return 2
    if target is not None and not any(v.kind is target.kind and v.stage.name == target.stage.name for v in left):
        return 1
    return 0


def choose(sch: Schedule, v: Violation, candidates: list[FixBuilder]) -> Violation:
    """Keep the first candidate that makes the schedule legal, else one that removes ``v``."""
    best, score = None, 0
    for cand in candidates:
        fix = cand.build()
        got = try_fix(sch, fix, v)
        if got > score:
            best, score = fix, got
        if got == 2:
            break
    v.proposed = best
    return v


__all__ = ["Fix", "FixBuilder", "Names", "choose", "try_fix"]
