"""The schedule: one stage per operation reachable from the outputs, in dataflow order."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..deep import deep_stack
from ..errors import ScheduleError
from ..ir import expr as E
from ..te.domain import infer_shapes
from ..te.operation import stage_order
from ..te.tensor import Operation, Tensor
from .checking import checker
from .groups import copy_groups, create_group, scan_group
from .history import History, note_created, recorded
from .kinds import ROOT, Placement
from .stage import Stage


def _post_dfs(outputs: Iterable[Operation]) -> list[Operation]:
    return stage_order(list(outputs))


class Schedule:
    """Stages in producer-before-consumer order; ``s[T]`` gives the stage of tensor ``T``."""

    def __init__(self, outputs: list[Operation], *, notify: bool = True):
        self.outputs = list(outputs)
        self.stages: list[Stage] = []
        self.stage_map: dict[Operation, Stage] = {}
        for op in _post_dfs(self.outputs):
            st = Stage(op, self)
            st.is_output = any(op is o for o in self.outputs)
            self.stages.append(st)
            self.stage_map[op] = st
        self.groups: list = []  # every group, in the order made (TVM's Schedule.groups; see groups.py)
        self._attach_bodies()
        # IterVars that a dataflow rewrite moved or retired -> what to use instead (for errors)
        self.iv_notes: dict[E.IterVar, str] = {}
        # every primitive call as a step, where it was made (see history.py)
        self.history: History | None = None
        # what each position primitive did (computeAt by position, seed 003), for views
        self.position_log: list = []
        # Tiramisu's after/before commands, in the order given (see commands.py)
        self.orders: tuple = ()
        note_created(self, notify)

    def _attach_bodies(self) -> None:
        """The stages of a recurrence's body (a scan's update and what it computes from the
        states) run inside the recurrence's loop, one step per iteration: attached there from
        the start, and a group of their own, as TVM's scan group is. Their own loops are
        scheduled as any stage's."""
        for st in self.stages:
            axis = st.op.body_scope()
            if axis is None:
                continue
            body = [self.stage_map[op] for op in st.op.body_ops() if op in self.stage_map]
            for b in body:
                if b.attach_type == ROOT:
                    b.placement = Placement.at(st, axis)
            if body:
                scan_group(self, st, sorted(body, key=self.stages.index))

    @classmethod
    def _detached(cls, outputs: list[Operation]) -> Schedule:
        """A schedule that tells no observer and keeps no steps (a snapshot's starting point)."""
        new = cls(outputs, notify=False)
        assert new.history is not None
        new.history = History(new.history.origin)
        return new

    @classmethod
    def create(cls, ops, *, notify: bool = True) -> Schedule:
        """``create_schedule``, as the class a history records makes it again (``History.replay``)."""
        if not isinstance(ops, list | tuple):
            ops = [ops]
        out = []
        for op in ops:
            if isinstance(op, Tensor):
                op = op.op
            if not isinstance(op, Operation):
                raise ScheduleError(f"create_schedule expects operations (e.g. C.op), got {op!r}")
            out.append(op)
        infer_shapes(out)  # computes declared without a shape are sized from what their readers read
        return cls(out, notify=notify)

    def __getitem__(self, key) -> Stage:
        if isinstance(key, Stage):
            return key
        if isinstance(key, str):
            return self._stage_named(key)
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

    def _stage_named(self, name: str) -> Stage:
        found = [st for st in self.stages if st.name == name]
        if len(found) != 1:
            why = "no stage has" if not found else f"{len(found)} stages have"
            raise ScheduleError(
                f"{why} the name {name!r}; the stages are {', '.join(st.name for st in self.stages)} "
                "(look a stage up by its tensor instead: s[T])"
            )
        return found[0]

    def current_tensor(self, t: Tensor) -> Tensor:
        """The tensor that now holds ``t``'s values: a rewrite replaces a stage's operation (and
        so its output tensors), while users keep the tensors they created."""
        st = self.stage_map.get(t.op)
        return st.op.output(t.value_index) if st is not None else t

    # ---- dataflow rewrites (seed 001; see dataflow.py) -------------------------------------
    @recorded
    def cache_read(self, tensor: Tensor, scope: str, readers) -> Tensor:
        """A stage ``T.<scope>`` copying ``tensor``, read by ``readers`` instead of ``tensor``."""
        from .dataflow import cache_read

        return cache_read(self, tensor, scope, readers)

    @recorded
    def cache_write(self, tensor, scope: str):
        """A stage ``C.<scope>`` that computes C; C becomes a copy of it (all outputs of one op)."""
        from ..te.tensor_compute import TensorComputeOp
        from .dataflow import cache_write

        if isinstance(tensor, Tensor) and isinstance(tensor.op, TensorComputeOp):  # an intrinsic's call
            from .cache_intrinsic import cache_write_intrinsic_call

            return cache_write_intrinsic_call(self, self[tensor], tensor.op, scope)
        return cache_write(self, tensor, scope)

    @recorded
    def rfactor(self, tensor: Tensor, axis: E.IterVar, factor_axis: int = 0):
        """Factor the reduction of ``tensor`` over loop ``axis`` into a new stage ``B.rf``."""
        from .dataflow import rfactor

        return rfactor(self, tensor, axis, factor_axis)

    @recorded
    def create_group(self, outputs, inputs, include_inputs: bool = False):
        """The stages from ``inputs`` (exclusive unless ``include_inputs``) to ``outputs``, to move
        together (see groups.py)."""
        return create_group(self, outputs, inputs, include_inputs)

    # ---- computeAt by position, propagation and inlining (seed 003; see inlining.py) ------
    @recorded
    def propagate(self, reference, pos: int = -1, selector=None, direction: str = "both", to=None) -> list[str]:
        """Replay ``reference``'s first ``pos`` loops onto every stage connected to it (or only
        backward/forward, bounded by ``to``: see ``inlining.propagate``)."""
        from .inlining import propagate

        return propagate(self, self[reference], pos, selector, direction, to)

    @recorded
    def inline_most(self, stages=None, uninlinable=()) -> dict[str, int]:
        """Compute every stage (or those given) as deep inside its readers as is legal, never
        inside a loop of ``uninlinable`` (IterVars: nvFuser's uninlinable ids)."""
        from .inlining import inline_most

        return inline_most(self, stages, uninlinable)

    @recorded
    def inline_all_at(self, reference, pos: int = -1, best_effort: bool = False, uninlinable=()) -> dict[str, int]:
        """Compute every stage at ``reference``'s position ``pos``, mapped onto its own loops."""
        from .inlining import inline_all_at

        return inline_all_at(self, self[reference], pos, best_effort, uninlinable)

    @recorded
    def parallelize_all_like(self, reference, stages=None, kinds=None) -> dict[str, list[str]]:
        """Annotate every stage's loops (or ``stages``') as the ``reference`` loops they map to
        (nvFuser's parallelizeAllLike; see ``parallelize_like.py``)."""
        from .parallelize_like import parallelize_all_like

        return parallelize_all_like(self, self[reference], stages, kinds)

    def max_position(self, stage, uninlinable=()) -> int:
        """The deepest position ``stage`` can take once its readers are inlined as deep as legal,
        without applying anything (nvFuser's ``getMaxPosAll``): a question, so it is not recorded."""
        from .inlining import max_position

        return max_position(self, self[stage], uninlinable)

    # ---- the operational model's three structures, and legality --------------------------
    def dataflow_graph(self):
        """Stages and the tensors flowing between them (seed 001, "Dataflow Graph")."""
        from .graph import DataflowGraph

        return DataflowGraph(self)

    def schedule_tree(self):
        """Where every stage is computed: root, loops, stages attached under loops (seed 001)."""
        from .tree import ScheduleTree

        return ScheduleTree(self)

    def itervar_dag(self, stage):
        """The IterVar-relation DAG of one stage (``s[T]``, a tensor, or an operation)."""
        return self[stage].itervar_dag()

    @deep_stack("s.violations()")
    def violations(self) -> list:
        """Every broken legality rule, each with its explanation and proposed fix (empty: legal)."""
        return checker().violations(self)

    @deep_stack("s.verify()")
    def verify(self) -> Schedule:
        """Raise a ScheduleError explaining the first broken rule (and proposing a fix); else return self."""
        found = checker().violations(self)
        if found:
            raise found[0].error(len(found) - 1)
        return self

    def python(self, func: str = "schedule") -> str:
        """The steps as a Python function of the output tensors that makes this schedule again
        (to paste and edit; see :mod:`tessel.schedule.script`)."""
        from .script import python_source

        return python_source(self, func)

    @property
    def schedule_record(self) -> list[Schedule]:
        """TVM's record (``keep_records``): the schedule after each primitive; [] if not kept."""
        return [x for _, x in self.__dict__.get("_records") or ()]

    @property
    def primitive_record(self) -> list[str]:
        """The primitives of ``schedule_record``, by name ("vanilla" first)."""
        return [n for n, _ in self.__dict__.get("_records") or ()]

    def copy(self, record: bool = True) -> Schedule:
        """An independent copy of the scheduling decisions, cheap because IR is immutable:
        operations and IterVars are shared, stages and everything a primitive changes are new.

        The copy's history continues this one's (``record``; else it records nothing), so
        ``t = s.copy(); t[C].split(...)`` leaves ``s`` and its history as they were, and
        ``t.history.replay()`` rebuilds ``t``.
        """
        import copy as _copy

        new = _copy.copy(self)
        for slot in [k for k in vars(new) if k.startswith("_memo_")]:
            del new.__dict__[slot]  # the original's analyses (``poly.analysis.remember``) refer to it
        new.outputs = list(self.outputs)
        new.iv_notes = dict(self.iv_notes)
        new.position_log = list(self.position_log)
        new.history = self.history.fork() if record and self.history is not None else None
        new.__dict__.pop("_records", None)  # TVM's schedule record stays the original's
        smap = {id(st): st.copy_into(new) for st in self.stages}
        new.stages = [smap[id(st)] for st in self.stages]
        for c in new.stages:
            if c.attach_stage is not None:
                c.placement = c.placement.moved(smap.get(id(c.attach_stage), c.attach_stage), c.attach_ivar)
        new.stage_map = {op: smap[id(st)] for op, st in self.stage_map.items()}
        new.groups = copy_groups(self.groups, smap, new)
        new.orders = tuple(type(o)(smap.get(id(o.stage), o.stage), smap.get(id(o.anchor), o.anchor), o.level, o.before)
                           for o in self.orders)
        return new

    #: the user's assumptions about the sizes (``assume``), as written
    assumptions: tuple[str, ...] = ()
    #: (stage name, why) of commands accepted on the way to a schedule they are legal in only if
    #: later commands follow (``tessel.check``): said again if the final schedule is refused
    pending_conditions: tuple[tuple[str, str], ...] = ()
    #: while a command's checks run: (undo, redo) of the command (``commands._commit``)
    _before_command: tuple | None = None

    @recorded
    def assume(self, condition: str) -> Schedule:
        """Promise that the symbolic sizes satisfy ``condition`` (``"n % 8 == 0"``): the
        polyhedral analysis may rely on it, and every call of a kernel built from this schedule
        checks it (an ArgumentError names the assumption a call breaks)."""
        from .assume import parse_assumption, size_vars

        parse_assumption(condition, size_vars(self))  # refuse a bad one now, where it is written
        self.assumptions = (*self.assumptions, condition)
        return self

    #: what a distributed run does besides the derived messages, in the order given: ("barrier",
    #: after) and ("transfer", tensor name, src, dst, lo, hi) (``barrier``, ``transfer``)
    messaging: tuple[tuple, ...] = ()

    @recorded
    def barrier(self, after: str = "exchange") -> Schedule:
        """Tiramisu's barrier: in a distributed run (``tessel.distributed``) every rank waits for
        all the others at this point of each call, ``after="exchange"`` (every halo is in, nothing
        computed yet) or ``after="compute"`` (the rank's kernel and any Allreduce are done). A
        point where every rank agrees, e.g. before timing or reading results out of band; it
        changes no value, and ``tessel.build`` (one process) ignores it."""
        if after not in ("exchange", "compute"):
            raise ScheduleError(f"barrier(after={after!r}): a barrier goes after the halo 'exchange' or after the "
                                "'compute' of each distributed call")
        self.messaging = (*self.messaging, ("barrier", after))
        return self

    @recorded
    def transfer(self, tensor, src: int, dst: int, lo: Sequence[int], hi: Sequence[int]) -> Schedule:
        """Tiramisu's ``send``/``recv`` pair: rank ``dst`` receives ``tensor[lo:hi]`` (a box of
        global indices) from rank ``src`` before each distributed call computes. Once a program
        declares one, its declared transfers replace the derived messages, after a check against
        the derived plan for the run's rank count (``tessel.distributed.Plan.with_transfers``:
        an element needed that none brings, one brought twice, sent by a rank that does not own
        it or read by nobody is refused with a witness). ``tessel.build`` ignores it."""
        name = getattr(tensor, "name", tensor)
        lo, hi = tuple(int(x) for x in lo), tuple(int(x) for x in hi)
        if not isinstance(name, str) or name not in {st.op.name for st in self.stages if st.op.is_placeholder}:
            raise ScheduleError(f"transfer of {name!r}: a transfer carries an input (placeholder) of the program")
        if len(lo) != len(hi) or any(a >= b for a, b in zip(lo, hi)) or min(src, dst) < 0 or src == dst:
            raise ScheduleError(f"transfer of {name} from rank {src} to rank {dst}, [{lo}, {hi}): give two different "
                                "ranks and a non-empty box (lo < hi in every dimension)")
        self.messaging = (*self.messaging, ("transfer", name, int(src), int(dst), lo, hi))
        return self

    def assumption_exprs(self) -> list[E.PrimExpr]:
        from .assume import parse_assumption, size_vars

        sizes = size_vars(self)
        return [parse_assumption(a, sizes) for a in self.assumptions]

    @deep_stack("s.dependences()")
    def dependences(self) -> list:
        """The flow, anti and output dependences between statement instances of the schedule
        as it would be lowered now (seed 004), each with a witness (``str()`` shows it)."""
        return checker().dependences(self)

    def normalize(self) -> Schedule:
        """Kept for TVM compatibility: lowering already counts every loop from zero."""
        return self

    def __repr__(self) -> str:
        return f"Schedule(outputs=[{', '.join(o.name for o in self.outputs)}])"


def create_schedule(ops, *, notify: bool = True) -> Schedule:
    """A default schedule for one operation or a list of them (every producer gets a stage)."""
    return Schedule.create(ops, notify=notify)


__all__ = ["ROOT", "Schedule", "create_schedule"]
