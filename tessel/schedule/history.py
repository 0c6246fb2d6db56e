"""Every schedule records the primitives applied to it as data: a :class:`Step` per call.

Why data and not text: a step names the primitive, the stage it was called on and its
arguments as *handles* (a stage by its position in the schedule, an axis by its position in
its stage's IterVars, a tensor by its stage and output index), so the same steps can be
replayed onto another schedule of the same computation -- a cheap copy, or fresh tensors built
by the same program. The explorer's snapshots, legality's fixes and the acceptance test that
replays every schedule of the suite all go through :func:`apply_steps`.

A call that raised is recorded too (then re-raised untouched), since it is the step a user
most wants to see; replay skips it, as it left the schedule unchanged. A primitive that calls
others (``tile`` splits and reorders) is one step, not three.

Snapshots cost nothing while scheduling: ``step.snapshot`` is built on first use by copying
the previous step's snapshot (``Schedule.copy``, shared immutable IR) and replaying this one
step, on a clone of the computation, so nothing a later primitive does can reach it.
"""

from __future__ import annotations

import copy as _copy
import functools
import linecache
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InternalError, ScheduleError, TesselError
from ..te.operation import stage_order
from .kinds import ROOT, SCOPE, StageBase

if TYPE_CHECKING:
    from ..te.tensor import Operation, Tensor
    from .schedule import Schedule
    from .stage import Stage

_TESSEL_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_state = threading.local()
_observers: list[Callable[[Schedule], None]] = []

# Turn off to record steps without offering snapshots (e.g. in a long-running search).
SNAPSHOTS = True
# A schedule with more stages than this offers no snapshots: replaying a long chain once per
# step is quadratic (and copying its expressions passes the recursion limit anyway).
MAX_SNAPSHOT_STAGES = 200


# ---- handles: how a step names what it was given -------------------------------------------
@dataclass(frozen=True)
class StageRef:
    """The stage at position ``stage`` of the schedule's stage list."""

    stage: int


@dataclass(frozen=True)
class TensorRef:
    """Output ``value_index`` of the (current) operation of stage ``stage``."""

    stage: int
    value_index: int


@dataclass(frozen=True)
class OpRef:
    """The (current) operation of stage ``stage``."""

    stage: int


@dataclass(frozen=True)
class AxisRef:
    """IterVar ``index`` of stage ``stage``'s ``all_iter_vars`` (roots first, then derived)."""

    stage: int
    index: int


@dataclass(frozen=True)
class OpAxisRef:
    """``s[stage].op.axis[index]`` (or ``reduce_axis``): an axis of an operation a step makes."""

    stage: int
    field: str
    index: int


Handle = StageRef | TensorRef | OpRef | AxisRef | OpAxisRef


class _HandleMaker:
    """Turns live arguments into handles for one schedule (positions looked up once)."""

    def __init__(self, sch: Schedule):
        self.sch = sch
        self.pos = {id(st): k for k, st in enumerate(sch.stages)}

    def __call__(self, x: Any, prefer: Stage | None = None) -> Any:
        if isinstance(x, int | float | str | bool | None):
            return x
        E, Tensor, Operation = _types()
        if isinstance(x, StageBase):
            k = self.pos.get(id(x))
            return StageRef(k) if k is not None and x.schedule is self.sch else x
        if isinstance(x, Tensor | Operation):
            st = self.sch.stage_map.get(x.op if isinstance(x, Tensor) else x)
            if st is None:
                return x
            k = self.pos[id(st)]
            return TensorRef(k, x.value_index) if isinstance(x, Tensor) else OpRef(k)
        if isinstance(x, E.IterVar):
            return self.axis(x, prefer)
        if isinstance(x, list | tuple):
            return type(x)(self(v, prefer) for v in x)
        return x

    def axis(self, iv, prefer: Stage | None):
        order = ([prefer] if prefer is not None else []) + self.sch.stages
        for st in order:
            for j, a in enumerate(st.all_iter_vars):
                if a is iv:
                    return AxisRef(self.pos[id(st)], j)
        return iv  # a thread axis, or an axis of no stage (the call will say so)


