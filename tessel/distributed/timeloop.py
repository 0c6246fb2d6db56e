"""Running a distributed recurrence over time: the step loop driven here, one halo exchange a step.

``dist.build`` of a schedule whose distributed stage is a ``te.recurrence`` over ``(t, i, ...)``
or a ``te.scan`` gives a :class:`StepKernel`. One call runs every step: step ``t`` calls the distributed kernel
of its class's step program (``steps.py``) on the rank's planes ``h[t-1]``, ``h[t-2]``, ...
(each exchanging exactly its plan's halo rows first) and writes plane ``h[t]``. A rank keeps
the live steps only (``depth + 1`` planes of its block per state, reused in turn, in a :class:`Window`),
whatever the recurrence's shape says; ``gather`` gives the last step (or another live one).

Why the runtime drives the loop rather than MPI calls inside the generated C: each step is
then an ordinary tessel kernel with the plan's exact messages around it, tested as such, and
the cost per step is that of one call of the Python loop a user would write, with no MPI in
the generated code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ArgumentError, DistributionError
from ..ir import expr as E
from ..ir.functor import free_vars
from ..schedule.schedule import Schedule
from ..te.recurrence import DefinitionOp
from ..te.tensor import ComputeOp, PlaceholderOp, Tensor
from .comm import Comm
from .kernel import DistArray, DistKernel
from .plan import Plan, Split, _follow, _placement, plan
from .steps import StepProgram, distributed_recurrence, step_program


class Window:
    """One rank's live steps of a distributed recurrence of global shape ``shape`` (steps
    first): plane ``t % len(planes)`` holds step ``t`` of the rank's block (with ghost rows)."""

    def __init__(self, name: str, shape: tuple[int, ...], planes: list[DistArray]):
        self.name, self.shape, self.planes = name, tuple(shape), planes
        #: the last step computed (-1: none yet)
        self.last = -1

    def plane(self, step: int) -> DistArray:
        return self.planes[step % len(self.planes)]

    def __repr__(self) -> str:
        return f"<Window {self.name} {self.shape}: {len(self.planes)} live steps, last {self.last}>"


class StepPlan:
    """The plan of every step: one :class:`Plan` per class of steps (``program.of_step``)."""

    def __init__(self, program: StepProgram, plans: list[Plan]):
        self.program, self.plans = program, plans
        self.ranks = plans[0].ranks

    def of(self, step: int) -> Plan:
        return self.plans[self.program.of_step[step]]

    def volume(self, step: int | None = None) -> int:
        """Elements received at ``step`` over all ranks (None: over every step of a call)."""
        if step is not None:
            return self.of(step).volume()
        return sum(self.plans[c].volume() for c in self.program.of_step)

    def whole_row_volume(self) -> int:
        return sum(self.plans[c].whole_row_volume() for c in self.program.of_step)

    def partners(self, rank: int) -> list[int]:
        return sorted({q for p in self.plans for q in p.partners(rank)})

    def halo(self, rank: int, d: int = 1, state: int = 0) -> tuple[int, int]:
        """Ghost widths of state ``state`` at step ``t - d`` on ``rank`` (the widest over the
        classes of steps)."""
        name = self.program.prev[(state, d)].name
        got = [p.halo(rank, name) for p in self.plans if name in p.splits]
        return (max((a for a, _ in got), default=0), max((b for _, b in got), default=0))

    def _named(self, text: str) -> str:
        for t in self.program.prev.values():  # h[t-1][3, 1:6] -> h[t-1, 3, 1:6]
            text = text.replace(f"{t.name}[", f"{t.name[:-1]}, ")
        return text

    def explain(self, rank: int | None = None) -> str:
        """Each class of steps with the messages every one of its steps exchanges."""
        out = []
        for c, p in enumerate(self.plans):
            body = p.explain(rank)
            out.append(f"{_steps_text(self.program.steps_of(c), self.program.name)}:\n  "
                       + self._named(body).replace("\n", "\n  "))
        return "\n".join(out)

    def text(self) -> str:
        sp = self.program
        lines = [f"distributed {sp.name}: {sp.steps} steps over {sp.shape}, each rank keeps "
                 f"{sp.window()} live steps of its block; step t reads "
                 + ", ".join(t.name for t in sp.prev.values())]
        if sp.not_replayed:
            lines.append("  not carried to the step program: " + "; ".join(sp.not_replayed))
        for c, p in enumerate(self.plans):
            lines.append(f"{_steps_text(sp.steps_of(c), sp.name)}:")
            lines += ["  " + self._named(x) for x in p.text().splitlines()]
        return "\n".join(lines)

    __str__ = text


def _steps_text(steps: list[int], name: str) -> str:
    runs: list[list[int]] = []
    for t in steps:
        if runs and runs[-1][1] == t - 1:
            runs[-1][1] = t
        else:
            runs.append([t, t])
    shown = [f"{a}" if a == b else f"{a}..{b}" for a, b in runs[:6]] + (["..."] if len(runs) > 6 else [])
    return f"step{'s' if len(steps) > 1 else ''} {', '.join(shown)} of {name}"


