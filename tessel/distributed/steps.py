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

A ``te.scan`` is cut the same way: its steps before the init's length copy the inits' rows
(each its own class), every later step runs all the updates, which read the states' earlier
steps and may read each other's value of this same step (one step program of several stages,
the existing plan refusing such a read where another rank computes it).

Each rank keeps the live steps only: ``depth + 1`` planes of its block (``depth``: the farthest
step read back), reused in turn.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ..arith.analyzer import Analyzer
from ..errors import DistributionError
from ..ir import expr as E
from ..ir.functor import Mutator, free_vars, post_order_visit, substitute
from ..schedule.history import AxisRef, StageRef, Step, apply_steps
from ..schedule.schedule import Schedule, create_schedule
from ..te.recurrence import DefinitionOp
from ..te.scan import ScanOp
from ..te.tensor import ComputeOp, PlaceholderOp, Tensor
from ..te.tensor import placeholder as make_placeholder

#: the instances looked at for a refusal's witness
_WITNESS_POINTS = 20000
_BOOL = (E.CmpOp, E.And, E.Or, E.Not)
#: the primitives of the recurrence's own stage that schedule a step's program too (on its data axes)
_REPLAYED = {"split", "fuse", "reorder", "tile", "vectorize", "parallel", "unroll"}


@dataclass
class StepProgram:
    """The recurrence or scan ``name`` cut into ``steps`` steps over ``shape`` (its data axes)."""

    name: str
    #: the tensors the steps make, one per state (a recurrence: itself; a scan: its outputs)
    states: list[Tensor]
    steps: int
    shape: tuple[int, ...]
    #: the data axis (index into ``shape``) distributed over the ranks, and its block size
    axis: int
    block: int | None
    #: the farthest step read back: step t reads states of steps t - 1 .. t - depth
    depth: int
    inputs: list[Tensor]
    #: ``prev[(k, d)]``: the placeholder standing for state k at step ``t - d`` in the step programs
    prev: dict[tuple[int, int], Tensor]
    #: per class: its step program's outputs (one per state); ``of_step[t]``: the class of step t
    programs: list[list[Tensor]] = field(default_factory=list)
    schedules: list[Schedule] = field(default_factory=list)
    of_step: list[int] = field(default_factory=list)
    #: the user's steps that could not be carried to the step programs (said in the plan's text)
    not_replayed: list[str] = field(default_factory=list)

    def steps_of(self, c: int) -> list[int]:
        return [t for t, k in enumerate(self.of_step) if k == c]

    def window(self) -> int:
        """The planes of its block each rank keeps per state: the live steps."""
        return self.depth + 1


@dataclass
class _Source:
    """What a recurrence or a scan says a step computes, over the step's own variables: ``t``
    and the data axes ``data``; per state, ``exprs`` for the steps from ``first`` on (their
    conditions on ``t`` still to decide) and ``init[t]`` for each step before it."""

    name: str
    states: list[Tensor]
    shape: tuple[int, ...]
    axis: int
    t: E.Var
    data: list[E.IterVar]
    rw: _Rewriter
    exprs: list[E.PrimExpr]
    first: int = 0
    init: list[list[E.PrimExpr]] = field(default_factory=list)
    #: the step ops' names, one per state
    names: list[str] = field(default_factory=list)


def distributed_recurrence(s: Schedule):
    """The distributed stage of ``s`` if it is a definition of a recurrence or a scan (else None)."""
    for st in s.stages:
        if getattr(st, "distributed_axis", None) is not None and isinstance(st.op, DefinitionOp | ScanOp):
            return st
    return None


def step_program(s: Schedule, sizes: dict[E.Var, int]) -> StepProgram:
    """The recurrence or scan of ``s`` as step programs for ``sizes`` (see the module's docstring)."""
    st = distributed_recurrence(s)
    if len(st.distributed_axes) > 1:
        raise DistributionError(f"distribute on stage {st.op.name}: a time loop over a 2-D grid of ranks is not "
                                "built; distribute one data axis of a recurrence or scan")
    consts = {v: E.IntImm(n, v.dtype) for v, n in sizes.items()}
    src = (_scan if isinstance(st.op, ScanOp) else _recurrence)(st, consts)
    t, rw = src.t, src.rw
    conds = [c for e in src.exprs for c in _conditions(e, t, src.name)]
    out = StepProgram(src.name, src.states, src.shape[0], src.shape[1:], src.axis, st.distributed_block,
                      max((d for _, d in rw.prev), default=1), rw.inputs, {})
    out.prev = {(k, d): rw.plane(k, d) for k in range(len(src.states)) for d in range(1, out.depth + 1)}
    keys: dict[tuple, int] = {}
    for step in range(out.steps):
        key = ("init", step) if step < src.first else tuple(_value(c, t, step) for c in conds)
        out.of_step.append(keys.setdefault(key, len(keys)))
    for key in keys:
        if key[:1] == ("init",):
            exprs = src.init[key[1]]
        else:
            fold = _Fold(dict(zip(map(id, conds), key)))
            exprs = [fold.visit(e) for e in src.exprs]
        for e in exprs:
            if t in free_vars(e):
                raise DistributionError(
                    f"distributed {src.name}: a step uses the step {t.name} as a value ({e}); the steps are run as "
                    f"one program per class of steps, in which only conditions on {t.name} alone (t == 0, t >= 1) "
                    "are decided: compute such a value as an input indexed by the step instead")
        progs = _ops(src, exprs)
        out.programs.append(progs)
        out.schedules.append(_schedule(s, st, progs, out))
    return out


