"""Every schedule remembers the primitives applied to it: the call, the user's source line, and
a frozen copy of the schedule right after it.

Why: the views and the step explorer replay how a schedule was built, one call at a time, and
a schedule that went wrong is best understood at the step where it went wrong. A call that
raised is recorded too (then re-raised untouched), since it is the step a user most wants to
see. The copy is a deep copy (about a millisecond for a typical schedule), so nothing a later
primitive does can change what an earlier step shows.

Primitives opt in with :func:`recorded`; a primitive that calls others (``tile`` splits and
reorders) is one step, not three.
"""

from __future__ import annotations

import copy
import functools
import linecache
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..te.tensor import Operation, Tensor
    from .schedule import Schedule

_TESSEL_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_state = threading.local()
_observers: list[Callable[[Schedule], None]] = []

# Turn off to record calls without copying the schedule (e.g. in a long-running search).
SNAPSHOTS = True
# A schedule with more stages than this is not copied: one copy per primitive makes a script
# that schedules a long chain quadratic (and such a copy passes the recursion limit anyway).
MAX_SNAPSHOT_STAGES = 200


@dataclass
class Record:
    """One step: ``call`` is the primitive as tessel understood it (``s[B].split(k, factor=16)``),
    ``code`` the user's own line, ``snapshot`` the schedule just after (None if not taken)."""

    index: int
    primitive: str
    call: str
    filename: str | None
    lineno: int | None
    code: str
    result: str = ""
    error: BaseException | None = None
    snapshot: Schedule | None = None
    snapshot_error: str | None = None
    # (operation of the live schedule, its copy in ``snapshot``): how a user's tensors, e.g.
    # the arguments given to lower, are found in the snapshot
    op_pairs: list[tuple[Operation, Operation]] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.filename}:{self.lineno}" if self.filename else "<unknown>"

    def in_snapshot(self, t: Tensor) -> Tensor | None:
        """The snapshot's copy of tensor ``t``; None if ``t`` did not exist at this step."""
        for orig, dup in self.op_pairs:
            if orig is t.op:
                return dup.output(t.value_index)
        return None

    def __repr__(self) -> str:
        status = f" raised {type(self.error).__name__}" if self.error is not None else ""
        return f"<step {self.index}: {self.call} at {self.where}{status}>"


def recorded(fn: Callable) -> Callable:
    """Decorate a Stage or Schedule primitive so that each outermost call becomes a step."""

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        sch = getattr(self, "schedule", self)
        if getattr(_state, "depth", 0) or not isinstance(getattr(sch, "history", None), list):
            return fn(self, *args, **kwargs)
        call = _call_text(self, sch, fn.__name__, args, kwargs)
        _state.depth = 1
        try:
            result = fn(self, *args, **kwargs)
        except Exception as err:
            _append(sch, fn.__name__, call, error=err)
            raise
        finally:
            _state.depth = 0
        _append(sch, fn.__name__, call, result="" if result is None else _value_text(result, top=True))
        return result

    return wrapper


def note_created(sch: Schedule) -> None:
    """Called once by every new Schedule: its creation is step 0, and observers hear of it."""
    outs = ", ".join(f"{op.name}.op" for op in sch.outputs)
    _append(sch, "create_schedule", f"create_schedule({outs if len(sch.outputs) == 1 else '[' + outs + ']'})")
    for observer in list(_observers):
        observer(sch)


@contextmanager
def capture() -> Iterator[list[Schedule]]:
    """Collect every schedule created inside the ``with`` block (the ``tessel`` command uses it)."""
    found: list[Schedule] = []
    _observers.append(found.append)
    try:
        yield found
    finally:
        _observers.remove(found.append)


def _append(sch: Schedule, primitive: str, call: str, result: str = "", error: BaseException | None = None) -> None:
    filename, lineno, code = _user_frame()
    rec = Record(len(sch.history), primitive, call, filename, lineno, code, result, error)
    if SNAPSHOTS and len(sch.stages) > MAX_SNAPSHOT_STAGES:
        rec.snapshot_error = (f"not copied: the schedule has {len(sch.stages)} stages "
                              f"(tessel.schedule.history.MAX_SNAPSHOT_STAGES is {MAX_SNAPSHOT_STAGES})")
    elif SNAPSHOTS:
        try:
            ops = _reachable_ops(sch)
            # the copy must not drag the history (and its earlier copies) along
            rec.snapshot, dups = copy.deepcopy((sch, ops), {id(sch.history): []})
            rec.op_pairs = list(zip(ops, dups))
        except Exception as err:  # e.g. a recursion limit on a huge expression: keep the step
            rec.snapshot_error = f"{type(err).__name__}: {err}"
    sch.history.append(rec)


def _reachable_ops(sch: Schedule) -> list[Operation]:
    """Every operation the schedule refers to, including those a dataflow rewrite replaced."""
    seen: dict[int, Operation] = {}
    todo = [op for st in sch.stages for op in (st.op, getattr(st, "origin_op", st.op))] + list(sch.outputs)
    while todo:
        op = todo.pop()
        if id(op) not in seen:
            seen[id(op)] = op
            todo.extend(t.op for t in op.input_tensors())
    return list(seen.values())


def _user_frame() -> tuple[str | None, int | None, str]:
    """The innermost frame outside the tessel package: the line the user wrote."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_TESSEL_DIR):
        frame = frame.f_back
    if frame is None:
        return None, None, ""
    name, line = frame.f_code.co_filename, frame.f_lineno
    return name, line, linecache.getline(name, line).strip()


def _call_text(obj: Any, sch: Schedule, name: str, args: tuple, kwargs: dict) -> str:
    target = "s" if obj is sch else _value_text(obj)
    parts = [_value_text(a) for a in args] + [f"{k}={_value_text(v)}" for k, v in kwargs.items()]
    return f"{target}.{name}({', '.join(parts)})"


def _value_text(x: Any, top: bool = False) -> str:
    """How a user would name a value: ``s[B]``, ``k.inner``, ``B``, ``C.op``; a returned
    tuple (``top``) prints bare, as it would be unpacked."""
    from ..ir import expr as E
    from ..te.tensor import Operation, Tensor
    from .stage import Stage

    if isinstance(x, Stage):
        return f"s[{x.name}]"
    if isinstance(x, E.IterVar | Tensor):
        return x.name
    if isinstance(x, Operation):
        return f"{x.name}.op"
    if isinstance(x, list):
        return "[" + ", ".join(_value_text(v) for v in x) + "]"
    if isinstance(x, tuple):
        inner = ", ".join(_value_text(v) for v in x)
        return inner if top else f"({inner})"
    if x is None or isinstance(x, str | int | float | bool):
        return repr(x)
    if isinstance(x, E.PrimExpr):
        return str(x)
    return type(x).__name__