@functools.cache
def _types() -> tuple:
    """The classes handles stand for (imported late: stage.py imports this module)."""
    from ..ir import expr as E
    from ..te.tensor import Operation, Tensor

    return E, Tensor, Operation


def resolve(x: Any, sch: Schedule, var_map: dict | None = None) -> Any:
    """The live object a handle names in ``sch``; PrimExpr constants get ``var_map`` applied."""
    from ..ir import expr as E

    if isinstance(x, StageRef):
        return sch.stages[x.stage]
    if isinstance(x, TensorRef):
        return sch.stages[x.stage].op.output(x.value_index)
    if isinstance(x, OpRef):
        return sch.stages[x.stage].op
    if isinstance(x, AxisRef):
        return sch.stages[x.stage].all_iter_vars[x.index]
    if isinstance(x, OpAxisRef):
        return getattr(sch.stages[x.stage].op, x.field)[x.index]
    if isinstance(x, list | tuple):
        return type(x)(resolve(v, sch, var_map) for v in x)
    if var_map and isinstance(x, E.PrimExpr):
        from ..ir.functor import substitute

        return substitute(x, var_map)
    return x


# ---- steps -----------------------------------------------------------------------------------
class _Origin:
    """What every step of one history starts from: the outputs the schedule was created for."""

    def __init__(self, outputs: list[Operation], kind: type[Schedule]):
        self.outputs = list(outputs)
        self.kind = kind  # the class of schedule recorded: a replay makes one (history.py is below it)
        self._clone: tuple[list[Operation], dict] | None = None

    def clone(self) -> tuple[list[Operation], dict]:
        """Fresh operations computing the same thing, and the map from the original's size
        variables to theirs (made once: operations are immutable, so snapshots share them)."""
        if self._clone is None:
            from ..ir import expr as E

            memo: dict[int, Any] = {}
            for op in _graph(self.outputs):  # reducers carry declarations: share, do not copy
                body = getattr(op, "body", ())
                for b in body if isinstance(body, tuple) else ():
                    if isinstance(b, E.Reduce):
                        memo[id(b.combiner)] = b.combiner
            for op in _graph(self.outputs):  # producers first: each copy stops at the ops
                _copy.deepcopy(op, memo)      # already copied, so its depth is one op's, not the chain's
            ops = _copy.deepcopy(self.outputs, memo)
            var_map: dict = {}
            for a, b in zip(_graph(self.outputs), _graph(ops)):
                _zip_op_vars(a, b, var_map)
            self._clone = ops, var_map
        return self._clone


