"""A schedule in an IR document (``tessel.ir.save_json(s)``, TVM's ``tvm.ir.save_json``): its
computation (the outputs it was created for, as te operations) and its steps, each a primitive
with its arguments as handles (stage, axis and tensor positions; see history.py). Loading
creates a schedule of the loaded computation and applies the steps again, so the document
holds what the schedule *is*, never a copy of its internal tables, and a malformed one fails
the way a wrong primitive call does (ScheduleError) or is refused as a document.

A step whose arguments are not IR (a tensor intrinsic, a Python function) cannot be stored:
``save_json`` then says which step it is."""

from __future__ import annotations

from ..errors import DefinitionError
from ..ir.serialize import register
from .history import AxisRef, OpAxisRef, OpRef, StageRef, Step, TensorRef, apply_steps
from .schedule import Schedule
from .stage import Stage


def _encode(sch: Schedule) -> list:
    hist = sch.history
    if hist is None:
        raise DefinitionError("save_json of a schedule: this schedule keeps no steps (made with history off), "
                              "so it cannot be stored; s.python() writes it as code")
    steps = [[st.primitive, st.target, list(st.args), [[k, v] for k, v in sorted(st.kwargs.items())]]
             for st in hist[1:] if st.error is None]
    return [list(hist.origin.outputs), steps]


def _decode(fields) -> Schedule:
    outputs, steps = fields
    sch = Schedule.create(list(outputs))
    todo = []
    for st in steps:
        primitive, target, args, kwargs = st
        owner = Schedule if target is None else Stage
        if not (isinstance(primitive, str) and hasattr(getattr(owner, primitive, None), "__wrapped__")):
            raise DefinitionError(f"load_json: {primitive!r} is not a primitive of a {owner.__name__}")
        todo.append(Step(primitive, target, tuple(args), {str(k): v for k, v in kwargs}))
    return apply_steps(sch, todo)


register("te.Schedule", Schedule, _encode, _decode)
register("te.StageRef", StageRef, lambda h: [h.stage], lambda f: StageRef(int(f[0])))
register("te.TensorRef", TensorRef, lambda h: [h.stage, h.value_index], lambda f: TensorRef(int(f[0]), int(f[1])))
register("te.OpRef", OpRef, lambda h: [h.stage], lambda f: OpRef(int(f[0])))
register("te.AxisRef", AxisRef, lambda h: [h.stage, h.index], lambda f: AxisRef(int(f[0]), int(f[1])))
register("te.OpAxisRef", OpAxisRef, lambda h: [h.stage, h.field, h.index],
         lambda f: OpAxisRef(int(f[0]), str(f[1]), int(f[2])))
