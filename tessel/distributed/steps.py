"""A time loop inside one program: a ``te.recurrence`` over ``(t, i, ...)`` cut into steps.

The user writes the whole time-iterated stencil as one recurrence whose first axis is time
(PolyBench's jacobi and heat, ``examples/polybench/stencils.py``) and distributes a data
axis: ``s[h].distribute(h.op.axis[1])``. The distributed runtime drives the step loop: step
``t`` is an ordinary program over the data axes (one ``te.compute``) that reads the earlier
steps it needs as inputs ``h[t-1]``, ``h[t-2]``, ... ; the existing plan
(``tessel.poly.distribute``) derives, for that step program, exactly which rows of those
earlier steps each rank receives, so the halo is exchanged every step and nothing else.

Why it is the same computation. A recurrence's definitions run one after the other, each over
all its points; the runtime runs, step after step, the points of every definition with that
``t``. Both orders give every point the value of the last definition covering it, provided
(checked here, else refused with the read at fault):

* every read of ``h`` is of an earlier step, at a constant distance (``h[t - d, ...]``,
  ``d >= 1``): a read of the same step (a Gauss-Seidel sweep, seidel-2d) would need the rows a
  neighbour computes in the same step, so the ranks could not compute a step at once;
* only the last definition reads ``h`` (an earlier one would read, in the recurrence, values
  of its own that a later definition then replaces);
* the step enters the program only through conditions on ``t`` alone (``t == 0``, ``t >= 1``)
  and the indices of reads of ``h``: each distinct set of truth values of those conditions is
  a *class* of steps with its own program, in which the conditions are constants, so the
  class's accesses are those of every step in it, and its plan is exact for each of them.

Each rank keeps the live steps only: ``depth + 1`` planes of its block (``depth``: the farthest
step read back), reused in turn.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ..arith.analyzer import Analyzer
from ..errors import DistributionError
from ..ir import expr as E
from ..ir.functor import Mutator, free_vars, substitute
from ..schedule.history import AxisRef, StageRef, Step, apply_steps
from ..schedule.schedule import Schedule, create_schedule
from ..te.recurrence import DefinitionOp
from ..te.tensor import ComputeOp, PlaceholderOp, Tensor
from ..te.tensor import placeholder as make_placeholder

#: the instances looked at for a refusal's witness
_WITNESS_POINTS = 20000
_BOOL = (E.CmpOp, E.And, E.Or, E.Not)
#: the primitives of the recurrence's own stage that schedule a step's program too (on its data axes)
_REPLAYED = {"split", "fuse", "reorder", "tile", "vectorize", "parallel", "unroll"}


@dataclass
class StepProgram:
    """The recurrence ``name`` cut into ``steps`` steps over ``shape`` (its data axes)."""

    name: str
    recurrence: Tensor
    steps: int
    shape: tuple[int, ...]
    dtype: str
    #: the data axis (index into ``shape``) distributed over the ranks, and its block size
    axis: int
    block: int | None
    #: the farthest step read back: step t reads h[t - 1] .. h[t - depth]
    depth: int
    inputs: list[Tensor]
    #: ``prev[d]``: the placeholder standing for ``h[t - d]`` in the step programs
    prev: dict[int, Tensor]
    #: per class: its step program's output; ``of_step[t]``: the class of step t
    programs: list[Tensor] = field(default_factory=list)
    schedules: list[Schedule] = field(default_factory=list)
    of_step: list[int] = field(default_factory=list)
    #: the user's steps that could not be carried to the step programs (said in the plan's text)
    not_replayed: list[str] = field(default_factory=list)

    def steps_of(self, c: int) -> list[int]:
        return [t for t, k in enumerate(self.of_step) if k == c]

    def window(self) -> int:
        """The planes of its block each rank keeps: the live steps."""
        return self.depth + 1


def distributed_recurrence(s: Schedule):
    """The distributed stage of ``s`` if it is a definition of a recurrence (else None)."""
    for st in s.stages:
        if getattr(st, "distributed_axis", None) is not None and isinstance(st.op, DefinitionOp):
            return st
    return None


def step_program(s: Schedule, sizes: dict[E.Var, int]) -> StepProgram:
    """The recurrence of ``s`` as step programs for ``sizes`` (see the module's docstring)."""
    st = distributed_recurrence(s)
    op = st.op
    defs = [d.op for d in op.definitions]
    h = defs[-1].output(0)
    consts = {v: E.IntImm(n, v.dtype) for v, n in sizes.items()}
    ana = Analyzer()
    ext = [ana.simplify(substitute(iv.dom.extent, consts)) for iv in op.axis]
    if not all(isinstance(e, E.IntImm) for e in ext):
        raise DistributionError(f"distributed recurrence {h.name}: its shape {tuple(h.shape)} needs every size; "
                                "pass the arrays' global shapes (kernel.empty(name, shape=...))")
    k = next(n for n, iv in enumerate(op.axis) if iv is st.distributed_axis)
    if k == 0:
        raise DistributionError(
            f"distribute on stage {h.name}: axis {op.axis[0].var.name} is the recurrence's time (its first axis: the "
            "steps run one after the other); distribute a data axis, e.g. s[h].distribute(h.op.axis[1])")
    if defs[0].base is not None and defs[0].base.op.is_placeholder and defs[0].base is not h:
        raise DistributionError(f"distributed recurrence {h.name} is written in place (inplace=...): build it as "
                                "a recurrence of its own storage")
    shape = tuple(int(e.value) for e in ext)
    t = E.Var(op.axis[0].var.name, op.axis[0].var.dtype)
    data = [E.IterVar(E.Range(0, n), E.Var(iv.var.name, iv.var.dtype), E.IterVar.DATA_PAR)
            for iv, n in zip(op.axis[1:], shape[1:])]
    rw = _Rewriter(h, defs, t, shape, consts)
    expr: E.PrimExpr | None = None
    for n, d in enumerate(defs):
        vmap = {d.axis[0].var: t, **{iv.var: x.var for iv, x in zip(d.axis[1:], data)}}
        rw.vmap, rw.definition = vmap, n
        body = rw.visit(d.body[0])
        if rw.reads_self and n < len(defs) - 1:
            raise DistributionError(
                f"distributed recurrence {h.name}: definition {n} ({d.name}) reads {h.name} and another definition "
                f"follows it; the steps run every definition of a step together, so definition {n} would read the "
                f"later definitions' values where the recurrence reads its own: read earlier steps in the last "
                "definition only")
        where = None if d.where is None else substitute(substitute(d.where, vmap), consts)
        if where is None:
            expr = body
        else:
            expr = E.Call(body.dtype, "if_then_else", (where, body, expr if expr is not None else _zero(body.dtype)))
    assert expr is not None
    conds = _conditions(expr, t, h.name)
    out = StepProgram(h.name, h, shape[0], shape[1:], str(h.dtype), k - 1, st.distributed_block,
                      max(rw.prev, default=1), rw.inputs, {})
    out.prev = {d: rw.plane(d) for d in range(1, out.depth + 1)}
    keys: dict[tuple, int] = {}
    for step in range(out.steps):
        key = tuple(_value(c, t, step) for c in conds)
        out.of_step.append(keys.setdefault(key, len(keys)))
    for key in keys:
        resolved = _Fold(dict(zip(map(id, conds), key))).visit(expr)
        if t in free_vars(resolved):
            raise DistributionError(
                f"distributed recurrence {h.name}: its definitions use the step {t.name} as a value ({resolved}); "
                f"the steps are run as one program per class of steps, in which only conditions on {t.name} alone "
                "(t == 0, t >= 1) are decided: compute such a value as an input indexed by the step instead")
        prog = ComputeOp(h.name, "", None, data, [resolved], None).output(0)
        out.programs.append(prog)
        out.schedules.append(_schedule(s, st, prog, out))
    return out


def _true(x: E.PrimExpr) -> bool:
    return isinstance(x, E.IntImm) and bool(x.value)


def _zero(dtype) -> E.PrimExpr:
    return E.FloatImm(0.0, dtype) if dtype.is_float else E.IntImm(0, dtype)


class _Rewriter(Mutator):
    """A definition's body over the step's data axes: ``h[t - d, y]`` -> ``prev[d][y]``."""

    def __init__(self, h: Tensor, ops: list, t: E.Var, shape: tuple[int, ...], consts: dict):
        self.h, self.ops, self.t, self.steps, self.shape, self.consts = h, ops, t, shape[0], shape[1:], consts
        self.mine = {d.output(0) for d in ops}
        self.vmap: dict = {}
        self.definition = 0
        self.reads_self = False
        self.prev: dict[int, Tensor] = {}
        self.inputs: list[Tensor] = []

    def _witness(self, e: E.ProducerLoad) -> str:
        """`` (e.g. h at t=1, i=1, j=1 reads h[1, 0, 0])``: the first instance of the definition
        (row-major, at most ``_WITNESS_POINTS`` looked at) whose read is inside the shape."""
        op = self.ops[self.definition]
        ana, names = Analyzer(), [iv.var for iv in op.axis]
        shape = (self.steps, *self.shape)
        for n, point in enumerate(itertools.product(*(range(x) for x in shape))):
            if n >= _WITNESS_POINTS:
                break
            vmap = {v: E.IntImm(x, v.dtype) for v, x in zip(names, point)} | self.consts
            if op.where is not None and not _true(ana.simplify(substitute(op.where, vmap))):
                continue
            idx = [ana.simplify(substitute(i, vmap)) for i in e.indices]
            if all(isinstance(i, E.IntImm) and 0 <= i.value < x for i, x in zip(idx, shape)):
                at = ", ".join(f"{v.name}={x}" for v, x in zip(names, point))
                return f" (e.g. {self.h.name} at {at} reads {self.h.name}[{', '.join(str(i.value) for i in idx)}])"
        return ""

    def plane(self, d: int) -> Tensor:
        if d not in self.prev:
            self.prev[d] = make_placeholder(self.shape, self.h.dtype, f"{self.h.name}[t-{d}]")
        return self.prev[d]

    def visit_Var(self, v: E.Var):
        return self.vmap.get(v, self.consts.get(v, v))

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        idx = [self.visit(i) for i in e.indices]
        name, t = self.h.name, self.t
        if e.producer in self.mine or e.producer is self.h:
            self.reads_self = True
            back = Analyzer().simplify(t - idx[0])
            if not isinstance(back, E.IntImm) or back.value < 1:
                same = isinstance(back, E.IntImm) and back.value == 0
                why = ("a value of the same step: the rows a neighbour computes in that step would be needed "
                       "while it computes them (a Gauss-Seidel sweep, as seidel-2d), so the ranks cannot "
                       "compute a step at once; use a Jacobi form (read only step t - 1), or run it on one process"
                       if same else "not a constant earlier step")
                raise DistributionError(f"distributed recurrence {name}: definition {self.definition} reads "
                                        f"{name}[{', '.join(map(str, idx))}]{self._witness(e)}, {why}")
            if any(t in free_vars(i) for i in idx[1:]):
                raise DistributionError(f"distributed recurrence {name}: the read {name}[{', '.join(map(str, idx))}]"
                                        f" indexes the data axes with the step {t.name}; the step programs need "
                                        "the same accesses at every step of a class")
            return E.ProducerLoad(self.plane(int(back.value)), idx[1:])
        if not isinstance(e.producer.op, PlaceholderOp):
            raise DistributionError(f"distributed recurrence {name} reads {e.producer.name}, computed by another "
                                    f"stage; compute {e.producer.name} before and pass it as an input")
        if any(t in free_vars(i) for i in idx):
            raise DistributionError(f"distributed recurrence {name}: the read {e.producer.name}"
                                    f"[{', '.join(map(str, idx))}] depends on the step {t.name}; the inputs are read "
                                    "alike at every step")
        if all(x is not e.producer for x in self.inputs):
            self.inputs.append(e.producer)
        return E.ProducerLoad(e.producer, idx)


def _conditions(expr: E.PrimExpr, t: E.Var, name: str) -> list[E.PrimExpr]:
    """The largest boolean subexpressions over ``t`` alone (the step's conditions); a
    comparison mixing ``t`` with a data index is refused (its truth varies inside a step)."""
    found: list[E.PrimExpr] = []

    def walk(x) -> None:
        if isinstance(x, _BOOL) and t in free_vars(x):
            if free_vars(x) == {t}:
                found.append(x)
                return
            if isinstance(x, E.CmpOp):
                raise DistributionError(f"distributed recurrence {name}: the condition `{x}` mixes the step "
                                        f"{t.name} with other indices; a step's program is decided by conditions on "
                                        f"{t.name} alone (write `{t.name} >= 1` and the data condition apart, "
                                        "joined by te.all)")
        for c in _kids(x):
            walk(c)

    walk(expr)
    return found


def _kids(x) -> list:
    out: list = []
    for f in x.fields() if isinstance(x, E.Node) else ():
        if isinstance(f, E.PrimExpr):
            out.append(f)
        elif isinstance(f, tuple):
            out += [y for y in f if isinstance(y, E.PrimExpr)]
    return out


def _value(cond: E.PrimExpr, t: E.Var, step: int) -> bool:
    got = Analyzer().simplify(substitute(cond, {t: E.IntImm(step, t.dtype)}))
    if not isinstance(got, E.IntImm):
        raise DistributionError(f"the condition `{cond}` on the step did not reduce to a constant at step {step}")
    return bool(got.value)


class _Fold(Mutator):
    """The step's conditions (by identity) replaced by their values, and the choices they decide
    folded: boolean algebra and if_then_else/select only, so no arithmetic is rewritten (the
    values stay those of one process, bit for bit)."""

    def __init__(self, values: dict[int, bool]):
        self.values = values

    def visit(self, node):
        if id(node) in self.values:
            return E.const(self.values[id(node)])
        return super().visit(node)

    def visit_And(self, e: E.And):
        a, b = self.visit(e.a), self.visit(e.b)
        for x, y in ((a, b), (b, a)):
            if isinstance(x, E.IntImm):
                return y if x.value else x
        return e if a is e.a and b is e.b else E.And(a, b)

    def visit_Or(self, e: E.Or):
        a, b = self.visit(e.a), self.visit(e.b)
        for x, y in ((a, b), (b, a)):
            if isinstance(x, E.IntImm):
                return x if x.value else y
        return e if a is e.a and b is e.b else E.Or(a, b)

    def visit_Not(self, e: E.Not):
        a = self.visit(e.a)
        return E.const(not a.value) if isinstance(a, E.IntImm) else (e if a is e.a else E.Not(a))

    def visit_Call(self, e: E.Call):
        if e.op == "if_then_else":
            c = self.visit(e.args[0])
            if isinstance(c, E.IntImm):
                return self.visit(e.args[1] if c.value else e.args[2])
        return self.generic_visit(e)

    def visit_Select(self, e: E.Select):
        c = self.visit(e.condition)
        if isinstance(c, E.IntImm):
            return self.visit(e.true_value if c.value else e.false_value)
        return self.generic_visit(e)


def _schedule(s: Schedule, st, prog: Tensor, sp: StepProgram) -> Schedule:
    """The step program's schedule: distributed as the recurrence, with the user's steps on the
    recurrence's stage that name its data axes (a split, vectorize, parallel ...) carried over."""
    out = create_schedule(prog.op)
    me = out.stages.index(out[prog])
    pos = s.stages.index(st)
    for step in list(s.history)[1:]:
        if step.error is not None or step.target != StageRef(pos) or step.primitive == "distribute":
            continue
        refs = _axis_refs((step.args, tuple(step.kwargs.values())))
        if step.primitive not in _REPLAYED or any(r.stage != pos or r.index == 0 for r in refs):
            if step.primitive in ("split", "fuse", "tile"):  # it made axes: later positions no longer match
                sp.not_replayed.append(f"{step.call} and the steps after it")
                break
            if step.primitive not in ("store_in", "storage_fold"):
                sp.not_replayed.append(step.call)
            continue
        moved = Step(step.primitive, StageRef(me), _shift(step.args, pos, me), {
            k: _shift(v, pos, me) for k, v in step.kwargs.items()})
        apply_steps(out, [moved])
    out[prog].distribute(prog.op.axis[sp.axis], **({"block": sp.block} if sp.block else {}))
    return out


def _axis_refs(x) -> list[AxisRef]:
    if isinstance(x, AxisRef):
        return [x]
    if isinstance(x, list | tuple):
        return [r for y in x for r in _axis_refs(y)]
    return []


def _shift(x, pos: int, me: int):
    """A handle of the recurrence's stage as one of the step program's (no time axis: one less)."""
    if isinstance(x, AxisRef):
        return AxisRef(me, x.index - 1)
    if isinstance(x, StageRef) and x.stage == pos:
        return StageRef(me)
    if isinstance(x, list | tuple):
        return type(x)(_shift(y, pos, me) for y in x)
    return x