class Step:
    """One primitive call: ``primitive`` on ``target`` (a StageRef; None for a schedule
    primitive) with ``args``/``kwargs`` as handles, where it was made, and what it did.

    ``call``, ``result`` and ``code`` are the user-facing text of the step; ``snapshot`` is the
    schedule just after it (built on first use; None when snapshots were off)."""

    def __init__(self, primitive: str, target: StageRef | None, args: tuple, kwargs: dict,
                 filename: str | None = None, lineno: int | None = None, code: str = ""):
        self.primitive, self.target = primitive, target
        self.args, self.kwargs = tuple(args), dict(kwargs)
        self.filename, self.lineno, self.code = filename, lineno, code
        self.index = 0
        self.error: BaseException | None = None
        self._text: tuple | None = None  # (receiver, args, kwargs, result) as given, for the text
        self._call: str | None = None
        self._prev: Step | None = None
        self._origin: _Origin | None = None
        self._stages: tuple = ()
        self._stage_map: dict = {}
        self._snapshots = False
        self._snap: Schedule | None = None
        self._snap_error: str | None = None

    # ---- text ----------------------------------------------------------------------------
    @property
    def call(self) -> str:
        """The primitive as tessel understood it: ``s[B].split(k, factor=16)``."""
        if self._call is None:
            obj, args, kwargs, _ = self._text or (None, self.args, self.kwargs, None)
            target = "s" if self.target is None else _value_text(obj) if obj is not None else f"s[{self.target}]"
            parts = [_value_text(a) for a in args] + [f"{k}={_value_text(v)}" for k, v in kwargs.items()]
            self._call = f"{target}.{self.primitive}({', '.join(parts)})"
        return self._call

    @property
    def result(self) -> str:
        res = self._text[3] if self._text else None
        return "" if res is None or self.error is not None else _value_text(res, top=True)

    @property
    def where(self) -> str:
        return f"{self.filename}:{self.lineno}" if self.filename else "<unknown>"

    # ---- the schedule as it stood after this step ----------------------------------------
    @property
    def snapshot(self) -> Schedule | None:
        if not self._snapshots:
            return None
        if self._snap is None and self._snap_error is None:
            self._build_snapshots()
        return self._snap

    @property
    def snapshot_error(self) -> str | None:
        if not self._snapshots:
            return None
        self.snapshot  # noqa: B018 -- build it, to know whether it failed
        return self._snap_error

    def _build_snapshots(self) -> None:
        """Build this snapshot from the nearest earlier one, one step at a time (no recursion)."""
        chain: list[Step] = []
        st: Step | None = self
        while st is not None and st._snap is None:
            chain.append(st)
            st = st._prev
        base = st._snap if st is not None else None
        for step in reversed(chain):
            try:
                base = step._advance(base)
            except InternalError:  # a tessel bug while replaying: never hidden as a missing picture
                raise
            except TesselError as err:  # a replay refused: show the step without its picture
                step._snap_error, base = f"{type(err).__name__}: {err}", None
            step._snap = base
            if base is None:
                step._snap_error = step._snap_error or "an earlier step could not be replayed"

    def _advance(self, before: Schedule | None) -> Schedule | None:
        assert self._origin is not None
        ops, var_map = self._origin.clone()
        if self._prev is None:  # create_schedule: a schedule of a fresh copy of the computation
            return self._origin.kind._detached(ops)
        if before is None or before.history is None:
            return None
        after = before.copy(record=False)
        if self.error is None:
            apply_steps(after, [self], var_map)
        after.history = History(before.history.origin)
        return after

    def in_snapshot(self, t: Tensor) -> Tensor | None:
        """The snapshot's tensor for the user's ``t``; None if ``t`` did not exist at this step."""
        snap = self.snapshot
        live = self._stage_map.get(t.op)
        if snap is None or live is None:
            return None
        k = next((n for n, st in enumerate(self._stages) if st is live), None)
        return None if k is None else snap.stages[k].op.output(t.value_index)

    def __repr__(self) -> str:
        status = f" raised {type(self.error).__name__}" if self.error is not None else ""
        return f"<step {self.index}: {self.call} at {self.where}{status}>"


Record = Step  # the name the views used before steps were data


class History(list):
    """The steps of one schedule, in order; ``replay`` rebuilds the schedule elsewhere."""

    def __init__(self, origin: _Origin, steps=()):
        super().__init__(steps)
        self.origin = origin

    def fork(self) -> History:
        """The same steps, continued separately (``Schedule.copy``)."""
        return History(self.origin, self)

    def append_step(self, sch: Schedule, step: Step, text: tuple | None = None) -> Step:
        step.index, step._text = len(self), text
        step._prev = self[-1] if self else None
        step._origin = self.origin
        step._stages, step._stage_map = tuple(sch.stages), sch.stage_map
        step._snapshots = SNAPSHOTS
        if SNAPSHOTS and len(sch.stages) > MAX_SNAPSHOT_STAGES:
            step._snap_error = (f"not copied: the schedule has {len(sch.stages)} stages "
                                f"(tessel.schedule.history.MAX_SNAPSHOT_STAGES is {MAX_SNAPSHOT_STAGES})")
        self.append(step)
        return step

    def replay(self, onto=None, upto: int | None = None) -> Schedule:
        """The schedule these steps build, rebuilt on ``onto``: None (a fresh schedule of the
        same operations), a list of output operations or tensors (fresh tensors computing the
        same thing), or an untouched Schedule of such outputs. ``upto`` stops after that step.

        Operations are matched by their position in the graph, axes by their position in their
        stage; symbolic sizes of the original are replaced by the matching ones of ``onto``."""
        if not isinstance(onto, self.origin.kind):  # made here, not by the user: observers need not hear of it
            onto = self.origin.kind.create(self.origin.outputs if onto is None else onto, notify=False)
        var_map = match_computations(self.origin.outputs, onto)
        steps = [st for st in self[1:(None if upto is None else upto + 1)] if st.error is None]
        return apply_steps(onto, steps, var_map)