def _sizes_of(what: str, shape, consts: dict) -> tuple[int, ...]:
    ext = [Analyzer().simplify(substitute(e, consts)) for e in shape]
    if not all(isinstance(e, E.IntImm) for e in ext):
        raise DistributionError(f"distributed {what}: its shape {tuple(shape)} needs every size; pass the arrays' "
                                "global shapes (kernel.empty(name, shape=...))")
    return tuple(int(e.value) for e in ext)


def _data_axes(axes, shape) -> list[E.IterVar]:
    return [E.IterVar(E.Range(0, n), E.Var(iv.var.name, iv.var.dtype), E.IterVar.DATA_PAR)
            for iv, n in zip(axes, shape)]


def _recurrence(st, consts: dict) -> _Source:
    op = st.op
    defs = [d.op for d in op.definitions]
    h = defs[-1].output(0)
    shape = _sizes_of(f"recurrence {h.name}", [iv.dom.extent for iv in op.axis], consts)
    k = next(n for n, iv in enumerate(op.axis) if iv is st.distributed_axis)
    if k == 0:
        raise DistributionError(
            f"distribute on stage {h.name}: axis {op.axis[0].var.name} is the recurrence's time (its first axis: the "
            "steps run one after the other); distribute a data axis, e.g. s[h].distribute(h.op.axis[1])")
    if defs[0].base is not None and defs[0].base.op.is_placeholder and defs[0].base is not h:
        raise DistributionError(f"distributed recurrence {h.name} is written in place (inplace=...): build it as "
                                "a recurrence of its own storage")
    t = E.Var(op.axis[0].var.name, op.axis[0].var.dtype)
    data = _data_axes(op.axis[1:], shape[1:])
    rw = _Rewriter(f"recurrence {h.name}", {d.output(0): 0 for d in defs} | {h: 0}, {}, [h], t, shape, consts)
    expr: E.PrimExpr | None = None
    for n, d in enumerate(defs):
        vmap = {d.axis[0].var: t, **{iv.var: x.var for iv, x in zip(d.axis[1:], data)}}
        rw.vmap, rw.op, rw.reads_self = vmap, d, False
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
    return _Source(f"recurrence {h.name}", [h], shape, k - 1, t, data, rw, [expr], names=[h.name])


def _scan(st, consts: dict) -> _Source:
    """A ``te.scan``: step t < init_len is the inits' row t, each later step the updates, which
    read the states' earlier steps and (the same step) each other."""
    op: ScanOp = st.op
    states = list(op.outputs)
    shapes = {_sizes_of(f"scan {op.name}", s.shape, consts) for s in states}
    if len(shapes) != 1:
        raise DistributionError(f"distributed scan {op.name}: its states have shapes {sorted(shapes)}; the ranks "
                                "split states of one shape alike")
    (shape,) = shapes
    spatial = op.spatial_of(0)
    if st.distributed_axis not in spatial:
        names = ", ".join(iv.var.name for iv in spatial)
        raise DistributionError(f"distribute on scan {op.name}: give a spatial axis of its first state ({names}: "
                                f"s[{op.name}].op.spatial_axis_[k]), whose dimension the ranks split in every state")
    k = list(spatial).index(st.distributed_axis)
    upd = [u.op for u in op.update]
    if any(not isinstance(u, ComputeOp) or type(u) is not ComputeOp for u in upd):
        raise DistributionError(f"distributed scan {op.name}: its updates must be te.compute stages")
    t = E.Var("t", op.scan_axis.var.dtype)
    data = _data_axes(upd[0].axis[1:], shape[1:])
    rw = _Rewriter(f"scan {op.name}", {p: j for j, p in enumerate(op.state_placeholder)},
                   {u: j for j, u in enumerate(op.update)}, list(op.state_placeholder), t, shape, consts)
    exprs = []
    for u in upd:
        rw.vmap, rw.op = {u.axis[0].var: t, **{iv.var: x.var for iv, x in zip(u.axis[1:], data)}}, u
        exprs.append(rw.visit(u.body[0]))
    first = _sizes_of(f"scan {op.name}", [op.init[0].shape[0]], consts)[0]
    init = []
    for step in range(first):
        row = []
        for i in op.init:
            iop = i.op
            if type(iop) is not ComputeOp:
                raise DistributionError(f"distributed scan {op.name}: its init {i.name} must be a te.compute stage")
            rw.vmap, rw.op = {iop.axis[0].var: E.IntImm(step, iop.axis[0].var.dtype),
                              **{iv.var: x.var for iv, x in zip(iop.axis[1:], data)}}, iop
            row.append(rw.visit(iop.body[0]))
        init.append(row)
    return _Source(f"scan {op.name}", states, shape, k, t, data, rw, exprs, first, init, [u.name for u in op.update])