def _in_steps(sp: StepProgram, c: int, make):
    """``make()``, a plan of class ``c``'s step program; a refusal says which steps it is about."""
    try:
        return make()
    except DistributionError as err:
        raise DistributionError(f"{_steps_text(sp.steps_of(c), sp.name)}: {err}") from err


def _class_args(sch: Schedule, progs: list[Tensor]) -> list[Tensor]:
    return [st.op.output(0) for st in sch.stages if isinstance(st.op, PlaceholderOp)] + list(progs)


def _placement_of(sp: StepProgram, args: list[Tensor], dims: dict) -> dict[str, int | None]:
    planes = {id(t) for t in sp.prev.values()}
    return {t.name: (sp.axis if id(t) in planes else dims.get(t.name)) for t in args[:-len(sp.states)]}


def step_plans(s: Schedule, ranks: int, sizes: dict[E.Var, int], placement: dict | None = None,
               multi_hop: bool = False) -> tuple[StepProgram, list[Plan], list[dict]]:
    """The step programs of ``s`` for ``sizes`` and the plan of each class on ``ranks`` ranks."""
    sp = step_program(s, sizes)
    dims = input_dims(s, placement)
    plans, places = [], []
    for sch, prog in zip(sp.schedules, sp.programs):
        args = _class_args(sch, prog)
        place = _placement_of(sp, args, dims)
        plans.append(_in_steps(sp, len(plans), lambda sch=sch, args=args, place=place: plan(
            sch, args, ranks, {}, placement=place, multi_hop=multi_hop)))
        places.append(place)
    return sp, plans, places


def input_dims(s: Schedule, placement: dict | None = None) -> dict[str, int | None]:
    """Where each input of the recurrence or scan lives: the dimension its reads index with the
    distributed axis alone (split in blocks like it), else a copy on every rank; or declared."""
    st = distributed_recurrence(s)
    dims: dict[str, int] = {}
    k = state_axis(st) + 1
    ops = [d.op for d in st.op.definitions] if isinstance(st.op, DefinitionOp) else [
        t.op for t in (*st.op.update, *st.op.init)]
    for op in ops:
        if isinstance(op, ComputeOp) and len(op.axis) > k:
            _follow(op, op.axis[k].var, dims, set())
    out: dict[str, int | None] = {n: v for n, v in dims.items()}
    out.update(_placement(s, placement))
    return out


def state_axis(st) -> int:
    """The dimension of a state's step (its data dimensions) the distributed axis splits."""
    if isinstance(st.op, DefinitionOp):
        return next(n for n, iv in enumerate(st.op.axis) if iv is st.distributed_axis) - 1
    spatial = list(st.op.spatial_of(0))
    return spatial.index(st.distributed_axis) if st.distributed_axis in spatial else 0