def match_computations(outputs: list[Operation], onto: Schedule) -> dict:
    """Check ``onto`` is an untouched schedule of the same computation; map size variables."""
    old = stage_order(list(outputs))
    new = [st.op for st in onto.stages]
    same = len(old) == len(new) and all(
        type(a) is type(b) and a.name == b.name and len(a.outputs) == len(b.outputs) for a, b in zip(old, new))
    if not same or any(st.relations or not _as_created(st) for st in onto.stages):
        raise ScheduleError(
            f"replay onto a schedule of another computation: the steps were recorded for stages "
            f"{', '.join(op.name for op in old)}, the target has {', '.join(op.name for op in new)} "
            "(replay needs a fresh schedule, te.create_schedule, of the same program)")
    var_map: dict = {}
    for a, b in zip(old, new):
        if a is not b:
            _zip_op_vars(a, b, var_map)
    return var_map


def _as_created(st: Stage) -> bool:
    """Whether the stage is placed as a new schedule places it: at the root, or (a stage of a
    recurrence's body) inside the loop of its recurrence."""
    if st.attach_type == ROOT:
        return True
    owner = st.attach_stage
    return (st.attach_type == SCOPE and owner is not None and st.attach_ivar is owner.op.body_scope()
            and any(op is st.op for op in owner.op.body_ops()))


def _zip_op_vars(a: Operation, b: Operation, out: dict) -> None:
    """Pair the size variables of two operations defined alike (their shapes and loop domains)."""
    for f in ("shape", "axis", "reduce_axis"):
        _zip_vars(getattr(a, f, ()), getattr(b, f, ()), out)
    for x, y in zip(a.outputs, b.outputs):
        _zip_vars(x.shape, y.shape, out)


def _zip_vars(a: Any, b: Any, out: dict) -> None:
    """Pair the variables found at the same place in two structurally equal expressions."""
    from ..ir import expr as E

    if isinstance(a, E.Var) and isinstance(b, E.Var):
        if a is not b:
            out.setdefault(a, b)
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
        for x, y in zip(a, b):
            _zip_vars(x, y, out)
    elif isinstance(a, E.Node) and type(a) is type(b):
        for x, y in zip(a.fields(), b.fields()):
            _zip_vars(x, y, out)


def apply_steps(sch: Schedule, steps, var_map: dict | None = None) -> Schedule:
    """Call each step's primitive on ``sch`` with its handles resolved there.

    A ScheduleError means the step does not apply to this schedule and is the caller's to
    judge; any other exception is a bug in tessel and becomes an InternalError naming the step.
    """
    for step in steps:
        try:
            recv = sch if step.target is None else resolve(step.target, sch, var_map)
            args = resolve(step.args, sch, var_map)
            kwargs = {k: resolve(v, sch, var_map) for k, v in step.kwargs.items()}
            method = getattr(recv, step.primitive)
        except (IndexError, AttributeError) as err:
            raise ScheduleError(f"step {step.call} does not apply to this schedule: {err}") from err
        try:
            method(*args, **kwargs)
        except TesselError:
            raise
        except Exception as err:
            raise InternalError(f"replaying step {step.call} failed inside tessel: "
                                f"{type(err).__name__}: {err}") from err
    return sch


def corresponding(t: Tensor, src: Schedule, dst: Schedule) -> Tensor:
    """The tensor of ``dst`` at the place of ``src``'s ``t`` (same stage position and output). A
    buffer outside the program that ``store_in`` was given is the replayed steps' too, or the
    copy ``dst`` made of it over its own sizes (``commands._own_sizes``)."""
    if t not in src:
        made = dst.__dict__.get("_store_buffers", {}).get(id(t))
        return made[1] if made is not None else t
    st = src[t]
    return dst.stages[src.stages.index(st)].op.output(t.value_index)