def _ops(src: _Source, exprs: list[E.PrimExpr]) -> list[Tensor]:
    """The step's operations, one per state, each made after the states of this step it reads."""
    made: dict[int, Tensor] = {}
    while len(made) < len(exprs):
        ready = [j for j in range(len(exprs)) if j not in made and src.rw.reads_now(exprs[j]) <= set(made)]
        if not ready:
            raise DistributionError(f"distributed {src.name}: its updates read each other's values of the same "
                                    "step in a cycle")
        for j in ready:
            body = _Now(src.rw.current, made).visit(exprs[j])
            made[j] = ComputeOp(src.names[j], "", None, src.data, [body], None).output(0)
    return [made[j] for j in range(len(exprs))]


class _Now(Mutator):
    """Reads of another state's value at this step pointed at the step op computing it."""

    def __init__(self, current: dict[int, Tensor], made: dict[int, Tensor]):
        self.by = {id(t): made[j] for j, t in current.items() if j in made}

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        idx = [self.visit(i) for i in e.indices]
        return E.ProducerLoad(self.by.get(id(e.producer), e.producer), idx)


def _true(x: E.PrimExpr) -> bool:
    return isinstance(x, E.IntImm) and bool(x.value)


def _zero(dtype) -> E.PrimExpr:
    return E.FloatImm(0.0, dtype) if dtype.is_float else E.IntImm(0, dtype)


