"""``te.scan``: a recurrence over the first dimension, with TVM v0.14's semantics.

``scan(init, update, state)`` defines ``out`` with ``out[:init_len] = init`` and, for each step
``t`` from ``init_len`` up, ``out[t] = update[t]`` where ``update`` reads earlier steps through
``state`` (a placeholder standing for ``out`` itself). Several states scan together (lists).

How it fits the pipeline, each part through the open Operation interface:

* the scan's stage has one loop, the scan axis; its spatial axes (one per dimension after the
  first of each output) are opaque roots that InferBound ranges but no loop iterates;
* the stages that compute from the states (the update and whatever lies between it and the
  states) are attached inside the scan axis when the schedule is created (``body_scope``), so
  one step's update runs per iteration; their other loops are scheduled freely;
* InferBound (as TVM's ``ScanOp``): the update is asked for one step and the spatial region
  the scan needs; the init for all of its steps; the scan's spatial region is what its
  readers ask when every read of a state keeps the spatial indices where they are (a fixed
  point: step ``t`` at ``i`` needs only step ``t-1`` at ``i``), else the whole extent;
* lowering: the init is copied into the output, the steps run in order, and (as TVM's
  post-processing of ScheduleOps) the update writes the output directly and every read of a
  state reads the output.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..arith import Analyzer, IntSet, union
from ..errors import DefinitionError, LowerError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, collect, structural_equal
from ..ir.serialize import register
from ..ir.stmt import LoopKind
from .operation import LoopNest, Operation, Request, post_dfs_order
from .tag import scoped_tag
from .tensor import Tensor


class ScanOp(Operation):
    """``out_i[:init_len] = init_i``; ``out_i[t] = update_i[t]`` for t in the scan axis, in order."""

    def __init__(self, name: str, tag: str, attrs: dict | None, scan_axis: E.IterVar, init: Sequence[Tensor],
                 update: Sequence[Tensor], state_placeholder: Sequence[Tensor], inputs: Sequence[Tensor],
                 spatial_axis: Sequence[E.IterVar] | None = None):
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})
        self.scan_axis = scan_axis
        self.init, self.update = tuple(init), tuple(update)
        self.state_placeholder, self.inputs = tuple(state_placeholder), tuple(inputs)
        if spatial_axis is None:
            spatial_axis = [E.IterVar(E.Range(0, n), E.Var(f"{name}.out{i}.i{k}", n.dtype), E.IterVar.OPAQUE)
                            for i, u in enumerate(self.update) for k, n in enumerate(u.shape) if k > 0]
        self.spatial_axis_ = tuple(spatial_axis)
        self.outputs = tuple(Tensor(self, i, s.shape, u.dtype)
                             for i, (s, u) in enumerate(zip(self.state_placeholder, self.update)))

    # ---- what it is ----------------------------------------------------------------------
    @property
    def root_iter_vars(self) -> tuple[E.IterVar, ...]:
        return (self.scan_axis, *self.spatial_axis_)

    def spatial_of(self, i: int) -> tuple[E.IterVar, ...]:
        """The spatial axes of output ``i`` (its dimensions 1 on)."""
        return self._spatial(i)

    def _spatial(self, i: int) -> tuple[E.IterVar, ...]:
        """The spatial axes of output ``i`` (its dimensions after the first)."""
        start = sum(u.ndim - 1 for u in self.update[:i])
        return self.spatial_axis_[start:start + self.update[i].ndim - 1]

    def input_tensors(self) -> list[Tensor]:
        return [*self.init, *self.update]

    def state_placeholders(self) -> tuple[Tensor, ...]:
        return self.state_placeholder

    def body_scope(self) -> E.IterVar:
        return self.scan_axis

    def replace_inputs(self, tmap: dict[Tensor, Tensor]) -> ScanOp:
        if not any(t in tmap for t in self.input_tensors()):
            return self
        return ScanOp(self.name, self.tag, self.attrs, self.scan_axis, [tmap.get(t, t) for t in self.init],
                      [tmap.get(t, t) for t in self.update], self.state_placeholder, self.inputs, self.spatial_axis_)

    def inline_refusal(self) -> str | None:
        return "a scan cannot be inlined (its steps run in order)"

    # ---- InferBound ----------------------------------------------------------------------
    def propagate_bounds(self, body: tuple, dom_map: dict, producer: Operation, analyzer: Analyzer) -> list[Request]:
        out: list[Request] = []
        for i, (init, upd) in enumerate(zip(self.init, self.update)):
            spatial = [dom_map[iv.var] for iv in self._spatial(i)]
            if init.op is producer:
                out.append((init, [IntSet.from_range(E.Range(0, init.shape[0])), *spatial]))
            if upd.op is producer:
                out.append((upd, [dom_map[self.scan_axis.var], *spatial]))
        return out

    def gather_bound(self, stage, requests: Sequence[Request], analyzer: Analyzer) -> list[tuple[E.IterVar, E.Range]]:
        """The steps from the first to the last one asked for; the spatial region asked for
        where the recurrence is a fixed point of it, else the whole extent."""
        mine = [(t, sets) for t, sets in requests if t.op is self]
        sdom = self.scan_axis.dom
        time = union([sets[0] for _, sets in mine]).cover_range(sdom)
        end = analyzer.simplify(E.add(time.min, time.extent))
        out = [(self.scan_axis, E.Range(sdom.min, analyzer.simplify(E.sub(end, sdom.min))))]
        fixed = self._fixed_point()
        for i in range(len(self.update)):
            asked = [s for t, s in mine if t.value_index == i]  # each state has its own rank
            for k, iv in enumerate(self._spatial(i), start=1):
                sets = [s[k] for s in asked]
                if not fixed or not sets:
                    out.append((iv, iv.dom))
                    continue
                r = union(sets).cover_range(iv.dom)
                out.append((iv, E.Range(analyzer.simplify(r.min), analyzer.simplify(r.extent))))
        return out

    def _fixed_point(self) -> bool:
        """Whether every step keeps each spatial index in place (so a region of the output needs
        only the same region of earlier steps; TVM's fixed-point analysis, conservatively): each
        stage of the body reads the states and the other stages of the body only as
        ``T[..., i1, i2, ...]`` with its own spatial axes, and all share one spatial shape."""
        shapes = [u.shape[1:] for u in self.update]
        if any(len(s) != len(shapes[0]) or not all(structural_equal(a, b) or _same_int(a, b)
                                                   for a, b in zip(s, shapes[0])) for s in shapes):
            return False
        body = self.body_ops()
        chain = {id(t) for t in self.state_placeholder} | {id(t) for op in body for t in op.outputs}
        for op in body:
            if len(op.axis) != len(shapes[0]) + 1:
                return False
            loads = [ld for b in op.effective_body(lambda x: x)
                     for ld in collect(b, lambda n: isinstance(n, E.ProducerLoad)) if id(ld.producer) in chain]
            if any(id(t) in chain for t in op.input_tensors()) and not loads:
                return False  # it reads the chain in a way its expressions do not show
            for ld in loads:
                if any(idx is not iv.var for idx, iv in zip(ld.indices[1:], op.axis[1:])):
                    return False
        return True

    def body_ops(self) -> list[Operation]:
        """The operations between the states and the updates (the updates included): what
        must run once per step, inside the scan axis."""
        states = {id(t) for t in self.state_placeholder}
        reads_state: set[int] = set()
        order = post_dfs_order([u.op for u in self.update])
        for op in order:
            if any(id(t) in states or id(t.op) in reads_state for t in op.input_tensors()):
                reads_state.add(id(op))
        return [op for op in order if id(op) in reads_state or any(op is u.op for u in self.update)]

    # ---- lowering ------------------------------------------------------------------------
    def build_provide(self, nest: LoopNest, stage, body: tuple) -> S.Stmt:
        """The init copied into the output, then the loop over the steps, in which the stages
        of the body are placed (they are attached at the scan axis)."""
        self._check_body_placement(stage)
        env = list(getattr(stage, "env_thread_axes", ()))
        if list(stage.leaf_iter_vars) != [*env, self.scan_axis]:
            raise LowerError(
                f"scan {self.name}: its loop {self.scan_axis.name} was split, fused or reordered, but a scan "
                "runs one step per iteration of that one loop; leave the scan's stage as it is and schedule "
                "the spatial axes of its update and init stages instead"
            )
        for iv in stage.leaf_iter_vars[len(env):]:
            if stage.leaf_kind(iv) not in (LoopKind.SERIAL, LoopKind.UNROLLED):
                raise LowerError(
                    f"scan {self.name}: its loop {iv.name} is {stage.leaf_kind(iv)}, but the steps of a scan "
                    "must run in order, each after the one it reads; parallelize or vectorize a spatial "
                    "axis of the update instead (s[update].parallel(update.op.axis[1]))"
                )
        copies = [self._copy_init(nest, i) for i in range(len(self.init))]
        steps = nest.nest(stage, len(env), len(stage.leaf_iter_vars), S.Evaluate(0))
        return nest.nest(stage, 0, len(env), S.seq(*copies, steps))  # env_threads: all of it in each thread

    def _copy_init(self, nest: LoopNest, i: int) -> S.Stmt:
        init, out = self.init[i], self.outputs[i]
        ranges = [E.Range(0, init.shape[0]), *[nest.range_of(iv) for iv in self._spatial(i)]]
        loop_vars = [E.Var(f"{out.name}.init{k}", r.extent.dtype) for k, r in enumerate(ranges)]
        idx = [E.add(r.min, v) for r, v in zip(ranges, loop_vars)]
        stmt: S.Stmt = S.ProducerStore(out, E.ProducerLoad(init, idx), idx)
        for v, r in reversed(list(zip(loop_vars, ranges))):
            stmt = S.For(v, E.const(0, r.extent.dtype), r.extent, LoopKind.SERIAL, stmt)
        return stmt

    def _check_body_placement(self, stage) -> None:
        """A stage of the body must run inside the scan axis: each step reads the previous one."""
        body = {id(op) for op in self.body_ops()}
        for st in stage.schedule.stages:
            if (id(st.op) not in body and id(st.origin_op) not in body) or st.attach_type == "inline":
                continue  # an inlined stage runs inside its readers, which are checked themselves
            s, inside = st, False
            while s is not None and s.attach_type == "scope":
                if s.attach_stage is stage:
                    inside = True
                    break
                s = s.attach_stage
            if not inside:
                raise LowerError(
                    f"stage {st.name} computes step t of scan {self.name} from its earlier steps, so it must "
                    f"run inside the scan's loop {self.scan_axis.name}, but it was moved out of it; put it "
                    f"back: s[{st.name}].compute_at(s[{self.name}], {self.name}.op.scan_axis)"
                )

    def least_fold(self, readers: Sequence[Operation]) -> tuple[int, str]:
        """The fewest steps the output may keep (``storage_fold`` of the scan axis), and why:
        every step the update reads back (a constant number of steps behind it), the init's
        steps, and the steps the ``readers`` after the scan read (counted back from the last);
        0 where a read's step is not a constant distance from where it is made."""
        states = {id(s) for s in self.state_placeholder} | {id(o) for o in self.outputs}
        if not all(isinstance(i.shape[0], E.IntImm) for i in self.init):
            return 0, "its init's number of steps is not a constant"
        need, why = max(i.shape[0].value for i in self.init), "the init's steps"
        ana = Analyzer()
        for op in self.body_ops():
            loads = [ld for b in getattr(op, "body", ()) for ld in collect(b, lambda n: isinstance(n, E.ProducerLoad))]
            for ld in loads:
                if id(ld.producer) not in states:
                    continue
                back = ana.simplify(E.sub(op.axis[0].var, ld.indices[0]))
                if not isinstance(back, E.IntImm):
                    return 0, f"{op.name} reads {ld.producer.name}[{ld.indices[0]}, ...], not a constant step back"
                if back.value + 1 > need:
                    need, why = back.value + 1, f"{op.name} reads {ld.producer.name} {back.value} step(s) back"
        dom = self.scan_axis.dom
        last = E.sub(E.add(dom.min, dom.extent), 1) if dom is not None else None
        for op in readers:
            loads = [ld for b in getattr(op, "body", ()) for ld in collect(b, lambda n: isinstance(n, E.ProducerLoad))]
            for ld in [ld for ld in loads if ld.producer.op is self]:
                back = ana.simplify(E.sub(last, ld.indices[0])) if last is not None else None
                if not isinstance(back, E.IntImm) or back.value < 0:
                    return 0, f"{op.name} reads {ld.producer.name}[{ld.indices[0]}, ...], not one of its last steps"
                if back.value + 1 > need:
                    need, why = back.value + 1, f"{op.name} reads the step {back.value} before the last"
        return need, why

    def build_realize(self, stage, rmap: dict[E.IterVar, E.Range], body: S.Stmt) -> S.Stmt:
        """Steps 0 to the last one computed (or the last ``stage.scan_fold``, step ``t`` kept at
        ``t % fold``), the spatial region InferBound found; inside, the update's storage is the
        output's and every read of a state reads the output."""
        tmap = {}
        for out, upd, st in zip(self.outputs, self.update, self.state_placeholder):
            tmap[upd] = tmap[st] = out
        body = Redirect(tmap).visit(body)
        sdom = rmap[self.scan_axis]
        steps = E.Range(0, Analyzer().simplify(E.add(sdom.min, sdom.extent)))
        fold = getattr(stage, "scan_fold", None)
        if fold is not None:
            body = _Folded({id(o) for o in self.outputs}, fold).visit(body)
            steps = E.Range(0, fold)
        for i, out in reversed(list(enumerate(self.outputs))):
            bounds = (steps, *[rmap[iv] for iv in self._spatial(i)])
            body = S.ProducerRealize(out, bounds, body, stage.scope)
        return body


class _Folded(Mutator):
    """Step ``t`` of the scan's outputs kept at ``t % fold`` (a storage fold of the scan axis)."""

    def __init__(self, outs: set[int], fold: int):
        self.outs, self.fold = outs, fold

    def _at(self, idx) -> list:
        return [E.floormod(idx[0], E.const(self.fold, idx[0].dtype)), *idx[1:]]

    def visit_ProducerStore(self, s: S.ProducerStore):
        s = self.generic_visit(s)
        return S.ProducerStore(s.producer, s.value, self._at(s.indices)) if id(s.producer) in self.outs else s

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        e = self.generic_visit(e)
        return E.ProducerLoad(e.producer, self._at(e.indices)) if id(e.producer) in self.outs else e


def _same_int(a: E.PrimExpr, b: E.PrimExpr) -> bool:
    return isinstance(a, E.IntImm) and isinstance(b, E.IntImm) and a.value == b.value


class Redirect(Mutator):
    """Reads and writes of the tensors in ``tmap`` made to the tensors they map to, their own
    storage dropped: TVM's post-processing of a scan (update and states become the output),
    and the definitions of one recurrence sharing one storage (``te/recurrence.py``)."""

    def __init__(self, tmap: dict[Tensor, Tensor]):
        self.tmap = tmap

    def visit_ProducerRealize(self, s: S.ProducerRealize):
        if s.producer in self.tmap:
            return self.visit(s.body)
        return self.generic_visit(s)

    def visit_ProducerStore(self, s: S.ProducerStore):
        s = self.generic_visit(s)
        if s.producer in self.tmap:
            return S.ProducerStore(self.tmap[s.producer], s.value, s.indices)
        return s

    def visit_ProducerLoad(self, e: E.ProducerLoad):
        e = self.generic_visit(e)
        if e.producer in self.tmap:
            return E.ProducerLoad(self.tmap[e.producer], e.indices)
        return e


def _as_list(x, what: str) -> list[Tensor]:
    items = list(x) if isinstance(x, list | tuple) else [x]
    for t in items:
        if not isinstance(t, Tensor):
            raise DefinitionError(f"te.scan: {what} must be a tensor or a list of tensors, got {t!r}")
    return items


def _check(init: list[Tensor], update: list[Tensor], state: list[Tensor], name: str) -> None:
    ana = Analyzer()
    if not (len(init) == len(update) == len(state)) or not init:
        raise DefinitionError(f"te.scan {name}: init, update and state_placeholder must be lists of one "
                              f"length (one entry per state), got {len(init)}, {len(update)}, {len(state)}")
    for k, (i, u, s) in enumerate(zip(init, update, state)):
        where = f"te.scan {name}, state {k} ({s.name})"
        if not s.op.is_placeholder:
            raise DefinitionError(f"{where}: the state must be a te.placeholder standing for the scan's output")
        if not (i.dtype == u.dtype == s.dtype):
            raise DefinitionError(f"{where}: init {i.name} is {i.dtype}, update {u.name} is {u.dtype} and the "
                                  f"state is {s.dtype}; they must have one dtype")
        if not (i.ndim == u.ndim == s.ndim) or s.ndim == 0:
            raise DefinitionError(f"{where}: init, update and state must have the same number of dimensions "
                                  f"(the first is the step), got {i.ndim}, {u.ndim}, {s.ndim}")
        for d in range(s.ndim):
            if not ana.can_prove_equal(u.shape[d], s.shape[d]):
                raise DefinitionError(f"{where}: update {u.name} has shape {u.shape} but the state has "
                                      f"{s.shape}; they must be equal")
            if d > 0 and not ana.can_prove_equal(i.shape[d], s.shape[d]):
                raise DefinitionError(f"{where}: dimension {d} of init {i.name} is {i.shape[d]} but the state's "
                                      f"is {s.shape[d]}; all but the first dimension must match")
        if not ana.can_prove_equal(i.shape[0], init[0].shape[0]):
            raise DefinitionError(f"{where}: every init must cover the same number of steps")


def _check_reads_earlier_steps(op: ScanOp) -> None:
    """Step ``t`` may read the states only at steps ``0 <= s < t``: a later step is not computed
    yet, and a step before 0 does not exist. Checked on every read of a state by a stage of the
    body, for every ``t`` the scan runs (from ``init.shape[0]`` up)."""
    states = {id(t) for t in op.state_placeholder}
    for body in op.body_ops():
        axis = getattr(body, "axis", ())
        loads = [ld for b in body.effective_body(lambda x: x)
                 for ld in collect(b, lambda n: isinstance(n, E.ProducerLoad)) if id(ld.producer) in states]
        for ld in loads:
            ana = Analyzer()
            if not axis:
                ok = False
            else:
                t = axis[0].var
                ana.bind(t, op.scan_axis.dom)
                step = ld.indices[0]
                ok = ana.can_prove(E.lt(step, E.cast(t, step.dtype))) and ana.can_prove(E.ge(step, 0))
            if not ok:
                shown = ", ".join(str(i) for i in ld.indices)
                raise DefinitionError(
                    f"te.scan {op.name}: {body.name} reads {ld.producer.name}[{shown}], which is not provably an "
                    f"earlier step: at step t (from {op.scan_axis.dom.min} on) a state may be read at steps "
                    f"0 to t - 1 only, e.g. {ld.producer.name}[t - 1, ...]; give more initial steps "
                    "(init.shape[0]) or read an earlier step"
                )


def scan(init, update, state_placeholder, inputs=None, name: str = "scan", tag: str = "", attrs: dict | None = None):
    """A recurrence: ``out[:k] = init`` (``k = init.shape[0]``), then ``out[t] = update[t]`` for
    ``t = k, k+1, ...`` in order, where ``update`` reads earlier steps through the placeholder
    ``state_placeholder``. Lists give several states that advance together; the result is a
    tensor (a list for several states). ``inputs`` are the other tensors the update reads
    (TVM's argument; informative here, where the update's reads are found from its body)."""
    init_l, update_l = _as_list(init, "init"), _as_list(update, "update")
    state_l = _as_list(state_placeholder, "state_placeholder")
    inputs_l = _as_list(inputs, "inputs") if inputs is not None else []
    _check(init_l, update_l, state_l, name)
    begin = init_l[0].shape[0]
    axis = E.IterVar(E.Range(begin, E.sub(E.cast(update_l[0].shape[0], begin.dtype), begin)),
                     E.Var(f"{name}.idx", begin.dtype), E.IterVar.DATA_PAR)
    op = ScanOp(name, scoped_tag(tag, name), attrs, axis, init_l, update_l, state_l, inputs_l)
    _check_reads_earlier_steps(op)
    return list(op.outputs) if isinstance(init, list | tuple) else op.outputs[0]


register("te.ScanOp", ScanOp,
         lambda op: [op.name, op.tag, [[k, v] for k, v in sorted(op.attrs.items())], op.scan_axis, op.init,
                     op.update, op.state_placeholder, op.inputs, op.spatial_axis_],
         lambda f: ScanOp(str(f[0]), str(f[1]), {str(k): v for k, v in f[2]}, *f[3:]))

__all__ = ["ScanOp", "scan"]
