"""The schedule: one stage per operation reachable from the outputs, in dataflow order."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import ScheduleError
from ..ir import expr as E
from ..te.tensor import Operation, Tensor
from .history import Record, note_created
from .stage import ROOT, Stage


def _post_dfs(outputs: Iterable[Operation]) -> list[Operation]:
    order: list[Operation] = []
    seen: set[int] = set()

    def visit(op: Operation) -> None:
        stack = [(op, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for t in reversed(node.input_tensors()):
                if id(t.op) not in seen:
                    stack.append((t.op, False))

    for op in outputs:
        visit(op)
    return order


class Schedule:
    """Stages in producer-before-consumer order; ``s[T]`` gives the stage of tensor ``T``."""

    def __init__(self, outputs: list[Operation]):
        self.outputs = list(outputs)
        self.stages: list[Stage] = []
        self.stage_map: dict[Operation, Stage] = {}
        for op in _post_dfs(self.outputs):
            st = Stage(op, self)
            st.is_output = any(op is o for o in self.outputs)
            self.stages.append(st)
            self.stage_map[op] = st
        # every primitive call, where it was made, and the schedule after it (see history.py)
        self.history: list[Record] = []
        note_created(self)

    def __getitem__(self, key) -> Stage:
        if isinstance(key, Stage):
            return key
        op = key.op if isinstance(key, Tensor) else key
        st = self.stage_map.get(op)
        if st is None:
            name = getattr(op, "name", repr(op))
            raise ScheduleError(
                f"{name} is not part of this schedule: the schedule was created for "
                f"{', '.join(o.name for o in self.outputs)} and reaches {', '.join(s.name for s in self.stages)}"
            )
        return st

    def __contains__(self, key) -> bool:
        op = key.op if isinstance(key, Tensor) else key
        return op in self.stage_map

    def stage_of_iter_var(self, iv: E.IterVar) -> Stage | None:
        for st in self.stages:
            if iv in st.all_iter_vars:
                return st
        return None

    def normalize(self) -> Schedule:
        """Kept for TVM compatibility: lowering already counts every loop from zero."""
        return self

    def __repr__(self) -> str:
        return f"Schedule(outputs=[{', '.join(o.name for o in self.outputs)}])"


def create_schedule(ops) -> Schedule:
    """A default schedule for one operation or a list of them (every producer gets a stage)."""
    if not isinstance(ops, list | tuple):
        ops = [ops]
    out = []
    for op in ops:
        if isinstance(op, Tensor):
            op = op.op
        if not isinstance(op, Operation):
            raise ScheduleError(f"create_schedule expects operations (e.g. C.op), got {op!r}")
        out.append(op)
    return Schedule(out)


__all__ = ["ROOT", "Schedule", "create_schedule"]