class _Rewriter(Mutator):
    """A step's body over the step's data axes: a state's earlier step ``S[t - d, y]`` becomes
    ``prev[(k, d)][y]``, a scan's update of this very step ``U[t, y]`` a marker ``current[k]``
    (pointed at the step's op of that state once it is made)."""

    def __init__(self, what: str, mine: dict, now: dict, states: list[Tensor], t: E.Var,
                 shape: tuple[int, ...], consts: dict):
        self.what, self.mine, self.now, self.t, self.consts = what, mine, now, t, consts
        self.names = [x.name for x in states]
        self.dtypes = [x.dtype for x in states]
        self.steps, self.shape = shape[0], shape[1:]
        self.vmap: dict = {}
        self.op = None
        self.reads_self = False
        self.prev: dict[tuple[int, int], Tensor] = {}
        self.current: dict[int, Tensor] = {}
        self.inputs: list[Tensor] = []

    def plane(self, k: int, d: int) -> Tensor:
        if (k, d) not in self.prev:
            self.prev[(k, d)] = make_placeholder(self.shape, self.dtypes[k], f"{self.names[k]}[t-{d}]")
        return self.prev[(k, d)]

    def reads_now(self, e: E.PrimExpr) -> set[int]:
        marks = {id(m): k for k, m in self.current.items()}
        found: set[int] = set()
        post_order_visit(e, lambda x: found.add(marks[id(x.producer)])
                         if isinstance(x, E.ProducerLoad) and id(x.producer) in marks else None)
        return found

    def visit_Var(self, v: E.Var):
        return self.vmap.get(v, self.consts.get(v, v))

    def _step_read(self, e: E.ProducerLoad, idx: list, now: bool) -> int:
        """How far back the read of a state goes (0 for a scan's update of this step), checked."""
        back = Analyzer().simplify(self.t - idx[0])
        text = f"{e.producer.name}[{', '.join(map(str, idx))}]"
        if not isinstance(back, E.IntImm) or back.value < (0 if now else 1) or (now and back.value != 0):
            same = isinstance(back, E.IntImm) and back.value == 0
            why = ("a value of the same step: the rows a neighbour computes in that step would be needed "
                   "while it computes them (a Gauss-Seidel sweep, as seidel-2d), so the ranks cannot "
                   "compute a step at once; use a Jacobi form (read only step t - 1), or run it on one process"
                   if same else "not a constant earlier step")
            raise DistributionError(f"distributed {self.what}: {self.op.name} reads {text}{self._witness(e)}, {why}")
        if any(self.t in free_vars(i) for i in idx[1:]):
            raise DistributionError(f"distributed {self.what}: the read {text} indexes the data axes with the step "
                                    f"{self.t.name}; the step programs need the same accesses at every step of a class")
        return int(back.value)

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        idx = [self.visit(i) for i in e.indices]
        if e.producer in self.now:
            k = self.now[e.producer]
            self._step_read(e, idx, True)
            if k not in self.current:
                self.current[k] = make_placeholder(self.shape, self.dtypes[k], f"{self.names[k]}@now")
            return E.ProducerLoad(self.current[k], idx[1:])
        if e.producer in self.mine:
            self.reads_self = True
            d = self._step_read(e, idx, False)
            return E.ProducerLoad(self.plane(self.mine[e.producer], d), idx[1:])
        if not isinstance(e.producer.op, PlaceholderOp):
            raise DistributionError(f"distributed {self.what} reads {e.producer.name}, computed by another "
                                    f"stage; compute {e.producer.name} before and pass it as an input")
        if any(self.t in free_vars(i) for i in idx):
            raise DistributionError(f"distributed {self.what}: the read {e.producer.name}"
                                    f"[{', '.join(map(str, idx))}] depends on the step {self.t.name}; the inputs are "
                                    "read alike at every step")
        if all(x is not e.producer for x in self.inputs):
            self.inputs.append(e.producer)
        return E.ProducerLoad(e.producer, idx)

    def _witness(self, e: E.ProducerLoad) -> str:
        """`` (e.g. h at t=1, i=1, j=1 reads h[1, 0, 0])``: the first instance of the op
        (row-major, at most ``_WITNESS_POINTS`` looked at) whose read is inside the shape."""
        op = self.op
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
                name = e.producer.name
                return f" (e.g. {op.name} at {at} reads {name}[{', '.join(str(i.value) for i in idx)}])"
        return ""


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
    """The condition on ``t`` alone at ``step``: evaluated on Python integers (every step of a
    long loop is asked), else by the simplifier."""
    try:
        return bool(_eval(cond, t, step))
    except (_Unknown, ZeroDivisionError):
        pass
    got = Analyzer().simplify(substitute(cond, {t: E.IntImm(step, t.dtype)}))
    if not isinstance(got, E.IntImm):
        raise DistributionError(f"the condition `{cond}` on the step did not reduce to a constant at step {step}")
    return bool(got.value)


class _Unknown(Exception):
    """An expression ``_eval`` does not evaluate (left to the simplifier)."""


def _eval(e: E.PrimExpr, t: E.Var, step: int):
    if isinstance(e, E.IntImm):
        return e.value
    if e is t:
        return step
    if isinstance(e, E.Not):
        return not _eval(e.a, t, step)
    if isinstance(e, E.And | E.Or):
        a = bool(_eval(e.a, t, step))
        return (a and bool(_eval(e.b, t, step))) if isinstance(e, E.And) else (a or bool(_eval(e.b, t, step)))
    exact = getattr(type(e), "exact", None)
    if isinstance(e, E.BinaryOp) and exact is not None and e.a.dtype.is_integer:
        return exact(_eval(e.a, t, step), _eval(e.b, t, step))
    raise _Unknown


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
        return self._logic(e, False)

    def visit_Or(self, e: E.Or):
        return self._logic(e, True)

    def _logic(self, e: E.And | E.Or, absorbing: bool):
        """``x && y`` / ``x || y`` with a constant side folded (``absorbing``: the value that
        decides alone, True for ``||``)."""
        a, b = self.visit(e.a), self.visit(e.b)
        for x, y in ((a, b), (b, a)):
            if isinstance(x, E.IntImm):
                return x if bool(x.value) == absorbing else y
        return e if a is e.a and b is e.b else type(e)(a, b)

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


def _schedule(s: Schedule, st, progs: list[Tensor], sp: StepProgram) -> Schedule:
    """The step program's schedule: each state's op distributed as the recurrence or scan, with
    the user's steps on the stage computing that state (a recurrence's own, a scan's update)
    that name its data axes (a split, vectorize, parallel ...) carried over."""
    out = create_schedule([p.op for p in progs])
    users = [st] if isinstance(st.op, DefinitionOp) else [s[u] for u in st.op.update]
    for user, prog in zip(users, progs):
        _carry(s, user, out, prog, sp)
        out[prog].distribute(prog.op.axis[sp.axis], **({"block": sp.block} if sp.block else {}))
    return out


def _carry(s: Schedule, user, out: Schedule, prog: Tensor, sp: StepProgram) -> None:
    me = out.stages.index(out[prog])
    pos = s.stages.index(user)
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

