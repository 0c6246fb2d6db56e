"""A schedule printed as the Python that makes it: ``s.python()``.

Why from the history and not from the stages: a schedule's final state does not say how it
was reached (which loop was split before which reorder), and the same state can be reached by
programs that differ in what a user would edit next. The recorded steps are the program. They
are replayed here onto a fresh schedule of the same computation -- a *shadow* -- one step at a
time, so each handle is resolved to the object it named when the step ran, and is printed by a
name a person reads: ``s[C]``, a variable bound from ``s[C].op.axis``, a variable a split
returned. The text is a function of the output tensors; executed, it rebuilds a schedule with
the same steps (tests/autosched/test_auto_schedule_python.py executes it for every kernel).

Every name printed goes through the one name-safety module (``py_name``), so a stage called
``None`` or ``x.y`` still gives a program that runs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.names import python_string
from ..te.tensor import Tensor
from .dataflow import py_name
from .history import AxisRef, OpAxisRef, OpRef, StageRef, TensorRef, match_computations, resolve

if TYPE_CHECKING:
    from .history import Step
    from .schedule import Schedule
    from .stage import Stage

_RESERVED = {"s", "te", "tessel", "schedule", "float"}  # "float": spells a step's nan or inf


class _Printer:
    """The shadow schedule, the names bound so far, and the lines written."""

    def __init__(self, sch: Schedule, func: str):
        assert sch.history is not None
        self.history = sch.history
        self.shadow = self.history.origin.kind.create(self.history.origin.outputs, notify=False)
        self.var_map = match_computations(self.history.origin.outputs, self.shadow)
        self.used: set[str] = set(_RESERVED) | {func}
        self.stage_var: dict[int, str] = {}    # id(stage) -> variable holding one of its tensors
        self.bound: dict[int, str] = {}        # id(IterVar or Tensor) -> variable
        self.lines: list[str] = []
        outs = [self._fresh(op.name) for op in self.shadow.outputs]
        self.params: list[str] = list(outs)  # and the caller's arrays that only the steps name (foreign)
        names = []
        for st in self.shadow.stages:
            k = next((j for j, op in enumerate(self.shadow.outputs) if op is st.op), None)
            names.append(outs[k] if k is not None else self._fresh(st.op.name))
            self.stage_var[id(st)] = names[-1]
            self.bound[id(st.op.output(0))] = names[-1]
        self.header = (f"def {func}({', '.join(outs)}):",
                       f"    s = te.create_schedule([{', '.join(o + '.op' for o in outs)}])",
                       f"    {', '.join(names)}{',' if len(names) == 1 else ''} = "
                       "[stage.op.output(0) for stage in s.stages]  # every stage, producers first")

    def _fresh(self, name: str) -> str:
        base = py_name(name)
        out, n = base, 1
        while out in self.used:
            n += 1
            out = f"{base}_{n}"
        self.used.add(out)
        return out

    # ---- values as text --------------------------------------------------------------------
    def stage_text(self, st: Stage) -> str:
        var = self.stage_var.get(id(st))
        if var is None:
            raise ScheduleError(f"s.python(): stage {st.name} has no variable naming it (a stage made by a "
                                "step whose result was not a tensor)")
        return f"s[{var}]"

    def axis_text(self, iv: E.IterVar) -> str:
        var = self.bound.get(id(iv))
        if var is not None:
            return var
        for st in self.shadow.stages:
            for field in ("axis", "reduce_axis"):
                axes = list(getattr(st.op, field, ()))
                if any(a is iv for a in axes):
                    var = self._fresh(iv.name)
                    self.lines.append(f"{var} = {self.stage_text(st)}.op.{field}[{axes.index(iv)}]")
                    self.bound[id(iv)] = var
                    return var
            if any(a is iv for a in st.all_iter_vars):
                return f"{self.stage_text(st)}.all_iter_vars[{st.all_iter_vars.index(iv)}]"
        raise ScheduleError(f"s.python(): the loop {iv.name} belongs to no stage of the schedule")

    def tensor_text(self, t: Tensor) -> str:
        var = self.bound.get(id(t))
        if var is not None:
            return var
        st = self.shadow.stage_map.get(t.op)
        if st is None:
            raise ScheduleError(f"s.python(): tensor {t.name} is not part of the schedule")
        return f"{self.stage_text(st)}.op.output({t.value_index})"

    def value_text(self, handle: Any, live: Any) -> str:
        """``live`` is what ``handle`` names in the shadow now."""
        if isinstance(handle, StageRef):
            return self.stage_text(live)
        if isinstance(handle, TensorRef):
            return self.tensor_text(live)
        if isinstance(handle, OpRef):
            return f"{self.stage_text(self.shadow[live])}.op"
        if isinstance(handle, AxisRef):
            return self.axis_text(live)
        if isinstance(handle, OpAxisRef):
            return f"s.stages[{handle.stage}].op.{handle.field}[{handle.index}]"
        if isinstance(handle, list | tuple):
            inner = ", ".join(self.value_text(h, v) for h, v in zip(handle, live))
            return f"[{inner}]" if isinstance(handle, list) else f"({inner}{',' if len(handle) == 1 else ''})"
        if isinstance(handle, str):  # a pragma key, a thread tag, a scope: data, never code
            return python_string(handle)
        if handle is None:
            return "None"
        if isinstance(handle, bool | int):  # as the plain type: a subclass's repr could be any text
            return repr(bool(handle)) if isinstance(handle, bool) else repr(int(handle))
        if isinstance(handle, float):
            value = float(handle)
            return repr(value) if math.isfinite(value) else f"float({python_string(repr(value))})"
        if isinstance(handle, E.IntImm):
            return repr(handle.value)
        if isinstance(handle, Tensor) and handle.op.is_placeholder:
            return self.foreign(handle)
        raise ScheduleError(f"s.python(): a {type(handle).__name__} argument cannot be written as Python "
                            "(print the schedule's steps with s.history instead)")

    def foreign(self, t: Tensor) -> str:
        """A caller's array the steps name that no stage reads (``store_in(P)``): a parameter of
        the function after the outputs, as the caller holds it."""
        var = self.bound.get(id(t))
        if var is None:
            var = self.bound[id(t)] = self._fresh(t.name)
            self.params.append(var)
        return var

    # ---- steps -----------------------------------------------------------------------------
    def step(self, step: Step) -> None:
        recv = self.shadow if step.target is None else resolve(step.target, self.shadow)
        args = resolve(step.args, self.shadow, self.var_map)
        kwargs = {k: resolve(v, self.shadow, self.var_map) for k, v in step.kwargs.items()}
        parts = [self.value_text(h, v) for h, v in zip(step.args, args)]
        parts += [f"{k}={self.value_text(step.kwargs[k], v)}" for k, v in kwargs.items()]
        target = "s" if step.target is None else self.stage_text(recv)
        call = f"{target}.{step.primitive}({', '.join(parts)})"
        result = getattr(recv, step.primitive)(*args, **kwargs)
        names = self.bind_result(result)
        self.lines.append(f"{names} = {call}" if names else call)

    def bind_result(self, result: Any) -> str:
        """Variables for what a step returned: loops, or the tensors of a stage it made."""
        items = result if isinstance(result, list | tuple) else [result]
        if not items or not all(isinstance(x, E.IterVar | Tensor) for x in items):
            return ""
        names = []
        for x in items:
            var = self._fresh(x.name if isinstance(x, E.IterVar) else x.op.name)
            self.bound[id(x)] = var
            if isinstance(x, Tensor):
                st = self.shadow.stage_map.get(x.op)
                if st is not None and id(st) not in self.stage_var:
                    self.stage_var[id(st)] = var
            names.append(var)
        if isinstance(result, list | tuple):
            return ", ".join(names) + ("," if len(names) == 1 else "")
        return names[0]


def python_source(sch: Schedule, func: str = "schedule") -> str:
    """The schedule's steps as a Python function of its output tensors that makes it again."""
    if sch.history is None:
        raise ScheduleError("s.python(): this schedule keeps no steps (a snapshot); print the schedule "
                            "it was copied from")
    func = py_name(func)  # a name, like the stages': it reaches the text only as an identifier
    pr = _Printer(sch, func)
    from .history import not_recorded

    with not_recorded():
        for step in sch.history[1:]:
            if step.error is None:
                pr.step(step)
    body = [*pr.header[1:], *("    " + ln for ln in pr.lines), "    return s"]
    head = f"def {func}({', '.join(pr.params)}):"
    steps = sum(1 for st in sch.history[1:] if st.error is None)
    doc = f'    """{steps} step{"" if steps == 1 else "s"}, as tessel recorded them; edit and call {func}(...)."""'
    return "\n".join(["from tessel import te", "", "", head, doc, *body]) + "\n"