class StepKernel(DistKernel):
    """The distributed form of a recurrence over time on one rank (see the module docstring)."""

    def __init__(self, s: Schedule, args: list[Tensor], comm: Comm, target: str, multi_hop: bool,
                 placement: dict | None = None):
        super().__init__(s, args, comm, target, multi_hop, False, False, None, placement)
        st = distributed_recurrence(s)
        self.states = [st.op.definitions[-1]] if isinstance(st.op, DefinitionOp) else list(st.op.outputs)
        for t in args:
            if not isinstance(t.op, PlaceholderOp) and all(t is not x for x in self.states):
                raise ArgumentError(f"argument {t.name}: a distributed recurrence's or scan's arguments are its "
                                    f"inputs and what it computes ({', '.join(x.name for x in self.states)})")
        if self.declared:
            raise DistributionError("transfers declared by hand (s.transfer) are for a kernel of one step; a "
                                    "distributed recurrence's messages are derived for each step")
        self.dims = input_dims(s, placement)
        self._programs: dict[tuple, tuple[StepProgram, list[DistKernel]]] = {}

    def _split(self, t: Tensor, shape: tuple[int, ...]) -> Split:
        st = distributed_recurrence(self.schedule)
        if any(t is x for x in self.states):
            return Split(tuple(shape[1:]), state_axis(st), self.comm.size, st.distributed_block)
        return Split(tuple(shape), self.dims.get(t.name), self.comm.size, st.distributed_block)

    def _sizes(self, pairs: list[tuple[Tensor, tuple[int, ...]]]) -> dict[E.Var, int]:
        out: dict[E.Var, int] = {}
        for t, shape in pairs:
            for e, n in zip(t.shape, shape):
                if isinstance(e, E.Var):
                    out.setdefault(e, int(n))
                elif free_vars(e):
                    raise ArgumentError(f"argument {t.name}: its shape {tuple(t.shape)} is not made of sizes alone")
        return out

    def program(self, sizes: dict[E.Var, int]) -> tuple[StepProgram, list[DistKernel]]:
        key = tuple(sorted((v.name, n) for v, n in sizes.items()))
        if key not in self._programs:
            sp = step_program(self.schedule, sizes)
            kernels = []
            for sch, prog in zip(sp.schedules, sp.programs):
                args = _class_args(sch, prog)
                place = _placement_of(sp, args, self.dims)
                kernels.append(DistKernel(sch, args, self.comm, self.target, self.multi_hop, False, False, None,
                                          place))
                kernels[-1].barriers = self.barriers  # the user's barriers, in every step
                _in_steps(sp, len(kernels) - 1, lambda k=kernels[-1]: k.plan({}))
            self._programs[key] = (sp, kernels)
        return self._programs[key]

    def plan(self, sizes: dict | None = None) -> StepPlan:  # type: ignore[override]
        sp, kernels = self.program(sizes or {})
        return StepPlan(sp, [k.plan({}) for k in kernels])

    def empty(self, name: str, shape: tuple[int, ...] | None = None, dtype: Any = None) -> Window | DistArray:
        """An input's zero-filled part, or the recurrence's :class:`Window` of live steps
        (``shape``: its global shape, steps first, where it has symbolic sizes)."""
        t = self._tensor(name)
        if all(t is not x for x in self.states):
            return super().empty(name, shape, dtype)
        if shape is None:
            if not all(isinstance(e, E.IntImm) for e in t.shape):
                raise ArgumentError(f"empty({name!r}): {name}'s shape {tuple(t.shape)} has symbolic sizes; give "
                                    f"its global shape, steps first: empty({name!r}, shape=(...))")
            shape = tuple(int(e.value) for e in t.shape)
        sp, _ = self.program(self._sizes([(t, tuple(shape))]))
        split = self._split(t, tuple(shape))
        planes = [DistArray(name, tuple(shape[1:]), dtype or t.dtype, split, self.comm.rank)
                  for _ in range(sp.window())]
        return Window(name, tuple(shape), planes)

    def gather(self, a: Any, root: int = 0, step: int | None = None) -> np.ndarray | None:
        """The global array on rank ``root`` (None elsewhere); of a :class:`Window`, its last
        step computed, or ``step`` while it is live."""
        if not isinstance(a, Window):
            return super().gather(a, root)
        step = a.last if step is None else step
        if a.last < 0 or not a.last - len(a.planes) < step <= a.last:
            raise ArgumentError(f"gather of {a.name} at step {step}: the live steps are "
                                f"{max(0, a.last - len(a.planes) + 1)}..{a.last} (each rank keeps "
                                f"{len(a.planes)}); gather a live one")
        return super().gather(a.plane(step), root)

    def __call__(self, *arrays: Any) -> None:
        if len(arrays) != len(self.args):
            raise ArgumentError(f"distributed kernel takes {len(self.args)} arrays "
                                f"({', '.join(t.name for t in self.args)}), got {len(arrays)}")
        by_name: dict[str, Any] = {}
        pairs = []
        for t, a in zip(self.args, arrays):
            want = Window if any(t is x for x in self.states) else DistArray
            if not isinstance(a, want):
                raise ArgumentError(f"argument {t.name}: expected a {want.__name__} (kernel.scatter / kernel.empty), "
                                    f"got {type(a).__name__}")
            by_name[t.name] = a
            pairs.append((t, a.shape))
        sp, kernels = self.program(self._sizes(pairs))
        windows = [by_name.get(x.name) for x in self.states]
        for x, w in zip(self.states, windows):
            if w is None or len(w.planes) != sp.window() or w.shape[1:] != sp.shape:
                raise ArgumentError(f"argument {x.name}: pass its window, made by kernel.empty({x.name!r}) for these "
                                    "sizes")
        before = {key: sum(k.stats[key] for k in kernels) for key in self.stats}
        # per class, each argument's role: (state, steps back) for a plane, or the input's array
        planes = {id(p): kd for kd, p in sp.prev.items()}
        roles = [[planes.get(id(t), by_name.get(t.name)) for t in k.args[:-len(sp.states)]]
                 + [(j, 0) for j in range(len(sp.states))] for k in kernels]
        names = [[t.name for t in k.args] for k in kernels]
        plans: list = [None] * len(kernels)
        for step, c in enumerate(sp.of_step):
            got = [windows[x[0]].plane(step - x[1]) if isinstance(x, tuple) else x for x in roles[c]]
            if plans[c] is None:  # a class's first step checks the arrays against its plan, once a call
                plans[c], _ = kernels[c]._checked(tuple(got))
            kernels[c].run(plans[c], dict(zip(names[c], got)))
        for w in windows:
            w.last = sp.steps - 1
        for key in self.stats:  # what this call's steps spent, added to the kernel's totals
            self.stats[key] += sum(k.stats[key] for k in kernels) - before[key]