def _graph(outputs) -> list[Operation]:
    return stage_order(list(outputs))


# ---- recording -------------------------------------------------------------------------------
def recorded(fn: Callable) -> Callable:
    """Decorate a Stage or Schedule primitive so that each outermost call becomes a step."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        sch = getattr(self, "schedule", self)
        records = sch.__dict__.get("_records") if hasattr(sch, "__dict__") else None
        if records is not None:  # TVM's schedule record: every primitive, those called inside one too
            before = len(records)
            result = _unrecorded_or_step(fn, name, self, sch, args, kwargs)
            if len(records) == before:  # a primitive of its own (tile is its splits and reorder)
                records.append((name, sch.copy(record=False)))
            return result
        return _unrecorded_or_step(fn, name, self, sch, args, kwargs)

    return wrapper


def keep_records(sch: Schedule) -> None:
    """Keep TVM's schedule record on ``sch`` from now on (``te.keep_schedule_record``): a copy of
    the schedule after each primitive, those a primitive calls included (``tile``: split,
    split, reorder), with its name; the first is the schedule as it is now ("vanilla").
    Derived from the same calls as the history, which keeps one step per outermost call."""
    sch.__dict__["_records"] = [("vanilla", sch.copy(record=False))]


def _unrecorded_or_step(fn: Callable, name: str, self, sch, args, kwargs):
    """Call the primitive; an outermost call of a schedule keeping a history becomes a step."""
    hist = getattr(sch, "history", None)
    if getattr(_state, "depth", 0) or not isinstance(hist, History):
        return fn(self, *args, **kwargs)
    make = _HandleMaker(sch)
    prefer = None if self is sch else self
    step = Step(name, None if self is sch else make(self), make(args, prefer),
                {k: make(v, prefer) for k, v in kwargs.items()}, *_user_frame())
    _state.depth = 1
    try:
        result = fn(self, *args, **kwargs)
    except Exception as err:
        step.error = err
        hist.append_step(sch, step, (self, args, kwargs, None))
        raise
    finally:
        _state.depth = 0
    hist.append_step(sch, step, (self, args, kwargs, result))
    return result


@contextmanager
def not_recorded() -> Iterator[None]:
    """Primitives called inside do not become steps (replays, fixes tried on copies)."""
    old = getattr(_state, "depth", 0)
    _state.depth = 1
    try:
        yield
    finally:
        _state.depth = old


def note_created(sch: Schedule, notify: bool = True) -> None:
    """Called by every new Schedule: its creation is step 0, and observers hear of it."""
    sch.history = History(_Origin(sch.outputs, type(sch)))
    step = Step("create_schedule", None, (), {}, *_user_frame())
    outs = ", ".join(f"{op.name}.op" for op in sch.outputs)
    step._call = f"create_schedule({outs if len(sch.outputs) == 1 else '[' + outs + ']'})"
    sch.history.append_step(sch, step)
    if notify:
        for observer in list(_observers):
            observer(sch)


def announce(sch: Schedule) -> None:
    """Tell the observers of a schedule that was created without telling them: a library's
    result made on copies of a quiet schedule (``tessel.auto_schedule`` tries its rules on
    copies, and only the one it returns is the user's)."""
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


def _user_frame() -> tuple[str | None, int | None, str]:
    """The innermost frame outside the tessel package: the line the user wrote."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_TESSEL_DIR):
        frame = frame.f_back
    if frame is None:
        return None, None, ""
    name, line = frame.f_code.co_filename, frame.f_lineno
    return name, line, linecache.getline(name, line).strip()


def _value_text(x: Any, top: bool = False) -> str:
    """How a user would name a value: ``s[B]``, ``k.inner``, ``B``, ``C.op``; a returned
    tuple (``top``) prints bare, as it would be unpacked."""
    from ..ir import expr as E
    from ..te.tensor import Operation, Tensor

    if isinstance(x, StageBase):
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
